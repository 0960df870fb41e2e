/**
 * `pulsa-bridge test-transfer`: sends credit from one modem's SIM to a centre SIM and watches it arrive; with --order
 * it goes through the reseller API (POST /orders, dial the returned code, poll the order). --dry-run sends nothing;
 * without --yes it asks first (and refuses when it cannot ask); Ctrl-C stops before the next step and prints what was
 * already sent. Exit 0 when confirmed, 1 otherwise, 2 for usage errors.
 */
import { summaryOf } from './command-list.js';
import { Command } from 'commander';
import { constants } from 'node:fs';
import { open, rename, stat, unlink } from 'node:fs/promises';
import { transferReportPath } from '../daemon/status-file.js';
import { errorMessage } from '../errors.js';
import { loadConfig, type Config } from '../config.js';
import { describeStep } from '../transfer/flows.js';
import { planTransfer, PlanError, type TransferAsk, type TransferPlan } from '../transfer/plan.js';
import type { StepReport } from '../transfer/runner.js';
import type { OrderInfo, TestTransferResult } from '../transfer/test-transfer.js';
import type { OpenOps } from './ops-target.js';
import { configOpener } from './target.js';
import { configPath, printJson, type Io } from './io.js';
import { CommandFailed, onStopSignal } from './lifecycle.js';
import { UsageError, wholeNumber } from './usage.js';
import { safeJson, safeText } from '../terminal-text.js';

/** TransferAsk's optional fields that the flags of the same names set (--from-number sets fromNumber). */
const ASKED = [
  'from',
  'to',
  'operator',
  'fromNumber',
  'order',
  'operatorId',
  'payoutMethod',
  'accountNumber',
  'accountName',
] as const;

/** commander's options: what is asked of planTransfer, and what only this command reads. */
type TransferOptions = Pick<TransferAsk, 'amount' | (typeof ASKED)[number]> & {
  config?: string;
  /** TransferAsk's timeoutSec. */
  timeout?: number;
  pollInterval?: number;
  dryRun?: boolean;
  yes?: boolean;
  json?: boolean;
};

/** What the command line asks: the options under TransferAsk's names, those not given left out. */
function transferAsk(opts: TransferOptions): TransferAsk {
  return {
    amount: opts.amount,
    ...pickDefined(opts, ASKED),
    ...(opts.timeout !== undefined ? { timeoutSec: opts.timeout } : {}),
  };
}

/** The commands this module adds to the program (cli.ts). */
export function commands(io: Io): Command[] {
  return [transferCommand(io, configOpener(io))];
}

export function transferCommand(io: Io, open: OpenOps): Command {
  return new Command('test-transfer')
    .description(summaryOf('test-transfer'))
    .option('-c, --config <file>', 'config file')
    .option('--from <modem>', 'sending modem (default: the only modem)')
    .option('--to <number|modem>', "the centre SIM's number, or the name of the modem it sits in (not with --order)")
    .requiredOption(
      '--amount <rupiah>',
      'credit to send, whole rupiah',
      wholeNumber('an amount in whole rupiah (>= 1)', 1),
    )
    .option(
      '--operator <key>',
      "operator flow (default: the sending modem's operator): telkomsel, indosat, xl, axis, smartfren or a configured one",
    )
    .option('--from-number <number>', "the sending SIM's number (default: modems[].number)")
    .option('--order', 'create an order through the reseller API and watch it until it leaves pending')
    .option(
      '--operator-id <n>',
      'order: operator id (default reseller.order.operatorId)',
      wholeNumber('an operator id (>= 1)', 1),
    )
    .option('--payout-method <name>', 'order: payout method (default reseller.order.payoutMethod)')
    .option('--account-number <n>', 'order: payout account number (default reseller.order.payoutAccountNumber)')
    .option('--account-name <name>', 'order: payout account name (default reseller.order.payoutAccountName)')
    .option(
      '--timeout <sec>',
      'wait this long for the confirmation and the order (default reseller.confirmTimeoutSec)',
      wholeNumber('seconds (>= 1)', 1),
    )
    .option(
      '--poll-interval <ms>',
      'order: poll GET /orders/{trx_id} this often (default 2000)',
      wholeNumber('milliseconds (>= 100)', 100),
    )
    .option('--dry-run', 'print every code and SMS it would send, send nothing')
    .option('-y, --yes', 'do not ask before moving real credit')
    .option('--json', 'print the report as JSON')
    .action(async (opts: TransferOptions) => {
      const config = await loadConfig(configPath(opts.config));
      await testTransfer(io, open, config, opts);
    });
}

