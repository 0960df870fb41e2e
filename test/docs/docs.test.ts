/**
 * The documents hold together: README.md is the map (the two commands, a link to every page of docs/), each page
 * opens with what its reader wants to do, every relative link and #anchor in README.md and docs/*.md resolves, every
 * config key the schema accepts is in docs/configuration.md, and every command and option of the CLI is in
 * docs/operating.md. What counts as a key or a command is read from the program (reference.ts), not listed here.
 * docs/monitoring.md's `status` exit-code table has a row per code of STATUS_EXIT, each naming tests that exist.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliCommands, configKeys } from './reference.js';
import { STATUS_EXIT } from '../../src/cli/status.js';

const repo = path.resolve(import.meta.dirname, '../..');
const read = (rel: string) => readFileSync(path.join(repo, rel), 'utf8');
const pages = readdirSync(path.join(repo, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => `docs/${f}`);
const documents = ['README.md', ...pages];

/** The text outside fenced code blocks, line by line (line numbers kept: fenced lines become empty). */
function prose(text: string): string[] {
  let fence = false;
  return text.split('\n').map((line) => {
    if (/^\s*```/.test(line)) {
      fence = !fence;
      return '';
    }
    return fence ? '' : line;
  });
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2, ... */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of prose(text)) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const slug = m[1]!
      .replace(/<[^>]+>/g, '')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

/** Every link target of a document, with its line: [text](target) and ![alt](target), outside code. */
function links(text: string): Array<{ line: number; target: string }> {
  const out: Array<{ line: number; target: string }> = [];
  prose(text).forEach((raw, i) => {
    const line = raw.replace(/`[^`]*`/g, '``');
    for (const m of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) out.push({ line: i + 1, target: m[1]! });
  });
  return out;
}

describe('README.md is the map', () => {
  const readme = read('README.md');

  it('keeps the two commands as CI and a new reader run them', () => {
    const block = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    expect(block.split('\n')[0]).toMatch(/^npm ci && npm run demo\s+#/);
    expect(block.split('\n')[1]).toMatch(/^npm test\s+#/);
  });

  it('links every page of docs/', () => {
    const linked = new Set(links(readme).map((l) => l.target.split('#')[0]));
    expect(pages.filter((p) => !linked.has(p))).toEqual([]);
  });

  it('each page of docs/ opens with its title and what its reader wants to do', () => {
    for (const page of pages) {
      const [title, blank, lead] = read(page).split('\n');
      expect(title, page).toMatch(/^# \S/);
      expect(blank, page).toBe('');
      expect(lead, page).toMatch(/^You /);
    }
  });
});

describe('links and anchors resolve', () => {
  it.each(documents)('%s', (doc) => {
    const broken: string[] = [];
    for (const { line, target } of links(read(doc))) {
      if (/^[a-z][a-z+.-]*:/i.test(target)) continue; // https:, mailto: ...
      const [file, anchor] = target.split('#') as [string, string | undefined];
      const resolved =
        file === '' ? path.join(repo, doc) : path.resolve(path.dirname(path.join(repo, doc)), decodeURI(file));
      if (!resolved.startsWith(repo + path.sep) || !existsSync(resolved)) {
        broken.push(`${doc}:${line}: ${target}: no such file`);
        continue;
      }
      if (anchor === undefined) continue;
      if (!resolved.endsWith('.md') || statSync(resolved).isDirectory()) {
        broken.push(`${doc}:${line}: ${target}: an anchor into a file that is not markdown`);
      } else if (!anchors(readFileSync(resolved, 'utf8')).has(anchor)) {
        broken.push(`${doc}:${line}: ${target}: no heading with that anchor in ${path.relative(repo, resolved)}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('finds a broken link, a broken anchor and a good one (the checker itself)', () => {
    expect(anchors('# A\n## Limits (a local user: cannot flood)\n## A\n```\n# not a heading\n```')).toEqual(
      new Set(['a', 'limits-a-local-user-cannot-flood', 'a-1']),
    );
    expect(
      links('see [x](a.md#b) and `[y](in-code.md)`\n```\n[z](fenced.md)\n```\n![i](p.png)').map((l) => l.target),
    ).toEqual(['a.md#b', 'p.png']);
  });
});

describe('every config key is in docs/configuration.md', () => {
  const keys = configKeys();
  const doc = read('docs/configuration.md');
  const lines = doc.split('\n');
  /** Code spans of a line, with `.leaf` after `a.b.c` read as `a.b.leaf` (the table's `x.showText` / `.recent`). */
  const spans = (line: string): string[] => {
    const out: string[] = [];
    let last = '';
    for (const m of line.matchAll(/`([^`]+)`/g)) {
      const s = m[1]!;
      if (s.startsWith('.') && last) out.push(last.slice(0, last.lastIndexOf('.')) + s);
      else {
        out.push(s);
        if (/^[\w[\].]+$/.test(s)) last = s;
      }
    }
    return out;
  };
  const named = new Set(lines.flatMap(spans));
  /** A key named in its parent's row, as `leaf` or as "leaf" inside a code span (`{"balance": 50000}`). */
  const inParentRow = (key: string) => {
    const cut = key.lastIndexOf('.');
    if (cut < 0) return false;
    const parent = key.slice(0, cut);
    const leaf = key.slice(cut + 1);
    return lines.some(
      (l) =>
        l.startsWith(`| \`${parent}\``) && (spans(l).includes(leaf) || spans(l).some((s) => s.includes(`"${leaf}"`))),
    );
  };
  /** An object key (webhook, modems[].balance) is documented by its keys. */
  const isObject = (key: string) => keys.some((k) => k.startsWith(`${key}.`) || k.startsWith(`${key}[].`));

  it('the schema lists the keys (the probe works)', () => {
    expect(keys).toContain('webhook.retry.maxAgeHours');
    expect(keys).toContain('modems[].balance.patterns.activeUntil');
    expect(keys).toContain('control.operateGroup');
    expect(keys.length).toBeGreaterThan(60);
  });

  it('each key', () => {
    const missing = keys.filter((k) => !named.has(k) && !inParentRow(k) && !isObject(k));
    expect(missing).toEqual([]);
  });
});

describe('every command and option is in docs/operating.md', async () => {
  const commands = await cliCommands();
  const doc = read('docs/operating.md');
  /** The first cells of the command table. */
  const rows = doc
    .split('\n')
    .filter((l) => l.startsWith('| `pulsa-bridge '))
    .map((l) => l.split(/(?<!\\)\|/)[1] ?? '');
  const documented = (command: string) => {
    if (doc.includes(`\`pulsa-bridge ${command}`)) return true;
    const [group, sub] = command.split(' ');
    return (
      sub !== undefined &&
      rows.some((cell) => cell.includes(`pulsa-bridge ${group} `) && new RegExp(`[ |]${sub}\\b`).test(cell))
    );
  };
  const hasSubcommands = (command: string) => commands.some((c) => c.command.startsWith(`${command} `));

  it('the program lists its commands (the probe works)', () => {
    expect(commands.map((c) => c.command)).toEqual(expect.arrayContaining(['run', 'queue retry', 'test-transfer']));
  });

  it('each command has its row', () => {
    expect(commands.filter((c) => !hasSubcommands(c.command) && !documented(c.command)).map((c) => c.command)).toEqual(
      [],
    );
  });

  it('each option', () => {
    const missing = commands.flatMap((c) =>
      c.options
        .filter((o) => !new RegExp(`${o.replace(/[-]/g, '\\-')}(?![\\w-])`).test(doc))
        .map((o) => `${c.command} ${o}`),
    );
    expect(missing).toEqual([]);
  });
});

describe("the status exit-code table of docs/monitoring.md names each code's tests", () => {
  const rows = read('docs/monitoring.md')
    .split('\n')
    .filter((l) => /^\| \d+ \|/.test(l))
    .map((l) => ({ code: Number(/^\| (\d+) \|/.exec(l)![1]), line: l }));
  /** The tests a row names: `file` › "test name". */
  const named = (line: string) =>
    [...line.matchAll(/`(test\/[^`]+\.test\.ts)` › "([^"]+)"/g)].map((m) => ({ file: m[1]!, name: m[2]! }));

  it('a row per code, no other', () => {
    expect(rows.map((r) => r.code).sort((a, b) => a - b)).toEqual(Object.values(STATUS_EXIT).sort((a, b) => a - b));
  });

  it('each row names at least one test, and each test named exists with that name', () => {
    const wrong: string[] = [];
    for (const { code, line } of rows) {
      const tests = named(line);
      if (tests.length === 0) wrong.push(`exit ${code}: no test named`);
      for (const t of tests) {
        const file = path.join(repo, t.file);
        const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
        if (!["'", '"', '`'].some((q) => text.includes(`${q}${t.name}${q}`)))
          wrong.push(`exit ${code}: ${t.file} has no test "${t.name}"`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
