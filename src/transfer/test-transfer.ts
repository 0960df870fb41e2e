/**
 * One whole test transfer, as `test-transfer` and the daemon's canaries run it. Through a reseller order: create it,
 * check its answer against the request (order-check.ts), dial the flow rendered from the checked values, then poll the
 * order until it leaves pending. Either way the steps run on the sending modem and the confirmation is awaited on the
 * centre modem when it is in this bridge (runner.ts). Money moves only on what was asked: an answer that does not match
 * dials nothing, and `beforeDial` (the canaries' ledger) runs after the check and before the first step: when it
 * throws, nothing is dialled. The verdict comes from the run's own steps first: a failed, timed-out, unknown or
 * interrupted step is never a success, whatever the order says; an order counts only with a status meaning approved.
 */
import { errorMessage } from '../errors.js';
import type { TransferOps } from '../ops/modem-ops.js';
import { pick, type OrderPaths, type ResellerClient } from '../reseller/client.js';
import type { FlowStep } from './flows.js';
import { checkOrderAnswer } from './order-check.js';
import { modemWithNumber, type PlanModem, type TransferPlan } from './plan.js';
import { runTransfer, type Confirmation, type StepReport, type TransferReport } from './runner.js';
import { realClock, type WatchClock } from './sms-watch.js';

export interface OrderInfo {
  trx_id: string;
  ussd_code: string;
  center_number: string | undefined;
  /** The amount the order's answer named, when it named one. */
  amount?: string;
  statuses: Array<{ status: string; afterMs: number }>;
  final?: string;
}

export interface TestTransferDeps {
  /** The modems of this bridge the run uses (the sender, and the centre when it is one of them). */
  modems: readonly PlanModem[];
  open(name: string): Promise<TransferOps>;
  /** With an order plan: the reseller API and where an order's fields are in its answers. */
  reseller?: { client: ResellerClient; paths: OrderPaths };
  signal?: AbortSignal;
  /** What happens, line by line (the CLI prints them, a canary logs them at debug). */
  note?: (line: string) => void;
  onStep?: (s: StepReport) => void;
  /** The confirmation must name the sending SIM's number (runner.ts). */
  strictConfirmation?: boolean;
  /** GET /orders/{trx_id} this often. Default 2000. */
  pollIntervalMs?: number;
  /** Once what is dialled is checked, before the first step; a throw dials nothing (the error is the run's end). */
  beforeDial?: (what: { to: string; orderId?: string }) => Promise<void>;
  clock?: WatchClock;
}

/** How the run ended. `approved` and `confirmed`/`sent` (no order) are successes; the rest are not. */
export type TestTransferVerdict =
  'approved' | 'confirmed' | 'sent' | 'refused' | 'failed' | 'timeout' | 'unknown' | 'interrupted';

export interface TestTransferResult {
  ok: boolean;
  verdict: TestTransferVerdict;
  /** One line: why it is not a success (or what succeeded). */
  reason: string;
  /** The centre's national number (from the plan, or the order once checked). */
  to?: string;
  centre?: PlanModem;
  order?: OrderInfo;
  report?: TransferReport;
  /** The order's answer did not match the request: nothing was dialled. */
  mismatch?: { problems: string[] };
  /** The reseller API failed (POST /orders): nothing was dialled. */
  apiError?: unknown;
  /** The order's answer lacks these fields: nothing was dialled. */
  unreadable?: { missing: string[]; raw: unknown };
  /** beforeDial refused: nothing was dialled. */
  held?: unknown;
  /** Something left the sending modem, or may have (an unknown send): it counts as spent. */
  spent: boolean;
}

/** Order statuses that mean approved (any other, or none, is not a success). */
const APPROVED = /^(approved|success|successful|succeeded|completed?|paid|done|settled)$/i;
export const isApproved = (status: string | undefined): boolean => status !== undefined && APPROVED.test(status);

