/**
 * PURE: what the journal needs of a JSON log line that pino does not do.
 * - syslogPriority(): the syslog(3) priority of a pino level (sd-daemon(3) SyslogLevelPrefix `<N>`), so `journalctl -p
 *   warning` shows warnings and worse: fatal 2 crit, error 3 err, warn 4 warning, info 6 info, debug and trace 7 debug;
 *   a custom level falls into the band of the standard level below it.
 * - capLine(): journald splits a stream line longer than its LineMax (48 KiB by default) into entries that are not
 *   JSON; a longer line is rebuilt with its long strings cut, and if that is not enough, with level, time, the base
 *   fields and the message only (and `logError` saying so).
 * - levelOf(): the level number at the head of a pino line (`{"level":N,`), without parsing the rest.
 */

/**
 * Longest line (UTF-8 bytes, newline included) written as pino built it: under journald's LineMax with room for the
 * `<N>` prefix.
 */
export const MAX_LINE_BYTES = 48 * 1024 - 64;
/** Where a string is cut when its line is over MAX_LINE_BYTES. */
export const CUT_STRING_CHARS = 4 * 1024;

export function syslogPriority(level: number): number {
  if (level >= 60) return 2;
  if (level >= 50) return 3;
  if (level >= 40) return 4;
  if (level >= 30) return 6;
  return 7;
}

/** The level of a pino JSON line (30 when the line does not start with one). */
export function levelOf(line: string): number {
  const m = /^\{"level":(\d+)/.exec(line);
  return m ? Number(m[1]) : 30;
}

/** Whether a line fits (a UTF-8 char is at most 3 bytes per UTF-16 unit: most lines need no count). */
function fits(line: string): boolean {
  return line.length * 3 <= MAX_LINE_BYTES || Buffer.byteLength(line, 'utf8') <= MAX_LINE_BYTES;
}

function cutStrings(v: unknown): unknown {
  if (typeof v === 'string')
    return v.length > CUT_STRING_CHARS
      ? `${v.slice(0, CUT_STRING_CHARS)}...[${v.length - CUT_STRING_CHARS} more chars]`
      : v;
  if (Array.isArray(v)) return v.map(cutStrings);
  if (v !== null && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, cutStrings(x)]));
  return v;
}

/** `line` (a JSON line with its newline) itself when it fits MAX_LINE_BYTES, else a shorter one (see the header). */
export function capLine(line: string): string {
  if (fits(line)) return line;
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return `${JSON.stringify({ level: levelOf(line), time: Date.now(), logError: 'a log line over the limit could not be read back; left out' })}\n`;
  }
  const cut = `${JSON.stringify(cutStrings(record))}\n`;
  if (fits(cut)) return cut;
  const { level, time, pid, hostname, name } = record;
  const last = `${JSON.stringify({ level, time, pid, hostname, name, msg: cutStrings(record.msg), logError: 'fields left out: the line could not be written whole' })}\n`;
  return fits(last)
    ? last
    : `${JSON.stringify({ level, time, logError: 'fields and message left out: the line could not be written whole' })}\n`;
}
