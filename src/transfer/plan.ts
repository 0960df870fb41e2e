/**
 * One test transfer's plan, made before anything moves (PURE): the sending modem and its number, the operator's flow
 * (configured under reseller.flows, else a default), the amount, the time it may take, and either the reseller order to
 * create (the order names the centre) or the centre (a number, or a modem of this bridge) with the rendered steps.
 * `test-transfer` and the daemon's canaries plan the same way; a plan that cannot be made throws PlanError with a
 * hint (the CLI shows it as a usage error, the config check as a problem of the canary).
 */
import type { OrderRequest } from '../reseller/client.js';
import {
  DEFAULT_FLOWS,
  FlowError,
  nationalNumber,
  renderFlow,
  type FlowStep,
  type FlowStepTemplate,
  type TransferFlow,
} from './flows.js';

/** What a plan reads of a configured modem. */
export interface PlanModem {
  name: string;
  number?: string;
  operator?: string;
}

/** What a plan reads of the config (the Config type fits it). */
export interface PlanConfig {
  modems: readonly PlanModem[];
  reseller: {
    flows: Readonly<Record<string, { operator?: string; steps: readonly FlowStepTemplate[] }>>;
    order: { operatorId?: number; payoutMethod?: string; payoutAccountNumber?: string; payoutAccountName?: string };
    confirmTimeoutSec: number;
  };
}

/** What was asked (the command line's options, or a canary's config). */
export interface TransferAsk {
  from?: string;
  /** The centre SIM's number or modem name (not with `order`). */
  to?: string;
  amount: number;
  operator?: string;
  fromNumber?: string;
  order?: boolean;
  operatorId?: number;
  payoutMethod?: string;
  accountNumber?: string;
  accountName?: string;
  timeoutSec?: number;
}

export interface TransferPlan {
  from: PlanModem;
  fromNumber?: string;
  flow: TransferFlow;
  amount: number;
  /** How long the confirmation and the order may take. */
  timeoutMs: number;
  /** Through a reseller order: what POST /orders sends. */
  order?: OrderRequest;
  /** A plain transfer: the centre's national number, its modem when it is in this bridge, the steps. */
  to?: string;
  centre?: PlanModem;
  steps?: FlowStep[];
}

export class PlanError extends Error {
  override readonly name = 'PlanError';
  constructor(
    message: string,
    readonly hint?: string,
  ) {
    super(message);
  }
}

export function sameNumber(a: string | undefined, b: string | undefined): boolean {
  if (!a || !b) return false;
  try {
    return nationalNumber(a) === nationalNumber(b);
  } catch {
    return false;
  }
}

/** The modem of this bridge whose SIM has `number`, if any. */
export function modemWithNumber<M extends PlanModem>(modems: readonly M[], number: string): M | undefined {
  return modems.find((m) => sameNumber(m.number, number));
}

/** The flow of an operator key: configured (own keys only: `toString` is no flow), else a default. */
export function flowFor(config: PlanConfig, key: string): TransferFlow | undefined {
  const configured = Object.hasOwn(config.reseller.flows, key) ? config.reseller.flows[key] : undefined;
  if (configured) return { operator: configured.operator ?? key, steps: configured.steps };
  return Object.hasOwn(DEFAULT_FLOWS, key) ? DEFAULT_FLOWS[key] : undefined;
}

export function planTransfer(config: PlanConfig, ask: TransferAsk): TransferPlan {
  const byName = (name: string) => config.modems.find((m) => m.name === name);
  const from = ask.from ? byName(ask.from) : config.modems.length === 1 ? config.modems[0] : undefined;
  if (!from)
    throw new PlanError(
      ask.from
        ? `no modem named ${JSON.stringify(ask.from)} in the config`
        : 'which modem sends? several are configured',
      `pass --from with one of: ${config.modems.map((m) => m.name).join(', ')}`,
    );
  const fromNumber = ask.fromNumber ?? from.number;
  const key = ask.operator ?? from.operator;
  if (!key)
    throw new PlanError(
      `which operator flow? modem ${from.name} has no "operator"`,
      'pass --operator telkomsel|indosat|xl|axis|smartfren, or set modems[].operator',
    );
  const flow = flowFor(config, key);
  if (!flow)
    throw new PlanError(
      `no transfer flow for operator ${JSON.stringify(key)}`,
      `known: ${[...new Set([...Object.keys(DEFAULT_FLOWS), ...Object.keys(config.reseller.flows)])].join(', ')}; add one under reseller.flows`,
    );
  const timeoutMs = (ask.timeoutSec ?? config.reseller.confirmTimeoutSec) * 1000;
  const base = { from, flow, amount: ask.amount, timeoutMs, ...(fromNumber ? { fromNumber } : {}) };

  if (ask.order) {
    if (ask.to) throw new PlanError('--to is not used with --order: the order names the centre number');
    if (!fromNumber)
      throw new PlanError(
        `the sending SIM's number is needed for the order (sender_phone_number)`,
        `set modems[].number for ${from.name}, or pass --from-number`,
      );
    const d = config.reseller.order;
    const need = <T>(value: T | undefined, what: string, flag: string, field: string): T => {
      if (value === undefined)
        throw new PlanError(`the order needs ${what}`, `pass ${flag}, or set reseller.order.${field} in the config`);
      return value;
    };
    const order: OrderRequest = {
      operator_id: need(ask.operatorId ?? d.operatorId, 'an operator id', '--operator-id', 'operatorId'),
      pulsa_amount: ask.amount,
      payout_method: need(ask.payoutMethod ?? d.payoutMethod, 'a payout method', '--payout-method', 'payoutMethod'),
      payout_account_number: need(
        ask.accountNumber ?? d.payoutAccountNumber,
        'a payout account number',
        '--account-number',
        'payoutAccountNumber',
      ),
      payout_account_name: need(
        ask.accountName ?? d.payoutAccountName,
        'a payout account name',
        '--account-name',
        'payoutAccountName',
      ),
      sender_phone_number: numberOrPlanError(fromNumber),
    };
    return { ...base, order };
  }
  if (!ask.to) throw new PlanError('where to? pass --to with the centre number or modem name (or --order)');
  const named = byName(ask.to);
  if (named && !named.number)
    throw new PlanError(
      `modem ${named.name} has no "number" in the config`,
      'pass the centre number with --to instead',
    );
  const to = numberOrPlanError(named?.number ?? ask.to);
  const centre = named ?? modemWithNumber(config.modems, to);
  let steps: FlowStep[];
  try {
    steps = renderFlow(flow, { to, amount: ask.amount });
  } catch (err) {
    if (err instanceof FlowError) throw new PlanError(err.message);
    throw err;
  }
  return { ...base, to, steps, ...(centre ? { centre } : {}) };
}

function numberOrPlanError(raw: string): string {
  try {
    return nationalNumber(raw);
  } catch (err) {
    if (err instanceof FlowError) throw new PlanError(err.message);
    throw err;
  }
}
