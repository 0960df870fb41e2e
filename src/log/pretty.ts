/**
 * PURE: the terminal form of a log line (what pino-pretty showed before, without its worker thread):
 * `HH:MM:ss.mmm LEVEL msg key=value ...` in local time, the level coloured when `colors` is on. It formats the record
 * parsed back from the JSON line, so it shows exactly what the JSON carries (redacted, errors serialised); pid,
 * hostname and name are left out. A serialised error shows as `err=<message>`, its stack indented below the line.
 */
import { localClock } from '../time-format.js';
import { levelName } from './format.js';

const COLOR: Record<string, string> = { trace: '90', debug: '36', info: '32', warn: '33', error: '31', fatal: '35' };
const HIDDEN = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg']);


function isSerializedError(v: unknown): v is { type?: unknown; message: string; stack?: unknown } {
  return v !== null && typeof v === 'object' && typeof (v as { message?: unknown }).message === 'string' && typeof (v as { stack?: unknown }).stack === 'string';
}

// Control characters (ESC, BEL, CR...) never reach the terminal raw: values come from modems and SMS senders, and an
// escape sequence in one could retitle, clear or rewrite the operator's terminal.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]/g;

/**
 * A value as it reads after `key=`: bare when it is a plain word, JSON otherwise. JSON.stringify escapes only
 * U+0000-U+001F: DEL and the C1 range (U+0080-U+009F, U+009B is a one-byte CSI) are escaped here too.
 */
function show(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) && !CONTROL.test(v) ? v : escapeControls(JSON.stringify(v));
  return escapeControls(JSON.stringify(v) ?? String(v));
}

/** The message as text, its control characters written as \uXXXX (line breaks too: one record, one line). */
function escapeControls(text: string): string {
  return text.replace(CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** One record (a parsed JSON line) as a terminal line, with its newline; stacks follow on indented lines. */
export function formatPretty(record: Record<string, unknown>, colors: boolean): string {
  const level = typeof record.level === 'number' ? record.level : 30;
  const name = levelName(level).toUpperCase().padEnd(5);
  const parts = [typeof record.time === 'number' ? localClock(record.time, true) : '--:--:--.---', colors ? `\x1b[${COLOR[levelName(level)]}m${name}\x1b[39m` : name];
  if (record.msg !== undefined) parts.push(typeof record.msg === 'string' ? escapeControls(record.msg) : show(record.msg));
  const stacks: string[] = [];
  for (const [key, value] of Object.entries(record)) {
    if (HIDDEN.has(key)) continue;
    if (isSerializedError(value)) {
      parts.push(`${escapeControls(key)}=${show(value.message)}`);
      const { type: _t, message: _m, stack, ...rest } = value as Record<string, unknown>;
      for (const [k, v] of Object.entries(rest)) parts.push(`${escapeControls(key)}.${escapeControls(k)}=${show(v)}`);
      stacks.push(String(stack).split('\n').map((l) => `    ${escapeControls(l)}`).join('\n'));
    } else {
      parts.push(`${escapeControls(key)}=${show(value)}`);
    }
  }
  const line = parts.join(' ');
  return `${stacks.length > 0 ? [line, ...stacks].join('\n') : line}\n`;
}
