/**
 * Canaries against the compiled daemon (`bin/pulsa-bridge run`) on two virtual modems of one virtual network, with the
 * local stand-in of the service over real HTTP on loopback (orders, the webhook that approves an order on its
 * confirmation SMS): runs on the schedule until the daily cap, no further order across a restart; a SIGKILL mid-run
 * leaves the run spent and the canary paused; failing runs pause it; `canary ls|run|pause|resume` from the CLI.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OrderBook, STANDIN_OPERATORS } from '../../src/demo/orders.js';
import { startDemoReceiver, type DemoReceiver } from '../../src/demo/receiver.js';
import { writeConfig } from '../support/config.js';
import { DaemonProcess, killAll, runCli } from '../support/daemon.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await killAll();
  while (cleanups.length) await cleanups.pop()!();
});

const KEY = 'k-canary-test-1234';
const CENTRE = '081200000001';

async function standIn(apiKey = KEY): Promise<DemoReceiver> {
  const receiver = await startDemoReceiver({
    apiKey,
    orders: new OrderBook(STANDIN_OPERATORS.map((o) => (o.operator_id === 1 ? { ...o, center_number: CENTRE } : o))),
  });
  cleanups.push(() => receiver.close());
  return receiver;
}

async function setup(
  receiver: DemoReceiver,
  canary: Record<string, unknown>,
  opts: { apiKey?: string } = {},
): Promise<{ file: string; dir: string }> {
  const { dir, cleanup } = await tempDir('canary');
  cleanups.push(cleanup);
  const sim = (name: string, number: string, balance: number) => ({
    name,
    port: `virtual:${name}?${new URLSearchParams({ number, operator: 'telkomsel', balance: String(balance) })}`,
    senders: ['858'],
    operator: 'telkomsel',
    number,
  });
  const file = await writeConfig(dir, {
    webhook: { baseUrl: receiver.baseUrl, retry: { baseDelayMs: 50, maxDelayMs: 200 } },
    modems: [sim('sender', '081211110001', 100_000), sim('centre', CENTRE, 0)],
    control: { socket: path.join(dir, 'control.sock') },
    metrics: { listen: '127.0.0.1:0' },
    reseller: {
      apiKey: opts.apiKey ?? KEY,
      confirmTimeoutSec: 20,
      order: { operatorId: 1, payoutMethod: 'DANA', payoutAccountNumber: '08990000111', payoutAccountName: 'Ops' },
    },
    canaries: [{ name: 'tsel', from: 'sender', amount: 5000, order: true, ...canary }],
  });
  return { file, dir };
}

/** The daemon's metrics address, from its log line. */
function metricsAt(d: DaemonProcess): string {
  for (const line of d.out) {
    const m = /serving \/metrics and \/healthz on http:\/\/([^"\s]+)/.exec(line);
    if (m) return m[1]!;
  }
  throw new Error('no metrics address logged');
}

/** The value of one series in a Prometheus text exposition (undefined when absent). */
function sample(text: string, series: string): number | undefined {
  for (const line of text.split('\n')) if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  return undefined;
}

const ordersOf = (r: DemoReceiver) => [...r.orders.orders.values()];
const ledger = async (dir: string) =>
  JSON.parse(await readFile(path.join(dir, 'spool', 'canary-ledger.json'), 'utf8')) as {
    canaries: Record<
      string,
      { spent: number; paused?: { reason: string }; runs: Array<{ state: string; outcome?: string }> }
    >;
  };
async function ls(file: string): Promise<Array<Record<string, unknown>>> {
  const r = await runCli(['canary', 'ls', '-c', file, '--json']);
  expect(r.err).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.out) as Array<Record<string, unknown>>;
}

describe('canaries in the compiled daemon', () => {
  it('run every few seconds until the day cap: two orders, two confirmations at the webhook, approved; a restart makes no third order', async () => {
    const receiver = await standIn();
    const { file, dir } = await setup(receiver, { intervalSec: 1, maxRupiahPerDay: 10_000 });
    const check = await runCli(['config', 'check', file]);
    expect(check.code).toBe(0);
    expect(check.out).toContain(
      'tsel: Rp 5000 from sender through a reseller order, every 1 s (the first 1 s after start); cap Rp 10000 a day (Asia/Jakarta): at most 2 run(s), Rp 10000 a day (the cap binds)',
    );
    const d = await DaemonProcess.start(file, ' started"');
    await until(() => d.count('"outcome":"skipped"') > 0, 'a run held back by the cap', 60_000, { everyMs: 100 });
    const orders = ordersOf(receiver);
    expect(orders.map((o) => [o.status, o.pulsa_amount, o.sender_phone_number])).toEqual([
      ['approved', 5000, '081211110001'],
      ['approved', 5000, '081211110001'],
    ]);
    // Each order approved by its own confirmation SMS, posted by the daemon from the centre SIM.
    for (const o of orders) expect(receiver.received.filter((s) => s.approved === o.trx_id)).toHaveLength(1);
    expect(d.count('canary tsel: run ')).toBeGreaterThanOrEqual(2);
    for (const o of orders) expect(d.logged(`approved (order ${o.trx_id})`)).toBe(true);
    expect(d.logged("run skipped: the day's cap: Rp 10000 of Rp 10000 spent")).toBe(true);
    const [c] = await ls(file);
    // timeoutSec: the run's approval bound (reseller.confirmTimeoutSec here), which `canary run` waits on
    expect(c).toMatchObject({
      name: 'tsel',
      state: 'capped',
      spentToday: 10_000,
      maxRupiahPerDay: 10_000,
      timeoutSec: 20,
    });
    const metrics = await (await fetch(`http://${metricsAt(d)}/metrics`)).text();
    expect(sample(metrics, 'pulsa_bridge_canary_runs_total{canary="tsel",outcome="approved"}')).toBe(2);
    expect(sample(metrics, 'pulsa_bridge_canary_runs_total{canary="tsel",outcome="failed"}')).toBe(0);
    expect(sample(metrics, 'pulsa_bridge_canary_runs_total{canary="tsel",outcome="skipped"}')).toBeGreaterThanOrEqual(
      1,
    );
    expect(sample(metrics, 'pulsa_bridge_canary_spent_rupiah{canary="tsel"}')).toBe(10_000);
    expect(sample(metrics, 'pulsa_bridge_canary_duration_seconds_count{canary="tsel",outcome="approved"}')).toBe(2);
    expect(sample(metrics, 'pulsa_bridge_canary_last_success_timestamp_seconds{canary="tsel"}')).toBeGreaterThan(0);
    const status = await runCli(['status', '-c', file]);
    expect(status.code).toBe(0);
    expect(status.out).toContain('tsel');
    expect((await fetch(`http://${metricsAt(d)}/healthz`)).status).toBe(200);
    expect(c!.counts).toMatchObject({ approved: 2, failed: 0, timeout: 0, unknown: 0 });
    expect(c!.lastRun).toMatchObject({ outcome: 'approved', spent: 5000 });
    // `canary run` now: the cap holds it back too, and says so (exit 1).
    const now = await runCli(['canary', 'run', 'tsel', '-c', file]);
    expect(now.code).toBe(1);
    expect(now.out).toMatch(/canary tsel: run \S+ skipped, Rp 0 spent, 0\.0 s: the day's cap/);
    await d.stop();

    const again = await DaemonProcess.start(file, ' started"');
    await until(() => again.count('"outcome":"skipped"') > 0, 'a run held back after the restart', 30_000, {
      everyMs: 100,
    });
    expect(ordersOf(receiver)).toHaveLength(2);
    expect((await ledger(dir)).canaries.tsel!.spent).toBe(10_000);
    await again.stop();
  }, 150_000);

  it('a SIGKILL mid-run: the run counts as spent and unknown, the canary paused until resumed; nothing is repeated blindly', async () => {
    const receiver = await standIn();
    const { file, dir } = await setup(receiver, { intervalSec: 1, maxRupiahPerDay: 50_000 });
    const d = await DaemonProcess.start(file, ' started"');
    // The reservation is on disk before anything is dialled: kill the daemon then.
    await until(
      async () =>
        (await ledger(dir).catch(() => undefined))?.canaries.tsel?.runs.some((r) => r.state === 'in-flight') === true,
      'a run in flight',
      60_000,
      { everyMs: 5 },
    );
    await d.stop('SIGKILL');
    const spentBefore = (await ledger(dir)).canaries.tsel!.spent;
    expect(spentBefore).toBeGreaterThanOrEqual(5000);
    const orders = ordersOf(receiver).length;

    const again = await DaemonProcess.start(file, ' started"');
    expect(again.logged('was cut off by the last stop mid-send')).toBe(true);
    const [c] = await ls(file);
    expect(c).toMatchObject({ state: 'paused', spentToday: spentBefore });
    expect(c!.reason).toMatch(/cut off mid-send: check the centre SIM and order CVT-/);
    expect(c!.lastRun).toMatchObject({ outcome: 'unknown' });
    // A paused canary warns: degraded, not unhealthy (SMS still flow), with the way out.
    const healthz = await fetch(`http://${metricsAt(again)}/healthz`);
    const health = await healthz.text();
    expect(healthz.status).toBe(200);
    expect(health).toMatch(/^degraded\n/);
    expect(health).toMatch(/canary tsel[\s\S]*canary resume tsel/);
    expect(
      sample(
        await (await fetch(`http://${metricsAt(again)}/metrics`)).text(),
        'pulsa_bridge_canary_paused{canary="tsel"}',
      ),
    ).toBe(1);
    await until(
      () => again.count('run skipped: paused') > 0 || again.count('"outcome":"skipped"') > 0,
      'a paused run held back',
      20_000,
    );
    expect(ordersOf(receiver)).toHaveLength(orders);

    // An operator who checked resumes it: it runs again.
    const resumed = await runCli(['canary', 'resume', 'tsel', '-c', file]);
    expect(resumed.code).toBe(0);
    expect(resumed.out).toMatch(/^canary tsel resumed: (waiting|running)\n$/);
    await until(() => ordersOf(receiver).length > orders, 'a new order after the resume', 60_000);
    await again.stop();
  }, 150_000);

  it('failing runs pause the canary after pauseAfterFailures; nothing is dialled and nothing spent when the API refuses', async () => {
    const receiver = await standIn();
    const { file, dir } = await setup(
      receiver,
      { intervalSec: 1, maxRupiahPerDay: 50_000, pauseAfterFailures: 2 },
      { apiKey: 'k-wrong-key-0000' },
    );
    const d = await DaemonProcess.start(file, ' started"');
    await until(() => d.logged('canary tsel paused: 2 runs in a row did not end approved'), 'the pause', 60_000);
    expect(d.logged('POST /orders answered 401')).toBe(true);
    const [c] = await ls(file);
    expect(c).toMatchObject({ state: 'paused', spentToday: 0, failuresInARow: 2 });
    expect(c!.counts).toMatchObject({ failed: 2 });
    expect((await ledger(dir)).canaries.tsel!.spent).toBe(0);
    // Paused: `canary run` is refused with the way out.
    const run = await runCli(['canary', 'run', 'tsel', '-c', file]);
    expect(run.code).toBe(1);
    expect(run.err).toMatch(
      /canary tsel is paused: 2 runs in a row did not end approved[\s\S]*hint: .*canary resume tsel/,
    );
    const unknown = await runCli(['canary', 'pause', 'nope', '-c', file]);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain('no canary named "nope"');
    // run: the daemon's not_found, without a "running" line before it
    const unknownRun = await runCli(['canary', 'run', 'nope', '-c', file]);
    expect([unknownRun.code, unknownRun.out]).toEqual([2, '']);
    expect(unknownRun.err).toMatch(/^error: no canary named "nope"\nhint: configured: tsel/);
    await d.stop();
  }, 120_000);
});
