import { describe, it, expect, afterEach } from 'vitest';
import { createHmac } from 'node:crypto';
import { WebhookClient, webhookUrl } from '../../src/forward/webhook.js';
import { ConfigError } from '../../src/errors.js';
import { makeSms } from '../spool/helpers.js';
import { until } from '../support/until.js';
import { hang, refusedPort, reply, startServer, type TestServer } from './server.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const client = (url: string, over: Partial<ConstructorParameters<typeof WebhookClient>[0]> = {}) =>
  new WebhookClient({ url, userAgent: 'pulsa-bridge/0.1.0 (test)', timeoutMs: 2000, connectTimeoutMs: 1000, ...over });

describe('WebhookClient.post against a real local server', () => {
  it('sends the exact JSON body and the bridge headers, and no X-API-KEY', async () => {
    server = await startServer([reply(200, '{"ok":true}')]);
    const rec = makeSms('sim-510100123456789.858.abc123', {
      text: 'Anda menerima Pulsa "Rp7.000"\nSN: 123 – ✓',
      sender: 'TELKOMSEL',
    });
    const out = await client(server.url, {
      headers: { Authorization: 'Bearer s3cret', 'X-API-KEY': 'must-not-leak' },
    }).post(rec);

    expect(out).toEqual({ kind: 'http', status: 200, bodyStart: '{"ok":true}' });
    const [req] = server.requests;
    expect(req!.method).toBe('POST');
    expect(req!.url).toBe('/api/v1/convert-pulsa/webhook/sms-gateway');
    expect(req!.body.equals(Buffer.from(JSON.stringify({ sender: 'TELKOMSEL', message: rec.text }), 'utf8'))).toBe(
      true,
    );
    expect(req!.headers).toMatchObject({
      'content-type': 'application/json',
      'idempotency-key': 'sim-510100123456789.858.abc123',
      'user-agent': 'pulsa-bridge/0.1.0 (test)',
      'x-pulsa-bridge-modem': 'telkomsel-1',
      'x-pulsa-bridge-sc-timestamp': '2018-01-08T10:15:30+07:00',
      authorization: 'Bearer s3cret',
    });
    expect(req!.headers['x-api-key']).toBeUndefined();
    expect(req!.headers['x-pulsa-bridge-incomplete']).toBeUndefined();
    expect(req!.headers['x-signature']).toBeUndefined();
  });

  it('marks an incomplete multipart message with the parts it has', async () => {
    server = await startServer([reply(200)]);
    const multipart = { reference: 7, referenceBits: 8 as const, total: 3, received: [1, 3], complete: false };
    await client(server.url).post(makeSms('mp1', { multipart }));
    await client(server.url).post(makeSms('mp2', { multipart: { ...multipart, received: [1, 2, 3], complete: true } }));
    expect(server.requests[0]!.headers).toMatchObject({
      'x-pulsa-bridge-incomplete': 'true',
      'x-pulsa-bridge-parts': '2/3',
    });
    expect(server.requests[1]!.headers['x-pulsa-bridge-incomplete']).toBeUndefined();
    expect(server.requests[1]!.headers['x-pulsa-bridge-parts']).toBeUndefined();
  });

  it('signs the timestamp, Idempotency-Key, modem, parts and body (v2) so the receiver can verify it', async () => {
    server = await startServer([reply(200)]);
    const secret = 'webhook-shared-secret';
    await client(server.url, { hmacSecret: secret, clock: () => new Date('2024-05-01T00:00:00.900Z') }).post(
      makeSms('h1'),
    );
    const req = server.requests[0]!;
    expect(req.headers['x-timestamp']).toBe('1714521600');
    // Built here by hand from the documented string, not with the module's own function.
    const signed = Buffer.concat([Buffer.from('pulsa-bridge-v2\n1714521600\nh1\ntelkomsel-1\n\n'), req.body]);
    expect(req.headers['x-signature']).toBe(`v2=${createHmac('sha256', secret).update(signed).digest('hex')}`);
    expect(req.headers['x-signature']).not.toBe(`v2=${createHmac('sha256', 'other').update(signed).digest('hex')}`);
    expect(req.headers['x-pulsa-bridge-simulated']).toBeUndefined();
  });

  it('returns 4xx/5xx as outcomes with the first 200 characters of the body and Retry-After', async () => {
    const long = `invalid sender ${'x'.repeat(400)}`;
    server = await startServer([reply(400, long), reply(429, 'slow down', { 'retry-after': '7' }), reply(503, '')]);
    const c = client(server.url);
    expect(await c.post(makeSms('e1'))).toEqual({ kind: 'http', status: 400, bodyStart: long.slice(0, 200) });
    expect(await c.post(makeSms('e2'))).toEqual({ kind: 'http', status: 429, retryAfter: '7', bodyStart: 'slow down' });
    expect(await c.post(makeSms('e3'))).toEqual({ kind: 'http', status: 503, bodyStart: '' });
  });

  it('a huge error body is not downloaded: the first 4 KiB give bodyStart, then the response is dropped', async () => {
    const total = 64 * 1024 * 1024;
    const chunk = Buffer.alloc(64 * 1024, 'E');
    const seen = { sent: 0, finished: false, closed: false };
    server = await startServer([
      (_req, res) => {
        res.writeHead(500, { 'content-type': 'text/plain', 'content-length': String(total) });
        res.on('close', () => {
          seen.finished = res.writableFinished;
          seen.closed = true;
        });
        const pump = () => {
          while (seen.sent < total && !res.destroyed) {
            seen.sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          if (seen.sent >= total) res.end();
        };
        pump();
      },
    ]);
    const out = await client(server.url, { timeoutMs: 10_000 }).post(makeSms('big1'));
    expect(out).toEqual({ kind: 'http', status: 500, bodyStart: 'E'.repeat(200) });
    await until(() => seen.closed, 'the server sees the connection closed');
    expect(seen.finished).toBe(false); // the client hung up long before the 64 MiB were through
    expect(seen.sent).toBeLessThan(total);
  });

  it('does not follow a redirect: the 302 itself is the outcome and nothing is re-posted', async () => {
    server = await startServer([reply(302, '', { location: '/elsewhere' })]);
    expect(await client(server.url).post(makeSms('r1'))).toMatchObject({ kind: 'http', status: 302 });
    expect(server.requests).toHaveLength(1);
  });

  it('a server that never answers gives a timeout outcome, not an exception', async () => {
    server = await startServer([hang]);
    const out = await client(server.url, { timeoutMs: 150 }).post(makeSms('t1'));
    expect(out).toEqual({ kind: 'timeout', phase: 'request' });
    expect(server.requests).toHaveLength(1);
  });

  it('a refused connection gives a network outcome with its code', async () => {
    const port = await refusedPort();
    const out = await client(`http://127.0.0.1:${port}/webhook/sms-gateway`).post(makeSms('n1'));
    expect(out).toMatchObject({ kind: 'network', code: 'ECONNREFUSED' });
  });

  it('a non-ASCII modem name cannot break the request', async () => {
    server = await startServer([reply(200)]);
    const out = await client(server.url).post(makeSms('u1', { sim: { modem: 'modem-ñ' } }));
    expect(out).toMatchObject({ status: 200 });
    expect(server.requests[0]!.headers['x-pulsa-bridge-modem']).toBe('modem-?');
  });
});

describe('webhookUrl', () => {
  it.each([
    [
      'https://pulsa.example.com/api/v1/convert-pulsa',
      'https://pulsa.example.com/api/v1/convert-pulsa/webhook/sms-gateway',
      false,
    ],
    [
      'https://pulsa.example.com/api/v1/convert-pulsa/',
      'https://pulsa.example.com/api/v1/convert-pulsa/webhook/sms-gateway',
      false,
    ],
    ['https://pulsa.example.com', 'https://pulsa.example.com/webhook/sms-gateway', true],
    ['http://10.0.0.2:8080/api/v1', 'http://10.0.0.2:8080/api/v1/webhook/sms-gateway', true],
  ])('%s', (base, url, warns) => {
    const r = webhookUrl(base);
    expect(r.url).toBe(url);
    if (warns) expect(r.warning).toContain('/api/v1/convert-pulsa');
    else expect(r.warning).toBeUndefined();
  });

  it('rejects something that is not an http(s) URL', () => {
    expect(() => webhookUrl('pulsa.example.com/api')).toThrow(ConfigError);
    expect(() => webhookUrl('ftp://pulsa.example.com/api/v1/convert-pulsa')).toThrow(ConfigError);
  });
});
