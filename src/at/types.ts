/**
 * Contracts of the AT layer: framer events, URC table entries, the channel a modem drives.
 * One command in flight; URCs are split off before a response is matched; every failure names the command.
 */
import type { EventEmitter } from 'node:events';

/** What the pure framer yields from the byte stream. */
export type FrameEvent =
  | { type: 'line'; text: string }
  | { type: 'prompt' } // the `> ` of AT+CMGS / AT+CMGW
  | { type: 'garbage'; bytes: Buffer; reason: string };

/** A parsed unsolicited result code. `lines` holds every raw line of it (two for +CMT). */
export interface Urc {
  /** Stable name from the URC table, e.g. 'cmti', 'cmt', 'cds', 'cdsi', 'cusd', 'ring', 'boot', 'sms-ready', 'rssi'. */
  name: string;
  lines: string[];
  /** Fields parsed by the table entry (e.g. { storage: 'SM', index: 3 } for +CMTI). */
  data: Record<string, unknown>;
}

/** One row of the ordered URC table. A profile's rows come before the generic ones. */
export interface UrcEntry {
  name: string;
  /** Matches the first line of the URC. */
  pattern: RegExp;
  /** Number of lines that follow the first and belong to it (1 for +CMT / +CDS: the PDU line). Default 0. */
  extraLines?: number;
  /**
   * For URCs of unknown length (a +CUSD text with embedded CR/LF): the channel keeps adding following lines while
   * this returns false (at most 32 lines; a final result code such as OK ends it early). Checked after extraLines.
   * Blank lines inside the text are not kept (the framer drops empty lines).
   */
  isComplete?: (lines: string[]) => boolean;
  /**
   * When the command in flight starts with one of these prefixes (case-insensitive, e.g. 'AT+CPIN'), a matching line
   * is that command's response, not a URC. Example: `+CPIN: READY` answers AT+CPIN? but is a boot banner otherwise.
   */
  responseTo?: string[];
  parse?: (lines: string[]) => Record<string, unknown>;
  /** One line for humans. */
  description?: string;
}

/** A final result code row. */
export interface FinalResultEntry {
  pattern: RegExp;
  ok: boolean;
  /** Extracts the numeric CME/CMS code when there is one. */
  code?: (line: string) => number | undefined;
  /** Only while a command starting with this (case-insensitive, e.g. 'AT+CPIN?') is in flight. */
  command?: string;
  /** The line is also the answer: kept in the response's lines (Wavecom `+CPIN: READY` with no OK after it). */
  isAnswer?: boolean;
  /** The device that sends it (documentation: docs/modems.md). */
  device?: string;
  /** Where that is written down (a standard, or a public capture). */
  source?: string;
}

export interface AtResponse {
  command: string;
  /** Intermediate lines (information response), URCs and echo removed. */
  lines: string[];
  /** Final result line, e.g. 'OK'. */
  final: string;
}

export interface AtRunOptions {
  /** Default from the channel (e.g. 5 s); long for AT+CMGS, AT+COPS=?, AT+CUSD. */
  timeoutMs?: number;
  /**
   * For answers that stream many lines (AT+CMGL of a full SIM at a low baud rate): the command also times out when
   * no line of its answer arrived for this long (a modem gone silent is noticed after idleTimeoutMs, not timeoutMs);
   * timeoutMs stays the bound of the whole answer. Never shorter than the channel's default timeout.
   */
  idleTimeoutMs?: number;
  /**
   * Raw mode (an operator's line): lines starting with one of these prefixes (`+CSQ`, `+CREG`; case-insensitive,
   * followed by `:` or the line end) are this command's response, never a URC, whatever the URC table says.
   */
  responsePrefixes?: readonly string[];
  /** Raw mode: a `> ` prompt during run() is expected and answered with ESC at once (the final result still ends it). */
  cancelPrompt?: boolean;
}

export interface AtChannelEvents {
  urc: [urc: Urc];
  /** Bytes the framer could not make sense of: logged and skipped. */
  garbage: [bytes: Buffer, reason: string];
  /** A line that arrived with no command in flight and matched no URC entry. */
  unexpected: [line: string];
  /** The link closed; `disconnected` when the device vanished. Every pending command has been rejected. */
  close: [info: { disconnected: boolean; error?: Error }];
}

export interface AtChannel extends EventEmitter<AtChannelEvents> {
  /** Sends `command` + CR; resolves on a success final result, rejects AtCommandError on error/timeout/closed port. */
  run(command: string, options?: AtRunOptions): Promise<AtResponse>;
  /**
   * Two-step commands (AT+CMGS=<len>): sends `command`, waits for the `> ` prompt, sends `payload` + Ctrl-Z,
   * then waits for the final result.
   */
  runWithPrompt(command: string, payload: string, options?: AtRunOptions): Promise<AtResponse>;
  /** Replace the URC table (profile entries first). */
  setUrcTable(entries: readonly UrcEntry[]): void;
  /** Extra final-result rows from a profile (e.g. Huawei `COMMAND NOT SUPPORT`). */
  addFinalResults(entries: readonly FinalResultEntry[]): void;
  readonly isOpen: boolean;
  close(): Promise<void>;
}
