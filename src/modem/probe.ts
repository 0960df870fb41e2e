/**
 * Port probing (`pulsa-bridge ports --probe`): which ttys answer AT and what modem is behind them. Read-only (only
 * AT, AT+CGMI, AT+CGMM, AT+CGSN are written; the modem is left as found); never throws or rejects; never writes to a
 * port another process holds (the open's lock, and /proc for root); the port is always closed. Bounded: each probe
 * has a hard deadline and probePorts runs at most `concurrency` at once. The first baud rate that answers OK wins.
 */
import { realpath } from 'node:fs/promises';
import type { SerialAtChannel } from '../at/channel.js';
import { withDeadline, WaitTimeoutError } from '../at/wait.js';
import { AtCommandError, BridgeError, errorMessage, type ErrorCode } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import { findHolders, type Holder } from '../serial/holders.js';
import type { SerialLink } from '../serial/link.js';
import { createChannel, openLink, type LinkTarget } from './factory.js';
import { extractId, plainAnswer } from './parse.js';
import { detectProfile } from './profiles/index.js';
import type { ProfileId } from './types.js';

export interface ProbeOptions {
  /** Tried in order until one answers. Default [115200]. */
  baudRates?: readonly number[];
  /** Per-command timeout in ms. Default 1000. */
  timeoutMs?: number;
  logger?: Logger;
  /** Hard limit for one port's whole probe. Default: enough for every baud rate's timeouts plus identification. */
  deadlineMs?: number;
  /** Root of the process table scanned for holders of a device. Default '/proc' (tests pass a fake tree). */
  procRoot?: string;
  /** Opens a link (tests wrap it). Default: the factory's openLink. */
  open?: (target: LinkTarget) => Promise<SerialLink>;
}

export interface ProbePortsOptions extends ProbeOptions {
  /** Probes running at once. Default 4. */
  concurrency?: number;
}

export interface ProbeError {
  code: ErrorCode;
  message: string;
  hint?: string;
}

export interface ProbeResult {
  path: string;
  /** true when the port answered `AT` with OK. */
  answers: boolean;
  /** The baud rate that answered. */
  baudRate?: number;
  manufacturer?: string;
  model?: string;
  imei?: string;
  /** Modem profile detected from the manufacturer and model (generic when unknown). */
  profile?: ProfileId;
  /** Why the port does not answer (absent when it answers). */
  error?: ProbeError;
}

export type { Holder };

export const BUSY_MESSAGE = 'busy (ModemManager or the pulsa-bridge daemon?)';
const BUSY_HINT =
  'a port held by another process is never probed: stop ModemManager or tag the modem ID_MM_DEVICE_IGNORE=1 (systemd/pulsa-bridge.rules); a running daemon already owns its configured ports';

const DEFAULT_BAUD_RATES: readonly number[] = [115200];
const DEFAULT_TIMEOUT_MS = 1000;
const DEFAULT_CONCURRENCY = 4;
/** Time allowed for opening and closing a port, on top of the AT timeouts. */
const OPEN_CLOSE_ALLOWANCE_MS = 3000;
const IDENTIFY_COMMANDS = ['AT+CGMI', 'AT+CGMM', 'AT+CGSN'] as const;

interface Normalised {
  baudRates: readonly number[];
  timeoutMs: number;
  log: Logger;
  deadlineMs: number;
  procRoot: string;
  open: (target: LinkTarget) => Promise<SerialLink>;
}

function normalise(opts: ProbeOptions): Normalised {
  const baudRates = opts.baudRates && opts.baudRates.length > 0 ? [...opts.baudRates] : DEFAULT_BAUD_RATES;
  const timeoutMs =
    opts.timeoutMs !== undefined && Number.isFinite(opts.timeoutMs) && opts.timeoutMs > 0
      ? opts.timeoutMs
      : DEFAULT_TIMEOUT_MS;
  // Per rate: two ATs and one drain (as long as a timeout); then three identification commands, each possibly
  // followed by a drain.
  const natural = baudRates.length * 3 * timeoutMs + IDENTIFY_COMMANDS.length * 2 * timeoutMs + OPEN_CLOSE_ALLOWANCE_MS;
  return {
    baudRates,
    timeoutMs,
    log: opts.logger ?? silentLogger(),
    deadlineMs: opts.deadlineMs !== undefined && opts.deadlineMs > 0 ? opts.deadlineMs : natural,
    procRoot: opts.procRoot ?? '/proc',
    open: opts.open ?? openLink,
  };
}

