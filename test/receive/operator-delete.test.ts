/**
 * The operator's delete (Receiver.operatorDelete: the pipeline in 'operator' mode) with the scripted modem and the
 * in-memory spool: the cases the virtual modem cannot produce (a stored outgoing message) and a join that fails after
 * the part's slot was deleted (found in review).
 */
import { describe, expect, it } from 'vitest';
import { buildDeliverPdus } from '../../src/virtual-modem/pdu-builder.js';
import type { SmsRecord } from '../../src/spool/types.js';
import { FakeModem, MemorySpool, receiverOn, slot } from './fakes.js';

const TS = new Date('2026-11-22T03:00:00Z');

/** A started receiver on an empty SIM (its start sweep done), the call list cleared; `spool` may be a subclass. */
async function started(spool: MemorySpool, calls: string[]) {
  const modem = new FakeModem(calls);
  const receiver = receiverOn(modem, spool);
  receiver.start();
  await receiver.drained();
  calls.length = 0;
  return { modem, receiver };
}

describe('operator delete (the pipeline in operator mode)', () => {
  it.each([2, 3])(
    'a stored outgoing message (stat %i) is deleted without a record, never quarantined',
    async (stat) => {
      const p = buildDeliverPdus({ originator: '858', text: 'Rp 5.000', timestamp: TS })[0]!;
      const calls: string[] = [];
      const spool = new MemorySpool();
      const { modem, receiver } = await started(spool, calls);
      modem.slots.set(4, slot(4, p, stat));
      const r = await receiver.operatorDelete(4, modem);
      expect(calls).toEqual(['read 4', 'read 4', 'delete 4']);
      expect(r).toMatchObject({ deleted: true, index: 4, handled: { spooled: 'none' } });
      expect(r.summary).toMatch(
        /^deleted SMS at index 4 \(not spooled: a stored outgoing message \(stat [23]\), nothing to forward\)$/,
      );
      expect([spool.pending.size, spool.ignored.size, spool.quarantine.size, spool.parts.size]).toEqual([0, 0, 0, 0]);
      await receiver.stop();
    },
  );

  it('a part whose join fails after its slot was deleted: done, with a warning (the parts are on disk)', async () => {
    const [p1] = buildDeliverPdus({ originator: '858', text: 'x'.repeat(200), timestamp: TS, concatRef: 9 });
    const calls: string[] = [];
    /** Once armed, the second parts listing (the join's, after the delete) fails. */
    class JoinFails extends MemorySpool {
      lists: number | undefined;
      override async listParts() {
        if (this.lists !== undefined && ++this.lists === 2) {
          calls.push('listParts (fails)');
          throw new Error('ENOSPC: no space left on device');
        }
        return super.listParts();
      }
    }
    const spool = new JoinFails({ gated: true, calls });
    const { modem, receiver } = await started(spool, calls);
    spool.lists = 0;
    modem.put(6, p1!);
    const r = await receiver.operatorDelete(6, modem);
    expect(calls).toEqual([
      'read 6',
      'read 6',
      'listParts',
      'write part',
      'written part',
      'delete 6',
      'listParts (fails)',
    ]);
    expect(r).toMatchObject({ deleted: true, index: 6, sender: '858', handled: { spooled: 'part', created: true } });
    expect(r.warning).toMatch(/^joining its multipart message failed \(ENOSPC: no space left on device\)/);
    expect(r.summary).toContain('spooled as part 1/2 (ref 9) first); joining its multipart message failed');
    expect(spool.parts.size).toBe(1);
    await receiver.stop();
  });

  it('a failing write deletes nothing and rejects with the reason', async () => {
    const p = buildDeliverPdus({ originator: '858', text: 'Rp 5.000', timestamp: TS })[0]!;
    class ReadOnly extends MemorySpool {
      override async putPending(_rec: SmsRecord): Promise<never> {
        throw new Error('EROFS');
      }
    }
    const calls: string[] = [];
    const { modem, receiver } = await started(new ReadOnly(), calls);
    modem.put(2, p);
    await expect(receiver.operatorDelete(2, modem)).rejects.toMatchObject({
      message: 'SMS at index 2 not deleted: its spool write failed: EROFS',
    });
    expect(calls).not.toContain('delete 2');
    expect(modem.slots.has(2)).toBe(true);
    await receiver.stop();
  });
});
