/**
 * The delivery loop: pending spool records -> webhook, up to `concurrency` POSTs in flight, picked oldest first
 * (./schedule.ts) and woken by the spool's 'pending' event, the end of a POST or one timer (no polling).
 * Invariants: a record leaves pending only through the spool after the webhook answered (at-least-once, same
 * Idempotency-Key on every POST); a record is never in flight twice; while the endpoint is down or not yet known
 * (./endpoint-health.ts) one POST at a time goes, as a probe. A result the spool cannot write is kept in memory and
 * only the write is retried (never the POST). strictOrder: one record per modem in flight, none overtaking a waiting one.
 * Never crashes or spins: a failed pick pauses errorPause; a record moved away meanwhile is logged and skipped.
 * stop(graceMs) waits for POSTs in flight, then abandons them: those records stay pending for the next run.
 */
import { errorMessage, SpoolError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Spool } from '../spool/store.js';
import type { SmsRecord } from '../spool/types.js';
import { describeOutcome, EndpointHealth, type FailureKind, type SendStamp } from './endpoint-health.js';
import { classify, isTooOld, nextDelayMs, type Outcome, type RetryPolicy } from './policy.js';
import { Flights } from './flights.js';
import { pickDue } from './schedule.js';
import type { WebhookPoster } from './webhook.js';

export { describeOutcome } from './endpoint-health.js';

/** The part of the spool the forwarder uses. */
export type ForwardSpool = Pick<
  Spool,
  'pendingInOrder' | 'isPending' | 'markDelivered' | 'markRetry' | 'markDead' | 'on' | 'off'
>;

export interface ForwarderOptions {
  spool: ForwardSpool;
  client: WebhookPoster;
  policy: RetryPolicy;
  logger: Logger;
  strictOrder?: boolean;
  /**
   * With strictOrder: how long (ms) a record rejected by the server (404, 401, 422, or a 5xx of its own) may hold back
   * its modem's later records, counted from its first rejection in this process; default DEFAULT_STRICT_ORDER_HOLD_MS.
   */
  strictOrderHoldMs?: number;
  random?: () => number;
  clock?: () => Date;
  /** POSTs in flight at most while the endpoint answers (one while it counts as down); default DEFAULT_CONCURRENCY. */
  concurrency?: number;
}

export interface ForwarderStats {
  running: boolean;
  /** The POST in flight longest, when one is. */
  inFlightId?: string;
  /** ISO time the timer is armed for, when armed. */
  nextWakeAt?: string;
  delivered: number;
  retried: number;
  dead: number;
  /** Results known to this process that the spool could not record yet (their spool writes are being retried). */
  unrecorded: number;
  /** The last result that was not a delivery (kept after later deliveries): which record, what came back, when. */
  lastRetry?: { id: string; error: string; status?: number; at: string; nextAttemptAt: string };
  /** Set while the endpoint fails: since when (ISO), failed requests in a row, and when the next probe goes. */
  endpointDown?: { since: string; failures: number; lastError: string; nextProbeAt: string };
}

/** Default of ForwarderOptions.strictOrderHoldMs (webhook.strictOrderHoldSec 300). */
export const DEFAULT_STRICT_ORDER_HOLD_MS = 300_000;

/**
 * Default of ForwarderOptions.concurrency: POSTs in flight at once. bench/process fleet (16 modems x 30 SMS, loopback
 * webhook): with 8 the last POST follows the last SIM read by 50-200 ms, with 4 by 450-800 ms, with 1 by 1.8-5.4 s.
 * A webhook 100 ms away caps the forwarder at concurrency x 10 SMS/s.
 */
export const DEFAULT_CONCURRENCY = 8;

/** setTimeout's upper bound (ms). */
const MAX_TIMER_MS = 2_147_483_647;

/** The spool write a POST's result asks for. */
type Mark =
  | { kind: 'delivered'; status: number; at: Date }
  | { kind: 'retry'; error: string; status?: number; nextAttemptAt: Date; delayMs: number }
  | { kind: 'dead'; reason: string; status?: number; tooOld: boolean };

/** A result the spool could not record yet; the record is not POSTed again while it is here. */
interface Unrecorded {
  rec: Readonly<SmsRecord>;
  mark: Mark;
  /** Failed spool writes so far (>= 1). */
  failures: number;
  /** When the spool write is tried again (epoch ms). */
  retryAtMs: number;
}

function describeMark(m: Mark): string {
  switch (m.kind) {
    case 'delivered':
      return `delivered, HTTP ${m.status}`;
    case 'retry':
      return `not delivered (${m.error}), retry at ${m.nextAttemptAt.toISOString()}`;
    case 'dead':
      return `given up (${m.reason})`;
  }
}

