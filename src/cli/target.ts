/**
 * Which modem a diagnostic command talks to, and which way: `--modem NAME`, `--port P` or `--simulate`. A running
 * daemon that holds the modem is asked first (RemoteOps over its control socket), found from the config's control and
 * spool sections and modem names alone (config-control.ts: no secret needed); otherwise the CLI loads the whole config
 * and opens the port itself (DirectOps). Commands get a ModemOps and never know which; both raise the same BridgeError.
 * A socket this user may not use is an error, never a silent fallback. Missing or unknown targets are usage errors
 * (exit 2) found before anything opens. The ModemOps is always closed. configOpener does the same for commands holding
 * the whole config (test-transfer). The daemon's side of it: daemon-link.ts.
 */
import { Command, Option } from 'commander';
import type { Config } from '../config.js';
import { loadDaemonConfig } from '../config-control.js';
import type { ModemOps } from '../ops/modem-ops.js';
import { RemoteOps } from '../control/client/remote-ops.js';
import type { ControlClient } from '../control/client/client.js';
import { ConfigError } from '../errors.js';
import { PROFILE_SETTINGS } from '../modem/types.js';
import { asBridgeError, daemonHolds, findDaemon, translated } from './daemon-link.js';
import type { OpenOps } from './ops-target.js';

export type { TargetCliOptions } from './direct-target.js';
import { configPath, type Io } from './io.js';
import type { DirectOpener, TargetCliOptions } from './direct-target.js';
import { UsageError, wholeNumber } from './usage.js';

/** The options of every command that needs a modem. */
export function targetOptions(cmd: Command): Command {
  return cmd
    .option('-m, --modem <name>', 'the modem by its config name (optional when the config has one modem)')
    .option('-c, --config <file>', `config file naming the modems (default: ${configPath()})`)
    .option('-p, --port <path>', 'serial port, e.g. /dev/serial/by-id/usb-...-if02-port0 (see `pulsa-bridge ports`)')
    .option('-b, --baud <rate>', 'baud rate', wholeNumber('a baud rate such as 115200 or 9600', 1), 115200)
    .option('--simulate', 'use the built-in virtual modem instead of hardware')
    .addOption(new Option('--profile <id>', 'modem profile (default: detected)').choices(PROFILE_SETTINGS))
    .option('--pin <pin>', 'SIM PIN, if the SIM asks for one (or set PULSA_BRIDGE_PIN)')
    .option(
      '--timeout <ms>',
      'per-command timeout in ms',
      wholeNumber('a timeout in ms (a whole number >= 1)', 1),
      10_000,
    )
    .option(
      '-v, --verbose',
      'say which path the command takes (the running daemon or the port) and log the AT traffic to stderr',
    );
}

/** Opens the target, runs `fn` on it, closes it whatever happens. */
export async function withModemOps<T>(io: Io, opts: TargetCliOptions, fn: (ops: ModemOps) => Promise<T>): Promise<T> {
  const ops = await openTarget(io, opts);
  try {
    return await fn(ops);
  } finally {
    await ops.close();
  }
}

const noTarget = (why: string) =>
  new UsageError('no port given', {
    hint: `pass --port /dev/serial/by-id/... (see \`pulsa-bridge ports\`), --modem NAME from a config (--config FILE; ${why}), or --simulate to use the virtual modem`,
  });

/** The port opened by this process (direct-target.ts, loaded only then). */
async function direct(...a: Parameters<typeof import('./direct-target.js').openDirect>): Promise<ModemOps> {
  return (await import('./direct-target.js')).openDirect(...a);
}

export async function openTarget(io: Io, opts: TargetCliOptions): Promise<ModemOps> {
  if (opts.simulate) {
    // The virtual modem, never the daemon; named after the config's modem when one is asked for.
    const config =
      opts.modem !== undefined || opts.config !== undefined ? await readConfig(opts, wholeConfig) : undefined;
    return direct(io, opts, config && pickModem(config.modems, opts.modem));
  }
  // Finding the daemon takes the control and spool sections and the modems' names (config-control.ts).
  const view = await readConfig(opts, loadDaemonConfig);
  if (!view) {
    if (!opts.port) throw noTarget(`${configPath()} does not exist`);
    return direct(io, opts, undefined, 'no config, so no daemon to ask');
  }
  const named = opts.port && !opts.modem ? undefined : pickModem(view.modems, opts.modem).name;
  const found = await findDaemon(view);
  if (found.client) {
    const held = await heldBy(found.client, named, opts.port);
    if (held) {
      if (opts.verbose) io.err(`path: the running daemon (control socket ${found.socket}), modem ${held}\n`);
      return translated(new RemoteOps(found.client, held));
    }
    await found.client.close();
  }
  const why = found.client
    ? `the daemon at ${found.socket} does not run this modem`
    : `no daemon answered at ${found.tried.join(', ')}`;
  // This process opens the port: the whole config, validated as the daemon would (its PIN, profile, timeouts).
  const config = await wholeConfig(configPath(opts.config));
  return direct(io, opts, named === undefined ? undefined : pickModem(config.modems, named), why, { config });
}

/** An opener (see the header) for commands that hold the loaded config and name the modem. */
export function configOpener(io: Io, o: { verbose?: boolean } = {}): OpenOps {
  let opener: DirectOpener | undefined; // the port-opening side, loaded when a modem is not the daemon's
  return async (config: Config, name: string): Promise<ModemOps> => {
    const m = pickModem(config.modems, name);
    const found = await findDaemon(config);
    if (found.client) {
      const held = await heldBy(found.client, name, undefined);
      if (held) {
        if (o.verbose) io.err(`path: the running daemon (control socket ${found.socket}), modem ${held}\n`);
        return translated(new RemoteOps(found.client, held));
      }
      await found.client.close();
    }
    const why = found.client ? 'the daemon does not run this modem' : 'no daemon answered';
    opener ??= (await import('./direct-target.js')).directOpener(io, o);
    return opener(config, m, why);
  };
}

/** daemonHolds(), the connection closed and the error read as the direct path's when `hello` fails. */
async function heldBy(client: ControlClient, name: string | undefined, port: string | undefined) {
  try {
    return await daemonHolds(client, name, port);
  } catch (err) {
    await client.close();
    throw asBridgeError(err);
  }
}

/** The whole config, validated (config.js, loaded only then). */
async function wholeConfig(file: string): Promise<Config> {
  return (await import('../config.js')).loadConfig(file);
}

/** The config given, else the default one when it exists; undefined when the default is absent (--port still works). */
async function readConfig<C>(opts: TargetCliOptions, load: (file: string) => Promise<C>): Promise<C | undefined> {
  try {
    return await load(configPath(opts.config));
  } catch (err) {
    const absent =
      err instanceof ConfigError &&
      err.problems.length === 1 &&
      /^cannot read \((ENOENT|EACCES)\)/.test(err.problems[0]!);
    if (absent && opts.config === undefined && (opts.port || !opts.modem)) return undefined;
    throw err;
  }
}

function pickModem<M extends { name: string }>(modems: readonly M[], name: string | undefined): M {
  const names = modems.map((m) => m.name);
  if (name === undefined) {
    if (modems.length === 1) return modems[0]!;
    throw new UsageError(`the config has ${names.length} modems: pass --modem NAME (${names.join(', ')})`);
  }
  const m = modems.find((x) => x.name === name);
  if (!m)
    throw new UsageError(`no modem named "${name}" in the config (it has: ${names.join(', ')})`, {
      hint: '`pulsa-bridge config check` shows the config',
    });
  return m;
}