/** The report beside status.json, for the status page (atomic; best effort: a spool not writable here is a note). */
async function keepReport(io: Io, config: Config, report: object, quiet: boolean): Promise<void> {
  const file = transferReportPath(config.spool.dir);
  // A fresh name opened O_CREAT|O_EXCL|O_NOFOLLOW: a file or symlink planted there by the spool's owner is refused,
  // never followed (this command may run as root). Run as root, the report gets the spool directory's owner and
  // group, so the daemon (the service user) can read it.
  const { randomBytes } = await import('node:crypto');
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    const fh = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o640);
    try {
      if (process.getuid?.() === 0) {
        const dir = await stat(config.spool.dir);
        await fh.chown(dir.uid, dir.gid);
      }
      await fh.writeFile(JSON.stringify(report));
    } finally {
      await fh.close();
    }
    await rename(tmp, file);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    // No spool directory here: no daemon has run on this config, so there is no status page to show the report.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    if (!quiet) io.err(`note: the report was not kept for the status page (${errorMessage(err)})\n`);
  }
}

async function testTransfer(io: Io, open: OpenOps, config: Config, opts: TransferOptions): Promise<void> {
  // Replies, SMS and order bodies come from the network and the reseller: control characters escaped.
  const out = (s: string) => !opts.json && io.out(safeText(s, { multiline: true }) + '\n');
  let plan: TransferPlan;
  try {
    plan = planTransfer(config, transferAsk(opts));
  } catch (err) {
    if (err instanceof PlanError) throw new UsageError(err.message, err.hint ? { hint: err.hint } : {});
    throw err;
  }
  const { from, fromNumber, flow, timeoutMs } = plan;
  const head = `test transfer: Rp ${opts.amount} from ${from.name}${fromNumber ? ` (${fromNumber})` : ''} ${plan.order ? 'through a reseller order' : `to ${plan.to}`}, ${flow.operator} flow`;
  if (opts.dryRun) {
    const plan2: string[] = [];
    if (plan.order) {
      plan2.push(
        `POST ${config.reseller.baseUrl ?? '{reseller.baseUrl}'}/orders ${JSON.stringify(plan.order)} (with X-API-KEY)`,
      );
      const ussd = flow.steps.find((s) => s.kind === 'ussd');
      plan2.push(
        `dial the USSD code the order returns on ${from.name}${ussd?.replies?.length ? `, then answer ${ussd.replies.map((r) => JSON.stringify(r)).join(', ')}` : ''} (an SMS-style code: the ${flow.operator} flow to the order's centre number)`,
      );
      plan2.push(
        `wait for the confirmation SMS when the order's centre number is a modem of this bridge, and poll GET /orders/{trx_id} until it leaves pending (up to ${timeoutMs / 1000} s)`,
      );
    } else {
      for (const s of plan.steps!) plan2.push(describeStep(s, from.name));
      plan2.push(
        plan.centre
          ? `wait up to ${timeoutMs / 1000} s for the confirmation SMS on ${plan.centre.name}`
          : `(the centre ${plan.to} is not a modem of this bridge: its confirmation is not watched)`,
      );
    }
    if (opts.json)
      printJson(io, { dryRun: true, from: from.name, amount: opts.amount, operator: flow.operator, plan: plan2 });
    else io.out(`${head}\ndry run: nothing is sent\n${plan2.map((p, i) => `  ${i + 1}. ${p}`).join('\n')}\n`);
    return;
  }
  // What a real run needs (the reseller client and node:http, the engine): loaded past the dry run.
  const [{ orderPaths }, { reportApiError, resellerClient }, { describeFlowSteps, isApproved, runTestTransfer }] =
    await Promise.all([
      import('../reseller/client.js'),
      import('./reseller.js'),
      import('../transfer/test-transfer.js'),
    ]);
  const reseller = plan.order
    ? { client: resellerClient(config), paths: orderPaths(config.reseller.orderPaths) }
    : undefined;
  if (!opts.yes) await confirm(io, `${head}. Real credit moves. Continue? [y/N] `);

  const abort = new AbortController();
  const offSignal = onStopSignal(() => abort.abort());
  let result: TestTransferResult;
  try {
    out(head);
    result = await runTestTransfer(plan, {
      modems: config.modems,
      open: (name) => open(config, name),
      ...(reseller ? { reseller } : {}),
      signal: abort.signal,
      note: out,
      onStep: (s) => out(formatStep(s)),
      ...(opts.pollInterval !== undefined ? { pollIntervalMs: opts.pollInterval } : {}),
    });
  } finally {
    offSignal();
  }
  const { order, report } = result;
  if (result.apiError !== undefined) reportApiError(io, result.apiError, opts.json);
  if (result.unreadable) {
    io.err(
      `error: the order response has no ${result.unreadable.missing.join(' and no ')}\nraw response:\n${safeJson(result.unreadable.raw, 2)}\n`,
    );
    throw new CommandFailed(result.reason);
  }
  if (result.mismatch && order) {
    io.err(
      `error: the order does not match what was asked; nothing was dialled\n` +
        `  asked:    Rp ${opts.amount} from ${fromNumber}, ${flow.operator} flow (${describeFlowSteps(flow.steps)})\n` +
        `  answered: order ${safeText(order.trx_id)}: code ${safeText(order.ussd_code)}, centre ${safeText(order.center_number ?? '(none)')}, amount ${safeText(order.amount ?? '(not given)')}\n` +
        result.mismatch.problems.map((p) => `  - ${safeText(p)}\n`).join('') +
        `hint: do not pay this order; check the reseller API (reseller.orderPaths if its fields are elsewhere) and cancel it there\n`,
    );
    throw new CommandFailed(`order ${order.trx_id} refused: it does not match the request; nothing was dialled`);
  }
  if (!report) throw new CommandFailed(result.reason);

  const toNumber = result.to;
  await keepReport(
    io,
    config,
    {
      at: new Date().toISOString(),
      from: from.name,
      to: toNumber ?? null,
      amount: opts.amount,
      operator: flow.operator,
      ...report,
    },
    opts.json === true,
  );
  if (opts.json)
    printJson(io, {
      from: from.name,
      to: toNumber ?? null,
      amount: opts.amount,
      operator: flow.operator,
      ...(order ? { order: orderView(order) } : {}),
      ...report,
    });
  if (!opts.json) {
    if (report.outcome === 'sent' && !result.centre && !order)
      out(`sent; the centre ${toNumber} is not a modem of this bridge: check its balance there`);
    const secs = (report.totalMs / 1000).toFixed(1);
    out(
      `result: ${order ? `order ${order.trx_id} ended ${order.final ?? 'pending (timed out)'} after ${secs} s (the transfer: ${report.outcome})` : `${report.outcome} after ${secs} s`}`,
    );
  }
  if (!result.ok) {
    const ranOk = report.outcome === 'confirmed' || (report.outcome === 'sent' && !result.centre);
    const already = report.sent.length ? `already sent: ${report.sent.join('; ')}` : 'nothing was sent';
    if (!ranOk && isApproved(order?.final)) {
      io.err(
        `WARNING: order ${order!.trx_id} says ${order!.final}, but this transfer's own step ${report.outcome === 'failed' ? 'failed' : `ended ${report.outcome}`}: the order was not approved by this transfer; check the order and the centre SIM by hand\n`,
      );
    }
    if (!opts.json || report.sent.length)
      io.err(
        `${already}\n${report.sent.length ? 'do not repeat this transfer before checking the centre SIM (and the order), or credit is sent twice\n' : ''}`,
      );
    const reason = `test transfer failed: ${safeText(result.reason)}`;
    io.err(`error: ${reason}\n`);
    throw new CommandFailed(reason);
  }
}

