/**
 * The delivery loop: pending spool records -> webhook, one POST in flight, oldest receivedAt first.
 *
 * Contract and invariants
 * - Event-driven: wakes on the spool's 'pending' event and on ONE timer armed for the earliest nextAttemptAt of the
 *   records it had to skip; no fixed-interval polling.
 * - Each pick asks the spool for the next due record (Spool.nextDue: a walk of its ordered pending index that copies
 *   one record), never for the whole pending list: with a backlog of n records a pick costs the records it walks past,
 *   not a copy and sort of all n. pickNext is the same choice over a plain array (the reference semantics).
 * - Per record: older than policy.maxAgeMs -> markDead; 2xx -> markDelivered; retryable -> markRetry with
 *   nextDelayMs(policy, attempts so far, random, Retry-After); permanent -> markDead(`HTTP <status>: <bodyStart>`).
 *   A record leaves pending only through the spool, after the webhook answered (at-least-once delivery).
 * - strictOrder: a waiting (not yet due) record holds back later records of the same modem. Default off.
 * - A spool failure (disk full, ...) is logged and retried after a pause; it never crashes the loop or spins hot.
 * - A record removed or moved by another process while it was being sent (SpoolError 'not-found' / 'wrong-area' from
 *   mark*, e.g. `queue drop` during the POST) is logged as a warning and skipped; the loop goes on with the next record.
 *   Its id is not picked again until the spool emits 'pending' for it, so a spool that still lists it cannot cause a loop.
 * - stop(graceMs): no new POST; waits up to graceMs for the record in flight, then abandons it: whatever the server
 *   answers later is not recorded, the record stays pending and is POSTed again (same Idempotency-Key) next run.
 */
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import { dueAtMs, firstDue, type DueAccess } from '../spool/pending-index.js';
import { SpoolError, type Spool } from '../spool/store.js';
import type { SmsRecord } from '../spool/types.js';
import { classify, isTooOld, nextDelayMs, type Outcome, type RetryPolicy } from './policy.js';
import type { WebhookPoster } from './webhook.js';

/** The part of the spool the forwarder uses. */
export type ForwardSpool = Pick<Spool, 'nextDue' | 'isPending' | 'markDelivered' | 'markRetry' | 'markDead' | 'on' | 'off'>;

export interface ForwarderOptions {
  spool: ForwardSpool;
  client: WebhookPoster;
  policy: RetryPolicy;
  logger: Logger;
  strictOrder?: boolean;
  random?: () => number;
  clock?: () => Date;
}

export interface ForwarderStats {
  running: boolean;
  inFlightId?: string;
  /** ISO time the timer is armed for, when armed. */
  nextWakeAt?: string;
  delivered: number;
  retried: number;
  dead: number;
}

/** setTimeout's upper bound (ms). */
const MAX_TIMER_MS = 2_147_483_647;

export function describeOutcome(o: Outcome): string {
  switch (o.kind) {
    case 'http':
      return `HTTP ${o.status}: ${o.bodyStart ?? ''}`;
    case 'network':
      return `${o.code}: ${o.message}`;
    case 'timeout':
      return `timeout (${o.phase})`;
  }
}

const RECORD_ACCESS: DueAccess<SmsRecord> = { dueMs: dueAtMs, modem: (r) => r.sim.modem, id: (r) => r.id };

/**
 * Choose the next record to send from pending records sorted oldest first, or the time to wake up.
 * With strictOrder, a record not yet due blocks later records of the same modem. (Spool.nextDue gives the same answer
 * from its ordered index; both use firstDue.)
 */
export function pickNext(pending: readonly SmsRecord[], nowMs: number, strictOrder: boolean): { next?: SmsRecord; wakeAtMs?: number } {
  return firstDue(pending, nowMs, strictOrder, RECORD_ACCESS);
}

