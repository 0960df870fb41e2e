/**
 * The page's JSON from a status snapshot: masking on the server, webhook state, errors with hints, the transfer, the
 * canaries.
 */
import { describe, expect, it } from 'vitest';
import type { CanaryStatus } from '../../src/canary/types.js';
import { pausedCanaryStatus } from '../support/canary.js';
import {
  buildPageView,
  maskNumber,
  maskNumbersIn,
  maskNumbersKeeping,
  type PageInput,
  type PageSnapshot,
} from '../../src/metrics/page-view.js';

const snapshot = (over: Partial<PageSnapshot> = {}): PageSnapshot => ({
  version: '1.0.0',
  startedAt: '2026-01-01T00:00:00.000Z',
  webhookUrl: 'https://user:secret@api.example/api/v1/convert-pulsa/webhook/sms-gateway',
  modems: [
    {
      name: 'tsel-1',
      state: 'disconnected',
      since: '2026-01-01T00:01:00.000Z',
      lastError: 'serial port /dev/ttyUSB0 does not exist',
      hint: 'check the cable',
      reconnects: 3,
      failedAttempts: 7,
      identity: { manufacturer: 'SIMCOM', model: 'SIM800L', imsi: '510101234567890' },
      receiver: undefined,
      scheduler: { queued: 0, running: undefined } as never,
      signal: { rssi: 20, dbm: -73, bars: 4, sampledAt: '2026-01-01T00:00:30.000Z' },
      balance: {
        modem: 'tsel-1',
        code: '*888#',
        reply: 'Sisa pulsa Rp 1.000',
        replies: [],
        balance: 1000,
        activeUntil: '2026-01-05',
        state: 'warning',
        reasons: ['balance Rp 1000 is below Rp 5000'],
        hint: 'top up 081234567890',
        checkedAt: '2026-01-01T00:00:40.000Z',
      },
    },
  ],
  forwarder: {
    running: true,
    delivered: 5,
    retried: 2,
    dead: 1,
    unrecorded: 0,
    endpointDown: {
      since: '2026-01-01T00:02:00.000Z',
      failures: 4,
      lastError: 'connect ECONNREFUSED',
      nextProbeAt: '2026-01-01T00:02:30.000Z',
    },
  },
  health: {
    healthy: false,
    problems: [{ code: 'modem-down', modem: 'tsel-1', message: 'modem tsel-1 is disconnected' }],
  },
  spool: { pending: 2, oldestPendingAgeMs: 90_000, sent: 10, dead: 1, ignored: 3, quarantine: 1, parts: 0 },
  ...over,
});

const input = (over: Partial<PageInput> = {}): PageInput => ({
  snapshot: snapshot(),
  nowMs: Date.parse('2026-01-01T00:03:00.000Z'),
  configured: new Map([['tsel-1', { number: '081234567890', operator: 'telkomsel' }]]),
  ussd: () => ({ owner: "the daemon's balance check of tsel-1", openedAt: '2026-01-01T00:02:50.000Z' }),
  recent: [
    {
      id: 'r1',
      modem: 'tsel-1',
      sender: '+6281299998888',
      text: 'Anda menerima pulsa dari 6282112235774 tgl 2018-01-08',
      receivedAt: '2026-01-01T00:02:00.000Z',
      state: 'retry',
      attempts: 1,
      outcome: 'HTTP 503',
    },
  ],
  lastSmsAt: () => '2026-01-01T00:02:00.000Z',
  transfer: {
    at: '2026-01-01T00:00:10.000Z',
    from: 'tsel-1',
    to: '081298765432',
    amount: 5000,
    operator: 'telkomsel',
    outcome: 'failed',
    totalMs: 1234,
    steps: [{ step: 1, description: 'USSD *858*081298765432*5000#', status: 'failed', error: 'gagal' }],
    sent: [],
    confirmation: { sender: '858', text: 'secret text', spoolId: 'x' },
  },
  showText: false,
  showNumbers: false,
  refreshMs: 3000,
  ...over,
});

