/**
 * Health and metrics of the real daemon process: the compiled `bin/pulsa-bridge run` on `pulsa-bridge simulate`'s
 * pseudo-terminal (native binding), a real webhook server on loopback, /metrics and /healthz scraped over real HTTP,
 * and `pulsa-bridge status` run as its own process for its exit code (0 healthy or degraded, 1 unhealthy, 3 not
 * running). The degraded daemon's modem is a virtual one in its own process (a SIM with a low balance).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import path from 'node:path';
import { CliProcess, DaemonProcess, distBuilt, killAll, runCli, SimProcess } from '../support/daemon.js';
import { until } from '../support/until.js';
import { reply, startServer, type TestServer } from '../forward/server.js';
import { testWebhook, writeConfig } from '../support/config.js';
import { tempDir } from '../support/tmp.js';
import { hasSocat } from '../support/pty.js';
import { compiledCli } from '../support/cli.js';

let dir: string;
let cleanup: () => Promise<void>;
let server: TestServer | undefined;

beforeEach(async () => {
  expect(distBuilt(), 'dist/ is missing: run `npm run build` (npm test does)').toBe(true);
  ({ dir, cleanup } = await tempDir('metrics-process'));
});

afterEach(async () => {
  await killAll();
  await server?.close();
  server = undefined;
  await cleanup();
});

/** `pulsa-bridge status --config FILE` in its own process: exit code and output. */
function status(config: string): { code: number | null; out: string } {
  const r = compiledCli(['status', '--config', config]);
  return { code: r.code, out: r.out + r.err };
}

