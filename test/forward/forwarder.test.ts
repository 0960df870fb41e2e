import { describe, it, expect, afterEach, vi } from 'vitest';
import { EventEmitter } from 'node:events';
import { diskOps } from '../../src/spool/files.js';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Forwarder, type ForwardSpool } from '../../src/forward/forwarder.js';
import { pickNext } from '../../src/forward/schedule.js';
import { WebhookClient, type WebhookPoster } from '../../src/forward/webhook.js';
import type { Outcome, RetryPolicy } from '../../src/forward/policy.js';
import { SpoolError } from '../../src/errors.js';
import { PendingIndex } from '../../src/spool/pending-index.js';
import { Spool } from '../../src/spool/store.js';
import type { SmsRecord } from '../../src/spool/types.js';
import { silentLogger } from '../../src/log.js';
import { makeSms } from '../spool/helpers.js';
import { captureLogger } from '../support/logger.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';
import { hang, refusedPort, reply, startServer, type TestServer } from './server.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  vi.useRealTimers();
  while (cleanups.length) await cleanups.pop()!();
});

async function setup(
  opts: {
    script?: Parameters<typeof startServer>[0];
    url?: string;
    policy?: RetryPolicy;
    timeoutMs?: number;
    strictOrder?: boolean;
  } = {},
) {
  const { dir, cleanup } = await tempDir('fwd');
  cleanups.push(cleanup);
  const spool = await Spool.open(dir, { logger: silentLogger() });
  cleanups.push(() => spool.close());
  let server: TestServer | undefined;
  if (opts.script) {
    server = await startServer(opts.script);
    cleanups.push(() => server!.close());
  }
  const client = new WebhookClient({
    url: opts.url ?? server!.url,
    userAgent: 'pulsa-bridge-test',
    timeoutMs: opts.timeoutMs ?? 2000,
  });
  const { logger, lines } = captureLogger();
  const forwarder = new Forwarder({
    spool,
    client,
    policy: opts.policy ?? { baseDelayMs: 20, maxDelayMs: 20 },
    logger,
    random: () => 0.5,
    strictOrder: opts.strictOrder ?? false,
  });
  cleanups.push(() => forwarder.stop(0));
  return { dir, spool, server, forwarder, lines };
}

const areaOf = async (spool: Spool, id: string) => (await spool.get(id))?.area;