/** The order as `--json` has always shown it (the amount the answer named is in the mismatch report only). */
function orderView(order: OrderInfo): Omit<OrderInfo, 'amount'> {
  const { amount: _amount, ...view } = order;
  return view;
}

function pickDefined<T extends object, K extends keyof T>(o: T, keys: readonly K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

function formatStep(s: StepReport): string {
  const head = `  ${s.step}. ${s.description}: ${s.status.toUpperCase()} at +${(s.startMs / 1000).toFixed(2)} s (${(s.ms / 1000).toFixed(2)} s)`;
  const lines = [head, ...s.replies.map((r) => `     ${r.replace(/\s*\n\s*/g, ' / ')}`)];
  if (s.error) lines.push(`     ${s.error}`);
  return lines.join('\n');
}

async function confirm(io: Io, question: string): Promise<void> {
  const input = io.input ?? (process.stdin.isTTY ? process.stdin : undefined);
  if (!input)
    throw new UsageError('refusing to move real credit without a confirmation', {
      hint: 'pass --yes (or --dry-run to see what would be sent)',
    });
  io.out(question);
  const { createInterface } = await import('node:readline');
  const rl = createInterface({ input, terminal: false });
  const answer = await new Promise<string>((resolve) => {
    rl.once('line', resolve);
    rl.once('close', () => resolve(''));
  });
  rl.close();
  if (!/^y(es)?$/i.test(answer.trim())) throw new CommandFailed('not confirmed: nothing was sent');
}
