/**
 * The canaries' money ledger on a real directory: the day's spend survives a reopen, a run left in flight is spent,
 * unknown and pauses its canary, nothing is counted that did not reach the disk, refunds only when nothing left the
 * modem, days roll over in the canary's time zone, and a ledger someone broke or planted is refused, never trusted.
 */
import { chmod, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { dayIn, Ledger, LEDGER_FILE, LedgerError, KEPT_RUNS } from '../../src/canary/ledger.js';
import { diskOps } from '../../src/spool/files.js';
import { tempDir } from '../support/tmp.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir('ledger')));
afterEach(async () => {
  vi.restoreAllMocks();
  await cleanup();
});

const DAY = '2026-11-29';
const settled = { outcome: 'approved' as const, spent: true, detail: 'order T1 approved', durationMs: 1200 };

describe('canary ledger', () => {
  it('keeps the day spend across a reopen, and counts a run in flight at a crash as spent, unknown and paused', async () => {
    const { ledger } = await Ledger.open(dir);
    await ledger.reserve('c1', DAY, { id: 'r1', amount: 5000, orderId: 'T1' });
    await ledger.settle('c1', DAY, 'r1', settled, 3);
    await ledger.reserve('c1', DAY, { id: 'r2', amount: 5000, orderId: 'T2' });
    // The process dies here (SIGKILL): what is on disk is what the next start reads.
    const again = await Ledger.open(dir);
    expect(again.interrupted.map((i) => [i.canary, i.run.id, i.run.outcome])).toEqual([['c1', 'r2', 'unknown']]);
    const e = again.ledger.entry('c1', DAY);
    expect(e.spent).toBe(10_000);
    expect(e.paused?.reason).toMatch(/r2 was cut off mid-send: check the centre SIM and order T2/);
    expect(e.lastSuccessAt).toBeDefined();
    // Written back at once: a third start does not count it twice.
    const third = await Ledger.open(dir);
    expect(third.interrupted).toEqual([]);
    expect(third.ledger.entry('c1', DAY).spent).toBe(10_000);
  });

  it('refunds a run only when nothing left the modem', async () => {
    const { ledger } = await Ledger.open(dir);
    await ledger.reserve('c1', DAY, { id: 'r1', amount: 5000 });
    await ledger.settle('c1', DAY, 'r1', { ...settled, outcome: 'failed', spent: false, detail: 'modem busy' }, 3);
    expect(ledger.entry('c1', DAY).spent).toBe(0);
    await ledger.reserve('c1', DAY, { id: 'r2', amount: 5000 });
    await ledger.settle('c1', DAY, 'r2', { ...settled, outcome: 'failed', spent: true, detail: 'refused' }, 3);
    expect(ledger.entry('c1', DAY).spent).toBe(5000);
    const runs = ledger.snapshot().canaries.c1!.runs;
    expect(runs.map((r) => [r.id, r.spent, r.outcome])).toEqual([
      ['r1', 0, 'failed'],
      ['r2', 5000, 'failed'],
    ]);
  });

  it('pauses after the configured failures in a row; an approved run resets the count; resume lifts the pause', async () => {
    const { ledger } = await Ledger.open(dir);
    for (const [i, outcome] of (['failed', 'approved', 'timeout', 'failed'] as const).entries()) {
      await ledger.reserve('c1', DAY, { id: `r${i}`, amount: 1 });
      await ledger.settle('c1', DAY, `r${i}`, { ...settled, outcome }, 2);
    }
    expect(ledger.entry('c1', DAY).paused?.reason).toBe('2 runs in a row did not end approved (the last: failed)');
    await ledger.resume('c1', DAY);
    expect(ledger.entry('c1', DAY)).toMatchObject({ failuresInARow: 0 });
    expect(ledger.entry('c1', DAY).paused).toBeUndefined();
    const { ledger: reread } = await Ledger.open(dir);
    expect(reread.entry('c1', DAY).paused).toBeUndefined();
  });

  it('a reservation that did not reach the disk is not counted (and the run must not dial)', async () => {
    const { ledger } = await Ledger.open(dir);
    vi.spyOn(diskOps, 'datasync').mockRejectedValueOnce(Object.assign(new Error('no space'), { code: 'ENOSPC' }));
    await expect(ledger.reserve('c1', DAY, { id: 'r1', amount: 5000 })).rejects.toThrow(/no space/);
    expect(ledger.entry('c1', DAY).spent).toBe(0);
    expect(ledger.snapshot().canaries.c1!.runs).toEqual([]);
  });

  it('a new day in the time zone starts at 0 spent; the pause carries over', async () => {
    // 2026-11-29 17:30 UTC is already 2026-11-30 in Jakarta (UTC+7).
    const t = Date.UTC(2026, 10, 29, 17, 30);
    expect(dayIn('Asia/Jakarta', t)).toBe('2026-11-30');
    expect(dayIn('UTC', t)).toBe('2026-11-29');
    const { ledger } = await Ledger.open(dir);
    await ledger.reserve('c1', '2026-11-29', { id: 'r1', amount: 5000 });
    await ledger.pause('c1', '2026-11-29', 'by an operator');
    expect(ledger.entry('c1', '2026-11-30')).toMatchObject({ day: '2026-11-30', spent: 0 });
    expect(ledger.entry('c1', '2026-11-30').paused?.reason).toBe('by an operator');
  });

  it('keeps the last runs only', async () => {
    const { ledger } = await Ledger.open(dir);
    for (let i = 0; i < KEPT_RUNS + 5; i++) {
      await ledger.reserve('c1', DAY, { id: `r${i}`, amount: 1 });
      await ledger.settle('c1', DAY, `r${i}`, settled, 3);
    }
    const runs = ledger.snapshot().canaries.c1!.runs;
    expect(runs).toHaveLength(KEPT_RUNS);
    expect(runs.at(-1)!.id).toBe(`r${KEPT_RUNS + 4}`);
    expect((await Ledger.open(dir)).ledger.entry('c1', DAY).spent).toBe(KEPT_RUNS + 5);
  });

  it('refuses a ledger that is broken, planted or writable by others, naming the file', async () => {
    const file = path.join(dir, LEDGER_FILE);
    const cases: Array<[string, () => Promise<void>, RegExp]> = [
      ['not JSON', () => writeFile(file, '{"version":1,'), /is not valid/],
      ['another shape', () => writeFile(file, '{"version":1,"canaries":{"c1":{"day":"x"}}}'), /day: not valid/],
      [
        'an unknown key',
        () => writeFile(file, '{"version":1,"canaries":{},"spentOverride":0}'),
        /unknown key "spentOverride"/,
      ],
      [
        'a negative spend',
        () =>
          writeFile(
            file,
            JSON.stringify({ version: 1, canaries: { c1: { day: DAY, spent: -5, failuresInARow: 0, runs: [] } } }),
          ),
        /spent: not valid/,
      ],
      ['a symlink', () => symlink('/etc/hostname', file), /cannot be read \(ELOOP\)/],
      [
        'writable by others',
        async () => {
          await writeFile(file, '{"version":1,"canaries":{}}');
          await chmod(file, 0o666);
        },
        /writable by others/,
      ],
    ];
    for (const [what, make, error] of cases) {
      await make();
      const err = await Ledger.open(dir).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, what).toBeInstanceOf(LedgerError);
      expect((err as Error).message, what).toMatch(error);
      expect((err as Error).message, what).toContain(file);
      await import('node:fs/promises').then((fs) => fs.rm(file, { force: true }));
    }
  });

  it('a ledger that cannot be written back at start is a LedgerError (the canaries are disabled, the daemon runs on)', async () => {
    const { ledger } = await Ledger.open(dir);
    await ledger.reserve('c1', DAY, { id: 'r1', amount: 5000 });
    vi.spyOn(diskOps, 'datasync').mockRejectedValueOnce(Object.assign(new Error('I/O error'), { code: 'EIO' }));
    const err = await Ledger.open(dir).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(LedgerError);
    expect((err as Error).message).toMatch(/could not be written back \(EIO\)/);
    // The in-flight record is still on disk: the next start finds it again.
    expect((await Ledger.open(dir)).interrupted.map((i) => i.run.id)).toEqual(['r1']);
  });

  it('writes one at a time: saves at once from two canaries both land', async () => {
    const { ledger } = await Ledger.open(dir);
    await Promise.all([
      ledger.reserve('a', DAY, { id: 'a1', amount: 1 }),
      ledger.reserve('b', DAY, { id: 'b1', amount: 2 }),
    ]);
    const onDisk = JSON.parse(await readFile(path.join(dir, LEDGER_FILE), 'utf8'));
    expect(Object.keys(onDisk.canaries).sort()).toEqual(['a', 'b']);
  });
});
