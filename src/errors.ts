/**
 * The few error classes of pulsa-bridge. Each has a stable `code` (for logs, JSON output and tests) and keeps the
 * underlying `cause`. Messages are one line an operator can act on; `hint` says what to try.
 */
export type ErrorCode =
  | 'PORT_NOT_FOUND'
  | 'PORT_PERMISSION'
  | 'PORT_BUSY'
  | 'PORT_CLOSED'
  | 'PORT_IO'
  | 'AT_TIMEOUT'
  | 'AT_ERROR'
  | 'MODEM_SILENT'
  | 'SIM_NOT_READY'
  | 'PDU_INVALID'
  | 'SPOOL_IO'
  | 'SPOOL_CORRUPT'
  | 'SPOOL_LOCKED'
  | 'SPOOL_NOT_FOUND'
  | 'SPOOL_INVALID_ID'
  | 'SPOOL_WRONG_AREA'
  | 'CONFIG_INVALID'
  | 'WEBHOOK'
  | 'USSD'
  | 'METRICS_LISTEN'
  | 'UNSAFE_PATH';

export class BridgeError extends Error {
  readonly code: ErrorCode;
  readonly hint: string | undefined;
  constructor(code: ErrorCode, message: string, options: { cause?: unknown; hint?: string } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'BridgeError';
    this.code = code;
    this.hint = options.hint;
  }
}

/** Serial-port problems: missing device, permission, busy, closed/vanished port. */
export class PortError extends BridgeError {
  override name = 'PortError';
}

/** An AT command that failed: final result ERROR/+CME/+CMS/..., or no final result in time (code AT_TIMEOUT). */
export class AtCommandError extends BridgeError {
  override name = 'AtCommandError';
  readonly command: string;
  /** The final result line as the modem sent it, e.g. `+CMS ERROR: 321`; undefined on timeout. */
  readonly final: string | undefined;
  /** Numeric CME/CMS code when the final result carried one. */
  readonly errorCode: number | undefined;
  /** Intermediate lines received before the failure (the modem's own words). */
  readonly lines: readonly string[];
  constructor(
    code: 'AT_ERROR' | 'AT_TIMEOUT',
    message: string,
    details: {
      command: string;
      final?: string;
      errorCode?: number;
      lines?: readonly string[];
      cause?: unknown;
      hint?: string;
    },
  ) {
    super(code, message, { cause: details.cause, hint: details.hint });
    this.command = details.command;
    this.final = details.final;
    this.errorCode = details.errorCode;
    this.lines = details.lines ?? [];
  }
}

export type SpoolErrorReason = 'not-found' | 'invalid-id' | 'wrong-area' | 'io' | 'corrupt' | 'locked';

/** The stable code of each spool failure reason (logs, `queue ... --json`). */
export const SPOOL_ERROR_CODES = {
  'not-found': 'SPOOL_NOT_FOUND',
  'invalid-id': 'SPOOL_INVALID_ID',
  'wrong-area': 'SPOOL_WRONG_AREA',
  io: 'SPOOL_IO',
  corrupt: 'SPOOL_CORRUPT',
  locked: 'SPOOL_LOCKED',
} as const satisfies Record<SpoolErrorReason, ErrorCode>;

/**
 * A spool failure. `reason` (and its `code`) tell an operator's mistake (an id that is mistyped, unknown, or in another
 * area) from a spool in use by another daemon, an unreadable record file, and a failing disk.
 */
export class SpoolError extends BridgeError {
  override name = 'SpoolError';
  readonly reason: SpoolErrorReason;
  constructor(reason: SpoolErrorReason, message: string, options: { cause?: unknown; hint?: string } = {}) {
    super(SPOOL_ERROR_CODES[reason], message, options);
    this.reason = reason;
  }
}

export class ConfigError extends BridgeError {
  override name = 'ConfigError';
  /** Every problem found, each `path: what was expected` (just `what was expected` for the whole file). */
  readonly problems: readonly string[];
  /** The config file, when the problems come from one. */
  readonly file: string | undefined;
  constructor(problems: readonly string[], options: { file?: string } = {}) {
    super('CONFIG_INVALID', `invalid config${options.file ? ` ${options.file}` : ''}: ${problems.join('; ')}`);
    this.problems = problems;
    this.file = options.file;
  }
}

/**
 * A directory or key file the daemon must trust (spool, state directory, the control socket's directory) is not
 * private to it: a symlink, owned by another user, or writable by others. `run` exits as for a bad config (78): only
 * the operator can fix it; `hint` is the one line that does.
 */
export class UnsafePathError extends BridgeError {
  override name = 'UnsafePathError';
  constructor(message: string, hint: string) {
    super('UNSAFE_PATH', message, { hint });
  }
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
