/**
 * The canaries' series, read from the registry's text as Prometheus scrapes it: mirrored from the snapshot's
 * `canaries` (nothing at all when none is configured), the run durations as fed by the scheduler.
 */
import { describe, expect, it } from 'vitest';
import { CANARY_RUN_OUTCOMES, type CanaryStatus } from '../../src/canary/types.js';
import { CANARY_METRIC_OUTCOMES } from '../../src/metrics/canary-metrics.js';
import { BridgeMetrics, MetricFeeds, type MetricsSnapshot } from '../../src/metrics/registry.js';
import { canaryStatus } from '../support/canary.js';

const base: MetricsSnapshot = {
  modems: [],
  forwarder: { delivered: 0, retried: 0, dead: 0 },
  spool: { pending: 0, sent: 0, dead: 0, ignored: 0, quarantine: 0, parts: 0 },
  health: { healthy: true },
};

const canary = (over: Partial<CanaryStatus> = {}): CanaryStatus =>
  canaryStatus({
    nextRunAt: '2026-11-24T12:00:00.000Z',
    lastSuccessAt: '2026-11-24T06:00:00.000Z',
    counts: { approved: 2, failed: 1, timeout: 0, unknown: 0, skipped: 0 },
    ...over,
  });

function metrics(canaries: CanaryStatus[] | undefined, feeds?: MetricFeeds): BridgeMetrics {
  // The daemon hands the metrics its StatusSnapshot: CanaryStatus must fit the structural view as it is.
  const snapshot: MetricsSnapshot = { ...base, ...(canaries ? { canaries } : {}) };
  return new BridgeMetrics(
    { version: '0.0.0', snapshot: async () => snapshot },
    { defaultMetrics: false, ...(feeds ? { feeds } : {}) },
  );
}

const lines = (text: string, name: string) => text.split('\n').filter((l) => l.startsWith(`${name}{`));

