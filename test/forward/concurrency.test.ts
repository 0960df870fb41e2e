/**
 * Several POSTs in flight: the forwarder against a real HTTP server on loopback that answers
 * slowly and counts the requests it holds at once. No wall-clock assertion: counts of requests, keys and records.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ServerResponse } from 'node:http';
import { EndpointHealth } from '../../src/forward/endpoint-health.js';
import { Forwarder } from '../../src/forward/forwarder.js';
import type { Outcome, RetryPolicy } from '../../src/forward/policy.js';
import { pickDue } from '../../src/forward/schedule.js';
import { WebhookClient, type WebhookPoster } from '../../src/forward/webhook.js';
import { silentLogger } from '../../src/log.js';
import { Spool } from '../../src/spool/store.js';
import type { SmsRecord } from '../../src/spool/types.js';
import { makeSms } from '../spool/helpers.js';
import { captureLogger } from '../support/logger.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';
import { startServer, type SeenRequest, type TestServer } from './server.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** What the server saw: requests it holds now, the most it held at once (overall and per modem), arrivals in order. */
class Watch {
  open = 0;
  maxOpen = 0;
  readonly openByModem = new Map<string, number>();
  maxOpenPerModem = 0;
  readonly arrivals: Array<{ key: string; modem: string; openOnArrival: number }> = [];
  readonly postsByKey = new Map<string, number>();

  arrive(req: SeenRequest): { key: string; modem: string } {
    const key = String(req.headers['idempotency-key']);
    const modem = String(req.headers['x-pulsa-bridge-modem']);
    this.open += 1;
    this.maxOpen = Math.max(this.maxOpen, this.open);
    const m = (this.openByModem.get(modem) ?? 0) + 1;
    this.openByModem.set(modem, m);
    this.maxOpenPerModem = Math.max(this.maxOpenPerModem, m);
    this.arrivals.push({ key, modem, openOnArrival: this.open });
    this.postsByKey.set(key, (this.postsByKey.get(key) ?? 0) + 1);
    return { key, modem };
  }

  /** Answer `status` after `delayMs`, counting the request as open until then. */
  answer(res: ServerResponse, modem: string, status: number, delayMs: number): void {
    setTimeout(() => {
      this.open -= 1;
      this.openByModem.set(modem, this.openByModem.get(modem)! - 1);
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'no');
    }, delayMs);
  }
}

/** The real client, counting the POSTs it has open at each send and whether the forwarder counted the endpoint down. */
class CountingClient implements WebhookPoster {
  open = 0;
  readonly sends: Array<{ open: number; down: boolean }> = [];
  constructor(
    private readonly inner: WebhookPoster,
    private readonly isDown: () => boolean,
  ) {}
  async post(rec: SmsRecord): Promise<Outcome> {
    this.sends.push({ open: this.open, down: this.isDown() });
    this.open += 1;
    try {
      return await this.inner.post(rec);
    } finally {
      this.open -= 1;
    }
  }
}
const forwarderClient = new WeakMap<Forwarder, CountingClient>();

async function setup(o: {
  concurrency: number;
  policy?: RetryPolicy;
  strictOrder?: boolean;
  respond: (w: Watch, req: SeenRequest, res: ServerResponse) => void;
  wrap?: (client: WebhookPoster, forwarder: () => Forwarder) => CountingClient;
}) {
  const { dir, cleanup } = await tempDir('fwd-conc');
  cleanups.push(cleanup);
  const spool = await Spool.open(dir, { logger: silentLogger(), fsync: false });
  cleanups.push(() => spool.close());
  const watch = new Watch();
  const server: TestServer = await startServer([(req, res) => o.respond(watch, req, res)]);
  cleanups.push(() => server.close());
  const { logger, lines } = captureLogger();
  const real = new WebhookClient({ url: server.url, userAgent: 'pulsa-bridge-test', timeoutMs: 5000 });
  let self: Forwarder | undefined;
  const wrapped = o.wrap?.(real, () => self!);
  const forwarder = new Forwarder({
    spool,
    client: wrapped ?? real,
    policy: o.policy ?? { baseDelayMs: 20, maxDelayMs: 20 },
    logger,
    random: () => 0.5,
    strictOrder: o.strictOrder ?? false,
    concurrency: o.concurrency,
  });
  self = forwarder;
  if (wrapped) forwarderClient.set(forwarder, wrapped);
  cleanups.push(() => forwarder.stop(0));
  return { spool, server, watch, forwarder, lines };
}

