/**
 * Logging: pino, JSON to stdout (journald keeps it), pretty on a TTY. Secrets are redacted by path.
 * Pure modules do not log; I/O modules take a Logger so tests can pass a silent one.
 */
import { pino, type Logger, type LoggerOptions } from 'pino';

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
  if (options.destination) return pino(base, options.destination as never);
  return pino(base);
}

/** A logger that drops everything (tests). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
