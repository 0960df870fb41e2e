/**
 * The order book of the local convert-pulsa stand-in (demo and tests only, not a product): operators and rates,
 * estimates, orders with `CVT-<yyyymmdd>-<code>` ids, and the approval of a pending order by an operator SMS, the
 * way the service's API document describes it (amount, sender number and `SN:` serial found in the text).
 * PURE apart from the injected clock and id source; the HTTP routes live in receiver.ts.
 */
import { parseOperatorSms } from '../sms/operator-facts.js';

export interface StandinOperator {
  operator_id: number;
  name: string;
  rate: number;
  min_amount: number;
  max_amount: number;
  payout_methods: string[];
  /** The centre SIM's number (national form) and the USSD template the order returns. */
  center_number: string;
  ussd_template: string;
}

export interface StandinOrder {
  trx_id: string;
  status: 'pending' | 'approved';
  operator_id: number;
  pulsa_amount: number;
  receive_amount: number;
  payout_method: string;
  payout_account_number: string;
  payout_account_name: string;
  sender_phone_number: string;
  center_number: string;
  ussd_code: string;
  created_at: string;
  approved_at?: string;
  sms_serial?: string;
}

export type StandinResult = { status: number; body: unknown };

export const STANDIN_OPERATORS: readonly StandinOperator[] = [
  {
    operator_id: 1,
    name: 'Telkomsel',
    rate: 0.85,
    min_amount: 5000,
    max_amount: 1_000_000,
    payout_methods: ['DANA', 'OVO', 'BCA'],
    center_number: '081200000001',
    ussd_template: '*858*{to}*{amount}#',
  },
  {
    operator_id: 2,
    name: 'Indosat',
    rate: 0.8,
    min_amount: 10000,
    max_amount: 500_000,
    payout_methods: ['DANA', 'OVO'],
    center_number: '085600000001',
    ussd_template: 'TRANSFERPULSA {to} {amount}',
  },
  {
    operator_id: 3,
    name: 'XL',
    rate: 0.8,
    min_amount: 10000,
    max_amount: 500_000,
    payout_methods: ['DANA'],
    center_number: '081700000001',
    ussd_template: 'BAGI {to} {amount}',
  },
];

function normalise62(n: string): string {
  const d = n.replace(/\D/g, '');
  return d.startsWith('0') ? `62${d.slice(1)}` : d;
}

export class OrderBook {
  readonly orders = new Map<string, StandinOrder>();
  readonly operators: StandinOperator[];
  constructor(
    operators: readonly StandinOperator[] = STANDIN_OPERATORS,
    private readonly now: () => Date = () => new Date(),
    private readonly code: () => string = () => Math.random().toString(36).slice(2, 7).toUpperCase(),
  ) {
    this.operators = operators.map((o) => ({ ...o }));
  }

  rates(): StandinResult {
    return {
      status: 200,
      body: { success: true, data: this.operators.map(({ ussd_template: _t, center_number: _c, ...pub }) => pub) },
    };
  }

  calculate(body: unknown): StandinResult {
    const b = body as Record<string, unknown>;
    const op = this.operators.find((o) => o.operator_id === b?.operator_id);
    if (!op) return { status: 422, body: { success: false, message: 'unknown operator_id' } };
    const amount = b.pulsa_amount;
    if (typeof amount !== 'number' || !Number.isSafeInteger(amount))
      return { status: 422, body: { success: false, message: 'pulsa_amount must be an integer' } };
    if (amount < op.min_amount || amount > op.max_amount) {
      return {
        status: 422,
        body: { success: false, message: `pulsa_amount must be between ${op.min_amount} and ${op.max_amount}` },
      };
    }
    return {
      status: 200,
      body: {
        success: true,
        data: {
          operator_id: op.operator_id,
          pulsa_amount: amount,
          rate: op.rate,
          receive_amount: Math.floor(amount * op.rate),
        },
      },
    };
  }

  createOrder(body: unknown): StandinResult {
    const calc = this.calculate(body);
    if (calc.status !== 200) return calc;
    const b = body as Record<string, unknown>;
    for (const f of ['payout_method', 'payout_account_number', 'payout_account_name', 'sender_phone_number'] as const) {
      if (typeof b[f] !== 'string' || (b[f] as string).length === 0)
        return { status: 422, body: { success: false, message: `${f} is required (a string)` } };
    }
    const op = this.operators.find((o) => o.operator_id === b.operator_id)!;
    if (!op.payout_methods.includes(b.payout_method as string))
      return {
        status: 422,
        body: { success: false, message: `payout_method must be one of ${op.payout_methods.join(', ')}` },
      };
    const now = this.now();
    const date = now.toISOString().slice(0, 10).replace(/-/g, '');
    let trx: string;
    do trx = `CVT-${date}-${this.code()}`;
    while (this.orders.has(trx));
    const amount = b.pulsa_amount as number;
    const order: StandinOrder = {
      trx_id: trx,
      status: 'pending',
      operator_id: op.operator_id,
      pulsa_amount: amount,
      receive_amount: Math.floor(amount * op.rate),
      payout_method: b.payout_method as string,
      payout_account_number: b.payout_account_number as string,
      payout_account_name: b.payout_account_name as string,
      sender_phone_number: b.sender_phone_number as string,
      center_number: op.center_number,
      ussd_code: op.ussd_template.replace('{to}', op.center_number).replace('{amount}', String(amount)),
      created_at: now.toISOString(),
    };
    this.orders.set(trx, order);
    return { status: 201, body: { success: true, data: order } };
  }

  order(trxId: string): StandinResult {
    const o = this.orders.get(trxId);
    return o
      ? { status: 200, body: { success: true, data: o } }
      : { status: 404, body: { success: false, message: 'order not found' } };
  }

  /** An operator SMS reached the webhook: approve the oldest pending order with the same amount and sender number. */
  approveFromSms(message: string): StandinOrder | undefined {
    const facts = parseOperatorSms(message);
    if (facts.amount === undefined || facts.senderNumber === undefined) return undefined;
    for (const o of this.orders.values()) {
      if (o.status !== 'pending' || o.pulsa_amount !== facts.amount) continue;
      if (normalise62(o.sender_phone_number) !== facts.senderNumber) continue;
      o.status = 'approved';
      o.approved_at = this.now().toISOString();
      if (facts.serial !== undefined) o.sms_serial = facts.serial;
      return o;
    }
    return undefined;
  }
}
