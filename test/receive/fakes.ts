/**
 * The receive tests' fakes, shared: a scripted modem (the calls it got, slots, scripted reads and listings) and an
 * in-memory spool (optionally gated: every write logged in the call list, held open until released, or failing).
 * Used by receiver.test.ts, batch.test.ts and keep-limit.test.ts; the integration tests use the virtual modem instead.
 * receiverOn() builds the Receiver those tests run: SIM m1, senders 858 accepted, others archived, a 10-minute
 * multipart timeout, an hourly sweep, a silent log, each overridable.
 */
import { EventEmitter } from 'node:events';
import { createSenderFilter } from '../../src/filter/sender.js';
import { silentLogger } from '../../src/log.js';
import { Receiver, type ReceiveModem, type ReceiverOptions, type ReceiveSpool } from '../../src/receive/receiver.js';
import type { StoredPdu } from '../../src/sms/types.js';
import type { PartRecord, QuarantineRecord, SmsRecord } from '../../src/spool/types.js';

/** A stored slot for a built PDU (buildDeliverPdus' pdu and tpduLength). */
export const slot = (index: number, p: { pdu: string; tpduLength: number }, stat = 0): StoredPdu => ({
  index,
  stat,
  length: p.tpduLength,
  pdu: p.pdu,
});

export class FakeModem extends EventEmitter implements ReceiveModem {
  slots = new Map<number, StoredPdu>();
  /** Every command, in order: 'list', 'read N', 'delete N', 'cnma' (a gated spool logs its writes here too). */
  calls: string[];
  /** Next readSms answers, consumed in order before the slot contents (an Error rejects; undefined falls through). */
  readScript: Array<StoredPdu | undefined | Error> = [];
  /** Next AT+CMGL answers, consumed in order before the slots' contents (an Error rejects). */
  listScript: Array<StoredPdu[] | Error> = [];
  /** Runs after each listing, in order (to change the SIM between two listings). */
  afterList: Array<() => void> = [];
  /** Every listing fails with this while set. */
  listError: Error | undefined;

  constructor(calls: string[] = []) {
    super();
    this.calls = calls;
  }

  put(index: number, p: { pdu: string; tpduLength: number }): void {
    this.slots.set(index, slot(index, p));
  }

  async listSms(): Promise<StoredPdu[]> {
    this.calls.push('list');
    if (this.listError) throw this.listError;
    const scripted = this.listScript.shift();
    const out = scripted instanceof Error ? scripted : (scripted ?? [...this.slots.values()].map((s) => ({ ...s })));
    this.afterList.shift()?.();
    if (out instanceof Error) throw out;
    return out;
  }

  async readSms(index: number): Promise<StoredPdu | undefined> {
    this.calls.push(`read ${index}`);
    const scripted = this.readScript.shift();
    if (scripted instanceof Error) throw scripted;
    if (scripted !== undefined) return scripted;
    const s = this.slots.get(index);
    return s && { ...s };
  }

  async deleteSms(index: number): Promise<void> {
    this.calls.push(`delete ${index}`);
    this.slots.delete(index);
  }

  async acknowledgeDirect(): Promise<void> {
    this.calls.push('cnma');
  }
}

/**
 * An in-memory spool. Plain: a write is done when its promise resolves. Gated (`gated: true`): each write is logged
 * in `calls` ('write pending' ... 'written pending'), yields to the event loop, waits for release() while `hold` is
 * set, and rejects when `failWhen(text)`; inFlight / maxInFlight count concurrent writes.
 */
export class MemorySpool implements ReceiveSpool {
  pending = new Map<string, SmsRecord>();
  ignored = new Map<string, SmsRecord>();
  quarantine = new Map<string, QuarantineRecord>();
  parts = new Map<string, PartRecord>();
  hold = false;
  inFlight = 0;
  maxInFlight = 0;
  failWhen: (text: string) => boolean = () => false;
  private gates: Array<() => void> = [];
  private readonly calls: string[] | undefined;

  constructor(opts: { gated?: boolean; calls?: string[] } = {}) {
    this.calls = opts.gated ? (opts.calls ?? []) : undefined;
  }

  private async write(what: string, text: string, commit: () => void): Promise<void> {
    const calls = this.calls;
    if (!calls) return commit();
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    calls.push(`write ${what}`);
    if (this.hold) await new Promise<void>((r) => this.gates.push(r));
    else await new Promise((r) => setImmediate(r));
    this.inFlight--;
    if (this.failWhen(text)) throw new Error(`disk full writing ${what}`);
    commit();
    calls.push(`written ${what}`);
  }

  /** Writes waiting for release(). */
  held(): number {
    return this.gates.length;
  }

  release(n = this.gates.length): void {
    for (const g of this.gates.splice(0, n)) g();
  }

  async putPending(rec: SmsRecord) {
    const created = !this.pending.has(rec.id);
    await this.write('pending', rec.text, () => this.pending.set(rec.id, rec));
    return { created, area: 'pending' as const };
  }

  async putIgnored(rec: SmsRecord) {
    await this.write('ignored', rec.text, () => this.ignored.set(rec.id, rec));
    return { created: true };
  }

  async putQuarantine(rec: QuarantineRecord) {
    await this.write('quarantine', rec.raw, () => this.quarantine.set(rec.id, rec));
    return { created: true };
  }

  async putPart(rec: PartRecord) {
    const created = !this.parts.has(rec.id);
    await this.write('part', rec.text, () => this.parts.set(rec.id, rec));
    return { created };
  }

  async listParts() {
    this.calls?.push('listParts');
    return [...this.parts.values()].map((p) => ({ ...p }));
  }

  async deleteParts(ids: string[]) {
    for (const id of ids) this.parts.delete(id);
  }
}

/** A Receiver on `modem` and `spool` with the tests' defaults (see the header), `over` replacing any of them. */
export function receiverOn(modem: ReceiveModem, spool: ReceiveSpool, over: Partial<ReceiverOptions> = {}): Receiver {
  return new Receiver({
    modem,
    spool,
    sim: { modem: 'm1', imsi: '510100000000001' },
    accept: createSenderFilter(['858']),
    otherSenders: 'archive',
    multipartTimeoutMs: 600_000,
    sweepIntervalMs: 3_600_000,
    logger: silentLogger(),
    ...over,
  });
}
