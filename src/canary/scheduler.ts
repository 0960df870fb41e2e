/**
 * The daemon's canaries: each runs on its schedule (first one interval after start, then one interval after each run
 * ends) through `test-transfer`'s engine (transfer/test-transfer.ts); operators run, pause and resume them.
 * Before anything is dialled: a pause, a day's spend with no room or an unreadable ledger holds the run back
 * (`skipped`, before any order exists); the amount is reserved and fsynced after the order's answer is checked; one
 * run per modem, never while another's USSD session is open on it. Approved only on the order's word (without an
 * order: the confirmation, naming the sender, at the centre and taken by the webhook); an unknown send stays spent
 * and pauses the canary, as do `pauseAfterFailures` runs in a row not approved. Every run is logged at info.
 */
import { randomBytes } from 'node:crypto';
import { canaryAsk, canaryName, type CanaryConfig } from '../config-canary.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import type { TransferOps } from '../ops/modem-ops.js';
import type { OrderPaths, ResellerClient } from '../reseller/client.js';
import { planTransfer, type PlanConfig } from '../transfer/plan.js';
import { realClock } from '../transfer/sms-watch.js';
import { runTestTransfer, type TestTransferResult } from '../transfer/test-transfer.js';
import { dayIn, Ledger, LedgerError, type CanaryOutcome, type LedgerRun } from './ledger.js';
import { CANARY_RUN_OUTCOMES, type CanaryRunOutcome, type CanaryStatus } from './types.js';

/** How long stop() waits for runs in progress to end. */
const STOP_BOUND_MS = 3_000;
/** The longest a run waits for someone else's USSD session to end; then it is skipped. */
const BUSY_WAIT_MAX_MS = 10 * 60_000;
/** How often a run waiting for someone else's USSD session to end looks again. */
const BUSY_RECHECK_MS = 2_000;

export interface CanariesOptions {
  canaries: readonly CanaryConfig[];
  /** The config a plan reads (modems, flows, order defaults, confirmTimeoutSec). */
  plan: PlanConfig;
  /** Where the ledger lives (the daemon's state directory). */
  ledgerDir: string;
  /** A modem's operations for one run, under the canary's own USSD owner; closed after the run. */
  open(modem: string, owner: string): Promise<TransferOps>;
  /** Who holds the modem's USSD session now (an operator, a balance check), if anyone. */
  busy(modem: string): string | undefined;
  /** Why the modem cannot take a run now (disconnected, SIM not ready), if it cannot. Default: always ready. */
  notReady?(modem: string): string | undefined;
  /** The reseller API, when an order canary is configured. */
  reseller?: { client: ResellerClient; paths: OrderPaths };
  logger: Logger;
  /** Something a status reader shows changed. */
  onChange?: () => void;
  /** A run ended (the metrics' duration histogram). */
  onRunEnd?: (canary: string, outcome: CanaryRunOutcome, seconds: number) => void;
  now?: () => number;
  /** GET /orders/{trx_id} this often (default 2000). */
  pollIntervalMs?: number;
}

/** A request an operator made that the canaries refuse (the control socket answers it with `kind`). */
export class CanaryRefusal extends Error {
  override readonly name = 'CanaryRefusal';
  constructor(
    readonly kind: 'not_found' | 'busy' | 'refused',
    message: string,
    readonly hint?: string,
  ) {
    super(message);
  }
}

/** One run's end, as `canary run` answers it. */
export interface CanaryRunReport {
  canary: string;
  id: string;
  outcome: CanaryRunOutcome;
  detail: string;
  orderId?: string;
  spent: number;
  durationMs: number;
  /** The run's lines (order, steps, confirmation), as `test-transfer` prints them. */
  lines: string[];
}

interface Slot {
  config: CanaryConfig;
  name: string;
  timer: NodeJS.Timeout | undefined;
  nextRunAt: number | undefined;
  running: Promise<CanaryRunReport> | undefined;
  counts: Record<CanaryRunOutcome, number>;
  /** The last reason a run was skipped (logged at info when it changes). */
  lastSkip: string | undefined;
}

