/**
 * The modem diagnostics: `info`, `at`, `ussd`, `sms list|read|delete|send`. `info` and `sms ...` are written on
 * ModemOps (target.ts): through the running daemon when it holds the modem, else on the port opened for the one
 * command; the output (text, or JSON with --json) and exit codes are the same either way. `at` and `ussd` still open
 * the port themselves (session.ts). A modem error the operator should see in the modem's own words (`at`, a USSD
 * code the network refuses) is printed, then the command fails with exit 1 (CommandFailed); an empty slot for
 * `sms read` or `sms delete` is an error (exit 1) saying so; input that cannot work (no port, an empty AT command,
 * an undialable number) is a usage error, found before the port is opened.
 */
import { PROFILE_SETTINGS } from '../modem/profiles/index.js';
import { ussdStatusLabel } from '../modem/ussd-session.js';
import { Command, Option } from 'commander';
import { encodeForSend } from '../control/actions.js';
import type { StoredSmsView } from '../control/ops.js';
import { AtCommandError, BridgeError } from '../errors.js';
import { createLogger, silentLogger, type Logger } from '../log.js';
import type { StorageUsage } from '../modem/modem.js';
import type { SubmitPdu } from '../sms/submit.js';
import { printJson, type Io } from './io.js';
import { CommandFailed } from './lifecycle.js';
import { openSession, type Session } from './session.js';
import { targetOptions, withModemOps, type TargetCliOptions } from './target.js';
import { interactiveAt } from './terminal.js';
import { UsageError, wholeNumber } from './usage.js';

interface ModemCliOptions {
  port?: string;
  baud: number;
  simulate?: boolean;
  profile?: string;
  pin?: string;
  timeout: number;
  json?: boolean;
  verbose?: boolean;
}

function modemOptions(cmd: Command): Command {
  return cmd
    .option('-p, --port <path>', 'serial port, e.g. /dev/serial/by-id/usb-...-if02-port0 (see `pulsa-bridge ports`)')
    .option('-b, --baud <rate>', 'baud rate', wholeNumber('a baud rate such as 115200 or 9600', 1), 115200)
    .option('--simulate', 'use the built-in virtual modem instead of hardware')
    .addOption(new Option('--profile <id>', 'modem profile (default: detected)').choices(PROFILE_SETTINGS))
    .option('--pin <pin>', 'SIM PIN, if the SIM asks for one (or set PULSA_BRIDGE_PIN)')
    .option('--timeout <ms>', 'per-command timeout in ms', wholeNumber('a timeout in ms (a whole number >= 1)', 1), 10_000)
    .option('-v, --verbose', 'log the AT traffic to stderr');
}

function loggerFor(opts: { verbose?: boolean }): Logger {
  return opts.verbose ? createLogger({ level: 'debug', pretty: false, destination: process.stderr }) : silentLogger();
}

async function withSession<T>(io: Io, opts: ModemCliOptions, fn: (s: Session) => Promise<T>): Promise<T> {
  const session = await openSession({
    ...(opts.port ? { port: opts.port } : {}),
    baud: opts.baud,
    simulate: opts.simulate === true,
    ...(opts.profile ? { profile: opts.profile } : {}),
    ...((opts.pin ?? process.env.PULSA_BRIDGE_PIN) ? { pin: opts.pin ?? process.env.PULSA_BRIDGE_PIN! } : {}),
    timeoutMs: opts.timeout,
    logger: loggerFor(opts),
    ...(io.virtualModem ? { virtualModem: io.virtualModem } : {}),
  });
  try {
    return await fn(session);
  } finally {
    await session.close();
  }
}

export function modemCommands(io: Io): Command[] {
  return [infoCommand(io), atCommand(io), ussdCommand(io), smsCommand(io)];
}

function infoCommand(io: Io): Command {
  return targetOptions(new Command('info'))
    .description('everything the modem says about itself: config name, identity, SIM, signal, registration, operator, SMS storage, SMSC, profile')
    .option('--json', 'print JSON')
    .action(async (opts: TargetCliOptions) => {
      await withModemOps(io, opts, async (ops) => {
        const info = await ops.info();
        if (opts.json) return printJson(io, info);
        io.out(formatInfo(info));
      });
    });
}

