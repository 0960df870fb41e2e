/**
 * deleteHandled (src/receive/operator-delete.ts) with a scripted host: the cases the virtual modem cannot produce (a
 * stored outgoing message) and a join that fails after the part's slot was deleted (found in review).
 */
import { describe, expect, it } from 'vitest';
import { deleteHandled, type HandledAs, type OperatorDeleteHost } from '../../src/receive/operator-delete.js';
import { decodeDeliver } from '../../src/sms/pdu.js';
import { buildDeliverPdus } from '../../src/sim/pdu-builder.js';
import type { DecodedSms, StoredPdu } from '../../src/sms/types.js';

const TS = new Date('2026-11-22T03:00:00Z');

function host(stored: StoredPdu, o: { write?: () => Promise<DecodedSms | void>; handled?: HandledAs; assembleFails?: boolean } = {}) {
  const calls: string[] = [];
  const h: OperatorDeleteHost = {
    readSms: async (i) => (calls.push(`read ${i}`), { ...stored }),
    confirmRead: async (first) => (calls.push('confirm'), { kind: 'agreed', stored: { ...first }, reads: 2 }),
    decide: async (s, report) => {
      calls.push('decide');
      if (o.handled) report(o.handled);
      return { kind: 'release', stored: s, ...(o.write ? { write: o.write } : {}) };
    },
    quarantineDisagreeing: async () => void calls.push('quarantine'),
    release: async (s) => void calls.push(`delete ${s.index}`),
    assemble: async () => {
      calls.push('assemble');
      if (o.assembleFails) throw new Error('ENOSPC: no space left on device');
    },
    counted: () => undefined,
  };
  return { h, calls };
}

describe('operator delete (deleteHandled)', () => {
  it.each([2, 3])('a stored outgoing message (stat %i) is deleted without a record, never quarantined', async (stat) => {
    const p = buildDeliverPdus({ originator: '858', text: 'Rp 5.000', timestamp: TS })[0]!;
    const { h, calls } = host({ index: 4, stat, pdu: p.pdu, length: p.tpduLength });
    const r = await deleteHandled(4, h);
    expect(calls).toEqual(['read 4', 'confirm', 'delete 4']);
    expect(r).toMatchObject({ deleted: true, index: 4, handled: { spooled: 'none' } });
    expect(r.summary).toMatch(/^deleted SMS at index 4 \(not spooled: a stored outgoing message \(stat [23]\), nothing to forward\)$/);
  });

  it('a part whose join fails after its slot was deleted: done, with a warning (the parts are on disk)', async () => {
    const [p1] = buildDeliverPdus({ originator: '858', text: 'x'.repeat(200), timestamp: TS, concatRef: 9 });
    const stored: StoredPdu = { index: 6, stat: 0, pdu: p1!.pdu, length: p1!.tpduLength };
    const d = decodeDeliver(stored);
    if (!d.ok) throw new Error('fixture');
    const { h, calls } = host(stored, { write: async () => d.sms, handled: { spooled: 'part', part: '1/2 (ref 9)', created: true }, assembleFails: true });
    const r = await deleteHandled(6, h);
    expect(calls).toEqual(['read 6', 'confirm', 'decide', 'delete 6', 'assemble']);
    expect(r).toMatchObject({ deleted: true, index: 6, sender: '858', handled: { spooled: 'part', created: true } });
    expect(r.warning).toMatch(/^joining its multipart message failed \(ENOSPC: no space left on device\)/);
    expect(r.summary).toContain('spooled as part 1/2 (ref 9) first); joining its multipart message failed');
  });

  it('a failing write deletes nothing and rejects with the reason', async () => {
    const p = buildDeliverPdus({ originator: '858', text: 'Rp 5.000', timestamp: TS })[0]!;
    const { h, calls } = host({ index: 2, stat: 0, pdu: p.pdu, length: p.tpduLength }, { write: async () => { throw new Error('EROFS'); } });
    await expect(deleteHandled(2, h)).rejects.toMatchObject({ message: 'SMS at index 2 not deleted: its spool write failed: EROFS' });
    expect(calls).not.toContain('delete 2');
  });
});
