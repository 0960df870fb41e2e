/**
 * The command-line program. createProgram() builds a fresh commander Command (tests call it with exitOverride and
 * captured output); main() runs it for bin/pulsa-bridge. Every command has --help; data commands have --json.
 * Errors an operator meets are printed as one line (`error: ...`) plus a `hint: ...` line, with exit code 1;
 * usage errors exit 2.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { randomInt } from 'node:crypto';
import { createInterface } from 'node:readline';
import { encodeSubmit } from './sms/submit.js';
import { loadConfig, maskSecrets, type Config } from './config.js';
import { Daemon, VERSION } from './daemon.js';
import { AtCommandError, BridgeError, ConfigError, errorMessage } from './errors.js';
import { createLogger, silentLogger, type Logger } from './log.js';
import { openSession, type Session } from './cli/session.js';
import { explainFinal } from './at/results.js';
import type { StorageUsage } from './modem/modem.js';
import { PROFILE_SETTINGS, USB_FINGERPRINTS } from './modem/profiles/index.js';
import { ussdStatusLabel } from './modem/ussd-session.js';
import { listPorts } from './serial/ports.js';
import { probePorts } from './modem/probe.js';
import { atVerdict, describeModem, isProbeCandidate, recommendAtPorts, type ProbedPort } from './cli/ports-format.js';
import type { VirtualModem } from './sim/virtual-modem.js';
import { decodeDeliver } from './sms/pdu.js';
import type { AnyRecord, SmsRecord, SpoolArea } from './spool/types.js';
import { queueCommands, spoolFrom } from './cli/queue.js';
import { statusCommand } from './cli/status.js';
import { simulateCommand } from './cli/simulate.js';
import { table } from './cli/format.js';

export interface CliIo {
  out: (text: string) => void;
  err: (text: string) => void;
  /** Input for the interactive AT terminal (defaults to process.stdin). */
  input?: NodeJS.ReadableStream;
  /** Tests: builds and starts the device behind --simulate (default: a SIM800-like modem with two SMS stored). */
  virtualModem?: (path: string) => VirtualModem;
  /** Tests: the listing behind `ports` and the binding `ports --probe` opens (default: listPorts, native). */
  ports?: { list: () => ReturnType<typeof listPorts>; binding?: 'native' | 'mock' };
}

const defaultIo: CliIo = {
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
};

export const DEFAULT_CONFIG = process.env.PULSA_BRIDGE_CONFIG ?? '/etc/pulsa-bridge/config.json';

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

/** Option/argument parser: a bad value is a usage error (exit 2) named by commander, before any port is opened. */
function wholeNumber(what: string, min: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isInteger(n) || n < min) throw new InvalidArgumentError(`expected ${what}.`);
    return n;
  };
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