/** The address the daemon logged for its metrics listener (configured with port 0). */
function metricsAddress(daemon: CliProcess): string | undefined {
  for (const line of daemon.out) {
    const m = /serving \/metrics and \/healthz on http:\/\/([^"\s]+)/.exec(line);
    if (m) return m[1];
  }
  return undefined;
}

/** The value of one series in a Prometheus text exposition (undefined when absent). */
function sample(text: string, series: string): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return undefined;
}

describe('the daemon process: /metrics, /healthz and status exit codes', () => {
  it.skipIf(!hasSocat)(
    'serves the series over HTTP; healthz and status follow a modem going away; status exits 3 once the daemon stops',
    async () => {
      server = await startServer([reply(200, '{"success":true}')]);
      const link = path.join(dir, 'modem');
      const sim = await SimProcess.start(link, [], 60_000);
      const config = await writeConfig(dir, {
        webhook: { url: server.url, retry: { baseDelayMs: 50, maxDelayMs: 200 } },
        modems: [{ name: 'tsel-1', port: link, senders: ['858'] }],
        metrics: { listen: '127.0.0.1:0' },
      });
      const daemon = new CliProcess(['run', '--config', config], 'ignore');
      await until(
        () => (daemon.logged('ready: SIMCOM') && metricsAddress(daemon) !== undefined) || !daemon.running,
        'the daemon to initialise the modem over the pty and serve /metrics',
        60_000,
      );
      const addr = metricsAddress(daemon);
      expect(addr, daemon.err.join('')).toMatch(/^127\.0\.0\.1:\d+$/);

      sim.send('sms 858 Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774 tgl 2018-01-08.');
      sim.send('sms 0812999 pesan pribadi');
      await until(() => server!.requests.length === 1, 'the POST', 60_000);

      let text = '';
      await until(
        async () => {
          text = await (await fetch(`http://${addr}/metrics`)).text();
          // The signal and registration are read on the modem's scheduler after `ready` (behind the start-up sweep).
          return (
            sample(text, 'pulsa_bridge_sms_received_total{modem="tsel-1",outcome="ignored"}') === 1 &&
            sample(text, 'pulsa_bridge_webhook_deliveries_total{result="delivered"}') === 1 &&
            sample(text, 'pulsa_bridge_modem_signal_dbm{modem="tsel-1"}') !== undefined &&
            sample(text, 'pulsa_bridge_modem_registered{modem="tsel-1"}') !== undefined
          );
        },
        'the counters of both SMS, the delivery and the first signal and registration readings',
        60_000,
      );
      const res = await fetch(`http://${addr}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(sample(text, 'pulsa_bridge_sms_received_total{modem="tsel-1",outcome="spooled"}')).toBe(1);
      expect(sample(text, 'pulsa_bridge_sms_received_total{modem="tsel-1",outcome="quarantined"}')).toBe(0);
      expect(sample(text, 'pulsa_bridge_webhook_deliveries_total{result="dead"}')).toBe(0);
      expect(sample(text, 'pulsa_bridge_sms_delivery_latency_seconds_count')).toBe(1);
      expect(sample(text, 'pulsa_bridge_webhook_request_duration_seconds_count{outcome="2xx"}')).toBe(1);
      expect(sample(text, 'pulsa_bridge_spool_records{area="sent"}')).toBe(1);
      expect(sample(text, 'pulsa_bridge_spool_records{area="pending"}')).toBe(0);
      expect(sample(text, 'pulsa_bridge_spool_oldest_pending_age_seconds')).toBe(0);
      expect(sample(text, 'pulsa_bridge_modem_up{modem="tsel-1"}')).toBe(1);
      // The simulator reports +CSQ: 20 (-73 dBm) and +CREG: 0,1 (home); both sampled at connect.
      expect(sample(text, 'pulsa_bridge_modem_signal_dbm{modem="tsel-1"}')).toBe(-73);
      expect(sample(text, 'pulsa_bridge_modem_registered{modem="tsel-1"}')).toBe(1);
      expect(sample(text, 'pulsa_bridge_modem_registration_status{modem="tsel-1"}')).toBe(1);
      expect(sample(text, 'pulsa_bridge_modem_reconnects_total{modem="tsel-1"}')).toBe(0);
      expect(sample(text, 'pulsa_bridge_healthy')).toBe(1);
      expect(text).toMatch(/^pulsa_bridge_build_info\{version="\d+\.\d+\.\d+",nodejs_version="v\d+[^"]*"\} 1$/m);
      expect(text).toMatch(
        /^pulsa_bridge_modem_info\{modem="tsel-1",manufacturer="SIMCOM[^"]*",model="[^"]+",profile="simcom"\} 1$/m,
      );
      // No balance watch in this daemon: the gauges are declared, with no sample.
      expect(text).toContain('# TYPE pulsa_bridge_balance_rupiah gauge');
      expect(text).toContain('# TYPE pulsa_bridge_sim_active_until_timestamp_seconds gauge');
      expect(text).toContain('# TYPE pulsa_bridge_sms_received_total counter');

      const healthy = await fetch(`http://${addr}/healthz`);
      expect(healthy.status).toBe(200);
      expect(await healthy.text()).toBe('ok\n');
      expect(await (await fetch(`http://${addr}/other`)).status).toBe(404);
      let ok = status(config);
      // status.json is rewritten every 5 s: on a loaded machine the first may not be there yet (then: stale, exit 1).
      await until(() => (ok = status(config)).out.includes('health: ok'), 'status to say health: ok', 60_000);
      expect(ok.code).toBe(0);

      // The modem goes away (the simulator, and with it the pty, ends): the daemon stays up, unhealthy.
      await sim.stop('SIGTERM');
      let body = '';
      await until(
        async () => {
          const r = await fetch(`http://${addr}/healthz`);
          body = await r.text();
          return r.status === 503;
        },
        '/healthz to answer 503',
        60_000,
      );
      expect(body).toMatch(
        /^unhealthy\n- modem tsel-1 is (disconnected|failed), down since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d\d:\d\d/,
      );
      text = await (await fetch(`http://${addr}/metrics`)).text();
      expect(sample(text, 'pulsa_bridge_modem_up{modem="tsel-1"}')).toBe(0);
      expect(sample(text, 'pulsa_bridge_healthy')).toBe(0);
      let down = status(config);
      await until(
        () => (down = status(config)).code === 1,
        'status to see the modem down (status.json is rewritten every 5 s)',
        60_000,
      );
      expect(down.out).toMatch(/health: UNHEALTHY\n {2}- modem tsel-1 is (disconnected|failed), down since /);

      await daemon.stop('SIGTERM');
      const stopped = status(config);
      expect(stopped.out).toContain('daemon: not running');
      expect(stopped.code).toBe(3);
    },
    120_000,
  );

  it('degraded (a SIM whose balance is below minBalance): /healthz 200 degraded, status exits 0 saying so, healthy stays 1', async () => {
    server = await startServer([reply(200, '{"success":true}')]);
    // A virtual modem in the daemon's process whose SIM holds Rp 2000; its balance is checked only on demand.
    const config = await writeConfig(dir, {
      webhook: testWebhook(server.url),
      modems: [
        {
          name: 'tsel-1',
          port: 'virtual:tsel-1?number=081200000001&operator=telkomsel&balance=2000',
          senders: ['858'],
          operator: 'telkomsel',
          balance: { intervalHours: 0, minBalance: 10_000 },
        },
      ],
      metrics: { listen: '127.0.0.1:0' },
    });
    const daemon = await DaemonProcess.start(
      config,
      ['ready: SIMCOM', 'control socket listening', 'serving /metrics and /healthz'],
      60_000,
    );
    const addr = metricsAddress(daemon);
    const healthz = async () => {
      const r = await fetch(`http://${addr}/healthz`);
      return { status: r.status, body: await r.text() };
    };
    expect(await healthz()).toEqual({ status: 200, body: 'ok\n' });
    let st = status(config);
    // status.json is written within a few seconds of the start: until then status says so (stale, exit 1).
    await until(() => (st = status(config)).out.includes('health: ok\n'), 'status to say health: ok', 60_000);
    expect(st.code).toBe(0);

    // The operator checks the balance (through the daemon, which keeps the result): low, a warning.
    const check = await runCli(['balance', '--config', config, '--modem', 'tsel-1']);
    expect(check.out, check.err).toMatch(/^tsel-1: Rp 2\.000, active until .*\[WARNING\]/);
    let h = { status: 0, body: '' };
    await until(async () => (h = await healthz()).body !== 'ok\n', '/healthz to see the warning', 60_000);
    expect(h.status).toBe(200); // money flows: a probe on /healthz stays green
    expect(h.body).toMatch(/^degraded\n- modem tsel-1: .*2000.*\n {2}hint: top the SIM up\n$/);
    const text = await (await fetch(`http://${addr}/metrics`)).text();
    expect(sample(text, 'pulsa_bridge_healthy')).toBe(1);
    expect(sample(text, 'pulsa_bridge_balance_rupiah{modem="tsel-1"}')).toBe(2000);

    // `status` agrees (status.json is rewritten after the check): exit 0, the warning and its hint printed.
    await until(() => (st = status(config)).out.includes('health: degraded'), 'status to see the warning', 60_000);
    expect(st.code).toBe(0);
    expect(st.out).toMatch(
      /health: degraded \(money flows; warnings\)\n {2}- modem tsel-1: .*2000.*\n {4}hint: top the SIM up\n/,
    );
    const json = compiledCli(['status', '--config', config, '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.out)).toMatchObject({ exitCode: 0, health: { healthy: true, state: 'degraded' } });
    daemon.child.kill('SIGTERM');
    expect((await daemon.exit).code).toBe(0);
  }, 120_000);

  it('status exits 3 when no daemon ever ran on the spool', async () => {
    const config = await writeConfig(dir, {
      webhook: { url: 'http://127.0.0.1:9/x' },
      modems: [{ name: 'tsel-1', port: 'virtual:tsel-1', senders: ['858'] }],
    });
    const r = status(config);
    expect(r.out).toContain('daemon: not running');
    expect(r.code).toBe(3);
  });

  it('a second daemon cannot take a metrics port already in use: it says so and exits non-zero', async () => {
    const blocker = await startServer([reply(200)]);
    server = blocker;
    const port = new URL(blocker.url).port;
    const config = await writeConfig(dir, {
      webhook: { url: blocker.url },
      modems: [{ name: 'tsel-1', port: 'virtual:tsel-1', senders: ['858'] }],
      metrics: { listen: `127.0.0.1:${port}` },
    });
    const daemon = new CliProcess(['run', '--config', config], 'ignore');
    const exit = await daemon.exit;
    expect(exit.code).not.toBe(0);
    expect(daemon.err.join('')).toContain(`metrics: cannot listen on 127.0.0.1:${port}`);
  }, 30_000);
});
