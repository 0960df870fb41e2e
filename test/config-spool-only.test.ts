/**
 * The spool-only load (`status`, `queue ...`): config-spool.ts applies the config's own spool schema to `spool` and
 * `stateDir` alone; the rest of the file (secrets, modems) is not read. The full parse reports the same words.
 */
import { describe, expect, it } from 'vitest';
import { parseSpoolSection, SPOOL_DEFAULTS } from '../src/config-spool.js';
import { parseConfig } from '../src/config.js';
import { configProblems } from './support/config.js';

const problems = configProblems;

describe('spool-only config', () => {
  it('the cases an operator meets', () => {
    expect(parseSpoolSection({})).toEqual({ spool: { ...SPOOL_DEFAULTS } });
    expect(parseSpoolSection({ spool: { dir: null }, stateDir: '/var/lib/pb' })).toEqual({
      spool: { ...SPOOL_DEFAULTS },
      stateDir: '/var/lib/pb',
    });
    expect(
      problems(() => parseSpoolSection({ spool: { dir: '', fsync: 'yes', sentRetentionDays: 3651, keep: 1 } })),
    ).toEqual([
      'spool.dir: expected a non-empty string',
      'spool.sentRetentionDays: expected an integer from 0 to 3650',
      'spool.fsync: expected true or false',
      'spool.keep: unknown key (allowed: dir, sentRetentionDays, ignoredRetentionDays, fsync)',
    ]);
    expect(problems(() => parseSpoolSection({ spool: [] }))).toEqual(['spool: expected an object']);
    expect(problems(() => parseSpoolSection('x'))).toEqual(['expected an object']);
    expect(problems(() => parseSpoolSection({ stateDir: 5 }))).toEqual(['stateDir: expected a non-empty string']);
  });

  it('reads the spool of a config whose other sections need secrets it does not have', () => {
    const raw = {
      webhook: { baseUrl: 'https://x.example/api/v1/convert-pulsa', hmacSecret: 'env:PB_HMAC_NOT_SET' },
      modems: 'not even checked',
      spool: { dir: '/srv/spool' },
    };
    expect(parseSpoolSection(raw).spool.dir).toBe('/srv/spool');
    expect(problems(() => parseConfig(raw, {})).length).toBeGreaterThan(0);
  });

  it('the full config reports a bad spool section with the same words', () => {
    const raw = {
      webhook: { baseUrl: 'https://x.example/api/v1/convert-pulsa' },
      modems: [{ name: 'm1', port: '/dev/ttyUSB0', senders: ['858'] }],
      spool: { dir: '', fsync: 'yes', keep: 1 },
    };
    expect(problems(() => parseConfig(raw, {}))).toEqual(problems(() => parseSpoolSection(raw)));
  });
});