describe('Forwarder against a real local webhook', () => {
  it('500 then 200: delivered after one retry, same Idempotency-Key and byte-identical body each time', async () => {
    const { spool, server, forwarder, lines } = await setup({ script: [reply(500, 'db down'), reply(200, 'ok')] });
    forwarder.start();
    await spool.putPending(makeSms('k1'));
    await until(() => forwarder.stats().delivered === 1, 'k1 delivered and logged');

    expect(server!.requests).toHaveLength(2);
    const [a, b] = server!.requests;
    expect(a!.headers['idempotency-key']).toBe('k1');
    expect(b!.headers['idempotency-key']).toBe('k1');
    expect(b!.body.equals(a!.body)).toBe(true);
    expect((await spool.get('k1'))!.record).toMatchObject({
      attempts: 2,
      lastStatus: 200,
      lastError: 'HTTP 500: db down',
    });
    expect(lines.filter((l) => l.id === 'k1').map((l) => l.level)).toEqual([40, 30]);
    expect(forwarder.stats()).toMatchObject({ delivered: 1, retried: 1, dead: 0 });
  });

  it('429 with Retry-After: the next attempt waits at least that long, then delivers', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: new Date('2024-05-01T00:00:00Z') });
    const { spool, server, forwarder } = await setup({
      script: [reply(429, 'slow down', { 'retry-after': '120' }), reply(200)],
      policy: { baseDelayMs: 1000, maxDelayMs: 300_000 },
    });
    forwarder.start();
    await spool.putPending(makeSms('ra1'));
    await until(() => forwarder.stats().nextWakeAt !== undefined, 'retry timer armed');
    const rec = (await spool.get('ra1'))!.record as SmsRecord;
    expect(rec.nextAttemptAt).toBe('2024-05-01T00:02:00.000Z'); // jitter would say 500 ms; Retry-After says 120 s
    expect(forwarder.stats().nextWakeAt).toBe('2024-05-01T00:02:00.000Z');

    await vi.advanceTimersByTimeAsync(119_000);
    expect(forwarder.stats().inFlightId).toBeUndefined();
    expect(server!.requests).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1_000);
    await until(async () => (await areaOf(spool, 'ra1')) === 'sent', 'ra1 in sent');
    expect(server!.requests).toHaveLength(2);
  });

  it('400 -> dead with the status and the start of the body', async () => {
    const { spool, server, forwarder, lines } = await setup({
      script: [reply(400, `{"error":"unknown sender format"}${' '.repeat(300)}`)],
    });
    forwarder.start();
    await spool.putPending(makeSms('bad1'));
    await until(() => forwarder.stats().dead === 1, 'bad1 dead and logged');
    expect(await areaOf(spool, 'bad1')).toBe('dead');
    const rec = (await spool.get('bad1'))!.record as SmsRecord;
    expect(rec.deadReason).toMatch(/^HTTP 400: \{"error":"unknown sender format"\}/);
    expect(rec.lastStatus).toBe(400);
    expect(server!.requests).toHaveLength(1);
    expect(lines.find((l) => l.id === 'bad1' && l.level === 50)?.msg).toContain('HTTP 400');
  });

  it('a webhook that never answers: timeout -> retry, record stays pending with the error', async () => {
    const { spool, forwarder } = await setup({
      script: [hang],
      timeoutMs: 100,
      policy: { baseDelayMs: 60_000, maxDelayMs: 60_000 },
    });
    forwarder.start();
    await spool.putPending(makeSms('slow1'));
    await until(() => forwarder.stats().nextWakeAt !== undefined, 'retry timer armed');
    expect(await spool.get('slow1')).toMatchObject({
      area: 'pending',
      record: { attempts: 1, lastError: 'timeout (request)' },
    });
  });

  it('a refused connection -> retry', async () => {
    const port = await refusedPort();
    const { spool, forwarder } = await setup({
      url: `http://127.0.0.1:${port}/webhook/sms-gateway`,
      policy: { baseDelayMs: 60_000, maxDelayMs: 60_000 },
    });
    forwarder.start();
    await spool.putPending(makeSms('ref1'));
    await until(async () => ((await spool.get('ref1'))!.record as SmsRecord).attempts === 1, 'attempt recorded');
    const { area, record } = (await spool.get('ref1'))!;
    expect(area).toBe('pending');
    expect((record as SmsRecord).lastError).toContain('ECONNREFUSED');
  });

  it('sends oldest first, wakes on new records without polling, and does nothing after stop', async () => {
    const { spool, server, forwarder } = await setup({ script: [reply(200)] });
    await spool.putPending(makeSms('c', { receivedAt: '2024-01-03T00:00:00Z' }));
    await spool.putPending(makeSms('a', { receivedAt: '2024-01-01T00:00:00Z' }));
    await spool.putPending(makeSms('b', { receivedAt: '2024-01-02T00:00:00Z' }));
    forwarder.start();
    await until(async () => (await spool.stats()).sent === 3, 'three sent');
    expect(server!.requests.map((r) => r.headers['idempotency-key'])).toEqual(['a', 'b', 'c']);
    expect(forwarder.stats().nextWakeAt).toBeUndefined(); // idle: no timer at all

    await spool.putPending(makeSms('d'));
    await until(async () => (await spool.stats()).sent === 4, 'woken by the pending event');

    await forwarder.stop(1000);
    expect(spool.listenerCount('pending')).toBe(0);
    expect(forwarder.stats().running).toBe(false);
  });

  it('a record already rejected (last status 422) and older than maxAgeMs goes to dead without a POST', async () => {
    const { spool, server, forwarder } = await setup({
      script: [reply(200)],
      policy: { baseDelayMs: 20, maxDelayMs: 20, maxAgeMs: 3_600_000 },
    });
    await spool.putPending(
      makeSms('ancient', { receivedAt: '2020-01-01T00:00:00Z', attempts: 1, lastStatus: 422, lastError: 'HTTP 422: ' }),
    );
    forwarder.start();
    await until(async () => (await areaOf(spool, 'ancient')) === 'dead', 'ancient in dead');
    expect(((await spool.get('ancient'))!.record as SmsRecord).deadReason).toContain('too old');
    expect(server!.requests).toHaveLength(0);
  });

  it('maxAgeMs: a record older than maxAgeMs whose last failure was an endpoint failure (no answer, 503) is never given up', async () => {
    const { spool, server, forwarder } = await setup({
      script: [reply(503, 'busy'), reply(200)],
      policy: { baseDelayMs: 20, maxDelayMs: 20, maxAgeMs: 3_600_000 },
    });
    await spool.putPending(
      makeSms('net1', { receivedAt: '2020-01-01T00:00:00Z', attempts: 7, lastError: 'network ECONNREFUSED' }),
    );
    forwarder.start();
    await until(async () => (await areaOf(spool, 'net1')) === 'sent', 'net1 delivered');
    expect(server!.requests.map((r) => r.headers['idempotency-key'])).toEqual(['net1', 'net1']);
  });

  it('maxAgeMs: a record too old on arrival still gets its one POST before it is given up', async () => {
    const { spool, server, forwarder } = await setup({
      script: [reply(404, 'no such order')],
      policy: { baseDelayMs: 20, maxDelayMs: 20, maxAgeMs: 3_600_000 },
    });
    await spool.putPending(makeSms('late1', { receivedAt: '2020-01-01T00:00:00Z' })); // e.g. read from the SIM after a long outage
    forwarder.start();
    await until(async () => (await areaOf(spool, 'late1')) === 'dead', 'late1 in dead');
    expect(server!.requests.map((r) => r.headers['idempotency-key'])).toEqual(['late1']);
    expect((await spool.get('late1'))!.record).toMatchObject({
      attempts: 1,
      lastStatus: 404,
      deadReason: expect.stringContaining('too old: received 2020-01-01'),
    });
  });

  it('maxAgeMs: `queue retry` of a record given up for age is POSTed again, and its age counts from the requeue', async () => {
    const { dir, spool, server, forwarder } = await setup({
      script: [reply(503, 'busy')],
      policy: { baseDelayMs: 20, maxDelayMs: 20, maxAgeMs: 3_600_000 },
    });
    await spool.putPending(makeSms('old1', { receivedAt: '2020-01-01T00:00:00Z', attempts: 4 }));
    await spool.markDead('old1', 'too old: received 2020-01-01T00:00:00Z, not delivered within 3600000 ms');
    forwarder.start();
    const operator = await Spool.open(dir, {
      logger: silentLogger(),
      role: 'client',
      signal: () => void spool.rescan(),
    });
    const before = Date.now();
    await operator.retry('old1');
    await until(() => server!.requests.length >= 3, 'old1 POSTed and retried');
    const { area, record } = (await spool.get('old1'))!;
    expect(area).toBe('pending'); // within an hour of the requeue: retried, not killed again
    expect((record as SmsRecord).attempts).toBeGreaterThanOrEqual(2);
    expect(Date.parse((record as SmsRecord).requeuedAt!)).toBeGreaterThanOrEqual(before);
    expect(server!.requests.every((r) => r.headers['idempotency-key'] === 'old1')).toBe(true);
  });
});

