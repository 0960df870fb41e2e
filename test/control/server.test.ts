import { link, lstat, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ControlClient, ControlClientError, RemoteError } from '../../src/control/client/client.js';
import { ControlError, MAX_LINE_BYTES } from '../../src/control/protocol.js';
import { ControlServer, type ControlHandler } from '../../src/control/server/server.js';
import { silentLogger } from '../../src/log.js';
import { until } from '../support/until.js';

let dir: string;
let server: ControlServer | undefined;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pb-ctl-'));
});
afterEach(async () => {
  await server?.close();
  server = undefined;
  await rm(dir, { recursive: true, force: true });
});

async function start(handler: ControlHandler, mode?: number) {
  const path = join(dir, 'control.sock');
  server = new ControlServer({ path, handler, logger: silentLogger(), ...(mode !== undefined ? { mode } : {}) });
  await server.listen();
  return path;
}

/** A raw client: write lines, read reply lines. */
function raw(path: string) {
  const s = connect(path);
  const lines: string[] = [];
  let buf = '';
  s.on('data', (d) => {
    buf += d.toString('utf8');
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      lines.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
  });
  const closed = new Promise<void>((r) => s.on('close', () => r()));
  const next = async (n: number) => {
    for (let t = 0; t < 200 && lines.length < n; t++) await new Promise((r) => setTimeout(r, 10));
    return lines.slice(0, n).map((l) => JSON.parse(l) as Record<string, unknown>);
  };
  return { s, lines, next, closed };
}

