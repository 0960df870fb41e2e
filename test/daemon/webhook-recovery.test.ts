/**
 * Against the compiled daemon (`bin/pulsa-bridge run` in its own process, a real spool, a real HTTP
 * server on loopback): while the webhook answers 500 (or refuses connections) the daemon sends one probe per probe
 * interval, not one request per record, and the first answer after the outage releases every pending record.
 * The record backoff is set long (20 s base) and the probe interval short (300 ms): with a per-record backoff the
 * backlog would still be waiting long after the server is back. Gaps asserted are lower bounds between the server's
 * own receive times (load only makes them longer); the figures for a 60 s outage are in bench/webhook-outage.ts.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import path from 'node:path';
import { silentLogger } from '../../src/log.js';
import { Spool } from '../../src/spool/store.js';
import { makeSms } from '../spool/helpers.js';
import { writeConfig } from '../support/config.js';
import { DaemonProcess, distBuilt, killAll, runCli } from '../support/daemon.js';
import { FaultReceiver } from '../support/receiver.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';

let dir: string;
let cleanup: () => Promise<void>;
const receivers: FaultReceiver[] = [];

beforeEach(async () => {
  expect(distBuilt(), 'dist/ is missing: run `npm run build` (npm test does)').toBe(true);
  ({ dir, cleanup } = await tempDir('recovery'));
});

afterEach(async () => {
  await killAll();
  for (const r of receivers.splice(0)) await r.close();
  await cleanup();
});

/** A webhook answering 500 'maintenance' until its mode changes. */
async function webhook(): Promise<FaultReceiver> {
  const r = new FaultReceiver();
  r.mode = { kind: 'status', status: 500, body: 'maintenance' };
  receivers.push(r);
  await r.up();
  return r;
}
const answered = (r: FaultReceiver, status: string) => r.posts.filter((p) => p.answer === status);

async function startDaemon(
  url: string,
  retry: Record<string, number> = { baseDelayMs: 20_000, maxDelayMs: 60_000, probeIntervalMs: 300 },
): Promise<DaemonProcess> {
  const config = await writeConfig(dir, {
    webhook: { url, timeoutMs: 5000, retry },
    spool: { dir: path.join(dir, 'spool'), fsync: false },
    modems: [{ name: 'tsel-1', port: 'virtual:tsel-1', senders: ['858'] }],
    log: { level: 'info', pretty: false },
  });
  return new DaemonProcess(config);
}

async function seed(n: number): Promise<string[]> {
  const spool = await Spool.open(path.join(dir, 'spool'), { logger: silentLogger() });
  const ids = Array.from({ length: n }, (_, i) => `sms-outage${i}`);
  for (const [i, id] of ids.entries())
    await spool.putPending(makeSms(id, { receivedAt: new Date(Date.now() - 60_000 + i).toISOString() }));
  await spool.close();
  return ids;
}

async function sentCount(ids: string[]): Promise<number> {
  const spool = await Spool.open(path.join(dir, 'spool'), { logger: silentLogger(), role: 'client' });
  let n = 0;
  for (const id of ids) if ((await spool.get(id))?.area === 'sent') n++;
  return n;
}

describe('pulsa-bridge run: the webhook recovers after an outage (issue 11 item 3)', () => {
  it('500s: one request per probe interval during the outage, then every pending record at once', async () => {
    const hook = await webhook();
    const ids = await seed(8);
    const daemon = await startDaemon(hook.url);
    await until(() => hook.posts.length >= 6, 'six requests during the outage', 20_000);
    const outage = [...hook.posts];
    const gaps = outage.slice(1).map((h, i) => h.at - outage[i]!.at);
    // Without probing every record would be tried at once (8 requests within milliseconds).
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(250);
    hook.mode = { kind: 'ok' };
    // With a per-record backoff (20 s base, doubling) the backlog would take tens of seconds; probes take one interval.
    await until(() => answered(hook, '200').length === ids.length, 'every record POSTed after recovery', 8_000);
    await until(async () => (await sentCount(ids)) === ids.length, 'every record in sent', 5_000);
    expect(new Set(answered(hook, '200').map((h) => h.key))).toEqual(new Set(ids));
    daemon.child.kill('SIGTERM');
  }, 60_000);

  it('connection refused: the daemon probes until the server listens again, then delivers the backlog', async () => {
    const hook = await webhook();
    await hook.down();
    const ids = await seed(6);
    const daemon = await startDaemon(hook.url);
    await new Promise((r) => setTimeout(r, 1500)); // the refused outage
    hook.mode = { kind: 'ok' };
    await hook.up(); // the same port
    await until(() => hook.posts.length >= ids.length, 'every record POSTed after the server came back', 8_000);
    expect(hook.posts.slice(0, ids.length).every((h) => h.answer === '200')).toBe(true);
    await until(async () => (await sentCount(ids)) === ids.length, 'every record in sent', 5_000);
    expect(daemon.err.join('')).toBe('');
    daemon.child.kill('SIGTERM');
  }, 60_000);
});

const cli = (args: string[]) => runCli([...args, '--config', path.join(dir, 'config.json')]);

describe('pulsa-bridge run: a 4xx is not always final (issue 11 item 4)', () => {
  it('a backend deploy answering 404: nothing goes to dead, `queue ls` and `status` show the last status, all arrive after it', async () => {
    const hook = await webhook();
    hook.mode = { kind: 'status', status: 404, body: 'maintenance' };
    const ids = await seed(3);
    const daemon = await startDaemon(hook.url, { baseDelayMs: 1000, maxDelayMs: 2000, probeIntervalMs: 300 });
    await until(() => new Set(hook.posts.map((h) => h.key)).size === ids.length, 'a 404 for every record', 20_000);
    const ls = await cli(['queue', 'ls']);
    expect(ls.code).toBe(0);
    for (const id of ids) expect(ls.out).toMatch(new RegExp(`${id}\\s+pending\\s.*retry \\d+.*HTTP 404`));
    await until(
      async () => (await cli(['status'])).out.includes('last not delivered: sms-outage'),
      '`status` to show the last result',
      15_000,
    );
    expect((await cli(['status'])).out).toMatch(/last not delivered: sms-outage\d \(HTTP 404: maintenance\)/);
    expect((await cli(['queue', 'ls', '--area', 'dead'])).out).not.toContain('sms-outage');
    hook.mode = { kind: 'ok' };
    await until(async () => (await sentCount(ids)) === ids.length, 'every record in sent after the deploy', 20_000);
    daemon.child.kill('SIGTERM');
  }, 60_000);
});