describe('Forwarder: crash while a POST is in flight (at-least-once)', () => {
  it('an abandoned POST leaves the record pending; a new process delivers it with the same Idempotency-Key', async () => {
    const { dir, spool, server, forwarder, lines } = await setup({ script: [hang, reply(200, 'ok')] });
    forwarder.start();
    await spool.putPending(makeSms('crash1'));
    await until(() => server!.requests.length === 1, 'first POST reached the server');
    expect(forwarder.stats().inFlightId).toBe('crash1');
    await forwarder.stop(0); // the "crash": abandon the POST in flight
    await spool.close(); // the old process is gone: its spool.lock no longer holds the directory

    // new process: fresh Spool on the same directory, fresh client and forwarder
    const spool2 = await Spool.open(dir, { logger: silentLogger() });
    cleanups.push(() => spool2.close());
    expect(await areaOf(spool2, 'crash1')).toBe('pending');
    const forwarder2 = new Forwarder({
      spool: spool2,
      client: new WebhookClient({ url: server!.url, userAgent: 'pulsa-bridge-test' }),
      policy: { baseDelayMs: 20, maxDelayMs: 20 },
      logger: silentLogger(),
    });
    cleanups.push(() => forwarder2.stop(0));
    forwarder2.start();
    await until(async () => (await areaOf(spool2, 'crash1')) === 'sent', 'crash1 delivered by the new process');
    expect(server!.requests).toHaveLength(2);
    expect(server!.requests[1]!.headers['idempotency-key']).toBe(server!.requests[0]!.headers['idempotency-key']);
    expect(server!.requests[1]!.body.equals(server!.requests[0]!.body)).toBe(true);

    // the old POST finally gets an answer: the abandoned forwarder must not touch the spool
    const sentFile = path.join(dir, 'sent', 'crash1.json');
    const sentBefore = await readFile(sentFile, 'utf8');
    server!.hanging[0]!.writeHead(200).end('late');
    await until(() => forwarder.stats().inFlightId === undefined, 'old in-flight settled');
    expect(forwarder.stats().delivered).toBe(0);
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    expect(await readFile(sentFile, 'utf8')).toBe(sentBefore);
    expect(await areaOf(await Spool.open(dir, { logger: silentLogger(), role: 'client' }), 'crash1')).toBe('sent');
  });
});

