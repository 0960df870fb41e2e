/**
 * The daemon started in this process (Daemon.start; support/daemon.ts starts the compiled one as a process): on
 * simulated modems unless `simulate: false`, with a silent logger unless one is given. Its stop() is pushed on the
 * test's `cleanups` at once (a failing wait still stops it); resolves once every configured modem runs, unless
 * `waitRunning: false` (the caller waits for what it needs).
 */
import type { Config } from '../../src/config.js';
import { Daemon } from '../../src/daemon.js';
import { silentLogger, type Logger } from '../../src/log.js';
import type { VirtualModemOptions } from '../../src/virtual-modem/virtual-modem.js';
import { until } from './until.js';

export type Cleanups = Array<() => Promise<void> | void>;

export interface InProcessOptions {
  logger?: Logger;
  /** Default true. */
  simulate?: boolean;
  /** The virtual modems' options (e.g. `{ bootStepMs: 0, noise: false }`); absent: the daemon's defaults. */
  virtualModem?: Partial<VirtualModemOptions>;
  /** Default true: wait (10 s at most) until every modem is `running`. */
  waitRunning?: boolean;
}

export async function startInProcess(config: Config, cleanups: Cleanups, o: InProcessOptions = {}): Promise<Daemon> {
  const daemon = await Daemon.start({
    config,
    logger: o.logger ?? silentLogger(),
    simulate: o.simulate ?? true,
    ...(o.virtualModem ? { virtualModem: o.virtualModem } : {}),
  });
  cleanups.push(() => daemon.stop());
  if (o.waitRunning ?? true) await until(() => daemon.status().modems.every((m) => m.state === 'running'), 'every modem to run', 10_000);
  return daemon;
}
