/**
 * Unsolicited result codes among a modem's lines (PURE but for the warnings handed to `warn`): which URC a line
 * starts (none when it is the answer the command in flight waits for), when a multi-line URC is complete (its extra
 * lines, its own test, at most MAX_URC_CONTINUATION more lines), and its parsed data (a parser that throws gives
 * `parseError`, never an exception).
 */
import { errorMessage } from '../errors.js';
import type { Urc, UrcEntry } from './types.js';

/** Lines a URC that says it is incomplete may take beyond its declared ones before it is handed over as it is. */
export const MAX_URC_CONTINUATION = 32;

type Warn = (fields: Record<string, unknown>, line: string) => void;

/** A multi-line URC being collected: its table entry and its lines so far. */
export interface Collecting {
  entry: UrcEntry;
  lines: string[];
}

/** The URC a line starts, unless it is the answer the command in flight (`job`) waits for. */
export function matchUrc(
  text: string,
  table: readonly UrcEntry[],
  job: { command: string; responsePrefixes: readonly string[] } | undefined,
): UrcEntry | undefined {
  if (job && job.responsePrefixes.length > 0) {
    const upper = text.toUpperCase();
    if (job.responsePrefixes.some((p) => upper.startsWith(p) && (upper.length === p.length || upper[p.length] === ':')))
      return undefined;
  }
  for (let i = 0; i < table.length; i++) {
    const entry = table[i]!;
    entry.pattern.lastIndex = 0; // a /g pattern would otherwise remember its last match
    if (!entry.pattern.test(text)) continue;
    const cmd = job?.command.toUpperCase();
    if (cmd !== undefined && entry.responseTo?.some((p) => cmd.startsWith(p.toUpperCase()))) return undefined;
    return entry;
  }
  return undefined;
}

/** Whether the lines collected for `entry` make the whole URC. */
export function urcComplete(entry: UrcEntry, lines: readonly string[], warn: Warn): boolean {
  const extra = Math.max(0, entry.extraLines ?? 0);
  if (lines.length < 1 + extra) return false;
  const isComplete = entry.isComplete;
  if (!isComplete) return true;
  if (lines.length >= 1 + extra + MAX_URC_CONTINUATION) {
    warn(
      { urc: entry.name },
      `URC ${entry.name} still incomplete after ${lines.length} lines: handing it over as it is`,
    );
    return true;
  }
  try {
    return isComplete([...lines]);
  } catch (err) {
    warn(
      { err, urc: entry.name },
      `URC ${entry.name}: isComplete threw (${errorMessage(err)}); taking the lines so far`,
    );
    return true;
  }
}

/** The URC with its parsed data. */
export function parseUrc(entry: UrcEntry, lines: string[], warn: Warn): Urc {
  let data: Record<string, unknown> = {};
  if (entry.parse) {
    try {
      data = entry.parse([...lines]);
    } catch (err) {
      warn({ err, urc: entry.name, lines }, `URC ${entry.name}: parser failed: ${errorMessage(err)}`);
      data = { parseError: errorMessage(err) };
    }
  }
  return { name: entry.name, lines, data };
}
