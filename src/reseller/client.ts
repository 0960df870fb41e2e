/**
 * Client of the convert-pulsa reseller API (rates, calculate, orders; header X-API-KEY) for the CLI only, never the
 * daemon's delivery path. Every call returns the parsed JSON of a 2xx or throws ResellerError (method, path, status,
 * body start). The API key never appears in an error, log or returned value. No retries (a retried POST /orders could
 * create two orders), no redirects, bounded time and body. pick() finds a field by a list of dot paths.
 */
import { httpRequest } from '../http/request.js';
import { maskSecretEchoes } from '../redact.js';

export interface ResellerClientOptions {
  /** `{base_url}`, ending in /api/v1/convert-pulsa. */
  baseUrl: string;
  apiKey: string;
  timeoutMs?: number;
  connectTimeoutMs?: number;
  userAgent: string;
}

export class ResellerError extends Error {
  override readonly name = 'ResellerError';
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly bodyStart: string | undefined,
  ) {
    super(message);
  }
}

export interface OrderRequest {
  operator_id: number;
  pulsa_amount: number;
  payout_method: string;
  payout_account_number: string;
  payout_account_name: string;
  sender_phone_number: string;
  webhook_url?: string;
}

const BODY_START = 300;
/** A rates list or an order is a few KiB; a body beyond this is not an answer of the API. */
const BODY_READ_LIMIT = 1024 * 1024;

/** Any echo of the key in a text the server wrote (the key in any case, URL-encoded, base64, or a run of it): redact.ts. */
export function maskSecret(text: string, secret: string): string {
  return maskSecretEchoes(text, secret);
}

export class ResellerClient {
  private readonly base: string;
  constructor(private readonly o: ResellerClientOptions) {
    this.base = o.baseUrl.trim().replace(/\/+$/, '');
  }

  rates(): Promise<unknown> {
    return this.call('GET', '/rates');
  }
  calculate(operatorId: number, pulsaAmount: number): Promise<unknown> {
    return this.call('POST', '/calculate', { operator_id: operatorId, pulsa_amount: pulsaAmount });
  }
  createOrder(req: OrderRequest): Promise<unknown> {
    return this.call('POST', '/orders', req);
  }
  async order(trxId: string): Promise<unknown> {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$/.test(trxId))
      throw new ResellerError(`not a transaction id: ${JSON.stringify(trxId)}`, undefined, undefined);
    return this.call('GET', `/orders/${encodeURIComponent(trxId)}`);
  }

  private async call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
    const what = `${method} ${path}`;
    const headers: Record<string, string> = {
      'x-api-key': this.o.apiKey,
      'user-agent': this.o.userAgent,
      accept: 'application/json',
    };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await httpRequest({
      method,
      url: this.base + path,
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      connectTimeoutMs: this.o.connectTimeoutMs ?? 5000,
      timeoutMs: this.o.timeoutMs ?? 15_000,
      maxBodyBytes: BODY_READ_LIMIT,
    });
    if (res.kind === 'timeout')
      throw new ResellerError(
        `${what}: ${maskSecret(`ETIMEDOUT: ${res.message}`, this.o.apiKey)}`,
        undefined,
        undefined,
      );
    if (res.kind === 'error')
      throw new ResellerError(
        `${what}: ${maskSecret(`${res.code}: ${res.message}`, this.o.apiKey)}`,
        undefined,
        undefined,
      );
    const text = maskSecret(res.body.toString('utf8'), this.o.apiKey);
    const start = text.slice(0, BODY_START);
    if (res.status < 200 || res.status > 299) {
      throw new ResellerError(`${what} answered ${res.status}${start ? `: ${start}` : ''}`, res.status, start);
    }
    if (res.truncated || res.cutShort !== undefined) {
      const why = res.truncated ? `more than ${BODY_READ_LIMIT} bytes` : `cut short (${res.cutShort})`;
      throw new ResellerError(`${what} answered ${res.status} with a body ${why}: ${start}`, res.status, start);
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new ResellerError(
        `${what} answered ${res.status} with a body that is not JSON: ${start}`,
        res.status,
        start,
      );
    }
  }
}

/** The value at a dot path (`data.order.trx_id`, `items.0.id`) or undefined. */
export function atPath(value: unknown, path: string): unknown {
  let cur: unknown = value;
  for (const key of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

/** The first string or number found at one of the paths, as a string; undefined when none holds one. */
export function pick(value: unknown, paths: readonly string[]): string | undefined {
  for (const p of paths) {
    const v = atPath(value, p);
    if (typeof v === 'string' && v.length > 0) return v;
    if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  }
  return undefined;
}

/** Default places to look for the order's fields (the document shows none); config paths go first. */
export const DEFAULT_ORDER_PATHS = Object.freeze({
  trxId: [
    'trx_id',
    'data.trx_id',
    'order.trx_id',
    'data.order.trx_id',
    'transaction_id',
    'data.transaction_id',
    'id',
    'data.id',
  ],
  ussdCode: [
    'ussd_code',
    'data.ussd_code',
    'order.ussd_code',
    'data.order.ussd_code',
    'ussd',
    'data.ussd',
    'transfer_code',
    'data.transfer_code',
  ],
  centerNumber: [
    'center_number',
    'data.center_number',
    'order.center_number',
    'data.order.center_number',
    'center_phone_number',
    'data.center_phone_number',
    'destination_number',
    'data.destination_number',
  ],
  status: ['status', 'data.status', 'order.status', 'data.order.status', 'state', 'data.state'],
  amount: [
    'pulsa_amount',
    'data.pulsa_amount',
    'order.pulsa_amount',
    'data.order.pulsa_amount',
    'amount',
    'data.amount',
  ],
});

export type OrderPaths = { [K in keyof typeof DEFAULT_ORDER_PATHS]: readonly string[] };

/** Config paths first, then the defaults. */
export function orderPaths(configured: Partial<OrderPaths> = {}): OrderPaths {
  const out = {} as Record<keyof OrderPaths, readonly string[]>;
  for (const k of Object.keys(DEFAULT_ORDER_PATHS) as (keyof OrderPaths)[]) {
    out[k] = [...(configured[k] ?? []), ...DEFAULT_ORDER_PATHS[k]];
  }
  return out;
}