describe('Forwarder with injected parts', () => {
  class FakeClient implements WebhookPoster {
    posted: string[] = [];
    constructor(private readonly outcome: Outcome) {}
    async post(rec: SmsRecord): Promise<Outcome> {
      this.posted.push(rec.id);
      return this.outcome;
    }
  }

  it('strictOrder: a waiting record holds back later records of the same modem only', async () => {
    for (const strictOrder of [false, true]) {
      const { dir, cleanup } = await tempDir('strict');
      cleanups.push(cleanup);
      const spool = await Spool.open(dir, { logger: silentLogger(), fsync: false });
      cleanups.push(() => spool.close());
      await spool.putPending(makeSms('a1', { receivedAt: '2024-01-01T00:00:01Z', sim: { modem: 'A' } }));
      await spool.markRetry('a1', { error: 'HTTP 503: x', nextAttemptAt: new Date(Date.now() + 3_600_000) });
      await spool.putPending(makeSms('a2', { receivedAt: '2024-01-01T00:00:02Z', sim: { modem: 'A' } }));
      await spool.putPending(makeSms('b1', { receivedAt: '2024-01-01T00:00:03Z', sim: { modem: 'B' } }));
      const client = new FakeClient({ kind: 'http', status: 200 });
      const f = new Forwarder({
        spool,
        client,
        policy: { baseDelayMs: 10, maxDelayMs: 10 },
        logger: silentLogger(),
        strictOrder,
      });
      cleanups.push(() => f.stop(0));
      f.start();
      await until(async () => (await areaOf(spool, 'b1')) === 'sent', 'b1 sent');
      await until(() => f.stats().nextWakeAt !== undefined, 'timer armed for a1');
      expect(client.posted).toEqual(strictOrder ? ['b1'] : ['a2', 'b1']);
    }
  });

  it('a spool that cannot record the result is logged and retried after a pause, not hot-looped', async () => {
    const rec = makeSms('disk1');
    const spool = Object.assign(new EventEmitter(), {
      pendingInOrder: () => PendingIndex.from([structuredClone(rec)]).entries(),
      isPending: () => true,
      markDelivered: async () => {
        throw new Error('ENOSPC: no space left on device');
      },
      markRetry: async () => undefined,
      markDead: async () => undefined,
    }) as unknown as ForwardSpool;
    const client = new FakeClient({ kind: 'http', status: 200 });
    const { logger, lines } = captureLogger();
    const f = new Forwarder({ spool, client, policy: { baseDelayMs: 1000, maxDelayMs: 60_000 }, logger });
    cleanups.push(() => f.stop(0));
    f.start();
    await until(() => f.stats().nextWakeAt !== undefined, 'pause armed');
    expect(client.posted).toEqual(['disk1']);
    expect(lines.find((l) => l.level === 50 && l.id === 'disk1')?.err).toContain('ENOSPC');
  });
});

describe('Forwarder: a backlog is drained without copying the whole pending list per POST', () => {
  it('each pick copies one record: list(pending) is never called and copies grow with n, not n^2', async () => {
    const { dir, cleanup } = await tempDir('fwd-backlog');
    cleanups.push(cleanup);
    const spool = await Spool.open(dir, { logger: silentLogger(), fsync: false });
    cleanups.push(() => spool.close());
    const n = 60;
    // put newest first, two modems, one record waiting for a retry: order and strictOrder still decide
    for (let i = n - 1; i >= 0; i--) {
      await spool.putPending(
        makeSms(`bk${String(i).padStart(3, '0')}`, {
          receivedAt: new Date(Date.UTC(2024, 0, 1, 0, i)).toISOString(),
          sim: { modem: i % 2 ? 'B' : 'A' },
        }),
      );
    }
    await spool.markRetry('bk001', { error: 'HTTP 503: x', nextAttemptAt: new Date(Date.now() + 3_600_000) });
    const list = vi.spyOn(spool, 'list');
    const clone = vi.spyOn(globalThis, 'structuredClone');
    const client = new FakeClientFor({ kind: 'http', status: 200 });
    const f = new Forwarder({
      spool,
      client,
      policy: { baseDelayMs: 10, maxDelayMs: 10 },
      logger: silentLogger(),
      strictOrder: true,
    });
    cleanups.push(() => f.stop(0));
    f.start();
    await until(
      () => f.stats().delivered === n / 2 && f.stats().nextWakeAt !== undefined,
      'modem A drained, timer armed for bk001',
    );
    const expectedA = Array.from({ length: n / 2 }, (_, k) => `bk${String(2 * k).padStart(3, '0')}`);
    expect(client.posted).toEqual(expectedA); // modem B is held back by its waiting oldest record (strictOrder)
    expect(list).not.toHaveBeenCalled();
    // one copy per pick (n/2 POSTs + the final look): copying every pending record per pick would be ~n^2/4 copies
    expect(clone.mock.calls.length).toBeLessThanOrEqual(2 * (n / 2 + 1));
  });
});

