import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startDemoReceiver, type DemoReceiver } from '../../src/demo/receiver.js';
import { OrderBook } from '../../src/demo/orders.js';
import {
  atPath,
  DEFAULT_ORDER_PATHS,
  orderPaths,
  pick,
  ResellerClient,
  ResellerError,
} from '../../src/reseller/client.js';

const KEY = 'sk-live-0123456789';
let stand: DemoReceiver | undefined;
let other: Server | undefined;
afterEach(async () => {
  await stand?.close();
  stand = undefined;
  if (other) await new Promise((r) => other!.close(r));
  other = undefined;
});

async function client(key = KEY, timeoutMs?: number) {
  stand = await startDemoReceiver({
    apiKey: KEY,
    orders: new OrderBook(
      undefined,
      () => new Date('2026-11-24T05:00:00Z'),
      () => 'AB12C',
    ),
  });
  return new ResellerClient({
    baseUrl: stand.baseUrl + '/',
    apiKey: key,
    userAgent: 'test',
    ...(timeoutMs ? { timeoutMs } : {}),
  });
}

async function rawServer(handler: Parameters<typeof createServer>[1]) {
  other = createServer(handler);
  await new Promise<void>((r) => other!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(other.address() as AddressInfo).port}/api/v1/convert-pulsa`;
}

describe('ResellerClient against the local stand-in over real HTTP', () => {
  it('lists rates, calculates, creates an order and reads it back; an SMS at the webhook approves it', async () => {
    const c = await client();
    const rates = (await c.rates()) as { data: Array<{ operator_id: number; name: string }> };
    expect(rates.data.map((r) => r.name)).toContain('Telkomsel');
    expect(atPath(await c.calculate(1, 10000), 'data.receive_amount')).toBe(8500);
    const created = await c.createOrder({
      operator_id: 1,
      pulsa_amount: 10000,
      payout_method: 'DANA',
      payout_account_number: '08111',
      payout_account_name: 'Budi',
      sender_phone_number: '081234567890',
    });
    const paths = orderPaths();
    expect(pick(created, paths.trxId)).toBe('CVT-20261124-AB12C');
    expect(pick(created, paths.ussdCode)).toBe('*858*081200000001*10000#');
    expect(pick(created, paths.centerNumber)).toBe('081200000001');
    expect(pick(await c.order('CVT-20261124-AB12C'), paths.status)).toBe('pending');
    const res = await fetch(`${stand!.baseUrl}/webhook/sms-gateway`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        sender: '858',
        message: 'Anda mendapatkan penambahan pulsa Rp 10.000 dari nomor 6281234567890 tgl 2026-11-24. SN: 991',
      }),
    });
    expect(res.status).toBe(200);
    expect(pick(await c.order('CVT-20261124-AB12C'), paths.status)).toBe('approved');
    expect(stand!.received[0]!.approved).toBe('CVT-20261124-AB12C');
  });

  it('a wrong key: 401 with status and body, and the key never in the message', async () => {
    const c = await client('sk-wrong-9876543210');
    const err = await c.rates().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ResellerError);
    expect((err as ResellerError).status).toBe(401);
    expect((err as ResellerError).message).toMatch(/^GET \/rates answered 401: .*X-API-KEY/);
    expect((err as ResellerError).message).not.toContain('sk-wrong');
  });

  it('a 422 from the service carries its body', async () => {
    const c = await client();
    await expect(c.calculate(1, 10)).rejects.toThrow(/POST \/calculate answered 422: .*between 5000 and 1000000/);
    await expect(c.order('CVT-20990101-NOPE')).rejects.toMatchObject({ status: 404 });
    await expect(c.order('../rates')).rejects.toThrow(/not a transaction id/);
    await expect(c.order('..')).rejects.toThrow(/not a transaction id/);
  });

  it('masks the key when a server echoes it, and reports non-JSON and 5xx', async () => {
    const base = await rawServer((req, res) => {
      if (req.url?.endsWith('/rates')) {
        res.writeHead(500);
        res.end(`boom for key ${String(req.headers['x-api-key'])}`);
      } else {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html>login</html>');
      }
    });
    const c = new ResellerClient({ baseUrl: base, apiKey: KEY, userAgent: 't' });
    const err = (await c.rates().catch((e: unknown) => e)) as ResellerError;
    expect(err.message).toBe('GET /rates answered 500: boom for key ***');
    expect(err.bodyStart).not.toContain(KEY);
    await expect(c.calculate(1, 1)).rejects.toThrow(/answered 200 with a body that is not JSON: <html>login<\/html>/);
  });

  it('a hanging server times out with a clear error', async () => {
    const base = await rawServer(() => {
      /* never answers */
    });
    const c = new ResellerClient({ baseUrl: base, apiKey: KEY, userAgent: 't', timeoutMs: 300 });
    const err = (await c.rates().catch((e: unknown) => e)) as ResellerError;
    expect(err).toBeInstanceOf(ResellerError);
    expect(err.status).toBeUndefined();
    expect(err.message).toMatch(/^GET \/rates: ETIMEDOUT/);
  });
});

describe('pick and orderPaths', () => {
  it('finds strings and numbers by the first matching path, configured paths first', () => {
    const body = { result: { order_code: 'CVT-1-X', id: 7 }, data: { trx_id: 'CVT-2-Y' } };
    expect(pick(body, orderPaths().trxId)).toBe('CVT-2-Y');
    expect(pick(body, orderPaths({ trxId: ['result.order_code'] }).trxId)).toBe('CVT-1-X');
    expect(pick(body, ['result.id'])).toBe('7');
    expect(pick(body, ['result.missing', 'nope.deeper'])).toBeUndefined();
    expect(pick({ status: '' }, DEFAULT_ORDER_PATHS.status)).toBeUndefined();
  });
});
