/**
 * The operator's raw AT line (`pulsa-bridge at`, the control socket's `at` op): sent as typed, nothing added, no retry.
 * Every response line is kept in order (a line naming a command of the line is its response, even if the URC table
 * knows it); other URCs still reach the listeners and are listed in `urcs`. A modem error is an outcome (ok false),
 * not an exception; no answer in time, a closed port or an unsendable line throw AtCommandError. `body` answers a
 * `> ` prompt; without one the prompt is cancelled with Esc.
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
      res =
        o.body !== undefined && o.cancelPrompt !== true
          ? await channel.runWithPrompt(line, o.body, options)
          : await channel.run(line, { ...options, cancelPrompt: true });
    } catch (err) {
      if (!(err instanceof AtCommandError) || err.final === undefined) throw err;
      return { command: line, lines: [...err.lines], final: err.final, ok: false, error: err.message, urcs };
    }
    return { command: line, lines: res.lines, final: res.final, ok: true, urcs };
  } finally {
    channel.off('urc', onUrc);
  }
}
