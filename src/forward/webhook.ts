/**
 * The only HTTP in pulsa-bridge: POST one SMS record to the convert-pulsa webhook (`{base}/webhook/sms-gateway`).
 *
 * Contract
 * - Body is exactly `JSON.stringify({ sender: rec.sender, message: rec.text })`, `Content-Type: application/json`,
 *   no X-API-KEY. Headers: `Idempotency-Key: <rec.id>` (same on every retry), `User-Agent`,
 *   `X-Pulsa-Bridge-Modem: <rec.sim.modem>`, `X-Pulsa-Bridge-SC-Timestamp: <rec.scTimestamp>`, and for a multipart
 *   message joined with gaps `X-Pulsa-Bridge-Incomplete: true` + `X-Pulsa-Bridge-Parts: <received>/<total>`.
 *   Static headers from config (e.g. Authorization) are sent too but cannot override the headers above; an
 *   X-API-KEY among them is dropped (the API key belongs to the reseller endpoints only, never to the webhook).
 * - With hmacSecret: `X-Timestamp: <unix seconds>` and
 *   `X-Signature: sha256=<lowercase hex of HMAC-SHA256(key = secret, message = X-Timestamp + "." + body)>`,
 *   i.e. the signed string is e.g. `1700000000.{"sender":"858","message":"..."}` (body bytes as sent, UTF-8).
 * - No retries and no redirects (the forwarder owns retries; a POST is never redirected), except one: a reused
 *   keep-alive connection reset before any answer is sent once more on a new connection within the same deadline
 *   (http.ts retryStaleSocket; the Idempotency-Key makes it harmless). HTTP errors do not throw, TLS certificates
 *   are verified, timeouts: connect (default 5 s) and whole request (default 10 s), both sends included.
 * - post() never throws for HTTP or network problems: it returns an Outcome (policy.ts); bodyStart = first 200 chars.
 * - At most BODY_READ_LIMIT bytes (4 KiB, after decompression) of a response body are read; then the response is
 *   destroyed, so a huge or endless error body costs neither memory nor time. Once the status line has arrived it
 *   decides the outcome: a body cut short (reset, timeout while reading it) still gives the HTTP outcome.
 */
import { createHmac } from 'node:crypto';
import type { SmsRecord } from '../spool/types.js';
import { httpRequest } from './http.js';
import type { Outcome } from './policy.js';

/** The URL is computed and checked once, in config.ts (Config.webhook.endpoint); re-exported for its users here. */
export { webhookUrl } from '../config.js';
const BODY_START_CHARS = 200;
/** Bytes of a response body read at most (only BODY_START_CHARS characters of it are kept). */
export const BODY_READ_LIMIT = 4096;

export interface WebhookClientOptions {
  /** Full URL of POST /webhook/sms-gateway (see webhookUrl). */
  url: string;
  /** Whole-request timeout (default 10000). */
  timeoutMs?: number;
  /** TCP/TLS connect timeout (default 5000). */
  connectTimeoutMs?: number;
  /** Static extra headers, e.g. Authorization. */
  headers?: Record<string, string>;
  hmacSecret?: string;
  userAgent: string;
  /** Clock for X-Timestamp (tests). */
  clock?: () => Date;
}

/** What the forwarder needs from a client (tests inject fakes). */
export interface WebhookPoster {
  post(rec: SmsRecord): Promise<Outcome>;
}

/** The signed string and signature header value; exported so operators and tests can verify. */
export function signBody(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest('hex')}`;
}

/** Header values must be visible ASCII; anything else (a non-ASCII modem name) becomes '?'. */
function headerValue(v: string): string {
  return v.replace(/[^\x20-\x7e]/g, '?');
}

export class WebhookClient implements WebhookPoster {
  private readonly opts: Required<Pick<WebhookClientOptions, 'timeoutMs' | 'connectTimeoutMs'>> & WebhookClientOptions;
  private readonly staticHeaders: Record<string, string>;

  constructor(opts: WebhookClientOptions) {
    this.opts = { ...opts, timeoutMs: opts.timeoutMs ?? 10_000, connectTimeoutMs: opts.connectTimeoutMs ?? 5_000 };
    this.staticHeaders = {};
    for (const [k, v] of Object.entries(opts.headers ?? {})) this.staticHeaders[k.toLowerCase()] = headerValue(v);
  }

  /** Exact body bytes for a record. */
  static body(rec: SmsRecord): string {
    return JSON.stringify({ sender: rec.sender, message: rec.text });
  }

  headersFor(rec: SmsRecord, body: string): Record<string, string> {
    const h: Record<string, string> = { ...this.staticHeaders };
    delete h['x-api-key'];
    h['content-type'] = 'application/json';
    h['idempotency-key'] = rec.id;
    h['user-agent'] = headerValue(this.opts.userAgent);
    h['x-pulsa-bridge-modem'] = headerValue(rec.sim.modem);
    h['x-pulsa-bridge-sc-timestamp'] = headerValue(rec.scTimestamp);
    if (rec.multipart && !rec.multipart.complete) {
      h['x-pulsa-bridge-incomplete'] = 'true';
      h['x-pulsa-bridge-parts'] = `${rec.multipart.received.length}/${rec.multipart.total}`;
    }
    if (this.opts.hmacSecret !== undefined) {
      const ts = String(Math.floor((this.opts.clock ?? (() => new Date()))().getTime() / 1000));
      h['x-timestamp'] = ts;
      h['x-signature'] = signBody(this.opts.hmacSecret, ts, body);
    }
    return h;
  }

  async post(rec: SmsRecord): Promise<Outcome> {
    const body = WebhookClient.body(rec);
    const res = await httpRequest({
      method: 'POST',
      url: this.opts.url,
      body,
      headers: this.headersFor(rec, body),
      connectTimeoutMs: this.opts.connectTimeoutMs,
      timeoutMs: this.opts.timeoutMs,
      maxBodyBytes: BODY_READ_LIMIT,
      retryStaleSocket: true, // the Idempotency-Key makes a second send of the same POST safe
    });
    if (res.kind === 'timeout') return { kind: 'timeout', phase: res.phase };
    if (res.kind === 'error') return { kind: 'network', code: res.code, message: res.message };
    // After the status line the server has answered; a body cut short does not change that answer.
    const outcome: Outcome = { kind: 'http', status: res.status, bodyStart: res.body.toString('utf8').slice(0, BODY_START_CHARS) };
    const ra = res.headers['retry-after'];
    if (typeof ra === 'string') outcome.retryAfter = ra;
    return outcome;
  }
}
