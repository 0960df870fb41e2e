/**
 * What the documentation must cover, read from the program itself: every config key the schema accepts (found by
 * asking the schema, so a key added to src/config.ts is listed without touching this file) and every command and
 * long option of the CLI (from createProgram(), every command module loaded). Used by test/docs/reference.test.ts.
 */
import type { Command } from 'commander';
import { parseConfig } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';
import { allCommands, createProgram } from '../../src/cli.js';

const PROBE = '__probe__';
const BASE = () => ({
  webhook: { baseUrl: 'https://x.example/api/v1/convert-pulsa' },
  modems: [{ name: 'a', port: '/dev/ttyUSB0', senders: ['858'] }],
});

/** Path segments: a key, or '[]' for the first element of an array. Written as `modems[].balance.code`. */
type Path = string[];
const show = (p: Path) => p.map((s, i) => (s === '[]' ? '[]' : i > 0 ? `.${s}` : s)).join('');
const shown = (p: Path) => p.map((s, i) => (s === '[]' ? '[0]' : i > 0 ? `.${s}` : s)).join('');

/** The base config with a key PROBE added to the object at `p` (created, or an existing one kept: modems[0]). */
function withProbe(p: Path): unknown {
  const root: Record<string, unknown> = BASE();
  let at: Record<string, unknown> = root;
  p.forEach((seg, i) => {
    const holder = at as unknown as Record<string, unknown> & unknown[];
    const key = seg === '[]' ? 0 : seg;
    const want = p[i + 1] === '[]' ? [] : {};
    const cur = holder[key as never] as unknown;
    if (!cur || typeof cur !== 'object') (holder as Record<string | number, unknown>)[key] = want;
    at = (holder as Record<string | number, unknown>)[key] as Record<string, unknown>;
  });
  at[PROBE] = 1;
  return root;
}

/** The keys the schema allows in the object at `objectPath`, or undefined when no object with fixed keys is there. */
function allowedAt(objectPath: Path): string[] | undefined {
  let problems: readonly string[] = [];
  try {
    parseConfig(withProbe(objectPath), {});
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems = err.problems;
  }
  const at = objectPath.length ? `${shown(objectPath)}.${PROBE}: ` : `${PROBE}: `;
  const hit = problems.find((p) => p.startsWith(at) && p.includes('unknown key (allowed: '));
  return hit ? hit.slice(hit.indexOf('(allowed: ') + 10, hit.lastIndexOf(')')).split(', ') : undefined;
}

/** Every config key, as `webhook.retry.maxAgeHours` and `modems[].balance.code`; objects are listed with their keys. */
export function configKeys(): string[] {
  const out: string[] = [];
  const walk = (p: Path, keys: string[]) => {
    for (const k of keys) {
      const here = [...p, k];
      out.push(show(here));
      const inner = allowedAt(here);
      if (inner) {
        walk(here, inner);
        continue;
      }
      const items = allowedAt([...here, '[]']);
      if (items) walk([...here, '[]'], items);
    }
  };
  const top = allowedAt([]);
  if (!top) throw new Error('the schema did not name its top-level keys');
  walk([], top);
  return out;
}

/** Every command as typed after `pulsa-bridge` (`queue ls`, `config check`) with its long options (`--json`). */
export async function cliCommands(): Promise<Array<{ command: string; options: string[] }>> {
  const noop = () => undefined;
  const program = await createProgram({ out: noop, err: noop } as never);
  const nameOf = (c: Command): string => {
    const names: string[] = [];
    for (let at: Command | null = c; at && at.parent; at = at.parent) names.unshift(at.name());
    return names.join(' ');
  };
  return allCommands(program)
    .filter((c) => c !== program && c.name() !== 'help')
    .map((c) => ({
      command: nameOf(c),
      options: c.options.map((o) => o.long).filter((l): l is string => !!l && l !== '--help'),
    }));
}
