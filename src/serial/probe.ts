/**
 * Port probing: which of a modem's ttys answer AT, and what modem is behind them (`pulsa-bridge ports --probe`).
 *
 * Contract and invariants:
 * - Read-only: the only commands ever written are `AT` (at most twice per baud rate), then `AT+CGMI`, `AT+CGMM` and
 *   `AT+CGSN` once a port answered. No ATE0, no settings: the modem is left as it was found.
 * - Never throws, never rejects: a missing, busy or unreadable port, silence and garbage are reported in the result.
 * - A port another process holds is never written to. Two guards: the open itself (the daemon holds its ports with a
 *   lock; ModemManager's exclusive mode refuses non-root), and, before opening, the processes holding the device in
 *   /proc (root bypasses exclusive mode). Pseudo-terminals (/dev/pts/*) skip the /proc check: their creator (socat,
 *   the simulator) always keeps the slave open.
 * - The port is always closed, and every listener removed, whatever happened.
 * - Bounded: one baud rate costs at most two AT timeouts plus one drain; a probe as a whole has a hard deadline
 *   (deadlineMs); probePorts runs at most `concurrency` probes at once, so n ports take at most
 *   ceil(n / concurrency) deadlines.
 * - Garbage or silence at one baud rate moves on to the next one; the first rate that answers OK wins.
 */
import { readdir, readFile, readlink, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { SerialAtChannel } from '../at/channel.js';
import { AtCommandError, BridgeError, errorMessage, type ErrorCode } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import { extractId, plainAnswer } from '../modem/parse.js';
import { detectProfile, PROFILES } from '../modem/profiles/index.js';
import type { ProfileId } from '../modem/types.js';
import { GENERIC_URCS } from '../modem/urcs.js';
import type { SerialLink, SerialOpenOptions } from './link.js';
import type { PortInfo } from './ports.js';
import { openSerialLink } from './serial-link.js';

export interface ProbeOptions {
  /** Tried in order until one answers. Default [115200]. */
  baudRates?: readonly number[];
  /** Per-command timeout in ms. Default 1000. */
  timeoutMs?: number;
  binding?: 'native' | 'mock';
  logger?: Logger;
  /** Hard limit for one port's whole probe. Default: enough for every baud rate's timeouts plus identification. */
  deadlineMs?: number;
  /** Root of the process table scanned for holders of a device. Default '/proc' (tests pass a fake tree). */
  procRoot?: string;
  /** Opens a link (tests wrap it). Default openSerialLink. */
  open?: (options: SerialOpenOptions) => Promise<SerialLink>;
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

/** A process that has the device open. */
export interface Holder {
  pid: number;
  command: string;
}

/** The AT column of `ports --probe`: answers / silent or garbage / held by someone else / could not be probed. */
export type AtVerdict = 'yes' | 'no' | 'busy' | 'error';

export function atVerdict(result: ProbeResult): AtVerdict {
  if (result.answers) return 'yes';
  const code = result.error?.code;
  if (code === 'PORT_BUSY') return 'busy';
  if (code === undefined || code === 'MODEM_SILENT') return 'no';
  return 'error';
}

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
  binding: 'native' | 'mock';
  log: Logger;
  deadlineMs: number;
  procRoot: string;
  open: (options: SerialOpenOptions) => Promise<SerialLink>;
}

function normalise(opts: ProbeOptions): Normalised {
  const baudRates = opts.baudRates && opts.baudRates.length > 0 ? [...opts.baudRates] : DEFAULT_BAUD_RATES;
  const timeoutMs = opts.timeoutMs !== undefined && Number.isFinite(opts.timeoutMs) && opts.timeoutMs > 0 ? opts.timeoutMs : DEFAULT_TIMEOUT_MS;
  // Per rate: two ATs and one drain (as long as a timeout); then three identification commands, each possibly
  // followed by a drain.
  const natural = baudRates.length * 3 * timeoutMs + IDENTIFY_COMMANDS.length * 2 * timeoutMs + OPEN_CLOSE_ALLOWANCE_MS;
  return {
    baudRates,
    timeoutMs,
    binding: opts.binding ?? 'native',
    log: opts.logger ?? silentLogger(),
    deadlineMs: opts.deadlineMs !== undefined && opts.deadlineMs > 0 ? opts.deadlineMs : natural,
    procRoot: opts.procRoot ?? '/proc',
    open: opts.open ?? openSerialLink,
  };
}

/** Every detection URC row (vendor rows first, they carry vendor prefixes and do not overlap), then the generic ones. */
function detectionUrcs() {
  return [...PROFILES.flatMap((p) => p.urcs), ...GENERIC_URCS];
}

function errorOf(err: unknown): ProbeError {
  if (err instanceof BridgeError) return err.hint ? { code: err.code, message: err.message, hint: err.hint } : { code: err.code, message: err.message };
  return { code: 'PORT_IO', message: errorMessage(err) };
}

function busyError(path: string, holders: readonly Holder[], cause?: ProbeError): ProbeError {
  const who = holders.length > 0 ? `: held by ${holders.map((h) => `${h.command} (pid ${h.pid})`).join(', ')}` : '';
  return { code: 'PORT_BUSY', message: `${path}: ${BUSY_MESSAGE}${who}`, hint: cause?.hint ?? BUSY_HINT };
}

/**
 * Processes (other than this one) holding each device open, keyed by the device's real path. Processes whose fds
 * cannot be read (another user's, or gone meanwhile) are skipped: as non-root the open itself reports busy.
 */
export async function findHolders(devices: readonly string[], procRoot = '/proc'): Promise<Map<string, Holder[]>> {
  const wanted = new Set(devices);
  const found = new Map<string, Holder[]>();
  if (wanted.size === 0) return found;
  let pids: string[];
  try {
    pids = (await readdir(procRoot)).filter((n) => /^\d+$/.test(n) && Number(n) !== process.pid);
  } catch {
    return found; // no /proc (not Linux, or a sandbox): the open is the only guard left
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = await readdir(join(procRoot, pid, 'fd'));
    } catch {
      continue; // another user's process, or it exited: see above
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = await readlink(join(procRoot, pid, 'fd', fd));
      } catch {
        continue; // the fd closed meanwhile
      }
      if (!wanted.has(target)) continue;
      const command = (await readFile(join(procRoot, pid, 'comm'), 'utf8').catch(() => '?')).trim() || '?';
      const list = found.get(target) ?? [];
      if (!list.some((h) => h.pid === Number(pid))) list.push({ pid: Number(pid), command });
      found.set(target, list);
    }
  }
  return found;
}