async function withSession<T>(io: CliIo, opts: ModemCliOptions, fn: (s: Session) => Promise<T>): Promise<T> {
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

function json(io: CliIo, value: unknown): void {
  io.out(JSON.stringify(value, null, 2) + '\n');
}


export function createProgram(io: CliIo = defaultIo): Command {
  const program = new Command();
  program
    .name('pulsa-bridge')
    .description('Receives operator SMS on GSM modems and forwards them, crash-safe, to the convert-pulsa webhook.\nDiagnostics: ports, info, at, ussd, sms. Spool: queue. Daemon: run.')
    .version(VERSION)
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .showHelpAfterError('(add --help for usage)');

  program
    .command('run')
    .description('run the daemon: receive SMS on every configured modem, spool them, forward them to the webhook')
    .option('-c, --config <file>', 'config file', DEFAULT_CONFIG)
    .option('--simulate', 'run every modem on the virtual modem (no hardware)')
    .action(async (opts: { config: string; simulate?: boolean }) => {
      // A bad or unreadable config exits 78 (EX_CONFIG): the unit's RestartPreventExitStatus=78 stops restarting it.
      const config = await loadConfig(opts.config).catch((err: unknown) => {
        if (!(err instanceof ConfigError)) throw err;
        io.err(formatError(err));
        process.exitCode = 78;
        return undefined;
      });
      if (config) await runDaemon(config, opts.simulate === true);
    });

  const configCmd = program.command('config').description('configuration tools');
  configCmd
    .command('check')
    .description('validate a config file and print the effective config (defaults applied, secrets masked)')
    .argument('[file]', 'config file', DEFAULT_CONFIG)
    .option('--json', 'print JSON only')
    .action(async (file: string, opts: { json?: boolean }) => {
      const cfg = await loadConfig(file);
      if (!opts.json) io.out(`${file}: OK\n`);
      json(io, maskSecrets(cfg));
    });

  program
    .command('ports')
    .description('list serial ports with USB ids, the stable /dev/serial/by-id path, and which look like known modems')
    .option('--json', 'print JSON')
    .option('--probe', 'find the AT port(s): send only AT, AT+CGMI, AT+CGMM, AT+CGSN to each USB serial port (ports another process holds are left alone)')
    .option(
      '--baud <rates>',
      'with --probe: baud rates to try in order, comma-separated',
      (value: string): number[] => {
        const rates = value.split(',').map((v) => v.trim());
        if (rates.some((r) => !/^\d+$/.test(r) || Number(r) < 1)) throw new InvalidArgumentError('expected baud rates such as 115200,9600.');
        return rates.map(Number);
      },
      [115200],
    )
    .option('--timeout <ms>', 'with --probe: per-command timeout in ms', wholeNumber('a timeout in ms (a whole number >= 1)', 1), 1000)
    .option('--all', 'with --probe: probe plain UARTs without USB ids too (ttyS*, ttyAMA*)')
    .action(async (opts: { json?: boolean; probe?: boolean; baud: number[]; timeout: number; all?: boolean }) => {
      const result = io.ports
        ? await io.ports.list()
        : await listPorts({ fingerprints: USB_FINGERPRINTS.map((r) => ({ vendorId: r.vendorId, ...(r.productId ? { productId: r.productId } : {}), profile: r.profile ?? 'generic', description: r.description })) });
      if (!opts.probe) {
        if (opts.json) return json(io, result);
        if (result.warning) io.err(`note: ${result.warning}\n`);
        if (result.ports.length === 0) {
          io.out('no serial ports found (is the modem plugged in? `dmesg | tail` shows USB events; a Huawei stick may need usb_modeswitch)\n');
          return;
        }
        const rows = [['PORT', 'USB ID', 'MANUFACTURER', 'LOOKS LIKE', 'BY-ID PATH']];
        for (const p of result.ports) {
          rows.push([
            p.path,
            p.vendorId ? `${p.vendorId}:${p.productId ?? '????'}` : '-',
            p.manufacturer ?? '-',
            p.looksLike ? `${p.looksLike.description} [${p.looksLike.profile}]` : '-',
            p.byIdPath ?? '-',
          ]);
        }
        io.out(table(rows));
        return;
      }

      // --probe: read-only AT on the USB-like ports, in parallel (a few at a time), each bounded by its timeouts.
      const candidates = result.ports.filter((p) => isProbeCandidate(p, opts.all === true));
      const probes = await probePorts(
        candidates.map((p) => p.path),
        { baudRates: opts.baud, timeoutMs: opts.timeout, link: io.ports?.binding === 'mock' ? 'virtual' : 'native', logger: silentLogger() },
      );
      const probed: ProbedPort[] = result.ports.map((port) => {
        const i = candidates.indexOf(port);
        return i >= 0 ? { port, probe: probes[i]! } : { port };
      });
      const recommended = recommendAtPorts(probed);
      if (opts.json) return json(io, { ...result, ports: probed.map((r) => (r.probe ? { ...r.port, probe: r.probe } : r.port)), recommended });
      if (result.warning) io.err(`note: ${result.warning}\n`);
      if (result.ports.length === 0) {
        io.out('no serial ports found (is the modem plugged in? `dmesg | tail` shows USB events; a Huawei stick may need usb_modeswitch)\n');
        return;
      }
      const rows = [['PORT', 'USB ID', 'LOOKS LIKE', 'AT', 'MODEM', 'BY-ID PATH']];
      for (const { port: p, probe } of probed) {
        rows.push([
          p.path,
          p.vendorId ? `${p.vendorId}:${p.productId ?? '????'}` : '-',
          p.looksLike ? `${p.looksLike.description} [${p.looksLike.profile}]` : '-',
          probe ? atVerdict(probe) : '-',
          probe?.answers ? describeModem(probe) || '-' : '-',
          p.byIdPath ?? '-',
        ]);
      }
      io.out(table(rows));
      for (const { probe } of probed) {
        const verdict = probe && atVerdict(probe);
        if (!probe?.error || (verdict !== 'busy' && verdict !== 'error')) continue;
        io.out(`${probe.error.message}\n${probe.error.hint ? `  hint: ${probe.error.hint}\n` : ''}`);
      }
      const skipped = probed.filter((r) => !r.probe).map((r) => r.port.path);
      if (skipped.length > 0) io.out(`not probed (no USB ids; --all probes them): ${skipped.join(', ')}\n`);
      if (recommended.length === 0) {
        io.out(
          candidates.length === 0
            ? 'no USB serial port to probe\n'
            : `no port answered AT (tried ${opts.baud.join(', ')} baud; busy ports were left alone)\n`,
        );
        return;
      }
      const named = recommended.map((r) => {
        const also = r.alternatives.length > 0 ? `; also answer AT: ${r.alternatives.join(', ')}` : '';
        return `${r.path}${r.modem ? ` (${r.modem}${also})` : also ? ` (${also.slice(2)})` : ''}`;
      });
      const unstable = recommended.some((r) => !r.stable) ? ' [no /dev/serial/by-id link for some: ttyUSB numbers can change after a USB reset]' : '';
      io.out(`use as "port" in the config (one per modem): ${named.join(', ')}${unstable}\n`);
    });

  modemOptions(program.command('info'))
    .description('everything the modem says about itself: identity, SIM, signal, registration, operator, SMS storage, SMSC, profile')
    .option('--json', 'print JSON')
    .action(async (opts: ModemCliOptions) => {
      await withSession(io, opts, async (s) => {
        await s.modem.init();
        const info = await s.modem.info();
        if (opts.json) return json(io, info);
        io.out(formatInfo(info as unknown as Record<string, unknown>));
      });
    });

  modemOptions(program.command('at'))
    .description('send one AT command and print the answer; with no command, an interactive AT terminal (URCs shown as they arrive; Ctrl-C or Ctrl-D exits)')
    .argument('[command...]', 'AT command, e.g. AT+CSQ (quote it in the shell)')
    .option('--json', 'print JSON (one-shot mode)')
    .action(async (words: string[], opts: ModemCliOptions) => {
      await withSession(io, opts, async (s) => {
        if (words.length > 0) {
          const command = words.join(' ');
          try {
            const r = await s.channel.run(command);
            if (opts.json) return json(io, r);
            io.out([...r.lines, r.final].join('\n') + '\n');
          } catch (err) {
            // The modem answered with an error: show its words like a terminal would, explain on stderr, exit 1.
            if (err instanceof AtCommandError && err.final !== undefined) {
              process.exitCode = 1;
              if (opts.json) return json(io, { command, lines: err.lines, final: err.final, error: err.message, code: err.code });
              io.out([...err.lines, err.final].join('\n') + '\n');
              io.err(`error: ${err.message}\n`);
              return;
            }
            if (opts.json && err instanceof BridgeError) {
              json(io, { command, error: err.message, code: err.code });
              process.exitCode = 1;
              return;
            }
            throw err;
          }
          return;
        }
        await interactiveAt(s, io);
      });
    });

  modemOptions(program.command('ussd'))
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
        // The network refusing the code (4 not supported, 5 timed out) is a failed diagnostic: exit 1.
        if (r.status === 4 || r.status === 5) process.exitCode = 1;
        if (opts.json) return json(io, replies);
        for (const x of replies as Array<{ status: number; text: string }>) io.out(`[status ${x.status}: ${ussdStatusLabel(x.status)}]\n${x.text}\n`);
        if (r.status === 4) io.err(`error: the network does not support ${code} on this SIM\nhint: check the code with the operator; some modems need the GSM charset (--profile) for USSD\n`);
      });
    });

  const sms = program.command('sms').description('SMS on the SIM/modem storage (decoded, with indexes)');
  modemOptions(sms.command('list'))
    .description('list every SMS stored on the modem, decoded')
    .option('--json', 'print JSON')
    .action(async (opts: ModemCliOptions) => {
      await withSession(io, opts, async (s) => {
        await s.modem.init();
        const list = await s.modem.listSms('all');
        const decoded = list.map((p) => describeStored(p));
        if (opts.json) return json(io, decoded);
        if (decoded.length === 0) return io.out('no SMS on the modem\n');
        for (const d of decoded) io.out(formatStored(d));
      });
    });
  modemOptions(sms.command('read'))
    .description('read one SMS by its storage index')
    .argument('<index>', 'storage index (as `sms list` shows it; some modems start at 0)', wholeNumber('a storage index (a whole number >= 0)', 0))
    .option('--json', 'print JSON')
    .action(async (i: number, opts: ModemCliOptions) => {
      await withSession(io, opts, async (s) => {
        await s.modem.init();
        const p = await s.modem.readSms(i);
        if (!p) throw new BridgeError('AT_ERROR', `no SMS at index ${i}`, { hint: '`pulsa-bridge sms list` shows the stored messages and their indexes' });
        const d = describeStored(p);
        if (opts.json) return json(io, d);
        io.out(formatStored(d));
      });
    });
  modemOptions(sms.command('delete'))
    .description('delete one SMS by index (the daemon deletes only after spooling; use this for clean-up)')
    .argument('<index>', 'storage index', wholeNumber('a storage index (a whole number >= 0)', 0))
    .option('--json', 'print JSON')
    .action(async (i: number, opts: ModemCliOptions) => {
      await withSession(io, opts, async (s) => {
        await s.modem.init();
        await s.modem.deleteSms(i);
        if (opts.json) return json(io, { deleted: i });
        io.out(`deleted index ${i}\n`);
      });
    });

  modemOptions(sms.command('send'))
    .description('send an SMS (diagnostics and test transfers, e.g. `--to 151 "TRANSFERPULSA 0812... 5000"`); long texts go as concatenated parts')
    .requiredOption('--to <number>', 'destination: short code (151, 168) or number (+62..., 08...)')
    .argument('<text...>', 'message text (quote it in the shell)')
    .option('--json', 'print JSON')
    .action(async (words: string[], opts: ModemCliOptions & { to: string }) => {
      const text = words.join(' ');
      // A fresh concatenation reference per send, so two long messages to the same number are never merged.
      const pdus = encodeSubmit(opts.to, text, { reference: randomInt(0, 256) });
      await withSession(io, opts, async (s) => {
        await s.modem.init();
        const refs = await s.modem.sendSms(opts.to, pdus);
        if (opts.json) return json(io, { to: opts.to, parts: pdus.length, references: refs });
        io.out(`sent to ${opts.to} in ${pdus.length} part(s); message reference(s) ${refs.join(', ')}\n`);
      });
    });

  program.addCommand(queueCommands(io, spoolFrom));
  program.addCommand(statusCommand(io));
  program.addCommand(simulateCommand(io));
  // addCommand() does not pass settings down: every command writes through io and shows the usage hint.
  for (const c of allCommands(program)) c.configureOutput({ writeOut: io.out, writeErr: io.err }).showHelpAfterError('(add --help for usage)');
  return program;
}