export class Canaries {
  private readonly slots = new Map<string, Slot>();
  /** Modems in use by a run (one run at a time per modem). */
  private readonly modemLocks = new Map<string, Promise<void>>();
  private readonly abort = new AbortController();
  private readonly now: () => number;
  private readonly log: Logger;
  private started = false;

  private constructor(
    private readonly o: CanariesOptions,
    private readonly ledger: Ledger | undefined,
    /** Why nothing runs (the ledger cannot be read). */
    private readonly disabled: string | undefined,
  ) {
    this.now = o.now ?? Date.now;
    this.log = o.logger;
    for (const config of o.canaries) {
      const name = canaryName(config);
      const counts = Object.fromEntries(CANARY_RUN_OUTCOMES.map((k) => [k, 0])) as Record<CanaryRunOutcome, number>;
      this.slots.set(name, {
        config,
        name,
        timer: undefined,
        nextRunAt: undefined,
        running: undefined,
        counts,
        lastSkip: undefined,
      });
    }
  }

  /**
   * The canaries with their ledger. A ledger that cannot be read disables them all (logged as an error, shown in the
   * status): SMS keep flowing, no credit moves. Runs cut off by the last stop are logged and their canaries paused.
   */
  static async open(o: CanariesOptions): Promise<Canaries> {
    if (o.canaries.length === 0) return new Canaries(o, undefined, undefined);
    try {
      const { ledger, interrupted } = await Ledger.open(o.ledgerDir, o.now);
      for (const { canary, run } of interrupted)
        o.logger.error(
          { canary, run: run.id, orderId: run.orderId, amount: run.amount },
          `canary ${canary}: run ${run.id}${run.orderId ? ` (order ${run.orderId})` : ''} was cut off by the last stop mid-send: Rp ${run.amount} counted as spent, the canary paused; check the centre SIM and the order, then \`pulsa-bridge canary resume ${canary}\``,
        );
      const configured = new Set(o.canaries.map((c) => canaryName(c)));
      for (const name of ledger.names().filter((n) => !configured.has(n)))
        o.logger.warn(
          { canary: name },
          `canary ${name} is in the ledger but not configured: a renamed canary (its name, or its from and amount) starts a new day's spend and loses its pause; check ${ledger.file} before relying on the cap`,
        );
      return new Canaries(o, ledger, undefined);
    } catch (err) {
      if (!(err instanceof LedgerError)) throw err;
      o.logger.error({ err }, `canaries disabled: ${err.message}`);
      return new Canaries(o, undefined, err.message);
    }
  }

  /** Schedules every canary's first run one interval from now. */
  start(): void {
    this.started = true;
    for (const slot of this.slots.values()) this.schedule(slot);
  }

  /** No new runs; a run in progress is interrupted (a send already made stays spent and pauses its canary). */
  async stop(): Promise<void> {
    this.started = false;
    for (const slot of this.slots.values()) {
      clearTimeout(slot.timer);
      slot.timer = undefined;
      slot.nextRunAt = undefined;
    }
    this.abort.abort();
    // Bounded: a run in a USSD exchange ends with the modem's reply; a reservation left in flight by a stop that did
    // not wait is counted as spent and pauses its canary at the next start (Ledger.open).
    await Promise.race([
      Promise.allSettled([...this.slots.values()].map((s) => s.running)),
      new Promise<void>((resolve) => setTimeout(resolve, STOP_BOUND_MS).unref()),
    ]);
  }

  status(): CanaryStatus[] {
    return [...this.slots.values()].map((s) => this.statusOf(s));
  }

