/**
 * The direct path of a diagnostic command: this process opens the port (or the virtual modem) itself, as the daemon
 * would, and wraps the session in DirectOps. Loaded by target.ts and balance.ts only when no running daemon holds the
 * modem, so a command answered through the daemon never loads the modem stack or the serial addon.
 */
import type { Config, ModemConfig } from '../config.js';
import { DirectOps } from '../ops/direct-ops.js';
import type { ModemOps } from '../ops/modem-ops.js';
import { createLogger, silentLogger, type Logger } from '../log.js';
import type { Io } from './io.js';
import { openSession } from './session.js';
import { SIMULATE_PORT } from '../serial/port-kind.js';

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

/** Opens a configured modem directly. */
export type DirectOpener = (config: Config, m: ModemConfig, why: string) => Promise<ModemOps>;

export function directOpener(io: Io, o: { verbose?: boolean }): DirectOpener {
  return async (config, m, why) => {
    const opts: TargetCliOptions = {
      modem: m.name,
      baud: 115200,
      timeout: m.commandTimeoutMs,
      ...(o.verbose ? { verbose: true } : {}),
    };
    return openDirect(io, opts, m, why, { config });
  };
}

/**
 * The port opened by this process: --port, else the configured modem's port; --simulate stands for SIMULATE_PORT.
 * `config`: its stateDir (or spool dir) holds the daemon's memory of rejected PINs, which the direct path honours too.
 */
export async function openDirect(
  io: Io,
  opts: TargetCliOptions,
  m: ModemConfig | undefined,
  why?: string,
  o: { config?: Config } = {},
): Promise<ModemOps> {
  const { config } = o;
  const port = opts.port ?? (opts.simulate ? SIMULATE_PORT : m?.port);
  const name = m?.name ?? port ?? SIMULATE_PORT;
  if (opts.verbose) io.err(`path: direct, opening ${port}${why ? ` (${why})` : ''}\n`);
  const pin = opts.pin ?? process.env.PULSA_BRIDGE_PIN ?? m?.pin;
  const profile = opts.profile ?? (m && m.profile !== 'auto' ? m.profile : undefined);
  const session = await openSession({
    ...(port ? { port } : {}),
    baud: m && opts.baud === 115200 ? m.baudRate : opts.baud,
    ...(profile ? { profile } : {}),
    ...(pin ? { pin } : {}),
    ...(config ? { stateDir: config.stateDir ?? config.spool.dir } : {}), // the daemon's memory of rejected PINs
    timeoutMs: opts.timeout,
    logger: loggerFor(opts),
    name,
  });
  return new DirectOps(session, name, loggerFor(opts));
}
