/**
 * Virtual modems and the webhook, against the compiled daemon where it is about the process: a virtual modem's SMS are
 * made up, so `run` (with --simulate, or on a config with a virtual port) refuses a webhook on another machine (exit
 * 78); on this machine they are posted like any other; a pending record an older version marked simulated is
 * quarantined, never posted. `config check` warns about plain http:// and refuses a header value with a CR.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createHmac } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseConfig } from '../../src/config.js';
import { Daemon } from '../../src/daemon.js';
import { serializeRecord } from '../../src/spool/codec.js';
import type { SmsRecord } from '../../src/spool/types.js';
import { silentLogger } from '../../src/log.js';
import { CliProcess, killAll, runCli } from '../support/daemon.js';
import { reply, startServer, type TestServer } from '../forward/server.js';
import { writeConfig } from '../support/config.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';
import { startInProcess } from '../support/in-process.js';
import { stopVirtualModems, virtualModemAt } from '../../src/virtual-modem/virtual-ports.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await killAll();
  while (cleanups.length) await cleanups.pop()!();
});

async function configWith(
  webhook: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Promise<{ file: string; dir: string }> {
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

describe('virtual modems and the webhook', () => {
  it('run --simulate refuses a webhook on another machine (exit 78, naming the virtual modems); so does run on a config with a virtual port', async () => {
    const { file } = await configWith({
      url: 'https://convert.example/api/v1/convert-pulsa/webhook/sms-gateway',
      hmacSecret: 'production-secret',
    });
    const r = await runCli(['run', '--simulate', '--config', file]);
    expect(r.code).toBe(78);
    expect(r.err).toContain(
      'webhook: https://convert.example/api/v1/convert-pulsa/webhook/sms-gateway is not on this machine, and virtual:tsel-1 is a virtual modem',
    );
    const direct = await configWith(
      { url: 'https://convert.example/api/v1/convert-pulsa/webhook/sms-gateway' },
      { modems: [{ name: 'tsel-1', port: 'virtual:tsel-1', senders: ['858'] }] },
    );
    const d = await runCli(['run', '--config', direct.file]);
    expect(d.code).toBe(78);
    expect(d.err).toContain('virtual:tsel-1 is a virtual modem');
    const check = await runCli(['config', 'check', direct.file]);
    expect(check.err).toContain('`run` refuses this config');
  }, 40_000);

  it('run --simulate on a local webhook: the virtual modem behind the port receives, the SMS is posted signed as any other', async () => {
    const web: TestServer = await startServer([reply(200)]);
    cleanups.push(() => web.close());
    const { file } = await configWith({ url: web.url, hmacSecret: 'local-secret' });
    const d = new CliProcess(['run', '--simulate', '--config', file], 'ignore');
    await until(() => d.logged(' started"'), 'the daemon to start', 20_000);
    d.child.kill('SIGTERM');
    expect((await d.exit).code).toBe(0);
  }, 40_000);

  it('an in-process daemon on a virtual port: an injected SMS reaches the local webhook, signed with the configured secret', async () => {
    const web: TestServer = await startServer([reply(200)]);
    cleanups.push(() => web.close());
    const { dir, cleanup } = await tempDir('sim-webhook-inproc');
    cleanups.push(cleanup);
    const config = parseConfig(
      {
        webhook: { url: web.url, hmacSecret: 'local-secret' },
        spool: { dir: path.join(dir, 'spool'), fsync: false },
        modems: [{ name: 'tsel-1', port: 'virtual:tsel-1', senders: ['858'] }],
        control: { socket: path.join(dir, 'control.sock') },
        shutdownGraceSec: 0,
      },
      {},
    );
    await startInProcess(config, cleanups, { virtualModem: { bootStepMs: 0 } });
    virtualModemAt('virtual:tsel-1')!.injectSms({
      from: '858',
      text: 'Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774',
    });
    await until(() => web.requests.length > 0, 'the SMS posted', 15_000);
    const req = web.requests[0]!;
    const signed = Buffer.concat([
      Buffer.from(
        `pulsa-bridge-v2\n${String(req.headers['x-timestamp'])}\n${String(req.headers['idempotency-key'])}\ntsel-1\n\n`,
      ),
      req.body,
    ]);
    expect(req.headers['x-signature']).toBe(`v2=${createHmac('sha256', 'local-secret').update(signed).digest('hex')}`);
    expect(Object.keys(req.headers).filter((h) => h.includes('simulated'))).toEqual([]);
  }, 60_000);

  it('a pending record an older version marked simulated is quarantined at start, never posted', async () => {
    const web: TestServer = await startServer([reply(200)]);
    cleanups.push(() => web.close());
    const { dir, cleanup } = await tempDir('sim-webhook-old');
    cleanups.push(cleanup);
    const raw = {
      webhook: { url: web.url, hmacSecret: 'production-secret', retry: { baseDelayMs: 10, maxDelayMs: 100 } },
      spool: { dir: path.join(dir, 'spool'), fsync: false },
      modems: [{ name: 'tsel-1', port: 'virtual:tsel-1', senders: ['858'] }],
      control: { socket: path.join(dir, 'control.sock') },
      shutdownGraceSec: 0,
    };
    // One SMS through a first run, held pending by a receiver that refuses it.
    web.script.splice(0, web.script.length, reply(401));
    const first = await Daemon.start({ config: parseConfig(raw, {}), logger: silentLogger() });
    let stopped = false;
    cleanups.push(() => (stopped ? undefined : first.stop()));
    await until(() => first.supervisors[0]!.status().state === 'running', 'the modem running', 10_000);
    virtualModemAt('virtual:tsel-1')!.injectSms({
      from: '858',
      text: 'Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774',
    });
    await until(() => web.requests.length > 0, 'the SMS refused', 15_000);
    await first.stop();
    stopped = true;
    stopVirtualModems();
    // What an older version wrote for a simulated modem: the same record with `simulated: true`, checksum and mac
    // recomputed as it did (the key is the spool's own).
    const pending = await readdir(path.join(dir, 'spool', 'pending'));
    expect(pending).toHaveLength(1);
    const file = path.join(dir, 'spool', 'pending', pending[0]!);
    const rec = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    const { checksum: _c, mac: _m, ...body } = rec;
    const key = Buffer.from((await readFile(path.join(dir, 'spool', 'spool.key'), 'utf8')).trim(), 'hex');
    await writeFile(
      file,
      serializeRecord({ ...(body as unknown as SmsRecord), simulated: true } as unknown as SmsRecord, {
        area: 'pending',
        key,
      }),
    );

    web.script.splice(0, web.script.length, reply(200));
    const before = web.requests.length;
    const real = await Daemon.start({ config: parseConfig(raw, {}), logger: silentLogger() });
    cleanups.push(() => real.stop());
    await until(async () => (await real.spool.stats()).quarantine === 1, 'the record quarantined', 15_000);
    expect(web.requests.length).toBe(before);
  }, 60_000);
});

describe('config check', () => {
  it('warns about a plain http:// webhook on another machine and refuses an Authorization value with a CR', async () => {
    const { file } = await configWith({ url: 'http://10.1.2.3:8080/api/v1/convert-pulsa/webhook/sms-gateway' });
    let r = await runCli(['config', 'check', file]);
    expect(r.code).toBe(0);
    expect(r.err).toContain(
      'warning: webhook URL http://10.1.2.3:8080/api/v1/convert-pulsa/webhook/sms-gateway is plain http://',
    );
    const bad = await configWith({
      baseUrl: 'https://x.example/api/v1/convert-pulsa',
      headers: { Authorization: 'Bearer s3cret\r' },
    });
    r = await runCli(['config', 'check', bad.file]);
    expect(r.code).toBe(1);
    expect(r.err).toContain(
      'webhook.headers.Authorization: a header value may hold visible ASCII characters and spaces only; found CR at position 14',
    );
    expect(r.err + r.out).not.toContain('s3cret');
    const run = await runCli(['run', '--config', bad.file]);
    expect(run.code).toBe(78);
  }, 40_000);
});