function errorOf(err: unknown): ProbeError {
  if (err instanceof BridgeError)
    return err.hint
      ? { code: err.code, message: err.message, hint: err.hint }
      : { code: err.code, message: err.message };
  return { code: 'PORT_IO', message: errorMessage(err) };
}

function busyError(path: string, holders: readonly Holder[], cause?: ProbeError): ProbeError {
  const who = holders.length > 0 ? `: held by ${holders.map((h) => `${h.command} (pid ${h.pid})`).join(', ')}` : '';
  return { code: 'PORT_BUSY', message: `${path}: ${BUSY_MESSAGE}${who}`, hint: cause?.hint ?? BUSY_HINT };
}

/** The device path the /proc check looks for, or undefined when it does not apply (no device node, pty, missing path). */
async function deviceToCheck(path: string): Promise<string | undefined> {
  const real = await realpath(path).catch(() => undefined);
  if (real === undefined || real.startsWith('/dev/pts/')) return undefined;
  return real;
}

/** Probes one port. Never rejects. */
export async function probePort(path: string, opts: ProbeOptions = {}): Promise<ProbeResult> {
  const o = normalise(opts);
  const device = await deviceToCheck(path);
  const holders = device ? ((await findHolders([device], o.procRoot)).get(device) ?? []) : [];
  return probeWithDeadline(path, o, holders);
}

/** Probes several ports, at most `concurrency` at a time; results in the order of `paths`. Never rejects. */
export async function probePorts(paths: readonly string[], opts: ProbePortsOptions = {}): Promise<ProbeResult[]> {
  const o = normalise(opts);
  const concurrency =
    opts.concurrency !== undefined && opts.concurrency >= 1 ? Math.floor(opts.concurrency) : DEFAULT_CONCURRENCY;
  const devices = await Promise.all(paths.map((p) => deviceToCheck(p)));
  const holders = await findHolders(
    devices.filter((d): d is string => d !== undefined),
    o.procRoot,
  );
  const results: ProbeResult[] = new Array<ProbeResult>(paths.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < paths.length) {
      const i = next++;
      const device = devices[i];
      results[i] = await probeWithDeadline(paths[i]!, o, device ? (holders.get(device) ?? []) : []);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, paths.length) }, worker));
  return results;
}

async function probeWithDeadline(path: string, o: Normalised, holders: readonly Holder[]): Promise<ProbeResult> {
  if (holders.length > 0) {
    o.log.info({ path, holders }, `not probing ${path}: another process holds it`);
    return { path, answers: false, error: busyError(path, holders) };
  }
  const work = probeOpen(path, o).catch((err: unknown): ProbeResult => {
    // probeOpen catches what it expects; anything else is a bug, reported rather than thrown at the operator.
    o.log.error({ err, path }, `probe of ${path} failed unexpectedly: ${errorMessage(err)}`);
    return { path, answers: false, error: errorOf(err) };
  });
  try {
    return await withDeadline(work, { timeoutMs: o.deadlineMs, what: `the probe of ${path}` });
  } catch (err) {
    if (!(err instanceof WaitTimeoutError)) throw err;
    o.log.warn(
      { path },
      `probe of ${path} did not finish within ${o.deadlineMs} ms; it closes the port in the background`,
    );
    return {
      path,
      answers: false,
      error: {
        code: 'AT_TIMEOUT',
        message: `probe of ${path} did not finish within ${o.deadlineMs} ms`,
        hint: 'the device or its driver is stuck: unplug and replug it',
      },
    };
  }
}

type RateOutcome =
  | { kind: 'answers'; result: ProbeResult }
  | { kind: 'silent'; bytes: number; garbage: boolean }
  | { kind: 'failed'; error: ProbeError };