const areaOf = async (spool: Spool, id: string) => (await spool.get(id))?.area;
const ids = (n: number, prefix = 'c') => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(3, '0')}`);
const at = (i: number) => new Date(Date.UTC(2024, 0, 1, 0, 0, i)).toISOString();

describe('Forwarder: several POSTs in flight against a slow webhook', () => {
  it.each([1, 4, 6])(
    'concurrency %i: never more than that many requests at once, reached, every record delivered once',
    async (k) => {
      const { spool, watch, forwarder } = await setup({
        concurrency: k,
        respond: (w, req, res) => w.answer(res, w.arrive(req).modem, 200, 15),
      });
      const all = ids(30);
      for (const [i, id] of all.entries()) await spool.putPending(makeSms(id, { receivedAt: at(i) }));
      forwarder.start();
      await until(() => forwarder.stats().delivered === all.length, 'all delivered and counted', 20_000);
      expect((await spool.stats()).sent).toBe(all.length);
      expect(watch.maxOpen).toBe(k);
      expect([...watch.postsByKey.entries()].sort()).toEqual(all.map((id) => [id, 1]));
      // dispatched oldest first (answers may be recorded in any order)
      expect(watch.arrivals.map((a) => a.key)).toEqual(all);
      expect(forwarder.stats()).toMatchObject({ delivered: all.length, retried: 0, dead: 0 });
      await until(() => forwarder.stats().inFlightId === undefined, 'nothing in flight');
    },
  );

  it('endpoint outage: the first request alone, full concurrency once answered; the requests in flight finish, then one at a time while down; full concurrency after', async () => {
    let up = true;
    let served = 0;
    const { spool, watch, forwarder } = await setup({
      concurrency: 4,
      policy: { baseDelayMs: 30, maxDelayMs: 200, probeIntervalMs: 60 },
      // 200 for the first 9 requests, then 503 until `up` again
      respond: (w, req, res) => w.answer(res, w.arrive(req).modem, (served += 1) > 9 && !up ? 503 : 200, 10),
      wrap: (client, fwd) => new CountingClient(client, () => fwd().stats().endpointDown !== undefined),
    });
    const counting = forwarderClient.get(forwarder)!;
    const all = ids(40);
    for (const [i, id] of all.entries()) await spool.putPending(makeSms(id, { receivedAt: at(i) }));
    up = false;
    forwarder.start();
    await until(() => counting.sends.filter((x) => x.down).length >= 4, 'four probes while down', 20_000);
    const downSends = counting.sends.length;
    up = true;
    await until(() => forwarder.stats().delivered === all.length, 'backlog released', 20_000);

    // nothing known of the endpoint: the first request went alone; once it answered, four at once
    expect(counting.sends[0]).toEqual({ open: 0, down: false });
    expect(Math.max(...counting.sends.slice(0, 9).map((x) => x.open))).toBe(3);
    // the outage began with requests in flight: they finished; every request sent while down was alone
    expect(counting.sends.filter((x) => x.down).every((x) => x.open === 0)).toBe(true);
    // after the recovery the backlog goes out with the full concurrency again
    expect(Math.max(...counting.sends.slice(downSends).map((x) => x.open))).toBe(3);
    expect(forwarder.stats().endpointDown).toBeUndefined();
    // every record delivered; one POST per attempt (the spool's attempts count them)
    for (const id of all) expect(((await spool.get(id))!.record as SmsRecord).attempts).toBe(watch.postsByKey.get(id));
  });

  it('strictOrder: never two records of one modem in flight, each modem in its order (a rejected head retried first), modems in parallel', async () => {
    const rejectedOnce = new Set(['a002', 'b000']);
    const { spool, watch, forwarder } = await setup({
      concurrency: 4,
      strictOrder: true,
      respond: (w, req, res) => {
        const { key, modem } = w.arrive(req);
        const reject = rejectedOnce.delete(key);
        w.answer(res, modem, reject ? 404 : 200, 10);
      },
    });
    const modems = ['A', 'B', 'C'];
    const perModem = 6;
    let i = 0;
    for (let n = 0; n < perModem; n++) {
      for (const m of modems)
        await spool.putPending(
          makeSms(`${m.toLowerCase()}${String(n).padStart(3, '0')}`, { receivedAt: at(i++), sim: { modem: m } }),
        );
    }
    forwarder.start();
    await until(async () => (await spool.stats()).sent === modems.length * perModem, 'all delivered', 20_000);
    expect(watch.maxOpenPerModem).toBe(1);
    expect(watch.maxOpen).toBe(3); // one per modem at once: the three modems went in parallel
    for (const m of modems) {
      const seen = watch.arrivals.filter((a) => a.modem === m).map((a) => a.key);
      const own = Array.from({ length: perModem }, (_, n) => `${m.toLowerCase()}${String(n).padStart(3, '0')}`);
      const expected = own.flatMap((id) => (id === 'a002' || id === 'b000' ? [id, id] : [id]));
      expect(seen).toEqual(expected);
    }
  });

  it('stop(grace) with four in flight: no new POST, waits for those answered within the grace, abandons the rest', async () => {
    const held: ServerResponse[] = [];
    const { spool, watch, forwarder, lines } = await setup({
      concurrency: 4,
      respond: (w, req, res) => {
        const { modem } = w.arrive(req);
        if (w.arrivals.length === 1)
          w.answer(res, modem, 200, 0); // the endpoint answers once: full concurrency
        else held.push(res);
      },
    });
    const all = ids(10);
    for (const [i, id] of all.entries()) await spool.putPending(makeSms(id, { receivedAt: at(i) }));
    forwarder.start();
    await until(() => held.length === 4, 'four POSTs held by the server');
    expect(forwarder.stats().inFlightId).toBe('c001');

    const stopping = forwarder.stop(400);
    held[1]!.writeHead(200).end('ok'); // answered within the grace: recorded
    held[2]!.writeHead(200).end('ok');
    await stopping;
    expect(await areaOf(spool, 'c002')).toBe('sent');
    expect(await areaOf(spool, 'c003')).toBe('sent');
    const abandoned = lines.filter((l) => l.level === 40 && String(l.msg).includes('still in flight')).map((l) => l.id);
    expect(abandoned.sort()).toEqual(['c001', 'c004']);

    // the late answers of the abandoned POSTs are not recorded; nothing else was POSTed after stop
    held[0]!.writeHead(200).end('late');
    held[3]!.writeHead(200).end('late');
    await until(() => forwarder.stats().inFlightId === undefined, 'abandoned POSTs settled');
    expect(await areaOf(spool, 'c001')).toBe('pending');
    expect(await areaOf(spool, 'c004')).toBe('pending');
    expect(watch.arrivals).toHaveLength(5);
    expect(forwarder.stats()).toMatchObject({ delivered: 3, running: false });
    expect((await spool.stats()).pending).toBe(7);
  });

  it('a record is POSTed once per attempt: pending events for records in flight start no second POST', async () => {
    let emit: (id: string) => void = () => undefined;
    const { spool, watch, forwarder } = await setup({
      concurrency: 6,
      respond: (w, req, res) => {
        const { key, modem } = w.arrive(req);
        // the receiver or the operator announces records while they are on the wire (every record in flight, twice)
        for (const a of w.arrivals) emit(a.key);
        emit(key);
        w.answer(res, modem, w.postsByKey.get(key) === 1 && key.endsWith('0') ? 404 : 200, 5);
      },
    });
    emit = (id) => void spool.emit('pending', id);
    const all = ids(40);
    for (const [i, id] of all.entries()) await spool.putPending(makeSms(id, { receivedAt: at(i) }));
    forwarder.start();
    await until(async () => (await spool.stats()).sent === all.length, 'all delivered', 20_000);
    for (const id of all) {
      const rec = (await spool.get(id))!.record as SmsRecord;
      expect([id, watch.postsByKey.get(id)]).toEqual([id, id.endsWith('0') ? 2 : 1]);
      expect(rec.attempts).toBe(watch.postsByKey.get(id));
    }
    expect(watch.maxOpen).toBeLessThanOrEqual(6);
  });
});

describe('pickDue: several due records in one walk', () => {
  const item = (id: string, modem: string, dueMs?: number) => ({ id, modem, dueMs });
  const list = [item('a1', 'A'), item('a2', 'A'), item('b1', 'B', 500), item('b2', 'B'), item('c1', 'C')];
  it.each<[string, boolean, number, string[], string[], number | undefined]>([
    ['up to max, in order', false, 3, [], ['a1', 'a2', 'b2'], undefined],
    ['busy ids passed over', false, 3, ['a1'], ['a2', 'b2', 'c1'], undefined],
    ['strict: one per modem, a waiting record holds its modem', true, 5, [], ['a1', 'c1'], 500],
    ['strict: a busy record holds back its modem and gives no wake-up', true, 5, ['a1', 'c1'], [], 500],
    ['fewer due than max: all of them and the wake-up', false, 9, [], ['a1', 'a2', 'b2', 'c1'], 500],
  ])('%s', (_name, strictOrder, max, busy, picked, wakeAtMs) => {
    const got = pickDue(list, 100, { strictOrder, busy: new Set(busy) }, max);
    expect({ picked: got.picked.map((x) => x.id), wakeAtMs: got.wakeAtMs }).toEqual({ picked, wakeAtMs });
  });
});

describe('EndpointHealth with several requests in flight', () => {
  const policy: RetryPolicy = { baseDelayMs: 1000, maxDelayMs: 60_000, probeIntervalMs: 2000 };
  const h503: Outcome = { kind: 'http', status: 503 };
  const ok: Outcome = { kind: 'http', status: 200 };
  const make = () =>
    new EndpointHealth({
      policy,
      logger: silentLogger(),
      clock: () => new Date(0),
      strictOrder: false,
      strictOrderHoldMs: 0,
    });

  it('a 2xx to a request sent before a confirmed outage does not end it; a probe sent during it does', () => {
    const h = make();
    const [s1, s2, s3] = [h.stamp(), h.stamp(), h.stamp()]; // sent together, before the outage
    expect(h.note(makeSms('r1'), h503, s1)).toBe('endpoint');
    expect(h.note(makeSms('r2'), h503, s2)).toBe('endpoint');
    expect(h.confirmedDown).toBeDefined();
    expect(h.note(makeSms('r3'), ok, s3)).toBe('up'); // r3's own answer counts for r3 (delivered)
    expect(h.down).toBeDefined(); // ... but the endpoint stays down
    expect(h.note(makeSms('r1'), ok, h.stamp())).toBe('up'); // the probe
    expect(h.down).toBeUndefined();
  });

  it('an unconfirmed outage (one record failing) ends with any answer of another record', () => {
    const h = make();
    const [s1, s2] = [h.stamp(), h.stamp()];
    h.note(makeSms('r1'), h503, s1);
    expect(h.down).toMatchObject({ confirmed: false });
    h.note(makeSms('r2'), ok, s2);
    expect(h.down).toBeUndefined();
  });
});