describe('Forwarder: records changed by the operator while the daemon runs', () => {
  it('a record dropped by `queue drop` during its POST: warned, not written back, the next record is sent without a pause', async () => {
    const { dir, cleanup } = await tempDir('fwd-drop');
    cleanups.push(cleanup);
    const owner = await Spool.open(dir, { logger: silentLogger(), fsync: false });
    cleanups.push(() => owner.close());
    const operator = await Spool.open(dir, { logger: silentLogger(), role: 'client', signal: () => undefined });
    await owner.putPending(makeSms('gone1', { receivedAt: '2024-01-01T00:00:01Z' }));
    await owner.putPending(makeSms('next1', { receivedAt: '2024-01-01T00:00:02Z' }));
    const posted: string[] = [];
    const client: WebhookPoster = {
      post: async (rec) => {
        posted.push(rec.id);
        if (rec.id === 'gone1') await operator.drop('gone1'); // the operator drops it while the POST is on the wire
        return { kind: 'http', status: 200 };
      },
    };
    const { logger, lines } = captureLogger();
    const f = new Forwarder({ spool: owner, client, policy: { baseDelayMs: 60_000, maxDelayMs: 60_000 }, logger });
    cleanups.push(() => f.stop(0));
    f.start();
    await until(async () => (await areaOf(owner, 'next1')) === 'sent', 'next1 sent');
    expect(posted).toEqual(['gone1', 'next1']);
    expect(await areaOf(owner, 'gone1')).toBeUndefined();
    expect((await owner.stats()).sent).toBe(1);
    expect(lines.find((l) => l.id === 'gone1' && l.level === 40)?.msg).toContain('removed or moved by another process');
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    expect(f.stats().nextWakeAt).toBeUndefined(); // no error pause was armed
  });

  it('a spool that keeps listing a vanished record does not make the forwarder POST it again and again', async () => {
    const rec = makeSms('ghost1');
    let marks = 0;
    let lists = 0;
    const spool = Object.assign(new EventEmitter(), {
      // A spool that still holds ghost1 as pending: only the forwarder's own skip passes it over.
      pendingInOrder: () => {
        lists += 1;
        return PendingIndex.from([structuredClone(rec)]).entries();
      },
      isPending: () => true,
      markDelivered: async () => {
        marks += 1;
        throw new SpoolError('not-found', 'record ghost1 is no longer in pending');
      },
      markRetry: async () => undefined,
      markDead: async () => undefined,
    }) as unknown as ForwardSpool;
    const client = new FakeClientFor({ kind: 'http', status: 200 });
    const f = new Forwarder({
      spool,
      client,
      policy: { baseDelayMs: 1000, maxDelayMs: 60_000 },
      logger: silentLogger(),
    });
    cleanups.push(() => f.stop(0));
    f.start();
    await until(() => marks === 1 && lists === 2, 'first delivery settled and the loop looked again');
    (spool as unknown as EventEmitter).emit('pending', 'other'); // a wake for another id does not revive ghost1
    await until(() => lists === 3, 'woken loop listed the spool');
    await new Promise((r) => setImmediate(r));
    expect(client.posted).toEqual(['ghost1']);
    expect(f.stats().nextWakeAt).toBeUndefined();
    (spool as unknown as EventEmitter).emit('pending', 'ghost1'); // the spool says ghost1 is pending again: it is sent
    await until(() => client.posted.length === 2, 'ghost1 sent again after its own pending event');
  });
});

