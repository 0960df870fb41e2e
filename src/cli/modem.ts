/**
 * The modem diagnostics `info` and `sms list|read|delete|send` (`at` and `ussd` live in at.ts and ussd.ts), written
 * on ModemOps (target.ts): through the running daemon when it holds the modem, else on the port opened for the one
 * command; the output (text, or JSON with --json) and exit codes are the same either way. An empty slot for
 * `sms read` or `sms delete` is an error (exit 1) saying so; input that cannot work (no port, an undialable number)
 * is a usage error, found before the port is opened.
 */
import { summaryOf } from './command-list.js';
import { Command } from 'commander';
import type { StoredSmsView } from '../ops/modem-ops.js';
import { BridgeError } from '../errors.js';
import type { StorageUsage } from '../modem/modem.js';
import type { SubmitPdu } from '../sms/submit.js';
import { printJson, type Io } from './io.js';
import { targetOptions, withModemOps, type TargetCliOptions } from './target.js';
import { UsageError, wholeNumber } from './usage.js';
import { safeJson, safeText } from '../terminal-text.js';

/** The commands this module adds to the program (cli.ts). */
export function commands(io: Io): Command[] {
  return modemCommands(io);
}

export function modemCommands(io: Io): Command[] {
  return [infoCommand(io), smsCommand(io)];
}

function infoCommand(io: Io): Command {
  return targetOptions(new Command('info'))
    .description(summaryOf('info'))
    .option('--json', 'print JSON')
    .action(async (opts: TargetCliOptions) => {
      await withModemOps(io, opts, async (ops) => {
        const info = await ops.info();
        if (opts.json) return printJson(io, info);
        io.out(safeText(formatInfo(info), { multiline: true })); // the modem's own words: escaped
      });
    });
}

const noSms = (i: number, what: string) =>
  new BridgeError('AT_ERROR', `no SMS at index ${i}${what}`, {
    hint: '`pulsa-bridge sms list` shows the stored messages and their indexes',
  });

function smsCommand(io: Io): Command {
  const sms = new Command('sms').description(summaryOf('sms'));
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
    .argument(
      '<index>',
      'storage index (as `sms list` shows it; some modems start at 0)',
      wholeNumber('a storage index (a whole number >= 0)', 0),
    )
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
    .description(
      'delete one SMS by index; through the running daemon it is spooled (or archived/quarantined) first, so nothing is lost; with the port opened directly it is deleted as it is; an empty slot is an error',
    )
    .argument('<index>', 'storage index', wholeNumber('a storage index (a whole number >= 0)', 0))
    .option('--json', 'print JSON')
    .action(async (i: number, opts: TargetCliOptions) => {
      await withModemOps(io, opts, async (ops) => {
        const r = await ops.smsDelete(i);
        if (!r.deleted) throw noSms(i, ' (the slot was already empty: nothing deleted)');
        if (opts.json) return printJson(io, { deleted: i, ...(r.summary !== undefined ? { summary: r.summary } : {}) });
        io.out(`${r.summary ?? `deleted index ${i}`}\n`);
      });
    });

  targetOptions(sms.command('send'))
    .description(
      'send an SMS (diagnostics and test transfers, e.g. `--to 151 "TRANSFERPULSA 0812... 5000"`); long texts go as concatenated parts',
    )
    .requiredOption('--to <number>', 'destination: short code (151, 168) or number (+62..., 08...)')
    .argument('<text...>', 'message text (quote it in the shell)')
    .option('--json', 'print JSON')
    .action(async (words: string[], opts: TargetCliOptions & { to: string }) => {
      const text = words.join(' ');
      await encodeOrRefuse(opts.to, text); // a usage error before anything is opened
      await withModemOps(io, opts, async (ops) => {
        const r = await ops.smsSend(opts.to, text);
        if (opts.json) return printJson(io, { to: opts.to, parts: r.parts, references: r.references });
        io.out(`sent to ${opts.to} in ${r.parts} part(s); message reference(s) ${r.references.join(', ')}\n`);
      });
    });
  return sms;
}

/**
 * The PDUs for `sms send`; a destination or text that cannot be sent is a usage error (exit 2). The SMS encoder is
 * loaded here, by `sms send` alone: `info` and the other commands through the daemon do without it.
 */
async function encodeOrRefuse(to: string, text: string): Promise<SubmitPdu[]> {
  const { encodeForSend } = await import('../ops/actions.js');
  try {
    return encodeForSend(to, text);
  } catch (err) {
    if (err instanceof BridgeError && err.code === 'PDU_INVALID') throw new UsageError(err.message);
    throw err;
  }
}

/** One stored SMS as the operator reads it: what the sender and the modem wrote has its control characters escaped. */
function formatStored(d: StoredSmsView): string {
  const t = (v: unknown) => safeText(v);
  if (d.error) return `#${t(d.index)} [${t(d.status)}] undecodable: ${t(d.error)}\n  pdu ${t(d.pdu)}\n\n`;
  const part = d.part ? ` (part ${t(d.part)})` : '';
  const not = d.notForwarded ? ` (not forwarded: ${t(d.notForwarded)})` : '';
  const text = safeText(d.text ?? '', { multiline: true }).replace(/\n/g, '\n  ');
  return `#${t(d.index)} [${t(d.status)}] from ${t(d.sender)} at ${t(d.time)}${part}${not}\n  ${text}\n\n`;
}

/** AT+CPMS memories in order: mem1 (read, delete), mem2 (write, send), mem3 (where new SMS are stored). */
const CPMS_ROLE = ['read', 'write', 'receive'];

function formatInfo(info: Record<string, unknown>, indent = ''): string {
  let out = '';
  for (const [k, v] of Object.entries(info)) {
    if (v === undefined) continue;
    if (k === 'storage' && Array.isArray(v)) {
      const slots = (v as StorageUsage[]).map(
        (m, i) => `${m.memory} ${m.used}/${m.total} used${CPMS_ROLE[i] ? ` (${CPMS_ROLE[i]})` : ''}`,
      );
      out += `${indent}${k}: ${slots.join(', ') || '?'}\n`;
    } else if (v && typeof v === 'object' && !Array.isArray(v))
      out += `${indent}${k}:\n${formatInfo(v as Record<string, unknown>, indent + '  ')}`;
    else out += `${indent}${k}: ${Array.isArray(v) ? JSON.stringify(v) : String(v)}\n`;
  }
  return out;
}
