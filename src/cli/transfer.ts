/**
 * `pulsa-bridge test-transfer`: sends credit from one modem's SIM to a centre SIM and watches it arrive; with --order
 * it goes through the reseller API (POST /orders, dial the returned code, poll the order). --dry-run sends nothing;
 * without --yes it asks first (and refuses when it cannot ask); Ctrl-C stops before the next step and prints what was
 * already sent. Exit 0 when confirmed, 1 otherwise, 2 for usage errors.
 */
import { summaryOf } from './command-list.js';
import { Command } from 'commander';
import { createInterface } from 'node:readline';
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { open, rename, stat, unlink } from 'node:fs/promises';
import { transferReportPath } from '../daemon/status-file.js';
import { errorMessage } from '../errors.js';
import { loadConfig, type Config, type ModemConfig } from '../config.js';
import type { ModemOps } from '../ops/modem-ops.js';
import { orderPaths, pick, type ResellerClient } from '../reseller/client.js';
import {
  DEFAULT_FLOWS,
  describeStep,
  FlowError,
  nationalNumber,
  renderFlow,
  type FlowStep,
  type TransferFlow,
} from '../transfer/flows.js';
import { checkOrderAnswer } from '../transfer/order-check.js';
import { runTransfer, type StepReport, type TransferReport } from '../transfer/runner.js';
import { realClock } from '../transfer/sms-watch.js';
import type { OpenOps } from './ops-target.js';
import { configOpener } from './target.js';
import { configPath, printJson, type Io } from './io.js';
import { CommandFailed, onStopSignal } from './lifecycle.js';
import { reportApiError, resellerClient } from './reseller.js';
import { UsageError, wholeNumber } from './usage.js';
import { safeJson, safeText } from '../terminal-text.js';

interface TransferOptions {
  config?: string;
  from?: string;
  to?: string;
  amount: number;
  operator?: string;
  fromNumber?: string;
  order?: boolean;
  operatorId?: number;
  payoutMethod?: string;
  accountNumber?: string;
  accountName?: string;
  timeout?: number;
  pollInterval?: number;
  dryRun?: boolean;
  yes?: boolean;
  json?: boolean;
}

