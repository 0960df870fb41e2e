/**
 * The webhook signature as a server checks it: an independent verifier (written from docs/webhook.md,
 * sharing no code with src/) accepts the bridge's requests and rejects a captured request replayed under another
 * Idempotency-Key, for another modem, with its incomplete mark stripped, or too old. Simulated modems' requests are
 * marked and signed with the public simulation secret, never with the production one.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { WebhookClient } from '../../src/forward/webhook.js';
import { makeSms } from '../spool/helpers.js';
import { reply, startServer, type TestServer } from './server.js';

/** docs/webhook.md's verifier, as a server would write it. */
function verify(secret: string, headers: IncomingHttpHeaders, rawBody: Buffer, nowSec: number): boolean {
  const h = (name: string) => {
    const v = headers[name];
    return typeof v === 'string' ? v : '';
  };
  const ts = h('x-timestamp');
  if (!/^\d+$/.test(ts) || Math.abs(nowSec - Number(ts)) > 300) return false;
  const signed = Buffer.concat([
    Buffer.from(
      ['pulsa-bridge-v2', ts, h('idempotency-key'), h('x-pulsa-bridge-modem'), h('x-pulsa-bridge-parts'), ''].join(
        '\n',
      ),
    ),
    rawBody,
  ]);
  const expected = Buffer.from(`v2=${createHmac('sha256', secret).update(signed).digest('hex')}`);
  const got = Buffer.from(h('x-signature'));
  return got.length === expected.length && timingSafeEqual(got, expected);
}

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const NOW = new Date('2026-11-26T10:00:00.000Z');
const nowSec = NOW.getTime() / 1000;

describe('the webhook signature covers the Idempotency-Key, timestamp, modem and body', () => {
  it('a request verifies; replayed under a new Idempotency-Key, another modem, stripped of its parts mark, or late, it does not', async () => {
    server = await startServer([reply(200)]);
    const secret = 'production-secret';
    const c = new WebhookClient({ url: server.url, userAgent: 't', hmacSecret: secret, clock: () => NOW });
    const multipart = { reference: 7, referenceBits: 8 as const, total: 3, received: [1, 3], complete: false };
    await c.post(makeSms('sms-a1', { text: 'Anda mendapatkan pulsa Rp 100000 dari 081234567890 ✓' }));
    await c.post(makeSms('sms-p1', { multipart }));
    const [req, partial] = server.requests as [
      NonNullable<TestServer['requests'][0]>,
      NonNullable<TestServer['requests'][0]>,
    ];
    expect(verify(secret, req.headers, req.body, nowSec)).toBe(true);
    expect(verify(secret, partial.headers, partial.body, nowSec)).toBe(true);

    // The attacker's replay: the same body, timestamp and signature under a fresh Idempotency-Key.
    expect(verify(secret, { ...req.headers, 'idempotency-key': 'sms-a1-replay' }, req.body, nowSec)).toBe(false);
    expect(verify(secret, { ...req.headers, 'x-pulsa-bridge-modem': 'xl-2' }, req.body, nowSec)).toBe(false);
    const { 'x-pulsa-bridge-parts': _p, 'x-pulsa-bridge-incomplete': _i, ...stripped } = partial.headers;
    expect(verify(secret, stripped, partial.body, nowSec)).toBe(false);
    expect(verify(secret, req.headers, Buffer.from(req.body.toString().replace('100000', '900000')), nowSec)).toBe(
      false,
    );
    expect(verify(secret, req.headers, req.body, nowSec + 301)).toBe(false); // outside the server's window
    expect(verify('another-secret', req.headers, req.body, nowSec)).toBe(false);
  });
});
