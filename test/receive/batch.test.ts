/**
 * Batched reads (src/receive/batch.ts): several +CMTI waiting are read with one AT+CMGL pair, spooled concurrently,
 * and deleted only once every write is durable. A scripted fake modem and an in-memory spool whose writes can be held
 * open or made to fail; planBatch() as a table.
 */
import { describe, expect, it } from 'vitest';
import { AtCommandError } from '../../src/errors.js';
import { MAX_BATCH_SLOTS, planBatch, worthBatching } from '../../src/receive/batch.js';
import { buildDeliverPdus } from '../../src/virtual-modem/pdu-builder.js';
import type { StoredPdu } from '../../src/sms/types.js';
import type { PartRecord, QuarantineRecord, SmsRecord } from '../../src/spool/types.js';
import { until } from '../support/until.js';
import { FakeModem, MemorySpool, receiverOn, slot } from './fakes.js';

const TS = new Date('2026-11-22T03:00:00Z');
const pdus = (from: string, text: string, ref?: number) =>
  buildDeliverPdus({ originator: from, text, timestamp: TS, ...(ref === undefined ? {} : { concatRef: ref }) });
function setup(policy: 'archive' | 'delete' | 'keep' = 'archive') {
  const calls: string[] = [];
  const modem = new FakeModem(calls);
  const spool = new MemorySpool({ gated: true, calls });
  const receiver = receiverOn(modem, spool, { otherSenders: policy });
  return { calls, modem, spool, receiver };
}

/** Starts the receiver (its start sweep on an empty SIM), then announces `indexes` while it is paused: all wait. */
async function announceWhilePaused(r: ReturnType<typeof setup>, indexes: number[], arm?: () => void): Promise<void> {
  const filled = new Map(r.modem.slots);
  r.modem.slots.clear(); // the start sweep finds an empty SIM; the SMS arrive after it
  r.receiver.start();
  await r.receiver.drained();
  for (const [i, s] of filled) r.modem.slots.set(i, s);
  arm?.(); // scripted listings: after the start sweep
  r.calls.length = 0;
  await r.receiver.pause();
  for (const index of indexes) r.modem.emit('sms', { storage: 'SM', index });
  r.receiver.resume();
}

const texts = (m: Map<string, SmsRecord>) => [...m.values()].map((x) => x.text).sort();
const commands = (calls: string[]) => calls.filter((c) => /^(list$|read |delete |cnma)/.test(c));
const LONG_A =
  'Terima kasih. Anda mendapatkan penambahan pulsa Rp 25.000 dari nomor 6281311112222 tgl 2026-11-22 pukul 10:15 WIB. Pulsa dapat digunakan untuk telepon, SMS dan paket data.';