function earliest(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  return b === undefined ? a : Math.min(a, b);
}

export class Forwarder {
  private readonly spool: ForwardSpool;
  private readonly client: WebhookPoster;
  private readonly policy: RetryPolicy;
  private readonly logger: Logger;
  private readonly strictOrder: boolean;
  private readonly random: () => number;
  private readonly clock: () => Date;
  private readonly concurrency: number;

  private running = false;
  /** A look for work is queued (kick). */
  private kicked = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private wakeAtMs: number | undefined;
  /** POSTs and held-result writes in flight, by record id (./flights.ts). */
  private readonly flights: Flights;
  private readonly isPending = (id: string): boolean => this.spool.isPending(id);
  /** Bumped when an in-flight POST is abandoned: its late answer must not touch the spool. */
  private generation = 0;
  private counts = { delivered: 0, retried: 0, dead: 0 };
  private lastRetry: ForwarderStats['lastRetry'];
  /** Ids whose record vanished from the spool under a delivery: not picked again until 'pending' names them. */
  private readonly vanished = new Set<string>();
  /** Results the spool could not record yet, by id (see the header). */
  private readonly unrecorded = new Map<string, Unrecorded>();
  /** Endpoint down state, probes, own failures, the strictOrder hold (see ./endpoint-health.ts). */
  private readonly health: EndpointHealth;
  private readonly onPending = (id?: unknown): void => {
    if (typeof id === 'string') {
      this.vanished.delete(id);
      this.requeued(id);
    }
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
    this.concurrency = Math.max(1, Math.floor(opts.concurrency ?? DEFAULT_CONCURRENCY));
    this.flights = new Flights(
      () => this.kick(),
      (id, err) =>
        this.logger.error({ id, err: errorMessage(err) }, `forwarder: unexpected error while delivering ${id}`),
    );
    this.health = new EndpointHealth({
      policy: this.policy,
      logger: this.logger,
      clock: this.clock,
      strictOrder: this.strictOrder,
      strictOrderHoldMs: Math.max(0, opts.strictOrderHoldMs ?? DEFAULT_STRICT_ORDER_HOLD_MS),
    });
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
    const left = await this.flights.settled(graceMs);
    if (left.length > 0) {
      this.generation += 1;
      for (const id of left) {
        this.logger.warn(
          { id, graceMs },
          `forwarder: stopped with the POST of ${id} still in flight; it stays pending and is sent again on restart`,
        );
      }
    }
    this.reportUnrecordedAtStop();
  }

  private reportUnrecordedAtStop(): void {
    if (this.unrecorded.size === 0) return;
    const ids = [...this.unrecorded.keys()];
    const delivered = [...this.unrecorded.values()].filter((u) => u.mark.kind === 'delivered').map((u) => u.rec.id);
    this.logger.error(
      { ids, delivered },
      `forwarder: stopped with ${ids.length} result(s) the spool could not record (${delivered.length} delivered); ` +
        'those records stay pending and are POSTed again at the next start (same Idempotency-Key)',
    );
  }

  stats(): ForwarderStats {
    const s: ForwarderStats = { running: this.running, ...this.counts, unrecorded: this.unrecorded.size };
    if (this.lastRetry) s.lastRetry = { ...this.lastRetry };
    const oldest = this.flights.oldestPost();
    if (oldest !== undefined) s.inFlightId = oldest;
    if (this.wakeAtMs !== undefined) s.nextWakeAt = new Date(this.wakeAtMs).toISOString();
    const down = this.health.down;
    if (down) {
      s.endpointDown = {
        since: new Date(down.sinceMs).toISOString(),
        failures: down.failures,
        lastError: down.lastError,
        nextProbeAt: new Date(down.probeAtMs).toISOString(),
      };
    }
    return s;
  }

  // ---------------------------------------------------------------- loop

  /** Look for work soon: kicks in one tick (spool events, answers, timers) share one look. */
  private kick(): void {
    if (!this.running || this.kicked) return;
    this.kicked = true;
    queueMicrotask(() => {
      this.kicked = false;
      try {
        this.fill();
      } catch (err) {
        // fill handles its own errors; this is a last line so a bug cannot become an unhandled exception.
        this.logger.error({ err: errorMessage(err) }, 'forwarder: unexpected error in delivery loop');
        this.arm(this.errorPauseMs());
      }
    });
  }

