/**
 * Canaries in the health verdict: paused, disabled, or a last run that did not end approved makes the bridge degraded
 * (SMS still flow), one warning per canary with its hint; the monitor passes the daemon's canary status through as it
 * is (CanaryStatus fits the model's structural view).
 */
import { describe, expect, it } from 'vitest';
import type { CanaryStatus } from '../../src/canary/types.js';
import { judgeHealth, type CanarySnapshot, type HealthSnapshot } from '../../src/health/model.js';
import { HealthMonitor, type HealthSource } from '../../src/health/monitor.js';
import { silentLogger } from '../../src/log.js';
import { localTime } from '../../src/time-format.js';
import { canaryStatus } from '../support/canary.js';

const NOW = Date.parse('2026-11-24T06:00:00Z');
const MIN = 60_000;
const ago = (ms: number) => new Date(NOW - ms).toISOString();

const status = (over: Partial<CanaryStatus> = {}): CanaryStatus =>
  canaryStatus({
    intervalSec: 3600,
    spentToday: 5000,
    nextRunAt: new Date(NOW + 30 * MIN).toISOString(),
    lastSuccessAt: ago(30 * MIN),
    lastRun: { id: 'r1', at: ago(30 * MIN), outcome: 'approved', spent: 5000, orderId: 'ORD-7', durationMs: 42_000 },
    counts: { approved: 1, failed: 0, timeout: 0, unknown: 0, skipped: 0 },
    ...over,
  });

function snapshot(canaries: CanarySnapshot[] | undefined, over: Partial<HealthSnapshot> = {}): HealthSnapshot {
  return {
    nowMs: NOW,
    startedAtMs: NOW - 60 * MIN,
    modems: [{ name: 'tsel-1', state: 'running', since: ago(60 * MIN) }],
    spoolProbe: { okAtMs: NOW - 10_000 },
    forwarder: { running: true, unrecorded: 0 },
    spool: { pending: 0 },
    ...(canaries ? { canaries } : {}),
    ...over,
  };
}

const failed = { id: 'r2', at: ago(5 * MIN), outcome: 'failed' as const, spent: 0, detail: 'the order was refused' };

describe('canaries in the health verdict', () => {
  const table: Array<[string, CanarySnapshot[] | undefined, string, string[]]> = [
    ['none configured', undefined, 'healthy', []],
    ['last run approved', [status()], 'healthy', []],
    ['never ran yet', [status({ lastRun: undefined, lastSuccessAt: undefined })], 'healthy', []],
    ['running now, the last run approved', [status({ state: 'running' })], 'healthy', []],
    ['capped for the day, the last run approved', [status({ state: 'capped' })], 'healthy', []],
    ['the last run failed', [status({ lastRun: failed, failuresInARow: 1 })], 'degraded', ['canary-failing']],
    [
      'the last run timed out, running again now',
      [status({ state: 'running', lastRun: { ...failed, outcome: 'timeout' }, failuresInARow: 2 })],
      'degraded',
      ['canary-failing'],
    ],
    [
      'paused after an unknown send (one warning, not two)',
      [
        status({
          state: 'paused',
          reason: 'run r2 was cut off mid-send: check the centre SIM and order ORD-8, then resume',
          pausedAt: ago(5 * MIN),
          lastRun: { ...failed, outcome: 'unknown', orderId: 'ORD-8' },
        }),
      ],
      'degraded',
      ['canary-paused'],
    ],
    [
      'disabled: the ledger cannot be read',
      [status({ state: 'disabled', reason: 'the canary ledger is not valid (expected a JSON object)' })],
      'degraded',
      ['canary-disabled'],
    ],
    [
      'two canaries, one paused and one well',
      [status({ name: 'isat-daily' }), status({ state: 'paused', reason: 'paused by an operator' })],
      'degraded',
      ['canary-paused'],
    ],
  ];
  it.each(table)('%s', (_name, canaries, state, codes) => {
    const v = judgeHealth(snapshot(canaries));
    expect(v.state).toBe(state);
    expect(v.healthy).toBe(true); // SMS still flow: a canary never makes the bridge unhealthy
    expect(v.problems).toEqual([]);
    expect((v.warnings ?? []).map((w) => w.code)).toEqual(codes);
  });

  it('each warning names the canary, says why and what to do', () => {
    const paused = judgeHealth(
      snapshot([
        status({
          state: 'paused',
          reason: '3 runs in a row did not end approved',
          pausedAt: ago(5 * MIN),
          lastRun: { ...failed, orderId: 'ORD-9' },
          failuresInARow: 3,
        }),
      ]),
    ).warnings![0];
    expect(paused).toEqual({
      code: 'canary-paused',
      canary: 'tsel-hourly',
      message: `canary tsel-hourly is paused since ${localTime(ago(5 * MIN))}: 3 runs in a row did not end approved`,
      hint: 'check the centre SIM and order ORD-9 (`pulsa-bridge canary ls` shows its runs), then `pulsa-bridge canary resume tsel-hourly`',
    });
    const failing = judgeHealth(snapshot([status({ lastRun: failed, failuresInARow: 1 })])).warnings![0];
    expect(failing).toMatchObject({
      code: 'canary-failing',
      canary: 'tsel-hourly',
      message: `canary tsel-hourly: its last run (${localTime(failed.at)}) ended failed: the order was refused (1 of 3 failures in a row before it pauses itself)`,
      hint: expect.stringContaining('check the centre SIM, the webhook and the order'),
    });
    const disabled = judgeHealth(snapshot([status({ state: 'disabled', reason: 'ledger not valid' })])).warnings![0];
    expect(disabled).toMatchObject({
      message: 'canary tsel-hourly is disabled: ledger not valid',
      hint: expect.stringContaining('canary-ledger.json'),
    });
  });

  it('beside a real problem: unhealthy for the problem, the canary still warned', () => {
    const v = judgeHealth(
      snapshot([status({ state: 'paused', reason: 'paused by an operator' })], {
        modems: [{ name: 'tsel-1', state: 'disconnected', since: ago(MIN) }],
      }),
    );
    expect(v.state).toBe('unhealthy');
    expect(v.problems.map((p) => p.code)).toEqual(['modem-down']);
    expect(v.warnings!.map((w) => w.code)).toEqual(['canary-paused']);
  });

  it("the monitor reads the source's canaries (the scheduler's CanaryStatus[] as it is) on every verdict", async () => {
    let canaries: CanaryStatus[] = [status()];
    const source: HealthSource = {
      startedAtMs: Date.now(),
      modems: () => [],
      forwarder: () => ({ running: true, unrecorded: 0 }),
      spool: async () => ({ pending: 0 }),
      canaries: () => canaries,
    };
    const monitor = new HealthMonitor({ source, spoolDir: '/nonexistent', logger: silentLogger() });
    expect(await monitor.health()).toMatchObject({ state: 'healthy', warnings: [] });
    canaries = [status({ state: 'paused', reason: 'paused by an operator' })];
    const v = await monitor.health();
    expect(v).toMatchObject({ healthy: true, state: 'degraded' });
    expect(v.warnings!.map((w) => w.code)).toEqual(['canary-paused']);
    expect(v.snapshot.canaries).toEqual(canaries);
    expect(monitor.liveness().healthy).toBe(true); // the watchdog never waits on a canary
  });
});
