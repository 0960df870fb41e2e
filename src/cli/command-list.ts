/**
 * The top-level commands, each once: the module that builds it (src/cli/<module>.ts, loaded only when that command
 * runs) and its one-line description. `--help` lists them from here without loading a module; each module takes its
 * command's description from here (summaryOf()), so the list and the commands cannot disagree.
 */

export interface CommandEntry {
  /** src/cli/<module>.ts, exporting commands(io). */
  module: string;
  /** Each command the module builds, [name, description], in the order `--help` lists them. */
  commands: Array<[name: string, description: string]>;
}

export const COMMANDS: readonly CommandEntry[] = [
  {
    module: 'run',
    commands: [
      ['run', 'run the daemon: receive SMS on every configured modem, spool them, forward them to the webhook'],
    ],
  },
  { module: 'config-check', commands: [['config', 'configuration tools']] },
  {
    module: 'ports',
    commands: [
      ['ports', 'list serial ports with USB ids, the stable /dev/serial/by-id path, and which look like known modems'],
    ],
  },
  {
    module: 'modem',
    commands: [
      [
        'info',
        'everything the modem says about itself: config name, identity, SIM, signal, registration, operator, SMS storage, SMSC, profile',
      ],
      ['sms', 'SMS on the SIM/modem storage (decoded, with indexes)'],
    ],
  },
  {
    module: 'at',
    commands: [
      [
        'at',
        'send one AT line as typed and print every answer line (`AT+CSQ;+CREG?` shows both); with no command, an interactive AT terminal (URCs shown as they arrive; Ctrl-C or Ctrl-D exits)',
      ],
    ],
  },
  {
    module: 'ussd',
    commands: [
      [
        'ussd',
        'dial a USSD code and print the replies, e.g. `pulsa-bridge ussd --modem telkomsel-1 "*888#"`; on a terminal, menus are answered interactively unless --reply is given',
      ],
    ],
  },
  { module: 'queue', commands: [['queue', 'the spool: what was received, what waits for delivery, what failed']] },
  {
    module: 'status',
    commands: [
      [
        'status',
        'daemon and modem states (with the last error and a hint), receive/forward counters, spool depth; exit 0 healthy (or degraded), 1 unhealthy, 2 usage, 3 not running, 4 unknown, 6 config unreadable',
      ],
    ],
  },
  {
    module: 'simulate',
    commands: [
      [
        'simulate',
        "serve the virtual modem on a pseudo-terminal (needs socat): point a config's modems[].port at --link and run the real daemon without hardware; type `help` for the commands that inject SMS and faults",
      ],
    ],
  },
  {
    module: 'balance',
    commands: [
      [
        'balance',
        'check the balance and active period of a SIM now (USSD), on one modem or on every modem with a balance check',
      ],
    ],
  },
  {
    module: 'transfer',
    commands: [
      [
        'test-transfer',
        'send credit from the SIM in one modem to a centre SIM and watch it arrive (with --order: through a reseller order)',
      ],
    ],
  },
  {
    module: 'canary',
    commands: [
      ['canary', "the daemon's canaries (scheduled test transfers with a daily cap): ls, run now, pause, resume"],
    ],
  },
  {
    module: 'reseller',
    commands: [
      [
        'rates',
        'list the operators, live rates, limits and payout methods of the reseller API (also checks the API key)',
      ],
      ['calculate', 'estimate what a conversion pays out for an operator and a credit amount'],
    ],
  },
];

/** The description of a top-level command, as `--help` lists it. */
export function summaryOf(name: string): string {
  for (const entry of COMMANDS) for (const [n, description] of entry.commands) if (n === name) return description;
  throw new Error(`no top-level command named ${name} in src/cli/command-list.ts`);
}
