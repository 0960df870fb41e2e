/**
 * How a diagnostic command gets its ModemOps, as the command files see it (at.ts, ussd.ts): the options that name
 * the modem, and "open it, run this, close it whatever happens". Commands are written against this and the ModemOps
 * methods they use, never against a path, so the same code runs through the daemon or on the port.
 */
import type { Command } from 'commander';
import type { Config } from '../config.js';
import type { ModemOps } from '../ops/modem-ops.js';
import type { Io } from './io.js';

/** What every command that names a modem accepts (the target's options add more). */
export interface TargetCliOptionsBase {
  timeout: number;
  json?: boolean;
  verbose?: boolean;
}

export interface OpsTarget<O extends Partial<ModemOps>> {
  /** Adds the options that choose the modem (--modem, --port, --simulate, ...). */
  options(cmd: Command): Command;
  /** Opens the target, runs `fn` on it, closes it whatever happens. */
  withOps<T>(io: Io, opts: TargetCliOptionsBase, fn: (ops: O) => Promise<T>): Promise<T>;
}

/** Opens a configured modem by name: through the daemon when it runs, else directly (the CLI's target resolution). */
export type OpenOps = (config: Config, modem: string) => Promise<ModemOps>;