  /**
   * Start what can start now: the held results' spool writes that are due, then POSTs up to the limit (the concurrency,
   * or one probe while the endpoint counts as down); arm the one timer for the earliest time something else is due.
   */
  private fill(): void {
    if (!this.running) return;
    // A vanished id the spool no longer holds as pending needs no skipping; one it still holds is passed over.
    if (this.vanished.size > 0) for (const id of this.vanished) if (!this.spool.isPending(id)) this.vanished.delete(id);
    this.health.prune(this.isPending);
    const nowMs = this.clock().getTime();
    if (this.unrecorded.size > 0) {
      for (const u of [...this.unrecorded.values()]) {
        if (u.retryAtMs <= nowMs) this.flights.start(u.rec.id, 'write', () => this.record(u.rec, u.mark, u));
      }
    }
    const down = this.health.down;
    // One at a time until the endpoint has answered once in this process, and while it counts as down (the probe).
    const free = (down || !this.health.answered ? 1 : this.concurrency) - this.flights.posts;
    if (free <= 0) {
      // Every slot is taken (or the one probe is out): an answer looks again; only held writes need the timer.
      this.armAt(this.earliestUnrecordedMs(), nowMs);
      return;
    }
    if (down && nowMs < down.probeAtMs) {
      // The endpoint fails: nothing is POSTed before the next probe time.
      this.armAt(earliest(down.probeAtMs, this.earliestUnrecordedMs()), nowMs);
      return;
    }
    let picked: readonly Readonly<SmsRecord>[];
    let wakeAtMs: number | undefined;
    try {
      ({ picked, wakeAtMs } = this.pick(nowMs, down !== undefined, free));
    } catch (err) {
      this.logger.error({ err: errorMessage(err) }, 'forwarder: cannot choose the next pending record; pausing');
      this.arm(this.errorPauseMs());
      return;
    }
    for (const rec of picked) {
      const stamp = this.health.stamp();
      this.flights.start(rec.id, 'post', () => this.deliver(rec, this.generation, stamp));
    }
    this.armAt(earliest(wakeAtMs, this.earliestUnrecordedMs()), nowMs);
  }

  /** Up to `max` due records in delivery order (one walk of the spool's view), or the earliest time one is due. */
  private pick(
    nowMs: number,
    probing: boolean,
    max: number,
  ): { picked: readonly Readonly<SmsRecord>[]; wakeAtMs?: number } {
    const releaseAtMs = this.health.releaseMap();
    const dueNow = this.health.dueNow();
    const walk = (skip: ReadonlySet<string>, probes: boolean) => {
      const hold = this.holdMap(probes && this.strictOrder ? nowMs : undefined);
      return pickDue(
        this.spool.pendingInOrder(),
        nowMs,
        {
          strictOrder: this.strictOrder,
          skip,
          busy: this.flights,
          ...(hold ? { hold } : {}),
          ...(dueNow ? { dueNow } : {}),
          ...(releaseAtMs ? { releaseAtMs } : {}),
        },
        max,
      );
    };
    // While the endpoint is down the probes rotate: without strictOrder a record already used as a probe is skipped;
    // with strictOrder it is held (it still holds back its own modem), so each modem's head takes turns.
    let choice = walk(this.skipSet(probing && !this.strictOrder), probing);
    if (choice.picked.length === 0 && probing && this.health.probes.size > 0) {
      this.health.restartProbeRotation(); // every due record was a probe once: start the rotation again
      choice = walk(this.skipSet(false), false);
    }
    // No copy: the spool's entries are frozen and a write replaces an entry, it never changes one.
    return {
      picked: choice.picked.map((e) => e.record),
      ...(choice.wakeAtMs === undefined ? {} : { wakeAtMs: choice.wakeAtMs }),
    };
  }

  /** One record: at most one POST, then its result goes to the spool (or is kept until it can). Never throws. */
  private async deliver(rec: Readonly<SmsRecord>, generation: number, sent: SendStamp): Promise<void> {
    const now = this.clock();
    this.health.sending(rec.id);
    if (
      rec.attempts > 0 &&
      this.health.failedOnItsOwn(rec) &&
      isTooOld(this.policy, rec.requeuedAt ?? rec.receivedAt, now)
    ) {
      const since = rec.requeuedAt !== undefined ? `requeued ${rec.requeuedAt}` : `received ${rec.receivedAt}`;
      const reason = `too old: ${since}, not delivered within ${this.policy.maxAgeMs} ms`;
      await this.record(rec, { kind: 'dead', reason, tooOld: true });
      return;
    }
    let outcome: Outcome;
    try {
      outcome = await this.client.post(rec);
    } catch (err) {
      // The client promises not to throw; if it does, treat it like a network failure (retry) and say so.
      outcome = { kind: 'network', code: 'EUNKNOWN', message: errorMessage(err) };
    }
    if (generation !== this.generation) {
      this.logger.debug(
        { id: rec.id, outcome: describeOutcome(outcome) },
        'forwarder: late answer of an abandoned POST ignored',
      );
      return;
    }
    const kind = this.health.note(rec, outcome, sent);
    await this.record(rec, this.markFor(rec, outcome, kind));
  }

