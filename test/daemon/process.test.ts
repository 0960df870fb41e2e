/**
 * The daemon as operations run it: the compiled `bin/pulsa-bridge run` in its own process (npm test builds dist/
 * first), a real spool directory, a real HTTP server on loopback. Signals are real: SIGTERM, SIGKILL, SIGHUP.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { silentLogger } from '../../src/log.js';
import { Spool } from '../../src/spool/store.js';
import { makeSms } from '../spool/helpers.js';
import { testWebhook, writeConfig } from '../support/config.js';
import { CliProcess, distBuilt, killAll } from '../support/daemon.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';
import { hang, reply, startServer, type TestServer } from '../forward/server.js';
import { hasSocat } from '../support/pty.js';

type Proc = CliProcess;
const run = (args: string[], env: NodeJS.ProcessEnv = {}, stdin: 'ignore' | 'pipe' = 'ignore'): Proc =>
  new CliProcess(args, stdin, { env });
const logged = (p: Proc, text: string) => p.logged(text);

let dir: string;
let cleanup: () => Promise<void>;
let server: TestServer;

const daemonConfig = (over: Record<string, unknown> = {}): Promise<string> =>
  writeConfig(dir, {
    webhook: testWebhook(server.url, { timeoutMs: 30_000 }),
    modems: [{ name: 'tsel-1', port: 'virtual:tsel-1', senders: ['858'] }],
    ...over,
  });

async function seed(records: Array<ReturnType<typeof makeSms>>, dead: string[] = []): Promise<void> {
  const spool = await Spool.open(path.join(dir, 'spool'), { logger: silentLogger() });
  for (const r of records) await spool.putPending(r);
  for (const id of dead) await spool.markDead(id, 'HTTP 422: test', 422);
  await spool.close();
}

async function areaOf(id: string): Promise<string | undefined> {
  const spool = await Spool.open(path.join(dir, 'spool'), { logger: silentLogger(), role: 'client' });
  return (await spool.get(id))?.area;
}

beforeEach(async () => {
  expect(distBuilt(), 'dist/ is missing: run `npm run build` (npm test does)').toBe(true);
  ({ dir, cleanup } = await tempDir('daemon'));
});

afterEach(async () => {
  await killAll();
  await server?.close();
  await cleanup();
});

describe('pulsa-bridge run (a real process)', () => {
  it.skipIf(!hasSocat)(
    'end to end across processes: an SMS on `pulsa-bridge simulate` (pty, native binding) reaches the webhook',
    async () => {
      server = await startServer([reply(200, '{"success":true}')]);
      const link = path.join(dir, 'modem');
      const sim = run(['simulate', '--link', link], {}, 'pipe');
      await until(() => logged(sim, 'virtual simcom modem on'), 'the simulator', 15_000);
      const daemon = run([
        'run',
        '--config',
        await daemonConfig({ modems: [{ name: 'tsel-1', port: link, senders: ['858'] }] }),
      ]);
      await until(() => logged(daemon, 'ready: SIMCOM'), 'the daemon to initialise the modem over the pty', 20_000);
      sim.child.stdin!.write(
        'sms 858 Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774 tgl 2018-01-08.\n',
      );
      sim.child.stdin!.write('sms 0812999 pesan pribadi\n');
      await until(() => server.requests.length === 1, 'the POST', 15_000);
      expect(JSON.parse(server.requests[0]!.body.toString('utf8'))).toEqual({
        sender: '858',
        message: 'Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774 tgl 2018-01-08.',
      });
      expect(server.requests[0]!.headers['x-pulsa-bridge-modem']).toBe('tsel-1');
      await until(() => logged(daemon, 'archived'), 'the private SMS to be archived', 10_000);
      // 'archived' is logged before AT+CMGD: ask the simulator until the SIM is empty.
      await until(
        () => {
          if (logged(sim, 'SIM empty')) return true;
          sim.child.stdin!.write('list\n');
          return false;
        },
        'the simulator to list an empty SIM',
        15_000,
        { everyMs: 200 },
      );
      expect(logged(sim, 'SIM empty')).toBe(true);
      daemon.child.kill('SIGTERM');
      expect((await daemon.exit).code).toBe(0);
      sim.child.stdin!.end('quit\n');
      expect((await sim.exit).code).toBe(0);
    },
    60_000,
  );

  it.skipIf(!hasSocat)('`pulsa-bridge simulate` killed with SIGKILL leaves no socat behind', async () => {
    server = await startServer([reply(200)]);
    const link = path.join(dir, 'killed-modem');
    const sim = run(['simulate', '--link', link], {}, 'pipe');
    await until(() => logged(sim, 'virtual simcom modem on'), 'the simulator', 15_000);
    const socatAlive = () => spawnSync('pgrep', ['-f', `link=${link}`]).status === 0;
    expect(socatAlive()).toBe(true);
    sim.child.kill('SIGKILL');
    await sim.exit;
    await until(() => !socatAlive(), 'socat to exit with its parent', 5_000);
  });

  it('SIGTERM with a POST in flight: exits 0 within the grace bound and the record stays pending (nothing lost)', async () => {
    server = await startServer([hang]);
    await seed([makeSms('sms-term1')]);
    const p = run(['run', '--config', await daemonConfig()]);
    await until(() => server.requests.length === 1, 'the POST', 15_000);
    p.child.kill('SIGTERM');
    const { code } = await p.exit;
    expect(code).toBe(0);
    expect(logged(p, 'SIGTERM: stopping')).toBe(true);
    expect(await areaOf('sms-term1')).toBe('pending');
  });

  it('SIGKILL during a POST, then a restart: the record is delivered, with the same Idempotency-Key and body', async () => {
    server = await startServer([hang, reply(200, '{"success":true}')]);
    await seed([makeSms('sms-kill1')]);
    const config = await daemonConfig();
    const first = run(['run', '--config', config]);
    await until(() => server.requests.length === 1, 'the first POST', 15_000);
    first.child.kill('SIGKILL');
    expect((await first.exit).signal).toBe('SIGKILL');
    const second = run(['run', '--config', config]);
    await until(() => server.requests.length === 2, 'the POST after restart', 15_000);
    await until(async () => (await areaOf('sms-kill1')) === 'sent', 'the record to be sent');
    const [a, b] = server.requests;
    expect(b!.headers['idempotency-key']).toBe('sms-kill1');
    expect(a!.headers['idempotency-key']).toBe(b!.headers['idempotency-key']);
    expect(b!.body.equals(a!.body)).toBe(true);
    expect(JSON.parse(b!.body.toString('utf8'))).toEqual({ sender: '858', message: makeSms('x').text });
    expect(logged(second, 'stale')).toBe(true); // the lock left by the killed process was replaced, with a log line
    second.child.kill('SIGTERM');
    expect((await second.exit).code).toBe(0);
  });

  it('`queue retry --dead` while the daemon runs: the daemon is signalled (SIGHUP) and delivers at once', async () => {
    server = await startServer([reply(200, '{"success":true}')]);
    await seed([makeSms('sms-dead1')], ['sms-dead1']);
    const config = await daemonConfig();
    const daemon = run(['run', '--config', config]);
    await until(() => logged(daemon, 'started'), 'the daemon to start', 15_000);
    const cli = run(['queue', 'retry', '--dead', '--config', config]);
    expect((await cli.exit).code).toBe(0);
    await until(() => server.requests.length === 1, 'the POST after SIGHUP', 10_000);
    await until(async () => (await areaOf('sms-dead1')) === 'sent', 'sent');
    expect(logged(daemon, 'SIGHUP')).toBe(true);
    // `pulsa-bridge status` sees the daemon, the modem state and the delivery.
    await until(
      async () => {
        const st = run(['status', '--json', '--config', config]);
        await st.exit;
        const view = JSON.parse(st.out.join('\n')) as {
          daemon: { running: boolean; pid: number };
          status?: { modems: Array<{ state: string }>; forwarder: { delivered: number } };
        };
        return (
          view.daemon.running &&
          view.daemon.pid === daemon.child.pid &&
          view.status?.modems[0]?.state === 'running' &&
          view.status.forwarder.delivered === 1
        );
      },
      'status to show the running daemon and one delivery',
      12_000,
    );
    daemon.child.kill('SIGTERM');
    expect((await daemon.exit).code).toBe(0);
  });

  it('tells systemd it is ready (READY=1 through systemd-notify) and logs JSON lines', async () => {
    server = await startServer([reply(200)]);
    const fakeBin = path.join(dir, 'bin');
    const record = path.join(dir, 'notify.log');
    await import('node:fs/promises').then((fs) => fs.mkdir(fakeBin));
    await writeFile(path.join(fakeBin, 'systemd-notify'), `#!/bin/sh\necho "$@" >> ${record}\n`);
    await chmod(path.join(fakeBin, 'systemd-notify'), 0o755);
    const p = run(['run', '--config', await daemonConfig()], {
      NOTIFY_SOCKET: '/run/fake-notify',
      PATH: `${fakeBin}:${process.env.PATH}`,
    });
    await until(
      async () => (await readFile(record, 'utf8').catch(() => '')).includes('--ready'),
      'systemd-notify --ready',
      15_000,
    );
    expect(p.out.length).toBeGreaterThan(0);
    for (const line of p.out) expect(() => JSON.parse(line)).not.toThrow();
    p.child.kill('SIGTERM');
    expect((await p.exit).code).toBe(0);
  });

  it('a broken config: exit 78 (EX_CONFIG, the unit does not restart) with every problem named, no crash trace', async () => {
    server = await startServer([reply(200)]);
    const file = path.join(dir, 'bad.json');
    await writeFile(
      file,
      JSON.stringify({ webhook: {}, modems: [{ name: 'x', port: '/dev/ttyUSB0' }], spool: { dirr: '/tmp' } }),
    );
    const p = run(['run', '--config', file]);
    const { code } = await p.exit;
    expect(code).toBe(78);
    const stderr = p.err.join('');
    expect(stderr).toContain('error: invalid config:');
    expect(stderr).toContain('- spool.dirr: unknown key');
    expect(stderr).toContain('- modems[0].senders: required');
    expect(stderr).not.toMatch(/\n\s+at /); // no stack trace
  });

  it('a second daemon on the same spool refuses to start, naming the first', async () => {
    server = await startServer([reply(200)]);
    const config = await daemonConfig();
    const first = run(['run', '--config', config]);
    await until(() => logged(first, 'started'), 'the first daemon', 15_000);
    const second = run(['run', '--config', config]);
    const { code } = await second.exit;
    expect(code).toBe(1);
    expect(second.err.join('')).toContain(`in use by process ${first.child.pid}`);
    first.child.kill('SIGTERM');
    await first.exit;
  });
});
