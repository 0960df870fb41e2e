/**
 * Watches one modem for incoming SMS during a test transfer: through the daemon (the control socket's `sms` and
 * `delivery` events) or directly (polling the SIM's storage; nothing stored before is taken as new, nothing deleted).
 * start() must run before the step that makes the SMS come; next(match, timeoutMs, what) resolves with the first
 * matching SMS not yet handed out, or throws TransferTimeout naming `what`; an AbortSignal ends it with
 * TransferInterrupted. Event shapes are read tolerantly, since the daemon's payloads may grow.
 */
import type { TransferOps } from '../ops/modem-ops.js';
import type { EventMessage } from '../control/protocol.js';

export interface SeenSms {
  sender: string;
  text: string;
  /** Spool record id (daemon path). */
  spoolId?: string;
  /** SIM storage index (direct path). */
  index?: number;
  at: number;
}

export interface DeliveryAnswer {
  spoolId: string;
  /** The record's delivery state as the daemon reports it: `delivered`, `retry` or `dead`. */
  state?: string;
  /** HTTP status of the webhook's answer, when given as a number. */
  status?: number;
  /** The daemon's description of the answer, e.g. `HTTP 200` or the error and the next attempt. */
  outcome?: string;
  body?: string;
}

export class TransferTimeout extends Error {
  override readonly name = 'TransferTimeout';
}
export class TransferInterrupted extends Error {
  override readonly name = 'TransferInterrupted';
}

export interface WatchClock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const realClock: WatchClock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        signal?.removeEventListener('abort', done);
        resolve();
      }
      signal?.addEventListener('abort', done, { once: true });
    }),
};

const str = (o: Record<string, unknown>, ...keys: string[]): string | undefined => {
  for (const k of keys) {
    const v = o[k];
    if (typeof v === 'string') return v;
    if (typeof v === 'number') return String(v);
  }
  return undefined;
};

/** An `sms` event's payload as an SMS, or undefined when it does not carry one. */
export function smsFromEvent(e: EventMessage, now: number): SeenSms | undefined {
  if (e.event !== 'sms' || e.data === null || typeof e.data !== 'object') return undefined;
  const d = e.data as Record<string, unknown>;
  const sms = (d.sms && typeof d.sms === 'object' ? d.sms : d) as Record<string, unknown>;
  const sender = str(sms, 'sender', 'from', 'originator');
  const text = str(sms, 'text', 'message', 'body');
  if (sender === undefined || text === undefined) return undefined;
  const spoolId = str(d, 'id', 'spoolId', 'recordId') ?? str(sms, 'id', 'spoolId');
  return { sender, text, at: now, ...(spoolId !== undefined ? { spoolId } : {}) };
}

/** A `delivery` event's payload, or undefined. */
export function deliveryFromEvent(e: EventMessage): DeliveryAnswer | undefined {
  if (e.event !== 'delivery' || e.data === null || typeof e.data !== 'object') return undefined;
  const d = e.data as Record<string, unknown>;
  const spoolId = str(d, 'id', 'spoolId', 'recordId');
  if (spoolId === undefined) return undefined;
  const statusText = str(d, 'httpStatus', 'statusCode', 'status');
  const status = statusText !== undefined && /^\d{3}$/.test(statusText) ? Number(statusText) : undefined;
  const state = typeof d.status === 'string' && !/^\d+$/.test(d.status) ? d.status : str(d, 'state');
  const body = str(d, 'body', 'response', 'answer', 'bodyStart');
  const outcome = str(d, 'outcome', 'result');
  return {
    spoolId,
    ...(state !== undefined ? { state } : {}),
    ...(status !== undefined ? { status } : {}),
    ...(outcome !== undefined ? { outcome } : {}),
    ...(body !== undefined ? { body } : {}),
  };
}

export class SmsWatch {
  private readonly seen: SeenSms[] = [];
  private readonly deliveries: DeliveryAnswer[] = [];
  private handedOut = new Set<SeenSms>();
  private known = new Set<string>();
  private off: (() => void) | undefined;
  private wake: (() => void) | undefined;

  constructor(
    readonly ops: TransferOps,
    private readonly clock: WatchClock = realClock,
    private readonly pollMs = 1000,
  ) {}

  async start(): Promise<void> {
    if (this.ops.path === 'direct') {
      for (const m of await this.ops.smsList('all')) this.known.add(`${m.index}:${m.pdu}`);
      return;
    }
    this.off = await this.ops.onEvent((e) => {
      const sms = smsFromEvent(e, this.clock.now());
      if (sms) this.seen.push(sms);
      const d = deliveryFromEvent(e);
      if (d) this.deliveries.push(d);
      this.wake?.();
    });
  }

  stop(): void {
    this.off?.();
    this.off = undefined;
  }

  /** The next SMS that matches; TransferTimeout after `timeoutMs`. */
  async next(match: (s: SeenSms) => boolean, timeoutMs: number, what: string, signal?: AbortSignal): Promise<SeenSms> {
    const deadline = this.clock.now() + timeoutMs;
    for (;;) {
      if (signal?.aborted) throw new TransferInterrupted(`interrupted while waiting for ${what}`);
      if (this.ops.path === 'direct') await this.poll();
      const hit = this.seen.find((s) => !this.handedOut.has(s) && match(s));
      if (hit) {
        this.handedOut.add(hit);
        return hit;
      }
      const left = deadline - this.clock.now();
      if (left <= 0) throw new TransferTimeout(`no ${what} within ${Math.round(timeoutMs / 1000)} s`);
      await this.pause(Math.min(left, this.pollMs), signal);
    }
  }

  /**
   * The webhook's answer for a spool record (daemon path only): the first final one (not `retry`); after `timeoutMs`
   * the last one seen (a retry), or undefined.
   */
  async delivery(spoolId: string, timeoutMs: number, signal?: AbortSignal): Promise<DeliveryAnswer | undefined> {
    if (this.ops.path === 'direct') return undefined;
    const deadline = this.clock.now() + timeoutMs;
    for (;;) {
      const mine = this.deliveries.filter((x) => x.spoolId === spoolId);
      const final = mine.find((x) => x.state !== 'retry');
      if (final) return final;
      const left = deadline - this.clock.now();
      if (left <= 0 || signal?.aborted) return mine[mine.length - 1];
      await this.pause(Math.min(left, this.pollMs), signal);
    }
  }

  private async pause(ms: number, signal?: AbortSignal): Promise<void> {
    const woken = new Promise<void>((resolve) => (this.wake = resolve));
    await Promise.race([this.clock.sleep(ms, signal), woken]);
    this.wake = undefined;
  }

  private async poll(): Promise<void> {
    for (const m of await this.ops.smsList('all')) {
      const key = `${m.index}:${m.pdu}`;
      if (this.known.has(key)) continue;
      this.known.add(key);
      if (m.sender === undefined || m.text === undefined) continue; // a part of a multipart or an undecodable PDU
      this.seen.push({
        sender: m.sender,
        text: m.text,
        at: this.clock.now(),
        ...(m.index !== undefined ? { index: m.index } : {}),
      });
    }
  }
}
