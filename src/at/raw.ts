/**
 * The operator's raw AT line (`pulsa-bridge at`, the control socket's `at` op): sent as typed, and nothing else
 * (no set-up commands before it, no AT added, no retry).
 * Contract and invariants:
 * - Every response line is kept in order, none taken for a URC: a line whose prefix names any command of the line
 *   (`AT+CSQ;+CREG?` -> `+CSQ`, `+CREG`) is the response even where the URC table knows it. Other URCs that arrive
 *   while the line runs still reach every channel listener (the daemon's receiver) and are also listed in `urcs`.
 * - A modem error (ERROR, +CME ERROR: n, ...) is an outcome, not an exception: ok false, the modem's words, and the
 *   error message naming the command and explaining its code in `error` (`AT+CIMI failed: +CME ERROR: 10 (SIM not
 *   inserted)`). No answer in time, a closed port or an unsendable line throw AtCommandError.
 * - `body` answers a `> ` prompt (AT+CMGS): sent followed by Ctrl-Z. Without a body, a prompt is left with Esc
 *   (`cancelPrompt` says the operator chose that; it is also what happens to a prompt nobody asked for).
 * The result has the shape of AtOutcome (src/ops/modem-ops.ts); the AT layer does not import the operations.
 */
import { AtCommandError } from '../errors.js';
import type { AtChannel, AtResponse, Urc } from './types.js';

export interface RawAtOptions {
  timeoutMs?: number;
  /** The text or PDU for a `> ` prompt; Ctrl-Z is added. */
  body?: string;
  /** Leave a `> ` prompt with Esc (the default when there is no body). */
  cancelPrompt?: boolean;
}

/** The outcome of an operator's raw AT line (ModemOps' AtOutcome, src/ops/modem-ops.ts, is this type). */
export interface RawAtOutcome {
  command: string;
  /** Every response line, in order (for `AT+CSQ;+CREG?` both answers), none taken for a URC. */
  lines: string[];
  /** The final result line: OK, ERROR, +CME ERROR: n, +CMS ERROR: n, NO CARRIER, ... */
  final: string;
  ok: boolean;
  /** Set when the modem answered with an error: the explanation (e.g. "SIM PIN required"). */
  error?: string;
  /** URCs that arrived while the command ran (shown to the operator, still handled by the daemon). */
  urcs: string[];
}

/**
 * The response prefixes a line implies: the extended commands at its start and after each `;` outside quotes
 * (`AT+CSQ;+CREG?` -> ['+CSQ', '+CREG'], `AT^SYSINFO` -> ['^SYSINFO']). Basic commands (ATI, ATE0) have none.
 */
export function responsePrefixesOf(line: string): string[] {
  const s = line.trim();
  if (!/^AT/i.test(s)) return [];
  const out = new Set<string>();
  let quoted = false;
  let segmentStart = 2;
  for (let i = 2; i <= s.length; i++) {
    const c = s[i];
    if (c === '"') quoted = !quoted;
    if (i === s.length || (c === ';' && !quoted)) {
      const m = /^\s*(?:&?[A-Za-z]\d*)*\s*([+^$%][A-Za-z][A-Za-z0-9_]*)/.exec(s.slice(segmentStart, i));
      if (m && !/^[Dd]/.test(s.slice(segmentStart, i).trim())) out.add(m[1]!.toUpperCase());
      segmentStart = i + 1;
    }
  }
  return [...out];
}

export async function runRawAt(channel: AtChannel, line: string, o: RawAtOptions = {}): Promise<RawAtOutcome> {
  const urcs: string[] = [];
  const onUrc = (urc: Urc): void => void urcs.push(...urc.lines);
  channel.on('urc', onUrc);
  const options = {
    ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
    responsePrefixes: responsePrefixesOf(line),
  };
  try {
    let res: AtResponse;
    try {
      res = o.body !== undefined && o.cancelPrompt !== true ? await channel.runWithPrompt(line, o.body, options) : await channel.run(line, { ...options, cancelPrompt: true });
    } catch (err) {
      if (!(err instanceof AtCommandError) || err.final === undefined) throw err;
      return { command: line, lines: [...err.lines], final: err.final, ok: false, error: err.message, urcs };
    }
    return { command: line, lines: res.lines, final: res.final, ok: true, urcs };
  } finally {
    channel.off('urc', onUrc);
  }
}