type View = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('buildPageView', () => {
  it('masks numbers and texts by default, keeps short codes and dates', () => {
    expect(maskNumber('081234567890')).toBe('0812•••••890');
    expect(maskNumber('12345')).toBe('•••••');
    expect(maskNumbersIn('dari 6282112235774 tgl 2018-01-08 Rp 50000')).toBe(
      'dari 6282••••••774 tgl 2018-01-08 Rp 50000',
    );
    const v = buildPageView(input()) as View;
    const text = JSON.stringify(v);
    for (const secret of [
      '081234567890',
      '6281299998888',
      '6282112235774',
      '081298765432',
      'secret text',
      'user:secret',
      'Anda menerima',
    ])
      expect(text).not.toContain(secret);
    expect(v.modems[0].number).toBe('0812•••••890');
    expect(v.recent[0]).toMatchObject({
      sender: '+628•••••••888',
      text: null,
      textLength: 53,
      state: 'retry',
      attempts: 1,
    });
    expect(v.webhook.target).toBe('https://api.example');
    expect(v.transfer.to).toBe('0812•••••432');
    expect(v.transfer.steps[0]).toEqual({
      step: 1,
      description: 'USSD *858*0812•••••432*5000#',
      status: 'failed',
      detail: 'gagal',
    });
    expect(v.transfer.confirmation.text).toBeNull();
    expect(v.masked).toEqual({ text: true, numbers: true });
  });

  it('shows text and numbers when the config allows; the rest of the state as the snapshot says', () => {
    const v = buildPageView(input({ showText: true, showNumbers: true })) as View;
    expect(v.recent[0]).toMatchObject({
      sender: '+6281299998888',
      text: 'Anda menerima pulsa dari 6282112235774 tgl 2018-01-08',
    });
    expect(v.modems[0]).toMatchObject({
      state: 'disconnected',
      hint: 'check the cable',
      signal: null,
      registration: null,
      operator: 'telkomsel',
      number: '081234567890',
      reconnects: 3,
      balance: { state: 'warning', rupiah: 1000, activeUntil: '2026-01-05', hint: 'top up 081234567890' },
      ussd: { owner: "the daemon's balance check of tsel-1" },
    });
    expect(v.health).toEqual({
      healthy: false,
      state: 'unhealthy',
      problems: [{ code: 'modem-down', modem: 'tsel-1', message: 'modem tsel-1 is disconnected', hint: null }],
      warnings: [],
    });
    expect(v.spool).toEqual({
      pending: 2,
      dead: 1,
      quarantined: 1,
      sent: 10,
      ignored: 3,
      parts: 0,
      oldestPendingAgeMs: 90_000,
    });
    expect(v.webhook).toMatchObject({
      state: 'failing',
      failingSince: '2026-01-01T00:02:00.000Z',
      failures: 4,
      nextProbeAt: '2026-01-01T00:02:30.000Z',
    });
    expect(v.errors.map((e: View) => e.source)).toEqual(['webhook', 'modem tsel-1', 'balance tsel-1', 'spool']);
    expect(v.errors.find((e: View) => e.source === 'modem tsel-1').hint).toBe('check the cable');
  });

  it('a webhook answering, no transfer yet, no balance', () => {
    const s = snapshot({ forwarder: { running: true, delivered: 0, retried: 0, dead: 0, unrecorded: 0 } });
    s.modems[0] = { ...s.modems[0]!, balance: undefined } as never;
    const v = buildPageView(input({ snapshot: s, transfer: undefined })) as View;
    expect(v.webhook.state).toBe('answering');
    expect(v.transfer).toBeNull();
    expect(v.modems[0].balance).toBeNull();
  });
});

