/**
 * The health model as a table: one snapshot, the problems expected (by code) from liveness (the watchdog) and from
 * health (/healthz, `status`). No timers: the snapshot carries the clock.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_THRESHOLDS, judgeHealth, judgeLiveness, type HealthSnapshot } from '../../src/health/model.js';

const NOW = Date.parse('2025-06-01T12:00:00Z');
const ago = (ms: number) => new Date(NOW - ms).toISOString();
const MIN = 60_000;

function snapshot(over: Partial<HealthSnapshot> = {}): HealthSnapshot {
  return {
    nowMs: NOW,
    startedAtMs: NOW - 60 * MIN,
    modems: [{ name: 'tsel-1', state: 'running', since: ago(30 * MIN) }],
    spoolProbe: { okAtMs: NOW - 10_000 },
    forwarder: { running: true, unrecorded: 0 },
    spool: { pending: 0 },
    ...over,
  };
}

const codes = (v: { problems: Array<{ code: string }> }) => v.problems.map((p) => p.code);

describe('health model', () => {
  const table: Array<[string, Partial<HealthSnapshot>, string[], string[]]> = [
    ['all well', {}, [], []],
    [
      'modem disconnected',
      { modems: [{ name: 'tsel-1', state: 'disconnected', since: ago(MIN), lastError: 'device vanished' }] },
      [],
      ['modem-down'],
    ],
    [
      'SIM needs its PIN',
      {
        modems: [
          {
            name: 'tsel-1',
            state: 'sim-not-ready',
            since: ago(MIN),
            lastError: 'SIM PIN required',
            hint: 'set modems[].pin',
          },
        ],
      },
      [],
      ['sim-not-ready'],
    ],
    [
      'connecting just after start: not down yet',
      { startedAtMs: NOW - 10_000, modems: [{ name: 'tsel-1', state: 'connecting', since: ago(10_000) }] },
      [],
      [],
    ],
    [
      'initialising for 15 min: wedged',
      { modems: [{ name: 'tsel-1', state: 'initialising', since: ago(15 * MIN) }] },
      ['modem-stuck'],
      ['modem-stuck'],
    ],
    [
      'one AT task for 11 min: wedged',
      {
        modems: [
          {
            name: 'tsel-1',
            state: 'running',
            since: ago(30 * MIN),
            runningTask: { label: 'sweep', sinceMs: NOW - 11 * MIN },
          },
        ],
      },
      ['modem-stuck'],
      ['modem-stuck'],
    ],
    [
      'one AT task for 1 min: busy',
      {
        modems: [
          {
            name: 'tsel-1',
            state: 'running',
            since: ago(30 * MIN),
            runningTask: { label: 'sweep', sinceMs: NOW - MIN },
          },
        ],
      },
      [],
      [],
    ],
    [
      'spool probe failed last',
      { spoolProbe: { okAtMs: NOW - 40_000, failedAtMs: NOW - 5_000, error: 'EROFS' } },
      ['spool-unwritable'],
      ['spool-unwritable'],
    ],
    [
      'spool probe failed, then succeeded',
      { spoolProbe: { okAtMs: NOW - 5_000, failedAtMs: NOW - 40_000, error: 'ENOSPC' } },
      [],
      [],
    ],
    [
      'spool probe hanging for 3 min',
      { spoolProbe: { okAtMs: NOW - 4 * MIN, pendingSinceMs: NOW - 3 * MIN } },
      ['spool-probe-stuck'],
      ['spool-probe-stuck'],
    ],
    [
      'no successful probe for 5 min',
      { spoolProbe: { okAtMs: NOW - 5 * MIN } },
      ['spool-unwritable'],
      ['spool-unwritable'],
    ],
    [
      'forwarder stopped',
      { forwarder: { running: false, unrecorded: 0 } },
      ['forwarder-stopped'],
      ['forwarder-stopped'],
    ],
    [
      'one POST in flight for 12 min',
      { forwarder: { running: true, unrecorded: 0, inFlight: { id: 'x', sinceMs: NOW - 12 * MIN } } },
      ['forwarder-stuck'],
      ['forwarder-stuck'],
    ],
    ['results the spool could not record', { forwarder: { running: true, unrecorded: 2 } }, [], ['results-unrecorded']],
    ['oldest pending 6 min', { spool: { pending: 3, oldestPendingAgeMs: 6 * MIN } }, [], ['pending-too-old']],
    ['oldest pending 4 min', { spool: { pending: 3, oldestPendingAgeMs: 4 * MIN } }, [], []],
    [
      'disconnected right after start: unhealthy at once (no grace)',
      { startedAtMs: NOW - 5_000, modems: [{ name: 'tsel-1', state: 'disconnected', since: ago(5_000) }] },
      [],
      ['modem-down'],
    ],
    [
      'the webhook refuses connections (an SMS waits)',
      {
        forwarder: {
          running: true,
          unrecorded: 0,
          endpointDown: {
            since: ago(10_000),
            failures: 2,
            lastError: 'ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:9',
          },
        },
        spool: { pending: 1, oldestPendingAgeMs: 10_000 },
      },
      [],
      ['webhook-unreachable'],
    ],
    [
      'the SIM active period ended',
      {
        sims: [
          {
            modem: 'tsel-1',
            activeUntil: '2025-05-31',
            state: 'warning',
            reasons: ['active period ended on 2025-05-31'],
          },
        ],
      },
      [],
      ['sim-expired'],
    ],
    [
      'the SIM active period ends today: still receiving',
      {
        sims: [
          {
            modem: 'tsel-1',
            activeUntil: '2025-06-01',
            state: 'warning',
            reasons: ['active period ends on 2025-06-01 (0 days left)'],
          },
        ],
      },
      [],
      [],
    ],
  ];
  it.each(table)('%s', (_name, over, live, health) => {
    const s = snapshot(over);
    expect(codes(judgeLiveness(s))).toEqual(live);
    const v = judgeHealth(s);
    expect(codes(v)).toEqual(health);
    expect(v.healthy).toBe(health.length === 0);
  });

  it('says why, with the modem, its error and hint', () => {
    const v = judgeHealth(
      snapshot({
        modems: [
          {
            name: 'tsel-2',
            state: 'sim-not-ready',
            since: ago(MIN),
            lastError: 'SIM PUK required',
            hint: 'unlock with the PUK',
          },
        ],
      }),
    );
    expect(v.problems).toEqual([
      {
        code: 'sim-not-ready',
        modem: 'tsel-2',
        message: 'modem tsel-2: SIM not ready: SIM PUK required',
        hint: 'unlock with the PUK',
      },
    ]);
  });

  it('each problem has its hint; warnings only make it degraded (money flows: healthy stays true)', () => {
    const down = judgeHealth(
      snapshot({
        forwarder: {
          running: true,
          unrecorded: 0,
          endpointDown: { since: ago(10_000), failures: 3, lastError: 'HTTP 503: busy' },
        },
      }),
    );
    expect(down).toMatchObject({ healthy: false, state: 'unhealthy' });
    expect(down.problems[0]).toMatchObject({
      code: 'webhook-unreachable',
      message: expect.stringContaining('(3 attempts in a row): HTTP 503: busy'),
      hint: expect.stringContaining('SMS wait in the spool'),
    });
    const low = judgeHealth(
      snapshot({
        sims: [
          {
            modem: 'tsel-1',
            activeUntil: '2025-06-05',
            state: 'warning',
            reasons: ['balance Rp 4000 below 10000', 'active period ends on 2025-06-05 (4 days left)'],
          },
        ],
      }),
    );
    expect(low).toMatchObject({ healthy: true, state: 'degraded', problems: [] });
    expect(low.warnings).toEqual([
      {
        code: 'sim-warning',
        modem: 'tsel-1',
        message: 'modem tsel-1: balance Rp 4000 below 10000; active period ends on 2025-06-05 (4 days left)',
        hint: 'top the SIM up',
      },
    ]);
    expect(judgeHealth(snapshot())).toMatchObject({ healthy: true, state: 'healthy', warnings: [] });
  });

  it('the pending-age threshold is the configured one', () => {
    const s = snapshot({ spool: { pending: 1, oldestPendingAgeMs: 2 * MIN } });
    expect(judgeHealth(s).healthy).toBe(true);
    expect(codes(judgeHealth(s, { ...DEFAULT_THRESHOLDS, maxPendingAgeMs: MIN }))).toEqual(['pending-too-old']);
  });
});