describe('Forwarder: the spool cannot record a result', () => {
  it('a 2xx the disk refuses to record (EROFS) is never POSTed again: only the spool write is retried with backoff, later records go on', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: new Date('2024-05-01T00:00:00Z') });
    const { dir, cleanup } = await tempDir('fwd-erofs');
    cleanups.push(cleanup);
    const spool = await Spool.open(dir, { logger: silentLogger(), fsync: false });
    cleanups.push(() => spool.close());
    await spool.putPending(makeSms('ro1', { receivedAt: '2024-01-01T00:00:01Z' }));
    await spool.putPending(makeSms('ro2', { receivedAt: '2024-01-01T00:00:02Z' }));
    // Every spool write of ro1 fails as on a filesystem remounted read-only; ro2's writes work.
    let broken = true;
    const realOpen = diskOps.open;
    const openSpy = vi.spyOn(diskOps, 'open').mockImplementation(async (file, ...rest) => {
      if (broken && String(file).includes(`${path.sep}tmp${path.sep}ro1.`)) {
        throw Object.assign(new Error(`EROFS: read-only file system, open '${String(file)}'`), { code: 'EROFS' });
      }
      return realOpen(file, ...rest);
    });
    cleanups.push(() => openSpy.mockRestore());
    const client = new FakeClientFor({ kind: 'http', status: 200 });
    const { logger, lines } = captureLogger();
    const f = new Forwarder({ spool, client, policy: { baseDelayMs: 1000, maxDelayMs: 60_000 }, logger });
    cleanups.push(() => f.stop(0));
    const writeErrors = () => lines.filter((l) => l.level === 50 && l.id === 'ro1');
    f.start();

    await until(async () => (await areaOf(spool, 'ro2')) === 'sent', 'ro2 delivered behind the stuck ro1');
    await until(() => f.stats().nextWakeAt !== undefined, 'write retry armed');
    expect(client.posted).toEqual(['ro1', 'ro2']);
    expect(await areaOf(spool, 'ro1')).toBe('pending');
    expect(f.stats()).toMatchObject({ delivered: 1, unrecorded: 1, nextWakeAt: '2024-05-01T00:00:05.000Z' });
    expect(writeErrors()).toHaveLength(1);
    expect(writeErrors()[0]!.msg).toContain('delivered, HTTP 200');
    expect(writeErrors()[0]!.err).toContain('EROFS');

    // backoff per record: 5 s, then 10 s, then 20 s; one error line per failed write, no POST
    await vi.advanceTimersByTimeAsync(5_000);
    await until(() => writeErrors().length === 2, 'second write failed');
    expect(writeErrors()[1]).toMatchObject({ failures: 2, retryInMs: 10_000 });
    await vi.advanceTimersByTimeAsync(9_000);
    expect(writeErrors()).toHaveLength(2);

    // the operator requeues it meanwhile (queue retry -> 'pending'): its 2xx is known, so the write is tried at once, no POST
    spool.emit('pending', 'ro1');
    await until(() => writeErrors().length === 3, 'write tried on the pending event');
    expect(writeErrors()[2]).toMatchObject({ failures: 3, retryInMs: 20_000 });
    expect(client.posted).toEqual(['ro1', 'ro2']);

    broken = false; // the disk is writable again
    await vi.advanceTimersByTimeAsync(20_000);
    await until(async () => (await areaOf(spool, 'ro1')) === 'sent', 'ro1 recorded as sent');
    expect(client.posted).toEqual(['ro1', 'ro2']);
    expect((await spool.get('ro1'))!.record).toMatchObject({ attempts: 1, lastStatus: 200 });
    expect(f.stats()).toMatchObject({ delivered: 2, unrecorded: 0 });
    expect(
      lines.find((l) => l.id === 'ro1' && l.level === 30 && l.msg.includes('recorded after 3 failed')),
    ).toBeDefined();
    await until(() => f.stats().nextWakeAt === undefined, 'idle');
  });

  it.each([
    ['2xx', [{ kind: 'http', status: 200 }] as Outcome[], ['bad1', 'fine1']],
    [
      '503 then 200',
      [
        { kind: 'http', status: 503 },
        { kind: 'http', status: 200 },
      ] as Outcome[],
      ['bad1', 'fine1', 'bad1'],
    ],
  ])(
    'a pending file that went bad on disk is rewritten from memory: its result (%s) is recorded, nothing is lost; the corrupt bytes stay in quarantine',
    async (_name, outcomes, posts) => {
      const { dir, cleanup } = await tempDir('fwd-corrupt');
      cleanups.push(cleanup);
      const { logger, lines } = captureLogger();
      const spool = await Spool.open(dir, { logger, fsync: false });
      cleanups.push(() => spool.close());
      await spool.putPending(makeSms('bad1', { receivedAt: '2024-01-01T00:00:01Z' }));
      await spool.putPending(makeSms('fine1', { receivedAt: '2024-01-01T00:00:02Z' }));
      await writeFile(path.join(dir, 'pending', 'bad1.json'), '{"v":1,"kind":"sms","id":"bad1", garbage'); // disk damage
      const queue = [...outcomes];
      const client = {
        posted: [] as string[],
        async post(rec: SmsRecord): Promise<Outcome> {
          this.posted.push(rec.id);
          return rec.id === 'bad1' && queue.length > 1 ? queue.shift()! : queue[0]!;
        },
      };
      const f = new Forwarder({ spool, client, policy: { baseDelayMs: 20, maxDelayMs: 20 }, logger });
      cleanups.push(() => f.stop(0));
      f.start();
      await until(
        async () => (await areaOf(spool, 'bad1')) === 'sent' && (await areaOf(spool, 'fine1')) === 'sent',
        'both delivered',
      );
      // Which goes first after bad1's 503 (its 20 ms retry or fine1) depends on load: compare the POSTs as a multiset.
      expect([...client.posted].sort()).toEqual([...posts].sort());
      expect(((await spool.get('bad1'))!.record as SmsRecord).text).toBe(makeSms('x').text);
      const quarantined = await readdir(path.join(dir, 'quarantine'));
      expect(quarantined).toEqual([expect.stringMatching(/^corrupt\.pending\.bad1\.[0-9a-f]{12}\.json$/)]);
      const q = (await spool.get(quarantined[0]!.slice(0, -'.json'.length)))!.record;
      expect(q).toMatchObject({
        kind: 'quarantine',
        originalFile: 'pending/bad1.json',
        raw: expect.stringContaining('garbage'),
      });
      expect(lines.some((l) => l.level === 50 && String(l.msg).includes('rewritten from memory'))).toBe(true);
      expect(f.stats()).toMatchObject({ delivered: 2, unrecorded: 0 });
    },
  );

  // A 404 rejects one record (retried with its own backoff); a 503 would stop every POST until a probe (see 'endpoint').
  it('strictOrder: a record whose retry (404) could not be recorded still holds back its modem; a held 2xx holds nothing back', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: new Date('2024-05-01T00:00:00Z') });
    const { dir, cleanup } = await tempDir('fwd-strict-held');
    cleanups.push(cleanup);
    const spool = await Spool.open(dir, { logger: silentLogger(), fsync: false });
    cleanups.push(() => spool.close());
    await spool.putPending(makeSms('a1', { receivedAt: '2024-01-01T00:00:01Z', sim: { modem: 'A' } }));
    await spool.putPending(makeSms('a2', { receivedAt: '2024-01-01T00:00:02Z', sim: { modem: 'A' } }));
    await spool.putPending(makeSms('b1', { receivedAt: '2024-01-01T00:00:03Z', sim: { modem: 'B' } }));
    await spool.putPending(makeSms('b2', { receivedAt: '2024-01-01T00:00:04Z', sim: { modem: 'B' } }));
    // The first write of a1's retry and of b1's delivery fail (read-only disk); later writes work.
    const retrySpy = vi
      .spyOn(spool, 'markRetry')
      .mockRejectedValueOnce(new SpoolError('io', 'cannot write pending/a1.json: EROFS'));
    const deliveredSpy = vi
      .spyOn(spool, 'markDelivered')
      .mockRejectedValueOnce(new SpoolError('io', 'cannot write sent/b1.json: EROFS'));
    cleanups.push(() => {
      retrySpy.mockRestore();
      deliveredSpy.mockRestore();
    });
    let a1Posts = 0;
    const client = {
      posted: [] as string[],
      async post(rec: SmsRecord): Promise<Outcome> {
        this.posted.push(rec.id);
        if (rec.id === 'a1' && ++a1Posts === 1) return { kind: 'http', status: 404 };
        return { kind: 'http', status: 200 };
      },
    };
    const f = new Forwarder({
      spool,
      client,
      policy: { baseDelayMs: 1000, maxDelayMs: 60_000 },
      logger: silentLogger(),
      strictOrder: true,
      random: () => 0.5,
    });
    cleanups.push(() => f.stop(0));
    f.start();

    // a1's 404 is held unrecorded: a2 waits behind it; b1's 2xx is held unrecorded: b2 goes on.
    await until(async () => (await areaOf(spool, 'b2')) === 'sent', 'b2 delivered past the held 2xx of b1');
    await until(() => f.stats().nextWakeAt !== undefined, 'write retry armed');
    expect(client.posted).toEqual(['a1', 'b1', 'b2']);
    expect(f.stats()).toMatchObject({ unrecorded: 2 });
    expect(await areaOf(spool, 'a2')).toBe('pending');

    // the writes succeed 5 s later (a1's retry time has passed by then): a1 is POSTed again, and only then a2
    await vi.advanceTimersByTimeAsync(5_000);
    await until(() => f.stats().unrecorded === 0, 'held results recorded');
    await vi.advanceTimersByTimeAsync(60_000);
    await until(async () => (await areaOf(spool, 'a2')) === 'sent', 'a2 delivered');
    expect(client.posted).toEqual(['a1', 'b1', 'b2', 'a1', 'a2']);
    expect((await spool.get('a1'))!.record).toMatchObject({ attempts: 2, lastStatus: 200 });
  });

  it('a retry mark whose write failed after reaching the disk (directory fsync failed) is counted once when written again', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: new Date('2024-05-01T00:00:00Z') });
    const { dir, cleanup } = await tempDir('fwd-fsync');
    cleanups.push(cleanup);
    const spool = await Spool.open(dir, { logger: silentLogger(), fsync: true });
    cleanups.push(() => spool.close());
    await spool.putPending(makeSms('fs1'));
    const pendingDir = path.join(dir, 'pending');
    const realOpen = diskOps.open;
    let armed = false;
    const openSpy = vi.spyOn(diskOps, 'open').mockImplementation(async (file, ...rest) => {
      if (armed && String(file) === pendingDir) {
        armed = false; // the fsync of pending/ after the retry mark's rename fails once
        throw Object.assign(new Error(`EIO: i/o error, open '${String(file)}'`), { code: 'EIO' });
      }
      return realOpen(file, ...rest);
    });
    cleanups.push(() => openSpy.mockRestore());
    const client = {
      posted: [] as string[],
      async post(rec: SmsRecord): Promise<Outcome> {
        this.posted.push(rec.id);
        if (this.posted.length > 1) return { kind: 'http', status: 200 };
        armed = true;
        return { kind: 'http', status: 503 };
      },
    };
    const f = new Forwarder({
      spool,
      client,
      policy: { baseDelayMs: 1000, maxDelayMs: 60_000 },
      logger: silentLogger(),
      random: () => 0.5,
    });
    cleanups.push(() => f.stop(0));
    f.start();
    await until(
      () => f.stats().unrecorded === 1 && f.stats().nextWakeAt !== undefined,
      'retry mark held after the failed fsync',
    );
    await vi.advanceTimersByTimeAsync(5_000);
    await until(() => f.stats().unrecorded === 0, 'retry mark written again');
    await vi.advanceTimersByTimeAsync(60_000);
    await until(async () => (await areaOf(spool, 'fs1')) === 'sent', 'fs1 delivered');
    expect(client.posted).toEqual(['fs1', 'fs1']);
    expect((await spool.get('fs1'))!.record).toMatchObject({ attempts: 2, lastStatus: 200, lastError: 'HTTP 503: ' });
  });

  it('a non-2xx result the spool could not record is dropped when the operator requeues the record: it is sent again', async () => {
    const rec = makeSms('nr1');
    let retryWrites = 0;
    const spool = Object.assign(new EventEmitter(), {
      pendingInOrder: () => PendingIndex.from([structuredClone(rec)]).entries(),
      isPending: () => true,
      markDelivered: async () => undefined,
      markRetry: async () => {
        retryWrites += 1;
        throw new Error('ENOSPC: no space left on device');
      },
      markDead: async () => undefined,
    }) as unknown as ForwardSpool;
    const client = new FakeClientFor({ kind: 'http', status: 503 });
    const f = new Forwarder({
      spool,
      client,
      policy: { baseDelayMs: 1000, maxDelayMs: 60_000 },
      logger: silentLogger(),
    });
    cleanups.push(() => f.stop(0));
    f.start();
    await until(() => retryWrites === 1 && f.stats().nextWakeAt !== undefined, 'retry result held');
    expect(client.posted).toEqual(['nr1']);
    (spool as unknown as EventEmitter).emit('pending', 'nr1');
    await until(() => client.posted.length === 2, 'sent again after the requeue');
  });
});