  private markFor(rec: Readonly<SmsRecord>, outcome: Outcome, kind: FailureKind): Mark {
    const at = this.clock();
    const verdict = classify(outcome);
    const status = outcome.kind === 'http' ? outcome.status : undefined;
    if (verdict === 'delivered') return { kind: 'delivered', status: status ?? 0, at };
    if (verdict === 'retry') {
      const retryAfter = outcome.kind === 'http' ? outcome.retryAfter : undefined;
      // An outage for sure: the record is due with the next probe, not after a backoff of its own. A failure of its
      // own, or one not yet told from an outage (one record failing alone), takes the record's own backoff.
      const down = kind === 'endpoint' ? this.health.confirmedDown : undefined;
      const delayMs = down
        ? Math.max(0, down.probeAtMs - at.getTime())
        : nextDelayMs(this.policy, rec.attempts, this.random, retryAfter, at);
      const error = describeOutcome(outcome);
      return {
        kind: 'retry',
        error,
        nextAttemptAt: new Date(at.getTime() + delayMs),
        delayMs,
        ...(status === undefined ? {} : { status }),
      };
    }
    return {
      kind: 'dead',
      reason: describeOutcome(outcome),
      tooOld: false,
      ...(status === undefined ? {} : { status }),
    };
  }

  /**
   * Write a result to the spool. On failure the result is kept (or kept longer) in `unrecorded` with its own backoff;
   * `held` is the entry being retried. Never throws.
   */
  private async record(rec: Readonly<SmsRecord>, mark: Mark, held?: Unrecorded): Promise<void> {
    const ctx = { id: rec.id, modem: rec.sim.modem, sender: rec.sender };
    try {
      await this.write(rec, mark);
    } catch (err) {
      if (err instanceof SpoolError && (err.reason === 'not-found' || err.reason === 'wrong-area')) {
        this.unrecorded.delete(rec.id);
        this.vanished.add(rec.id);
        this.logger.warn(
          { ...ctx, err: err.message, result: describeMark(mark) },
          `forwarder: ${rec.id} was removed or moved by another process during delivery (queue drop?); its result is not recorded`,
        );
        return;
      }
      if (err instanceof SpoolError && err.reason === 'corrupt' && !this.spool.isPending(rec.id)) {
        this.unrecorded.delete(rec.id);
        this.logger.error(
          { ...ctx, err: err.message, result: describeMark(mark) },
          `forwarder: the pending file of ${rec.id} is unreadable and was moved to quarantine; its result (${describeMark(mark)}) is not recorded: ${err.message}`,
        );
        return;
      }
      const failures = (held?.failures ?? 0) + 1;
      const delay = this.writeBackoffMs(failures);
      this.unrecorded.set(rec.id, { rec, mark, failures, retryAtMs: this.clock().getTime() + delay });
      this.logger.error(
        { ...ctx, err: errorMessage(err), result: describeMark(mark), failures, retryInMs: delay },
        `forwarder: cannot record the result of ${rec.id} (${describeMark(mark)}) in the spool: ${errorMessage(err)}; ` +
          `it is not POSTed again, the spool write is retried in ${delay} ms (failure ${failures})`,
      );
      return;
    }
    if (held) {
      this.unrecorded.delete(rec.id);
      this.logger.info(
        { ...ctx, failures: held.failures },
        `forwarder: result of ${rec.id} recorded after ${held.failures} failed spool write(s)`,
      );
    }
    this.counted(rec, mark);
  }

  private async write(rec: Readonly<SmsRecord>, mark: Mark): Promise<void> {
    const id = rec.id;
    switch (mark.kind) {
      case 'delivered':
        return this.spool.markDelivered(id, { status: mark.status, at: mark.at });
      case 'retry':
        // baseRev: a retried write whose earlier try reached the disk is not counted twice (see Spool.markRetry).
        return this.spool.markRetry(id, {
          error: mark.error,
          nextAttemptAt: mark.nextAttemptAt,
          baseRev: rec.rev ?? 0,
          ...(mark.status === undefined ? {} : { status: mark.status }),
        });
      case 'dead':
        return this.spool.markDead(id, mark.reason, mark.status);
    }
  }