export class Forwarder {
  private readonly spool: ForwardSpool;
  private readonly client: WebhookPoster;
  private readonly policy: RetryPolicy;
  private readonly logger: Logger;
  private readonly strictOrder: boolean;
  private readonly random: () => number;
  private readonly clock: () => Date;

  private running = false;
  private pumping = false;
  private again = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private wakeAtMs: number | undefined;
  private inFlight: { id: string; done: Promise<void> } | undefined;
  /** Bumped when an in-flight POST is abandoned: its late answer must not touch the spool. */
  private generation = 0;
  private counts = { delivered: 0, retried: 0, dead: 0 };
  /** Ids whose record vanished from the spool under a delivery: not picked again until 'pending' names them. */
  private readonly vanished = new Set<string>();
  private readonly onPending = (id?: unknown): void => {
    if (typeof id === 'string') this.vanished.delete(id);
    this.kick();
  };

  constructor(opts: ForwarderOptions) {
    this.spool = opts.spool;
    this.client = opts.client;
    this.policy = opts.policy;
    this.logger = opts.logger;
    this.strictOrder = opts.strictOrder ?? false;
    this.random = opts.random ?? Math.random;
    this.clock = opts.clock ?? (() => new Date());
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.spool.on('pending', this.onPending);
    this.kick();
  }

  async stop(graceMs: number): Promise<void> {
    this.running = false;
    this.spool.off('pending', this.onPending);
    this.clearTimer();
    const flight = this.inFlight;
    if (!flight) return;
    let graceTimer: ReturnType<typeof setTimeout> | undefined;
    const finished = await Promise.race([
      flight.done.then(() => true),
      new Promise<boolean>((resolve) => {
        graceTimer = setTimeout(() => resolve(false), Math.max(0, graceMs));
      }),
    ]);
    clearTimeout(graceTimer);
    if (!finished) {
      this.generation += 1;
      this.logger.warn(
        { id: flight.id, graceMs },
        `forwarder: stopped with the POST of ${flight.id} still in flight; it stays pending and is sent again on restart`,
      );
    }
  }

  stats(): ForwarderStats {
    const s: ForwarderStats = { running: this.running, ...this.counts };
    if (this.inFlight) s.inFlightId = this.inFlight.id;
    if (this.wakeAtMs !== undefined) s.nextWakeAt = new Date(this.wakeAtMs).toISOString();
    return s;
  }

  // ---------------------------------------------------------------- loop

  private kick(): void {
    if (!this.running) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    this.again = false;
    this.pump()
      .catch((err: unknown) => {
        // pump handles its own errors; this is a last line so a bug cannot become an unhandled rejection.
        this.logger.error({ err: errorMessage(err) }, 'forwarder: unexpected error in delivery loop');
        this.arm(this.errorPauseMs());
      })
      .finally(() => {
        this.pumping = false;
        if (this.again) this.kick();
      });
  }

  private async pump(): Promise<void> {
    while (this.running) {
      this.again = false;
      // A vanished id the spool no longer holds as pending needs no skipping; one it still holds is passed over.
      for (const id of this.vanished) if (!this.spool.isPending(id)) this.vanished.delete(id);
      const nowMs = this.clock().getTime();
      let choice: { next?: SmsRecord; wakeAtMs?: number };
      try {
        choice = this.spool.nextDue(nowMs, { strictOrder: this.strictOrder, skip: this.vanished });
      } catch (err) {
        this.logger.error({ err: errorMessage(err) }, 'forwarder: cannot choose the next pending record; pausing');
        this.arm(this.errorPauseMs());
        return;
      }
      const { next, wakeAtMs } = choice;
      if (!next) {
        if (wakeAtMs !== undefined) this.arm(wakeAtMs - nowMs);
        else this.clearTimer();
        return;
      }
      this.clearTimer();
      const done = this.deliver(next, this.generation);
      this.inFlight = { id: next.id, done: done.then(() => undefined) };
      let spoolOk: boolean;
      try {
        spoolOk = await done;
      } finally {
        this.inFlight = undefined;
      }
      if (!spoolOk) {
        this.arm(this.errorPauseMs());
        return;
      }
    }
  }

