/**
 * On the forwarder with fake timers: an endpoint outage is probed with one request per probe
 * interval and the backlog goes out as soon as the endpoint answers again; a rejection of one record (404, 401, 422)
 * is retried until maxAge, only 400/413/415 are final. The spool here is an in-memory ForwardSpool, so every step is
 * a microtask and the fake clock decides everything (times asserted are fake-clock times, never wall-clock).
 */
import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Forwarder, type ForwardSpool } from '../../src/forward/forwarder.js';
import type { Outcome, RetryPolicy } from '../../src/forward/policy.js';
import type { PendingEntry } from '../../src/spool/pending-index.js';
import type { SmsRecord } from '../../src/spool/types.js';
import { silentLogger } from '../../src/log.js';
import { makeSms } from '../spool/helpers.js';

/** A spool held in memory: pending in receivedAt order, with the fields the forwarder's marks write. */
class MemSpool extends EventEmitter {
  readonly pending = new Map<string, SmsRecord>();
  readonly sent = new Map<string, SmsRecord>();
  readonly dead = new Map<string, SmsRecord>();

  put(rec: SmsRecord): void {
    this.pending.set(rec.id, rec);
    this.emit('pending', rec.id);
  }
  *pendingInOrder(): Iterable<PendingEntry> {
    const list = [...this.pending.values()].sort(
      (a, b) => a.receivedAt.localeCompare(b.receivedAt) || a.id.localeCompare(b.id),
    );
    for (const r of list) {
      yield {
        record: r,
        id: r.id,
        orderMs: Date.parse(r.receivedAt),
        dueMs: r.nextAttemptAt === undefined ? undefined : Date.parse(r.nextAttemptAt),
        modem: r.sim.modem,
      };
    }
  }
  isPending(id: string): boolean {
    return this.pending.has(id);
  }
  private take(id: string): SmsRecord {
    const r = this.pending.get(id);
    if (!r) throw new Error(`not pending: ${id}`);
    return { ...r };
  }
  async markDelivered(id: string, info: { status: number; at: Date }): Promise<void> {
    const r = this.take(id);
    this.pending.delete(id);
    this.sent.set(id, { ...r, attempts: r.attempts + 1, lastStatus: info.status, deliveredAt: info.at.toISOString() });
  }
  async markRetry(id: string, info: { error: string; status?: number; nextAttemptAt: Date }): Promise<void> {
    const r = this.take(id);
    const next: SmsRecord = {
      ...r,
      attempts: r.attempts + 1,
      lastError: info.error,
      nextAttemptAt: info.nextAttemptAt.toISOString(),
    };
    if (info.status !== undefined) next.lastStatus = info.status;
    else delete next.lastStatus;
    this.pending.set(id, next);
  }
  async markDead(id: string, reason: string, status?: number): Promise<void> {
    const r = this.take(id);
    this.pending.delete(id);
    this.dead.set(id, { ...r, deadReason: reason, ...(status === undefined ? {} : { lastStatus: status }) });
  }
}

/** A webhook whose answer is decided per request by `answer`; records each POST with its (fake) time. */
class ScriptedClient {
  readonly posts: Array<{ id: string; atMs: number; outcome: Outcome }> = [];
  constructor(public answer: (rec: SmsRecord) => Outcome) {}
  async post(rec: SmsRecord): Promise<Outcome> {
    const outcome = this.answer(rec);
    this.posts.push({ id: rec.id, atMs: Date.now(), outcome });
    return outcome;
  }
}

const T0 = Date.parse('2024-05-01T00:00:00Z');
const forwarders: Forwarder[] = [];
afterEach(async () => {
  for (const f of forwarders.splice(0)) await f.stop(0);
  vi.useRealTimers();
});

function setup(answer: (rec: SmsRecord) => Outcome, policy: RetryPolicy, strictOrder = false) {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: T0 });
  const spool = new MemSpool();
  const client = new ScriptedClient(answer);
  const forwarder = new Forwarder({
    spool: spool as unknown as ForwardSpool,
    client,
    policy,
    logger: silentLogger(),
    random: () => 0.5,
    strictOrder,
  });
  forwarders.push(forwarder);
  return { spool, client, forwarder };
}

