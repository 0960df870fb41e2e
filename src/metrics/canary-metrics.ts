/**
 * The canaries' series (scheduled test transfers): computed at scrape time from the snapshot's `canaries` (absent: none
 * configured, no series), except the run duration histogram, which the scheduler feeds as each run ends
 * (MetricFeeds.observeCanaryRun). Every canary has its five run outcomes, zeros included, so a rate over any of them
 * exists from the first scrape; the last success only once there was one (the alert rules tell "never" apart).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** The run outcomes counted (CanaryRunOutcome in src/canary/types.ts; a test keeps the two lists equal). */
export const CANARY_METRIC_OUTCOMES = ['approved', 'failed', 'timeout', 'unknown', 'skipped'] as const;

/** One canary as the metrics read it (structural: CanaryStatus of src/canary/types.ts fits). */
export interface CanaryMetricsView {
  name: string;
  state: string;
  intervalSec: number;
  maxRupiahPerDay: number;
  spentToday: number;
  lastSuccessAt?: string | undefined;
  /** Runs since the daemon started, by outcome. */
  counts: Partial<Record<string, number>>;
}

/** A run's duration, 5 s (an order refused at once) to 10 min (the confirmation and the order's final state). */
export function canaryDurationHistogram(): Histogram {
  return new Histogram({
    name: 'pulsa_bridge_canary_duration_seconds',
    help: 'Duration of one canary run (order, dial, confirmation, final state), by canary and outcome (a skipped run is not timed)',
    labelNames: ['canary', 'outcome'],
    buckets: [5, 10, 20, 30, 45, 60, 90, 120, 180, 300, 450, 600],
    registers: [],
  });
}

/** Registers the snapshot-computed canary series on `registry`; `canaries` reads the current snapshot's. */
export function registerCanaryMetrics(
  registry: Registry,
  canaries: () => Promise<readonly CanaryMetricsView[] | undefined>,
): void {
  const registers = [registry];
  new Counter({
    name: 'pulsa_bridge_canary_runs_total',
    help: 'Canary runs since the daemon started, by canary and outcome (approved, failed, timeout, unknown send, skipped by the cap or a pause)',
    labelNames: ['canary', 'outcome'],
    registers,
    async collect() {
      const list = (await canaries()) ?? [];
      this.reset();
      for (const c of list)
        for (const outcome of CANARY_METRIC_OUTCOMES) this.inc({ canary: c.name, outcome }, c.counts[outcome] ?? 0);
    },
  });
  const perCanary = (name: string, help: string, value: (c: CanaryMetricsView) => number | undefined) =>
    new Gauge({
      name,
      help,
      labelNames: ['canary'],
      registers,
      async collect() {
        const list = (await canaries()) ?? [];
        this.reset();
        for (const c of list) {
          const v = value(c);
          if (v !== undefined && Number.isFinite(v)) this.set({ canary: c.name }, v);
        }
      },
    });
  perCanary(
    'pulsa_bridge_canary_last_success_timestamp_seconds',
    'When the canary last ended approved (epoch seconds, kept across restarts); absent while it never did',
    (c) => (c.lastSuccessAt ? Date.parse(c.lastSuccessAt) / 1000 : undefined),
  );
  perCanary(
    'pulsa_bridge_canary_spent_rupiah',
    "Rupiah the canary spent on its current day (the cap's day, in its time zone)",
    (c) => c.spentToday,
  );
  perCanary(
    'pulsa_bridge_canary_daily_cap_rupiah',
    'The most the canary may spend in one day (maxRupiahPerDay)',
    (c) => c.maxRupiahPerDay,
  );
  perCanary(
    'pulsa_bridge_canary_paused',
    '1 while the canary is paused (by an operator or after failures) or disabled (its ledger unreadable), else 0',
    (c) => (c.state === 'paused' || c.state === 'disabled' ? 1 : 0),
  );
  perCanary(
    'pulsa_bridge_canary_interval_seconds',
    "The canary's schedule: seconds between runs (intervalSec)",
    (c) => c.intervalSec,
  );
}
