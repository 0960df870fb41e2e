/**
 * The transfer runner over virtual modems on one virtual network (the direct path: the SIM is polled). Each default
 * operator flow moves credit and the centre line receives the operator's confirmation; failures, timeouts and an
 * interruption say what was already sent.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_FLOWS, renderFlow, type FlowStep } from '../../src/transfer/flows.js';
import { runTransfer, type StepReport } from '../../src/transfer/runner.js';
import type { WatchClock } from '../../src/transfer/sms-watch.js';
import { parseOperatorSms } from '../../src/sms/operator-facts.js';
import { TestNetwork } from './vm-ops.js';

let net: TestNetwork | undefined;
afterEach(async () => {
  await net?.close();
  net = undefined;
});

/** Time moves only when the runner sleeps (no wall-clock waits in timeouts). */
function steppingClock(): WatchClock {
  let t = 0;
  return { now: () => t, sleep: async (ms) => void ((t += ms), await new Promise((r) => setImmediate(r))) };
}

const pollMs = 20;

describe('runTransfer on the virtual network', () => {
  it.each([
    ['telkomsel', 'simcom', '858'],
    ['indosat', 'huawei', '151'],
    ['xl', 'generic', '168'],
    ['smartfren', 'simcom', '879'],
  ] as const)(
    '%s: the default flow moves the credit and the centre gets the confirmation',
    async (operator, profile, confirmSender) => {
      net = new TestNetwork();
      const sender = await net.add('sender', { number: '081211110001', operator, balance: 50_000 }, profile);
      const centre = await net.add('centre', { number: '081200000001', operator, balance: 1000 }, profile);
      const seen: StepReport[] = [];
      const report = await runTransfer({
        from: sender.ops,
        centre: centre.ops,
        fromNumber: '081211110001',
        steps: renderFlow(DEFAULT_FLOWS[operator]!, { to: '081200000001', amount: 10_000 }),
        amount: 10_000,
        confirmTimeoutMs: 20_000,
        pollMs,
        onStep: (s) => seen.push(s),
      });
      expect(report.outcome).toBe('confirmed');
      expect(report.steps.map((s) => s.status)).toEqual(report.steps.map(() => 'ok'));
      expect(seen).toEqual(report.steps);
      expect(report.confirmation?.sender).toBe(confirmSender);
      const facts = parseOperatorSms(report.confirmation!.text);
      expect(facts).toMatchObject({ amount: 10_000, senderNumber: '6281211110001' });
      expect(facts.serial).toMatch(/^[A-Z]{2,4}\d{14}$/);
      expect(net.network.line('081211110001')!.balance).toBe(40_000);
      expect(net.network.line('081200000001')!.balance).toBe(11_000);
      expect(report.sent.length).toBe(
        report.steps.filter((s) => s.kind === 'ussd' || s.kind === 'sms').length + (operator === 'telkomsel' ? 1 : 0),
      );
      if (operator === 'indosat') expect(report.sent[1]).toMatch(/^SMS "OK[A-Z0-9]{6}" to 151/);
    },
  );

  it('a transfer the operator refuses fails on that step and waits for no confirmation', async () => {
    net = new TestNetwork();
    const sender = await net.add('sender', { number: '081211110001', operator: 'telkomsel', balance: 5000 });
    const centre = await net.add('centre', { number: '081200000001', operator: 'telkomsel' });
    const report = await runTransfer({
      from: sender.ops,
      centre: centre.ops,
      steps: renderFlow(DEFAULT_FLOWS.telkomsel!, { to: '081200000001', amount: 10_000 }),
      amount: 10_000,
      confirmTimeoutMs: 5000,
      pollMs,
    });
    expect(report.outcome).toBe('failed');
    expect(report.steps).toHaveLength(1);
    expect(report.steps[0]!.error).toMatch(/pulsa Anda tidak cukup/);
    expect(report.sent).toEqual(['USSD *858*081200000001*10000# on sender', 'USSD answer "1" on sender']);
    expect(net.network.line('081211110001')!.balance).toBe(5000);
  });

  it('an operator SMS that never comes times out naming the step it waited for', async () => {
    net = new TestNetwork();
    const sender = await net.add('sender', { number: '085611110001', operator: 'indosat' });
    const steps: FlowStep[] = [
      { kind: 'sms', to: '151', text: 'TRANSFERPULSA 085600000001 10000', usesToken: false },
      { kind: 'await-sms', from: '9999', token: undefined, timeoutSec: 30 },
      { kind: 'sms', to: '151', text: 'OK{token}', usesToken: true },
    ];
    const report = await runTransfer({
      from: sender.ops,
      steps,
      amount: 10_000,
      confirmTimeoutMs: 5000,
      clock: steppingClock(),
      pollMs: 1000,
    });
    expect(report.outcome).toBe('timeout');
    expect(report.steps.map((s) => s.status)).toEqual(['ok', 'timeout']);
    expect(report.steps[1]!.error).toBe('no SMS from 9999 on sender (step 2) within 30 s');
    expect(report.sent).toEqual(['SMS "TRANSFERPULSA 085600000001 10000" to 151 from sender']);
  });

  it('interrupted after the first step: nothing more is sent and the report says what was', async () => {
    net = new TestNetwork();
    const sender = await net.add('sender', { number: '081711110001', operator: 'xl' });
    const centre = await net.add('centre', { number: '081700000001', operator: 'xl' });
    const abort = new AbortController();
    const report = await runTransfer({
      from: sender.ops,
      centre: centre.ops,
      steps: renderFlow(DEFAULT_FLOWS.xl!, { to: '081700000001', amount: 10_000 }),
      amount: 10_000,
      confirmTimeoutMs: 5000,
      pollMs,
      signal: abort.signal,
      onStep: (s) => s.step === 1 && abort.abort(),
    });
    expect(report.outcome).toBe('interrupted');
    expect(report.steps.map((s) => s.status)).toEqual(['ok', 'interrupted']);
    expect(report.sent).toEqual(['SMS "BAGI 081700000001 10000" to 168 from sender']);
    expect(net.network.line('081711110001')!.balance).toBe(50_000);
  });
});