describe('batched reads: several +CMTI waiting', () => {
  it('N waiting: two AT+CMGL and N AT+CMGD, no AT+CMGR; every text byte-exact; a multipart message joined once', async () => {
    const r = setup();
    const singles = [
      'Rp 5.000 dari 6281234 €',
      'Rp 10.000 dari 6285555 {}[]~',
      'Pulsa Rp 20.000 — terima kasih 🙂',
      'Rp 1 dari 62811',
    ];
    let i = 1;
    for (const t of singles) r.modem.put(i++, pdus('858', t)[0]!);
    const long = pdus('858', LONG_A, 42);
    expect(long).toHaveLength(2);
    for (const p of long) r.modem.put(i++, p);
    const n = i - 1;
    await announceWhilePaused(
      r,
      Array.from({ length: n }, (_, k) => k + 1),
    );
    await r.receiver.drained();
    const cmds = commands(r.calls);
    expect(cmds.filter((c) => c === 'list')).toHaveLength(2);
    expect(cmds.filter((c) => c.startsWith('delete')).sort()).toEqual(
      Array.from({ length: n }, (_, k) => `delete ${k + 1}`).sort(),
    );
    expect(cmds.filter((c) => c.startsWith('read'))).toEqual([]);
    expect(cmds).toHaveLength(n + 2);
    expect(texts(r.spool.pending)).toEqual([...singles, LONG_A].sort());
    expect([...r.spool.pending.values()].every((x) => x.readsAgreed === 2)).toBe(true);
    expect(r.spool.maxInFlight).toBeGreaterThanOrEqual(n); // the writes overlapped: every slot's at once
    expect([...r.spool.parts.values()].filter((p) => p.consumedBy === undefined)).toEqual([]);
    expect(r.modem.slots.size).toBe(0);
    await r.receiver.stop();
  });

  it('a lone waiting index keeps AT+CMGR, AT+CMGR, AT+CMGD', async () => {
    const r = setup();
    r.modem.put(4, pdus('858', 'Rp 4.000')[0]!);
    await announceWhilePaused(r, [4]);
    await r.receiver.drained();
    expect(commands(r.calls)).toEqual(['read 4', 'read 4', 'delete 4']);
    await r.receiver.stop();
  });

  it('no AT+CMGD until every spool write of the batch has resolved', async () => {
    const r = setup();
    for (let i = 1; i <= 5; i++) r.modem.put(i, pdus('858', `Rp ${i}.000 dari 6281`)[0]!);
    r.spool.hold = true;
    await announceWhilePaused(r, [1, 2, 3, 4, 5]);
    await until(() => r.spool.held() === 5, 'five writes in flight at once');
    r.spool.release(4);
    await new Promise((res) => setTimeout(res, 20));
    expect(r.calls.filter((c) => c.startsWith('delete'))).toEqual([]); // one write still open: nothing deleted
    expect(r.modem.slots.size).toBe(5);
    r.spool.release();
    await r.receiver.drained();
    const firstDelete = r.calls.findIndex((c) => c.startsWith('delete'));
    const lastWritten = r.calls.map((c) => c.startsWith('written')).lastIndexOf(true);
    expect(firstDelete).toBeGreaterThan(lastWritten);
    // Between the confirming listing and the deletes: no command at all.
    const secondList = r.calls.lastIndexOf('list');
    expect(commands(r.calls.slice(secondList + 1))).toEqual([
      'delete 1',
      'delete 2',
      'delete 3',
      'delete 4',
      'delete 5',
    ]);
    expect(r.modem.slots.size).toBe(0);
    await r.receiver.stop();
  });

  it('a write that fails leaves its slot on the SIM; the others are deleted', async () => {
    const r = setup();
    for (let i = 1; i <= 4; i++) r.modem.put(i, pdus('858', `Rp ${i}.000 dari 6281`)[0]!);
    r.spool.failWhen = (text) => text.startsWith('Rp 3.000');
    await announceWhilePaused(r, [1, 2, 3, 4]);
    await r.receiver.drained();
    expect([...r.modem.slots.keys()]).toEqual([3]);
    expect(r.calls).not.toContain('delete 3');
    expect(texts(r.spool.pending)).toEqual(['Rp 1.000 dari 6281', 'Rp 2.000 dari 6281', 'Rp 4.000 dari 6281']);
    expect(r.receiver.stats.lastError).toMatch(/index 3.*disk full/);
    await r.receiver.stop();
  });

  it('a slot whose PDU changed between the listings is not deleted on the first listing: read again on its own', async () => {
    const r = setup();
    const a = pdus('858', 'Rp 1.000 lama')[0]!;
    const b = pdus('858', 'Rp 9.000 baru')[0]!;
    r.modem.put(1, a);
    r.modem.put(2, pdus('858', 'Rp 2.000')[0]!);
    // After the first listing slot 1 is freed and a new SMS lands there.
    await announceWhilePaused(r, [1, 2], () => (r.modem.afterList = [() => r.modem.put(1, b)]));
    await r.receiver.drained();
    expect(texts(r.spool.pending)).toEqual(['Rp 2.000', 'Rp 9.000 baru']); // never the first listing's text
    expect(commands(r.calls)).toEqual(['list', 'list', 'delete 2', 'read 1', 'delete 1']);
    await r.receiver.stop();
  });

  it('a slot listed first and gone in the confirming listing is skipped (announced: one AT+CMGR finds it empty, then a sweep looks everywhere)', async () => {
    const r = setup();
    r.modem.put(1, pdus('858', 'Rp 1.000')[0]!);
    r.modem.put(2, pdus('858', 'Rp 2.000')[0]!);
    r.modem.put(7, pdus('858', 'Rp 7.000 tidak diumumkan')[0]!);
    await announceWhilePaused(
      r,
      [1, 2],
      () => (r.modem.afterList = [() => (r.modem.slots.delete(1), r.modem.slots.delete(7))]),
    );
    await r.receiver.drained();
    expect(texts(r.spool.pending)).toEqual(['Rp 2.000']);
    // An announced SMS that no listing confirms and no read finds is not taken for gone quietly: every memory is swept.
    expect(commands(r.calls)).toEqual(['list', 'list', 'delete 2', 'read 1', 'list']);
    await r.receiver.stop();
  });

  it('unannounced slots in the listing are handled in the same batch; the covered indexes are not read again', async () => {
    const r = setup();
    for (let i = 1; i <= 3; i++) r.modem.put(i, pdus('858', `Rp ${i}.000`)[0]!);
    r.modem.put(9, pdus('858', 'Rp 9.000 left by a crash')[0]!);
    await announceWhilePaused(r, [1, 2, 3]);
    await r.receiver.drained();
    expect(commands(r.calls).sort()).toEqual(['delete 1', 'delete 2', 'delete 3', 'delete 9', 'list', 'list']);
    expect(texts(r.spool.pending)).toHaveLength(4);
    await r.receiver.stop();
  });

  it('kept messages (policy keep) stay on the SIM across batches, never deleted', async () => {
    const r = setup('keep');
    r.modem.put(1, pdus('858', 'Rp 1.000')[0]!);
    r.modem.put(2, pdus('TELKOMSEL', 'Promo paket internet')[0]!);
    r.modem.put(3, pdus('858', 'Rp 3.000')[0]!);
    await announceWhilePaused(r, [1, 2, 3]);
    await r.receiver.drained();
    expect(r.calls).not.toContain('delete 2');
    expect([...r.modem.slots.keys()]).toEqual([2]);
    // Two more arrive: the kept one is listed again and left alone.
    r.calls.length = 0;
    r.modem.put(1, pdus('858', 'Rp 4.000')[0]!);
    r.modem.put(3, pdus('858', 'Rp 5.000')[0]!);
    await r.receiver.pause();
    r.modem.emit('sms', { storage: 'SM', index: 1 });
    r.modem.emit('sms', { storage: 'SM', index: 3 });
    r.receiver.resume();
    await r.receiver.drained();
    expect(commands(r.calls)).toEqual(['list', 'list', 'delete 1', 'delete 3']);
    expect([...r.modem.slots.keys()]).toEqual([2]);
    expect(texts(r.spool.pending)).toEqual(['Rp 1.000', 'Rp 3.000', 'Rp 4.000', 'Rp 5.000']);
    await r.receiver.stop();
  });

  it('a SIM mostly full of kept messages: no second listing, the waiting indexes are confirmed one by one', async () => {
    const r = setup('keep');
    r.receiver.start();
    await r.receiver.drained();
    for (let i = 10; i < 16; i++) {
      r.modem.put(i, pdus('TELKOMSEL', `Promo ${i}`)[0]!);
      r.modem.emit('sms', { storage: 'SM', index: i });
      await r.receiver.drained();
    }
    expect(r.modem.slots.size).toBe(6); // kept
    r.calls.length = 0;
    r.modem.put(1, pdus('858', 'Rp 1.000')[0]!);
    r.modem.put(2, pdus('858', 'Rp 2.000')[0]!);
    await r.receiver.pause();
    r.modem.emit('sms', { storage: 'SM', index: 1 });
    r.modem.emit('sms', { storage: 'SM', index: 2 });
    r.receiver.resume();
    await r.receiver.drained();
    expect(commands(r.calls)).toEqual(['read 1', 'read 1', 'delete 1', 'read 2', 'read 2', 'delete 2']); // not worth a listing
    expect(texts(r.spool.pending)).toEqual(['Rp 1.000', 'Rp 2.000']);
    await r.receiver.stop();
  });

  for (const which of ['first', 'confirming'] as const) {
    it(`an AT+CMGL that times out (${which} listing) falls back to the per-slot path; nothing is lost, nothing deleted unconfirmed`, async () => {
      const r = setup();
      for (let i = 1; i <= 3; i++) r.modem.put(i, pdus('858', `Rp ${i}.000`)[0]!);
      const timeout = new AtCommandError('AT_TIMEOUT', 'AT+CMGL=4: no final result within 60000 ms', {
        command: 'AT+CMGL=4',
      });
      await announceWhilePaused(
        r,
        [1, 2, 3],
        () => (r.modem.listScript = which === 'first' ? [timeout] : [[...r.modem.slots.values()], timeout]),
      );
      await r.receiver.drained();
      const lists = which === 'first' ? ['list'] : ['list', 'list'];
      expect(commands(r.calls)).toEqual([
        ...lists,
        'read 1',
        'read 1',
        'delete 1',
        'read 2',
        'read 2',
        'delete 2',
        'read 3',
        'read 3',
        'delete 3',
      ]);
      expect(texts(r.spool.pending)).toEqual(['Rp 1.000', 'Rp 2.000', 'Rp 3.000']);
      // Batches pause after a failed listing: the next burst is read one by one too.
      r.calls.length = 0;
      r.modem.put(1, pdus('858', 'Rp 4.000')[0]!);
      r.modem.put(2, pdus('858', 'Rp 5.000')[0]!);
      await r.receiver.pause();
      r.modem.emit('sms', { storage: 'SM', index: 1 });
      r.modem.emit('sms', { storage: 'SM', index: 2 });
      r.receiver.resume();
      await r.receiver.drained();
      expect(commands(r.calls)).toEqual(['read 1', 'read 1', 'delete 1', 'read 2', 'read 2', 'delete 2']);
      await r.receiver.stop();
    });
  }

  it('a part listed twice in one batch (a modem reporting each SMS twice) is spooled once and the message joined once', async () => {
    const r = setup();
    const [p1, p2] = pdus('858', LONG_A, 9);
    r.modem.put(1, p1!);
    r.modem.put(2, p1!);
    r.modem.put(3, p2!);
    await announceWhilePaused(r, [1, 2, 3]);
    await r.receiver.drained();
    expect(texts(r.spool.pending)).toEqual([LONG_A]);
    expect(r.calls.filter((c) => c === 'write part')).toHaveLength(2 + 2); // two parts, then two tombstones
    expect(r.calls.filter((c) => c === 'write pending')).toHaveLength(1);
    expect(r.modem.slots.size).toBe(0);
    await r.receiver.stop();
  });

  it('a burst larger than one batch: the rest waits for the next task (still batched), nothing read twice', async () => {
    const r = setup();
    const n = MAX_BATCH_SLOTS + 5;
    for (let i = 1; i <= n; i++) r.modem.put(i, pdus('858', `Rp ${i}.000`)[0]!);
    // Slots not announced are found by the first batch as well: announce all of them so each is waiting.
    await announceWhilePaused(
      r,
      Array.from({ length: n }, (_, k) => k + 1),
    );
    await r.receiver.drained();
    expect(r.calls.filter((c) => c.startsWith('read'))).toEqual([]);
    expect(r.calls.filter((c) => c.startsWith('delete'))).toHaveLength(n);
    expect(r.spool.pending.size).toBe(n);
    await r.receiver.stop();
  });
});

