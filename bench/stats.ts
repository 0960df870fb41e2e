/**
 * PURE helpers of the benchmarks: order statistics, the serial bytes one SMS costs on the wire, and plain-text
 * tables. No I/O, no timers.
 */

export interface Summary {
  n: number;
  min: number;
  median: number;
  p95: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentile (p in 0-100) of already sorted values; NaN for none. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export function summarize(values: readonly number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  const sum = sorted.reduce((s, v) => s + v, 0);
  return {
    n: sorted.length,
    min: sorted[0] ?? Number.NaN,
    median:
      sorted.length === 0
        ? Number.NaN
        : sorted.length % 2 === 1
          ? sorted[(sorted.length - 1) / 2]!
          : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2,
    p95: percentile(sorted, 95),
    max: sorted[sorted.length - 1] ?? Number.NaN,
    mean: sorted.length === 0 ? Number.NaN : sum / sorted.length,
  };
}

export interface WireStep {
  what: string;
  /** Direction on the wire: modem -> bridge or bridge -> modem. */
  dir: 'from modem' | 'to modem';
  bytes: number;
  /** On the path from +CMTI to the POST (the spool write needs the read; re-check and delete run after it). */
  beforePost: boolean;
}

/**
 * The bytes one single-part SMS costs on the serial line with echo off (ATE0), as the receive path exchanges them:
 * +CMTI, AT+CMGR=<i> and its answer, the AT+CMGR=<i> re-check before deleting (the slot is then REC READ), AT+CMGD=<i>.
 */
export function smsExchange(sms: { index: number; pduHex: string; tpduLength: number }): WireStep[] {
  const answer = (stat: number) => `\r\n+CMGR: ${stat},,${sms.tpduLength}\r\n${sms.pduHex}\r\n\r\nOK\r\n`;
  const steps: Array<[string, WireStep['dir'], string, boolean]> = [
    ['+CMTI', 'from modem', `\r\n+CMTI: "SM",${sms.index}\r\n`, true],
    ['AT+CMGR', 'to modem', `AT+CMGR=${sms.index}\r`, true],
    ['+CMGR answer', 'from modem', answer(0), true],
    ['AT+CMGR re-check', 'to modem', `AT+CMGR=${sms.index}\r`, false],
    ['+CMGR re-check answer', 'from modem', answer(1), false],
    ['AT+CMGD', 'to modem', `AT+CMGD=${sms.index}\r`, false],
    ['AT+CMGD answer', 'from modem', '\r\nOK\r\n', false],
  ];
  return steps.map(([what, dir, text, beforePost]) => ({ what, dir, bytes: text.length, beforePost }));
}

/** Time to send `bytes` on an asynchronous serial line: 10 bits per byte (start, 8 data, stop). */
export function wireTimeMs(bytes: number, baud: number): number {
  return (bytes * 10 * 1000) / baud;
}

/** Fixed-width plain-text table; numbers are shown as given (format them before). */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

/** ms with a sensible number of decimals. */
export function ms(v: number | undefined): string {
  if (v === undefined || Number.isNaN(v)) return '-';
  return v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0);
}