function atCommand(io: Io): Command {
  return modemOptions(new Command('at'))
    .description('send one AT command and print the answer; with no command, an interactive AT terminal (URCs shown as they arrive; Ctrl-C or Ctrl-D exits)')
    .argument('[command...]', 'AT command, e.g. AT+CSQ (quote it in the shell)')
    .option('--json', 'print JSON (one-shot mode)')
    .action(async (words: string[], opts: ModemCliOptions) => {
      const command = words.join(' ');
      if (words.length > 0 && command.trim() === '') {
        throw new UsageError('empty AT command', { hint: 'give a command such as AT+CSQ (quoted in the shell), or none for the interactive terminal' });
      }
      await withSession(io, opts, async (s) => {
        if (words.length === 0) return interactiveAt(s, io);
        try {
          const r = await s.channel.run(command);
          if (opts.json) return printJson(io, r);
          io.out([...r.lines, r.final].join('\n') + '\n');
        } catch (err) {
          // The modem answered with an error: show its words like a terminal would, explain on stderr, exit 1.
          if (err instanceof AtCommandError && err.final !== undefined) {
            if (opts.json) printJson(io, { command, lines: err.lines, final: err.final, error: err.message, code: err.code });
            else {
              io.out([...err.lines, err.final].join('\n') + '\n');
              io.err(`error: ${err.message}\n`);
            }
            throw new CommandFailed(err.message);
          }
          if (opts.json && err instanceof BridgeError) {
            printJson(io, { command, error: err.message, code: err.code });
            throw new CommandFailed(err.message);
          }
          throw err;
        }
      });
    });
}

function ussdCommand(io: Io): Command {
  return modemOptions(new Command('ussd'))
    .description('dial a USSD code and print the reply, e.g. `pulsa-bridge ussd --port P "*888#"`; answer menus with --reply')
    .argument('<code>', 'USSD code, e.g. *888#')
    .option('-r, --reply <text...>', 'answers to send in turn while the network asks for more input (status 1)')
    .option('--cancel', 'cancel the session after the last reply')
    .option('--json', 'print JSON')
    .action(async (code: string, opts: ModemCliOptions & { reply?: string[]; cancel?: boolean }) => {
      await withSession(io, opts, async (s) => {
        await s.modem.init();
        const replies = [] as unknown[];
        let r = await s.modem.ussd(code, { timeoutMs: opts.timeout });
        replies.push(r);
        for (const answer of opts.reply ?? []) {
          if (r.status !== 1) break;
          r = await s.modem.ussdReply(answer);
          replies.push(r);
        }
        if (r.status === 1 && opts.cancel) await s.modem.ussdCancel();
        if (opts.json) printJson(io, replies);
        else for (const x of replies as Array<{ status: number; text: string }>) io.out(`[status ${x.status}: ${ussdStatusLabel(x.status)}]\n${x.text}\n`);
        if (r.status === 4 && !opts.json) io.err(`error: the network does not support ${code} on this SIM\nhint: check the code with the operator; some modems need the GSM charset (--profile) for USSD\n`);
        // The network refusing the code (4 not supported, 5 timed out) is a failed diagnostic: exit 1.
        if (r.status === 4 || r.status === 5) throw new CommandFailed(`USSD status ${r.status}`);
      });
    });
}

const noSms = (i: number, what: string) =>
  new BridgeError('AT_ERROR', `no SMS at index ${i}${what}`, { hint: '`pulsa-bridge sms list` shows the stored messages and their indexes' });

