/**
 * The daemon's SIGHUP handling in-process (production wiring, a virtual modem, a real spool directory and a real HTTP
 * server on loopback): a `queue retry` whose SIGHUP arrives while Spool.open is still scanning is not lost.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import path from 'node:path';
import { parseConfig } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import { Spool } from '../../src/spool/store.js';
import { reply, startServer } from '../forward/server.js';
import { makeSms } from '../spool/helpers.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';
import { startInProcess } from '../support/in-process.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  while (cleanups.length) await cleanups.pop()!();
});

describe('Daemon: SIGHUP', () => {
  it('a SIGHUP that arrives while the spool is still being opened is acted on once it is open', async () => {
    const { dir, cleanup } = await tempDir('daemon-hup');
    cleanups.push(cleanup);
    const server = await startServer([reply(200, 'ok')]);
    cleanups.push(() => server.close());
    const spoolDir = path.join(dir, 'spool');

    // A record given up earlier (dead), before this daemon starts.
    const before = await Spool.open(spoolDir, { logger: silentLogger(), fsync: false });
    await before.putPending(makeSms('hup1'));
    await before.markDead('hup1', 'HTTP 400: rejected', 400);
    await before.close();

    // The operator's `queue retry hup1` lands after the daemon's start-up scan read dead/ but before Spool.open
    // returns; its SIGHUP reaches the daemon in that window.
    const realOpen = Spool.open.bind(Spool);
    vi.spyOn(Spool, 'open').mockImplementation(async (d, opts) => {
      const spool = await realOpen(d, opts);
      if (opts.role !== 'client') {
        const operator = await realOpen(d, {
          logger: silentLogger(),
          role: 'client',
          signal: (_pid, sig) => void process.emit(sig),
        });
        await operator.retry('hup1');
      }
      return spool;
    });

    const config = parseConfig({
      webhook: { url: server.url, retry: { baseDelayMs: 50, maxDelayMs: 200 } },
      spool: { dir: spoolDir, fsync: false },
      modems: [{ name: 'tsel-1', port: 'virtual:tsel-1', senders: ['858'] }],
      shutdownGraceSec: 1,
    });
    const daemon = await startInProcess(config, cleanups, { waitRunning: false });

    await until(
      () => server.requests.some((r) => r.headers['idempotency-key'] === 'hup1'),
      'hup1 POSTed after the retry',
      3000,
    );
    await until(async () => (await daemon.spool.get('hup1'))?.area === 'sent', 'hup1 in sent', 3000);
  });
});