  /** Runs a canary now (an operator's `canary run`), and answers with its end. */
  async runNow(name: string, who: string): Promise<CanaryRunReport> {
    const slot = this.slot(name);
    if (slot.running)
      throw new CanaryRefusal('busy', `canary ${name} is running now`, 'wait for it to end (`pulsa-bridge canary ls`)');
    const st = this.statusOf(slot);
    if (st.state === 'paused' || st.state === 'disabled')
      throw new CanaryRefusal(
        'refused',
        `canary ${name} is ${st.state}: ${st.reason ?? ''}`.trim(),
        st.state === 'paused'
          ? `check the centre SIM and the last order, then \`pulsa-bridge canary resume ${name}\``
          : undefined,
      );
    clearTimeout(slot.timer);
    slot.timer = undefined;
    slot.nextRunAt = undefined;
    return this.launch(slot, `operator (${who})`);
  }

  async pause(name: string, who: string): Promise<CanaryStatus> {
    const slot = this.slot(name);
    const ledger = this.usableLedger(name);
    await ledger.pause(name, this.dayOf(slot), `paused by ${who}`);
    this.log.info({ canary: name }, `canary ${name} paused by ${who}`);
    this.o.onChange?.();
    return this.statusOf(slot);
  }

  async resume(name: string, who: string): Promise<CanaryStatus> {
    const slot = this.slot(name);
    const ledger = this.usableLedger(name);
    await ledger.resume(name, this.dayOf(slot));
    slot.lastSkip = undefined;
    this.log.info({ canary: name }, `canary ${name} resumed by ${who}`);
    if (this.started && !slot.running && slot.timer === undefined) this.schedule(slot);
    this.o.onChange?.();
    return this.statusOf(slot);
  }

  private slot(name: string): Slot {
    const slot = this.slots.get(name);
    if (!slot)
      throw new CanaryRefusal(
        'not_found',
        `no canary named ${JSON.stringify(name)}`,
        this.slots.size
          ? `configured: ${[...this.slots.keys()].join(', ')}`
          : 'no canary is configured (config `canaries`)',
      );
    return slot;
  }

  private usableLedger(name: string): Ledger {
    if (!this.ledger) throw new CanaryRefusal('refused', `canary ${name} is disabled: ${this.disabled ?? ''}`.trim());
    return this.ledger;
  }

  private dayOf(slot: Slot): string {
    return dayIn(slot.config.timeZone, this.now());
  }

  private schedule(slot: Slot, delayMs = slot.config.intervalSec * 1000): void {
    if (!this.started) return;
    clearTimeout(slot.timer);
    slot.nextRunAt = this.now() + delayMs;
    slot.timer = setTimeout(() => {
      slot.timer = undefined;
      slot.nextRunAt = undefined;
      if (!slot.running) void this.launch(slot, 'schedule');
    }, delayMs);
    slot.timer.unref();
  }

  /** One run, then the next one scheduled an interval after it ends. */
  private launch(slot: Slot, trigger: string): Promise<CanaryRunReport> {
    const run = this.runOnce(slot, trigger)
      .catch((err: unknown): CanaryRunReport => {
        // A bug, not a run's end: logged, counted as failed, the schedule goes on.
        this.log.error(
          { err, canary: slot.name },
          `canary ${slot.name}: run failed unexpectedly: ${errorMessage(err)}`,
        );
        return {
          canary: slot.name,
          id: '-',
          outcome: 'failed',
          detail: errorMessage(err),
          spent: 0,
          durationMs: 0,
          lines: [],
        };
      })
      .finally(() => {
        slot.running = undefined;
        this.schedule(slot);
        this.o.onChange?.();
      });
    slot.running = run;
    this.o.onChange?.();
    return run;
  }

