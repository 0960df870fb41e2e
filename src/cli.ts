/**
 * The command-line program, wired: createProgram() builds a fresh commander Command (tests run it with captured
 * output); main() runs it for bin/pulsa-bridge. Every command has --help; data commands have --json. What an error
 * prints and which exit code it gives (0 done, 1 failed, 2 usage error) is decided in one place, cli/lifecycle.ts.
 *
 * Each command loads what it needs: a command's module (src/cli/<module>.ts, exporting commands(io)) is imported only
 * when that command runs; the others appear in `--help` from COMMANDS below, without their modules. bin/pulsa-bridge
 * starts a one-shot command from its bundle (dist/cli/<command>.js: this file and that module in one file, see
 * packaging/bundle-cli.mjs), which hands its module in as `bundled`. test/cli/command-modules.test.ts checks both.
 */
import { Command, Help } from 'commander';
import { VERSION } from './version.js';
import { defaultIo, type Io } from './cli/io.js';
import { allCommands, runCli } from './cli/lifecycle.js';

export { allCommands } from './cli/lifecycle.js';
export type { Io } from './cli/io.js';

/** What every command module (src/cli/<module>.ts) exports: the commands it adds to the program. */
export interface CommandModule {
  commands(io: Io): Command[];
}

/** One entry of the top-level list: the module that builds its commands, and how `--help` shows each without loading it. */
interface Entry {
  /** src/cli/<module>.ts */
  module: string;
  /** Each command the module builds: [name, usage after the name, description], in the order `--help` lists them. */
  commands: Array<[name: string, usage: string, description: string]>;
}

export const COMMANDS: Entry[] = [
  { module: 'run', commands: [['run', '[options]', 'run the daemon: receive SMS on every configured modem, spool them, forward them to the webhook']] },
  { module: 'config-check', commands: [['config', '', 'configuration tools']] },
  { module: 'ports', commands: [['ports', '[options]', 'list serial ports with USB ids, the stable /dev/serial/by-id path, and which look like known modems']] },
  {
    module: 'modem',
    commands: [
      ['info', '[options]', 'everything the modem says about itself: config name, identity, SIM, signal, registration, operator, SMS storage, SMSC, profile'],
      ['sms', '', 'SMS on the SIM/modem storage (decoded, with indexes)'],
    ],
  },
  { module: 'at', commands: [['at', '[options] [command...]', 'send one AT line as typed and print every answer line (`AT+CSQ;+CREG?` shows both); with no command, an interactive AT terminal (URCs shown as they arrive; Ctrl-C or Ctrl-D exits)']] },
  { module: 'ussd', commands: [['ussd', '[options] <code>', 'dial a USSD code and print the replies, e.g. `pulsa-bridge ussd --modem telkomsel-1 "*888#"`; on a terminal, menus are answered interactively unless --reply is given']] },
  { module: 'queue', commands: [['queue', '', 'the spool: what was received, what waits for delivery, what failed']] },
  { module: 'status', commands: [['status', '[options]', 'daemon and modem states (with the last error and a hint), receive/forward counters, spool depth; exit 0 healthy, 1 unhealthy, 3 not running, 4 unknown']] },
  { module: 'simulate', commands: [['simulate', '[options]', "serve the virtual modem on a pseudo-terminal (needs socat): point a config's modems[].port at --link and run the real daemon without hardware; type `help` for the commands that inject SMS and faults"]] },
  { module: 'balance', commands: [['balance', '[options]', 'check the balance and active period of a SIM now (USSD), on one modem or on every modem with a balance check']] },
  { module: 'transfer', commands: [['test-transfer', '[options]', 'send credit from the SIM in one modem to a centre SIM and watch it arrive (with --order: through a reseller order)']] },
  {
    module: 'reseller',
    commands: [
      ['rates', '[options]', 'list the operators, live rates, limits and payout methods of the reseller API (also checks the API key)'],
      ['calculate', '[options]', 'estimate what a conversion pays out for an operator and a credit amount'],
    ],
  },
];

/**
 * A command module, from `bundled` (a command's bundle passes the one it holds) or imported. The specifier is a
 * variable so that a bundler leaves these imports alone; `../src/cli/` names the same directory from dist/src/cli.js
 * and from a bundle in dist/cli/ (and, under the test runner, src/cli/ from src/cli.ts).
 */
async function loadModule(name: string, bundled: Readonly<Record<string, CommandModule>>): Promise<CommandModule> {
  const specifier = `../src/cli/${name}.js`;
  return bundled[name] ?? ((await import(specifier)) as CommandModule);
}

/** The command word of argv (as process.argv: node, script, ...): the first word that is not an option; after `help`, the next. */
export function commandWord(argv: readonly string[]): string | undefined {
  const words = argv.slice(2).filter((a) => !a.startsWith('-'));
  return words[0] === 'help' ? words[1] : words[0];
}

/** Usage shown after a command's name in the top-level list, for commands whose module is not loaded. */
const usageOf = new WeakMap<Command, string>();

/**
 * The program. `argv` given: only the module of the command it names is loaded (none for --version, --help or an
 * unknown command); the other commands are listed by name. Without `argv`: every command module (tests).
 */
export async function createProgram(io: Io = defaultIo, argv?: readonly string[], bundled: Readonly<Record<string, CommandModule>> = {}): Promise<Command> {
  const program = new Command()
    .name('pulsa-bridge')
    .description('Receives operator SMS on GSM modems and forwards them, crash-safe, to the convert-pulsa webhook.\nDiagnostics: ports, info, at, ussd, sms. Spool: queue. Daemon: run.')
    .version(VERSION)
    .configureHelp({
      subcommandTerm: (cmd: Command): string => {
        const usage = usageOf.get(cmd);
        return usage === undefined ? new Help().subcommandTerm(cmd) : `${cmd.name()}${usage ? ` ${usage}` : ''}`;
      },
    });
  const word = argv === undefined ? undefined : commandWord(argv);
  for (const entry of COMMANDS) {
    if (argv === undefined || entry.commands.some(([name]) => name === word)) {
      for (const c of (await loadModule(entry.module, bundled)).commands(io)) program.addCommand(c);
    } else {
      for (const [name, usage, description] of entry.commands) {
        const listed = new Command(name).description(description);
        usageOf.set(listed, usage);
        program.addCommand(listed);
      }
    }
  }
  // addCommand() does not pass settings down: every command writes through io and shows the usage hint.
  for (const c of allCommands(program)) c.configureOutput({ writeOut: io.out, writeErr: io.err }).showHelpAfterError('(add --help for usage)');
  return program;
}

/** Runs the program on argv; a command's bundle (packaging/bundle-cli.mjs) passes the module it holds as `bundled`. */
export async function main(argv: string[], io: Io = defaultIo, bundled: Readonly<Record<string, CommandModule>> = {}): Promise<void> {
  await runCli(await createProgram(io, argv, bundled), argv, io);
}
