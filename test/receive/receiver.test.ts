/**
 * Receiver unit tests with a scripted fake modem and an in-memory spool: the paths a real modem produces rarely, and
 * the receiver's share of the modem's scheduler (operator work beside it, disconnects, stop).
 */
import { describe, expect, it } from 'vitest';
import { AtCommandError } from '../../src/errors.js';
import { AtScheduler } from '../../src/modem/scheduler.js';
import { createSenderFilter } from '../../src/filter/sender.js';
import { buildDeliverPdus, buildStatusReportPdu } from '../../src/virtual-modem/pdu-builder.js';
import type { StoredPdu } from '../../src/sms/types.js';
import { FakeModem, MemorySpool, receiverOn } from './fakes.js';

const TS = new Date('2026-11-22T03:00:00Z');
const pdu = (from: string, text: string) => buildDeliverPdus({ originator: from, text, timestamp: TS })[0]!;

function setup(policy: 'archive' | 'delete' | 'keep' = 'archive') {
  const modem = new FakeModem();
  const spool = new MemorySpool();
  const receiver = receiverOn(modem, spool, { otherSenders: policy });
  return { modem, spool, receiver };
}

describe('Receiver', () => {
  it('an index read twice with two different PDUs: only the PDU two reads agree on is spooled, then deleted', async () => {
    const { modem, spool, receiver } = setup();
    const first = pdu('858', 'Rp 5000 dari 6281');
    const other = pdu('858', 'Rp 9000 dari 6282');
    receiver.start();
    await receiver.drained();
    modem.put(3, first);
    // read for handling -> first; the confirming read -> another PDU; a third read (the slot) -> first again
    modem.readScript = [
      { index: 3, stat: 0, length: first.tpduLength, pdu: first.pdu },
      { index: 3, stat: 0, length: other.tpduLength, pdu: other.pdu },
    ];
    modem.emit('sms', { storage: 'SM', index: 3 });
    await receiver.drained();
    expect([...spool.pending.values()].map((r) => r.text)).toEqual(['Rp 5000 dari 6281']);
    expect(modem.calls.slice(-4)).toEqual(['read 3', 'read 3', 'read 3', 'delete 3']);
    await receiver.stop();
  });

  it('+CMS ERROR: 322 on a command triggers a sweep at once', async () => {
    const { modem, receiver } = setup();
    receiver.start();
    await receiver.drained();
    const lists = modem.calls.filter((c) => c === 'list').length;
    modem.readScript = [
      new AtCommandError('AT_ERROR', 'AT+CMGR=7 failed: +CMS ERROR: 322 (memory full)', {
        command: 'AT+CMGR=7',
        final: '+CMS ERROR: 322',
        errorCode: 322,
      }),
    ];
    modem.emit('sms', { storage: 'SM', index: 7 });
    await receiver.drained();
    expect(modem.calls.filter((c) => c === 'list').length).toBe(lists + 1);
    await receiver.stop();
  });

  it('a +CME ERROR with the same number is not mistaken for memory full', async () => {
    const { modem, receiver } = setup();
    receiver.start();
    await receiver.drained();
    const lists = modem.calls.filter((c) => c === 'list').length;
    modem.readScript = [
      new AtCommandError('AT_ERROR', 'x', { command: 'AT+CMGR=7', final: '+CME ERROR: 322', errorCode: 322 }),
    ];
    modem.emit('sms', { storage: 'SM', index: 7 });
    await receiver.drained();
    expect(modem.calls.filter((c) => c === 'list').length).toBe(lists);
    await receiver.stop();
  });

  it('a status report left on the SIM is deleted, not quarantined', async () => {
    const { modem, spool, receiver } = setup();
    const sr = buildStatusReportPdu({
      messageRef: 5,
      recipient: '+6281234567890',
      submitted: TS,
      discharged: TS,
      status: 0,
    });
    modem.put(2, sr);
    receiver.start();
    await receiver.drained();
    expect(spool.quarantine.size).toBe(0);
    expect(modem.slots.size).toBe(0);
    await receiver.stop();
  });

  it('policy keep cannot keep a +CMT (never stored): it is acknowledged, not spooled', async () => {
    const { modem, spool, receiver } = setup('keep');
    receiver.start();
    await receiver.drained();
    const p = pdu('PROMO', 'diskon');
    modem.emit('sms-direct', { pdu: p.pdu, length: p.tpduLength });
    await receiver.drained();
    expect(modem.calls).toContain('cnma');
    expect(spool.pending.size + spool.ignored.size).toBe(0);
    await receiver.stop();
  });

  it('every stop() call waits for the task in progress (the port must not close under a running read)', async () => {
    const { modem, receiver } = setup();
    receiver.start();
    await receiver.drained();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const p = pdu('858', 'Rp 1000');
    modem.put(4, p);
    const original = modem.readSms.bind(modem);
    modem.readSms = async (i: number) => {
      await gate;
      return original(i);
    };
    modem.emit('sms', { storage: 'SM', index: 4 });
    await new Promise((r) => setImmediate(r));
    let firstDone = false;
    let secondDone = false;
    void receiver.stop().then(() => (firstDone = true));
    void receiver.stop().then(() => (secondDone = true));
    await new Promise((r) => setImmediate(r));
    expect([firstDone, secondDone]).toEqual([false, false]);
    release();
    await receiver.drained();
    await new Promise((r) => setImmediate(r));
    expect([firstDone, secondDone]).toEqual([true, true]);
  });

  it('pause() waits for the task in progress; work arriving while paused waits for resume(), none is dropped', async () => {
    const { modem, spool, receiver } = setup();
    receiver.start();
    await receiver.drained();
    await receiver.pause();
    modem.put(1, pdu('858', 'Rp 1000 satu'));
    modem.emit('sms', { storage: 'SM', index: 1 });
    await new Promise((r) => setImmediate(r));
    expect(modem.calls).not.toContain('read 1');
    receiver.resume();
    await receiver.drained();
    expect(spool.pending.size).toBe(1);
    expect(modem.slots.size).toBe(0);
    await receiver.stop();
  });

  it('a +CMT arriving during a long sweep is acknowledged between sweep items, not after the whole sweep', async () => {
    const { modem, receiver } = setup();
    for (let i = 1; i <= 3; i++) modem.put(i, pdu('858', `Rp ${i}000`));
    const direct = pdu('858', 'Rp 9000 langsung');
    let emitted = false;
    const original = modem.deleteSms.bind(modem);
    modem.deleteSms = async (i: number) => {
      await original(i);
      if (!emitted) {
        emitted = true;
        modem.emit('sms-direct', { pdu: direct.pdu, length: direct.tpduLength });
      }
    };
    receiver.start();
    await receiver.drained();
    const cnmaAt = modem.calls.indexOf('cnma');
    expect(cnmaAt).toBeGreaterThan(-1);
    expect(cnmaAt).toBeLessThan(modem.calls.indexOf('delete 3'));
    await receiver.stop();
  });

  it('a failing sweep is logged and retried later; nothing is deleted', async () => {
    const { modem, receiver } = setup();
    modem.put(1, pdu('858', 'Rp 1000'));
    modem.listError = new AtCommandError('AT_TIMEOUT', 'AT+CMGL=4: no answer within 10000 ms', {
      command: 'AT+CMGL=4',
    });
    receiver.start();
    await receiver.drained();
    expect(receiver.stats.lastError).toContain('no answer');
    expect(modem.slots.size).toBe(1);
    modem.listError = undefined;
    receiver.requestSweep('retry');
    await receiver.drained();
    expect(modem.slots.size).toBe(0);
    await receiver.stop();
  });
});

