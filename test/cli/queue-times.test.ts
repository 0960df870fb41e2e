/**
 * "times in one zone": the compiled CLI in its own process with the Pi's zone (TZ) set shows every
 * time in that zone with its offset (`queue show`: receivedAt stored in UTC and scTimestamp stored in the network's
 * zone alike; `queue ls`: the retry time), while --json keeps the stored ISO values.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import path from 'node:path';
import { silentLogger } from '../../src/log.js';
import { Spool } from '../../src/spool/store.js';
import { localTime, zoneOffset } from '../../src/time-format.js';
import { makeSms } from '../spool/helpers.js';
import { tempDir } from '../support/tmp.js';
import { compiledCli } from '../support/cli.js';

let dir: string;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('queue-times'));
  const spool = await Spool.open(dir, { logger: silentLogger(), fsync: false });
  // Stored: receivedAt in UTC, scTimestamp in the network's zone (+08:00 here, not the Pi's).
  await spool.putPending(
    makeSms('t1', { receivedAt: '2026-01-08T03:15:35.000Z', scTimestamp: '2026-01-08T11:15:30+08:00' }),
  );
  await spool.markRetry('t1', { error: 'HTTP 503', nextAttemptAt: new Date('2026-01-08T03:20:00.000Z') });
  await spool.close();
});
afterEach(() => cleanup());

function cli(args: string[], tz: string): { code: number | null; out: string; err: string } {
  return compiledCli(['queue', ...args, '--spool', dir], { env: { ...process.env, TZ: tz } });
}

describe('queue: times in the local zone', () => {
  it("show: every time field in the Pi's zone with its offset (Asia/Jakarta, +07:00)", () => {
    const r = cli(['show', 't1'], 'Asia/Jakarta');
    expect(r.code).toBe(0);
    expect(r.out).toContain('receivedAt: 2026-01-08 10:15:35 +07:00\n');
    expect(r.out).toContain('scTimestamp: 2026-01-08 10:15:30 +07:00\n');
    expect(r.out).toContain('nextAttemptAt: 2026-01-08 10:20:00 +07:00\n');
  }, 30_000);

  it('ls: the retry time in the same zone; --json keeps the stored ISO', () => {
    expect(cli(['ls'], 'Asia/Jakarta').out).toMatch(/retry 1 at 10:20:00/);
    expect(cli(['ls'], 'Europe/Berlin').out).toMatch(/retry 1 at 04:20:00/);
    const json = JSON.parse(cli(['show', 't1', '--json'], 'Asia/Jakarta').out) as { record: { receivedAt: string } };
    expect(json.record.receivedAt).toBe('2026-01-08T03:15:35.000Z');
  }, 30_000);
});

describe('localTime', () => {
  it('formats in this process\'s zone with the offset; bad input is "-"', () => {
    const d = new Date('2026-01-08T03:15:35.000Z');
    expect(localTime(d)).toMatch(new RegExp(`^2026-01-0[78] \\d\\d:\\d\\d:35 ${zoneOffset(d).replace('+', '\\+')}$`));
    expect(new Date(localTime(d).replace(' ', 'T').replace(' ', '')).getTime()).toBe(
      d.getTime() - 0 - (d.getTime() % 1000),
    );
    expect(localTime('nonsense')).toBe('-');
    expect(localTime(undefined)).toBe('-');
  });
});
