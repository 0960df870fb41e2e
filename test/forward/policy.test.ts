import { describe, it, expect } from 'vitest';
import {
  classify,
  isEndpointFailure,
  isTooOld,
  nextDelayMs,
  probeDelayMs,
  retryAfterMs,
  DEFAULT_PROBE_INTERVAL_MS,
  DEFAULT_RETRY_POLICY,
  type Outcome,
  type Verdict,
} from '../../src/forward/policy.js';

describe('classify', () => {
  const http = (status: number): Outcome => ({ kind: 'http', status });
  it.each<[string, Outcome, Verdict]>([
    ['200', http(200), 'delivered'],
    ['201', http(201), 'delivered'],
    ['204', http(204), 'delivered'],
    ['301 (redirects are not followed for POST; retried until maxAge)', http(301), 'retry'],
    ['302', http(302), 'retry'],
    ['307', http(307), 'retry'],
    ['400 (malformed: never accepted)', http(400), 'dead'],
    ['413 (too large: never accepted)', http(413), 'dead'],
    ['415 (wrong media type: never accepted)', http(415), 'dead'],
    ['401 (a server checking clocks)', http(401), 'retry'],
    ['403', http(403), 'retry'],
    ['404 (a backend deploy)', http(404), 'retry'],
    ['409', http(409), 'retry'],
    ['410', http(410), 'retry'],
    ['422 (the order is created a moment after its SMS)', http(422), 'retry'],
    ['408 request timeout', http(408), 'retry'],
    ['425 too early', http(425), 'retry'],
    ['429 too many requests', http(429), 'retry'],
    ['500', http(500), 'retry'],
    ['502', http(502), 'retry'],
    ['503', http(503), 'retry'],
    ['599', http(599), 'retry'],
    ['ECONNREFUSED', { kind: 'network', code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:1' }, 'retry'],
    ['ENOTFOUND', { kind: 'network', code: 'ENOTFOUND', message: 'getaddrinfo ENOTFOUND api.example' }, 'retry'],
    ['TLS error', { kind: 'network', code: 'CERT_HAS_EXPIRED', message: 'certificate has expired' }, 'retry'],
    ['timeout', { kind: 'timeout', phase: 'request' }, 'retry'],
  ])('%s -> %s', (_n, outcome, verdict) => {
    expect(classify(outcome)).toBe(verdict);
  });
});

describe('isEndpointFailure: the endpoint fails, not this record', () => {
  const http = (status: number): Outcome => ({ kind: 'http', status });
  it.each<[string, Outcome, boolean]>([
    ['ECONNREFUSED', { kind: 'network', code: 'ECONNREFUSED', message: 'refused' }, true],
    ['timeout', { kind: 'timeout', phase: 'connect' }, true],
    ['500', http(500), true],
    ['503', http(503), true],
    ['429', http(429), true],
    ['408', http(408), true],
    ['an unexpected 99', http(99), true],
    ['200', http(200), false],
    ['404 (about this record)', http(404), false],
    ['401', http(401), false],
    ['422', http(422), false],
    ['400', http(400), false],
    ['425', http(425), false],
    ['302', http(302), false],
  ])('%s -> %s', (_n, outcome, expected) => {
    expect(isEndpointFailure(outcome)).toBe(expected);
  });
});

describe('probeDelayMs (one probe per interval while the endpoint fails)', () => {
  const now = new Date('2024-05-01T12:00:00Z');
  it.each<
    [string, { baseDelayMs: number; maxDelayMs: number; probeIntervalMs?: number }, number, string | undefined, number]
  >([
    ['first probe after baseDelayMs', { baseDelayMs: 500, maxDelayMs: 300_000 }, 1, undefined, 500],
    ['doubles per failure', { baseDelayMs: 500, maxDelayMs: 300_000 }, 2, undefined, 1000],
    [
      'capped at the default probe interval',
      { baseDelayMs: 500, maxDelayMs: 300_000 },
      30,
      undefined,
      DEFAULT_PROBE_INTERVAL_MS,
    ],
    [
      'huge failure count does not overflow',
      { baseDelayMs: 500, maxDelayMs: 300_000 },
      1e9,
      undefined,
      DEFAULT_PROBE_INTERVAL_MS,
    ],
    [
      'capped at probeIntervalMs',
      { baseDelayMs: 1000, maxDelayMs: 300_000, probeIntervalMs: 1500 },
      5,
      undefined,
      1500,
    ],
    ['never above maxDelayMs', { baseDelayMs: 20, maxDelayMs: 20 }, 10, undefined, 20],
    ['Retry-After is a lower bound', { baseDelayMs: 1000, maxDelayMs: 300_000 }, 1, '120', 120_000],
    ['Retry-After capped at maxDelayMs', { baseDelayMs: 1000, maxDelayMs: 60_000 }, 1, '86400', 60_000],
    ['Retry-After HTTP-date', { baseDelayMs: 1000, maxDelayMs: 300_000 }, 1, 'Wed, 01 May 2024 12:00:45 GMT', 45_000],
  ])('%s', (_n, policy, failures, retryAfter, expected) => {
    expect(probeDelayMs(policy, failures, retryAfter, now)).toBe(expected);
  });
});

describe('nextDelayMs (full jitter, Retry-After as a lower bound)', () => {
  const p = { baseDelayMs: 1000, maxDelayMs: 300_000 };
  const now = new Date('2024-05-01T12:00:00Z');
  it.each<[string, number, number, string | undefined, number]>([
    ['first retry, random 0.5', 0, 0.5, undefined, 500],
    ['attempt 3, random 0.5 -> half of 8 s', 3, 0.5, undefined, 4000],
    ['random 0 -> retry at once', 5, 0, undefined, 0],
    ['window capped at maxDelayMs', 20, 0.5, undefined, 150_000],
    ['huge attempt does not overflow', 5000, 0.999, undefined, 299_700],
    ['Retry-After seconds above jitter wins', 0, 0.5, '30', 30_000],
    ['Retry-After below jitter: jitter wins', 8, 0.5, '1', 128_000],
    ['Retry-After capped at maxDelayMs', 0, 0.1, '86400', 300_000],
    ['Retry-After HTTP-date', 0, 0, 'Wed, 01 May 2024 12:00:45 GMT', 45_000],
    ['Retry-After date in the past', 0, 0.5, 'Wed, 01 May 2024 11:00:00 GMT', 500],
    ['Retry-After garbage ignored', 0, 0.5, 'soon', 500],
    ['negative attempt treated as 0', -3, 0.5, undefined, 500],
  ])('%s', (_n, attempt, r, retryAfter, expected) => {
    expect(nextDelayMs(p, attempt, () => r, retryAfter, now)).toBe(expected);
  });

  it('an HTTP-date without a clock is ignored (the function stays pure)', () => {
    expect(retryAfterMs('Wed, 01 May 2024 12:00:45 GMT')).toBeUndefined();
    expect(retryAfterMs(' 12 ')).toBe(12_000);
  });

  it('defaults are 1 s base and 5 min cap', () => {
    expect(DEFAULT_RETRY_POLICY).toEqual({ baseDelayMs: 1000, maxDelayMs: 300_000 });
  });
});

describe('isTooOld', () => {
  const now = new Date('2024-05-02T00:00:00Z');
  it.each<[string, number | undefined, string, boolean]>([
    ['no maxAge: never too old', undefined, '2000-01-01T00:00:00Z', false],
    ['younger than maxAge', 86_400_000, '2024-05-01T00:00:01Z', false],
    ['exactly maxAge is not too old', 86_400_000, '2024-05-01T00:00:00Z', false],
    ['older than maxAge', 86_400_000, '2024-04-30T23:59:59Z', true],
    ['unparseable receivedAt is not given up', 1, 'yesterday', false],
  ])('%s', (_n, maxAgeMs, receivedAt, expected) => {
    const policy =
      maxAgeMs === undefined ? { baseDelayMs: 1, maxDelayMs: 1 } : { baseDelayMs: 1, maxDelayMs: 1, maxAgeMs };
    expect(isTooOld(policy, receivedAt, now)).toBe(expected);
  });
});
