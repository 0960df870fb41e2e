/**
 * The network's side of incoming SMS: how a part reaches the modem (stored with +CMTI, or +CMT per AT+CNMI / AT+CSMS,
 * awaiting AT+CNMA for `cnmaTimeoutMs`) and what the SMSC keeps while the modem cannot take it. Nothing is lost: a part
 * the modem cannot receive, or that finds the storage full, waits at the SMSC and is delivered in order later; a modem
 * losing power returns its unacknowledged +CMT to the SMSC. Timers only through host.later(), output only through
 * host.urc() / host.send().
 */
import type { Logger } from '../log.js';
import type { Outcome } from './at-command.js';
import { buildDeliverPdus, type BuiltPdu } from './pdu-builder.js';
import type { SmsStorage } from './sms-storage.js';
import type {
  CnmiSettings,
  InjectResult,
  InjectSmsOptions,
  SimSnapshot,
  VirtualModemOptions,
} from './virtual-modem-types.js';

export interface DeliveryHost {
  readonly storage: SmsStorage;
  readonly log: Logger;
  /** The options the modem was built with (reportTwice, cnmaTimeoutMs are read at each use). */
  readonly opts: Pick<VirtualModemOptions, 'reportTwice' | 'cnmaTimeoutMs'>;
  /** The family's memory-full URC, if it has one. */
  readonly storageFullUrc: string | undefined;
  /** The modem can take SMS from the network: powered, attached to USB, SIM unlocked, radio on, SMS ready. */
  canReceive(): boolean;
  cnmi(): CnmiSettings;
  messageService(): 0 | 1;
  later(ms: number, fn: () => void): NodeJS.Timeout;
  urc(line: string): void;
  send(text: string): void;
}

export class SmsDelivery {
  private readonly held: Array<{ built: BuiltPdu; delivery: 'store' | 'direct' }> = [];
  private outstandingCmt: { built: BuiltPdu; timer: NodeJS.Timeout } | undefined;
  private readonly directQueue: BuiltPdu[] = [];
  private dropped = 0;
  private concatRef = 0x40;

  constructor(private readonly host: DeliveryHost) {}

  /** SMS the SMSC holds because the modem could not take them (full storage, SIM locked, not ready). */
  get heldCount(): number {
    return this.held.length;
  }

  get droppedForFullStorage(): number {
    return this.dropped;
  }

  /** What the SMSC holds, for SimSnapshot. An unacknowledged +CMT counts as held (the SMSC retries it). */
  snapshot(): Pick<SimSnapshot, 'held' | 'concatRef'> {
    const held = this.held.map((h) => ({ pdu: h.built.pdu, tpduLength: h.built.tpduLength, delivery: h.delivery }));
    if (this.outstandingCmt)
      held.push({
        pdu: this.outstandingCmt.built.pdu,
        tpduLength: this.outstandingCmt.built.tpduLength,
        delivery: 'direct',
      });
    for (const b of this.directQueue) held.push({ pdu: b.pdu, tpduLength: b.tpduLength, delivery: 'direct' });
    return { held, concatRef: this.concatRef };
  }

  restore(s: Pick<SimSnapshot, 'held' | 'concatRef'>): void {
    this.held.length = 0;
    for (const h of s.held) this.held.push({ built: { pdu: h.pdu, tpduLength: h.tpduLength }, delivery: h.delivery });
    this.concatRef = s.concatRef;
  }

  /** Stops the +CNMA wait timer (the modem clears every timer it has). */
  clearCmtTimer(): void {
    if (this.outstandingCmt) clearTimeout(this.outstandingCmt.timer);
  }

  /** AT+CNMA: acknowledges the outstanding +CMT; 340 when none is expected. */
  cnma(): Outcome {
    const pending = this.outstandingCmt;
    if (!pending) return { error: { cms: 340 } };
    clearTimeout(pending.timer);
    this.outstandingCmt = undefined;
    return { then: () => this.sendNextDirect() };
  }

  /** An SMS arrives from the network: built as DELIVER PDU(s) (in the order asked, duplicated if asked), then delivered. */
  injectSms(opts: InjectSmsOptions, defaults: { now: () => Date; smsc: string }): InjectResult {
    const concatRefBits = opts.concatRefBits ?? 8;
    const parts = buildDeliverPdus({
      originator: opts.from,
      text: opts.text,
      encoding: opts.encoding ?? 'auto',
      timestamp: opts.timestamp ?? defaults.now(),
      tzQuarterHours: opts.tzQuarterHours ?? 28,
      smsc: opts.smsc ?? defaults.smsc,
      concatRef: opts.concatRef ?? this.nextConcatRef(concatRefBits),
      concatRefBits,
      ...(opts.partsOverride ? { partsOverride: opts.partsOverride } : {}),
      ...(opts.pid === undefined ? {} : { pid: opts.pid }),
      ...(opts.dcs === undefined ? {} : { dcs: opts.dcs }),
    });
    const order = opts.order ?? parts.map((_, i) => i);
    const delivered: BuiltPdu[] = [];
    for (const i of order) {
      const part = parts[i];
      if (!part) throw new RangeError(`order names part ${i}, the message has ${parts.length} part(s)`);
      delivered.push(part);
      if (opts.duplicateParts) delivered.push(part);
    }
    return this.deliverAll(delivered, opts.delivery ?? 'direct');
  }

