/**
 * The only webhook HTTP: POST one SMS record to `{base}/webhook/sms-gateway` as `{ sender, message }`, with
 * `Idempotency-Key: <rec.id>` and the X-Pulsa-Bridge-* headers; configured static headers cannot override them and
 * an X-API-KEY is dropped. With hmacSecret the request is signed (X-Signature v2 over signedString() and the body).
 * post() never throws for HTTP or network problems: it returns an Outcome (policy.ts). No retries or redirects (the
 * forwarder owns retries) except one resend of a stale keep-alive socket; at most BODY_READ_LIMIT of a body is read.
 */
import { createHmac } from 'node:crypto';
import type { SmsRecord } from '../spool/types.js';
import { httpRequest } from '../http/request.js';
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

/** What the signature covers, each value exactly as the request sends it. */
export interface SignedFacts {
  timestamp: string;
  idempotencyKey: string;
  modem: string;
  /** X-Pulsa-Bridge-Parts, '' when the request has none. */
  parts: string;
  body: string;
}

/**
 * The exact string signed: `pulsa-bridge-v2`, X-Timestamp, Idempotency-Key, X-Pulsa-Bridge-Modem, X-Pulsa-Bridge-Parts
 * (empty when absent) joined by LF, then LF and the body bytes as sent; each value exactly as sent (none holds an LF).
 */
export function signedString(f: SignedFacts): string {
  return ['pulsa-bridge-v2', f.timestamp, f.idempotencyKey, f.modem, f.parts, f.body].join('\n');
}

/** The X-Signature value for these facts. */
export function signature(secret: string, f: SignedFacts): string {
  return `v2=${createHmac('sha256', secret).update(signedString(f), 'utf8').digest('hex')}`;
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
    const secret = this.opts.hmacSecret;
    if (secret !== undefined) {
      const ts = String(Math.floor((this.opts.clock ?? (() => new Date()))().getTime() / 1000));
      h['x-timestamp'] = ts;
      h['x-signature'] = signature(secret, {
        timestamp: ts,
        idempotencyKey: h['idempotency-key'],
        modem: h['x-pulsa-bridge-modem'],
        parts: h['x-pulsa-bridge-parts'] ?? '',
        body,
      });
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
    const outcome: Outcome = {
      kind: 'http',
      status: res.status,
      bodyStart: res.body.toString('utf8').slice(0, BODY_START_CHARS),
    };
    const ra = res.headers['retry-after'];
    if (typeof ra === 'string') outcome.retryAfter = ra;
    return outcome;
  }
}
