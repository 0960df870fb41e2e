/**
 * Several POSTs in flight (found in review): an answer to a request sent BEFORE record r1 failed must not make r1's later endpoint failures "its own"
 * (with one POST at a time such an answer could not exist). Every request sent after r1's first failure fails 502,
 * so by the forwarder's header ("endpoint failures never expire a record") r1 must never go to dead without a POST.
 */
import { afterEach, expect, it } from 'vitest';
import { EndpointHealth } from '../../src/forward/endpoint-health.js';
import { Forwarder } from '../../src/forward/forwarder.js';
import type { Outcome } from '../../src/forward/policy.js';
import type { WebhookPoster } from '../../src/forward/webhook.js';
import { silentLogger } from '../../src/log.js';
import { Spool } from '../../src/spool/store.js';
import type { SmsRecord } from '../../src/spool/types.js';
import { makeSms } from '../spool/helpers.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

it('EndpointHealth: a 2xx to a request sent before r1 failed does not make r1 own its next 502', () => {
  const h = new EndpointHealth({
    policy: { baseDelayMs: 10, maxDelayMs: 20 },
    logger: silentLogger(),
    clock: () => new Date(0),
    strictOrder: false,
    strictOrderHoldMs: 0,
  });
  const r1Sent = h.stamp(); // r1, r2 and r3 go out together
  const r2Sent = h.stamp();
  const r3Sent = h.stamp();
  expect(h.note(makeSms('r1'), { kind: 'http', status: 502 }, r1Sent)).toBe('endpoint');
  expect(h.note(makeSms('r3'), { kind: 'http', status: 502 }, r3Sent)).toBe('endpoint'); // outage confirmed
  expect(h.note(makeSms('r2'), { kind: 'http', status: 200 }, r2Sent)).toBe('up'); // stale answer: endpoint stays down
  expect(h.confirmedDown).toBeDefined();
  // r1 is the probe, sent during the outage, and fails like everything else: an endpoint failure, not its own.
  expect(h.note(makeSms('r1'), { kind: 'http', status: 502 }, h.stamp())).toBe('endpoint');
  expect(h.failedOnItsOwn(makeSms('r1', { lastStatus: 502 }))).toBe(false);
});

it('EndpointHealth: a 2xx to a request sent after r1 failed does make its next 5xx its own', () => {
  const h = new EndpointHealth({
    policy: { baseDelayMs: 10, maxDelayMs: 20 },
    logger: silentLogger(),
    clock: () => new Date(0),
    strictOrder: false,
    strictOrderHoldMs: 0,
  });
  expect(h.note(makeSms('r1'), { kind: 'http', status: 502 }, h.stamp())).toBe('endpoint');
  expect(h.note(makeSms('r2'), { kind: 'http', status: 200 }, h.stamp())).toBe('up');
  expect(h.note(makeSms('r1'), { kind: 'http', status: 502 }, h.stamp())).toBe('own');
});

it('Forwarder: a record whose later failures are all endpoint failures is never expired without a POST', async () => {
  const { dir, cleanup } = await tempDir('rev-stale');
  cleanups.push(cleanup);
  const spool = await Spool.open(dir, { logger: silentLogger(), fsync: false });
  cleanups.push(() => spool.close());
  const old = (s: number) => new Date(Date.now() - 2 * 3_600_000 + s * 1000).toISOString();
  for (const [i, id] of ['w0', 'r1', 'r2'].entries()) await spool.putPending(makeSms(id, { receivedAt: old(i) }));
  let r1FirstFailureAt = Infinity;
  const posts: string[] = [];
  const client: WebhookPoster = {
    async post(rec: SmsRecord): Promise<Outcome> {
      posts.push(rec.id);
      const sentAt = performance.now();
      if (rec.id === 'w0') return { kind: 'http', status: 200 };
      if (rec.id === 'r1' && posts.filter((p) => p === 'r1').length === 1) {
        await new Promise((r) => setTimeout(r, 5));
        r1FirstFailureAt = performance.now();
        return { kind: 'http', status: 502 };
      }
      if (rec.id === 'r2' && sentAt < r1FirstFailureAt) {
        await new Promise((r) => setTimeout(r, 30)); // sent with r1, answered after r1's failure
        return { kind: 'http', status: 200 };
      }
      return { kind: 'http', status: 502 }; // the backend is down from here on
    },
  };
  const forwarder = new Forwarder({
    spool,
    client,
    logger: silentLogger(),
    policy: { baseDelayMs: 10, maxDelayMs: 20, maxAgeMs: 3_600_000, probeIntervalMs: 50 },
    random: () => 0.5,
  });
  cleanups.push(() => forwarder.stop(0));
  forwarder.start();
  await until(
    () => posts.filter((p) => p === 'r1').length >= 3 || forwarder.stats().dead > 0,
    'r1 retried or given up',
    5000,
  );
  const area = (await spool.get('r1'))?.area;
  expect(area, `posts: ${posts.join(',')}`).toBe('pending'); // actual: 'dead' ("too old"), without a POST
});