describe('canary metrics', () => {
  it('counts the five outcomes per canary, zeros included, as the snapshot mirrors them', async () => {
    expect([...CANARY_METRIC_OUTCOMES]).toEqual([...CANARY_RUN_OUTCOMES]);
    const text = await metrics([
      canary(),
      canary({ name: 'isat-test', counts: { approved: 0, failed: 0, timeout: 1, unknown: 1, skipped: 4 } }),
    ]).registry.metrics();
    expect(text).toContain('# TYPE pulsa_bridge_canary_runs_total counter');
    expect(lines(text, 'pulsa_bridge_canary_runs_total')).toEqual([
      'pulsa_bridge_canary_runs_total{canary="tsel-hourly",outcome="approved"} 2',
      'pulsa_bridge_canary_runs_total{canary="tsel-hourly",outcome="failed"} 1',
      'pulsa_bridge_canary_runs_total{canary="tsel-hourly",outcome="timeout"} 0',
      'pulsa_bridge_canary_runs_total{canary="tsel-hourly",outcome="unknown"} 0',
      'pulsa_bridge_canary_runs_total{canary="tsel-hourly",outcome="skipped"} 0',
      'pulsa_bridge_canary_runs_total{canary="isat-test",outcome="approved"} 0',
      'pulsa_bridge_canary_runs_total{canary="isat-test",outcome="failed"} 0',
      'pulsa_bridge_canary_runs_total{canary="isat-test",outcome="timeout"} 1',
      'pulsa_bridge_canary_runs_total{canary="isat-test",outcome="unknown"} 1',
      'pulsa_bridge_canary_runs_total{canary="isat-test",outcome="skipped"} 4',
    ]);
  });

  it("the day's spend, the cap, the interval and the pause per canary; the last success only once there was one", async () => {
    const text = await metrics([
      canary(),
      canary({ name: 'paused-one', state: 'paused', reason: 'unknown send', lastSuccessAt: undefined, spentToday: 0 }),
      canary({ name: 'no-ledger', state: 'disabled', reason: 'ledger not valid', lastSuccessAt: undefined }),
      canary({ name: 'capped-one', state: 'capped', spentToday: 20_000 }),
    ]).registry.metrics();
    expect(lines(text, 'pulsa_bridge_canary_last_success_timestamp_seconds')).toEqual([
      `pulsa_bridge_canary_last_success_timestamp_seconds{canary="tsel-hourly"} ${Date.parse('2026-11-24T06:00:00.000Z') / 1000}`,
      `pulsa_bridge_canary_last_success_timestamp_seconds{canary="capped-one"} ${Date.parse('2026-11-24T06:00:00.000Z') / 1000}`,
    ]);
    expect(lines(text, 'pulsa_bridge_canary_spent_rupiah')).toEqual([
      'pulsa_bridge_canary_spent_rupiah{canary="tsel-hourly"} 10000',
      'pulsa_bridge_canary_spent_rupiah{canary="paused-one"} 0',
      'pulsa_bridge_canary_spent_rupiah{canary="no-ledger"} 10000',
      'pulsa_bridge_canary_spent_rupiah{canary="capped-one"} 20000',
    ]);
    expect(lines(text, 'pulsa_bridge_canary_daily_cap_rupiah')).toContain(
      'pulsa_bridge_canary_daily_cap_rupiah{canary="tsel-hourly"} 20000',
    );
    expect(lines(text, 'pulsa_bridge_canary_paused')).toEqual([
      'pulsa_bridge_canary_paused{canary="tsel-hourly"} 0',
      'pulsa_bridge_canary_paused{canary="paused-one"} 1',
      'pulsa_bridge_canary_paused{canary="no-ledger"} 1',
      'pulsa_bridge_canary_paused{canary="capped-one"} 0',
    ]);
    expect(lines(text, 'pulsa_bridge_canary_interval_seconds')).toContain(
      'pulsa_bridge_canary_interval_seconds{canary="tsel-hourly"} 21600',
    );
  });

  it('a canary removed from the config leaves no stale series behind', async () => {
    let list = [canary(), canary({ name: 'gone' })];
    const m = new BridgeMetrics(
      { version: '0.0.0', snapshot: async () => ({ ...base, canaries: list }) },
      { defaultMetrics: false },
    );
    expect(await m.registry.metrics()).toContain('canary="gone"');
    list = [canary()];
    expect(await m.registry.metrics()).not.toContain('canary="gone"');
  });

  it('no canary configured: no canary series with a value (only their HELP and TYPE)', async () => {
    const text = await metrics(undefined).registry.metrics();
    expect(text.split('\n').filter((l) => l.startsWith('pulsa_bridge_canary_'))).toEqual([]);
  });

  it('run durations as the scheduler feeds them, by canary and outcome; a skipped run is not timed', async () => {
    const feeds = new MetricFeeds();
    feeds.observeCanaryRun('tsel-hourly', 'approved', 42);
    feeds.observeCanaryRun('tsel-hourly', 'approved', 130);
    feeds.observeCanaryRun('tsel-hourly', 'timeout', 600);
    feeds.observeCanaryRun('tsel-hourly', 'skipped', 0);
    const text = await metrics([canary()], feeds).registry.metrics();
    expect(text).toContain('# TYPE pulsa_bridge_canary_duration_seconds histogram');
    expect(text).toContain('pulsa_bridge_canary_duration_seconds_count{canary="tsel-hourly",outcome="approved"} 2');
    expect(text).toContain('pulsa_bridge_canary_duration_seconds_sum{canary="tsel-hourly",outcome="approved"} 172');
    expect(text).toContain(
      'pulsa_bridge_canary_duration_seconds_bucket{le="60",canary="tsel-hourly",outcome="approved"} 1',
    );
    expect(text).toContain(
      'pulsa_bridge_canary_duration_seconds_bucket{le="600",canary="tsel-hourly",outcome="timeout"} 1',
    );
    expect(text).not.toMatch(/pulsa_bridge_canary_duration_seconds_\w+\{[^}]*outcome="skipped"/);
  });
});