function smsCommand(io: Io): Command {
  const sms = new Command('sms').description('SMS on the SIM/modem storage (decoded, with indexes)');
  targetOptions(sms.command('list'))
    .description('list every SMS stored on the modem, decoded')
    .option('--json', 'print JSON')
    .action(async (opts: TargetCliOptions) => {
      await withModemOps(io, opts, async (ops) => {
        const decoded = await ops.smsList('all');
        if (opts.json) return printJson(io, decoded);
        if (decoded.length === 0) return io.out('no SMS on the modem\n');
        for (const d of decoded) io.out(formatStored(d));
      });
    });
  targetOptions(sms.command('read'))
    .description('read one SMS by its storage index')
    .argument('<index>', 'storage index (as `sms list` shows it; some modems start at 0)', wholeNumber('a storage index (a whole number >= 0)', 0))
    .option('--json', 'print JSON')
    .action(async (i: number, opts: TargetCliOptions) => {
      await withModemOps(io, opts, async (ops) => {
        const d = await ops.smsRead(i);
        if (!d) throw noSms(i, '');
        if (opts.json) return printJson(io, d);
        io.out(formatStored(d));
      });
    });
  targetOptions(sms.command('delete'))
    .description('delete one SMS by index (the daemon deletes only after spooling; use this for clean-up); an empty slot is an error')
    .argument('<index>', 'storage index', wholeNumber('a storage index (a whole number >= 0)', 0))
    .option('--json', 'print JSON')
    .action(async (i: number, opts: TargetCliOptions) => {
      await withModemOps(io, opts, async (ops) => {
        const r = await ops.smsDelete(i);
        if (!r.deleted) throw noSms(i, ' (the slot was already empty: nothing deleted)');
        if (opts.json) return printJson(io, { deleted: i });
        io.out(`deleted index ${i}\n`);
      });
    });

  targetOptions(sms.command('send'))
    .description('send an SMS (diagnostics and test transfers, e.g. `--to 151 "TRANSFERPULSA 0812... 5000"`); long texts go as concatenated parts')
    .requiredOption('--to <number>', 'destination: short code (151, 168) or number (+62..., 08...)')
    .argument('<text...>', 'message text (quote it in the shell)')
    .option('--json', 'print JSON')
    .action(async (words: string[], opts: TargetCliOptions & { to: string }) => {
      const text = words.join(' ');
      encodeOrRefuse(opts.to, text); // a usage error before anything is opened
      await withModemOps(io, opts, async (ops) => {
        const r = await ops.smsSend(opts.to, text);
        if (opts.json) return printJson(io, { to: opts.to, parts: r.parts, references: r.references });
        io.out(`sent to ${opts.to} in ${r.parts} part(s); message reference(s) ${r.references.join(', ')}\n`);
      });
    });
  return sms;
}

/** The PDUs for `sms send`; a destination or text that cannot be sent is a usage error (exit 2). */
function encodeOrRefuse(to: string, text: string): SubmitPdu[] {
  try {
    return encodeForSend(to, text);
  } catch (err) {
    if (err instanceof BridgeError && err.code === 'PDU_INVALID') throw new UsageError(err.message);
    throw err;
  }
}

function formatStored(d: StoredSmsView): string {
  if (d.error) return `#${d.index} [${d.status}] undecodable: ${d.error}\n  pdu ${d.pdu}\n\n`;
  return `#${d.index} [${d.status}] from ${d.sender} at ${d.time}${d.part ? ` (part ${d.part})` : ''}\n  ${d.text?.replace(/\n/g, '\n  ')}\n\n`;
}

/** AT+CPMS memories in order: mem1 (read, delete), mem2 (write, send), mem3 (where new SMS are stored). */
const CPMS_ROLE = ['read', 'write', 'receive'];

function formatInfo(info: Record<string, unknown>, indent = ''): string {
  let out = '';
  for (const [k, v] of Object.entries(info)) {
    if (v === undefined) continue;
    if (k === 'storage' && Array.isArray(v)) {
      const slots = (v as StorageUsage[]).map((m, i) => `${m.memory} ${m.used}/${m.total} used${CPMS_ROLE[i] ? ` (${CPMS_ROLE[i]})` : ''}`);
      out += `${indent}${k}: ${slots.join(', ') || '?'}\n`;
    } else if (v && typeof v === 'object' && !Array.isArray(v)) out += `${indent}${k}:\n${formatInfo(v as Record<string, unknown>, indent + '  ')}`;
    else out += `${indent}${k}: ${Array.isArray(v) ? JSON.stringify(v) : String(v)}\n`;
  }
  return out;
}