interface OrderInfo {
  trx_id: string;
  ussd_code: string;
  center_number: string | undefined;
  statuses: Array<{ status: string; afterMs: number }>;
  final?: string;
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

function modemByName(config: Config, name: string): ModemConfig | undefined {
  return config.modems.find((m) => m.name === name);
}

function sameNumber(a: string | undefined, b: string | undefined): boolean {
  if (!a || !b) return false;
  try {
    return nationalNumber(a) === nationalNumber(b);
  } catch {
    return false;
  }
}

async function testTransfer(io: Io, open: OpenOps, config: Config, opts: TransferOptions): Promise<void> {
  // Replies, SMS and order bodies come from the network and the reseller: control characters escaped.
  const out = (s: string) => !opts.json && io.out(safeText(s, { multiline: true }) + '\n');
  const from = opts.from ? modemByName(config, opts.from) : config.modems.length === 1 ? config.modems[0] : undefined;
  if (!from)
    throw new UsageError(
      opts.from
        ? `no modem named ${JSON.stringify(opts.from)} in the config`
        : 'which modem sends? several are configured',
      { hint: `pass --from with one of: ${config.modems.map((m) => m.name).join(', ')}` },
    );
  const fromNumber = opts.fromNumber ?? from.number;
  const key = opts.operator ?? from.operator;
  if (!key)
    throw new UsageError(`which operator flow? modem ${from.name} has no "operator"`, {
      hint: 'pass --operator telkomsel|indosat|xl|axis|smartfren, or set modems[].operator',
    });
  // Own keys only: `--operator toString` (or constructor) must not find an inherited value and take it for a flow.
  const configured = Object.hasOwn(config.reseller.flows, key) ? config.reseller.flows[key] : undefined;
  const flow: TransferFlow | undefined = configured
    ? { operator: configured.operator ?? key, steps: configured.steps }
    : Object.hasOwn(DEFAULT_FLOWS, key)
      ? DEFAULT_FLOWS[key]
      : undefined;
  if (!flow)
    throw new UsageError(`no transfer flow for operator ${JSON.stringify(key)}`, {
      hint: `known: ${[...new Set([...Object.keys(DEFAULT_FLOWS), ...Object.keys(config.reseller.flows)])].join(', ')}; add one under reseller.flows`,
    });
  const timeoutMs = (opts.timeout ?? config.reseller.confirmTimeoutSec) * 1000;
  const render = (to: string): FlowStep[] => {
    try {
      return renderFlow(flow, { to, amount: opts.amount });
    } catch (err) {
      if (err instanceof FlowError) throw new UsageError(err.message);
      throw err;
    }
  };

  let client: ResellerClient | undefined;
  let orderRequest: Parameters<ResellerClient['createOrder']>[0] | undefined;
  let steps: FlowStep[] | undefined;
  let centre: ModemConfig | undefined;
  let toNumber: string | undefined;
  if (opts.order) {
    if (opts.to) throw new UsageError('--to is not used with --order: the order names the centre number');
    if (!fromNumber)
      throw new UsageError(`the sending SIM's number is needed for the order (sender_phone_number)`, {
        hint: `set modems[].number for ${from.name}, or pass --from-number`,
      });
    const d = config.reseller.order;
    const need = <T>(v: T | undefined, what: string, flag: string, key2: string): T => {
      if (v === undefined)
        throw new UsageError(`the order needs ${what}`, {
          hint: `pass ${flag}, or set reseller.order.${key2} in the config`,
        });
      return v;
    };
    orderRequest = {
      operator_id: need(opts.operatorId ?? d.operatorId, 'an operator id', '--operator-id', 'operatorId'),
      pulsa_amount: opts.amount,
      payout_method: need(opts.payoutMethod ?? d.payoutMethod, 'a payout method', '--payout-method', 'payoutMethod'),
      payout_account_number: need(
        opts.accountNumber ?? d.payoutAccountNumber,
        'a payout account number',
        '--account-number',
        'payoutAccountNumber',
      ),
      payout_account_name: need(
        opts.accountName ?? d.payoutAccountName,
        'a payout account name',
        '--account-name',
        'payoutAccountName',
      ),
      sender_phone_number: nationalNumber(fromNumber),
    };
    client = opts.dryRun ? undefined : resellerClient(config);
  } else {
    if (!opts.to) throw new UsageError('where to? pass --to with the centre number or modem name (or --order)');
    const byName = modemByName(config, opts.to);
    if (byName && !byName.number)
      throw new UsageError(`modem ${byName.name} has no "number" in the config`, {
        hint: 'pass the centre number with --to instead',
      });
    toNumber = nationalNumber(byName?.number ?? opts.to);
    centre = byName ?? config.modems.find((m) => sameNumber(m.number, toNumber));
    steps = render(toNumber);
  }

  const head = `test transfer: Rp ${opts.amount} from ${from.name}${fromNumber ? ` (${fromNumber})` : ''} ${opts.order ? 'through a reseller order' : `to ${toNumber}`}, ${flow.operator} flow`;
  if (opts.dryRun) {
    const plan: string[] = [];
    if (orderRequest) {
      plan.push(
        `POST ${config.reseller.baseUrl ?? '{reseller.baseUrl}'}/orders ${JSON.stringify(orderRequest)} (with X-API-KEY)`,
      );
      const ussd = flow.steps.find((s) => s.kind === 'ussd');
      plan.push(
        `dial the USSD code the order returns on ${from.name}${ussd?.replies?.length ? `, then answer ${ussd.replies.map((r) => JSON.stringify(r)).join(', ')}` : ''} (an SMS-style code: the ${flow.operator} flow to the order's centre number)`,
      );
      plan.push(
        `wait for the confirmation SMS when the order's centre number is a modem of this bridge, and poll GET /orders/{trx_id} until it leaves pending (up to ${timeoutMs / 1000} s)`,
      );
    } else {
      for (const s of steps!) plan.push(describeStep(s, from.name));
      plan.push(
        centre
          ? `wait up to ${timeoutMs / 1000} s for the confirmation SMS on ${centre.name}`
          : `(the centre ${toNumber} is not a modem of this bridge: its confirmation is not watched)`,
      );
    }
    if (opts.json) printJson(io, { dryRun: true, from: from.name, amount: opts.amount, operator: flow.operator, plan });
    else io.out(`${head}\ndry run: nothing is sent\n${plan.map((p, i) => `  ${i + 1}. ${p}`).join('\n')}\n`);
    return;
  }
  if (!opts.yes) await confirm(io, `${head}. Real credit moves. Continue? [y/N] `);

  const abort = new AbortController();
  const offSignal = onStopSignal(() => abort.abort());
  const opened: ModemOps[] = [];
  let order: OrderInfo | undefined;
  let report: TransferReport | undefined;
  try {
    out(head);
    if (client && orderRequest) {
      const t0 = Date.now();
      let created: unknown;
      try {
        created = await client.createOrder(orderRequest);
      } catch (err) {
        reportApiError(io, err, opts.json);
      }
      const paths = orderPaths(config.reseller.orderPaths);
      const trx = pick(created, paths.trxId);
      const code = pick(created, paths.ussdCode);
      const centerNumber = pick(created, paths.centerNumber);
      if (!trx || !code) {
        const missing = [
          !trx ? `trx_id (looked at ${paths.trxId.join(', ')}; set reseller.orderPaths.trxId)` : '',
          !code ? `the USSD code (looked at ${paths.ussdCode.join(', ')}; set reseller.orderPaths.ussdCode)` : '',
        ].filter(Boolean);
        io.err(
          `error: the order response has no ${missing.join(' and no ')}\nraw response:\n${safeJson(created, 2)}\n`,
        );
        throw new CommandFailed('the order response could not be read; nothing was sent');
      }
      const answeredAmount = pick(created, paths.amount);
      order = {
        trx_id: trx,
        ussd_code: code,
        center_number: centerNumber,
        statuses: [{ status: pick(created, paths.status) ?? '?', afterMs: Date.now() - t0 }],
      };
      out(
        `order ${trx} created (${order.statuses[0]!.status}): code ${code}${centerNumber ? `, centre ${centerNumber}` : ''}${answeredAmount !== undefined ? `, amount ${answeredAmount}` : ''}`,
      );
      // Money moves only on what was asked: the answer is checked against the request, and what is dialled is the
      // flow rendered from the checked values (order-check.ts).
      const checked = checkOrderAnswer(
        flow,
        { amount: opts.amount },
        { code, centreNumber: centerNumber, amount: answeredAmount },
      );
      if (!checked.ok) {
        io.err(
          `error: the order does not match what was asked; nothing was dialled
` +
            `  asked:    Rp ${opts.amount} from ${fromNumber}, ${flow.operator} flow (${flow.steps.map((s) => (s.kind === 'ussd' ? s.code : s.kind === 'sms' ? `SMS "${s.text}" to ${s.to}` : `await SMS from ${s.from}`)).join(', ')})
` +
            `  answered: order ${safeText(trx)}: code ${safeText(code)}, centre ${safeText(centerNumber ?? '(none)')}, amount ${safeText(answeredAmount ?? '(not given)')}
` +
            checked.problems
              .map(
                (p) => `  - ${safeText(p)}
`,
              )
              .join('') +
            `hint: do not pay this order; check the reseller API (reseller.orderPaths if its fields are elsewhere) and cancel it there
`,
        );
        throw new CommandFailed(`order ${trx} refused: it does not match the request; nothing was dialled`);
      }
      steps = checked.steps;
      toNumber = checked.centre;
      centre = config.modems.find((m) => sameNumber(m.number, checked.centre));
    }
    const fromOps = await open(config, from.name);
    opened.push(fromOps);
    const centreOps = centre && centre.name !== from.name ? await open(config, centre.name) : undefined;
    if (centreOps) opened.push(centreOps);
    out(`via ${fromOps.path === 'daemon' ? 'the running daemon' : 'the serial port (no daemon running)'}`);
    report = await runTransfer({
      from: fromOps,
      steps: steps!,
      amount: opts.amount,
      ...(fromNumber ? { fromNumber } : {}),
      ...(centreOps ? { centre: centreOps } : {}),
      confirmTimeoutMs: timeoutMs,
      signal: abort.signal,
      onStep: (s) => out(formatStep(s)),
    });
    if (report.confirmation) {
      const c = report.confirmation;
      out(`confirmation on ${centre!.name} from ${c.sender}${c.spoolId ? `, spool id ${c.spoolId}` : ''}: ${c.text}`);
      if (c.webhook)
        out(
          `  webhook: ${[c.webhook.state, c.webhook.status, c.webhook.outcome].filter((x) => x !== undefined).join(', ')}${c.webhook.body ? `: ${c.webhook.body}` : ''}`,
        );
      else if (c.spoolId) out('  webhook: no answer reported yet (see `pulsa-bridge queue ls`)');
    }
    if (order && client && report.sent.length > 0 && report.outcome !== 'interrupted') {
      await pollOrder(client, order, config, opts, timeoutMs, abort.signal, out);
    }
  } finally {
    offSignal();
    for (const o of opened) await o.close().catch(() => undefined); // best effort: the outcome is already decided
  }

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
      ...(order ? { order } : {}),
      ...report,
    });
  // The run's own steps decide first: a failed, timed-out or interrupted step is never a success, whatever the order
  // says afterwards; an order counts only when its status is one that means approved.
  const ranOk = report.outcome === 'confirmed' || (report.outcome === 'sent' && !centre);
  const orderOk = order === undefined || (order.final !== undefined && APPROVED.test(order.final));
  if (!opts.json) {
    if (report.outcome === 'sent' && !centre && !order)
      out(`sent; the centre ${toNumber} is not a modem of this bridge: check its balance there`);
    const secs = (report.totalMs / 1000).toFixed(1);
    out(
      `result: ${order ? `order ${order.trx_id} ended ${order.final ?? 'pending (timed out)'} after ${secs} s (the transfer: ${report.outcome})` : `${report.outcome} after ${secs} s`}`,
    );
  }
  if (!ranOk || !orderOk) {
    const already = report.sent.length ? `already sent: ${report.sent.join('; ')}` : 'nothing was sent';
    if (!ranOk && order?.final !== undefined && APPROVED.test(order.final)) {
      io.err(
        `WARNING: order ${order.trx_id} says ${order.final}, but this transfer's own step ${report.outcome === 'failed' ? 'failed' : `ended ${report.outcome}`}: the order was not approved by this transfer; check the order and the centre SIM by hand\n`,
      );
    }
    if (!opts.json || report.sent.length)
      io.err(
        `${already}\n${report.sent.length ? 'do not repeat this transfer before checking the centre SIM (and the order), or credit is sent twice\n' : ''}`,
      );
    const what = !ranOk
      ? report.outcome === 'unknown'
        ? "the transfer ended unknown: the operator's reply (shown verbatim above) says neither that it went nor that it was refused"
        : `the transfer ${report.outcome}`
      : `order ${order?.trx_id} ${order?.final === undefined ? 'still pending' : `ended ${safeText(order.final)}`}`;
    const reason = `test transfer failed: ${what}${order && !ranOk ? ` (the order says ${safeText(order.final ?? 'pending')})` : ''}`;
    io.err(`error: ${reason}\n`);
    throw new CommandFailed(reason);
  }
}

