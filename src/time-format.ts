/**
 * Times as the operator reads them (PURE: no I/O; the zone is the process's, i.e. the Pi's local zone from TZ or
 * /etc/localtime). Every human-readable time the CLI prints goes through here, so they are all in one zone, with the
 * offset shown: `2026-11-24 19:04:51 +07:00`. JSON output and the spool keep ISO 8601 UTC (machine-readable).
 * Logs: JSON lines carry epoch ms (zone-free); pretty logs show local time (localClock with ms, via log/pretty.ts).
 * An absent or unparseable input gives '-'.
 */

const pad = (n: number, w = 2) => String(Math.trunc(Math.abs(n))).padStart(w, '0');

/** `+07:00` for a zone 7 h ahead of UTC (getTimezoneOffset() is -420 there). */
export function zoneOffset(d: Date): string {
  const ahead = -d.getTimezoneOffset();
  return `${ahead < 0 ? '-' : '+'}${pad(ahead / 60)}:${pad(ahead % 60)}`;
}

function toDate(value: string | number | Date | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const d = value instanceof Date ? value : new Date(value);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

/** `YYYY-MM-DD HH:MM:SS +HH:MM` in the local zone. */
export function localTime(value: string | number | Date | undefined): string {
  const d = toDate(value);
  if (!d) return '-';
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())} ${zoneOffset(d)}`;
}

/**
 * `HH:MM:SS` in the local zone (a table column; the zone is the one every other time is shown in); `HH:MM:SS.mmm`
 * with `ms` (the pretty log lines).
 */
export function localClock(value: string | number | Date | undefined, ms = false): string {
  const d = toDate(value);
  if (!d) return '-';
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}${ms ? `.${pad(d.getMilliseconds(), 3)}` : ''}`;
}

/** `YYYY-MM-DD`, today's date in the local zone for `d` (balance checks count the days left from it). */
export function localDate(d: Date): string {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

/** Whole days from `today` to `activeUntil` (both `YYYY-MM-DD`); negative once it has passed. */
export function daysUntil(activeUntil: string, today: string): number {
  const a = Date.parse(`${activeUntil}T00:00:00Z`);
  const b = Date.parse(`${today}T00:00:00Z`);
  return Math.round((a - b) / 86_400_000);
}

/** Whether a string is an ISO 8601 date-time (what the spool stores), so a record's field can be shown as local time. */
export function looksLikeIsoTime(s: string): boolean {
  return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/.test(s);
}
