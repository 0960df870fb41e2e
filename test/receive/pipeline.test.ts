/**
 * SlotPipeline on its own (the scripted modem, the in-memory spool): one run per mode, what it sends to the modem,
 * what it writes, and the outcome and counters it returns instead of changing a receiver's stats.
 */
import { describe, expect, it } from 'vitest';
import { createSenderFilter } from '../../src/filter/sender.js';
import { silentLogger } from '../../src/log.js';
import { PartAssembler } from '../../src/receive/parts.js';
import { SlotPipeline } from '../../src/receive/pipeline.js';
import { SimStorage } from '../../src/modem/sim-memory.js';
import type { OtherSendersPolicy } from '../../src/config.js';
import { buildDeliverPdus } from '../../src/virtual-modem/pdu-builder.js';
import { FakeModem, MemorySpool, slot } from './fakes.js';

const TS = new Date('2026-11-22T03:00:00Z');
const pdu = (from: string, text: string, ref?: number) =>
  buildDeliverPdus({ originator: from, text, timestamp: TS, ...(ref === undefined ? {} : { concatRef: ref }) });

function setup(otherSenders: OtherSendersPolicy = 'archive', spool = new MemorySpool()) {
  const modem = new FakeModem();
  const log = silentLogger();
  const sim = { modem: 'm1', imsi: '510100000000001' };
  const accept = createSenderFilter(['858']);
  const storage = new SimStorage({ log });
  const parts = new PartAssembler({
    spool,
    sim,
    multipartTimeoutMs: 600_000,
    logger: log,
    now: Date.now,
    monotonic: () => performance.now(),
    accept,
  });
  const pipeline = new SlotPipeline({ modem, spool, parts, storage, sim, accept, otherSenders, now: Date.now, log });
  return { modem, spool, storage, pipeline };
}

