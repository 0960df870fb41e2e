/** Test helpers shared by spool and forward tests: record factory, temp dirs, a logger whose lines can be read. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pickNext, type PickOptions } from '../../src/forward/schedule.js';
import { createLogger, type Logger } from '../../src/log.js';
import type { Spool } from '../../src/spool/store.js';
import { SPOOL_RECORD_VERSION, type SmsRecord } from '../../src/spool/types.js';

export function makeSms(id: string, over: Partial<SmsRecord> = {}): SmsRecord {
  return {
    v: SPOOL_RECORD_VERSION,
    kind: 'sms',
    id,
    sim: { modem: 'telkomsel-1', imsi: '510100123456789' },
    sender: '858',
    text: 'Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774 tgl 2018-01-08. Cek pulsa melalui *888#. Info CS: 188',
    scTimestamp: '2018-01-08T10:15:30+07:00',
    receivedAt: '2018-01-08T03:15:35.000Z',
    pdus: ['07912618485400F9040381580000108110015103820A'],
    attempts: 0,
    ...over,
  };
}

export interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

/** A real logger (createLogger, the JSON lines the daemon writes) writing into an array. */
export function captureLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim()) lines.push(JSON.parse(l) as LogLine);
      cb();
    },
  });
  return { logger: createLogger({ level: 'debug', pretty: false, destination }), lines };
}

export async function tempDir(prefix: string): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), `pulsa-${prefix}-`));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * The forwarder's pick over a spool, as the forwarder makes it: pickNext over the spool's ordered pending view, then a
 * copy of the one record chosen.
 */
export function nextDue(spool: Pick<Spool, 'pendingInOrder'>, nowMs: number, opts: PickOptions = {}): { next?: SmsRecord; wakeAtMs?: number } {
  const { next, wakeAtMs } = pickNext(spool.pendingInOrder(), nowMs, opts);
  if (next !== undefined) return { next: structuredClone(next.record) as SmsRecord };
  return wakeAtMs === undefined ? {} : { wakeAtMs };
}
