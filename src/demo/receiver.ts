/**
 * A local stand-in for the convert-pulsa server, for the demo and tests only: `POST {base}/webhook/sms-gateway`
 * checked as the real endpoint is documented, answered 200, deduplicated by Idempotency-Key, and able to fail the next
 * N requests; plus the reseller operations (rates, calculate, orders; X-API-KEY) from an OrderBook (orders.ts). An SMS
 * reaching the webhook approves the matching pending order, so a test transfer can be watched end to end.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseOperatorSms, type OperatorSmsFacts } from '../sms/operator-facts.js';
import { OrderBook, type StandinOrder } from './orders.js';

export interface ReceivedSms {
  sender: string;
  message: string;
  idempotencyKey: string | undefined;
  headers: Record<string, string | string[] | undefined>;
  facts: OperatorSmsFacts;
  duplicate: boolean;
  /** The order this SMS approved, if any. */
  approved: string | undefined;
}

export interface DemoReceiverOptions {
  /** The key the reseller operations require in X-API-KEY (default 'demo-key'). */
  apiKey?: string;
  orders?: OrderBook;
}

export interface DemoReceiver {
  baseUrl: string;
  received: ReceivedSms[];
  /** Answer the next `n` requests with `status` (e.g. 503) before accepting again. */
  failNext(n: number, status?: number): void;
  onSms(listener: (sms: ReceivedSms) => void): void;
  /** The stand-in's orders (reseller operations). */
  orders: OrderBook;
  apiKey: string;
  close(): Promise<void>;
}

const PREFIX = '/api/v1/convert-pulsa';
const PATH = `${PREFIX}/webhook/sms-gateway`;

export async function startDemoReceiver(options: DemoReceiverOptions = {}): Promise<DemoReceiver> {
  const orders = options.orders ?? new OrderBook();
  const apiKey = options.apiKey ?? 'demo-key';
  const received: ReceivedSms[] = [];
  const seenKeys = new Set<string>();
  const listeners: Array<(s: ReceivedSms) => void> = [];
  let failures = 0;
  let failStatus = 503;

  const handle = (req: IncomingMessage, res: ServerResponse, body: string) => {
    const reply = (status: number, payload: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(payload));
    };
    const url = (req.url ?? '').split('?')[0] ?? '';
    if (url !== PATH && url.startsWith(`${PREFIX}/`)) return reseller(req, url.slice(PREFIX.length), body, reply);
    if (req.method !== 'POST' || url !== PATH) return reply(404, { success: false, message: 'not found' });
    if (failures > 0) {
      failures--;
      return reply(failStatus, { success: false, message: 'temporarily unavailable (demo)' });
    }
    if (!String(req.headers['content-type'] ?? '').startsWith('application/json'))
      return reply(415, { success: false, message: 'content-type must be application/json' });
    if (req.headers['x-api-key'] !== undefined)
      return reply(400, { success: false, message: 'this endpoint takes no X-API-KEY' });
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return reply(400, { success: false, message: 'body is not JSON' });
    }
    const o = parsed as Record<string, unknown>;
    const keys = Object.keys(o ?? {})
      .sort()
      .join(',');
    if (keys !== 'message,sender' || typeof o.sender !== 'string' || typeof o.message !== 'string') {
      return reply(422, { success: false, message: 'body must be {"sender": string, "message": string}' });
    }
    const key = typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : undefined;
    const duplicate = key !== undefined && seenKeys.has(key);
    if (key) seenKeys.add(key);
    const approved: StandinOrder | undefined = duplicate ? undefined : orders.approveFromSms(o.message);
    const sms: ReceivedSms = {
      sender: o.sender,
      message: o.message,
      idempotencyKey: key,
      headers: req.headers,
      facts: parseOperatorSms(o.message),
      duplicate,
      approved: approved?.trx_id,
    };
    received.push(sms);
    for (const l of listeners) l(sms);
    reply(200, {
      success: true,
      message: duplicate ? 'already processed' : approved ? `order ${approved.trx_id} approved` : 'sms accepted',
      data: { ...sms.facts, ...(approved ? { trx_id: approved.trx_id } : {}) },
    });
  };

  const reseller = (
    req: IncomingMessage,
    path: string,
    body: string,
    reply: (status: number, payload: unknown) => void,
  ) => {
    if (req.headers['x-api-key'] !== apiKey)
      return reply(401, { success: false, message: 'invalid or missing X-API-KEY' });
    let json: unknown;
    if (req.method === 'POST') {
      try {
        json = JSON.parse(body);
      } catch {
        return reply(400, { success: false, message: 'body is not JSON' });
      }
    }
    const order = /^\/orders\/([^/]+)$/.exec(path);
    const r =
      req.method === 'GET' && path === '/rates'
        ? orders.rates()
        : req.method === 'POST' && path === '/calculate'
          ? orders.calculate(json)
          : req.method === 'POST' && path === '/orders'
            ? orders.createOrder(json)
            : req.method === 'GET' && order
              ? orders.order(decodeURIComponent(order[1]!))
              : { status: 404, body: { success: false, message: 'not found' } };
    reply(r.status, r.body);
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
    req.on('error', () => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/api/v1/convert-pulsa`,
    received,
    failNext: (n, status = 503) => {
      failures = n;
      failStatus = status;
    },
    onSms: (l) => listeners.push(l),
    orders,
    apiKey,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
