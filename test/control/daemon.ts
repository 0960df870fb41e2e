/**
 * The daemon the control-plane tests talk to: Daemon.start in-process with one virtual modem (`tsel-1`, senders 858,
 * others kept on the SIM so the operator has something to list, read and delete), a real spool directory, a real
 * HTTP server on loopback answering 200, and a connected ControlClient. Everything it starts is pushed on `cleanups`
 * (the test file's afterEach runs them in reverse).
 */
import path from 'node:path';
import { parseConfig } from '../../src/config.js';
import { ControlClient } from '../../src/control/client/client.js';
import type { Daemon } from '../../src/daemon.js';
import type { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';
import { reply, startServer, type TestServer } from '../forward/server.js';
import { tempDir } from '../support/tmp.js';
import { startInProcess } from '../support/in-process.js';
import { virtualModemAt } from '../../src/virtual-modem/virtual-ports.js';

export interface ControlDaemon {
  daemon: Daemon;
  vm: VirtualModem;
  socket: string;
  client: ControlClient;
  server: TestServer;
  posts: () => number;
}

export async function startControlDaemon(cleanups: Array<() => Promise<void> | void>): Promise<ControlDaemon> {
  const { dir, cleanup } = await tempDir('ctl');
  cleanups.push(cleanup);
  const server = await startServer([reply(200, '{"success":true}')]);
  cleanups.push(() => server.close());
  const config = parseConfig({
    webhook: { url: server.url, retry: { baseDelayMs: 50, maxDelayMs: 200 } },
    spool: { dir: path.join(dir, 'spool'), fsync: false },
    modems: [
      { name: 'tsel-1', port: 'virtual:tsel-1', senders: ['858'], otherSenders: 'keep', sweepIntervalSec: 3600 },
    ],
    shutdownGraceSec: 1,
  });
  const daemon = await startInProcess(config, cleanups, { virtualModem: { bootStepMs: 0, noise: false } });
  const client = await ControlClient.connect(config.control.socketPath);
  cleanups.push(() => client.close());
  return {
    daemon,
    vm: virtualModemAt('virtual:tsel-1')!,
    socket: config.control.socketPath,
    client,
    server,
    posts: () => server.requests.length,
  };
}
