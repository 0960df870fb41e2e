/**
 * The daemon's start is one sequence with one cleanup stack: a step that fails releases exactly what the steps before
 * it acquired, last first (the SIGHUP handler, the spool lock, status.json), and the stop unwinds the same stack.
 */
import { createServer, type Server } from 'node:net';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { Daemon } from '../../src/daemon.js';
import { CleanupStack } from '../../src/daemon/cleanup.js';
import { silentLogger, type Logger } from '../../src/log.js';
import { Spool } from '../../src/spool/store.js';
import { reply, startServer } from '../forward/server.js';
import { tempDir } from '../support/tmp.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe('CleanupStack', () => {
  it('releases last first, goes on past a release that fails (logged), and releases each once', async () => {
    const order: string[] = [];
    const errors: string[] = [];
    const logger: Logger = { ...silentLogger(), error: (_obj: unknown, msg?: string) => void errors.push(String(msg)) };
    const stack = new CleanupStack();
    stack.push('a', () => void order.push('a'));
    stack.push('b', () => {
      order.push('b');
      throw new Error('b broke');
    });
    stack.push('c', async () => void order.push('c'));
    await stack.unwind(logger);
    await stack.unwind(logger);
    expect(order).toEqual(['c', 'b', 'a']);
    expect(errors).toEqual(['releasing b failed: b broke']);
  });
});

describe('Daemon.start: a failed step unwinds what was acquired', () => {
  it('a metrics port already taken: the start fails, the SIGHUP handler is gone, the spool lock is free, no status.json', async () => {
    const { dir, cleanup } = await tempDir('daemon-unwind');
    cleanups.push(cleanup);
    const webhook = await startServer([reply(200, 'ok')]);
    cleanups.push(() => webhook.close());
    const taken: Server = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => taken.close(() => r())));
    const port = (taken.address() as { port: number }).port;
    const spoolDir = path.join(dir, 'spool');
    const base = {
      webhook: { url: webhook.url },
      spool: { dir: spoolDir, fsync: false },
      control: { socket: path.join(dir, 'run', 'control.sock') },
      modems: [{ name: 'tsel-1', port: 'virtual:tsel-1', senders: ['858'] }],
      shutdownGraceSec: 1,
    };
    const sighupBefore = process.listenerCount('SIGHUP');

    await expect(
      Daemon.start({
        config: parseConfig({ ...base, metrics: { listen: `127.0.0.1:${port}` } }),
        logger: silentLogger(),
      }),
    ).rejects.toThrow();

    expect(process.listenerCount('SIGHUP')).toBe(sighupBefore);
    expect(existsSync(path.join(spoolDir, 'status.json'))).toBe(false);
    const owner = await Spool.open(spoolDir, { logger: silentLogger(), fsync: false }); // the lock was released
    await owner.close();

    // The same config without the taken port starts, and its stop leaves the process as it found it.
    const daemon = await Daemon.start({ config: parseConfig(base), logger: silentLogger() });
    expect(process.listenerCount('SIGHUP')).toBe(sighupBefore + 1);
    await daemon.stop();
    expect(process.listenerCount('SIGHUP')).toBe(sighupBefore);
    expect(existsSync(path.join(spoolDir, 'status.json'))).toBe(false);
  });
});
