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
  | 'CONFIG_INVALID'
  | 'WEBHOOK'
  | 'USSD';

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
    details: { command: string; final?: string; errorCode?: number; lines?: readonly string[]; cause?: unknown; hint?: string },
  ) {
    super(code, message, { cause: details.cause, hint: details.hint });
    this.command = details.command;
    this.final = details.final;
    this.errorCode = details.errorCode;
    this.lines = details.lines ?? [];
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

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
