/**
 * `run --simulate` against the compiled daemon: a webhook that is not on this machine is refused (exit 78) unless
 * --allow-remote-webhook; a simulated run's requests carry X-Pulsa-Bridge-Simulated and are never signed with the
 * production secret. `config check` warns about plain http:// and refuses a header value with a CR.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createHmac } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseConfig } from '../../src/config.js';
import { Daemon } from '../../src/daemon.js';
import { SIMULATION_SECRET } from '../../src/forward/webhook.js';
import { silentLogger } from '../../src/log.js';
import { CliProcess, killAll, runCli } from '../support/daemon.js';
import { reply, startServer, type TestServer } from '../forward/server.js';
import { writeConfig } from '../support/config.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';
import { startInProcess } from '../support/in-process.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await killAll();
  while (cleanups.length) await cleanups.pop()!();
});

async function configWith(webhook: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<{ file: string; dir: string }> {
  const { dir, cleanup } = await tempDir('sim-webhook');
  cleanups.push(cleanup);
  const file = await writeConfig(dir, {
    webhook,
    spool: { dir: path.join(dir, 'spool'), fsync: false },
    modems: [{ name: 'tsel-1', port: '/dev/ttyUSB-none', senders: ['858'], sweepIntervalSec: 5 }],
    log: { level: 'info', pretty: false },
    shutdownGraceSec: 0,
    ...extra,
  });
  return { file, dir };
}

describe('run --simulate and the webhook', () => {
  it('refuses a webhook on another machine (exit 78, naming the flag); --allow-remote-webhook lets it start', async () => {
    const { file } = await configWith({ url: 'https://convert.example/api/v1/convert-pulsa/webhook/sms-gateway', hmacSecret: 'production-secret' });
    const r = await runCli(['run', '--simulate', '--config', file]);
    expect(r.code).toBe(78);
    expect(r.err).toContain('webhook: https://convert.example/api/v1/convert-pulsa/webhook/sms-gateway is not on this machine');
    expect(r.err).toContain('--allow-remote-webhook');

    const d = new CliProcess(['run', '--simulate', '--allow-remote-webhook', '--config', file], 'ignore');
    await until(() => d.logged(' started"'), 'the daemon to start', 20_000);
    d.child.kill('SIGTERM');
    expect((await d.exit).code).toBe(0);
  }, 40_000);

  it('a simulated SMS reaches a local webhook marked simulated and signed with the simulation secret only', async () => {
    const web: TestServer = await startServer([reply(200)]);
    cleanups.push(() => web.close());
    const { dir, cleanup } = await tempDir('sim-webhook-inproc');
    cleanups.push(cleanup);
    const config = parseConfig(
      {
        webhook: { url: web.url, hmacSecret: 'production-secret' },
        spool: { dir: path.join(dir, 'spool'), fsync: false },
        modems: [{ name: 'tsel-1', port: '/dev/ttyUSB-none', senders: ['858'] }],
        control: { socket: path.join(dir, 'control.sock') },
        shutdownGraceSec: 0,
      },
      {},
    );
    const daemon = await startInProcess(config, cleanups, { virtualModem: { bootStepMs: 0 } });
    daemon.virtualModems.get('tsel-1')!.injectSms({ from: '858', text: 'Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774' });
    await until(() => web.requests.length > 0, 'the simulated SMS posted', 15_000);
    const req = web.requests[0]!;
    expect(req.headers['x-pulsa-bridge-simulated']).toBe('true');
    const signed = Buffer.concat([Buffer.from(`pulsa-bridge-v2\n${String(req.headers['x-timestamp'])}\n${String(req.headers['idempotency-key'])}\ntsel-1\n\n`), req.body]);
    expect(req.headers['x-signature']).toBe(`v2=${createHmac('sha256', SIMULATION_SECRET).update(signed).digest('hex')}`);
    expect(req.headers['x-signature']).not.toBe(`v2=${createHmac('sha256', 'production-secret').update(signed).digest('hex')}`);
  }, 60_000);

  it('a simulated SMS refused by the receiver and delivered later by a normal run is still marked simulated and never signed with the production secret', async () => {
    const web: TestServer = await startServer([reply(401)]);
    cleanups.push(() => web.close());
    const { dir, cleanup } = await tempDir('sim-webhook-later');
    cleanups.push(cleanup);
    const raw = {
      webhook: { url: web.url, hmacSecret: 'production-secret', retry: { baseDelayMs: 10, maxDelayMs: 100 } },
      spool: { dir: path.join(dir, 'spool'), fsync: false },
      stateDir: path.join(dir, 'state'),
      modems: [{ name: 'tsel-1', port: '/dev/ttyUSB-none', senders: ['858'] }],
      control: { socket: path.join(dir, 'control.sock') },
      shutdownGraceSec: 0,
    };
    const simulated = await Daemon.start({ config: parseConfig(raw, {}), logger: silentLogger(), simulate: true, virtualModem: { bootStepMs: 0 } });
    let stopped = false;
    cleanups.push(() => (stopped ? undefined : simulated.stop()));
    await until(() => simulated.supervisors[0]!.status().state === 'running', 'the modem running', 10_000);
    simulated.virtualModems.get('tsel-1')!.injectSms({ from: '858', text: 'Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774' });
    await until(() => web.requests.length > 0, 'the simulated SMS refused', 15_000);
    await simulated.stop();
    stopped = true;
    const pending = await readdir(path.join(dir, 'spool', 'pending'));
    expect(pending).toHaveLength(1);
    const file = JSON.parse(await readFile(path.join(dir, 'spool', 'pending', pending[0]!), 'utf8')) as Record<string, unknown>;
    expect(file.simulated).toBe(true);

    // The normal run: same spool, same production secret, and its config names no simulated modem.
    web.script.splice(0, web.script.length, reply(200));
    const before = web.requests.length;
    const real = await Daemon.start({ config: parseConfig(raw, {}), logger: silentLogger() });
    cleanups.push(() => real.stop());
    await until(() => web.requests.length > before && real.forwarder.stats().delivered > 0, 'the pending record delivered', 15_000);
    const req = web.requests.at(-1)!;
    expect(req.headers['idempotency-key']).toBe(file.id);
    expect(req.headers['x-pulsa-bridge-simulated']).toBe('true');
    const signed = Buffer.concat([Buffer.from(`pulsa-bridge-v2\n${String(req.headers['x-timestamp'])}\n${String(req.headers['idempotency-key'])}\ntsel-1\n\n`), req.body]);
    expect(req.headers['x-signature']).toBe(`v2=${createHmac('sha256', SIMULATION_SECRET).update(signed).digest('hex')}`);
    expect(req.headers['x-signature']).not.toBe(`v2=${createHmac('sha256', 'production-secret').update(signed).digest('hex')}`);
  }, 60_000);
});

describe('config check', () => {
  it('warns about a plain http:// webhook on another machine and refuses an Authorization value with a CR', async () => {
    const { file } = await configWith({ url: 'http://10.1.2.3:8080/api/v1/convert-pulsa/webhook/sms-gateway' });
    let r = await runCli(['config', 'check', file]);
    expect(r.code).toBe(0);
    expect(r.err).toContain('warning: webhook URL http://10.1.2.3:8080/api/v1/convert-pulsa/webhook/sms-gateway is plain http://');
    const bad = await configWith({ baseUrl: 'https://x.example/api/v1/convert-pulsa', headers: { Authorization: 'Bearer s3cret\r' } });
    r = await runCli(['config', 'check', bad.file]);
    expect(r.code).toBe(1);
    expect(r.err).toContain('webhook.headers.Authorization: a header value may hold visible ASCII characters and spaces only; found CR at position 14');
    expect(r.err + r.out).not.toContain('s3cret');
    const run = await runCli(['run', '--config', bad.file]);
    expect(run.code).toBe(78);
  }, 40_000);
});
