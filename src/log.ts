/**
 * Logging: one JSON line per call to stdout (journald keeps it), pretty on a TTY. Secrets are redacted by path.
 * Our own small logger with the part of pino's API this code uses (log/format.ts builds the line in pino's shape,
 * log/sink.ts writes it, log/pretty.ts is the terminal form): pino cost 2.3 MiB of RSS alone (0.4 MiB in the daemon) and,
 * under the unit's --lite-mode, 5-7x our CPU per line (README.md, "No logging library").
 *
 * Calls: `log.info(msg)`, `log.info(obj, msg?)`, `log.error(err, msg?)` (the error under `err`, msg defaulting to its
 * message), and `log.error({ err }, msg?)` (msg defaulting to err.message). No printf-style arguments. `child(bindings)`
 * adds fields to every line of the child (outer bindings first); a child starts at its parent's level, and changing
 * either later does not change the other. `level` reads and sets the level by name ('silent' for nothing).
 * Under systemd (JOURNAL_STREAM or INVOCATION_ID set) each JSON line on stdout starts with `<N>`, the syslog priority
 * of its level (sd-daemon(3) SyslogLevelPrefix), so `journalctl -p warning` shows warnings and worse only; the rest of
 * the line is the same JSON. Elsewhere the lines are plain JSON.
 * Pure modules do not log; I/O modules take a Logger so tests can pass a silent one.
 */
import { hostname } from 'node:os';
import { baseJson, buildLine, fieldsJson, isLevelName, levelValue, syslogPriority, type LevelName } from './log/format.js';
import { formatPretty } from './log/pretty.js';
import { sinkFor, MAX_PENDING_BYTES, type LineSink } from './log/sink.js';

export { REDACT_PATHS, syslogPriority } from './log/format.js';

/** A log method: a message, or an object (or an Error) with an optional message. */
export interface LogFn {
  (msg: string): void;
  (obj: unknown, msg?: string): void;
}

export interface Logger {
  fatal: LogFn;
  error: LogFn;
  warn: LogFn;
  info: LogFn;
  debug: LogFn;
  trace: LogFn;
  /** A logger whose lines carry `bindings` too, after this logger's own. */
  child(bindings: Record<string, unknown>): Logger;
  /** The level by name: trace, debug, info, warn, error, fatal or silent. Setting an unknown name throws. */
  level: string;
  isLevelEnabled(level: string): boolean;
  /** Calls `cb` once the lines logged so far have been handed to the OS (without `cb`: nothing to wait for). */
  flush(cb?: (err?: Error | null) => void): void;
}

export interface LogOptions {
  level?: string;
  /** Force pretty output on or off; default: pretty when stdout is a TTY. */
  pretty?: boolean;
  destination?: NodeJS.WritableStream;
  /**
   * Start each JSON line with its syslog priority (`<3>{...}`). Default: on when the lines go to stdout (no
   * `destination`) of a process started by systemd (see runsUnderSystemd); never with pretty output.
   */
  syslogPrefix?: boolean;
  /** Environment to detect systemd in (default process.env). */
  env?: NodeJS.ProcessEnv;
}

/**
 * Whether this process was started by systemd with its output going to the journal: JOURNAL_STREAM is set when
 * stdout or stderr is connected to journald, INVOCATION_ID for every unit systemd runs (systemd.exec(5)).
 */
export function runsUnderSystemd(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.JOURNAL_STREAM) || Boolean(env.INVOCATION_ID);
}

/** What every logger of one createLogger() shares: where lines go and in which form. */
interface Core {
  sink: LineSink | undefined;
  prefix: boolean;
  pretty: boolean;
  colors: boolean;
}

class Log implements Logger {
  private threshold: number;
  private levelName: string;

  constructor(
    private readonly core: Core,
    level: string,
    /** baseJson + the bindings of this logger and its parents, as JSON fields. */
    private readonly bindings: string,
  ) {
    this.threshold = levelValue(level);
    this.levelName = level;
  }

  get level(): string {
    return this.levelName;
  }

  set level(name: string) {
    this.threshold = levelValue(name);
    this.levelName = name;
  }

  /** false for 'silent' and for a name that is no level (as pino answered). */
  isLevelEnabled(name: string): boolean {
    if (name === 'silent' || !isLevelName(name)) return false;
    return levelValue(name) >= this.threshold;
  }