describe('planBatch', () => {
  const A = slot(1, pdus('858', 'A')[0]!);
  const B = slot(2, pdus('858', 'B')[0]!);
  const C = slot(3, pdus('858', 'C')[0]!);
  const C2 = slot(3, pdus('858', 'C changed')[0]!);
  const out = slot(4, pdus('858', 'draft')[0]!, 2);

  it('agreed, changed, gone, unlisted and left alone', () => {
    const plan = planBatch({
      taken: [1, 3, 5],
      first: [A, B, C, out],
      second: [{ ...A, stat: 1 }, C2, out],
      kept: new Map(),
    });
    expect(plan.agreed.map((s) => s.index)).toEqual([1]);
    expect(plan.changed.map((s) => [s.index, s.pdu])).toEqual([[3, C2.pdu]]);
    expect(plan.recheck).toEqual([5]); // 2 (unannounced, gone in the second) is skipped
    expect(plan.leftAlone).toBe(1);
  });

  it('an announced index gone in the confirming listing is read alone; a kept slot is left alone', () => {
    const plan = planBatch({ taken: [1, 2], first: [A, B, C], second: [B, C], kept: new Map([[3, C.pdu]]) });
    expect(plan.agreed.map((s) => s.index)).toEqual([2]);
    expect(plan.recheck).toEqual([1]);
    expect(plan.leftAlone).toBe(1);
  });

  it('unannounced slots fill the batch only up to its size; announced ones always go', () => {
    const plan = planBatch({ taken: [3], first: [A, B, C], second: [A, B, C], kept: new Map(), maxSlots: 2 });
    expect(plan.agreed.map((s) => s.index)).toEqual([3, 1]);
  });

  it('worthBatching: two or more waiting, not backing off, not mostly kept slots', () => {
    const base = { waiting: 2, leftAloneLastSeen: 0, kept: 0, nowMs: 10, backoffUntilMs: 0 };
    expect(worthBatching(base)).toBe(true);
    expect(worthBatching({ ...base, waiting: 1 })).toBe(false);
    expect(worthBatching({ ...base, backoffUntilMs: 11 })).toBe(false);
    expect(worthBatching({ ...base, kept: 3 })).toBe(false);
    expect(worthBatching({ ...base, leftAloneLastSeen: 2 })).toBe(true);
  });
});

