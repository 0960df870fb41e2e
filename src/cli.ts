/**
 * The command-line program, wired: createProgram() builds a fresh commander Command (tests run it with captured
 * output); main() runs it for bin/pulsa-bridge. Every command has --help; data commands have --json. What an error
 * prints and which exit code it gives (0 done, 1 failed, 2 usage error) is decided in one place, cli/lifecycle.ts.
 *
 * Each command loads what it needs: a command's module (src/cli/<module>.ts, exporting commands(io)) is imported only
 * when that command runs; the others appear in `--help` from cli/command-list.ts, without their modules (checked by
 * test/cli/command-modules.test.ts).
 */
import { Command } from 'commander';
import { VERSION } from './version.js';
import { defaultIo, type Io } from './cli/io.js';
import { allCommands, runCli } from './cli/lifecycle.js';
import { COMMANDS } from './cli/command-list.js';

export { allCommands } from './cli/lifecycle.js';
export type { Io } from './cli/io.js';
export { COMMANDS } from './cli/command-list.js';

/** What every command module (src/cli/<module>.ts) exports: the commands it adds to the program. */
export interface CommandModule {
  commands(io: Io): Command[];
}

/** A command module, imported when its command runs. */
async function loadModule(name: string): Promise<CommandModule> {
  const specifier = `./cli/${name}.js`;
  return (await import(specifier)) as CommandModule;
}

/** The command word of argv (as process.argv: node, script, ...): the first word that is not an option; after `help`, the next. */
export function commandWord(argv: readonly string[]): string | undefined {
  const words = argv.slice(2).filter((a) => !a.startsWith('-'));
  return words[0] === 'help' ? words[1] : words[0];
}

/**
 * The program. `argv` given: only the module of the command it names is loaded (none for --version, --help or an
 * unknown command); the other commands are listed by name. Without `argv`: every command module (tests).
 */
export async function createProgram(io: Io = defaultIo, argv?: readonly string[]): Promise<Command> {
  const program = new Command()
    .name('pulsa-bridge')
    .description(
      'Receives operator SMS on GSM modems and forwards them, crash-safe, to the convert-pulsa webhook.\nDiagnostics: ports, info, at, ussd, sms. Spool: queue. Daemon: run.',
    )
    .version(VERSION)
    // The list names each command and its line; its options and arguments are in its own --help.
    .configureHelp({ subcommandTerm: (cmd: Command): string => cmd.name() });
  const word = argv === undefined ? undefined : commandWord(argv);
  for (const entry of COMMANDS) {
    if (argv === undefined || entry.commands.some(([name]) => name === word)) {
      for (const c of (await loadModule(entry.module)).commands(io)) program.addCommand(c);
    } else {
      for (const [name, description] of entry.commands) program.addCommand(new Command(name).description(description));
    }
  }
  // addCommand() does not pass settings down: every command writes through io and shows the usage hint.
  for (const c of allCommands(program))
    c.configureOutput({ writeOut: io.out, writeErr: io.err }).showHelpAfterError('(add --help for usage)');
  return program;
}

/** Runs the program on argv (bin/pulsa-bridge). */
export async function main(argv: string[], io: Io = defaultIo): Promise<void> {
  await runCli(await createProgram(io, argv), argv, io);
}