  private async runOnce(slot: Slot, trigger: string): Promise<CanaryRunReport> {
    const { name, config: c } = slot;
    const id = `${new Date(this.now()).toISOString().replace(/[-:]/g, '').slice(0, 15)}-${randomBytes(3).toString('hex')}`;
    const t0 = this.now();
    const skip = (reason: string): CanaryRunReport => this.skipped(slot, id, reason);
    if (!this.ledger) return skip(`disabled: ${this.disabled}`);
    const ledger = this.ledger;
    const entry = ledger.entry(name, this.dayOf(slot));
    if (entry.paused) return skip(`paused: ${entry.paused.reason}`);
    if (entry.spent + c.amount > c.maxRupiahPerDay)
      return skip(
        `the day's cap: Rp ${entry.spent} of Rp ${c.maxRupiahPerDay} spent on ${entry.day}, a run takes Rp ${c.amount}`,
      );

    const plan = planTransfer(this.o.plan, canaryAsk(c));
    const modems = [...new Set([c.from, ...(plan.centre ? [plan.centre.name] : [])])];
    const release = await this.lockModems(modems);
    const lines: string[] = [];
    let day = entry.day;
    let result: TestTransferResult;
    /** Set once the reservation is on disk: the order id, or '' without an order. */
    let reserved: string | undefined;
    try {
      const stuck = await this.waitWhileBusy(name, c.from);
      if (this.abort.signal.aborted) return skip('the daemon is stopping');
      if (stuck !== undefined) return skip(stuck);
      // A modem that is not connected: nothing is asked of it (its task would fail unrun, read as an unknown send).
      const down = modems.map((m) => this.o.notReady?.(m)).find((why) => why !== undefined);
      if (down !== undefined) result = { ok: false, verdict: 'failed', reason: `not dialled: ${down}`, spent: false };
      else {
        this.log.info(
          { canary: name, run: id, trigger },
          `canary ${name}: run ${id} starts (${trigger}): Rp ${c.amount} from ${c.from}${c.order ? ' through a reseller order' : ` to ${plan.centre?.name ?? plan.to}`}`,
        );
        result = await runTestTransfer(plan, {
          modems: this.o.plan.modems,
          strictConfirmation: true,
          open: (modem) => this.o.open(modem, `canary ${name} (run ${id})`),
          ...(c.order && this.o.reseller ? { reseller: this.o.reseller } : {}),
          signal: this.abort.signal,
          note: (line) => {
            lines.push(line);
            this.log.debug({ canary: name, run: id }, `canary ${name}: ${line}`);
          },
          onStep: (s) => lines.push(`${s.step}. ${s.description}: ${s.status}${s.error ? ` (${s.error})` : ''}`),
          ...(this.o.pollIntervalMs !== undefined ? { pollIntervalMs: this.o.pollIntervalMs } : {}),
          beforeDial: async ({ orderId }) => {
            // The cap again, on the day it is now, then the reservation on disk: nothing dials without both.
            day = this.dayOf(slot);
            const now = ledger.entry(name, day);
            if (now.paused) throw new Error(`paused meanwhile: ${now.paused.reason}`);
            if (now.spent + c.amount > c.maxRupiahPerDay)
              throw new Error(`the day's cap is reached (Rp ${now.spent} spent)`);
            // The order took its time: someone may have opened a USSD session meanwhile (the broker would refuse it).
            const holder = this.o.busy(c.from);
            if (holder !== undefined) throw new Error(`${holder} opened a USSD session on ${c.from} meanwhile`);
            await ledger.reserve(name, day, { id, amount: c.amount, ...(orderId ? { orderId } : {}) });
            reserved = orderId ?? '';
          },
        });
      }
    } catch (err) {
      // A fault of this process, not a run's end: after the reservation it may have sent, so it stays spent (unknown).
      this.log.error({ err, canary: name, run: id }, `canary ${name}: run ${id} broke: ${errorMessage(err)}`);
      if (reserved === undefined) throw err;
      result = {
        ok: false,
        verdict: 'unknown',
        reason: `the run broke after its reservation (${errorMessage(err)}): whether credit moved is not known`,
        spent: true,
        ...(reserved ? { order: { trx_id: reserved, ussd_code: '', center_number: undefined, statuses: [] } } : {}),
      };
    } finally {
      release();
    }

    // Held back at the last moment (paused or capped meanwhile, a session opened): nothing dialled, not a failure.
    if (result.held !== undefined)
      return skip(`${result.reason}${result.order ? ` (order ${result.order.trx_id} was created and not paid)` : ''}`);
    const { outcome, detail, pause } = judge(result);
    const durationMs = this.now() - t0;
    const orderId = result.order?.trx_id;
    let spent = 0;
    try {
      const settled = await ledger.settle(
        name,
        day,
        id,
        {
          outcome,
          spent: result.spent,
          detail,
          durationMs,
          ...(orderId ? { orderId } : {}),
          ...(pause ? { pause } : {}),
        },
        c.pauseAfterFailures,
      );
      spent = settled.runs.find((r) => r.id === id)?.spent ?? 0;
      if (settled.paused && outcome !== 'approved')
        this.log.warn(
          { canary: name, reason: settled.paused.reason },
          `canary ${name} paused: ${settled.paused.reason}; \`pulsa-bridge canary resume ${name}\` once checked`,
        );
    } catch (err) {
      // The reservation is on disk (the amount counts); only this run's end is not recorded.
      spent = result.spent ? c.amount : 0;
      this.log.error(
        { err, canary: name, run: id },
        `canary ${name}: the ledger could not record run ${id}'s end: ${errorMessage(err)}`,
      );
    }
    slot.counts[outcome] += 1;
    slot.lastSkip = undefined;
    const fields = { canary: name, run: id, outcome, orderId, amount: c.amount, spent, durationMs, trigger };
    const line = `canary ${name}: run ${id} ${outcome}${orderId ? ` (order ${orderId})` : ''} after ${(durationMs / 1000).toFixed(1)} s: ${detail}`;
    if (outcome === 'approved') this.log.info(fields, line);
    else this.log.warn(fields, line);
    this.o.onRunEnd?.(name, outcome, durationMs / 1000);
    return { canary: name, id, outcome, detail, ...(orderId ? { orderId } : {}), spent, durationMs, lines };
  }