const http = (status: number, retryAfter?: string): Outcome =>
  retryAfter === undefined ? { kind: 'http', status } : { kind: 'http', status, retryAfter };
const refused: Outcome = { kind: 'network', code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:9' };

function records(n: number, prefix = 'r'): SmsRecord[] {
  return Array.from({ length: n }, (_, i) =>
    makeSms(`${prefix}${String(i).padStart(3, '0')}`, { receivedAt: new Date(T0 - 60_000 + i).toISOString() }),
  );
}

/** Advance the fake clock in small steps (each step flushes the microtasks the forwarder's work is made of). */
async function advance(ms: number, step = 50): Promise<void> {
  for (let t = 0; t < ms; t += step) await vi.advanceTimersByTimeAsync(Math.min(step, ms - t));
}

describe('endpoint outage: one probe per interval, the backlog goes out when it recovers (issue 11 item 3)', () => {
  // Production-like settings: 1 s base, 5 min cap for a record's own backoff; probes capped at 2 s.
  const policy: RetryPolicy = { baseDelayMs: 1000, maxDelayMs: 300_000, probeIntervalMs: 2000 };

  it.each([
    ['500s', http(500)],
    ['connection refused', refused],
    ['timeouts', { kind: 'timeout', phase: 'connect' } as Outcome],
    ['502 with Retry-After: 1', http(502, '1')],
  ])(
    '%s for 10 minutes: at most one request per probe interval, every record delivered within one interval after recovery',
    async (_name, failure) => {
      let up = false;
      const { spool, client, forwarder } = setup(() => (up ? http(200) : failure), policy);
      forwarder.start();
      for (const r of records(30)) spool.put(r);
      const outageMs = 10 * 60_000;
      await advance(outageMs, 250);
      const duringOutage = client.posts.filter((p) => p.atMs < T0 + outageMs);
      // The first failure marks the endpoint down; every later request is a probe, at least one interval... apart.
      const gaps = duringOutage.slice(1).map((p, i) => p.atMs - duringOutage[i]!.atMs);
      expect(gaps.slice(0, 2)).toEqual([1000, 2000]); // 1 s, then 2 s: the probe interval grows to its cap
      expect(Math.min(...gaps)).toBeGreaterThanOrEqual(1000);
      expect(gaps.slice(2).every((g) => g >= 2000)).toBe(true);
      expect(duringOutage.length).toBeLessThanOrEqual(1 + outageMs / 2000);
      expect(forwarder.stats().endpointDown).toMatchObject({ failures: duringOutage.length });
      // every record still pending, none dead; those that were probes show their last error
      expect(spool.pending.size).toBe(30);
      expect(spool.dead.size).toBe(0);

      up = true;
      const recoveredAt = Date.now();
      await advance(5_000, 50);
      expect(spool.sent.size).toBe(30);
      const lastDelivery = Math.max(
        ...client.posts.filter((p) => p.outcome.kind === 'http' && p.outcome.status === 200).map((p) => p.atMs),
      );
      expect(lastDelivery - recoveredAt).toBeLessThanOrEqual(2000); // the next probe succeeds and releases the backlog at once
      expect(client.posts.filter((p) => p.atMs >= recoveredAt)).toHaveLength(30); // one POST per record after recovery
      expect(forwarder.stats().endpointDown).toBeUndefined();
    },
  );

  it('Retry-After is honoured: no probe before the time the server asked for', async () => {
    let up = false;
    const { spool, client, forwarder } = setup(() => (up ? http(200) : http(503, '120')), policy);
    forwarder.start();
    for (const r of records(5)) spool.put(r);
    await advance(119_000, 1000);
    expect(client.posts).toHaveLength(1);
    up = true;
    await advance(2_000, 50);
    expect(client.posts.map((p) => p.atMs - T0)).toEqual([0, 120_000, 120_000, 120_000, 120_000, 120_000]);
    expect(spool.sent.size).toBe(5);
  });

  it('one record the server chokes on (always 500) does not hold back the others: probes rotate', async () => {
    const { spool, client, forwarder } = setup((rec) => (rec.id === 'r000' ? http(500) : http(200)), policy);
    forwarder.start();
    for (const r of records(4)) spool.put(r);
    await advance(3_000, 50);
    expect([...spool.sent.keys()].sort()).toEqual(['r001', 'r002', 'r003']);
    expect(client.posts.slice(0, 2).map((p) => [p.id, p.atMs - T0])).toEqual([
      ['r000', 0],
      ['r001', 1000],
    ]);
    expect(spool.pending.get('r000')).toMatchObject({ lastStatus: 500, lastError: 'HTTP 500: ' });
  });

  it('a new record arriving during the outage waits for the probe (no extra request)', async () => {
    let up = false;
    const { spool, client, forwarder } = setup(() => (up ? http(200) : http(500)), policy);
    forwarder.start();
    spool.put(records(1)[0]!);
    await advance(300, 50);
    expect(client.posts).toHaveLength(1);
    for (const r of records(3, 'late')) spool.put(r);
    await advance(600, 50);
    expect(client.posts).toHaveLength(1);
    up = true;
    await advance(1_000, 50);
    expect(spool.sent.size).toBe(4);
  });
});

describe('a 4xx is not always final (issue 11 item 4)', () => {
  const policy: RetryPolicy = { baseDelayMs: 1000, maxDelayMs: 300_000, maxAgeMs: 72 * 3_600_000 };

  it('a backend deploy answering 404 for 30 s: no record goes to dead, all 5 arrive', async () => {
    const { spool, forwarder } = setup(() => (Date.now() < T0 + 30_000 ? http(404) : http(200)), policy);
    forwarder.start();
    for (const r of records(5)) spool.put(r);
    await advance(10_000, 100);
    expect(spool.dead.size).toBe(0);
    expect(spool.pending.get('r000')).toMatchObject({ lastStatus: 404, lastError: 'HTTP 404: ' });
    await advance(120_000, 500);
    expect(spool.dead.size).toBe(0);
    expect(spool.sent.size).toBe(5);
  });

  it.each([401, 403, 404, 409, 422, 301])("%s is retried with the record's own backoff, not final", async (status) => {
    let answer = http(status);
    const { spool, client, forwarder } = setup(() => answer, policy);
    forwarder.start();
    spool.put(records(1)[0]!);
    await advance(100, 50);
    expect(spool.pending.get('r000')).toMatchObject({
      attempts: 1,
      lastStatus: status,
      nextAttemptAt: new Date(T0 + 500).toISOString(),
    });
    await advance(1_000, 50);
    expect(spool.pending.get('r000')).toMatchObject({ attempts: 2, lastStatus: status });
    expect(forwarder.stats().endpointDown).toBeUndefined(); // a rejection of one record says the endpoint is up
    answer = http(200);
    await advance(5_000, 100);
    expect(spool.sent.get('r000')).toMatchObject({ lastStatus: 200 });
    expect(client.posts.length).toBeGreaterThanOrEqual(3);
  });

  it.each([400, 413, 415])('%s goes to dead at once (the request can never be accepted)', async (status) => {
    const { spool, client, forwarder } = setup(() => http(status), policy);
    forwarder.start();
    spool.put(records(1)[0]!);
    await advance(100, 50);
    expect(spool.dead.get('r000')).toMatchObject({ lastStatus: status, deadReason: `HTTP ${status}: ` });
    expect(client.posts).toHaveLength(1);
  });

  it('a record rejected with 422 until maxAge is given up then, not before', async () => {
    const { spool, forwarder } = setup(() => http(422), {
      baseDelayMs: 1000,
      maxDelayMs: 3_600_000,
      maxAgeMs: 72 * 3_600_000,
    });
    forwarder.start();
    spool.put(makeSms('old', { receivedAt: new Date(T0).toISOString() }));
    await vi.advanceTimersByTimeAsync(71 * 3_600_000);
    expect(spool.dead.size).toBe(0);
    expect(spool.pending.get('old')).toMatchObject({ lastStatus: 422 });
    await vi.advanceTimersByTimeAsync(3 * 3_600_000);
    expect(spool.dead.get('old')?.deadReason).toMatch(/^too old/);
  });
});

describe('review fixes: strictOrder across modems, the hold of a rejected record, a record failing on its own, no expiry for outages', () => {
  const policy: RetryPolicy = {
    baseDelayMs: 1000,
    maxDelayMs: 300_000,
    probeIntervalMs: 2000,
    maxAgeMs: 72 * 3_600_000,
  };
  const on = (id: string, modem: string, dt: number) =>
    makeSms(id, { sim: { modem, imsi: modem }, receivedAt: new Date(T0 + dt).toISOString() });

  it("strictOrder: a record of modem A the server answers 500 does not block modem B (the probe rotates across modems' heads)", async () => {
    const { spool, forwarder } = setup((rec) => (rec.id === 'a1' ? http(500) : http(200)), policy, true);
    forwarder.start();
    spool.put(on('a1', 'A', -2000));
    spool.put(on('a2', 'A', -1500));
    spool.put(on('b1', 'B', -1000));
    await advance(10_000, 100);
    expect(spool.sent.has('b1')).toBe(true);
    expect(spool.pending.has('a2')).toBe(true); // a1 still holds back its own modem (within the hold)
  });

  it('strictOrder: a record answered 422 holds back its modem for strictOrderHoldMs from its first rejection, then the later ones go; it keeps retrying on its own', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: T0 });
    const spool = new MemSpool();
    const client = new ScriptedClient((rec) => (rec.id === 'a1' ? http(422) : http(200)));
    const forwarder = new Forwarder({
      spool: spool as unknown as ForwardSpool,
      client,
      policy,
      logger: silentLogger(),
      random: () => 0.5,
      strictOrder: true,
      strictOrderHoldMs: 60_000,
    });
    forwarders.push(forwarder);
    forwarder.start();
    spool.put(on('a1', 'A', -2000));
    spool.put(on('a2', 'A', -1000));
    await advance(59_000, 500);
    expect(spool.pending.has('a2')).toBe(true);
    await advance(2_000, 100);
    expect(spool.sent.has('a2')).toBe(true);
    const before = client.posts.filter((p) => p.id === 'a1').length;
    await advance(600_000, 1000);
    expect(client.posts.filter((p) => p.id === 'a1').length).toBeGreaterThan(before);
    expect(spool.pending.has('a1')).toBe(true);
  });

  it('a record the server always answers 500 while others are delivered backs off on its own and does not mark the endpoint down', async () => {
    const { spool, client, forwarder } = setup((rec) => (rec.id === 'p' ? http(500) : http(200)), policy);
    forwarder.start();
    spool.put(makeSms('p', { receivedAt: new Date(T0).toISOString() }));
    await advance(3_000, 100);
    // new SMS keep arriving and go out at once, however p fails
    for (let i = 0; i < 20; i++) {
      spool.put(makeSms(`n${i}`, { receivedAt: new Date(T0 + 10 + i).toISOString() }));
      await advance(180_000, 1000);
      expect(spool.sent.has(`n${i}`)).toBe(true);
    }
    const pPosts = client.posts.filter((x) => x.id === 'p').map((x) => x.atMs);
    expect(pPosts.length).toBeLessThan(40); // one hour: not one POST per 2 s probe interval (1800)
    const gaps = pPosts.slice(1).map((t, i) => t - pPosts[i]!);
    expect(Math.max(...gaps)).toBeGreaterThan(60_000); // its own exponential backoff
    expect(forwarder.stats().endpointDown).toBeUndefined();
  });

  it('a lone record answered 500 for an hour is not POSTed every probe interval', async () => {
    const { spool, client, forwarder } = setup((rec) => (rec.id === 'p' ? http(500) : http(200)), policy);
    forwarder.start();
    spool.put(makeSms('p', { receivedAt: new Date(T0).toISOString() }));
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(client.posts.length).toBeLessThan(100);
    expect(spool.pending.has('p')).toBe(true);
  });

  it('network down for 73 h (maxAge 72 h): no record goes to dead, all are delivered when it comes back', async () => {
    let up = false;
    const { spool, forwarder } = setup(() => (up ? http(200) : refused), { ...policy, probeIntervalMs: 60_000 });
    forwarder.start();
    for (let i = 0; i < 3; i++) spool.put(makeSms('r' + i, { receivedAt: new Date(T0 + i).toISOString() }));
    await vi.advanceTimersByTimeAsync(73 * 3_600_000);
    expect(spool.dead.size).toBe(0);
    up = true;
    await advance(65_000, 500);
    expect(spool.sent.size).toBe(3);
  });
});
