/**
 * The listener under abuse, on the compiled daemon (`bin/pulsa-bridge run` on a `pulsa-bridge simulate` modem over a
 * pseudo-terminal, a real webhook on loopback): hundreds of idle connections beyond metrics.maxConnections, slow
 * headers, clients that send requests and never read, oversized and malformed requests, at the same time as SMS
 * arrive. The SMS keep flowing, status.json keeps being written, the daemon's memory stays bounded, and once the
 * flood ends the listener answers again.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { DaemonProcess, distBuilt, killAll, SimProcess } from '../support/daemon.js';
import { sleep } from '../support/until.js';
import { until } from '../support/until.js';
import { reply, startServer, type TestServer } from '../forward/server.js';
import { testWebhook, writeConfig } from '../support/config.js';
import { tempDir } from '../support/tmp.js';
import { hasSocat } from '../support/pty.js';

const TOKEN = 'abuse-token-0123456789';

let dir: string;
let cleanup: () => Promise<void>;
let server: TestServer | undefined;
const sockets: net.Socket[] = [];

beforeEach(async () => {
  expect(distBuilt(), 'dist/ is missing: run `npm run build` (npm test does)').toBe(true);
  ({ dir, cleanup } = await tempDir('listener-abuse'));
});

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await killAll();
  await server?.close();
  server = undefined;
  await cleanup();
});

function listenAddress(d: DaemonProcess): { host: string; port: number } {
  for (const line of d.out) {
    const m = /serving \/metrics and \/healthz on http:\/\/([\d.]+):(\d+)/.exec(line);
    if (m) return { host: m[1]!, port: Number(m[2]) };
  }
  throw new Error('no listen address logged');
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    sockets.push(s);
    s.on('error', () => undefined); // closed by the daemon beyond its cap: expected
    s.once('connect', () => resolve(s));
    s.once('close', () => resolve(s));
  });
}

/** One raw request on its own connection: the status line of the answer (or '' when the connection was closed). */
function raw(port: number, bytes: string | Buffer): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let got = '';
    s.on('data', (c: Buffer) => (got += c.toString('latin1')));
    s.on('error', () => undefined);
    s.on('close', () => resolve(got.split('\r\n')[0] ?? ''));
    s.on('connect', () => s.end(bytes));
  });
}

function rssKiB(pid: number): Promise<number> {
  return readFile(`/proc/${pid}/status`, 'utf8').then((t) => Number(/VmRSS:\s+(\d+)/.exec(t)![1]));
}