  child(bindings: Record<string, unknown>): Logger {
    let fields = '';
    try {
      fields = fieldsJson(bindings, undefined, true);
    } catch {
      // bindings that cannot be read (a hostile getter or proxy): the child logs without them rather than throw
      fields = ',"logError":"child bindings left out: they could not be read"';
    }
    return new Log(this.core, this.levelName, this.bindings + fields);
  }

  flush(cb?: (err?: Error | null) => void): void {
    if (this.core.sink) this.core.sink.flush(cb);
    else if (cb) process.nextTick(cb);
  }

  fatal(a: unknown, b?: string): void {
    if (60 >= this.threshold) this.write(60, a, b);
  }
  error(a: unknown, b?: string): void {
    if (50 >= this.threshold) this.write(50, a, b);
  }
  warn(a: unknown, b?: string): void {
    if (40 >= this.threshold) this.write(40, a, b);
  }
  info(a: unknown, b?: string): void {
    if (30 >= this.threshold) this.write(30, a, b);
  }
  debug(a: unknown, b?: string): void {
    if (20 >= this.threshold) this.write(20, a, b);
  }
  trace(a: unknown, b?: string): void {
    if (10 >= this.threshold) this.write(10, a, b);
  }

  private write(level: number, a: unknown, b: string | undefined): void {
    const sink = this.core.sink;
    if (!sink) return;
    let obj: object | undefined;
    let msg: unknown = b;
    try {
      if (typeof a === 'string') {
        msg = a;
      } else if (a instanceof Error) {
        obj = { err: a };
        if (msg === undefined) msg = a.message;
      } else if (a !== null && typeof a === 'object') {
        obj = a;
        if (msg === undefined && (a as { msg?: unknown }).msg === undefined) {
          const err = (a as { err?: unknown }).err;
          if (err) msg = (err as { message?: unknown }).message;
        }
      } else if (a !== undefined && a !== null) {
        msg = String(a);
      }
    } catch {
      // a getter (msg, err, message) that throws: the line goes out with what was read
    }
    const line = buildLine({ level, time: Date.now(), bindings: this.bindings, obj, msg });
    // warn and worse go through a reader that fell behind longer than the rest (sink.ts: the operator needs them most)
    const important = level >= 40;
    if (this.core.pretty) sink.write(formatPretty(JSON.parse(line) as Record<string, unknown>, this.core.colors), important);
    else sink.write(this.core.prefix ? `<${syslogPriority(level)}>${line}` : line, important);
  }
}

let base: string | undefined;
/** pid, hostname and name: read once. */
function baseFields(): string {
  return (base ??= baseJson(process.pid, hostname()));
}

export function createLogger(options: LogOptions = {}): Logger {
  const level = options.level ?? process.env.LOG_LEVEL ?? 'info';
  levelValue(level); // an unknown name throws here, before any output
  const stream = options.destination ?? process.stdout;
  const pretty = options.pretty ?? (process.stdout.isTTY === true && options.destination === undefined);
  const prefix = !pretty && (options.syslogPrefix ?? (options.destination === undefined && runsUnderSystemd(options.env)));
  const colors = pretty && typeof (stream as { hasColors?: () => boolean }).hasColors === 'function' && (stream as { hasColors: () => boolean }).hasColors();
  const notice = (dropped: number, important: number): string => {
    // Warnings and errors lost are said apart: for the operator they are not the same as lost debug lines.
    const line = buildLine({
      level: important > 0 ? 50 : 40,
      time: Date.now(),
      bindings: baseFields(),
      obj: { dropped, droppedWarnOrWorse: important },
      msg: `log: ${dropped} lines dropped${important > 0 ? ` (${important} of them warnings or errors)` : ''}: the log's reader fell more than ${MAX_PENDING_BYTES / 1024} KiB behind`,
    });
    if (pretty) return formatPretty(JSON.parse(line) as Record<string, unknown>, colors);
    return prefix ? `<${syslogPriority(important > 0 ? 50 : 40)}>${line}` : line;
  };
  return new Log({ sink: sinkFor(stream, { notice }), prefix, pretty, colors }, level, baseFields());
}

/** A logger that drops everything (tests). */
export function silentLogger(): Logger {
  return new Log({ sink: undefined, prefix: false, pretty: false, colors: false }, 'silent', '');
}

export type { LevelName };
