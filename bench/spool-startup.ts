/**
 * Spool start-up with a year of archive: how long the owner's Spool.open takes with N sent records (default 20,000),
 * without the sent index (every sent file read and checked: how start-up worked before sent.index, and what a rebuild
 * costs) and with it (sent/ listed, no sent file read); plus a prune that removes nothing and one that removes half.
 * Figures only, nothing asserted.
 *
 *   npm run build && node dist/bench/spool-startup.js [--sent 20000] [--json]
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../src/log.js';
import { serializeRecord } from '../src/spool/codec.js';
import { SENT_INDEX_FILE } from '../src/spool/sent-index.js';
import { Spool } from '../src/spool/store.js';
import { SPOOL_RECORD_VERSION, type SmsRecord } from '../src/spool/types.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const DAY = 86_400_000;

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = process.hrtime.bigint();
  const value = await fn();
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, value };
}

async function main(): Promise<void> {
  const n = arg('--sent', 20_000);
  const json = process.argv.includes('--json');
  const dir = await mkdtemp(join(tmpdir(), 'pb-bench-startup-'));
  try {
    await mkdir(join(dir, 'sent'), { recursive: true });
    const now = Date.now();
    for (let i = 0; i < n; i++) {
      const at = new Date(now - Math.floor((i / n) * 365 * DAY)); // spread over a year
      const rec: SmsRecord = {
        v: SPOOL_RECORD_VERSION,
        kind: 'sms',
        id: `sms-${String(i).padStart(8, '0')}`,
        sim: { modem: 'telkomsel-1', imsi: '510100123456789' },
        sender: '858',
        text: `Anda mendapatkan penambahan pulsa Rp ${5000 + i} dari nomor 6282112235774. Cek pulsa melalui *888#.`,
        scTimestamp: at.toISOString(),
        receivedAt: at.toISOString(),
        deliveredAt: at.toISOString(),
        pdus: ['07912618485400F9040381580000108110015103820A'],
        attempts: 1,
        lastStatus: 200,
        rev: 1,
      };
      await writeFile(join(dir, 'sent', `${rec.id}.json`), serializeRecord(rec));
    }
    const open = () => Spool.open(dir, { logger: silentLogger(), fsync: false });
    await rm(join(dir, SENT_INDEX_FILE), { force: true });
    const cold = await timed(open); // no index: reads every sent file, then writes the index
    await cold.value.close();
    const warm = await timed(open); // index present: lists sent/, reads nothing
    const pruneNone = await timed(() => warm.value.prune('sent', 366));
    const pruneHalf = await timed(() => warm.value.prune('sent', 182));
    await warm.value.close();
    const figures = {
      sentRecords: n,
      openWithoutIndexMs: Math.round(cold.ms),
      openWithIndexMs: Math.round(warm.ms),
      pruneNothingMs: Math.round(pruneNone.ms),
      pruneHalfMs: Math.round(pruneHalf.ms),
      prunedHalf: pruneHalf.value,
    };
    if (json) process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
    else {
      process.stdout.write(
        `spool start-up with ${n} sent records (fsync off, page cache warm)\n` +
          `  open, no sent index (every sent file read; before sent.index / rebuild): ${figures.openWithoutIndexMs} ms\n` +
          `  open, with sent index (sent/ listed only):                               ${figures.openWithIndexMs} ms\n` +
          `  prune sent, nothing old enough:                                            ${figures.pruneNothingMs} ms\n` +
          `  prune sent, half the records (${figures.prunedHalf} removed):                            ${figures.pruneHalfMs} ms\n`,
      );
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${String(err)}\n`);
  process.exitCode = 1;
});
