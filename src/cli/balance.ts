/**
 * `pulsa-bridge balance [--modem NAME] [--code CODE] [--reply R ...] [--json]`: a balance and active-period check now,
 * on one modem or every modem with a balance check, through the running daemon (the result then kept in its status) or
 * on the port; the output is the same. The reply is shown verbatim and never guessed (state `unknown` when no pattern
 * matches); --json gives modem, code, reply, balance, activeUntil, state, reasons, hint. Exit 1 when a check failed.
 */
import { summaryOf } from './command-list.js';
import { Command } from 'commander';
import { checkBalance, withOverrides, type BalanceCheckSettings, type BalanceResult } from '../balance/watch.js';
import { balanceSettingsFor, loadConfig, type Config } from '../config.js';
import type { ModemOps } from '../ops/modem-ops.js';
import { configPath, printJson, type Io } from './io.js';
import { CommandFailed } from './lifecycle.js';
import type { OpenOps } from './ops-target.js';
import { configOpener } from './target.js';
import { UsageError } from './usage.js';
import { formatBalance } from './balance-format.js';

/** ModemOps that can ask the daemon for a balance check (kept in its status); the direct path has none. */
interface DaemonBalance {
  balance?(code: string | undefined, replies: readonly string[] | undefined): Promise<BalanceResult>;
}

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
  return [balanceCommand(io, configOpener(io))];
}

export function balanceCommand(io: Io, open: OpenOps): Command {
  return new Command('balance')
    .description(summaryOf('balance'))
    .option('-c, --config <file>', 'config file')
    .option('-m, --modem <name>', 'modem to check (repeatable; default: every modem with a balance check)', collect)
    .option('--code <code>', 'USSD code to dial instead of the configured one, e.g. *888#')
    .option('--reply <text>', 'menu answer to send after the code (repeatable, in order)', collect)
    .option('--json', 'print JSON: an object, or an array with several modems')
    .action(async (opts: BalanceOptions) => {
      const config = await loadConfig(configPath(opts.config));
      const targets = pickModems(config, opts);
      const results: BalanceResult[] = [];
      for (const { name, settings } of targets) {
        const ops = await open(config, name);
        try {
          const viaDaemon = (ops as ModemOps & DaemonBalance).balance;
          results.push(
            viaDaemon ? await viaDaemon.call(ops, opts.code, opts.reply) : await checkBalance(name, ops, settings),
          );
        } finally {
          await ops.close();
        }
      }
      if (opts.json) printJson(io, results.length === 1 ? results[0] : results);
      else for (const r of results) io.out(formatBalance(r));
      const failed = results.filter((r) => r.state === 'error');
      if (failed.length > 0) throw new CommandFailed(failed.map((r) => `${r.modem}: ${r.error}`).join('; '));
    });
}

function pickModems(config: Config, opts: BalanceOptions): Array<{ name: string; settings: BalanceCheckSettings }> {
  const override = (s: BalanceCheckSettings | undefined) => withOverrides(s, opts.code, opts.reply);
  if (opts.modem && opts.modem.length > 0) {
    return opts.modem.map((name) => {
      const m = config.modems.find((x) => x.name === name);
      if (!m)
        throw new UsageError(`no modem named ${JSON.stringify(name)} in the config`, {
          hint: `configured: ${config.modems.map((x) => x.name).join(', ')}`,
        });
      const settings = override(balanceSettingsFor(m));
      if (!settings)
        throw new UsageError(`modem ${name} has no balance check`, {
          hint: 'pass --code (e.g. --code "*888#"), or set "operator" or a "balance" section for it in the config',
        });
      return { name, settings };
    });
  }
  const out = config.modems.flatMap((m) => {
    const settings = override(balanceSettingsFor(m));
    return settings ? [{ name: m.name, settings }] : [];
  });
  if (out.length === 0)
    throw new UsageError('no modem has a balance check', {
      hint: 'set "operator" or a "balance" section for a modem in the config, or pass --modem NAME --code CODE',
    });
  return out;
}