describe('SlotPipeline', () => {
  it("'single' from an index: AT+CMGR, the confirming AT+CMGR, the write, AT+CMGD; returns the record and the counts", async () => {
    const { modem, spool, pipeline } = setup();
    modem.put(3, pdu('858', 'Rp 5.000 dari 6281')[0]!);
    const run = await pipeline.run([3], 'single');
    expect(modem.calls).toEqual(['read 3', 'read 3', 'delete 3']);
    expect(run.slots).toEqual([
      {
        index: 3,
        outcome: 'released',
        sender: '858',
        handled: { spooled: 'pending', id: [...spool.pending.keys()][0], created: true },
      },
    ]);
    expect(run.counts).toEqual({ received: 1, spooled: 1, ignored: 0, quarantined: 0, duplicates: 0 });
    expect(run.failures).toEqual([]);
  });

  it("'batch': no AT+CMGR (the listings confirmed), every write before the first AT+CMGD, a multipart message joined once", async () => {
    const { modem, spool, pipeline } = setup();
    const [a, b] = pdu('858', 'x'.repeat(200), 7);
    const listed = [slot(1, pdu('858', 'Rp 1')[0]!), slot(2, a!), slot(3, b!)];
    const run = await pipeline.run(listed, 'batch');
    expect(modem.calls).toEqual(['delete 1', 'delete 2', 'delete 3']);
    expect([...spool.pending.values()].map((r) => r.text).sort()).toEqual(['Rp 1', 'x'.repeat(200)]);
    expect(run.counts).toMatchObject({ received: 3, spooled: 2 });
    expect(run.slots.map((s) => s.outcome)).toEqual(['released', 'released', 'released']);
  });

  it("policy keep: 'single' keeps the slot, 'operator' archives it (the operator deletes it)", async () => {
    const kept = setup('keep');
    kept.modem.put(5, pdu('999', 'promo')[0]!);
    const single = await kept.pipeline.run([5], 'single');
    expect(single.slots[0]!.outcome).toBe('kept');
    expect(kept.storage.kept.has(5)).toBe(true);
    expect(kept.modem.calls).not.toContain('delete 5');
    const op = await kept.pipeline.run([5], 'operator');
    expect(op.slots[0]).toMatchObject({ outcome: 'released', handled: { spooled: 'ignored', created: true } });
    expect(op.counts).toMatchObject({ received: 1, ignored: 1 });
    expect(kept.storage.kept.has(5)).toBe(false);
  });

  it('a failed write releases nothing and is returned as a failure of that slot; the other slots of a batch go on', async () => {
    const spool = new MemorySpool({ gated: true });
    spool.failWhen = (text) => text === 'Rp 2';
    const { modem, pipeline } = setup('archive', spool);
    const run = await pipeline.run(
      [slot(1, pdu('858', 'Rp 1')[0]!), slot(2, pdu('858', 'Rp 2')[0]!), slot(3, pdu('858', 'Rp 3')[0]!)],
      'batch',
    );
    expect(modem.calls.filter((c) => c.startsWith('delete'))).toEqual(['delete 1', 'delete 3']);
    expect(run.slots.map((s) => s.outcome)).toEqual(['released', 'failed', 'released']);
    expect(run.failures).toMatchObject([{ index: 2, stage: 'write' }]);
    expect(run.counts).toMatchObject({ received: 3, spooled: 2 });
  });

  it('an empty slot is `empty` and counts nothing; a +CMT is read once and acknowledged', async () => {
    const { modem, pipeline } = setup();
    const empty = await pipeline.run([9], 'single');
    expect(empty.slots[0]!.outcome).toBe('empty');
    expect(empty.counts.received).toBe(0);
    const p = pdu('858', 'Rp 7')[0]!;
    const direct = await pipeline.run([{ index: undefined, stat: 0, length: p.tpduLength, pdu: p.pdu }], 'single');
    expect(direct.slots[0]!.outcome).toBe('released');
    expect(modem.calls).toEqual(['read 9', 'cnma']);
  });

  describe('TP-PID and DCS values the specifications do not give to a person', () => {
    const special = (from: string, text: string, o: { pid?: number; dcs?: number }) =>
      buildDeliverPdus({ originator: from, text, timestamp: TS, ...o })[0]!;

    it('Short Message Type 0 from an accepted sender: deleted from the SIM, no record, nothing forwarded', async () => {
      const { modem, spool, pipeline } = setup();
      modem.put(2, special('858', 'ping', { pid: 0x40 }));
      const run = await pipeline.run([2], 'single');
      expect(modem.calls).toEqual(['read 2', 'read 2', 'delete 2']);
      const handled = { spooled: 'none', reason: 'Short Message Type 0 (TP-PID 0x40)' };
      expect(run.slots[0]).toMatchObject({ outcome: 'released', handled });
      expect([spool.pending.size, spool.ignored.size, spool.quarantine.size]).toEqual([0, 0, 0]);
      expect(run.counts).toEqual({ received: 1, spooled: 0, ignored: 1, quarantined: 0, duplicates: 0 });
    });

    it('Type 0 by +CMT is acknowledged (AT+CNMA); under policy keep it is not kept on the SIM', async () => {
      const { modem, storage, pipeline } = setup('keep');
      const p = special('999', '', { pid: 0x40 });
      const direct = await pipeline.run([{ index: undefined, stat: 0, length: p.tpduLength, pdu: p.pdu }], 'single');
      expect(direct.slots[0]!.outcome).toBe('released');
      modem.put(4, special('999', '', { pid: 0x40 }));
      await pipeline.run([4], 'single');
      expect(modem.calls).toEqual(['cnma', 'read 4', 'read 4', 'delete 4']);
      expect(storage.kept.size).toBe(0);
    });

    it('(U)SIM data download, a discard-group voicemail indication: archived with why, then deleted', async () => {
      const { modem, spool, pipeline } = setup();
      modem.put(1, special('858', 'OTA', { pid: 0x7f, dcs: 0xf2 }));
      modem.put(2, special('858', 'Ada 1 pesan suara', { dcs: 0xc8 }));
      const run = await pipeline.run([1, 2], 'single');
      expect(run.slots.map((s) => s.outcome)).toEqual(['released', 'released']);
      expect([...spool.ignored.values()].map((r) => [r.text, r.ignoredReason])).toEqual([
        ['OTA', '(U)SIM Data download (TP-PID 0x7F), meant for the modem or SIM'],
        ['Ada 1 pesan suara', 'message waiting indication, discard group (voicemail waiting)'],
      ]);
      expect(spool.pending.size).toBe(0);
      expect(run.counts).toMatchObject({ received: 2, ignored: 2, spooled: 0 });
    });

    it('an archive that fails to write leaves the message on the SIM', async () => {
      const spool = new MemorySpool({ gated: true });
      spool.failWhen = (text) => text === 'OTA';
      const { modem, pipeline } = setup('archive', spool);
      modem.put(1, special('858', 'OTA', { pid: 0x7f, dcs: 0xf2 }));
      const run = await pipeline.run([1], 'single');
      expect(run.slots[0]!.outcome).toBe('failed');
      expect(modem.calls).not.toContain('delete 1');
    });

    it('Replace Short Message Type 1, a store-group indication and a flash SMS are forwarded', async () => {
      const { spool, pipeline, modem } = setup();
      modem.put(1, special('858', 'Rp 1', { pid: 0x41 }));
      modem.put(2, special('858', 'Rp 2', { pid: 0x41 }));
      modem.put(3, special('858', 'Pesan suara baru', { dcs: 0xd8 }));
      modem.put(4, special('858', 'Flash', { dcs: 0x10 }));
      const run = await pipeline.run([1, 2, 3, 4], 'single');
      expect([...spool.pending.values()].map((r) => r.text)).toEqual(['Rp 1', 'Rp 2', 'Pesan suara baru', 'Flash']);
      expect(run.counts).toMatchObject({ spooled: 4, ignored: 0 });
    });
  });
});
