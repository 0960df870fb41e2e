/**
 * The spool-only reader (config-file.ts, by hand, for `status` and `queue ...`) gives the same answer as the config
 * schema's spool section (config.ts spoolSchema on valibot, what `run` and `config check` apply): the same output or
 * the same problems in the same order, for any input.
 */
import fc from 'fast-check';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { readSpoolSection, SPOOL_DEFAULTS } from '../src/config-file.js';
import { anyObject, optional, problemsOf, text } from '../src/config-fields.js';
import { parseConfig, spoolSchema } from '../src/config.js';
import { ConfigError } from '../src/errors.js';

/** What the spool-only commands took from a config before the reader was written by hand: the schema's answer. */
function bySchema(raw: unknown): { config?: unknown; problems: string[] } {
  const schema = v.pipe(v.custom<Record<string, unknown>>(anyObject, 'expected an object'), v.looseObject({ spool: spoolSchema(), stateDir: optional(text()) }));
  const r = v.safeParse(schema, raw);
  if (!r.success) return { problems: problemsOf(r.issues) };
  return { config: { spool: r.output.spool, ...(r.output.stateDir !== undefined ? { stateDir: r.output.stateDir } : {}) }, problems: [] };
}

const odd = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.constantFrom('', '/var/spool/x', 'yes', '30', 'env:PB_DIR'),
  fc.constantFrom(0, -0, 1, 30, 3650, 3651, -1, 1.5, 1e300, Number.MAX_SAFE_INTEGER + 2),
  fc.integer({ min: -10, max: 4000 }),
  fc.constant([]),
  fc.constant({}),
  fc.jsonValue({ maxDepth: 2 }),
);
const key = fc.constantFrom('dir', 'sentRetentionDays', 'ignoredRetentionDays', 'fsync', 'extra', '__proto__', '', 'Dir');
const section = fc.oneof(fc.dictionary(key, odd, { maxKeys: 6 }), odd);
const root = fc.oneof(
  fc.record({ spool: section, stateDir: odd, modems: odd }, { requiredKeys: [] }),
  fc.record({ spool: fc.record({ dir: fc.string({ minLength: 1 }), fsync: fc.boolean(), sentRetentionDays: fc.integer({ min: 0, max: 3650 }) }, { requiredKeys: [] }) }),
  odd,
);

describe('spool-only config reader', () => {
  it('answers as the schema does, for any input (output, or problems in the same order)', () => {
    fc.assert(
      fc.property(root, (raw) => {
        expect(readSpoolSection(raw)).toStrictEqual(bySchema(raw));
      }),
      { numRuns: 3000 },
    );
  });

  it('the cases an operator meets, spelled out', () => {
    expect(readSpoolSection({})).toEqual({ config: { spool: { ...SPOOL_DEFAULTS } }, problems: [] });
    expect(readSpoolSection({ spool: { dir: null }, stateDir: '/var/lib/pb' }).config).toEqual({ spool: { ...SPOOL_DEFAULTS }, stateDir: '/var/lib/pb' });
    expect(readSpoolSection({ spool: { dir: '', fsync: 'yes', sentRetentionDays: 3651, keep: 1 } }).problems).toEqual([
      'spool.dir: expected a non-empty string',
      'spool.sentRetentionDays: expected an integer from 0 to 3650',
      'spool.fsync: expected true or false',
      'spool.keep: unknown key (allowed: dir, sentRetentionDays, ignoredRetentionDays, fsync)',
    ]);
    expect(readSpoolSection({ spool: [] }).problems).toEqual(['spool: expected an object']);
    expect(readSpoolSection('x').problems).toEqual(['expected an object']);
    expect(readSpoolSection({ stateDir: 5 }).problems).toEqual(['stateDir: expected a non-empty string']);
  });

  it('the full config reports a bad spool section with the same words', () => {
    const raw = { webhook: { baseUrl: 'https://x.example/api/v1/convert-pulsa' }, modems: [{ name: 'm1', port: '/dev/ttyUSB0', senders: ['858'] }], spool: { dir: '', fsync: 'yes', keep: 1 } };
    let problems: readonly string[] = [];
    try {
      parseConfig(raw, {});
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems = err.problems;
    }
    expect(problems).toEqual(readSpoolSection(raw).problems);
  });
});