describe('the listener under abuse', () => {
  it.skipIf(!hasSocat)(
    'clear status codes; idle, slow and non-reading clients beyond the cap do not stop SMS, status.json or memory',
    async () => {
      server = await startServer([reply(200, '{"success":true}')]);
      const link = path.join(dir, 'modem');
      const sim = await SimProcess.start(link);
      const config = await writeConfig(dir, {
        webhook: testWebhook(server.url),
        modems: [{ name: 'tsel-1', port: link, senders: ['858'] }],
        metrics: { listen: '127.0.0.1:0', token: TOKEN, maxConnections: 32 },
      });
      const daemon = await DaemonProcess.start(config);
      await until(() => daemon.logged('modem ready'), 'the modem ready', 20_000);
      const { port } = listenAddress(daemon);
      const url = `http://127.0.0.1:${port}`;
      const auth = { authorization: `Bearer ${TOKEN}` };

      // Clear status codes.
      expect((await fetch(`${url}/nope`)).status).toBe(404);
      expect((await fetch(`${url}/api/status`)).status).toBe(401);
      expect(
        (await fetch(`${url}/api/status`, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status,
      ).toBe(401);
      expect(
        (
          await fetch(`${url}/api/status`, {
            headers: { authorization: `Basic ${Buffer.from(`ops:${TOKEN}`).toString('base64')}` },
          })
        ).status,
      ).toBe(200);
      const post = await fetch(`${url}/`, { method: 'POST', headers: auth, body: 'x' });
      expect(post.status).toBe(405);
      expect(post.headers.get('allow')).toBe('GET, HEAD');
      expect((await fetch(`${url}/metrics`, { method: 'DELETE' })).status).toBe(405);
      expect((await fetch(`${url}/${'a'.repeat(5000)}`)).status).toBe(414);
      expect(await raw(port, `GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`)).toBe(
        'HTTP/1.1 431 Request Header Fields Too Large',
      );
      expect(await raw(port, 'NONSENSE\r\n\r\n')).toBe('HTTP/1.1 400 Bad Request');
      expect(
        await raw(
          port,
          `GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Length: 3\r\n\r\nabc`,
        ),
      ).toBe('HTTP/1.1 413 Payload Too Large');
      expect((await fetch(`${url}/metrics`)).status).toBe(200); // /metrics stays open for Prometheus (protectMetrics off)

      const statusFile = path.join(dir, 'spool', 'status.json');
      const writtenAt = async () => (JSON.parse(await readFile(statusFile, 'utf8')) as { writtenAt: string }).writtenAt;
      const rssBefore = await rssKiB(daemon.child.pid!);

      // The flood: 300 idle connections (far beyond the cap of 32), 40 slow-header clients, 40 that ask and never read.
      for (let i = 0; i < 300; i++) await connect(port);
      for (let i = 0; i < 40; i++) (await connect(port)).write('GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      for (let i = 0; i < 40; i++) {
        const s = await connect(port);
        s.pause();
        s.write(`GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`.repeat(50));
      }
      const before = await writtenAt();
      for (let i = 1; i <= 5; i++)
        sim.send(`sms 858 Anda mendapatkan penambahan pulsa Rp ${i}000 dari nomor 6282112235774.`);
      await until(() => server!.requests.length >= 5, 'the five SMS POSTed while the listener is flooded', 20_000);
      await until(async () => (await writtenAt()) > before, 'status.json rewritten during the flood', 15_000);
      expect(daemon.running).toBe(true);
      const rssDuring = await rssKiB(daemon.child.pid!);
      expect(rssDuring - rssBefore, `RSS ${rssBefore} -> ${rssDuring} KiB`).toBeLessThan(40 * 1024);
      expect(
        daemon.logged('metrics: listener full (32, 8 per address): idle connections are closed to make room') ||
          daemon.logged('connections busy'),
      ).toBe(true);
      // The warnings are summarised: a few lines, not one per connection.
      expect(daemon.out.filter((l) => l.includes('"metrics: ')).length).toBeLessThan(20);

      // The flood ends: the listener answers again at once.
      for (const s of sockets.splice(0)) s.destroy();
      await sleep(200);
      const healthz = await fetch(`${url}/healthz`);
      expect(healthz.status).toBe(200);
      expect(await healthz.text()).toBe('ok\n');
    },
    90_000,
  );

  it('144 idle connections from one address: /healthz still answered, from another address and from that one', async () => {
    const { startMetricsServer } = await import('../../src/metrics/server.js');
    const { Registry } = await import('prom-client');
    const { captureLogger } = await import('../support/logger.js');
    const { logger, lines } = captureLogger();
    const listener = await startMetricsServer({
      listen: '127.0.0.1:0',
      registry: new Registry(),
      health: async () => ({ healthy: true, problems: [] }),
      logger,
    });
    try {
      const port = Number(listener.address.split(':').pop());
      const idle = (localAddress: string) =>
        new Promise<net.Socket>((resolve) => {
          const s = net.connect({ port, host: '127.0.0.1', localAddress });
          sockets.push(s);
          s.on('error', () => undefined);
          s.once('connect', () => resolve(s));
          s.once('close', () => resolve(s));
        });
      for (let i = 0; i < 144; i++) await idle('127.0.0.1');
      const get = (localAddress: string, host = '127.0.0.1') =>
        new Promise<string>((resolve) => {
          const s = net.connect({ port, host: '127.0.0.1', localAddress });
          let got = '';
          s.on('data', (c: Buffer) => (got += c.toString('latin1')));
          s.on('error', () => resolve(got));
          s.on('close', () => resolve(got));
          s.on('connect', () => s.end(`GET /healthz HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`));
        });
      for (let i = 0; i < 12; i++) {
        expect(await get('127.0.0.2')).toMatch(/^HTTP\/1\.1 200 OK[\s\S]*\r\n\r\n[\s\S]*ok\n/);
        expect(await get('127.0.0.1')).toMatch(/^HTTP\/1\.1 200 OK/);
      }
      // DNS rebinding: a name that is not this listener's is refused; loopback names, IP literals are answered.
      expect(await get('127.0.0.2', 'evil.example:9469')).toMatch(/^HTTP\/1\.1 421 /);
      expect(await get('127.0.0.2', 'localhost:9469')).toMatch(/^HTTP\/1\.1 200 /);
      expect(await get('127.0.0.2', '[::1]:9469')).toMatch(/^HTTP\/1\.1 200 /);
      // A line per cause, not per connection.
      expect(lines.filter((l) => l.msg.startsWith('metrics: listener full')).length).toBeLessThanOrEqual(2);
    } finally {
      await listener.close();
    }
  }, 60_000);
});
