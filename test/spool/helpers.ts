/** Helpers of the spool and forward tests: a record factory and the forwarder's pick over a spool. */
import { pickNext, type PickOptions } from '../../src/forward/schedule.js';
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

/**
 * The forwarder's pick over a spool, as the forwarder makes it: pickNext over the spool's ordered pending view, then a
 * copy of the one record chosen.
 */
export function nextDue(
  spool: Pick<Spool, 'pendingInOrder'>,
  nowMs: number,
  opts: PickOptions = {},
): { next?: SmsRecord; wakeAtMs?: number } {
  const { next, wakeAtMs } = pickNext(spool.pendingInOrder(), nowMs, opts);
  if (next !== undefined) return { next: structuredClone(next.record) as SmsRecord };
  return wakeAtMs === undefined ? {} : { wakeAtMs };
}
