/**
 * `pulsa-bridge status` against a daemon running in-process (production wiring, a virtual modem, a real spool and a
 * real HTTP server on loopback): the receiver's count of records written to the spool is shown as `spooled`, and
 * status.json carries it as `spooled` plus the old `forwarded` (same number, kept one release). A status.json written
 * before `spooled` existed still shows the count. Its canaries, from status.json, in text and in --json.
 */
import { localTime } from '../../src/time-format.js';
import { afterEach, describe, expect, it } from 'vitest';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseConfig } from '../../src/config.js';
import { statusFilePath } from '../../src/daemon/status-file.js';
import { silentLogger } from '../../src/log.js';
import { Spool } from '../../src/spool/store.js';
import { reply, startServer } from '../forward/server.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';
import { startInProcess } from '../support/in-process.js';
import { cli } from '../support/cli.js';
import { virtualModemAt } from '../../src/virtual-modem/virtual-ports.js';
import { STATUS_EXIT } from '../../src/cli/status.js';
import type { CanaryStatus } from '../../src/canary/types.js';
import { canaryWarning } from '../../src/health/model.js';
import { canaryStatus, pausedCanaryStatus } from '../support/canary.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
  process.exitCode = undefined;
});

const status = (args: string[]) => cli(['status', ...args]);

interface StatusFile {
  modems: Array<{ receiver?: { spooled?: number; forwarded: number; received: number } }>;
}

describe('status: the spooled count', () => {
  it('shows records written to the spool as `spooled`; status.json keeps `forwarded` beside it', async () => {
    const { dir, cleanup } = await tempDir('cli-status');
    cleanups.push(cleanup);
    const server = await startServer([reply(200, 'ok'), reply(200, 'ok')]);
    cleanups.push(() => server.close());
    const spoolDir = path.join(dir, 'spool');
    const config = parseConfig({
      webhook: { url: server.url },
      spool: { dir: spoolDir, fsync: false },
      modems: [{ name: 'tsel-1', port: 'virtual:tsel-1', senders: ['858'] }],
      shutdownGraceSec: 1,
    });
    const daemon = await startInProcess(config, cleanups);
    const vm = virtualModemAt('virtual:tsel-1')!;
    vm.injectSms({ from: '858', text: 'Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6281234567890.' });
    vm.injectSms({ from: '+6281299999999', text: 'promo' });
    await until(() => server.requests.length === 1, 'the POST', 10_000);

    const file = statusFilePath(spoolDir);
    let written: StatusFile | undefined;
    await until(
      async () => {
        written = JSON.parse(await readFile(file, 'utf8').catch(() => '{"modems":[]}')) as StatusFile;
        return written.modems[0]?.receiver?.received === 2;
      },
      'status.json with both SMS received',
      15_000,
    );
    expect(written!.modems[0]!.receiver).toMatchObject({ received: 2, spooled: 1, forwarded: 1 });

    const r = await status(['--spool', spoolDir]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/\n {2}received 2, spooled 1, ignored 1, /);
  });

  it('a status.json written before `spooled` existed: the count is read from `forwarded`', async () => {
    const { dir, cleanup } = await tempDir('cli-status-old');
    cleanups.push(cleanup);
    // The "daemon": an owner Spool in this process (it holds spool.lock with our pid).
    const owner = await Spool.open(dir, { logger: silentLogger(), fsync: false });
    cleanups.push(() => owner.close());
    const receiver = {
      received: 4,
      forwarded: 3,
      ignored: 1,
      quarantined: 0,
      duplicates: 0,
      partsWaiting: 0,
      sweeps: 2,
    };
    const modem = { name: 'tsel-1', state: 'running', since: new Date().toISOString(), reconnects: 0, receiver };
    const forwarder = { delivered: 3, retried: 0, dead: 0, unrecorded: 0 };
    const old = {
      version: '0.1.0',
      startedAt: new Date().toISOString(),
      webhookUrl: 'http://127.0.0.1:1/x',
      modems: [modem],
      forwarder,
    };
    await writeFile(
      statusFilePath(dir),
      JSON.stringify({ ...old, pid: process.pid, writtenAt: new Date().toISOString() }),
    );
    const r = await status(['--spool', dir]);
    expect(r.code).toBe(0);
    expect(r.out).toContain('modem tsel-1: running since ');
    expect(r.out).toMatch(
      /\n {2}received 4, spooled 3, ignored 1, quarantined 0, duplicates 0, parts waiting 0, reconnects 0, failed attempts 0\n/,
    );
  });

  it('prints its times in the local zone with the offset, like queue (issue 12: one zone everywhere)', async () => {
    const { dir, cleanup } = await tempDir('cli-status-zone');
    cleanups.push(cleanup);
    const owner = await Spool.open(dir, { logger: silentLogger(), fsync: false });
    cleanups.push(() => owner.close());
    const since = '2026-11-24T01:02:03.000Z';
    const modem = {
      name: 'tsel-1',
      state: 'running',
      since,
      reconnects: 0,
      receiver: {
        received: 0,
        spooled: 0,
        ignored: 0,
        quarantined: 0,
        duplicates: 0,
        partsWaiting: 0,
        sweeps: 1,
        lastSweepAt: since,
      },
    };
    const forwarder = { delivered: 0, retried: 0, dead: 0, unrecorded: 0 };
    const st = {
      version: '0.1.0',
      startedAt: since,
      webhookUrl: 'http://127.0.0.1:1/x',
      modems: [modem],
      forwarder,
      pid: process.pid,
      writtenAt: new Date().toISOString(),
    };
    await writeFile(statusFilePath(dir), JSON.stringify(st));
    const tz = process.env.TZ;
    process.env.TZ = 'Asia/Jakarta'; // a Pi in WIB: +07:00
    try {
      const r = await status(['--spool', dir]);
      expect(localTime(since)).toBe('2026-11-24 08:02:03 +07:00');
      expect(r.out).toMatch(/daemon: running \(pid \d+, since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+07:00\)/);
      expect(r.out).toContain('modem tsel-1: running since 2026-11-24 08:02:03 +07:00');
      expect(r.out).toContain('last sweep 2026-11-24 08:02:03 +07:00');
      expect(r.out).not.toContain(since);
    } finally {
      if (tz === undefined) delete process.env.TZ;
      else process.env.TZ = tz;
    }
  });
});

