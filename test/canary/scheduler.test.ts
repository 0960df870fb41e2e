/**
 * The canary scheduler in process, on fake modem operations that play the Telkomsel flow and the daemon's events (the
 * confirmation SMS spooled on the centre, the webhook's answer): approved only when the webhook took the
 * confirmation; one run at a time per modem; never while someone else's USSD session is open; a run in progress
 * answers `busy`; a stop mid-run leaves the send spent and the canary paused; judge() maps every engine verdict.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Canaries, CanaryRefusal, judge } from '../../src/canary/scheduler.js';
import type { CanaryConfig } from '../../src/config-canary.js';
import type { EventMessage } from '../../src/control/protocol.js';
import type { TransferOps } from '../../src/ops/modem-ops.js';
import type { PlanConfig } from '../../src/transfer/plan.js';
import type { TestTransferResult } from '../../src/transfer/test-transfer.js';
import { captureLogger } from '../support/logger.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir('canary-sched')));
afterEach(async () => cleanup());

const plan: PlanConfig = {
  modems: [
    { name: 'sender', number: '081211110001', operator: 'telkomsel' },
    { name: 'sender2', number: '081211110002', operator: 'telkomsel' },
    { name: 'centre', number: '081200000001', operator: 'telkomsel' },
  ],
  reseller: { flows: {}, order: {}, confirmTimeoutSec: 5 },
};
const canary = (over: Partial<CanaryConfig> = {}): CanaryConfig => ({
  name: 'c1',
  from: 'sender',
  amount: 5000,
  intervalSec: 3600,
  maxRupiahPerDay: 50_000,
  order: false,
  to: 'centre',
  pauseAfterFailures: 3,
  timeZone: 'Asia/Jakarta',
  ...over,
});

/** A little world: the senders' USSD plays *858*, each transfer spools its confirmation on the centre. */
function world(o: { webhook?: string; hold?: Promise<void>; fromNumber?: string } = {}) {
  const listeners = new Set<(e: EventMessage) => void>();
  const emit = (e: EventMessage) => listeners.forEach((l) => l(e));
  let inUssd = 0;
  let maxInUssd = 0;
  const dialled: string[] = [];
  let seq = 0;
  const ops = (name: string): TransferOps => ({
    name,
    path: 'daemon',
    async ussdOpen(code) {
      dialled.push(`${name} ${code}`);
      maxInUssd = Math.max(maxInUssd, ++inUssd);
      await o.hold;
      return { status: 1, statusText: 'more input', text: 'Kirim Rp 5000 ke 081200000001? 1. Ya 2. Tidak', raw: '' };
    },
    async ussdReply() {
      inUssd--;
      const id = `sms-${++seq}`;
      setTimeout(() => {
        const from = o.fromNumber ?? `62${name === 'sender' ? '81211110001' : '81211110002'}`;
        const text = `Anda mendapatkan penambahan pulsa Rp 5000 dari nomor ${from}`;
        emit({ v: 1, event: 'sms', modem: 'centre', data: { id, sender: '858', text } });
        emit({ v: 1, event: 'delivery', data: { id, status: o.webhook ?? 'delivered', outcome: 'HTTP 200' } });
      }, 20);
      return { status: 0, statusText: 'done', text: 'Transfer pulsa Rp 5000 ke 081200000001 berhasil', raw: '' };
    },
    ussdCancel: async () => undefined,
    smsSend: async () => ({ parts: 1, references: [1] }),
    smsList: async () => [],
    onEvent: (l) => {
      listeners.add(l);
      return Promise.resolve(() => void listeners.delete(l));
    },
    close: async () => undefined,
  });
  return { ops, dialled, maxInUssd: () => maxInUssd };
}

async function canaries(
  list: CanaryConfig[],
  w: ReturnType<typeof world>,
  busy: () => string | undefined = () => undefined,
  notReady: (modem: string) => string | undefined = () => undefined,
) {
  const { logger, lines } = captureLogger();
  const c = await Canaries.open({
    canaries: list,
    plan,
    ledgerDir: dir,
    open: (modem) => Promise.resolve(w.ops(modem)),
    busy,
    notReady,
    logger,
  });
  return { c, lines };
}