export async function runTestTransfer(plan: TransferPlan, d: TestTransferDeps): Promise<TestTransferResult> {
  const note = d.note ?? (() => undefined);
  const clock = d.clock ?? realClock;
  let steps = plan.steps;
  let to = plan.to;
  let centre = plan.centre;
  let order: OrderInfo | undefined;
  const notDialled = (verdict: TestTransferVerdict, reason: string, extra: Partial<TestTransferResult> = {}) => ({
    ok: false,
    verdict,
    reason,
    spent: false,
    ...(to ? { to } : {}),
    ...(order ? { order } : {}),
    ...extra,
  });

  if (plan.order) {
    if (!d.reseller) throw new Error('an order plan needs the reseller API');
    const { client, paths } = d.reseller;
    const t0 = clock.now();
    let created: unknown;
    try {
      created = await client.createOrder(plan.order);
    } catch (err) {
      return notDialled('failed', `POST /orders failed: ${errorMessage(err)}; nothing was sent`, { apiError: err });
    }
    const trx = pick(created, paths.trxId);
    const code = pick(created, paths.ussdCode);
    const centreNumber = pick(created, paths.centerNumber);
    if (!trx || !code) {
      const missing = [
        !trx ? `trx_id (looked at ${paths.trxId.join(', ')}; set reseller.orderPaths.trxId)` : '',
        !code ? `the USSD code (looked at ${paths.ussdCode.join(', ')}; set reseller.orderPaths.ussdCode)` : '',
      ].filter(Boolean);
      return notDialled('failed', 'the order response could not be read; nothing was sent', {
        unreadable: { missing, raw: created },
      });
    }
    const amount = pick(created, paths.amount);
    order = {
      trx_id: trx,
      ussd_code: code,
      center_number: centreNumber,
      ...(amount !== undefined ? { amount } : {}),
      statuses: [{ status: pick(created, paths.status) ?? '?', afterMs: clock.now() - t0 }],
    };
    note(
      `order ${trx} created (${order.statuses[0]!.status}): code ${code}${centreNumber ? `, centre ${centreNumber}` : ''}${amount !== undefined ? `, amount ${amount}` : ''}`,
    );
    const checked = checkOrderAnswer(plan.flow, { amount: plan.amount }, { code, centreNumber, amount });
    if (!checked.ok)
      return notDialled('refused', `order ${trx} refused: it does not match the request; nothing was dialled`, {
        mismatch: { problems: checked.problems },
      });
    steps = checked.steps;
    to = checked.centre;
    centre = modemWithNumber(d.modems, checked.centre);
  }

  try {
    await d.beforeDial?.({ to: to!, ...(order ? { orderId: order.trx_id } : {}) });
  } catch (err) {
    return notDialled('failed', `not dialled: ${errorMessage(err)}`, { held: err });
  }

  const opened: TransferOps[] = [];
  let report: TransferReport;
  try {
    const fromOps = await d.open(plan.from.name);
    opened.push(fromOps);
    const centreOps = centre && centre.name !== plan.from.name ? await d.open(centre.name) : undefined;
    if (centreOps) opened.push(centreOps);
    note(`via ${fromOps.path === 'daemon' ? 'the running daemon' : 'the serial port (no daemon running)'}`);
    report = await runTransfer({
      from: fromOps,
      steps: steps!,
      amount: plan.amount,
      ...(plan.fromNumber ? { fromNumber: plan.fromNumber } : {}),
      ...(centreOps ? { centre: centreOps } : {}),
      confirmTimeoutMs: plan.timeoutMs,
      ...(d.strictConfirmation ? { strictConfirmation: true } : {}),
      ...(d.signal ? { signal: d.signal } : {}),
      ...(d.clock ? { clock: d.clock } : {}),
      ...(d.onStep ? { onStep: d.onStep } : {}),
    });
    if (report.confirmation) noteConfirmation(report.confirmation, centre!.name, note);
    if (order && d.reseller && report.sent.length > 0 && report.outcome !== 'interrupted')
      await pollOrder(d.reseller, order, plan.timeoutMs, d.pollIntervalMs ?? 2000, clock, note, d.signal);
  } finally {
    for (const o of opened) await o.close().catch(() => undefined); // best effort: the outcome is already decided
  }
  return verdictOf(report, order, to, centre);
}

