/**
 * The forwarder's view of the webhook endpoint's health, and of which failures are a record's own. Does no I/O and
 * arms no timer (the clock is injected); the forwarder tells it every answer (note) and asks what to hold back.
 * Invariants: an outage is confirmed by a network error/timeout or endpoint failures of two different records; only
 * a probe sent during a confirmed outage can end it (a late answer to an older request cannot); a failing record
 * among answered ones is judged its own and keeps its own backoff. Until the endpoint has answered once in this
 * process its health is unknown (`answered` false). Endpoint failures never count toward a record's maxAge.
 */
import type { Logger } from '../log.js';
import type { SmsRecord } from '../spool/types.js';
import { classify, isEndpointFailure, probeDelayMs, type Outcome, type RetryPolicy } from './policy.js';

/** The endpoint's health while it fails (undefined while it is up). */
export interface EndpointDown {
  sinceMs: number;
  /** Failed requests in a row (>= 1). */
  failures: number;
  lastError: string;
  /** No POST before this (epoch ms). */
  probeAtMs: number;
  /** Records that failed in this outage. */
  ids: Set<string>;
  /**
   * An outage for sure: a network error or timeout, or endpoint failures of 2 different records in a row. Until then
   * the one failing record may be failing on its own: it keeps its own backoff (the probe time still gates the rest).
   */
  confirmed: boolean;
}

/** When a request was sent: the outages begun by then, and its place in the send order. */
export interface SendStamp {
  outages: number;
  send: number;
}

/** How one failed answer counts (see the header). */
export type FailureKind = 'up' | 'own' | 'endpoint';

export interface EndpointHealthOptions {
  policy: RetryPolicy;
  logger: Logger;
  clock: () => Date;
  strictOrder: boolean;
  /** With strictOrder: how long (ms, >= 0) a rejected record may hold back its modem's later records. */
  strictOrderHoldMs: number;
}

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

export class EndpointHealth {
  private readonly policy: RetryPolicy;
  private readonly logger: Logger;
  private readonly clock: () => Date;
  private readonly strictOrder: boolean;
  private readonly strictOrderHoldMs: number;

  /** Set while the endpoint fails (see the header). */
  private endpoint: EndpointDown | undefined;
  /** Ids used as probes during the current outage: the next probe takes another due record first. */
  private readonly probed = new Set<string>();
  /** Requests stamped so far (send order; see stamp()). */
  private sends = 0;
  /** The latest send (by stamp) among the answers that proved the endpoint up (2xx or a rejection of one record). */
  private latestUpSend = 0;
  /**
   * Id -> `sends` when its last endpoint-like HTTP failure (5xx, 408, 429) was noted: an up answer to a request SENT
   * after that (several POSTs are in flight: an answer to an older request is no evidence) makes its next one its own.
   */
  private readonly lastHttpFailure = new Map<string, number>();
  /** Records whose last failure was their own (a rejection, or a 5xx while other records were delivered). */
  private readonly ownFailures = new Set<string>();
  /** Id -> epoch ms of its first rejection in this process (strictOrder: its hold on the modem ends strictOrderHoldMs later). */
  private readonly rejectedSince = new Map<string, number>();
  /** Records whose own backoff an outage made moot: due with the probes and at once when the endpoint answers again. */
  private readonly dueNowIds = new Set<string>();
  /** Outages begun so far in this process (part of every send stamp). */
  private outagesBegun = 0;
  /** The endpoint has answered at least once in this process (see the header). */
  private everAnswered = false;

  constructor(opts: EndpointHealthOptions) {
    this.policy = opts.policy;
    this.logger = opts.logger;
    this.clock = opts.clock;
    this.strictOrder = opts.strictOrder;
    this.strictOrderHoldMs = opts.strictOrderHoldMs;
  }

  /** The outage in progress; undefined while the endpoint is up. Read-only for the caller. */
  get down(): Readonly<EndpointDown> | undefined {
    return this.endpoint;
  }

  /** The outage in progress if it is confirmed (records failing in it are due with the next probe). */
  get confirmedDown(): Readonly<EndpointDown> | undefined {
    return this.endpoint?.confirmed ? this.endpoint : undefined;
  }

  /** Whether the endpoint has answered (2xx or a rejection of one record) at least once in this process. */
  get answered(): boolean {
    return this.everAnswered;
  }

  /** The forwarder stamps each request as it sends it and gives the stamp back to note() with the answer. */
  stamp(): SendStamp {
    return { outages: this.outagesBegun, send: ++this.sends };
  }

  /** Ids used as probes in the current outage. */
  get probes(): ReadonlySet<string> {
    return this.probed;
  }

  /** Every due record was a probe once: start the rotation again. */
  restartProbeRotation(): void {
    this.probed.clear();
  }

  /** Records due whatever their own backoff (see the header); undefined when there are none. */
  dueNow(): ReadonlySet<string> | undefined {
    return this.dueNowIds.size > 0 ? this.dueNowIds : undefined;
  }

  /** `id` is about to be POSTed: it is no longer due early. */
  sending(id: string): void {
    this.dueNowIds.delete(id);
  }

