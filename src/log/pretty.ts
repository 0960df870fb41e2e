/**
 * The terminal form of a log line: pino-pretty's (`HH:MM:ss.mmm LEVEL: msg {fields}`, local time, stacks below),
 * formatted in this process (no worker thread), coloured only with `colors`. Control characters from modems and SMS
 * senders never reach the terminal raw: every string of the record (keys too) has them written as `\uXXXX` before
 * pino-pretty sees it; a stack keeps its line breaks, a message does not (one record, one line).
 */

const CONTROLS = /[\u0000-\u001f\u007f-\u009f]/g;
const CONTROLS_BUT_NEWLINE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g;

function escapeControls(text: string, keepNewlines = false): string {
  return text.replace(
    keepNewlines ? CONTROLS_BUT_NEWLINE : CONTROLS,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** A copy of a parsed record with every string escaped (see the header). */
function sanitize(value: unknown, key = ''): unknown {
  if (typeof value === 'string') return escapeControls(value, key === 'stack');
  if (Array.isArray(value)) return value.map((v) => sanitize(v));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [escapeControls(k), sanitize(v, k)]));
  }
  return value;
}

/**
 * A formatter from a pino JSON line to its terminal form (with its newline). pino-pretty is imported here, on first
 * need: only a logger writing to a terminal uses it.
 */
export async function prettyFormatter(colors: boolean): Promise<(jsonLine: string) => string> {
  const { prettyFactory } = await import('pino-pretty');
  const pretty = prettyFactory({
    colorize: colors,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,name',
    singleLine: true,
  });
  return (line) => {
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      return `${escapeControls(line.trimEnd())}\n`; // not JSON (never from pino): shown as text, escaped
    }
    return pretty(sanitize(record));
  };
}