  private nextConcatRef(bits: 8 | 16): number {
    this.concatRef = (this.concatRef % (bits === 8 ? 255 : 65535)) + 1;
    return this.concatRef;
  }

  deliverAll(parts: BuiltPdu[], delivery: 'store' | 'direct'): InjectResult {
    const indexes: number[] = [];
    let held = 0;
    for (const built of parts) {
      if (!this.host.canReceive()) {
        this.held.push({ built, delivery });
        held++;
        continue;
      }
      const index = this.deliverOne(built, delivery);
      if (index !== undefined) indexes.push(index);
    }
    return { indexes, pdus: parts, held };
  }

  flushHeld(): void {
    while (this.held.length > 0 && this.host.canReceive()) {
      const next = this.held[0]!;
      const needsSlot = !(next.delivery === 'direct' && this.host.cnmi().mt === 2);
      if (needsSlot && !this.host.storage.hasFree()) break; // still full: the SMSC keeps it
      this.held.shift();
      this.deliverOne(next.built, next.delivery);
    }
  }

  /** A slot was freed: the SMSC retries the messages it kept (after the OK of the command that freed it). */
  redeliverSoon(): void {
    if (this.held.length > 0) this.host.later(0, () => this.flushHeld());
  }

  /** Routes one part per CNMI; returns its storage index when stored. */
  private deliverOne(built: BuiltPdu, delivery: 'store' | 'direct'): number | undefined {
    if (delivery === 'direct' && this.host.cnmi().mt === 2) {
      if (this.outstandingCmt) this.directQueue.push(built);
      else this.sendDirect(built);
      return undefined;
    }
    return this.store(built);
  }

  private store(built: BuiltPdu): number | undefined {
    const index = this.host.storage.put(built);
    if (index === undefined) {
      this.dropped++;
      this.held.push({ built, delivery: 'store' });
      this.host.log.debug(
        { dropped: this.dropped },
        'virtual modem: storage full, incoming SMS not stored (the SMSC keeps it)',
      );
      if (this.host.storageFullUrc) this.host.urc(this.host.storageFullUrc);
      return undefined;
    }
    const { mode, mt } = this.host.cnmi();
    if (mode !== 0 && mt >= 1) {
      const memory = this.host.storage.lastMemory;
      this.host.urc(`+CMTI: "${memory}",${index}`);
      if (this.host.opts.reportTwice) this.host.urc(`+CMTI: "${memory}",${index}`);
    }
    return index;
  }

  private sendDirect(built: BuiltPdu): void {
    if (this.host.cnmi().mode !== 0) this.host.send(`\r\n+CMT: ,${built.tpduLength}\r\n${built.pdu}\r\n`);
    if (this.host.messageService() === 0) {
      // TS 27.005 service 0: the modem acknowledges +CMT to the network itself; AT+CNMA is not expected (340).
      this.sendNextDirect();
      return;
    }
    const timer = this.host.later(this.host.opts.cnmaTimeoutMs ?? 15_000, () => {
      // No AT+CNMA in time: the SMSC retries, and this time the message lands in storage (+CMTI).
      this.outstandingCmt = undefined;
      this.host.log.debug('virtual modem: +CMT not acknowledged in time; SMSC redelivers into storage');
      this.store(built);
      this.sendNextDirect();
    });
    this.outstandingCmt = { built, timer };
  }

  /** The modem lost power or state: an unacknowledged +CMT (and those queued behind it) are retried by the SMSC. */
  returnUnacknowledgedToSmsc(): void {
    if (this.outstandingCmt) {
      clearTimeout(this.outstandingCmt.timer);
      this.held.push({ built: this.outstandingCmt.built, delivery: 'direct' });
    }
    this.outstandingCmt = undefined;
    for (const built of this.directQueue.splice(0)) this.held.push({ built, delivery: 'direct' });
  }

  private sendNextDirect(): void {
    const next = this.directQueue.shift();
    if (next) this.deliverOne(next, 'direct');
  }
}
