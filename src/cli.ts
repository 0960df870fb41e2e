/**
 * The command-line program, wired: createProgram() builds a fresh commander Command (tests run it with captured
 * output); main() runs it for bin/pulsa-bridge. Every command has --help; data commands have --json. What an error
 * prints and which exit code it gives (0 done, 1 failed, 2 usage error) is decided in one place, cli/lifecycle.ts.
 *
 * Each command loads what it needs: a command's module (and what it imports: the daemon, the serial addon, the spool)
 * is imported only when that command runs. The others appear in `--help` from COMMANDS below (name, usage, one line),
 * without their modules; `--version`, `--help` and a usage error of the top level load no command module.
 * test/cli/commands-table.test.ts checks COMMANDS against the commands themselves.
 */
import { Command, Help } from 'commander';
import { VERSION } from './version.js';
import { defaultIo, type Io } from './cli/io.js';
import { allCommands, runCli } from './cli/lifecycle.js';

export { allCommands } from './cli/lifecycle.js';
export type { Io } from './cli/io.js';

/** One entry of the top-level list: the commands one module builds, and how `--help` shows each without loading it. */
interface Entry {
  /** Each command the module builds: [name, usage after the name, description], in the order `--help` lists them. */
  commands: Array<[name: string, usage: string, description: string]>;
  load: (io: Io) => Promise<Command[]>;
}

/** `at` and `ussd` reach the modem through the running daemon when it holds it, else on the port (target.ts). */
const daemonOrPort = async () => {
  const target = await import('./cli/target.js');
  return { options: target.targetOptions, withOps: target.withModemOps };
};

export const COMMANDS: Entry[] = [
  {
    commands: [['run', '[options]', 'run the daemon: receive SMS on every configured modem, spool them, forward them to the webhook']],
    load: async () => [(await import('./cli/run.js')).runCommand()],
  },
  {
    commands: [['config', '', 'configuration tools']],
    load: async (io) => [(await import('./cli/config-check.js')).configCommand(io)],
  },
  {
    commands: [['ports', '[options]', 'list serial ports with USB ids, the stable /dev/serial/by-id path, and which look like known modems']],
    load: async (io) => [(await import('./cli/ports.js')).portsCommand(io)],
  },
  {
    commands: [
      ['info', '[options]', 'everything the modem says about itself: config name, identity, SIM, signal, registration, operator, SMS storage, SMSC, profile'],
      ['sms', '', 'SMS on the SIM/modem storage (decoded, with indexes)'],
    ],
    load: async (io) => (await import('./cli/modem.js')).modemCommands(io),
  },
  {
    commands: [['at', '[options] [command...]', 'send one AT line as typed and print every answer line (`AT+CSQ;+CREG?` shows both); with no command, an interactive AT terminal (URCs shown as they arrive; Ctrl-C or Ctrl-D exits)']],
    load: async (io) => [(await import('./cli/at.js')).atCommand(io, await daemonOrPort())],
  },
  {
    commands: [['ussd', '[options] <code>', 'dial a USSD code and print the replies, e.g. `pulsa-bridge ussd --modem telkomsel-1 "*888#"`; on a terminal, menus are answered interactively unless --reply is given']],
    load: async (io) => [(await import('./cli/ussd.js')).ussdCommand(io, await daemonOrPort())],
  },
  {
    commands: [['queue', '', 'the spool: what was received, what waits for delivery, what failed']],
    load: async (io) => [(await import('./cli/queue.js')).queueCommands(io)],
  },
  {
    commands: [['status', '[options]', 'daemon and modem states (with the last error and a hint), receive/forward counters, spool depth; exit 0 healthy, 1 unhealthy, 3 not running, 4 unknown']],
    load: async (io) => [(await import('./cli/status.js')).statusCommand(io)],
  },
  {
    commands: [['simulate', '[options]', "serve the virtual modem on a pseudo-terminal (needs socat): point a config's modems[].port at --link and run the real daemon without hardware; type `help` for the commands that inject SMS and faults"]],
    load: async (io) => [(await import('./cli/simulate.js')).simulateCommand(io)],
  },
  {
    commands: [['balance', '[options]', 'check the balance and active period of a SIM now (USSD), on one modem or on every modem with a balance check']],
    load: async (io) => [(await import('./cli/balance.js')).balanceCommand(io, (await import('./cli/target.js')).configOpener(io))],
  },
  {
    commands: [['test-transfer', '[options]', 'send credit from the SIM in one modem to a centre SIM and watch it arrive (with --order: through a reseller order)']],
    load: async (io) => [(await import('./cli/transfer.js')).transferCommand(io, (await import('./cli/target.js')).configOpener(io))],
  },
  {
    commands: [
      ['rates', '[options]', 'list the operators, live rates, limits and payout methods of the reseller API (also checks the API key)'],
      ['calculate', '[options]', 'estimate what a conversion pays out for an operator and a credit amount'],
    ],
    load: async (io) => (await import('./cli/reseller.js')).resellerCommands(io),
  },
];

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
export async function createProgram(io: Io = defaultIo, argv?: readonly string[]): Promise<Command> {
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
      for (const c of await entry.load(io)) program.addCommand(c);
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

export async function main(argv: string[], io: Io = defaultIo): Promise<void> {
  await runCli(await createProgram(io, argv), argv, io);
}