describe('batched reads: the storage check', () => {
  it('an AT+CPMS? that fails right after the first listing is logged; every announced index is still read, spooled and deleted in the batch', async () => {
    const calls: string[] = [];
    const modem = new FakeModem(calls);
    const spool = new MemorySpool({ gated: true, calls });
    let cpmsFails = false;
    const receiver = receiverOn(modem, spool, {
      storageUsage: async () => {
        calls.push('cpms');
        if (cpmsFails)
          throw new AtCommandError('AT_TIMEOUT', 'AT+CPMS?: no final result within 10000 ms', { command: 'AT+CPMS?' });
        return { used: 0, total: 30 };
      },
    });
    receiver.start();
    await receiver.drained();
    for (let i = 1; i <= 3; i++) modem.put(i, pdus('858', `Rp ${i}.000`)[0]!);
    cpmsFails = true;
    await receiver.pause();
    for (let i = 1; i <= 3; i++) modem.emit('sms', { storage: 'SM', index: i });
    receiver.resume();
    await receiver.drained();
    // batch.ts header: "Every index the batch took from the receiver's queue is handled within this task".
    expect(spool.pending.size, `commands: ${calls.join(', ')}`).toBe(3);
    expect(modem.slots.size).toBe(0);
    await receiver.stop();
  });
});
