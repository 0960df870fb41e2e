/**
 * Balance checks over virtual modems of each operator family (the replies in field-notes.md's formats and variants),
 * an unparsed reply kept verbatim, errors as results, and the periodic watch on injected timers.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_BALANCE_PATTERNS } from '../../src/balance/parse.js';
import { DEFAULT_BALANCE_CHECKS, type OperatorKey } from '../../src/balance/operators.js';
import {
  BalanceWatch,
  checkBalance,
  type BalanceResult,
  type BalanceUssd,
  type WatchTimers,
} from '../../src/balance/watch.js';
import { silentLogger } from '../../src/log.js';
import { TestNetwork } from '../transfer/vm-ops.js';
import { captureLogger } from '../support/logger.js';
import { until } from '../support/until.js';

let net: TestNetwork | undefined;
afterEach(async () => {
  await net?.close();
  net = undefined;
});

const NOW = new Date(2026, 7, 20, 9, 0, 0); // 20 Aug 2026, local time
const settings = (
  operator: OperatorKey,
  extra: Partial<{ minBalance: number; activeWarnDays: number; replies: string[] }> = {},
) => ({
  code: DEFAULT_BALANCE_CHECKS[operator].code,
  replies: extra.replies ?? [],
  patterns: DEFAULT_BALANCE_PATTERNS,
  minBalance: extra.minBalance ?? 0,
  activeWarnDays: extra.activeWarnDays ?? 7,
});

describe('checkBalance on virtual modems of each family', () => {
  it.each([
    ['telkomsel', 'simcom', /^Sisa pulsa Rp\.24025\.Aktif sd 28\/09\/2026\./],
    ['xl', 'huawei', /^Pulsa Rp 24\.025, aktif s\.d\. 28-09-2026\./],
    ['axis', 'generic', /^Sisa pulsa Rp24\.025 aktif sampai 28 Sep 2026/],
    ['indosat', 'simcom', /^Pulsa Anda Rp 24\.025,- Berlaku s\/d 28\.09\.2026/],
    ['smartfren', 'huawei', /^Saldo: Rp 24,025 Exp: 2026-09-28$/],
    ['tri', 'generic', /^Pulsa Rp 24025\. Masa aktif 28\/09\/2026/],
  ] as const)(
    '%s (%s modem): balance and active-until parsed, the reply kept in full',
    async (operator, profile, wording) => {
      net = new TestNetwork();
      const l = await net.add(
        operator,
        { number: '081299990001', operator, balance: 24_025, activeUntil: '2026-09-28' },
        profile,
      );
      const r = await checkBalance(l.name, l.ops, settings(operator), NOW);
      expect(r).toMatchObject({
        modem: operator,
        code: DEFAULT_BALANCE_CHECKS[operator].code,
        balance: 24_025,
        activeUntil: '2026-09-28',
        state: 'ok',
        reasons: [],
      });
      expect(r.reply).toMatch(wording);
      expect(r.replies).toEqual([r.reply]);
    },
  );

  it('an active period ending within the window and a low balance are a warning with a hint', async () => {
    net = new TestNetwork();
    const l = await net.add('tsel', {
      number: '081299990001',
      operator: 'telkomsel',
      balance: 4000,
      activeUntil: '2026-08-24',
    });
    const r = await checkBalance(l.name, l.ops, settings('telkomsel', { minBalance: 10_000 }), NOW);
    expect(r.state).toBe('warning');
    expect(r.reasons).toEqual(['balance Rp 4000 is below Rp 10000', 'active period ends on 2026-08-24 (4 days left)']);
    expect(r.hint).toMatch(/top up/);
  });

  it('a reply no pattern matches is kept verbatim, never guessed', async () => {
    net = new TestNetwork();
    const odd = 'Info kartu: paket Anda aktif. Ketik 1 utk detail';
    const l = await net.add('odd', { number: '081299990001', operator: 'telkomsel', balanceText: () => odd });
    const r = await checkBalance(l.name, l.ops, settings('telkomsel'), NOW);
    expect(r).toMatchObject({ reply: odd, balance: null, activeUntil: null, state: 'unknown' });
    expect(r.hint).toMatch(/balance\.patterns/);
  });

  it('answers a menu with the configured replies and parses the last reply', async () => {
    net = new TestNetwork();
    const l = await net.add('menu', { number: '081299990001', operator: 'telkomsel', balance: 7000 });
    const r = await checkBalance(l.name, l.ops, settings('telkomsel', { replies: ['2'] }), NOW);
    expect(r.replies).toHaveLength(2);
    expect(r.reply).toBe('Nomor Anda 6281299990001');
    expect(r.state).toBe('unknown'); // the number is not a balance: nothing is taken from it
  });

  it('a code the network does not support is an error result, not a throw', async () => {
    net = new TestNetwork();
    const l = await net.add('x', { number: '081299990001', operator: 'telkomsel' });
    const r = await checkBalance(l.name, l.ops, { ...settings('telkomsel'), code: '*123*9#' }, NOW);
    expect(r).toMatchObject({ state: 'error', balance: null, activeUntil: null });
    expect(r.error).toMatch(/not supported/);
  });
});

describe('BalanceWatch', () => {
  function fakeTimers() {
    const queue: Array<{ at: number; fn: () => void; id: number }> = [];
    let now = NOW.getTime();
    let id = 0;
    const timers: WatchTimers = {
      now: () => new Date(now),
      setTimeout: (fn, ms) => (queue.push({ at: now + ms, fn, id: ++id }), id),
      clearTimeout: (h) => {
        const i = queue.findIndex((q) => q.id === h);
        if (i >= 0) queue.splice(i, 1);
      },
    };
    const advanceTo = async (ms: number) => {
      const target = now + ms;
      queue.sort((a, b) => a.at - b.at);
      while (queue[0] && queue[0].at <= target) {
        const next = queue.shift()!;
        now = next.at;
        next.fn();
        for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
        queue.sort((a, b) => a.at - b.at);
      }
    };
    return { timers, advanceTo, pending: () => queue.map((q) => q.at - now) };
  }

  it('checks after the first delay, then every intervalHours; an error retries sooner; the last result is kept', async () => {
    const answers = ['Sisa pulsa Rp.9000.Aktif sd 28/09/2026.', 'ERR', 'Sisa pulsa Rp.8000.Aktif sd 28/09/2026.'];
    const calls: string[] = [];
    const ussd: BalanceUssd = {
      ussdOpen: async (code) => {
        calls.push(code);
        const text = answers.shift()!;
        if (text === 'ERR') throw new Error('modem tsel is disconnected');
        return { status: 0, statusText: 'USSD done', text };
      },
      ussdReply: () => Promise.reject(new Error('no menu')),
      ussdCancel: async () => undefined,
    };
    const t = fakeTimers();
    const results: BalanceResult[] = [];
    const watch = new BalanceWatch({
      modems: [
        { name: 'tsel', settings: { ...settings('telkomsel', { minBalance: 8500 }), intervalHours: 6 } },
        { name: 'off', settings: { ...settings('xl'), intervalHours: 0 } },
      ],
      ussdFor: () => ussd,
      logger: silentLogger(),
      timers: t.timers,
      firstDelayMs: 30_000,
      retryMs: 600_000,
      onResult: (r) => results.push(r),
    });
    watch.start();
    expect(t.pending()).toEqual([30_000]);
    await t.advanceTo(30_000);
    expect(watch.lastResult('tsel')).toMatchObject({ balance: 9000, state: 'ok' });
    expect(t.pending()).toEqual([6 * 3_600_000]);
    await t.advanceTo(6 * 3_600_000);
    expect(watch.lastResult('tsel')).toMatchObject({ state: 'error', error: 'modem tsel is disconnected' });
    expect(t.pending()).toEqual([600_000]);
    await t.advanceTo(600_000);
    expect(watch.lastResult('tsel')).toMatchObject({ balance: 8000, state: 'warning' });
    expect(results.map((r) => r.state)).toEqual(['ok', 'error', 'warning']);
    expect(calls).toEqual(['*888#', '*888#', '*888#']);
    expect(watch.lastResult('off')).toBeUndefined();
    await watch.stop();
    expect(t.pending()).toEqual([]);
  });
  it('a tick that finds the USSD session held skips (logged, last result untouched) and retries after retryMs', async () => {
    const calls: string[] = [];
    const ussd: BalanceUssd = {
      ussdOpen: async (code) => (
        calls.push(code),
        { status: 0, statusText: 'USSD done', text: 'Sisa pulsa Rp.9000.Aktif sd 28/09/2026.' }
      ),
      ussdReply: () => Promise.reject(new Error('no menu')),
      ussdCancel: async () => undefined,
    };
    const t = fakeTimers();
    const { logger, lines } = captureLogger();
    let held: string | undefined = 'a USSD session opened by an operator is open';
    const watch = new BalanceWatch({
      modems: [{ name: 'tsel', settings: { ...settings('telkomsel'), intervalHours: 6 } }],
      ussdFor: () => ussd,
      busy: () => held,
      logger,
      timers: t.timers,
      firstDelayMs: 30_000,
      retryMs: 600_000,
    });
    watch.start();
    await t.advanceTo(30_000);
    expect(calls).toEqual([]);
    expect(watch.lastResult('tsel')).toBeUndefined();
    expect(
      lines.some((l) =>
        String(l.msg).includes(
          'balance check of tsel skipped: a USSD session opened by an operator is open; retrying in 600 s',
        ),
      ),
    ).toBe(true);
    expect(t.pending()).toEqual([600_000]);
    held = undefined;
    await t.advanceTo(630_000);
    expect(calls).toEqual(['*888#']);
    expect(watch.lastResult('tsel')).toMatchObject({ balance: 9000 });
    await watch.stop();
  });
  it('shared(): many askers at once get one check; within the interval the last result; after it, one new check', async () => {
    const calls: string[] = [];
    let answer: (() => void) | undefined;
    let held: string | undefined;
    const ussd: BalanceUssd = {
      ussdOpen: (code) => {
        calls.push(code);
        return new Promise(
          (r) =>
            (answer = () =>
              r({
                status: 0,
                statusText: 'USSD done',
                text: `Sisa pulsa Rp.${9000 + calls.length}.Aktif sd 28/09/2026.`,
              })),
        );
      },
      ussdReply: () => Promise.reject(new Error('no menu')),
      ussdCancel: async () => undefined,
    };
    let clock = NOW.getTime();
    const timers: WatchTimers = { now: () => new Date(clock), setTimeout: () => 0, clearTimeout: () => undefined };
    const s = { ...settings('telkomsel'), intervalHours: 0 };
    const watch = new BalanceWatch({
      modems: [{ name: 'tsel', settings: s }],
      ussdFor: () => ussd,
      busy: () => held,
      logger: silentLogger(),
      timers,
    });
    const asked = Array.from({ length: 50 }, () => watch.shared('tsel', s, 600_000));
    await until(() => answer !== undefined, 'the one check to dial');
    answer!();
    const got = await Promise.all(asked);
    expect(calls).toEqual(['*888#']);
    expect(new Set(got.map((g) => g.result.balance))).toEqual(new Set([9001]));
    expect(got.filter((g) => g.fresh).length).toBe(1);
    clock += 599_000;
    expect((await watch.shared('tsel', s, 600_000)).result.balance).toBe(9001); // the last result, nothing dialled
    held = 'a USSD session opened by an operator is open';
    clock += 100_000;
    expect(await watch.shared('tsel', s, 600_000)).toMatchObject({ result: { balance: 9001 }, fresh: false }); // not the reader's to wait on
    held = undefined;
    answer = undefined;
    const next = watch.shared('tsel', s, 600_000);
    await until(() => answer !== undefined, 'the next check to dial');
    answer!();
    expect(await next).toMatchObject({ result: { balance: 9002 }, fresh: true });
    expect(calls).toEqual(['*888#', '*888#']);
    await watch.stop();
  });
});
