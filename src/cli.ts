/**
 * The command-line program, wired: createProgram() builds a fresh commander Command from the command files under
 * cli/ (tests call it with exitOverride and captured output); main() runs it for bin/pulsa-bridge. Every command has
 * --help; data commands have --json. What an error prints and which exit code it gives (0 done, 1 failed, 2 usage
 * error) is decided in one place, cli/lifecycle.ts.
 *
 * `run` (the daemon, what systemd starts) loads only cli/run.js: the other commands (diagnostics, probe, spool tools,
 * the simulator's pty host) are imported on first need, so the daemon's process never holds them (bench/README.md).
 * createProgram() stays synchronous: in any process that is not `pulsa-bridge run` they are imported when this module
 * loads.
 */
import { Command } from 'commander';
import { VERSION } from './daemon.js';
import { defaultIo, type Io } from './cli/io.js';
import { allCommands, runCli } from './cli/lifecycle.js';
import { runCommand } from './cli/run.js';

export { allCommands } from './cli/lifecycle.js';
export type { Io } from './cli/io.js';

/** Builds every command but `run`, in the order `--help` lists them. */
type OtherCommands = (io: Io) => Command[];

async function loadOtherCommands(): Promise<OtherCommands> {
  const [config, ports, modem, at, ussd, target, queue, status, simulate, balance, transfer, reseller] = await Promise.all([
    import('./cli/config-check.js'),
    import('./cli/ports.js'),
    import('./cli/modem.js'),
    import('./cli/at.js'),
    import('./cli/ussd.js'),
    import('./cli/target.js'),
    import('./cli/queue.js'),
    import('./cli/status.js'),
    import('./cli/simulate.js'),
    import('./cli/balance.js'),
    import('./cli/transfer.js'),
    import('./cli/reseller.js'),
  ]);
  // `at` and `ussd` reach the modem through the running daemon when it holds it, else on the port (target.ts).
  const daemonOrPort = { options: target.targetOptions, withOps: target.withModemOps };
  return (io) => [
    config.configCommand(io),
    ports.portsCommand(io),
    ...modem.modemCommands(io),
    at.atCommand(io, daemonOrPort),
    ussd.ussdCommand(io, daemonOrPort),
    queue.queueCommands(io),
    status.statusCommand(io),
    simulate.simulateCommand(io),
    balance.balanceCommand(io, target.configOpener(io)),
    transfer.transferCommand(io, target.configOpener(io)),
    ...reseller.resellerCommands(io),
  ];
}

/** `pulsa-bridge run ...` (argv as process.argv: node, script, command). */
const isRun = (argv: readonly string[]) => argv[2] === 'run';

let otherCommands: OtherCommands | undefined = isRun(process.argv) ? undefined : await loadOtherCommands();

/** The full program, or for a `run` process whose other commands were never loaded, `run` alone. */
export function createProgram(io: Io = defaultIo): Command {
  const program = new Command()
    .name('pulsa-bridge')
    .description('Receives operator SMS on GSM modems and forwards them, crash-safe, to the convert-pulsa webhook.\nDiagnostics: ports, info, at, ussd, sms. Spool: queue. Daemon: run.')
    .version(VERSION);
  for (const c of [runCommand(), ...(otherCommands?.(io) ?? [])]) {
    program.addCommand(c);
  }
  // addCommand() does not pass settings down: every command writes through io and shows the usage hint.
  for (const c of allCommands(program)) c.configureOutput({ writeOut: io.out, writeErr: io.err }).showHelpAfterError('(add --help for usage)');
  return program;
}

export async function main(argv: string[], io: Io = defaultIo): Promise<void> {
  if (!otherCommands && !isRun(argv)) otherCommands = await loadOtherCommands();
  await runCli(createProgram(io), argv, io);
}
