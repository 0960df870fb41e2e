/**
 * The `webhook` section of the config: where SMS are posted (a base URL ending in the API prefix, or the full URL),
 * timeouts, extra headers (a value an HTTP request can carry; never one pulsa-bridge sets itself), the HMAC secret,
 * the retry policy and strict order. Part of config.ts's one schema.
 */
import * as v from 'valibot';
import {
  anyObject,
  bool,
  httpUrl,
  int,
  isMissing,
  object,
  optional,
  recordOf,
  refineShape,
  secret,
  withDefault,
  type Env,
} from './config-fields.js';

/** The convert-pulsa service's API prefix: a webhook base URL is expected to end in it. */
export const API_PREFIX = '/api/v1/convert-pulsa';

/** Headers pulsa-bridge sets itself (compared lower-case). */
const OWN_HEADERS = [
  'content-type',
  'content-length',
  'idempotency-key',
  'x-api-key',
  'host',
  'x-timestamp',
  'x-signature',
];

/**
 * A header value as an HTTP request may carry it: visible ASCII and inner spaces or tabs. A CR, LF, NUL or any other
 * control or non-ASCII character would make every POST fail (or be sent altered) for ever; the message names the
 * position, never the value (it is often a secret).
 */
function headerValue(env: Env) {
  return v.pipe(
    secret(env),
    v.rawCheck<string>(({ dataset, addIssue }) => {
      if (!dataset.typed) return;
      const s = dataset.value;
      const bad = /[^\x20-\x7e\t]/.exec(s);
      if (bad) {
        const c = bad[0].charCodeAt(0);
        const name =
          c === 13 ? 'CR' : c === 10 ? 'LF' : c === 0 ? 'NUL' : `U+${c.toString(16).toUpperCase().padStart(4, '0')}`;
        addIssue({
          message: `a header value may hold visible ASCII characters and spaces only; found ${name} at position ${bad.index + 1}`,
        });
      } else if (/^[ \t]|[ \t]$/.test(s)) {
        addIssue({ message: 'a header value may not start or end with a space or tab (servers strip it)' });
      }
    }),
  );
}

export function webhookSchema(env: Env) {
  const headers = refineShape(
    recordOf(v.string(), headerValue(env)),
    anyObject,
    (h: Record<string, unknown>, addIssue) => {
      for (const k of Object.keys(h)) {
        if (!/^[A-Za-z0-9-]+$/.test(k)) addIssue({ path: [k], message: 'invalid header name' });
        else if (OWN_HEADERS.includes(k.toLowerCase()) || k.toLowerCase().startsWith('x-pulsa-bridge-'))
          addIssue({ path: [k], message: 'this header is set by pulsa-bridge and cannot be overridden' });
      }
    },
  );
  const retry = refineShape(
    object({
      baseDelayMs: withDefault(int(10, 3_600_000), 1000),
      maxDelayMs: withDefault(int(100, 86_400_000), 300_000),
      /**
       * A record rejected by the server (404, 401, 422, or a 5xx of its own) and older than this goes to dead instead of
       * being retried; endpoint failures (network errors, timeouts, outages) never expire a record. null = never.
       */
      maxAgeHours: withDefault(v.nullable(int(1, 24 * 365)), 72),
      /** Cap of the interval between probes while the webhook endpoint fails (one request per interval). */
      probeIntervalMs: withDefault(int(50, 600_000), 2000),
    }),
    anyObject,
    (r: { baseDelayMs?: unknown; maxDelayMs?: unknown }, addIssue) => {
      if (typeof r.maxDelayMs === 'number' && typeof r.baseDelayMs === 'number' && r.maxDelayMs < r.baseDelayMs) {
        addIssue({ path: ['maxDelayMs'], message: 'must be at least webhook.retry.baseDelayMs' });
      }
    },
  );
  return refineShape(
    object({
      baseUrl: optional(httpUrl()),
      url: optional(httpUrl()),
      timeoutMs: withDefault(int(100, 600_000), 10_000),
      connectTimeoutMs: withDefault(int(100, 600_000), 5_000),
      headers: withDefault(headers, () => ({})),
      hmacSecret: optional(secret(env)),
      retry: withDefault(retry, () => ({})),
      strictOrder: withDefault(bool(), false),
      /** With strictOrder: how long one rejected record may hold back its modem's later records (from its first rejection). */
      strictOrderHoldSec: withDefault(int(0, 30 * 86_400), 300),
    }),
    anyObject,
    (w: { baseUrl?: unknown; url?: unknown }, addIssue) => {
      if (isMissing(w.baseUrl) && isMissing(w.url)) {
        addIssue({
          path: ['baseUrl'],
          message: `required: the service's base URL, ending in ${API_PREFIX} (or webhook.url, the full webhook URL)`,
        });
      }
    },
  );
}