  /** Count and log a result the spool has recorded. */
  private counted(rec: Readonly<SmsRecord>, mark: Mark): void {
    const ctx = { id: rec.id, modem: rec.sim.modem, sender: rec.sender };
    if (mark.kind === 'delivered') {
      this.counts.delivered += 1;
      this.logger.info({ ...ctx, status: mark.status, attempts: rec.attempts + 1 }, `forwarder: delivered ${rec.id}`);
    } else if (mark.kind === 'retry') {
      this.counts.retried += 1;
      this.lastRetry = {
        id: rec.id,
        error: mark.error,
        ...(mark.status === undefined ? {} : { status: mark.status }),
        at: this.clock().toISOString(),
        nextAttemptAt: mark.nextAttemptAt.toISOString(),
      };
      this.logger.warn(
        {
          ...ctx,
          error: mark.error,
          status: mark.status,
          attempts: rec.attempts + 1,
          nextAttemptAt: mark.nextAttemptAt.toISOString(),
        },
        `forwarder: ${rec.id} not delivered (${mark.error}); retry in ${mark.delayMs} ms`,
      );
    } else if (mark.tooOld) {
      this.counts.dead += 1;
      this.logger.error(
        { ...ctx, reason: mark.reason, attempts: rec.attempts },
        `forwarder: gave up on ${rec.id} (${mark.reason})`,
      );
    } else {
      this.counts.dead += 1;
      this.logger.error(
        { ...ctx, status: mark.status, reason: mark.reason, attempts: rec.attempts + 1 },
        `forwarder: ${rec.id} rejected permanently (${mark.reason})`,
      );
    }
  }

  /** The operator requeued `id` (spool 'pending' event) while its result waits to be recorded. */
  private requeued(id: string): void {
    const held = this.unrecorded.get(id);
    if (!held) return;
    if (held.mark.kind === 'delivered') {
      held.retryAtMs = Math.min(held.retryAtMs, this.clock().getTime()); // the webhook has it: record it, never re-POST
      return;
    }
    this.unrecorded.delete(id);
    this.logger.info(
      { id, result: describeMark(held.mark) },
      `forwarder: ${id} was queued again; its unrecorded result (${describeMark(held.mark)}) is dropped and it is sent again`,
    );
  }

  private earliestUnrecordedMs(): number | undefined {
    let t: number | undefined;
    for (const u of this.unrecorded.values()) if (!this.flights.has(u.rec.id)) t = earliest(t, u.retryAtMs); // a write in flight wakes us when it ends
    return t;
  }

  /**
   * Ids not to pick that hold nothing back: vanished records and held deliveries (the webhook has them); with
   * `probing`, also the records already used as probes in this outage.
   */
  private skipSet(probing: boolean): ReadonlySet<string> {
    const probes = probing && this.health.probes.size > 0;
    if (this.unrecorded.size === 0 && !probes) return this.vanished;
    const delivered = [...this.unrecorded.values()].filter((u) => u.mark.kind === 'delivered').map((u) => u.rec.id);
    if (delivered.length === 0 && !probes) return this.vanished;
    return new Set([...this.vanished, ...delivered, ...(probes ? this.health.probes : [])]);
  }

  /**
   * Held results that were not deliveries: not picked, and with strictOrder they hold back their modem (a retry is
   * POSTed again later, so later records of that modem must not overtake it), waiting until the later of the retry
   * time and the next spool write. With `probesAtMs` (strictOrder while the endpoint is down) the records already used
   * as probes in this outage are held too, so the next probe is another modem's head.
   */
  private holdMap(probesAtMs?: number): ReadonlyMap<string, number> | undefined {
    let hold: Map<string, number> | undefined;
    if (probesAtMs !== undefined) for (const id of this.health.probes) (hold ??= new Map()).set(id, probesAtMs);
    for (const u of this.unrecorded.values()) {
      if (u.mark.kind === 'delivered') continue;
      const at = u.mark.kind === 'retry' ? Math.max(u.mark.nextAttemptAt.getTime(), u.retryAtMs) : u.retryAtMs;
      (hold ??= new Map()).set(u.rec.id, at);
    }
    return hold;
  }

  private writeBackoffMs(failures: number): number {
    const base = this.errorPauseMs();
    const cap = Math.max(base, this.policy.maxDelayMs);
    return Math.min(cap, base * 2 ** Math.min(30, Math.max(0, failures - 1)));
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

  /** Arm the timer for `atMs` (epoch ms), or clear it when there is nothing to wait for. */
  private armAt(atMs: number | undefined, nowMs: number): void {
    if (atMs === undefined) this.clearTimer();
    else this.arm(atMs - nowMs);
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