/** Order statuses that mean approved (any other, or none, is not a success). */
const APPROVED = /^(approved|success|successful|succeeded|completed?|paid|done|settled)$/i;

async function pollOrder(
  client: ResellerClient,
  order: OrderInfo,
  config: Config,
  opts: TransferOptions,
  timeoutMs: number,
  signal: AbortSignal,
  out: (s: string) => void,
): Promise<void> {
  const paths = orderPaths(config.reseller.orderPaths);
  const t0 = Date.now();
  let last = order.statuses[order.statuses.length - 1]?.status;
  while (!signal.aborted) {
    let body: unknown;
    try {
      body = await client.order(order.trx_id);
    } catch (err) {
      out(`  GET /orders/${order.trx_id} failed: ${(err as Error).message}`);
      body = undefined;
    }
    const status = body === undefined ? undefined : pick(body, paths.status);
    if (body !== undefined && status === undefined)
      out(`  no status in the order (looked at ${paths.status.join(', ')}): ${JSON.stringify(body)}`);
    if (status !== undefined && status !== last) {
      order.statuses.push({ status, afterMs: Date.now() - t0 });
      out(`order ${order.trx_id}: ${last ?? '?'} -> ${status} (after ${((Date.now() - t0) / 1000).toFixed(1)} s)`);
      last = status;
    }
    if (status !== undefined && status.toLowerCase() !== 'pending') {
      order.final = status;
      return;
    }
    if (Date.now() - t0 > timeoutMs) {
      out(`order ${order.trx_id} still ${last ?? '?'} after ${timeoutMs / 1000} s`);
      return;
    }
    await realClock.sleep(opts.pollInterval ?? 2000, signal);
  }
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
  const rl = createInterface({ input, terminal: false });
  const answer = await new Promise<string>((resolve) => {
    rl.once('line', resolve);
    rl.once('close', () => resolve(''));
  });
  rl.close();
  if (!/^y(es)?$/i.test(answer.trim())) throw new CommandFailed('not confirmed: nothing was sent');
}