/** The command and every subcommand below it. */
export function allCommands(root: Command): Command[] {
  return [root, ...root.commands.flatMap((c) => allCommands(c))];
}

interface StoredView {
  index: number | undefined;
  status: string;
  sender?: string;
  time?: string;
  text?: string;
  part?: string;
  error?: string;
  pdu: string;
}

const STAT_TEXT = ['unread', 'read', 'unsent', 'sent'];

function describeStored(p: { index: number | undefined; stat: number | undefined; length: number; pdu: string }): StoredView {
  const d = decodeDeliver(p);
  const base: StoredView = { index: p.index, status: p.stat === undefined ? '?' : (STAT_TEXT[p.stat] ?? String(p.stat)), pdu: p.pdu };
  if (!d.ok) return { ...base, error: d.reason };
  const v: StoredView = { ...base, sender: d.sms.originator, time: d.sms.scTimestamp, text: d.sms.text };
  if (d.sms.concat) v.part = `${d.sms.concat.sequence}/${d.sms.concat.total} ref ${d.sms.concat.reference}`;
  return v;
}

function formatStored(d: StoredView): string {
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

async function interactiveAt(s: Session, io: CliIo): Promise<void> {
  const input = io.input ?? process.stdin;
  const tty = (input as { isTTY?: boolean }).isTTY === true;
  // The prompt and line editing only on a terminal; piped input gets the answers alone (all through io).
  const rl = createInterface({ input, ...(tty ? { output: process.stdout } : {}), terminal: tty, historySize: 200, prompt: 'AT> ' });
  const onUrc = (u: { lines: string[] }) => io.out(`\n[urc] ${u.lines.join(' | ')}\n`);
  const onUnexpected = (line: string) => io.out(`\n[modem] ${line}\n`);
  const onClose = (info: { disconnected: boolean }) => {
    io.err(`\nport closed${info.disconnected ? ' (device vanished)' : ''}\n`);
    rl.close();
  };
  s.channel.on('urc', onUrc);
  s.channel.on('unexpected', onUnexpected);
  s.channel.on('close', onClose);
  io.out('interactive AT terminal: type commands (e.g. AT+CSQ); Ctrl-C or Ctrl-D exits\n');
  rl.prompt();
  let queue = Promise.resolve();
  await new Promise<void>((resolve) => {
    rl.on('line', (line) => {
      const cmd = line.trim();
      if (!cmd) return rl.prompt();
      queue = queue.then(async () => {
        try {
          const r = await s.channel.run(cmd);
          io.out([...r.lines, r.final].join('\n') + '\n');
        } catch (err) {
          if (err instanceof AtCommandError && err.final !== undefined) {
            // The modem's own words, then what its error code means when the table knows it.
            io.out([...err.lines, err.final].join('\n') + '\n');
            const explained = explainFinal(err.final);
            if (explained !== err.final) io.out(`note: ${explained}\n`);
          } else io.out(formatError(err));
        }
        rl.prompt();
      });
    });
    rl.on('SIGINT', () => rl.close());
    rl.on('close', () => void queue.then(resolve));
  });
  s.channel.off('urc', onUrc);
  s.channel.off('unexpected', onUnexpected);
  s.channel.off('close', onClose);
}

async function runDaemon(config: Config, simulate: boolean): Promise<void> {
  const logger = createLogger({ level: config.log.level, ...(config.log.pretty === 'auto' ? {} : { pretty: config.log.pretty }) });
  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, `unhandled rejection (kept running): ${errorMessage(reason)}`));
  // Signal handlers go in before anything starts: a SIGTERM during start-up must stop cleanly, not kill.
  let stopRequested: string | undefined;
  let requestStop: (signal: string) => void = (signal) => (stopRequested = signal);
  const onSignal = (signal: string) => () => requestStop(signal);
  process.on('SIGTERM', onSignal('SIGTERM'));
  process.on('SIGINT', onSignal('SIGINT'));
  const daemon = await Daemon.start({ config, logger, simulate });
  await new Promise<void>((resolve) => {
    let stopping = false;
    requestStop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal }, `${signal}: stopping`);
      daemon.stop().then(resolve, (err: unknown) => {
        logger.error({ err }, `error while stopping: ${errorMessage(err)}`);
        resolve();
      });
    };
    if (stopRequested) requestStop(stopRequested);
  });
  // Everything durable is closed; an abandoned HTTP socket must not keep the process alive past the grace bound.
  logger.flush?.();
  process.exit(0);
}

/** Formats an error for the terminal: one line, plus the hint when there is one. */
export function formatError(err: unknown): string {
  if (err instanceof ConfigError) return `error: invalid config:\n${err.problems.map((p) => `  - ${p}`).join('\n')}\n`;
  if (err instanceof BridgeError) return `error: ${err.message}\n${err.hint ? `hint: ${err.hint}\n` : ''}`;
  return `error: ${errorMessage(err)}\n`;
}

export async function main(argv: string[], io: CliIo = defaultIo): Promise<void> {
  const program = createProgram(io);
  // On every command: subcommands built before this call do not inherit it, and would call process.exit().
  for (const c of allCommands(program)) c.exitOverride();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    const e = err as { code?: string; exitCode?: number };
    if (typeof e.code === 'string' && e.code.startsWith('commander.')) {
      // --help, --version and `help` exit 0; every usage error (unknown command or option, bad value, missing
      // argument, a command group called without its subcommand) exits 2.
      process.exitCode = e.exitCode === 0 ? 0 : 2;
      return;
    }
    io.err(formatError(err));
    process.exitCode = 1;
  }
}