describe('Receiver on the modem scheduler shared with other work', () => {
  function shared() {
    const modem = new FakeModem();
    const spool = new MemorySpool();
    const scheduler = new AtScheduler<FakeModem>({ name: 'm1' });
    scheduler.attach(modem);
    const receiver = receiverOn(modem, spool, { scheduler });
    /** An operator task that records itself in the modem's call log, held until `release`. */
    const operator = (label: string, hold?: Promise<void>) =>
      scheduler.schedule({ priority: 'operator', label }, async () => {
        modem.calls.push(label);
        await hold;
      });
    return { modem, spool, scheduler, receiver, operator };
  }

  it('an SMS arriving during an operator command is handled right after it, before other operator work and sweeps', async () => {
    const { modem, spool, receiver, operator } = shared();
    receiver.start();
    await receiver.drained();
    modem.calls.length = 0;
    let release!: () => void;
    const op1 = operator('op1', new Promise<void>((r) => (release = r)));
    const op2 = operator('op2');
    receiver.requestSweep('test');
    const direct = pdu('858', 'Rp 7000 langsung');
    modem.put(1, pdu('858', 'Rp 1000'));
    modem.emit('sms-direct', { pdu: direct.pdu, length: direct.tpduLength });
    modem.emit('sms', { storage: 'SM', index: 1 });
    release();
    await Promise.all([op1, op2]);
    await receiver.drained();
    expect(modem.calls).toEqual(['op1', 'cnma', 'read 1', 'read 1', 'delete 1', 'op2', 'list']);
    expect(spool.pending.size).toBe(2);
    await receiver.stop();
  });

  it('work refused while the modem is disconnected is not an error, and is taken again once a modem is attached', async () => {
    const { modem, spool, scheduler, receiver } = shared();
    receiver.start();
    await receiver.drained();
    scheduler.detach('port closed');
    modem.put(2, pdu('858', 'Rp 2000'));
    modem.emit('sms', { storage: 'SM', index: 2 });
    receiver.requestSweep('while disconnected');
    await receiver.drained();
    expect(receiver.stats.lastError).toBeUndefined();
    expect(modem.calls.filter((c) => c === 'read 2' || c === 'list')).toEqual(['list']); // only the start sweep
    scheduler.attach(modem);
    modem.emit('sms', { storage: 'SM', index: 2 }); // the same index may be queued again
    receiver.requestSweep('after reconnect'); // and a sweep may be requested again
    await receiver.drained();
    expect(modem.calls.filter((c) => c === 'read 2' || c === 'list')).toEqual(['list', 'read 2', 'read 2', 'list']);
    expect(spool.pending.size).toBe(1);
    await receiver.stop();
  });

  it('stop() withdraws the receiver tasks from the shared queue, not the others', async () => {
    const { modem, scheduler, receiver, operator } = shared();
    receiver.start();
    await receiver.drained();
    modem.calls.length = 0;
    let release!: () => void;
    const op1 = operator('op1', new Promise<void>((r) => (release = r)));
    receiver.requestSweep('test');
    modem.put(3, pdu('858', 'Rp 3000'));
    modem.emit('sms', { storage: 'SM', index: 3 });
    const op2 = operator('op2');
    const stopped = receiver.stop();
    expect(scheduler.status().queuedBy).toMatchObject({ receive: 0, maintenance: 0, operator: 1 });
    release();
    await Promise.all([op1, op2, stopped]);
    expect(modem.calls).toEqual(['op1', 'op2']);
    expect(modem.slots.size).toBe(1); // still on the SIM: the next start sweeps it
  });
});

