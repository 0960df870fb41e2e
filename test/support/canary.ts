/**
 * Made-up canaries as the daemon reports them (CanaryStatus, src/canary/types.ts), for the tests of what reads them:
 * status, the metrics, the status page. canaryStatus(): tsel-hourly, waiting, Rp 5.000 through a reseller order every
 * 6 h, Rp 10.000 of Rp 20.000 spent on 2026-11-24 (Asia/Jakarta), 2 runs approved. pausedCanaryStatus(): isat-direct,
 * paused after an unknown send (1 of 3 failures), Rp 5.000 to 081298765432 every 15 min, Rp 5.000 spent, no next run.
 * Contract: neither sets a time of its own (last run, last success, pause); each field of `overrides` replaces it whole.
 */
import type { CanaryStatus } from '../../src/canary/types.js';

export function canaryStatus(overrides: Partial<CanaryStatus> = {}): CanaryStatus {
  return {
    name: 'tsel-hourly',
    from: 'tsel-test',
    to: 'order',
    amount: 5000,
    intervalSec: 21_600,
    maxRupiahPerDay: 20_000,
    timeZone: 'Asia/Jakarta',
    timeoutSec: 180,
    state: 'waiting',
    day: '2026-11-24',
    spentToday: 10_000,
    failuresInARow: 0,
    pauseAfterFailures: 3,
    counts: { approved: 2, failed: 0, timeout: 0, unknown: 0, skipped: 0 },
    ...overrides,
  };
}

export function pausedCanaryStatus(overrides: Partial<CanaryStatus> = {}): CanaryStatus {
  return canaryStatus({
    name: 'isat-direct',
    from: 'isat-test',
    to: '081298765432',
    intervalSec: 900,
    state: 'paused',
    nextRunAt: undefined,
    failuresInARow: 1,
    spentToday: 5000,
    counts: { approved: 0, failed: 0, timeout: 0, unknown: 1, skipped: 0 },
    ...overrides,
  });
}