class FakeClientFor implements WebhookPoster {
  posted: string[] = [];
  constructor(private readonly outcome: Outcome) {}
  async post(rec: SmsRecord): Promise<Outcome> {
    this.posted.push(rec.id);
    return this.outcome;
  }
}

describe("pickNext (the forwarder's choice) over the spool's ordered pending index", () => {
  const now = Date.parse('2024-01-01T12:00:00Z');
  const r = (id: string, modem: string, next?: string) =>
    makeSms(id, { sim: { modem }, ...(next ? { nextAttemptAt: next } : {}) });
  const later = '2024-01-01T12:05:00Z';
  const sooner = '2024-01-01T12:01:00Z';
  it.each<[string, SmsRecord[], boolean, { next?: string; wakeAtMs?: number }]>([
    ['empty', [], false, {}],
    ['first due wins', [r('a', 'A'), r('b', 'A')], false, { next: 'a' }],
    ['skips a waiting record', [r('a', 'A', later), r('b', 'A')], false, { next: 'b' }],
    ['strict: waiting record blocks its modem', [r('a', 'A', later), r('b', 'A'), r('c', 'B')], true, { next: 'c' }],
    [
      'strict: all blocked -> wake at the blocker',
      [r('a', 'A', later), r('b', 'A')],
      true,
      { wakeAtMs: Date.parse(later) },
    ],
    ['wake at the earliest', [r('a', 'A', later), r('b', 'B', sooner)], false, { wakeAtMs: Date.parse(sooner) }],
    ['unparseable nextAttemptAt counts as due', [r('a', 'A', 'garbage')], false, { next: 'a' }],
  ])('%s', (_n, pending, strict, expected) => {
    const got = pickNext(PendingIndex.from(pending).entries(), now, { strictOrder: strict });
    expect({ next: got.next?.id, wakeAtMs: got.wakeAtMs }).toEqual({
      next: expected.next,
      wakeAtMs: expected.wakeAtMs,
    });
  });
});
