/**
 * Retry policy for webhook delivery (PURE: time comes in as arguments). classify: 2xx delivered; 400, 413, 415 dead
 * (the request can never be accepted); everything else retry, until maxAge (isTooOld). isEndpointFailure: network
 * errors, timeouts, 408, 429, 5xx and nonsense statuses (the endpoint is failing, not the record).
 * nextDelayMs is full-jitter exponential backoff; probeDelayMs (no jitter: one request) grows to probeIntervalMs.
 * A Retry-After is a lower bound; every delay is within 0..maxDelayMs.
 */

export interface RetryPolicy {
  baseDelayMs: number;
  maxDelayMs: number;
  /** Give up on a record received longer ago than this; undefined = retry forever. */
  maxAgeMs?: number;
  /** Cap of the interval between probes of a failing endpoint (default DEFAULT_PROBE_INTERVAL_MS). */
  probeIntervalMs?: number;
}

/** Default cap of the probe interval: a recovered endpoint gets its backlog within a few seconds. */
export const DEFAULT_PROBE_INTERVAL_MS = 2000;

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({ baseDelayMs: 1000, maxDelayMs: 300_000 });

export type Outcome =
  | { kind: 'http'; status: number; retryAfter?: string; bodyStart?: string }
  | { kind: 'network'; code: string; message: string }
  | { kind: 'timeout'; phase: string };

export type Verdict = 'delivered' | 'retry' | 'dead';

/** Answers saying this request can never be accepted, however often it is sent. */
const FINAL_STATUSES = new Set([400, 413, 415]);
/** 4xx answers about the endpoint (overload, its own timeout), not about the record. */
const ENDPOINT_4XX = new Set([408, 429]);

export function classify(outcome: Outcome): Verdict {
  if (outcome.kind !== 'http') return 'retry';
  const s = outcome.status;
  if (s >= 200 && s <= 299) return 'delivered';
  if (FINAL_STATUSES.has(s)) return 'dead';
  return 'retry';
}

export function isEndpointFailure(outcome: Outcome): boolean {
  if (outcome.kind !== 'http') return true;
  const s = outcome.status;
  return s >= 500 || s < 100 || ENDPOINT_4XX.has(s);
}

/** Delay before probe number `failures + 1` of a failing endpoint, after `failures` (>= 1) failed requests. */
export function probeDelayMs(policy: RetryPolicy, failures: number, retryAfter?: string, now?: Date): number {
  const max = Math.max(0, policy.maxDelayMs);
  const cap = Math.min(max, Math.max(0, policy.probeIntervalMs ?? DEFAULT_PROBE_INTERVAL_MS));
  const exp = Math.min(40, Math.max(0, Math.floor(failures) - 1));
  let delay = Math.min(cap, Math.max(0, policy.baseDelayMs) * 2 ** exp);
  const floor = retryAfterMs(retryAfter, now);
  if (floor !== undefined) delay = Math.max(delay, Math.min(floor, max));
  return delay;
}

/**
 * Milliseconds a Retry-After value asks for, or undefined when absent/unparseable. An HTTP-date needs `now`
 * (without it the date form is ignored). A date in the past gives 0.
 */
export function retryAfterMs(retryAfter: string | undefined, now?: Date): number | undefined {
  if (retryAfter === undefined) return undefined;
  const v = retryAfter.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  if (now === undefined || !/[A-Za-z]/.test(v)) return undefined;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now.getTime());
}

/** Delay before the next attempt; `attempt` is the number of attempts already made minus one (0 after the first). */
export function nextDelayMs(
  policy: RetryPolicy,
  attempt: number,
  random: () => number,
  retryAfter?: string,
  now?: Date,
): number {
  const max = Math.max(0, policy.maxDelayMs);
  const exp = Math.max(0, Math.floor(attempt));
  const window = Math.min(max, policy.baseDelayMs * 2 ** exp);
  const r = Math.min(1, Math.max(0, random()));
  let delay = Math.floor(r * window);
  const floor = retryAfterMs(retryAfter, now);
  if (floor !== undefined) delay = Math.max(delay, Math.min(floor, max));
  return Math.min(delay, max);
}

export function isTooOld(policy: RetryPolicy, receivedAt: string | Date, now: Date): boolean {
  if (policy.maxAgeMs === undefined) return false;
  const t = typeof receivedAt === 'string' ? Date.parse(receivedAt) : receivedAt.getTime();
  if (Number.isNaN(t)) return false; // an unreadable timestamp is no reason to give up on money
  return now.getTime() - t > policy.maxAgeMs;
}