describe('canary scheduler', () => {
  it('a plain canary is approved when the confirmation reached the centre and the webhook took it', async () => {
    const w = world();
    const { c, lines } = await canaries([canary()], w);
    const r = await c.runNow('c1', 'test');
    expect(r).toMatchObject({ outcome: 'approved', spent: 5000 });
    expect(r.detail).toBe('confirmed on centre; the webhook took it (HTTP 200)');
    expect(w.dialled).toEqual(['sender *858*081200000001*5000#']);
    expect(c.status()[0]).toMatchObject({ state: 'waiting', spentToday: 5000, failuresInARow: 0 });
    expect(lines.some((l) => l.level === 30 && /canary c1: run \S+ approved after/.test(l.msg))).toBe(true);
  });

  it('a confirmation the webhook did not take is a failed run (the server never saw it)', async () => {
    const w = world({ webhook: 'dead' });
    const { c } = await canaries([canary()], w);
    const r = await c.runNow('c1', 'test');
    expect(r).toMatchObject({ outcome: 'failed', spent: 5000 });
    expect(r.detail).toBe('confirmed on centre, but the webhook answered dead, HTTP 200');
  });

  it('runs go one at a time per modem: a second canary on the same modems waits for the first', async () => {
    let open!: () => void;
    const w = world({ hold: new Promise<void>((r) => (open = r)) });
    const { c } = await canaries([canary(), canary({ name: 'c2', from: 'sender2' })], w);
    const a = c.runNow('c1', 'test');
    const b = c.runNow('c2', 'test');
    await until(() => w.dialled.length === 1, 'the first dial');
    // c2 shares the centre with c1: it has not dialled while c1 holds it.
    await new Promise((r) => setTimeout(r, 100));
    expect(w.dialled).toHaveLength(1);
    await expect(c.runNow('c1', 'test')).rejects.toMatchObject({ kind: 'busy' });
    open();
    expect((await a).outcome).toBe('approved');
    expect((await b).outcome).toBe('approved');
    expect(w.maxInUssd()).toBe(1);
  });

  it("never dials while someone else's USSD session is open on the modem: it waits for it to end", async () => {
    const w = world();
    let holder: string | undefined = "pulsa-bridge ussd (pid 42)'s session";
    const { c, lines } = await canaries([canary()], w, () => holder);
    const run = c.runNow('c1', 'test');
    await until(() => lines.some((l) => /waiting for .*pid 42.* on sender to end/.test(l.msg)), 'the wait logged');
    expect(w.dialled).toEqual([]);
    holder = undefined;
    expect((await run).outcome).toBe('approved');
  });

  it('a stop mid-run: what was dialled stays spent, the run ends unknown and the canary is paused', async () => {
    const w = world({ hold: new Promise<void>(() => undefined) }); // the network never answers the USSD
    const { c } = await canaries([canary()], w);
    const run = c.runNow('c1', 'test');
    await until(() => w.dialled.length === 1, 'the dial');
    await c.stop();
    // Bounded stop: the run is still waiting for the network; the reservation stays in flight on disk.
    const { c: again, lines } = await canaries([canary()], w);
    expect(again.status()[0]).toMatchObject({ state: 'paused', spentToday: 5000 });
    expect(lines.some((l) => l.level === 50 && /cut off by the last stop mid-send/.test(l.msg))).toBe(true);
    await expect(again.runNow('c1', 'test')).rejects.toBeInstanceOf(CanaryRefusal);
    void run;
  });

  it('a modem that is not connected is asked nothing: a failed run, nothing spent', async () => {
    const w = world();
    const { c } = await canaries([canary()], w, undefined, (m) =>
      m === 'centre' ? 'modem centre is disconnected' : undefined,
    );
    const r = await c.runNow('c1', 'test');
    expect(r).toMatchObject({ outcome: 'failed', spent: 0, detail: 'not dialled: modem centre is disconnected' });
    expect(w.dialled).toEqual([]);
    expect(c.status()[0]).toMatchObject({ spentToday: 0, failuresInARow: 1, state: 'waiting' });
  });

  it("a customer's transfer of the same amount to the centre is not this run's confirmation (the sender number must match)", async () => {
    const w = world({ fromNumber: '6289999999999' });
    const { c } = await canaries([canary({ timeoutSec: 5 })], w);
    const r = await c.runNow('c1', 'test');
    expect(r.outcome).toBe('timeout');
    expect(r.detail).toMatch(
      /the transfer timeout: no the confirmation SMS \(Rp 5000 from 6281211110001\) on centre within 5 s/,
    );
  });

  it('a USSD session opened while the order was made holds the run back: skipped, nothing dialled, not a failure', async () => {
    const w = world();
    let calls = 0;
    const { c } = await canaries([canary()], w, () => (++calls > 1 ? "an operator's session" : undefined));
    const r = await c.runNow('c1', 'test');
    expect(r.outcome).toBe('skipped');
    expect(r.detail).toMatch(/an operator's session opened a USSD session on sender meanwhile/);
    expect(w.dialled).toEqual([]);
    expect(c.status()[0]).toMatchObject({ spentToday: 0, failuresInARow: 0, state: 'waiting' });
  });

  it('an unknown canary name is not_found, naming the configured ones', async () => {
    const { c } = await canaries([canary()], world());
    await expect(c.pause('nope', 'test')).rejects.toMatchObject({ kind: 'not_found', hint: 'configured: c1' });
  });
});

describe('judge: a run outcome from the engine verdict', () => {
  const base = { ok: false, reason: 'r', spent: false } as const;
  const order = { trx_id: 'T1', ussd_code: '*858#', center_number: '0812', statuses: [] };
  it.each<[string, Partial<TestTransferResult>, string, boolean]>([
    ['approved order', { ok: true, verdict: 'approved', order }, 'approved', false],
    ['order still pending', { verdict: 'timeout', order }, 'timeout', false],
    ['order ended rejected', { verdict: 'failed', order }, 'failed', false],
    ['an operator reply not understood', { verdict: 'unknown', spent: true }, 'unknown', true],
    ['interrupted after sending', { verdict: 'interrupted', spent: true }, 'unknown', true],
    ['interrupted before sending', { verdict: 'interrupted', spent: false }, 'failed', false],
    [
      'an order that names something else',
      { verdict: 'refused', order, mismatch: { problems: ['x'] } },
      'failed',
      true,
    ],
    ['the reseller API failed', { verdict: 'failed', apiError: new Error('401') }, 'failed', false],
  ])('%s', (_what, r, outcome, pauses) => {
    const j = judge({ ...base, verdict: 'failed', ...r } as TestTransferResult);
    expect(j.outcome).toBe(outcome);
    expect(j.pause !== undefined).toBe(pauses);
  });

  it('a step whose send is unknown is unknown even when the engine said failed', () => {
    const report = {
      outcome: 'failed' as const,
      steps: [
        {
          step: 1,
          kind: 'ussd' as const,
          description: 'd',
          status: 'failed' as const,
          startMs: 0,
          ms: 1,
          replies: [],
          sent: 'unknown' as const,
        },
      ],
      sent: [],
      totalMs: 1,
    };
    expect(judge({ ...base, verdict: 'failed', spent: true, report }).outcome).toBe('unknown');
  });
});