/** The device path the /proc check looks for, or undefined when it does not apply (mock, pty, missing path). */
async function deviceToCheck(path: string, o: Normalised): Promise<string | undefined> {
  if (o.binding === 'mock') return undefined;
  const real = await realpath(path).catch(() => undefined);
  if (real === undefined || real.startsWith('/dev/pts/')) return undefined;
  return real;
}

/** Probes one port. Never rejects. */
export async function probePort(path: string, opts: ProbeOptions = {}): Promise<ProbeResult> {
  const o = normalise(opts);
  const device = await deviceToCheck(path, o);
  const holders = device ? ((await findHolders([device], o.procRoot)).get(device) ?? []) : [];
  return probeWithDeadline(path, o, holders);
}

/** Probes several ports, at most `concurrency` at a time; results in the order of `paths`. Never rejects. */
export async function probePorts(paths: readonly string[], opts: ProbePortsOptions = {}): Promise<ProbeResult[]> {
  const o = normalise(opts);
  const concurrency = opts.concurrency !== undefined && opts.concurrency >= 1 ? Math.floor(opts.concurrency) : DEFAULT_CONCURRENCY;
  const devices = await Promise.all(paths.map((p) => deviceToCheck(p, o)));
  const holders = await findHolders(devices.filter((d): d is string => d !== undefined), o.procRoot);
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
  let timer: NodeJS.Timeout | undefined;
  const work = probeOpen(path, o).catch((err: unknown): ProbeResult => {
    // probeOpen catches what it expects; anything else is a bug, reported rather than thrown at the operator.
    o.log.error({ err, path }, `probe of ${path} failed unexpectedly: ${errorMessage(err)}`);
    return { path, answers: false, error: errorOf(err) };
  });
  const deadline = new Promise<ProbeResult>((resolve) => {
    timer = setTimeout(() => {
      o.log.warn({ path }, `probe of ${path} did not finish within ${o.deadlineMs} ms; it closes the port in the background`);
      resolve({
        path,
        answers: false,
        error: { code: 'AT_TIMEOUT', message: `probe of ${path} did not finish within ${o.deadlineMs} ms`, hint: 'the device or its driver is stuck: unplug and replug it' },
      });
    }, o.deadlineMs);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    if (timer) clearTimeout(timer);
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
    unanswered.push(outcome.bytes > 0 ? `${baudRate} (${outcome.bytes} bytes${outcome.garbage ? ' of garbage' : ''}, no OK)` : `${baudRate} (silent)`);
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
    link = await o.open({ path, baudRate, binding: o.binding });
  } catch (err) {
    const e = errorOf(err);
    o.log.debug({ path, baudRate, code: e.code }, `probe: cannot open ${path}: ${e.message}`);
    return { kind: 'failed', error: e.code === 'PORT_BUSY' ? busyError(path, [], e) : e };
  }
  const channel = new SerialAtChannel({
    link,
    logger: o.log,
    name: `probe ${path}@${baudRate}`,
    defaultTimeoutMs: o.timeoutMs,
    urcs: detectionUrcs(),
    finalResults: PROFILES.flatMap((p) => p.finalResults),
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
          return { kind: 'failed', error: { code: 'AT_ERROR', message: `${path} answered AT with ${err.final}`, hint: 'an AT interpreter in an odd state: replug the modem and probe again' } };
        }
        if (!(err instanceof AtCommandError && err.code === 'AT_TIMEOUT')) return { kind: 'failed', error: errorOf(err) };
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

// ---- choosing what to probe and what to recommend (used by `pulsa-bridge ports --probe`) ----------------------------

/**
 * Ports worth probing: USB serial (ttyUSB*, ttyACM*) and anything with a USB vendor id. Plain UARTs without USB ids
 * (ttyS*, ttyAMA*) only with `all`: most are empty placeholders, and a board's UART may belong to something else.
 */
export function isProbeCandidate(port: Pick<PortInfo, 'path' | 'vendorId'>, all = false): boolean {
  return all || port.vendorId !== undefined || /\/tty(USB|ACM)\d+$/.test(port.path);
}

export interface ProbedPort {
  port: PortInfo;
  /** Absent when the port was not probed. */
  probe?: ProbeResult;
}

export interface AtPortRecommendation {
  /** The path to put in the config: the /dev/serial/by-id link when there is one. */
  path: string;
  /** false when there is no by-id link (ttyUSB numbers can change after a USB reset). */
  stable: boolean;
  /** `manufacturer model [profile]`, or '' when the modem did not say. */
  modem: string;
  /** Other ports of the same USB device that answer AT too. */
  alternatives: string[];
}

export function describeModem(probe: ProbeResult): string {
  const name = [probe.manufacturer, probe.model].filter((s) => s !== undefined && s !== '').join(' ');
  if (!probe.profile) return name;
  return name === '' ? `[${probe.profile}]` : `${name} [${probe.profile}]`;
}

/** One USB device = same by-id link without its interface suffix, else same vendor/product/serial, else the port. */
function deviceKey(port: PortInfo): string {
  if (port.byIdPath) return port.byIdPath.replace(/-if\d+(-port\d+)?$/, '');
  if (port.vendorId && port.serialNumber) return `${port.vendorId}:${port.productId ?? ''}:${port.serialNumber}`;
  return port.path;
}

/** The AT port(s) to configure: one per USB device (the first that answers, by path), its other AT ports as alternatives. */
export function recommendAtPorts(rows: readonly ProbedPort[]): AtPortRecommendation[] {
  const byDevice = new Map<string, ProbedPort[]>();
  for (const row of rows) {
    if (!row.probe?.answers) continue;
    const key = deviceKey(row.port);
    byDevice.set(key, [...(byDevice.get(key) ?? []), row]);
  }
  return [...byDevice.values()].map((group) => {
    const [first, ...rest] = group as [ProbedPort, ...ProbedPort[]];
    return {
      path: first.port.byIdPath ?? first.port.path,
      stable: first.port.byIdPath !== undefined,
      modem: describeModem(first.probe!),
      alternatives: rest.map((r) => r.port.byIdPath ?? r.port.path),
    };
  });
}
