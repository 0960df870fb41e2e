/**
 * The control socket's trust rules on a real Unix socket: peer credentials that cannot be had give the reading level
 * only (fail closed); the bounds answer `busy` (per connection, per modem, per uid at connect, slots kept for operators);
 * and nothing the daemon logs or reports carries a PIN or a URL secret.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { peerCredentials } from '../../src/control/server/peer.js';
import { ControlClient, RemoteError } from '../../src/control/client/client.js';
import { Dispatcher } from '../../src/control/server/dispatch.js';
import { ControlServer } from '../../src/control/server/server.js';
import type { PeerState } from '../../src/control/server/access.js';
import { reply, startServer } from '../forward/server.js';
import { captureLogger } from '../support/logger.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';
import { startInProcess } from '../support/in-process.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const errorOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as RemoteError,
  );

async function server(
  o: {
    identify?: ConstructorParameters<typeof ControlServer>[0]['identify'];
    limits?: ConstructorParameters<typeof ControlServer>[0]['limits'];
    handler?: ConstructorParameters<typeof ControlServer>[0]['handler'];
  } = {},
) {
  const { dir, cleanup } = await tempDir('trust');
  cleanups.push(cleanup);
  const { logger, lines } = captureLogger();
  const gate: Array<() => void> = [];
  const dispatcher = new Dispatcher({
    modems: [],
    version: 't',
    logger,
    status: () => ({ ok: true }),
    access: { daemonUid: process.getuid!(), operateGid: undefined, operateGroup: 'pulsa-bridge-ops' },
  });
  const socket = path.join(dir, 'c.sock');
  const s = new ControlServer({
    path: socket,
    logger,
    handler: o.handler ?? dispatcher.handle,
    ...(o.identify ? { identify: o.identify } : {}),
    ...(o.limits ? { limits: o.limits } : {}),
  });
  await s.listen();
  cleanups.push(() => s.close());
  return { socket, lines, gate, server: s };
}

describe('access levels on a real socket', () => {
  it('the peer is read with SO_PEERCRED (not the name the client gives) and logged with every request', async () => {
    const { socket, lines } = await server();
    const c = await ControlClient.connect(socket);
    cleanups.push(() => c.close());
    await c.request({ op: 'hello', client: 'root pretending' });
    await c.request({ op: 'status' });
    const logged = lines.filter((l) => l.msg.startsWith('control request from'));
    expect(logged.map((l) => l.msg.replace(/\(connection \d+\)/, '(connection N)'))).toEqual([
      `control request from uid ${process.getuid!()} pid ${process.pid} (connection N): hello`,
      `control request from uid ${process.getuid!()} pid ${process.pid} (connection N): status`,
    ]);
    expect(logged.every((l) => l.level === 30 && l.peerPid === process.pid)).toBe(true);
  });

  it('no credentials (no perl): reading works, operating is refused with the reason', async () => {
    const { socket, lines } = await server({
      identify: (s) =>
        peerCredentials(s, { perl: '/nonexistent/perl', sockopt: async () => ({ ok: false, error: 'armv6' }) }),
    });
    const c = await ControlClient.connect(socket);
    cleanups.push(() => c.close());
    expect(await c.request({ op: 'status' })).toEqual({ ok: true });
    const err = await errorOf(c.request({ op: 'at', command: 'AT+CSQ' }));
    expect(err).toBeInstanceOf(RemoteError);
    expect([err!.code, err!.message]).toEqual([
      'forbidden',
      expect.stringMatching(
        /^`at` needs the operating level, and the daemon could not tell who is connected \(SO_PEERCRED through \/nonexistent\/perl failed: .*ENOENT\): refused$/,
      ),
    ]);
    const balance = await errorOf(c.request({ op: 'balance', code: '*858*0812*5000#', replies: ['1'] }));
    expect(balance!.code).toBe('forbidden');
    expect(lines.some((l) => l.level === 40 && /at from unknown peer .* refused/.test(l.msg))).toBe(true);
  });
});

describe("operators' USSD sessions are not a reader's to watch", () => {
  const reader = { ok: true as const, peer: { pid: process.pid, uid: 4_000_000, gid: 4_000_000, groups: [] } };
  const ussdEvent = {
    v: 1 as const,
    event: 'ussd' as const,
    modem: 'm1',
    data: { owner: 'pulsa-bridge CLI', request: '1234', status: 1, text: 'Masukkan PIN' },
  };

  it('a reader subscribing to ussd or urc events gets forbidden with the group hint; sms and delivery stay readable', async () => {
    const { socket, lines, server: s } = await server({ identify: () => Promise.resolve(reader) });
    const c = await ControlClient.connect(socket);
    cleanups.push(() => c.close());
    for (const events of [['ussd'], ['urc'], ['urc', 'sms', 'delivery', 'ussd']] as const) {
      const err = await errorOf(c.request({ op: 'subscribe', events: [...events] }));
      expect(err).toBeInstanceOf(RemoteError);
      expect(err!.code).toBe('forbidden');
      expect(err!.message).toMatch(
        /^`subscribe` to (ussd|urc|urc and ussd) events \(operators' USSD codes, menu answers and replies\) needs the operating level: group pulsa-bridge-ops \(control.operateGroup\) does not exist on this host$/,
      );
      expect(err!.hint).toMatch(/sudo usermod -aG pulsa-bridge-ops USER.*`sms`\/`delivery` events work without it/);
    }
    expect(await c.request({ op: 'subscribe', events: ['sms', 'delivery'] })).toEqual({
      subscribed: ['sms', 'delivery'],
    });
    const seen: string[] = [];
    c.onEvent((e) => seen.push(e.event));
    s.broadcast(ussdEvent);
    s.broadcast({
      v: 1,
      event: 'urc',
      modem: 'm1',
      data: { name: 'CUSD', lines: ['+CUSD: 1,"Masukkan PIN",15'], data: {} },
    });
    s.broadcast({ v: 1, event: 'sms', modem: 'm1', data: { id: 'sms-1' } });
    await until(() => seen.length > 0, 'the sms event');
    await c.request({ op: 'status' }); // anything sent before this answer has arrived
    expect(seen).toEqual(['sms']);
    expect(lines.some((l) => l.level === 40 && /subscribe from .* refused/.test(l.msg))).toBe(true);
  });

  it('a reader may list the canaries but not run, pause or resume one (forbidden with the group hint)', async () => {
    const { socket } = await server({ identify: () => Promise.resolve(reader) });
    const c = await ControlClient.connect(socket);
    cleanups.push(() => c.close());
    for (const op of ['canary.run', 'canary.pause', 'canary.resume'] as const) {
      const err = await errorOf(c.request({ op, name: 'tsel' }));
      expect(err, op).toBeInstanceOf(RemoteError);
      expect(err!.code, op).toBe('forbidden');
      expect(err!.hint, op).toMatch(/pulsa-bridge-ops/);
    }
    // The listing is the reading level's (this dispatcher runs no canaries: it says so, it does not refuse).
    const ls = await errorOf(c.request({ op: 'canary.ls' }));
    expect(ls!.code).toBe('bad_request');
    expect(ls!.message).toBe('canaries are not offered by this daemon');
  });

  it("an operator (the daemon's own uid, read with SO_PEERCRED) subscribes to ussd and urc and gets them", async () => {
    const { socket, server: s } = await server();
    const c = await ControlClient.connect(socket);
    cleanups.push(() => c.close());
    expect(await c.request({ op: 'subscribe', events: ['urc', 'sms', 'delivery', 'ussd'] })).toEqual({
      subscribed: ['urc', 'sms', 'delivery', 'ussd'],
    });
    const seen: unknown[] = [];
    c.onEvent((e) => seen.push(e.data));
    s.broadcast(ussdEvent);
    await until(() => seen.length === 1, 'the ussd event');
    expect(seen).toEqual([ussdEvent.data]);
  });
});

describe('bounds', () => {
  it('a connection gets at most 4 requests in flight; the fifth is busy at once', async () => {
    const release: Array<() => void> = [];
    const { socket } = await server({ handler: () => new Promise((r) => release.push(() => r('done'))) });
    const c = await ControlClient.connect(socket);
    cleanups.push(() => c.close());
    const first = [1, 2, 3, 4].map(() => c.request({ op: 'status' }));
    await until(() => release.length === 4, 'four requests in the handler');
    const fifth = await errorOf(c.request({ op: 'status' }));
    expect([fifth!.code, fifth!.message]).toEqual(['busy', 'busy: 4 requests of this connection are still in flight']);
    for (const r of release) r();
    expect(await Promise.all(first)).toEqual(['done', 'done', 'done', 'done']);
  });

  it("connections count when they connect: a reader's idle ones are capped per uid, the last slots are operators'", async () => {
    const plan: number[] = []; // the uid of each next connection, in connection order
    const identify = () =>
      Promise.resolve({ ok: true as const, peer: { pid: 1, uid: plan.shift()!, gid: 1, groups: [] } });
    const {
      socket,
      server: s,
      lines,
    } = await server({
      identify,
      handler: (req) => Promise.resolve(req.op),
      limits: {
        maxConnections: 4,
        reservedConnections: 2,
        maxPerUid: 3,
        firstRequestMs: 400,
        lineMs: 400,
        idleMs: 400,
      },
    });
    const open = async (uid: number) => {
      plan.push(uid);
      const c = await ControlClient.connect(socket);
      cleanups.push(() => c.close());
      await until(() => plan.length === 0, 'the daemon to read the peer');
      return c;
    };
    const admitted = () => s.connections.filter((c) => (c as unknown as { admitted: boolean }).admitted).length;
    // Reader A: three idle connections are admitted, the fourth refused before it asks anything.
    for (let i = 0; i < 3; i++) await open(4_000_001);
    const fourth = await open(4_000_001);
    const perUid = await errorOf(fourth.request({ op: 'status' }));
    expect([perUid!.name, (perUid as unknown as { code: string }).code, perUid!.message]).toEqual([
      'ControlClientError',
      'busy',
      'uid 4000001 already holds 3 control connections (at most 3)',
    ]);
    // Reader B fills the readers' share; reader C is refused: the last two slots are kept.
    await open(4_000_002);
    await until(() => admitted() === 4, 'four readers admitted');
    const c = await open(4_000_003);
    const full = await errorOf(c.request({ op: 'status' }));
    expect(full!.message).toBe(
      "the daemon's control socket is full (4 connections open; the last 2 are kept for operators)",
    );
    // Root gets the kept slots, with every request; a third root connection finds the socket full.
    const root1 = await open(0);
    const root2 = await open(0);
    expect(await root1.request({ op: 'at', command: 'AT+CSQ' })).toBe('at');
    expect(await root2.request({ op: 'ussd.open', code: '*888#' })).toBe('ussd.open');
    const root3 = await open(0);
    const over = await errorOf(root3.request({ op: 'status' }));
    expect(over!.message).toBe("the daemon's control socket is full (6 connections open)");
    // Each refusal cause is one warning line (summarised after), whatever the number of connections.
    expect(lines.filter((l) => l.level === 40).map((l) => l.msg.replace(/client \d+/, 'client N'))).toEqual([
      'control client N (uid 4000001 pid 1): uid 4000001 already holds 3 control connections (at most 3): refusing the connection',
      "control client N (uid 4000003 pid 1): the daemon's control socket is full (4 connections open; the last 2 are kept for operators): refusing the connection",
      "control client N (uid 0 pid 1): the daemon's control socket is full (6 connections open): refusing the connection",
    ]);
    // Idle for longer than idleMs: the daemon says why and closes.
    const gone = await errorOf(new Promise((r) => setTimeout(r, 1500)).then(() => root1.request({ op: 'status' })));
    expect(gone!.message).toMatch(/^the daemon closed the control connection: idle for 400 ms$/);
  });

  it('connections are admitted in the order they connected, whatever order their peers are read in', async () => {
    // One slot for readers. The first connection's peer is read last: the slot is still the first's.
    const lookups: Array<() => void> = [];
    const identify = () =>
      new Promise<PeerState>((resolve) => {
        const uid = 4_000_001 + lookups.length;
        lookups.push(() => resolve({ ok: true, peer: { pid: 1, uid, gid: 1, groups: [] } }));
      });
    const { socket } = await server({
      identify,
      handler: (req) => Promise.resolve(req.op),
      limits: { maxConnections: 1, reservedConnections: 1 },
    });
    const first = await ControlClient.connect(socket);
    cleanups.push(() => first.close());
    await until(() => lookups.length === 1, "the first connection's lookup");
    const second = await ControlClient.connect(socket);
    cleanups.push(() => second.close());
    await until(() => lookups.length === 2, "the second connection's lookup");
    const answers = [first.request({ op: 'status' }), errorOf(second.request({ op: 'status' }))] as const;
    lookups[1]!();
    lookups[0]!();
    expect(await answers[0]).toBe('status');
    expect((await answers[1])!.message).toBe(
      "the daemon's control socket is full (1 connections open; the last 1 are kept for operators)",
    );
  });

  it("a reader's flood of refused requests and of reads is a few log lines, not one per request", async () => {
    const reader = { ok: true as const, peer: { pid: 7, uid: 4_000_000, gid: 4_000_000, groups: [] } };
    const { socket, lines } = await server({ identify: () => Promise.resolve(reader) });
    const c = await ControlClient.connect(socket);
    cleanups.push(() => c.close());
    for (let round = 0; round < 50; round++) {
      await Promise.all([
        c.request({ op: 'status' }),
        errorOf(c.request({ op: 'at', command: 'AT+CSQ' })),
        errorOf(c.request({ op: 'sms.send', to: '0812', text: 'x' })),
      ]);
    }
    // One line per cause (status, at, sms.send requests; the two refusals) until the interval ends with a count.
    expect(lines.length).toBeLessThanOrEqual(8);
    expect(lines.filter((l) => l.level === 40).map((l) => l.msg.replace(/\(connection \d+\)/, ''))).toEqual([
      expect.stringMatching(/^control: at from uid 4000000 pid 7 refused: `at` needs the operating level/),
      expect.stringMatching(/^control: sms.send from uid 4000000 pid 7 refused: `sms.send` needs the operating level/),
    ]);
  });
});

describe('operating requests are rate-limited per uid', () => {
  it('a burst of 30, then `busy` with the limit until tokens come back (5 a second); another uid is not held up', async () => {
    const { dir, cleanup } = await tempDir('trust-rate');
    cleanups.push(cleanup);
    const { logger, lines } = captureLogger();
    let clock = 1_000_000;
    const dispatcher = new Dispatcher({
      modems: [],
      version: 't',
      logger,
      status: () => ({ ok: true }),
      now: () => clock,
      access: { daemonUid: process.getuid!(), operateGid: 4242, operateGroup: 'ops' },
    });
    const uids = [4_000_010, 4_000_011];
    const s = new ControlServer({
      path: path.join(dir, 'c.sock'),
      logger,
      handler: dispatcher.handle,
      identify: () => Promise.resolve({ ok: true, peer: { pid: 9, uid: uids.shift()!, gid: 1, groups: [4242] } }),
    });
    await s.listen();
    cleanups.push(() => s.close());
    const a = await ControlClient.connect(path.join(dir, 'c.sock'));
    cleanups.push(() => a.close());
    const codes: string[] = [];
    for (let i = 0; i < 35; i++)
      codes.push((await errorOf(a.request({ op: 'at', command: 'AT+CSQ', modem: 'x' })))!.code);
    expect(codes.filter((c) => c === 'unknown_modem').length).toBe(30); // it reached the dispatcher (no such modem)
    expect(codes.slice(30)).toEqual(['busy', 'busy', 'busy', 'busy', 'busy']);
    const e = await errorOf(a.request({ op: 'at', command: 'AT+CSQ', modem: 'x' }));
    expect(e!.message).toBe('busy: uid 4000010 sent more than 30 operating requests at once (then 5 a second)');
    expect(await a.request({ op: 'status' })).toEqual({ ok: true }); // reading is not counted
    const b = await ControlClient.connect(path.join(dir, 'c.sock'));
    cleanups.push(() => b.close());
    expect((await errorOf(b.request({ op: 'at', command: 'AT+CSQ', modem: 'x' })))!.code).toBe('unknown_modem');
    clock += 1000; // five more a second
    const after: string[] = [];
    for (let i = 0; i < 6; i++)
      after.push((await errorOf(a.request({ op: 'at', command: 'AT+CSQ', modem: 'x' })))!.code);
    expect(after).toEqual([
      'unknown_modem',
      'unknown_modem',
      'unknown_modem',
      'unknown_modem',
      'unknown_modem',
      'busy',
    ]);
    expect(lines.filter((l) => l.msg.includes('operating requests at once')).length).toBe(1); // summarised
  });
});

describe('the limits sweep', () => {
  it('runs only while a connection is open, and again for one opened after all had gone', async () => {
    const { socket, server: s } = await server({ limits: { firstRequestMs: 300, lineMs: 300, idleMs: 300 } });
    const sweeping = () => (s as unknown as { sweeper?: NodeJS.Timeout }).sweeper !== undefined;
    expect(sweeping(), 'no client: no timer').toBe(false);
    for (const round of [1, 2]) {
      const c = await ControlClient.connect(socket);
      cleanups.push(() => c.close());
      expect(sweeping(), `round ${round}: a client`).toBe(true);
      // Silent past firstRequestMs: the daemon closes it, which only the sweep can do.
      const closed = await errorOf(new Promise((r) => setTimeout(r, 1200)).then(() => c.request({ op: 'status' })));
      expect(closed?.message, `round ${round}`).toMatch(
        /^the daemon closed the control connection: no request for 300 ms$/,
      );
      await until(() => !sweeping(), `round ${round}: the timer to stop with the last connection`, 5000);
    }
  });
});

describe('no secrets in what the daemon logs and reports', () => {
  it("PINs in any segment of a forced AT line, and the webhook URL's credentials and query", async () => {
    const { dir, cleanup } = await tempDir('trust-daemon');
    cleanups.push(cleanup);
    const hook = await startServer([reply(200, '{"success":true}')]);
    cleanups.push(() => hook.close());
    const url = hook.url.replace('http://', 'http://hookuser:hookpass@') + '?token=s3cr3ttoken';
    const config = parseConfig({
      webhook: { url },
      spool: { dir: path.join(dir, 'spool'), fsync: false },
      modems: [{ name: 'tsel-1', port: 'virtual:tsel-1', senders: ['858'], sweepIntervalSec: 3600 }],
      shutdownGraceSec: 1,
    });
    const { logger, lines } = captureLogger();
    await startInProcess(config, cleanups, { logger, virtualModem: { bootStepMs: 0, noise: false } });
    const c = await ControlClient.connect(config.control.socketPath);
    cleanups.push(() => c.close());
    await c.request({ op: 'at', command: 'AT+CSQ;+CPIN="4321"', force: true });
    await c.request({ op: 'at', command: 'AT+CLCK="SC",1,"4321"', force: true }).catch(() => undefined);
    await c.request({ op: 'at', command: 'AT+CSQ ; +CPWD="SC","4321","8765"', force: true }).catch(() => undefined);
    const status = JSON.stringify(await c.request({ op: 'status' }));
    await until(
      () => lines.some((l) => l.msg.includes('may have changed what the daemon relies on')),
      'the re-check line',
    );
    // info and above (what journald keeps by default): the AT channel's own debug lines are its module's business.
    const all = JSON.stringify(lines.filter((l) => l.level >= 30));
    expect(all).not.toMatch(/4321|8765|hookpass|s3cr3ttoken/);
    expect(status).not.toMatch(/hookpass|s3cr3ttoken/);
    expect(status).toContain('token=********');
    expect(lines.some((l) => l.level === 40 && l.msg.includes('AT+CSQ;+CPIN=[redacted]'))).toBe(true);
  });
});
