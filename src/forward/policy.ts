/**
 * Retry policy for webhook delivery (PURE: no I/O, no timers, no clock; time comes in as arguments).
 *
 * - classify(outcome): 2xx -> 'delivered'; network errors, timeouts, 408, 425, 429, 5xx (and anything unexpected
 *   below 200 or above 599) -> 'retry'; 3xx (redirects are not followed for a POST) and every other 4xx -> 'dead'.
 * - nextDelayMs: full-jitter exponential backoff, random() * min(maxDelayMs, baseDelayMs * 2^attempt). A Retry-After
 *   header (delta-seconds or HTTP-date) is a lower bound, itself capped at maxDelayMs. The result is never above
 *   maxDelayMs and never negative.
 * - isTooOld: a record older than maxAgeMs (when set) is given up (dead) instead of retried forever.
 */

export interface RetryPolicy {
  baseDelayMs: number;
  maxDelayMs: number;
  /** Give up on a record received longer ago than this; undefined = retry forever. */
  maxAgeMs?: number;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({ baseDelayMs: 1000, maxDelayMs: 300_000 });

export type Outcome =
  | { kind: 'http'; status: number; retryAfter?: string; bodyStart?: string }
  | { kind: 'network'; code: string; message: string }
  | { kind: 'timeout'; phase: string };

export type Verdict = 'delivered' | 'retry' | 'dead';

const RETRYABLE_4XX = new Set([408, 425, 429]);

export function classify(outcome: Outcome): Verdict {
  if (outcome.kind !== 'http') return 'retry';
  const s = outcome.status;
  if (s >= 200 && s <= 299) return 'delivered';
  if (s >= 300 && s <= 399) return 'dead';
  if (s >= 400 && s <= 499) return RETRYABLE_4XX.has(s) ? 'retry' : 'dead';
  return 'retry';
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
