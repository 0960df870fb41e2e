/**
 * `pulsa-bridge at`: the operator's raw AT line, through the running daemon or on the port (ModemOps). One command
 * (`at "AT+CSQ;+CREG?"`): every response line and the final result on stdout, URCs that arrived meanwhile after them
 * as `[urc] ...`; a modem error prints the modem's words, the explanation on stderr, exit 1. No command: the
 * interactive terminal (terminal.ts, loaded only then). A line that is not an AT command is a usage error (exit 2)
 * with a suggestion; a line the daemon refuses without --force says why.
 */
import { summaryOf } from './command-list.js';
import { Command } from 'commander';
import { checkAtLine } from '../ops/at-guard.js';
import type { ModemOps } from '../ops/modem-ops.js';
import { BridgeError } from '../errors.js';
import { printJson, type Io } from './io.js';
import { CommandFailed } from './lifecycle.js';
import type { OpsTarget, TargetCliOptionsBase } from './ops-target.js';
import type { TerminalOps } from './terminal.js';
import { targetOptions, withModemOps } from './target.js';
import { UsageError } from './usage.js';
import { safeJson, safeText } from '../terminal-text.js';

export type AtOps = Pick<ModemOps, 'at'> & TerminalOps;

/** The commands this module adds to the program (cli.ts): `at` on the running daemon's modem, else on the port. */
export function commands(io: Io): Command[] {
  return [atCommand(io, { options: targetOptions, withOps: withModemOps })];
}

export function atCommand(io: Io, target: OpsTarget<AtOps>): Command {
  return target
    .options(new Command('at'))
    .description(summaryOf('at'))
    .argument('[command...]', 'AT command line, e.g. AT+CSQ (quote it in the shell)')
    .option(
      '--force',
      'through the daemon: allow a command that changes settings the daemon relies on (it re-checks them afterwards)',
    )
    .option('--json', 'print JSON (one-shot mode)')
    .action(async (words: string[], opts: TargetCliOptionsBase & { force?: boolean }) => {
      const command = words.join(' ');
      if (words.length > 0 && command.trim() === '') {
        throw new UsageError('empty AT command', {
          hint: 'give a command such as AT+CSQ (quoted in the shell), or none for the interactive terminal',
        });
      }
      const verdict = words.length > 0 ? checkAtLine(command) : undefined;
      if (verdict?.notAt) throw new UsageError(`not an AT command: ${verdict.notAt}`);
      await target.withOps(io, opts, async (ops) => {
        if (words.length === 0)
          return (await import('./terminal.js')).interactiveAt(ops, io, { timeoutMs: opts.timeout });
        await oneShot(io, ops, command.trim(), opts);
      });
    });
}

async function oneShot(
  io: Io,
  ops: AtOps,
  command: string,
  opts: TargetCliOptionsBase & { force?: boolean },
): Promise<void> {
  let r;
  try {
    r = await ops.at(command, { timeoutMs: opts.timeout, ...(opts.force ? { force: true } : {}) });
  } catch (err) {
    if (opts.json && err instanceof BridgeError) {
      printJson(io, { command, error: err.message, code: err.code });
      throw new CommandFailed(err.message);
    }
    throw err;
  }
  if (opts.json) {
    const base = { command: r.command, lines: r.lines, final: r.final, ...(r.urcs.length > 0 ? { urcs: r.urcs } : {}) };
    if (r.ok) return printJson(io, base);
    const message = r.error ?? `${command} failed: ${r.final}`;
    printJson(io, { ...base, error: message, code: 'AT_ERROR' });
    throw new CommandFailed(message);
  }
  // The modem's lines: one line each, control characters escaped (terminal-text.ts).
  io.out([...r.lines, r.final].map((l) => safeText(l)).join('\n') + '\n');
  for (const u of r.urcs) io.out(`[urc] ${safeText(u)}\n`);
  if (!r.ok) {
    const message = r.error ?? `${command} failed: ${r.final}`;
    io.err(`error: ${safeText(message)}\n`);
    throw new CommandFailed(message);
  }
}