describe('status: the spool counts', () => {
  const stats = { pending: 7, sent: 40, dead: 1, ignored: 2, quarantine: 0, parts: 3 };
  const statusJson = (writtenAt: string) => ({
    version: '0.1.0',
    startedAt: writtenAt,
    webhookUrl: 'http://127.0.0.1:1/x',
    modems: [],
    forwarder: { delivered: 40, retried: 0, dead: 1, unrecorded: 0 },
    health: { healthy: true, problems: [] },
    spool: stats,
    pid: process.pid,
    writtenAt,
  });

  it("beside a running daemon whose status.json is fresh: the daemon's own counts, the spool not read again", async () => {
    const { dir, cleanup } = await tempDir('cli-status-counts');
    cleanups.push(cleanup);
    const owner = await Spool.open(dir, { logger: silentLogger(), fsync: false }); // the "daemon": holds spool.lock
    cleanups.push(() => owner.close());
    const writtenAt = new Date().toISOString();
    await writeFile(statusFilePath(dir), JSON.stringify(statusJson(writtenAt)));
    const r = await status(['--spool', dir]);
    expect(r.code).toBe(0);
    // The spool on disk is empty: 7 pending can only come from status.json.
    expect(r.out).toContain(
      `spool: 7 pending, 1 dead, 40 sent, 2 ignored, 0 quarantined, 3 parts (the daemon's count at ${localTime(writtenAt)})\n`,
    );
    const json = await status(['--spool', dir, '--json']);
    expect(JSON.parse(json.out).spool).toEqual(stats);
  });

  it('a stale status.json (the daemon may be hung): the spool is read from disk and the note says why', async () => {
    const { dir, cleanup } = await tempDir('cli-status-stale');
    cleanups.push(cleanup);
    const owner = await Spool.open(dir, { logger: silentLogger(), fsync: false });
    cleanups.push(() => owner.close());
    await writeFile(statusFilePath(dir), JSON.stringify(statusJson(new Date(Date.now() - 60_000).toISOString())));
    const r = await status(['--spool', dir]);
    expect(r.code).toBe(1); // status-stale is a problem
    expect(r.out).toMatch(/note: status.json is \d+ s old/);
    expect(r.out).toContain('spool: 0 pending, 0 dead, 0 sent, 0 ignored, 0 quarantined, 0 parts\n');
  });

  it("a status.json left by an earlier process (another pid): neither its counts nor its verdict are the running daemon's", async () => {
    const { dir, cleanup } = await tempDir('cli-status-other-pid');
    cleanups.push(cleanup);
    const owner = await Spool.open(dir, { logger: silentLogger(), fsync: false }); // holds spool.lock with our pid
    cleanups.push(() => owner.close());
    await writeFile(
      statusFilePath(dir),
      JSON.stringify({ ...statusJson(new Date().toISOString()), pid: process.pid + 100_000 }),
    );
    const r = await status(['--spool', dir]);
    expect(r.code).toBe(1);
    expect(r.out).toContain(
      `note: status.json is from an earlier process (pid ${process.pid + 100_000}); the daemon (pid ${process.pid}) has not written its own yet`,
    );
    expect(r.out).toContain('spool: 0 pending, 0 dead, 0 sent, 0 ignored, 0 quarantined, 0 parts\n');
    expect(r.out).not.toContain('forwarder:');
  });
});