  private skipped(slot: Slot, id: string, reason: string): CanaryRunReport {
    slot.counts.skipped += 1;
    const line = `canary ${slot.name}: run skipped: ${reason}`;
    // Logged at info when the reason changes (a paused canary with a short interval does not fill the journal).
    if (slot.lastSkip !== reason) this.log.info({ canary: slot.name, outcome: 'skipped' }, line);
    else this.log.debug({ canary: slot.name, outcome: 'skipped' }, line);
    slot.lastSkip = reason;
    this.o.onRunEnd?.(slot.name, 'skipped', 0);
    return { canary: slot.name, id, outcome: 'skipped', detail: reason, spent: 0, durationMs: 0, lines: [] };
  }

  /** Waits for the modems to be free of other canaries' runs; returns their release. */
  private async lockModems(modems: readonly string[]): Promise<() => void> {
    for (;;) {
      const held = modems.map((m) => this.modemLocks.get(m)).filter((p) => p !== undefined);
      if (held.length === 0) break;
      await Promise.all(held);
    }
    let release!: () => void;
    const lock = new Promise<void>((r) => (release = r));
    for (const m of modems) this.modemLocks.set(m, lock);
    return () => {
      for (const m of modems) if (this.modemLocks.get(m) === lock) this.modemLocks.delete(m);
      release();
    };
  }

  /** Someone else's USSD session on the modem: wait for it to end (logged once). */
  /** Someone else's USSD session on the modem: wait for it to end (logged once); undefined, or why it did not end. */
  private async waitWhileBusy(name: string, modem: string): Promise<string | undefined> {
    const t0 = this.now();
    let said = false;
    for (let holder = this.o.busy(modem); holder !== undefined; holder = this.o.busy(modem)) {
      if (this.abort.signal.aborted) return undefined;
      if (this.now() - t0 > BUSY_WAIT_MAX_MS)
        return `${holder} held ${modem} for more than ${BUSY_WAIT_MAX_MS / 60_000} min`;
      if (!said) this.log.info({ canary: name, modem }, `canary ${name}: waiting for ${holder} on ${modem} to end`);
      said = true;
      await realClock.sleep(BUSY_RECHECK_MS, this.abort.signal);
    }
    return undefined;
  }

