/**
 * The direct path of a diagnostic command: this process opens the port (or the virtual modem) itself, as the daemon
 * would, and wraps the session in DirectOps. Loaded by target.ts only when no running daemon holds the modem, so a
 * command answered through the daemon never loads the modem stack or the serial addon.
 */
import type { Config, ModemConfig } from '../config.js';
import { DirectOps } from '../ops/direct-ops.js';
import type { ModemOps } from '../ops/modem-ops.js';
import { createLogger, silentLogger, type Logger } from '../log.js';
import { VirtualNetwork } from '../virtual-modem/operator-network.js';
import { VirtualModem } from '../virtual-modem/virtual-modem.js';
import type { Io } from './io.js';
import { openSession } from './session.js';

/** How a diagnostic command's options name its modem and the port's settings. */
export interface TargetCliOptions {
  modem?: string;
  config?: string;
  port?: string;
  /** Given on the command line (commander's default 115200 otherwise; a named modem then uses its config's). */
  baud: number;
  simulate?: boolean;
  profile?: string;
  pin?: string;
  timeout: number;
  json?: boolean;
  verbose?: boolean;
}

function loggerFor(opts: { verbose?: boolean }): Logger {
  return opts.verbose ? createLogger({ level: 'debug', pretty: false, destination: process.stderr }) : silentLogger();
}

/** Opens a configured modem directly: its simulated modems share one virtual network. */
export type DirectOpener = (config: Config, m: ModemConfig, why: string) => Promise<ModemOps>;

export function directOpener(io: Io, o: { verbose?: boolean }): DirectOpener {
  let network: VirtualNetwork | undefined;
  const onNetwork = (m: ModemConfig) => (path: string): VirtualModem => {
    network ??= new VirtualNetwork();
    const line = m.number && m.operator ? network.join({ number: m.number, operator: m.operator, ...(m.virtual ?? {}) }) : undefined;
    const vm = new VirtualModem({ path, profile: 'simcom', bootStepMs: 0, ...(line ? { ussdMenus: line.ussdMenus, onSmsSubmitted: line.onSmsSubmitted, identity: { ownNumber: line.ownNumber } } : {}) });
    line?.connect(vm);
    vm.start();
    return vm;
  };
  return async (config, m, why) => {
    const opts: TargetCliOptions = { modem: m.name, baud: 115200, timeout: m.commandTimeoutMs, ...(o.verbose ? { verbose: true } : {}) };
    return m.simulate ? openDirect({ ...io, virtualModem: onNetwork(m) }, opts, m, why, { virtualPath: m.port, config }) : openDirect(io, opts, m, why, { config });
  };
}

/**
 * The port opened by this process. `virtualPath`: where a simulated modem is opened (default /virtual/cli; the
 * opener's modems each need their own). `config`: its stateDir (or spool dir) holds the daemon's memory of rejected
 * PINs, which the direct path honours too.
 */
export async function openDirect(io: Io, opts: TargetCliOptions, m: ModemConfig | undefined, why?: string, o: { virtualPath?: string; config?: Config } = {}): Promise<ModemOps> {
  const { virtualPath, config } = o;
  const simulate = opts.simulate === true || (m?.simulate === true && !opts.port);
  const port = opts.port ?? (simulate ? virtualPath : m?.port);
  const name = m?.name ?? port ?? '/virtual/cli';
  if (opts.verbose) io.err(`path: direct, opening ${simulate ? 'the virtual modem' : port}${why ? ` (${why})` : ''}\n`);
  const pin = opts.pin ?? process.env.PULSA_BRIDGE_PIN ?? m?.pin;
  const profile = opts.profile ?? (m && m.profile !== 'auto' ? m.profile : undefined);
  const session = await openSession({
    ...(port ? { port } : {}),
    baud: m && opts.baud === 115200 ? m.baudRate : opts.baud,
    simulate,
    ...(profile ? { profile } : {}),
    ...(pin ? { pin } : {}),
    ...(config ? { stateDir: config.stateDir ?? config.spool.dir } : {}), // the daemon's memory of rejected PINs
    timeoutMs: opts.timeout,
    logger: loggerFor(opts),
    name,
    ...(io.virtualModem ? { virtualModem: io.virtualModem } : {}),
  });
  return new DirectOps(session, name, loggerFor(opts));
}