describe('status: the canaries', () => {
  const approved = canaryStatus({
    nextRunAt: '2026-11-24T07:00:00.000Z',
    lastSuccessAt: '2026-11-24T01:00:00.000Z',
    lastRun: {
      id: 'r2',
      at: '2026-11-24T01:00:00.000Z',
      outcome: 'approved',
      spent: 5000,
      orderId: 'ORD-2',
      detail: 'approved',
      durationMs: 41_600,
    },
  });
  const paused = pausedCanaryStatus({
    lastSuccessAt: approved.lastSuccessAt,
    reason: 'run r9 was cut off mid-send: check the centre SIM, then resume',
    pausedAt: '2026-11-24T02:00:00.000Z',
    lastRun: {
      id: 'r9',
      at: '2026-11-24T01:59:00.000Z',
      outcome: 'unknown',
      spent: 5000,
      detail: 'the daemon stopped while this run was in flight',
    },
  });
  const statusJson = (canaries: CanaryStatus[] | undefined) => {
    const warnings = (canaries ?? []).flatMap((c) => canaryWarning(c) ?? []);
    return {
      version: '0.1.0',
      startedAt: new Date().toISOString(),
      webhookUrl: 'http://127.0.0.1:1/x',
      modems: [],
      forwarder: { delivered: 0, retried: 0, dead: 0, unrecorded: 0 },
      health: { healthy: true, state: warnings.length ? 'degraded' : 'healthy', problems: [], warnings },
      spool: { pending: 0, sent: 0, dead: 0, ignored: 0, quarantine: 0, parts: 0 },
      ...(canaries ? { canaries } : {}),
      pid: process.pid,
      writtenAt: new Date().toISOString(),
    };
  };

  it("lists each canary: state, the day's spend and cap, the last run and the next, in local time; --json as the daemon wrote them", async () => {
    const { dir, cleanup } = await tempDir('cli-status-canaries');
    cleanups.push(cleanup);
    const owner = await Spool.open(dir, { logger: silentLogger(), fsync: false }); // the "daemon": holds spool.lock
    cleanups.push(() => owner.close());
    const canaries = [approved, paused];
    await writeFile(statusFilePath(dir), JSON.stringify(statusJson(canaries)));
    const tz = process.env.TZ;
    process.env.TZ = 'Asia/Jakarta';
    try {
      const r = await status(['--spool', dir]);
      expect(r.code).toBe(0); // degraded: money flows
      expect(r.out).toContain(
        'canary tsel-hourly: waiting (Rp 5.000 from tsel-test through a reseller order, every 6 h), spent today Rp 10.000 of Rp 20.000 (2026-11-24, Asia/Jakarta)\n' +
          '  last run: approved at 2026-11-24 08:00:00 +07:00 (order ORD-2, took 42 s)\n' +
          '  next run: 2026-11-24 14:00:00 +07:00\n',
      );
      expect(r.out).toContain(
        'canary isat-direct: PAUSED since 2026-11-24 09:00:00 +07:00 (Rp 5.000 from isat-test to 081298765432, every 15 min), spent today Rp 5.000 of Rp 20.000 (2026-11-24, Asia/Jakarta)\n' +
          '  why: run r9 was cut off mid-send: check the centre SIM, then resume\n' +
          '  last run: unknown at 2026-11-24 08:59:00 +07:00: the daemon stopped while this run was in flight\n' +
          '  last approved: 2026-11-24 08:00:00 +07:00; 1 of 3 failures in a row before it pauses itself\n' +
          '  next run: none until `pulsa-bridge canary resume isat-direct`\n',
      );
      expect(r.out).toMatch(/health: degraded \(money flows; warnings\)\n {2}- canary isat-direct is paused since /);
      expect(r.out).toContain(
        '    hint: check the centre SIM and the last order (`pulsa-bridge canary ls` shows its runs), then `pulsa-bridge canary resume isat-direct`\n',
      );
      expect(r.out).not.toContain('2026-11-24T0'); // no ISO time in the text
      const json = JSON.parse((await status(['--spool', dir, '--json'])).out);
      expect(json.status.canaries).toEqual(JSON.parse(JSON.stringify(canaries)));
      expect(json.health.warnings.map((w: { code: string }) => w.code)).toEqual(['canary-paused']);
    } finally {
      if (tz === undefined) delete process.env.TZ;
      else process.env.TZ = tz;
    }
  });

  it('a daemon without canaries (or one that predates them): no canary line, none in --json', async () => {
    const { dir, cleanup } = await tempDir('cli-status-no-canaries');
    cleanups.push(cleanup);
    const owner = await Spool.open(dir, { logger: silentLogger(), fsync: false });
    cleanups.push(() => owner.close());
    await writeFile(statusFilePath(dir), JSON.stringify(statusJson(undefined)));
    const r = await status(['--spool', dir]);
    expect(r.code).toBe(0);
    expect(r.out).not.toContain('canary');
    expect(r.out).toContain('health: ok\n');
    expect(JSON.parse((await status(['--spool', dir, '--json'])).out).status.canaries).toBeUndefined();
  });
});

describe('status exit codes a probe can tell apart', () => {
  it('a config it cannot read is 6 (not 1, unhealthy), with the reason; a usage error is 2', async () => {
    const missing = await cli(['status', '--config', '/nonexistent/pulsa-bridge/config.json']);
    expect(missing.code).toBe(6);
    expect(missing.err).toContain('cannot read (ENOENT)');
    expect((await cli(['status', '--bogus'])).code).toBe(2);
    // The table every probe reads.
    expect(STATUS_EXIT).toEqual({ healthy: 0, unhealthy: 1, usage: 2, notRunning: 3, unknown: 4, configUnreadable: 6 });
  });

  it('ussd with an empty code, or one that is not a USSD code, is a usage error (2) before any port opens', async () => {
    for (const code of ['', 'hello']) {
      const r = await cli(['ussd', '--simulate', code]);
      expect(r.code).toBe(2);
      expect(r.err).toMatch(/^error: (empty USSD code|"hello" is not a USSD code)\nhint: digits with \* and #/);
    }
  });
});