  /**
   * maxAge gives up only on a record whose last failure was its own: a rejection (its lastStatus is not an endpoint
   * failure: 404, 401, 422, ...) or a 5xx judged its own in this process. Endpoint failures never expire a record: the
   * server never accepted to look at it (a Pi offline for days keeps its backlog).
   */
  failedOnItsOwn(rec: SmsRecord): boolean {
    if (this.ownFailures.has(rec.id)) return true;
    return rec.lastStatus !== undefined && !isEndpointFailure({ kind: 'http', status: rec.lastStatus });
  }

  /** Forget the failure bookkeeping of records no longer pending (delivered, dead, dropped by the operator). */
  prune(isPending: (id: string) => boolean): void {
    for (const m of [this.ownFailures, this.dueNowIds]) for (const id of m) if (!isPending(id)) m.delete(id);
    for (const m of [this.lastHttpFailure, this.rejectedSince])
      for (const id of m.keys()) if (!isPending(id)) m.delete(id);
  }

  /** With strictOrder: when each rejected record's hold on its modem ends. */
  releaseMap(): ReadonlyMap<string, number> | undefined {
    if (!this.strictOrder || this.rejectedSince.size === 0) return undefined;
    const m = new Map<string, number>();
    for (const [id, since] of this.rejectedSince) m.set(id, since + this.strictOrderHoldMs);
    return m;
  }

  private noteRejected(id: string, nowMs: number): void {
    this.ownFailures.add(id);
    if (!this.rejectedSince.has(id)) this.rejectedSince.set(id, nowMs);
  }

  /**
   * Endpoint health from one answer (see the header); says how the answer counts for the record. `stamp`: the
   * request's send stamp (stamp() when it was sent); default: sent just now.
   */
  note(rec: SmsRecord, outcome: Outcome, stamp: SendStamp = this.stamp()): FailureKind {
    const sentIn = stamp.outages;
    const now = this.clock();
    const nowMs = now.getTime();
    const was = this.endpoint;
    if (!isEndpointFailure(outcome)) {
      this.latestUpSend = Math.max(this.latestUpSend, stamp.send);
      this.everAnswered = true;
      this.lastHttpFailure.delete(rec.id);
      if (classify(outcome) === 'retry') this.noteRejected(rec.id, nowMs);
      if (!was) return 'up';
      if (was.confirmed && sentIn < this.outagesBegun) {
        this.logger.debug(
          { id: rec.id, outcome: describeOutcome(outcome) },
          `forwarder: ${rec.id} answered (${describeOutcome(outcome)}) to a request sent before the outage; the endpoint stays down until a probe answers`,
        );
        return 'up';
      }
      this.endpoint = undefined;
      this.probed.clear();
      this.logger.info(
        { probe: rec.id, failures: was.failures, downMs: nowMs - was.sinceMs },
        `forwarder: webhook endpoint answers again (${describeOutcome(outcome)}) after ${was.failures} failed request(s) in ${nowMs - was.sinceMs} ms; releasing the pending records`,
      );
      return 'up';
    }
    const network = outcome.kind !== 'http';
    if (network) {
      this.ownFailures.delete(rec.id);
      this.lastHttpFailure.delete(rec.id);
    } else {
      // A 5xx (408, 429) of a record that failed before while other records were answered (requests sent after its
      // last failure): its failures are its own.
      const before = this.lastHttpFailure.get(rec.id);
      this.lastHttpFailure.set(rec.id, this.sends);
      if (this.ownFailures.has(rec.id) || (before !== undefined && before < this.latestUpSend)) {
        this.noteRejected(rec.id, nowMs);
        this.logger.debug(
          { id: rec.id },
          `forwarder: ${rec.id} failed again (${describeOutcome(outcome)}) while other records were answered: its own failure, the endpoint is not marked down`,
        );
        return 'own';
      }
    }
    const failures = (was?.failures ?? 0) + 1;
    const retryAfter = outcome.kind === 'http' ? outcome.retryAfter : undefined;
    const probeAtMs = nowMs + probeDelayMs(this.policy, failures, retryAfter, now);
    const lastError = describeOutcome(outcome);
    if (!was) this.outagesBegun += 1;
    const ids = was?.ids ?? new Set<string>();
    ids.add(rec.id);
    const confirmed = (was?.confirmed ?? false) || network || ids.size >= 2;
    if (confirmed) for (const id of ids) if (!this.ownFailures.has(id)) this.dueNowIds.add(id);
    this.endpoint = { sinceMs: was?.sinceMs ?? nowMs, failures, lastError, probeAtMs, ids, confirmed };
    this.probed.add(rec.id);
    const msg = `forwarder: webhook endpoint failing (${lastError}); one probe at ${new Date(probeAtMs).toISOString()}, no other POST until it answers`;
    if (was && (was.confirmed || !confirmed)) this.logger.debug({ probe: rec.id, failures, confirmed }, msg);
    else this.logger.warn({ probe: rec.id, failures, confirmed }, msg);
    return 'endpoint';
  }
}