/** One hex digit of the user data changed, as a noisy UART does: still a valid PDU, with another text. */
function garble(p: { pdu: string; tpduLength: number }, at = -3): StoredPdu {
  const i = p.pdu.length + at;
  const digit = p.pdu[i] === '0' ? '1' : '0';
  return { index: 3, stat: 0, length: p.tpduLength, pdu: p.pdu.slice(0, i) + digit + p.pdu.slice(i + 1) };
}

describe('Receiver: a corrupted read is never forwarded (issue 11 item 5)', () => {
  const good = pdu('858', 'Anda mendapatkan pulsa Rp 5000 dari 6281234');

  it('the test oracle: a garbled read decodes to a plausible, different text', async () => {
    const { decodeDeliver } = await import('../../src/sms/pdu.js');
    const r = decodeDeliver(garble(good));
    expect(r.ok).toBe(true);
    expect(r.ok && r.sms.text).not.toBe('Anda mendapatkan pulsa Rp 5000 dari 6281234');
  });

  it('+CMTI: a garbled first read is read again until two agree; one record, right text, same id as a clean read', async () => {
    const clean = setup();
    clean.receiver.start();
    await clean.receiver.drained();
    clean.modem.put(3, good);
    clean.modem.emit('sms', { storage: 'SM', index: 3 });
    await clean.receiver.drained();
    await clean.receiver.stop();
    const [cleanRec] = [...clean.spool.pending.values()];
    expect(clean.modem.calls.slice(-3)).toEqual(['read 3', 'read 3', 'delete 3']); // a clean SMS: two reads and a delete, as before
    expect(cleanRec).toMatchObject({ text: 'Anda mendapatkan pulsa Rp 5000 dari 6281234', readsAgreed: 2 });

    const { modem, spool, receiver } = setup();
    receiver.start();
    await receiver.drained();
    modem.put(3, good);
    modem.readScript = [garble(good)];
    modem.emit('sms', { storage: 'SM', index: 3 });
    await receiver.drained();
    expect([...spool.pending.values()].map((r) => [r.id, r.text])).toEqual([[cleanRec!.id, cleanRec!.text]]);
    expect(modem.calls.slice(-4)).toEqual(['read 3', 'read 3', 'read 3', 'delete 3']);
    await receiver.stop();
  });

  it('a sweep whose listing is garbled: the index is read again, the garbled text is never spooled', async () => {
    const { modem, spool, receiver } = setup();
    modem.put(3, good);
    modem.listScript.push([garble(good)]);
    receiver.start();
    await receiver.drained();
    expect([...spool.pending.values()].map((r) => r.text)).toEqual(['Anda mendapatkan pulsa Rp 5000 dari 6281234']);
    expect(modem.slots.size).toBe(0);
    await receiver.stop();
  });

  it('3 of 3 garbled reads (each different) and a 4th different: quarantined with every version, nothing forwarded', async () => {
    const { modem, spool, receiver } = setup();
    receiver.start();
    await receiver.drained();
    modem.put(3, good);
    modem.readScript = [garble(good, -3), garble(good, -5), garble(good, -7), garble(good, -9)];
    modem.emit('sms', { storage: 'SM', index: 3 });
    await receiver.drained();
    expect(spool.pending.size).toBe(0);
    const q = [...spool.quarantine.values()];
    expect(q).toHaveLength(1);
    expect(q[0]!.reason).toMatch(/^reads disagree: 4 reads of index 3 gave 4 different PDUs/);
    expect(q[0]!.raw.split('\n')).toHaveLength(4);
    expect(modem.calls.slice(-5)).toEqual(['read 3', 'read 3', 'read 3', 'read 3', 'delete 3']);
    await receiver.stop();
  });

  it('+CMT: spooled after the strict checks with readsAgreed 1 (no index to read again), then acknowledged', async () => {
    const { modem, spool, receiver } = setup();
    receiver.start();
    await receiver.drained();
    modem.emit('sms-direct', { pdu: good.pdu, length: good.tpduLength });
    await receiver.drained();
    expect([...spool.pending.values()]).toMatchObject([
      { text: 'Anda mendapatkan pulsa Rp 5000 dari 6281234', readsAgreed: 1 },
    ]);
    expect(modem.calls.at(-1)).toBe('cnma');
    // a +CMT whose <length> does not match its octets (a digit lost on the line) is quarantined, not forwarded
    modem.emit('sms-direct', { pdu: good.pdu.slice(0, -2), length: good.tpduLength });
    await receiver.drained();
    expect(spool.pending.size).toBe(1);
    expect(spool.quarantine.size).toBe(1);
    await receiver.stop();
  });

  it('+CMT with octets after its UDL (one UDL digit flipped: "Rp 50000" would read "Rp 50"): quarantined raw, acknowledged, not forwarded', async () => {
    const { modem, spool, receiver } = setup();
    receiver.start();
    await receiver.drained();
    const [p] = buildDeliverPdus({
      originator: '858',
      text: 'Anda mendapatkan pulsa Rp 50000 dari 6281234',
      timestamp: new Date('2024-05-01T00:00:00Z'),
    });
    const udlAt = p!.pdu.length - 2 * Math.ceil((44 * 7) / 8) - 2;
    expect(p!.pdu.slice(udlAt, udlAt + 2)).toBe('2C');
    const noisy = p!.pdu.slice(0, udlAt) + '1C' + p!.pdu.slice(udlAt + 2);
    modem.emit('sms-direct', { pdu: noisy, length: p!.tpduLength });
    await receiver.drained();
    expect(spool.pending.size).toBe(0);
    expect([...spool.quarantine.values()]).toMatchObject([
      { raw: noisy, reason: expect.stringContaining('direct delivery (+CMT)') },
    ]);
    expect(modem.calls.at(-1)).toBe('cnma');
    // the clean +CMT is forwarded with its full amount
    modem.emit('sms-direct', { pdu: p!.pdu, length: p!.tpduLength });
    await receiver.drained();
    expect([...spool.pending.values()]).toMatchObject([
      { text: 'Anda mendapatkan pulsa Rp 50000 dari 6281234', readsAgreed: 1 },
    ]);
    await receiver.stop();
  });

  it('user data past its UDL (operator notice, UDL 53 septets, 77 octets follow): forwarded, extra octets kept in the record', async () => {
    const { readFileSync } = await import('node:fs');
    const fx = JSON.parse(
      readFileSync(new URL('../fixtures/pdus/operator-udl-overflow.json', import.meta.url), 'utf8'),
    ) as { pdu: string; length: number; expect: { text: string; extraOctets: string } };
    const modem = new FakeModem();
    const spool = new MemorySpool();
    const receiver = receiverOn(modem, spool, { accept: createSenderFilter(['TELKOMSEL']) });
    modem.slots.set(5, { index: 5, stat: 0, length: fx.length, pdu: fx.pdu });
    receiver.start();
    await receiver.drained();
    expect(spool.quarantine.size).toBe(0);
    expect([...spool.pending.values()]).toMatchObject([
      { sender: 'TELKOMSEL', text: fx.expect.text, extraOctets: fx.expect.extraOctets, readsAgreed: 2 },
    ]);
    expect(modem.slots.size).toBe(0);
    await receiver.stop();
  });
});

