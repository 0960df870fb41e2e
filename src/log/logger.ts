/**
 * The Logger interface every module that logs takes (pino's calls: `log.info(msg)`, `log.info(obj, msg?)`); its own
 * module so that log.ts (pino) and log/silent.ts (no pino) both implement it without importing each other.
 */

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
