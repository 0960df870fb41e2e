/**
 * A small local stand-in for the convert-pulsa server's `POST {base}/webhook/sms-gateway`: checks the request the way
 * the real endpoint is documented (JSON body with exactly `sender` and `message`, Content-Type application/json, no
 * X-API-KEY), answers 200 with a JSON body, and reports what it parsed from each SMS. It can be told to fail the next
 * N requests (to show retries). Deduplicates by Idempotency-Key like a careful server would.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseOperatorSms, type OperatorSmsFacts } from './operator-sms.js';

export interface ReceivedSms {
  sender: string;
  message: string;
  idempotencyKey: string | undefined;
  headers: Record<string, string | string[] | undefined>;
  facts: OperatorSmsFacts;
  duplicate: boolean;
}

export interface DemoReceiver {
  baseUrl: string;
  received: ReceivedSms[];
  /** Answer the next `n` requests with `status` (e.g. 503) before accepting again. */
  failNext(n: number, status?: number): void;
  onSms(listener: (sms: ReceivedSms) => void): void;
  close(): Promise<void>;
}

const PATH = '/api/v1/convert-pulsa/webhook/sms-gateway';

export async function startDemoReceiver(): Promise<DemoReceiver> {
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
    if (req.method !== 'POST' || req.url !== PATH) return reply(404, { success: false, message: 'not found' });
    if (failures > 0) {
      failures--;
      return reply(failStatus, { success: false, message: 'temporarily unavailable (demo)' });
    }
    if (!String(req.headers['content-type'] ?? '').startsWith('application/json')) return reply(415, { success: false, message: 'content-type must be application/json' });
    if (req.headers['x-api-key'] !== undefined) return reply(400, { success: false, message: 'this endpoint takes no X-API-KEY' });
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return reply(400, { success: false, message: 'body is not JSON' });
    }
    const o = parsed as Record<string, unknown>;
    const keys = Object.keys(o ?? {}).sort().join(',');
    if (keys !== 'message,sender' || typeof o.sender !== 'string' || typeof o.message !== 'string') {
      return reply(422, { success: false, message: 'body must be {"sender": string, "message": string}' });
    }
    const key = typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : undefined;
    const duplicate = key !== undefined && seenKeys.has(key);
    if (key) seenKeys.add(key);
    const sms: ReceivedSms = { sender: o.sender, message: o.message, idempotencyKey: key, headers: req.headers, facts: parseOperatorSms(o.message), duplicate };
    received.push(sms);
    for (const l of listeners) l(sms);
    reply(200, { success: true, message: duplicate ? 'already processed' : 'sms accepted', data: sms.facts });
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
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