  private statusOf(slot: Slot): CanaryStatus {
    const c = slot.config;
    const day = this.dayOf(slot);
    const e = this.ledger?.entry(slot.name, day);
    const last = e?.runs.filter((r) => r.state === 'done').at(-1);
    const state: CanaryStatus['state'] = !this.ledger
      ? 'disabled'
      : slot.running
        ? 'running'
        : e?.paused
          ? 'paused'
          : (e?.spent ?? 0) + c.amount > c.maxRupiahPerDay
            ? 'capped'
            : 'waiting';
    return {
      name: slot.name,
      from: c.from,
      to: c.order ? 'order' : (c.to ?? ''),
      amount: c.amount,
      intervalSec: c.intervalSec,
      maxRupiahPerDay: c.maxRupiahPerDay,
      timeZone: c.timeZone,
      timeoutSec: c.timeoutSec ?? this.o.plan.reseller.confirmTimeoutSec,
      state,
      ...(state === 'disabled' && this.disabled ? { reason: this.disabled } : {}),
      ...(e?.paused ? { reason: e.paused.reason, pausedAt: e.paused.at } : {}),
      day,
      spentToday: e?.spent ?? 0,
      failuresInARow: e?.failuresInARow ?? 0,
      pauseAfterFailures: c.pauseAfterFailures,
      ...(slot.nextRunAt !== undefined && state !== 'running'
        ? { nextRunAt: new Date(slot.nextRunAt).toISOString() }
        : {}),
      ...(e?.lastSuccessAt ? { lastSuccessAt: e.lastSuccessAt } : {}),
      ...(last ? { lastRun: runView(last) } : {}),
      counts: { ...slot.counts },
    };
  }
}

function runView(r: LedgerRun): NonNullable<CanaryStatus['lastRun']> {
  return {
    id: r.id,
    at: r.at,
    outcome: r.outcome ?? 'unknown',
    spent: r.spent,
    ...(r.orderId ? { orderId: r.orderId } : {}),
    ...(r.detail ? { detail: r.detail } : {}),
    ...(r.durationMs !== undefined ? { durationMs: r.durationMs } : {}),
  };
}

/**
 * A run's outcome for the ledger and the metrics (see the header): approved only on the order's word (or, without
 * an order, the confirmation at the centre and the webhook's acceptance); an unknown send pauses the canary.
 */
export function judge(r: TestTransferResult): { outcome: CanaryOutcome; detail: string; pause?: string } {
  const unknownSend = r.report?.steps.some((s) => s.sent === 'unknown') === true;
  const check = `check the centre SIM${r.order ? ` and order ${r.order.trx_id}` : ''} before resuming`;
  if (r.verdict === 'unknown' || unknownSend || (r.verdict === 'interrupted' && r.spent)) {
    const detail = r.verdict === 'interrupted' ? `interrupted after sending: ${r.reason}` : r.reason;
    return { outcome: 'unknown', detail, pause: `run ended unknown (whether credit moved is not known): ${check}` };
  }
  if (r.verdict === 'approved') return { outcome: 'approved', detail: r.reason };
  if (r.verdict === 'refused')
    return {
      outcome: 'failed',
      detail: `${r.reason}: ${r.mismatch?.problems.join('; ') ?? ''}`,
      pause: `the reseller's order ${r.order?.trx_id ?? ''} did not match the request (nothing was dialled): do not pay it; check the reseller API before resuming`,
    };
  if (r.verdict === 'confirmed') {
    const webhook = r.report?.confirmation?.webhook;
    if (webhook?.state === 'delivered')
      return {
        outcome: 'approved',
        detail: `confirmed on ${r.centre?.name ?? r.to}; the webhook took it (${webhook.outcome ?? webhook.status ?? 'delivered'})`,
      };
    return {
      outcome: 'failed',
      detail: `confirmed on ${r.centre?.name ?? r.to}, but the webhook ${webhook ? `answered ${[webhook.state, webhook.outcome].filter(Boolean).join(', ')}` : 'did not answer in time'}`,
    };
  }
  if (r.verdict === 'timeout') return { outcome: 'timeout', detail: r.reason };
  return { outcome: 'failed', detail: r.reason };
}