describe('Receiver: multipart that cannot mix (issue 11 item 6)', () => {
  const TA = new Date('2026-11-22T05:00:00Z');
  const TB = new Date('2026-11-22T05:00:07Z');
  const msg = (from: string, parts: string[], timestamp: Date, concatRef = 7) =>
    buildDeliverPdus({ originator: from, text: parts.join(''), partsOverride: parts, timestamp, concatRef });
  const A = ['Transfer pulsa Rp 5000 ', 'dari 6281111 berhasil'];
  const B = ['Transfer pulsa Rp 9000 ', 'dari 6282222 berhasil'];

  function make(
    opts: {
      modem?: string;
      imsi?: string;
      spool?: MemorySpool;
      timeoutMs?: number;
      monotonic?: () => number;
      now?: () => number;
      adopt?: (m: string) => boolean;
      senders?: string[];
    } = {},
  ) {
    const modem = new FakeModem();
    const spool = opts.spool ?? new MemorySpool();
    const receiver = receiverOn(modem, spool, {
      sim: { modem: opts.modem ?? 'm1', imsi: opts.imsi ?? '510100000000001' },
      accept: createSenderFilter(opts.senders ?? ['858', '+628123', '628123']),
      multipartTimeoutMs: opts.timeoutMs ?? 600_000,
      ...(opts.monotonic ? { monotonic: opts.monotonic } : {}),
      ...(opts.now ? { now: opts.now } : {}),
      ...(opts.adopt ? { adoptPartsOf: opts.adopt } : {}),
    });
    return { modem, spool, receiver };
  }

  async function deliver(r: ReturnType<typeof make>, pdus: Array<{ pdu: string; tpduLength: number }>): Promise<void> {
    for (const p of pdus) {
      r.modem.put(1, p);
      r.modem.emit('sms', { storage: 'SM', index: 1 });
      await r.receiver.drained();
    }
  }

  it('one sender, one reference, two messages with parts interleaved (A1 B1 A2 B2): two records, each with its own text', async () => {
    const r = make();
    r.receiver.start();
    await r.receiver.drained();
    const [a1, a2] = msg('858', A, TA);
    const [b1, b2] = msg('858', B, TB);
    await deliver(r, [a1!, b1!, a2!, b2!]);
    expect([...r.spool.pending.values()].map((x) => x.text).sort()).toEqual([A.join(''), B.join('')].sort());
    for (const rec of r.spool.pending.values())
      expect(rec.multipart).toMatchObject({ complete: true, received: [1, 2] });
    await r.receiver.stop();
  });

  it('two senders that differ only in format (+628123 / 628123), same reference and the same time stamp: never mixed', async () => {
    const r = make();
    r.receiver.start();
    await r.receiver.drained();
    const [a1, a2] = msg('+628123', A, TA);
    const [b1, b2] = msg('628123', B, TA);
    await deliver(r, [a1!, b1!, a2!, b2!]);
    const got = [...r.spool.pending.values()].map((x) => [x.sender, x.text]).sort();
    expect(got).toEqual([
      ['+628123', A.join('')],
      ['628123', B.join('')],
    ]);
    await r.receiver.stop();
  });

  it('group ages run on a monotonic clock: a wall clock jumping a day ahead (NTP on a Pi without RTC) flushes nothing', async () => {
    let mono = 1_000;
    let wall = Date.parse('2026-11-22T05:00:10Z');
    const r = make({ timeoutMs: 4_000, monotonic: () => mono, now: () => wall });
    r.receiver.start();
    await r.receiver.drained();
    const [a1] = msg('858', A, TA);
    await deliver(r, [a1!]);
    wall += 86_400_000; // NTP sets the clock a day ahead
    await new Promise((res) => setTimeout(res, 1_300)); // the timeout check runs every second (timeout / 4, at least 1 s)
    await r.receiver.drained();
    expect(r.spool.pending.size).toBe(0);
    mono += 4_000; // the real timeout has passed
    await new Promise((res) => setTimeout(res, 1_300));
    await r.receiver.drained();
    expect([...r.spool.pending.values()]).toMatchObject([{ multipart: { complete: false, received: [1] } }]);
    await r.receiver.stop();
  });

  it('parts left by a modem removed from config are joined by the adopting receiver, with the id their own modem would give', async () => {
    const spool = new MemorySpool();
    const gone = make({ modem: 'old-name', imsi: '510100000000009', spool });
    gone.receiver.start();
    await gone.receiver.drained();
    const [a1, a2] = msg('858', A, TA);
    await deliver(gone, [a1!]);
    await gone.receiver.stop();
    // What a receiver of 'old-name' would have produced had the second part arrived there:
    const control = make({ modem: 'old-name', imsi: '510100000000009' });
    control.receiver.start();
    await control.receiver.drained();
    await deliver(control, [a1!, a2!]);
    await control.receiver.stop();
    const expectedId = [...control.spool.pending.keys()][0];

    let mono = 0;
    const heir = make({ modem: 'm1', spool, timeoutMs: 4_000, monotonic: () => mono, adopt: (m) => m !== 'm1' });
    heir.receiver.start();
    await heir.receiver.drained();
    expect(spool.pending.size).toBe(0); // incomplete and young: it waits
    mono += 4_000;
    await new Promise((res) => setTimeout(res, 1_300));
    await heir.receiver.drained();
    const recs = [...spool.pending.values()];
    expect(recs).toHaveLength(1);
    expect(recs[0]).toMatchObject({
      sim: { modem: 'old-name', imsi: '510100000000009' },
      multipart: { complete: false, received: [1] },
    });
    expect(recs[0]!.text.startsWith(A[0]!)).toBe(true);
    expect([...spool.parts.values()].filter((p) => p.consumedBy === undefined)).toHaveLength(0);
    // and a complete message of a renamed modem gets the same record id as before the rename
    const spool2 = new MemorySpool();
    const before = make({ modem: 'old-name', imsi: '510100000000009', spool: spool2 });
    before.receiver.start();
    await before.receiver.drained();
    await deliver(before, [a1!]);
    await before.receiver.stop();
    spool2.parts.set('x', { ...[...spool2.parts.values()][0]!, id: 'x', sequence: 2, text: A[1]!, pdu: a2!.pdu });
    const renamed = make({ modem: 'new-name', imsi: '510100000000009', spool: spool2, adopt: (m) => m !== 'new-name' });
    renamed.receiver.start();
    await renamed.receiver.drained();
    expect([...spool2.pending.keys()]).toEqual([expectedId]);
    await renamed.receiver.stop();
    await heir.receiver.stop();
  });

  it("parts read on two modems that report the same IMSI never join, and one is not the other's retransmission", async () => {
    const spool = new MemorySpool();
    let mono = 0;
    const one = make({ modem: 'm1', imsi: '510100000000001', spool, timeoutMs: 4_000, monotonic: () => mono });
    const two = make({ modem: 'm2', imsi: '510100000000001', spool, timeoutMs: 4_000, monotonic: () => mono });
    one.receiver.start();
    two.receiver.start();
    await one.receiver.drained();
    await two.receiver.drained();
    const [a1, a2] = msg('858', A, TA);
    await deliver(one, [a1!, a2!]); // joined on m1
    expect(spool.pending.size).toBe(1);
    await deliver(two, [a1!]); // the same part, read on m2: not a retransmission of m1's, and not joined with anything of m1
    expect([...spool.parts.values()].filter((p) => p.consumedBy === undefined && p.sim.modem === 'm2')).toHaveLength(1);
    expect(two.receiver.stats.duplicates).toBe(0);
    mono += 4_000;
    await new Promise((res) => setTimeout(res, 1_300));
    await two.receiver.drained();
    const fromTwo = [...spool.pending.values()].filter((x) => x.sim.modem === 'm2');
    expect(fromTwo.map((x) => x.multipart)).toEqual([
      { reference: 7, referenceBits: 8, total: 2, received: [1], complete: false },
    ]);
    expect([...spool.pending.values()].filter((x) => x.sim.modem === 'm1').map((x) => x.text)).toEqual([A.join('')]);
    await one.receiver.stop();
    await two.receiver.stop();
  });
});
