/**
 * Green only when money can flow, from outside: a daemon (in this process, real HTTP, a real spool) whose webhook
 * refuses connections while an SMS waits is unhealthy on /healthz (503, the reason and its hint), on the page's JSON
 * and in `pulsa-bridge status` (exit 1); once the webhook answers it is healthy again. A SIM whose active period ended
 * is unhealthy the same way.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { parseConfig } from '../../src/config.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';
import { startInProcess } from '../support/in-process.js';
import { cli } from '../support/cli.js';
import { writeConfig } from '../support/config.js';
import { virtualModemAt } from '../../src/virtual-modem/virtual-ports.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A port nothing listens on now (connection refused), where a webhook can be started later. */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('health says whether money can flow', () => {
  it('the webhook refusing connections with an SMS waiting: unhealthy everywhere, with the hint; healthy once it answers', async () => {
    const { dir, cleanup } = await tempDir('money-flow');
    cleanups.push(cleanup);
    const port = await freePort();
    const raw = {
      webhook: {
        url: `http://127.0.0.1:${port}/api/v1/convert-pulsa/webhook/sms-gateway`,
        retry: { baseDelayMs: 100, maxDelayMs: 500, probeIntervalMs: 200 },
      },
      spool: { dir: path.join(dir, 'spool'), fsync: false },
      modems: [{ name: 'tsel-1', port: 'virtual:tsel-1', senders: ['858'] }],
      metrics: { listen: '127.0.0.1:0' },
      control: { socket: path.join(dir, 'control.sock') },
      shutdownGraceSec: 0,
    };
    const file = await writeConfig(dir, raw, { defaults: false });
    const daemon = await startInProcess(parseConfig(raw, {}), cleanups, {
      virtualModem: { bootStepMs: 0, noise: false },
    });
    const url = `http://${daemon.metricsAddress}`;
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    virtualModemAt('virtual:tsel-1')!.injectSms({
      from: '858',
      text: 'Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774',
    });
    await until(
      async () => (await fetch(`${url}/healthz`)).status === 503,
      '/healthz 503 while the webhook refuses',
      15_000,
    );
    const body = await (await fetch(`${url}/healthz`)).text();
    expect(body).toMatch(
      /^unhealthy\n- the webhook fails since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d\d:\d\d \(\d+ attempts? in a row\): .*ECONNREFUSED/,
    );
    expect(body).toContain('  hint: SMS wait in the spool and go as soon as it answers');
    const page = (await (await fetch(`${url}/api/status`)).json()) as {
      health: { state: string; problems: Array<{ code: string }> };
    };
    expect(page.health.state).toBe('unhealthy');
    expect(page.health.problems.map((p) => p.code)).toContain('webhook-unreachable');
    await until(async () => (await cli(['status', '--config', file])).code === 1, 'status exit 1', 10_000);
    const status = await cli(['status', '--config', file]);
    expect(status.out).toMatch(/health: UNHEALTHY\n {2}- the webhook fails since/);

    // The webhook comes back: the SMS goes, and health is green again.
    const posts: string[] = [];
    const web: Server = createServer((req, res) => {
      req.on('data', (c: Buffer) => posts.push(c.toString()));
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"success":true}'));
    });
    await new Promise<void>((r) => web.listen(port, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => web.close(() => r())));
    await until(
      async () => (await fetch(`${url}/healthz`)).status === 200,
      '/healthz 200 once the webhook answers',
      15_000,
    );
    expect(posts.join('')).toContain('Rp 5000');
  }, 60_000);
});
