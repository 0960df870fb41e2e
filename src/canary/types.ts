/**
 * What the daemon reports of its canaries (scheduled test transfers, src/canary/scheduler.ts): one CanaryStatus each
 * in the status snapshot, which status.json, `status`, `canary ls`, the metrics, the health verdict and the status page
 * read. Types only.
 */
import type { CanaryOutcome } from './ledger.js';

/** A run's outcome as counted: the ledger's, or `skipped` for a run the cap, a pause or an unreadable ledger held back. */
export type CanaryRunOutcome = CanaryOutcome | 'skipped';

export const CANARY_RUN_OUTCOMES: readonly CanaryRunOutcome[] = ['approved', 'failed', 'timeout', 'unknown', 'skipped'];

export interface CanaryRunView {
  id: string;
  /** ISO time the run started. */
  at: string;
  outcome: CanaryOutcome;
  /** Rupiah counted against its day. */
  spent: number;
  orderId?: string;
  /** One line: what happened (the reason it failed, or the order's final state). */
  detail?: string;
  durationMs?: number;
}

export interface CanaryStatus {
  name: string;
  /** The sending modem. */
  from: string;
  /** `order` (the reseller order names the centre) or the centre's number. */
  to: string;
  amount: number;
  intervalSec: number;
  maxRupiahPerDay: number;
  timeZone: string;
  /** How long a run waits for the order's approval (the canary's timeoutSec, else reseller.confirmTimeoutSec). */
  timeoutSec: number;
  /**
   * `waiting` for its next run, `running` now, `paused` (by an operator or after failures: `canary resume`), `capped`
   * (the day's spend leaves no room for a run), `disabled` (the ledger cannot be read: nothing runs).
   */
  state: 'waiting' | 'running' | 'paused' | 'capped' | 'disabled';
  /** Why it is paused or disabled. */
  reason?: string;
  pausedAt?: string;
  /** The day the spend counts (YYYY-MM-DD in its time zone) and what was spent on it. */
  day: string;
  spentToday: number;
  failuresInARow: number;
  pauseAfterFailures: number;
  /** ISO time of the next scheduled run (absent while running, paused or disabled). */
  nextRunAt?: string;
  lastSuccessAt?: string;
  lastRun?: CanaryRunView;
  /** Runs since the daemon started, by outcome (the metrics mirror these). */
  counts: Record<CanaryRunOutcome, number>;
}
