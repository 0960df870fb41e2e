/**
 * `pulsa-bridge balance [--modem NAME] [--code CODE] [--reply R ...] [--json]`: a balance and active-period check now,
 * on one modem or every modem with a balance check, through the running daemon (with its settings; the result then
 * kept in its status) or on the port (the whole config read then); the output is the same. The reply is shown verbatim
 * and never guessed (state `unknown` when no pattern matches); --json gives modem, code, reply, balance, activeUntil,
 * state, reasons, hint. Exit 1 when a check failed.
 */
import { summaryOf } from './command-list.js';
import { Command } from 'commander';
import type { BalanceCheckSettings, BalanceResult } from '../balance/watch.js';
import type { Config } from '../config.js';
import { loadDaemonConfig, type DaemonConfig } from '../config-control.js';
import type { ModemOps } from '../ops/modem-ops.js';
import { configPath, printJson, type Io } from './io.js';
import { CommandFailed } from './lifecycle.js';
import { greetDaemon, type DaemonModem, type DaemonSession } from './daemon-link.js';
import type { DirectOpener } from './direct-target.js';
import type { OpenOps } from './ops-target.js';
import { UsageError } from './usage.js';
import { formatBalance } from './balance-format.js';

interface BalanceOptions {
  config?: string;
  modem?: string[];
  code?: string;
  reply?: string[];
  json?: boolean;
}

const collect = (v: string, prev: string[] = []) => [...prev, v];

/** The commands this module adds to the program (cli.ts). */
export function commands(io: Io): Command[] {
  return [balanceCommand(io)];
}

/** `openPort`: how a modem the daemon does not run is opened (default: this process opens its port). */
export function balanceCommand(io: Io, openPort?: OpenOps): Command {
  return new Command('balance')
    .description(summaryOf('balance'))
    .option('-c, --config <file>', 'config file')
    .option('-m, --modem <name>', 'modem to check (repeatable; default: every modem with a balance check)', collect)
    .option('--code <code>', 'USSD code to dial instead of the configured one, e.g. *888#')
    .option('--reply <text>', 'menu answer to send after the code (repeatable, in order)', collect)
    .option('--json', 'print JSON: an object, or an array with several modems')
    .action(async (opts: BalanceOptions) => {
      const file = configPath(opts.config);
      const view = await loadDaemonConfig(file);
      checkNames(view, opts.modem); // a usage error before the daemon is asked or a port opened
      const daemon = await greetDaemon(view);
      let results: BalanceResult[];
      try {
        const checks = await planChecks(view, daemon?.modems, () => portSettings(file, opts), opts);
        results = await runChecks(checks, daemon, opts, openPort ?? portOpener(io, daemon));
      } finally {
        await daemon?.close();
      }
      if (opts.json) printJson(io, results.length === 1 ? results[0] : results);
      else for (const r of results) io.out(formatBalance(r));
      const failed = results.filter((r) => r.state === 'error');
      if (failed.length > 0) throw new CommandFailed(failed.map((r) => `${r.modem}: ${r.error}`).join('; '));
    });
}

/** The whole config and each modem's balance settings in it (--code and --reply applied): loaded only when needed. */
export interface PortSettings {
  config: Config;
  settingsFor(name: string): BalanceCheckSettings | undefined;
}

async function portSettings(file: string, opts: BalanceOptions): Promise<PortSettings> {
  const [{ loadConfig, balanceSettingsFor }, { withOverrides }] = await Promise.all([
    import('../config.js'),
    import('../balance/watch.js'),
  ]);
  const config = await loadConfig(file);
  return {
    config,
    settingsFor: (name) => {
      const m = config.modems.find((x) => x.name === name);
      return m && withOverrides(balanceSettingsFor(m), opts.code, opts.reply);
    },
  };
}

function checkNames(view: Pick<DaemonConfig, 'modems'>, names: readonly string[] | undefined): void {
  for (const name of names ?? [])
    if (!view.modems.some((m) => m.name === name))
      throw new UsageError(`no modem named ${JSON.stringify(name)} in the config`, {
        hint: `configured: ${view.modems.map((x) => x.name).join(', ')}`,
      });
}

/**
 * One check to run: through the daemon, which checks with its own settings (a code given replaces them), or on the
 * port with the whole config's.
 */
export type Check =
  { name: string; via: 'daemon' } | { name: string; via: 'port'; config: Config; settings: BalanceCheckSettings };

/**
 * The modems to check, decided before anything is dialled: those named (each must be in the config and have a check)
 * or every configured one with a check. A modem the daemon runs has a check when its `hello` says so (a daemon too old
 * to say: as the whole config says); any other is judged on the whole config, loaded then, and checked on its port.
 */
export async function planChecks(
  view: Pick<DaemonConfig, 'modems'>,
  daemonModems: readonly DaemonModem[] | undefined,
  whole: () => Promise<PortSettings>,
  opts: Pick<BalanceOptions, 'modem' | 'code'>,
): Promise<Check[]> {
  checkNames(view, opts.modem);
  const named = opts.modem !== undefined && opts.modem.length > 0;
  let loaded: PortSettings | undefined;
  const checks: Check[] = [];
  // a name given twice is checked once (each check dials)
  for (const name of named ? [...new Set(opts.modem)] : view.modems.map((m) => m.name)) {
    const held = daemonModems?.find((m) => m.name === name);
    let check: Check | undefined;
    if (held && (held.balanceCheck !== undefined || opts.code !== undefined)) {
      if (held.balanceCheck || opts.code !== undefined) check = { name, via: 'daemon' };
    } else {
      loaded ??= await whole();
      const settings = loaded.settingsFor(name);
      if (settings) check = held ? { name, via: 'daemon' } : { name, via: 'port', config: loaded.config, settings };
    }
    if (check) checks.push(check);
    else if (named)
      throw new UsageError(`modem ${name} has no balance check`, {
        hint: 'pass --code (e.g. --code "*888#"), or set "operator" or a "balance" section for it in the config',
      });
  }
  if (checks.length === 0)
    throw new UsageError('no modem has a balance check', {
      hint: 'set "operator" or a "balance" section for a modem in the config, or pass --modem NAME --code CODE',
    });
  return checks;
}

/** This process opens the modem's port (direct-target.ts, loaded then). */
function portOpener(io: Io, daemon: DaemonSession | undefined): OpenOps {
  let opener: DirectOpener | undefined;
  return async (config, name) => {
    opener ??= (await import('./direct-target.js')).directOpener(io, {});
    const m = config.modems.find((x) => x.name === name)!;
    return opener(config, m, daemon ? 'the daemon does not run this modem' : 'no daemon answered');
  };
}

/** Runs the checks one after another (one modem's USSD at a time), each on its path. */
async function runChecks(
  checks: readonly Check[],
  daemon: DaemonSession | undefined,
  opts: BalanceOptions,
  openPort: OpenOps,
): Promise<BalanceResult[]> {
  const results: BalanceResult[] = [];
  for (const c of checks) {
    if (c.via === 'daemon') {
      results.push(await daemon!.ops(c.name).balance(opts.code, opts.reply));
      continue;
    }
    const ops: ModemOps = await openPort(c.config, c.name);
    try {
      results.push(await (await import('../balance/watch.js')).checkBalance(c.name, ops, c.settings));
    } finally {
      await ops.close();
    }
  }
  return results;
}