describe('buildPageView: canaries', () => {
  const direct: CanaryStatus = pausedCanaryStatus({
    from: 'tsel-1',
    reason: 'run r9 was cut off mid-send: check the centre SIM 081298765432 and order CVT-20260101-AB12, then resume',
    pausedAt: '2026-01-01T00:02:30.000Z',
    day: '2026-01-01',
    spentToday: 10_000,
    lastSuccessAt: '2025-12-31T23:00:00.000Z',
    lastRun: {
      id: 'r9',
      at: '2026-01-01T00:02:20.000Z',
      outcome: 'unknown',
      spent: 5000,
      orderId: 'CVT-20260101-AB12',
      detail: 'no reply to *858*081298765432*5000#',
      durationMs: 61_000,
    },
    counts: { approved: 1, failed: 0, timeout: 0, unknown: 1, skipped: 0 },
  });
  const ordered: CanaryStatus = {
    ...direct,
    name: 'tsel-hourly',
    to: 'order',
    state: 'waiting',
    reason: undefined,
    pausedAt: undefined,
    failuresInARow: 0,
    nextRunAt: '2026-01-01T01:00:00.000Z',
    lastRun: {
      id: 'r3',
      at: '2026-01-01T00:00:00.000Z',
      outcome: 'approved',
      spent: 5000,
      orderId: 'CVT-20260101-CD34',
      durationMs: 42_000,
    },
  };

  it("a row's facts per canary: state, the day's spend and cap, the last run (outcome, time, order), the next run", () => {
    const v = buildPageView(input({ snapshot: snapshot({ canaries: [ordered, direct] }) })) as View;
    expect(v.canaries).toEqual([
      {
        name: 'tsel-hourly',
        state: 'waiting',
        reason: null,
        pausedAt: null,
        from: 'tsel-1',
        to: 'order',
        amount: 5000,
        intervalSec: 900,
        day: '2026-01-01',
        spentToday: 10_000,
        maxRupiahPerDay: 20_000,
        failuresInARow: 0,
        pauseAfterFailures: 3,
        nextRunAt: '2026-01-01T01:00:00.000Z',
        lastSuccessAt: '2025-12-31T23:00:00.000Z',
        lastRun: {
          at: '2026-01-01T00:00:00.000Z',
          outcome: 'approved',
          orderId: 'CVT-20260101-CD34',
          detail: null,
          durationMs: 42_000,
        },
      },
      expect.objectContaining({ name: 'isat-direct', state: 'paused', pausedAt: '2026-01-01T00:02:30.000Z' }),
    ]);
    // The run that did not end approved is among the last errors, with what to do.
    expect(v.errors.find((e: View) => e.source === 'canary isat-direct')).toEqual({
      at: '2026-01-01T00:02:20.000Z',
      source: 'canary isat-direct',
      message: 'unknown (order CVT-20260101-AB12): no reply to *858*0812•••••432*5000#',
      hint: '`pulsa-bridge canary resume isat-direct` once checked',
    });
    expect(v.errors.find((e: View) => e.source === 'canary tsel-hourly')).toBeUndefined();
  });

  it("a canary's number is masked like a sender (in `to`, the reason and the detail); the order id is kept whole", () => {
    const masked = buildPageView(input({ snapshot: snapshot({ canaries: [direct] }) })) as View;
    expect(JSON.stringify(masked.canaries)).not.toContain('081298765432');
    expect(masked.canaries[0]).toMatchObject({
      to: '0812•••••432',
      reason: 'run r9 was cut off mid-send: check the centre SIM 0812•••••432 and order CVT-20260101-AB12, then resume',
      lastRun: { orderId: 'CVT-20260101-AB12', detail: 'no reply to *858*0812•••••432*5000#' },
    });
    const shown = buildPageView(input({ snapshot: snapshot({ canaries: [direct] }), showNumbers: true })) as View;
    expect(shown.canaries[0]).toMatchObject({
      to: '081298765432',
      lastRun: { detail: 'no reply to *858*081298765432*5000#' },
    });
  });

  it("an order id stays whole in any text (its date is 8 digits), the number beside it masked; the warning's too", () => {
    expect(maskNumbersKeeping('order CVT-20260101-AB12 to 081298765432', ['CVT-20260101-AB12'])).toBe(
      'order CVT-20260101-AB12 to 0812•••••432',
    );
    expect(maskNumbersKeeping('order CVT-20260101-AB12', [])).toBe('order CVT-2026•101-AB12');
    const s = snapshot({ canaries: [direct] });
    s.health = {
      healthy: true,
      state: 'degraded',
      problems: [],
      warnings: [
        { code: 'canary-paused', canary: 'isat-direct', message: `canary isat-direct is paused: ${direct.reason}` },
      ],
    };
    const v = buildPageView(input({ snapshot: s })) as View;
    expect(v.health.warnings[0].message).toBe(
      'canary isat-direct is paused: run r9 was cut off mid-send: check the centre SIM 0812•••••432 and order CVT-20260101-AB12, then resume',
    );
  });

  it('no canary configured: null, and the page shows no canary section', () => {
    expect((buildPageView(input()) as View).canaries).toBeNull();
  });
});