  /** One record. Returns false when the spool could not record the result (caller pauses). Never throws. */
  private async deliver(rec: SmsRecord, generation: number): Promise<boolean> {
    const now = this.clock();
    const ctx = { id: rec.id, modem: rec.sim.modem, sender: rec.sender };
    try {
      if (isTooOld(this.policy, rec.receivedAt, now)) {
        const reason = `too old: received ${rec.receivedAt}, not delivered within ${this.policy.maxAgeMs} ms`;
        await this.spool.markDead(rec.id, reason);
        this.counts.dead += 1;
        this.logger.error({ ...ctx, reason, attempts: rec.attempts }, `forwarder: gave up on ${rec.id} (${reason})`);
        return true;
      }
      let outcome: Outcome;
      try {
        outcome = await this.client.post(rec);
      } catch (err) {
        // The client promises not to throw; if it does, treat it like a network failure (retry) and say so.
        outcome = { kind: 'network', code: 'EUNKNOWN', message: errorMessage(err) };
      }
      if (generation !== this.generation) {
        this.logger.debug({ ...ctx, outcome: describeOutcome(outcome) }, 'forwarder: late answer of an abandoned POST ignored');
        return true;
      }
      const at = this.clock();
      const verdict = classify(outcome);
      const status = outcome.kind === 'http' ? outcome.status : undefined;
      if (verdict === 'delivered') {
        await this.spool.markDelivered(rec.id, { status: status ?? 0, at });
        this.counts.delivered += 1;
        this.logger.info({ ...ctx, status, attempts: rec.attempts + 1 }, `forwarder: delivered ${rec.id}`);
      } else if (verdict === 'retry') {
        const retryAfter = outcome.kind === 'http' ? outcome.retryAfter : undefined;
        const delay = nextDelayMs(this.policy, rec.attempts, this.random, retryAfter, at);
        const nextAttemptAt = new Date(at.getTime() + delay);
        const error = describeOutcome(outcome);
        await this.spool.markRetry(rec.id, status === undefined ? { error, nextAttemptAt } : { error, status, nextAttemptAt });
        this.counts.retried += 1;
        this.logger.warn(
          { ...ctx, error, status, attempts: rec.attempts + 1, nextAttemptAt: nextAttemptAt.toISOString() },
          `forwarder: ${rec.id} not delivered (${error}); retry in ${delay} ms`,
        );
      } else {
        const reason = describeOutcome(outcome);
        await this.spool.markDead(rec.id, reason, status);
        this.counts.dead += 1;
        this.logger.error({ ...ctx, status, reason, attempts: rec.attempts + 1 }, `forwarder: ${rec.id} rejected permanently (${reason})`);
      }
      return true;
    } catch (err) {
      if (err instanceof SpoolError && (err.reason === 'not-found' || err.reason === 'wrong-area')) {
        this.vanished.add(rec.id);
        this.logger.warn(
          { ...ctx, err: err.message },
          `forwarder: ${rec.id} was removed or moved by another process during delivery (queue drop?); its result is not recorded`,
        );
        return true;
      }
      this.logger.error({ ...ctx, err: errorMessage(err) }, `forwarder: cannot record the delivery result of ${rec.id} in the spool`);
      return false;
    }
  }

  // ---------------------------------------------------------------- timer

  private arm(delayMs: number): void {
    this.clearTimer();
    if (!this.running) return;
    const ms = Math.min(MAX_TIMER_MS, Math.max(0, Math.ceil(delayMs)));
    this.wakeAtMs = this.clock().getTime() + ms;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.wakeAtMs = undefined;
      this.kick();
    }, ms);
  }

  private clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.wakeAtMs = undefined;
  }

  private errorPauseMs(): number {
    return Math.min(this.policy.maxDelayMs, Math.max(this.policy.baseDelayMs, 5_000));
  }
}
