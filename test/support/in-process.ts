/**
 * The daemon started in this process (Daemon.start; support/daemon.ts starts the compiled one as a process): on
 * virtual modems unless `simulate: false` (each modem's port becomes `virtual:<name>` with its number and operator,
 * as `run --simulate` does; a port that is virtual already is kept), with a silent logger unless one is given. Its
 * stop(), then the virtual modems' power-off, are pushed on the test's `cleanups` at once (a failing wait still
 * stops it); resolves once every configured modem runs, unless `waitRunning: false`.
 */
import type { Config } from '../../src/config.js';
import { Daemon } from '../../src/daemon.js';
import { silentLogger, type Logger } from '../../src/log.js';
import { isVirtualPort, virtualPortFor } from '../../src/serial/port-kind.js';
import type { VirtualModemOptions } from '../../src/virtual-modem/virtual-modem.js';
import { configureVirtualModems, stopVirtualModems } from '../../src/virtual-modem/virtual-ports.js';
import { until } from './until.js';

export type Cleanups = Array<() => Promise<void> | void>;

export interface InProcessOptions {
  logger?: Logger;
  /** Default true. */
  simulate?: boolean;
  /** The virtual modems' options (e.g. `{ bootStepMs: 0, noise: false }`); absent: the simulator's defaults. */
  virtualModem?: Partial<VirtualModemOptions>;
  /** Default true: wait (10 s at most) until every modem is `running`. */
  waitRunning?: boolean;
}

/** The config with every modem on a virtual modem (`run --simulate`'s rule). */
export function onVirtualModems(config: Config): Config {
  return {
    ...config,
    modems: config.modems.map((m) => (isVirtualPort(m.port) ? m : { ...m, port: virtualPortFor(m.name, m) })),
  };
}

export async function startInProcess(config: Config, cleanups: Cleanups, o: InProcessOptions = {}): Promise<Daemon> {
  const undo = configureVirtualModems(o.virtualModem ?? {});
  let daemon: Daemon;
  try {
    daemon = await Daemon.start({
      config: (o.simulate ?? true) ? onVirtualModems(config) : config,
      logger: o.logger ?? silentLogger(),
    });
  } catch (err) {
    stopVirtualModems();
    undo();
    throw err;
  }
  cleanups.push(async () => {
    await daemon.stop();
    stopVirtualModems();
    undo();
  });
  if (o.waitRunning ?? true)
    await until(() => daemon.status().modems.every((m) => m.state === 'running'), 'every modem to run', 10_000);
  return daemon;
}
