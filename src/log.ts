/**
 * Logging: pino, JSON to stdout (journald keeps it), pretty on a TTY. Secrets are redacted by path.
 * Under systemd (JOURNAL_STREAM or INVOCATION_ID set) each JSON line on stdout starts with `<N>`, the syslog priority
 * of its pino level (sd-daemon(3) SyslogLevelPrefix), so `journalctl -p warning` shows warnings and worse only; the
 * rest of the line is the same JSON. Elsewhere the lines are plain JSON.
 * Pure modules do not log; I/O modules take a Logger so tests can pass a silent one.
 */
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

export type { Logger };

export const REDACT_PATHS = [
  'apiKey',
  '*.apiKey',
  'pin',
  '*.pin',
  'hmacSecret',
  '*.hmacSecret',
  'headers.authorization',
  'headers.Authorization',
  '*.headers.authorization',
  '*.headers.Authorization',
  'config.webhook.hmacSecret',
  'config.webhook.headers',
];

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
 * syslog(3) priority of a pino level number: fatal -> 2 crit, error -> 3 err, warn -> 4 warning, info -> 6 info,
 * debug and trace -> 7 debug. Custom levels fall into the band of the standard level below them.
 */
export function syslogPriority(level: number): number {
  if (level >= 60) return 2;
  if (level >= 50) return 3;
  if (level >= 40) return 4;
  if (level >= 30) return 6;
  return 7;
}

/**
 * Whether this process was started by systemd with its output going to the journal: JOURNAL_STREAM is set when
 * stdout or stderr is connected to journald, INVOCATION_ID for every unit systemd runs (systemd.exec(5)).
 */
export function runsUnderSystemd(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.JOURNAL_STREAM) || Boolean(env.INVOCATION_ID);
}

/**
 * A pino destination that writes `<priority>` before each line. It asks pino for the line's metadata
 * (Symbol.for('pino.metadata')): pino sets `lastLevel` just before every write, so no line is parsed again.
 */
export function syslogPrefixStream(inner: DestinationStream & { flush?: (cb?: (err?: Error | null) => void) => void; flushSync?: () => void }): DestinationStream {
  const stream = {
    [Symbol.for('pino.metadata')]: true,
    lastLevel: 30,
    write(line: string): void {
      inner.write(`<${syslogPriority(stream.lastLevel)}>${line}`);
    },
    flush(cb?: (err?: Error | null) => void): void {
      if (typeof inner.flush === 'function') inner.flush(cb);
      else cb?.();
    },
    flushSync(): void {
      inner.flushSync?.();
    },
  };
  return stream;
}

export function createLogger(options: LogOptions = {}): Logger {
  const base: LoggerOptions = {
    name: 'pulsa-bridge',
    level: options.level ?? process.env.LOG_LEVEL ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
  };
  const pretty = options.pretty ?? (process.stdout.isTTY === true && options.destination === undefined);
  if (pretty) {
    return pino({ ...base, transport: { target: 'pino-pretty', options: { colorize: true, singleLine: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,name' } } });
  }
  const prefix = options.syslogPrefix ?? (options.destination === undefined && runsUnderSystemd(options.env));
  if (prefix) {
    // Same stdout destination pino builds by default (asynchronous, flushed on exit), behind the prefix.
    const inner = options.destination ?? pino.destination({ dest: 1, sync: false });
    return pino(base, syslogPrefixStream(inner as never));
  }
  if (options.destination) return pino(base, options.destination as never);
  return pino(base);
}

/** A logger that drops everything (tests). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
