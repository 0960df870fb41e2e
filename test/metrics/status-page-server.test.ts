/**
 * The listener with the page, in-process: Daemon.start with two virtual modems and `metrics.listen` on loopback, a
 * real webhook. One status snapshot feeds /healthz, /api/status and status.json; the token guards the page and its
 * JSON (bearer or Basic), /metrics stays open unless protectMetrics; the page's files carry a strict CSP; HEAD works;
 * a test transfer's report left by the CLI shows up.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { parseConfig } from '../../src/config.js';
import { Daemon } from '../../src/daemon.js';
import { statusFilePath, transferReportPath } from '../../src/daemon/status-file.js';
import { authorised } from '../../src/metrics/server.js';
import { createHash } from 'node:crypto';
import { reply, startServer } from '../forward/server.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';
import { startInProcess } from '../support/in-process.js';
import { virtualModemAt } from '../../src/virtual-modem/virtual-ports.js';

const TOKEN = 'unit-token-0123456789';
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function start(metrics: Record<string, unknown>): Promise<{ daemon: Daemon; url: string; spoolDir: string }> {
  const { dir, cleanup } = await tempDir('page-server');
  cleanups.push(cleanup);
  const server = await startServer([reply(200, '{"success":true}')]);
  cleanups.push(() => server.close());
  const spoolDir = path.join(dir, 'spool');
  const config = parseConfig({
    webhook: { url: server.url },
    spool: { dir: spoolDir, fsync: false },
    modems: [
      { name: 'a', port: 'virtual:a', senders: ['858'] },
      { name: 'b', port: 'virtual:b', senders: ['858'] },
    ],
    metrics: { listen: '127.0.0.1:0', ...metrics },
    shutdownGraceSec: 1,
  });
  const daemon = await startInProcess(config, cleanups, { virtualModem: { bootStepMs: 0, noise: false } });
  return { daemon, url: `http://${daemon.metricsAddress}`, spoolDir };
}

const bearer = { headers: { authorization: `Bearer ${TOKEN}` } };

describe('the status page listener', () => {
  it('one snapshot: /healthz, /api/status and status.json carry the same verdict; readers within a second share it', async () => {
    const { daemon, url, spoolDir } = await start({});
    const a = daemon.snapshot();
    expect(daemon.snapshot()).toBe(a); // shared, not judged again
    const page = (await (await fetch(`${url}/api/status`)).json()) as {
      health: unknown;
      modems: Array<{ name: string; state: string }>;
    };
    expect(page.modems.map((m) => [m.name, m.state])).toEqual([
      ['a', 'running'],
      ['b', 'running'],
    ]);
    const snap = await daemon.snapshot();
    expect(page.health).toEqual({ healthy: snap.health.healthy, state: 'healthy', problems: [], warnings: [] });
    expect(await (await fetch(`${url}/healthz`)).text()).toBe('ok\n');
    await until(
      async () => {
        try {
          return (
            (JSON.parse(await readFile(statusFilePath(spoolDir), 'utf8')) as { spool?: unknown }).spool !== undefined
          );
        } catch {
          return false;
        }
      },
      'status.json with the snapshot',
      10_000,
    );
    const file = JSON.parse(await readFile(statusFilePath(spoolDir), 'utf8')) as {
      health: unknown;
      spool: { pending: number };
    };
    expect(file.health).toEqual({ healthy: true, state: 'healthy', problems: [], warnings: [] });
    expect(file.spool.pending).toBe(0);

    // A modem stops: the next reader judges anew (a state change renews the snapshot), everywhere the same.
    virtualModemAt('virtual:b')!.stop();
    await until(async () => (await fetch(`${url}/healthz`)).status === 503, '/healthz to say unhealthy', 15_000);
    const after = (await (await fetch(`${url}/api/status`)).json()) as {
      health: { healthy: boolean; problems: Array<{ message: string; hint: string | null }> };
    };
    const healthz = await (await fetch(`${url}/healthz`)).text();
    expect(after.health.healthy).toBe(false);
    expect(after.health.problems.map((p) => p.message)).toEqual([
      expect.stringMatching(/^modem b is disconnected, down since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d\d:\d\d/),
    ]);
    expect(healthz).toBe(
      `unhealthy\n${after.health.problems.map((p) => `- ${p.message}\n${p.hint ? `  hint: ${p.hint}\n` : ''}`).join('')}`,
    );
  });

  it('the token guards the page, its files and JSON (bearer or Basic); /metrics and /healthz stay open; strict CSP; HEAD', async () => {
    const { url, spoolDir } = await start({ token: TOKEN });
    for (const p of ['/', '/page.js', '/page.css', '/favicon.svg', '/api/status']) {
      const r = await fetch(`${url}${p}`);
      expect(r.status, p).toBe(401);
      expect(r.headers.get('www-authenticate')).toBe('Basic realm="pulsa-bridge", charset="UTF-8"');
      expect((await fetch(`${url}${p}`, bearer)).status, p).toBe(200);
    }
    expect(
      (
        await fetch(`${url}/api/status`, {
          headers: { authorization: `Basic ${Buffer.from(`anyone:${TOKEN}`).toString('base64')}` },
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await fetch(`${url}/api/status`, {
          headers: { authorization: `Basic ${Buffer.from(`${TOKEN}:x`).toString('base64')}` },
        })
      ).status,
    ).toBe(401);
    expect((await fetch(`${url}/metrics`)).status).toBe(200);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const page = await fetch(`${url}/`, bearer);
    expect(page.headers.get('content-security-policy')).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await page.text();
    expect(html).not.toMatch(/<script>|<style>|\sstyle=|\son[a-z]+=|https?:\/\//); // nothing inline, nothing third-party
    const script = await (await fetch(`${url}/page.js`, bearer)).text();
    expect(script).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|https?:\/\//); // data only ever as text
    expect(script).toContain("fetch('/api/status'");
    const head = await fetch(`${url}/page.js`, { method: 'HEAD', ...bearer });
    expect(head.status).toBe(200);
    expect(Number(head.headers.get('content-length'))).toBeGreaterThan(1000);
    expect(await head.text()).toBe('');

    // The report the CLI's test transfer leaves beside status.json.
    await writeFile(
      transferReportPath(spoolDir),
      JSON.stringify({
        at: new Date().toISOString(),
        from: 'a',
        to: '081298765432',
        amount: 5000,
        operator: 'telkomsel',
        outcome: 'confirmed',
        totalMs: 5000,
        steps: [],
        sent: ['USSD'],
      }),
    );
    await new Promise((r) => setTimeout(r, 1100)); // past the shared snapshot
    const json = (await (await fetch(`${url}/api/status`, bearer)).json()) as {
      transfer: { outcome: string; to: string };
    };
    expect(json.transfer).toMatchObject({ outcome: 'confirmed', to: '0812•••••432' });
  });

  it('protectMetrics puts /metrics and /healthz behind the token; page off: / is 404', async () => {
    const { url } = await start({ token: TOKEN, protectMetrics: true, page: { enabled: false } });
    expect((await fetch(`${url}/metrics`)).status).toBe(401);
    expect((await fetch(`${url}/healthz`)).status).toBe(401);
    expect((await fetch(`${url}/metrics`, bearer)).status).toBe(200);
    expect((await fetch(`${url}/`, bearer)).status).toBe(404);
    expect((await fetch(`${url}/api/status`, bearer)).status).toBe(404);
  });

  it('idle connections up to maxConnections give way: /healthz is answered at once, and the idle ones are closed', async () => {
    const { url, daemon } = await start({ maxConnections: 4 });
    const port = Number(daemon.metricsAddress!.split(':')[1]);
    const idle: net.Socket[] = [];
    for (let i = 0; i < 4; i++) {
      const s = net.connect(port, '127.0.0.1');
      await new Promise((r) => s.once('connect', r));
      idle.push(s);
    }
    cleanups.push(() => idle.forEach((s) => s.destroy()));
    await new Promise((r) => setTimeout(r, 50));
    const closed = idle.map((s) => new Promise<void>((r) => s.once('close', () => r())));
    for (let i = 0; i < 4; i++) expect((await fetch(`${url}/healthz`)).status).toBe(200);
    await Promise.race([
      Promise.any(closed),
      new Promise((_, no) => setTimeout(() => no(new Error('no idle connection was closed')), 5_000)),
    ]);
  });

  it('authorised(): bearer or Basic password, nothing else', () => {
    const d = createHash('sha256').update(TOKEN).digest();
    expect(authorised(`Bearer ${TOKEN}`, d)).toBe(true);
    expect(authorised(`bearer ${TOKEN}`, d)).toBe(true);
    expect(authorised(`Basic ${Buffer.from(`u:${TOKEN}`).toString('base64')}`, d)).toBe(true);
    expect(authorised(`Basic ${Buffer.from(`u:${TOKEN}x`).toString('base64')}`, d)).toBe(false);
    expect(authorised(`Basic ${Buffer.from(TOKEN).toString('base64')}`, d)).toBe(false);
    expect(authorised(TOKEN, d)).toBe(false);
    expect(authorised(undefined, d)).toBe(false);
    expect(authorised('Bearer ', d)).toBe(false);
  });
});
