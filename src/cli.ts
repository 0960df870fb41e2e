/**
 * The command-line program, wired: createProgram() builds a fresh commander Command from the command files under
 * cli/ (tests call it with exitOverride and captured output); main() runs it for bin/pulsa-bridge. Every command has
 * --help; data commands have --json. What an error prints and which exit code it gives (0 done, 1 failed, 2 usage
 * error) is decided in one place, cli/lifecycle.ts.
 */
import { Command } from 'commander';
import { VERSION } from './daemon.js';
import { configCommand } from './cli/config-check.js';
import { defaultIo, type Io } from './cli/io.js';
import { allCommands, runCli } from './cli/lifecycle.js';
import { atCommand } from './cli/at.js';
import { modemCommands } from './cli/modem.js';
import { portsCommand } from './cli/ports.js';
import { queueCommands } from './cli/queue.js';
import { balanceCommand } from './cli/balance.js';
import { resellerCommands } from './cli/reseller.js';
import { transferCommand } from './cli/transfer.js';
import { runCommand } from './cli/run.js';
import { simulateCommand } from './cli/simulate.js';
import { statusCommand } from './cli/status.js';
import { configOpener, targetOptions, withModemOps } from './cli/target.js';
import { ussdCommand } from './cli/ussd.js';

export { allCommands } from './cli/lifecycle.js';
export type { Io } from './cli/io.js';

/** `at` and `ussd` reach the modem through the running daemon when it holds it, else on the port (target.ts). */
const daemonOrPort = { options: targetOptions, withOps: withModemOps };

export function createProgram(io: Io = defaultIo): Command {
  const program = new Command()
    .name('pulsa-bridge')
    .description('Receives operator SMS on GSM modems and forwards them, crash-safe, to the convert-pulsa webhook.\nDiagnostics: ports, info, at, ussd, sms. Spool: queue. Daemon: run.')
    .version(VERSION);
  for (const c of [runCommand(), configCommand(io), portsCommand(io), ...modemCommands(io), atCommand(io, daemonOrPort), ussdCommand(io, daemonOrPort), queueCommands(io), statusCommand(io), simulateCommand(io), balanceCommand(io, configOpener(io)), transferCommand(io, configOpener(io)), ...resellerCommands(io)]) {
    program.addCommand(c);
  }
  // addCommand() does not pass settings down: every command writes through io and shows the usage hint.
  for (const c of allCommands(program)) c.configureOutput({ writeOut: io.out, writeErr: io.err }).showHelpAfterError('(add --help for usage)');
  return program;
}

export async function main(argv: string[], io: Io = defaultIo): Promise<void> {
  await runCli(createProgram(io), argv, io);
}