describe('ControlServer over a real Unix socket', () => {
  it('creates the socket with mode 0660 and answers requests by id', async () => {
    const path = await start(async (req) => ({ op: req.op, modem: req.modem ?? null }));
    expect((await stat(path)).mode & 0o777).toBe(0o660);
    const c = await ControlClient.connect(path);
    const [a, b] = await Promise.all([c.request({ op: 'hello' }), c.request({ op: 'info', modem: 'tsel-1' })]);
    expect(a).toEqual({ op: 'hello', modem: null });
    expect(b).toEqual({ op: 'info', modem: 'tsel-1' });
    await c.close();
  });

  it('answers malformed, unknown and wrong-version lines with errors and keeps the connection', async () => {
    let calls = 0;
    const path = await start(async () => ++calls);
    const r = raw(path);
    r.s.write('garbage\n{"v":1,"id":2,"op":"nope"}\n{"v":9,"id":3,"op":"hello"}\n[]\n{"v":1,"id":5,"op":"hello"}\n');
    const replies = await r.next(5);
    expect(replies.map((x) => (x.ok ? 'ok' : (x.error as { code: string }).code))).toEqual([
      'bad_request',
      'bad_request',
      'version',
      'bad_request',
      'ok',
    ]);
    expect(replies[4]).toMatchObject({ id: 5, result: 1 });
    expect(calls).toBe(1);
    r.s.destroy();
  });

  it('closes a connection that sends an oversized line, after saying why', async () => {
    const path = await start(async () => 'never');
    const r = raw(path);
    r.s.write('{"v":1,"id":1,"op":"sms.send","to":"1","text":"' + 'x'.repeat(MAX_LINE_BYTES + 10));
    await r.closed;
    expect(JSON.parse(r.lines[0]!)).toMatchObject({ ok: false, error: { code: 'too_large' } });
  });

  it('maps ControlError to its code and other throws to internal, and stays up', async () => {
    const path = await start(async (req) => {
      if (req.op === 'info') throw new ControlError('busy', 'busy, session opened by x', 'wait', { owner: 'x' });
      throw new TypeError('boom');
    });
    const c = await ControlClient.connect(path);
    const e1 = (await c.request({ op: 'info' }).catch((e: unknown) => e)) as RemoteError;
    expect(e1).toBeInstanceOf(RemoteError);
    expect([e1.code, e1.message, e1.hint, e1.data]).toEqual([
      'busy',
      'busy, session opened by x',
      'wait',
      { owner: 'x' },
    ]);
    await expect(c.request({ op: 'hello' })).rejects.toMatchObject({ code: 'internal', message: 'boom' });
    await c.close();
  });

  it('aborts the requests of a client that disconnects and runs its close callbacks', async () => {
    let aborted = false;
    let closed = false;
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const path = await start(
      (_req, conn, signal) =>
        new Promise((_, reject) => {
          conn.onClose(() => (closed = true));
          signal.addEventListener('abort', () => {
            aborted = true;
            reject(signal.reason);
          });
          started();
        }),
    );
    const c = await ControlClient.connect(path);
    void c.request({ op: 'ussd.open', code: '*888#' }).catch(() => undefined);
    await running;
    await c.close();
    await until(() => aborted && closed, 'the handler aborted and the connection closed', 1000, { everyMs: 10 });
    expect([aborted, closed]).toEqual([true, true]);
  });

  it('fails pending requests at once when the daemon goes away', async () => {
    const path = await start(() => new Promise(() => undefined));
    const c = await ControlClient.connect(path);
    const failed = expect(c.request({ op: 'info' })).rejects.toMatchObject({ code: 'disconnected' });
    await server!.close();
    server = undefined;
    await failed;
  });

  it('replaces a stale socket file, refuses to start beside a live one', async () => {
    const path = join(dir, 'control.sock');
    // A socket file left by a daemon that died: a hard link keeps it after its server closed.
    const old = createServer();
    await new Promise<void>((r) => old.listen(join(dir, 'old.sock'), r));
    await link(join(dir, 'old.sock'), path);
    await new Promise<void>((r) => old.close(() => r()));
    expect((await lstat(path)).isSocket()).toBe(true);
    server = new ControlServer({ path, handler: async () => 1, logger: silentLogger() });
    await server.listen();
    const second = new ControlServer({ path, handler: async () => 2, logger: silentLogger() });
    await expect(second.listen()).rejects.toThrow(/another process is listening/);
    const c = await ControlClient.connect(path);
    expect(await c.request({ op: 'hello' })).toBe(1);
    await c.close();
  });

  it('refuses to start over a file that is not a socket, and leaves it as it was', async () => {
    const path = join(dir, 'control.sock');
    await writeFile(path, 'not mine to delete');
    const srv = new ControlServer({ path, handler: async () => 1, logger: silentLogger() });
    await expect(srv.listen()).rejects.toThrow(/exists and is not a socket \(a regular file/);
    expect(await readFile(path, 'utf8')).toBe('not mine to delete');
  });

  it('the client tells "no daemon" from "permission denied"', async () => {
    await expect(ControlClient.connect(join(dir, 'absent.sock'))).rejects.toMatchObject({ code: 'no_daemon' });
    const dead = join(dir, 'dead.sock');
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(dead, r));
    await new Promise<void>((r) => srv.close(() => r()));
    await expect(ControlClient.connect(dead)).rejects.toBeInstanceOf(ControlClientError);
  });

  it('delivers broadcast events only to subscribed connections', async () => {
    const path = await start(async (req, conn) => {
      if (req.op === 'subscribe') for (const e of req.events) conn.subscriptions.add(e);
      return true;
    });
    const a = await ControlClient.connect(path);
    const b = await ControlClient.connect(path);
    const got: string[] = [];
    a.onEvent((e) => got.push(`a:${e.event}`));
    b.onEvent((e) => got.push(`b:${e.event}`));
    await a.request({ op: 'subscribe', events: ['sms'] });
    await b.request({ op: 'hello' });
    server!.broadcast({ v: 1, event: 'sms', modem: 'm', data: { id: 'x' } });
    server!.broadcast({ v: 1, event: 'urc', modem: 'm', data: { line: '+CSQ' } });
    await a.request({ op: 'hello' }); // a round trip after the broadcasts: they have arrived
    expect(got).toEqual(['a:sms']);
    await a.close();
    await b.close();
  });

  it('disconnects a client that does not read instead of buffering without bound', async () => {
    let conns = 0;
    const path = await start(async (_req, conn) => {
      conns++;
      conn.subscriptions.add('urc');
      return true;
    });
    const s: Socket = connect(path);
    await new Promise<void>((r) => s.once('connect', () => r()));
    s.write('{"v":1,"id":1,"op":"subscribe","events":["urc"]}\n');
    for (let i = 0; i < 100 && conns === 0; i++) await new Promise((r) => setTimeout(r, 10));
    s.pause(); // a hung client: never reads again
    const closed = new Promise<void>((r) => s.on('close', () => r()));
    const big = 'x'.repeat(16 * 1024);
    for (let i = 0; i < 400 && server!.connections.length > 0; i++) {
      server!.broadcast({ v: 1, event: 'urc', data: big });
      await new Promise((r) => setImmediate(r));
    }
    expect(server!.connections.length).toBe(0);
    s.destroy();
    await closed;
  });
});