function noteConfirmation(c: Confirmation, centre: string, note: (line: string) => void): void {
  note(`confirmation on ${centre} from ${c.sender}${c.spoolId ? `, spool id ${c.spoolId}` : ''}: ${c.text}`);
  if (c.webhook)
    note(
      `  webhook: ${[c.webhook.state, c.webhook.status, c.webhook.outcome].filter((x) => x !== undefined).join(', ')}${c.webhook.body ? `: ${c.webhook.body}` : ''}`,
    );
  else if (c.spoolId) note('  webhook: no answer reported yet (see `pulsa-bridge queue ls`)');
}

/** The verdict of a run that dialled (see the header). */
function verdictOf(
  report: TransferReport,
  order: OrderInfo | undefined,
  to: string | undefined,
  centre: PlanModem | undefined,
): TestTransferResult {
  const spent = report.steps.some((s) => s.sent !== 'not-sent');
  const base = { report, spent, ...(to ? { to } : {}), ...(centre ? { centre } : {}), ...(order ? { order } : {}) };
  const ranOk = report.outcome === 'confirmed' || (report.outcome === 'sent' && !centre);
  if (!ranOk) {
    const what =
      report.outcome === 'unknown'
        ? "the transfer ended unknown: the operator's reply (shown verbatim above) says neither that it went nor that it was refused"
        : `the transfer ${report.outcome}`;
    const says = order ? ` (the order says ${order.final ?? 'pending'})` : '';
    const why = report.steps.at(-1)?.error;
    const verdict = report.outcome === 'sent' || report.outcome === 'confirmed' ? 'failed' : report.outcome;
    return { ...base, ok: false, verdict, reason: `${what}${says}${why ? `: ${why}` : ''}` };
  }
  if (!order) return { ...base, ok: true, verdict: report.outcome, reason: `the transfer ${report.outcome}` };
  if (isApproved(order.final))
    return { ...base, ok: true, verdict: 'approved', reason: `order ${order.trx_id} ${order.final}` };
  if (order.final === undefined)
    return { ...base, ok: false, verdict: 'timeout', reason: `order ${order.trx_id} still pending` };
  return { ...base, ok: false, verdict: 'failed', reason: `order ${order.trx_id} ended ${order.final}` };
}

async function pollOrder(
  api: { client: ResellerClient; paths: OrderPaths },
  order: OrderInfo,
  timeoutMs: number,
  intervalMs: number,
  clock: WatchClock,
  note: (line: string) => void,
  signal: AbortSignal | undefined,
): Promise<void> {
  const t0 = clock.now();
  let last = order.statuses[order.statuses.length - 1]?.status;
  while (!signal?.aborted) {
    let body: unknown;
    try {
      body = await api.client.order(order.trx_id);
    } catch (err) {
      note(`  GET /orders/${order.trx_id} failed: ${errorMessage(err)}`);
      body = undefined;
    }
    const status = body === undefined ? undefined : pick(body, api.paths.status);
    if (body !== undefined && status === undefined)
      note(`  no status in the order (looked at ${api.paths.status.join(', ')}): ${JSON.stringify(body)}`);
    if (status !== undefined && status !== last) {
      order.statuses.push({ status, afterMs: clock.now() - t0 });
      note(`order ${order.trx_id}: ${last ?? '?'} -> ${status} (after ${((clock.now() - t0) / 1000).toFixed(1)} s)`);
      last = status;
    }
    if (status !== undefined && status.toLowerCase() !== 'pending') {
      order.final = status;
      return;
    }
    if (clock.now() - t0 > timeoutMs) {
      note(`order ${order.trx_id} still ${last ?? '?'} after ${timeoutMs / 1000} s`);
      return;
    }
    await clock.sleep(intervalMs, signal);
  }
}

/** The flow's steps as one line, for the mismatch report. */
export function describeFlowSteps(steps: readonly FlowStep[] | TransferPlan['flow']['steps']): string {
  return steps
    .map((s) =>
      s.kind === 'ussd' ? s.code : s.kind === 'sms' ? `SMS "${s.text}" to ${s.to}` : `await SMS from ${s.from}`,
    )
    .join(', ');
}