async function probeOpen(path: string, o: Normalised): Promise<ProbeResult> {
  const unanswered: string[] = [];
  let sawBytes = false;
  for (const baudRate of o.baudRates) {
    const outcome = await probeRate(path, baudRate, o);
    if (outcome.kind === 'answers') return outcome.result;
    if (outcome.kind === 'failed') return { path, answers: false, error: outcome.error };
    if (outcome.bytes > 0) sawBytes = true;
    unanswered.push(
      outcome.bytes > 0
        ? `${baudRate} (${outcome.bytes} bytes${outcome.garbage ? ' of garbage' : ''}, no OK)`
        : `${baudRate} (silent)`,
    );
  }
  return {
    path,
    answers: false,
    error: {
      code: 'MODEM_SILENT',
      message: `no OK to AT at ${unanswered.join(', ')}`,
      hint: sawBytes
        ? 'bytes but no OK: a wrong baud rate (try --baud 115200,9600) or a non-AT port (GPS/NMEA, diagnostics)'
        : 'not an AT port (diagnostics, GPS, PPP data ports stay silent), or the modem is still booting',
    },
  };
}

/** Opens the port at one rate, asks AT (twice at most), identifies on OK; always closes. */
async function probeRate(path: string, baudRate: number, o: Normalised): Promise<RateOutcome> {
  let link: SerialLink;
  try {
    link = await o.open({ path, baudRate });
  } catch (err) {
    const e = errorOf(err);
    o.log.debug({ path, baudRate, code: e.code }, `probe: cannot open ${path}: ${e.message}`);
    return { kind: 'failed', error: e.code === 'PORT_BUSY' ? busyError(path, [], e) : e };
  }
  const channel = createChannel(link, {
    logger: o.log,
    name: `probe ${path}@${baudRate}`,
    defaultTimeoutMs: o.timeoutMs,
    detection: true,
    quietGapMs: Math.min(200, o.timeoutMs),
    maxDrainMs: o.timeoutMs,
  });
  let bytes = 0;
  let garbage = false;
  const onData = (chunk: Buffer): void => void (bytes += chunk.length);
  link.on('data', onData);
  channel.on('garbage', () => void (garbage = true));
  try {
    for (let attempt = 1; attempt <= 2; attempt++) {
      try {
        await channel.run('AT', { timeoutMs: o.timeoutMs });
        return { kind: 'answers', result: await identify(path, baudRate, channel, o) };
      } catch (err) {
        if (err instanceof AtCommandError && err.code === 'AT_ERROR' && err.final !== undefined) {
          return {
            kind: 'failed',
            error: {
              code: 'AT_ERROR',
              message: `${path} answered AT with ${err.final}`,
              hint: 'an AT interpreter in an odd state: replug the modem and probe again',
            },
          };
        }
        if (!(err instanceof AtCommandError && err.code === 'AT_TIMEOUT'))
          return { kind: 'failed', error: errorOf(err) };
        o.log.debug({ path, baudRate, attempt, bytes, garbage }, `probe: no OK to AT on ${path} at ${baudRate}`);
        if (garbage) break; // unreadable bytes: the rate is wrong, a second AT at it will not help
      }
    }
    return { kind: 'silent', bytes, garbage };
  } finally {
    link.off('data', onData);
    try {
      await channel.close();
    } catch (err) {
      o.log.warn({ err, path }, `probe: closing ${path} failed: ${errorMessage(err)}`);
    }
    channel.dispose();
  }
}

/** AT+CGMI, AT+CGMM, AT+CGSN: each may fail or time out without spoiling the others. */
async function identify(path: string, baudRate: number, channel: SerialAtChannel, o: Normalised): Promise<ProbeResult> {
  const answers: Partial<Record<(typeof IDENTIFY_COMMANDS)[number], readonly string[]>> = {};
  for (const command of IDENTIFY_COMMANDS) {
    try {
      answers[command] = (await channel.run(command, { timeoutMs: o.timeoutMs })).lines;
    } catch (err) {
      // Identification is a courtesy: the port answers AT, which is what the operator asked. Logged, not fatal.
      o.log.debug({ err, path, command }, `probe: ${command} on ${path} failed: ${errorMessage(err)}`);
      if (!channel.isOpen) break;
    }
  }
  const result: ProbeResult = { path, answers: true, baudRate };
  const manufacturer = answers['AT+CGMI'] ? plainAnswer(answers['AT+CGMI']) : '';
  const model = answers['AT+CGMM'] ? plainAnswer(answers['AT+CGMM']) : '';
  const imei = answers['AT+CGSN'] ? extractId(answers['AT+CGSN'], /\d{14,17}/) : undefined;
  if (manufacturer) result.manufacturer = manufacturer;
  if (model) result.model = model;
  if (imei) result.imei = imei;
  result.profile = detectProfile(manufacturer, model).id;
  return result;
}
