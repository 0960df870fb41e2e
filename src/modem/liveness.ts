/**
 * The liveness probe's reading (PURE: answer lines in, a verdict out): one command that proves the modem answers and
 * that the settings init applied are still there, so a silent reset (CNMI, CMEE back to 0) is found by the next probe.
 * Modem.probeState runs it; this file judges the answer. Invariant: 'lost' only on positive evidence (a setting read
 * back differs); an unreadable answer is 'unknown', never 'lost' (a firmware without AT+CNMI? is not re-initialised
 * every probe).
 */

export type SettingsVerdict = 'intact' | 'lost' | 'unknown';

export interface ProbeOutcome {
  settings: SettingsVerdict;
  /** The command sent and what it showed, for the log line. */
  detail: string;
}

/** Numbers of a `+CNMI: 2,1,0,0,0` line, undefined when there is none. */
function cnmiValues(lines: readonly string[]): number[] | undefined {
  const line = lines.find((l) => /^\+CNMI:/i.test(l.trim()));
  if (!line) return undefined;
  const values = line
    .slice(line.indexOf(':') + 1)
    .split(',')
    .map((f) => f.trim());
  if (values.length === 0 || values.some((v) => !/^\d+$/.test(v))) return undefined;
  return values.map(Number);
}

/**
 * AT+CNMI? read back against the setting init applied ('2,1,0,0,0', or a shorter one such as '2,1,0,0' whose missing
 * fields are not compared). Empty fields of the applied setting are not compared either.
 */
export function judgeCnmi(lines: readonly string[], applied: string): SettingsVerdict {
  const now = cnmiValues(lines);
  if (!now) return 'unknown';
  const want = applied.split(',').map((f) => f.trim());
  for (let i = 0; i < want.length; i++) {
    const w = want[i];
    if (w === undefined || w === '') continue;
    if (now[i] === undefined) return 'unknown';
    if (now[i] !== Number(w)) return 'lost';
  }
  return 'intact';
}

/** AT+CMEE? read back against the level init set (1): a reset brings it back to 0. */
export function judgeCmee(lines: readonly string[], applied: number): SettingsVerdict {
  const line = lines.find((l) => /^\+CMEE:/i.test(l.trim()));
  const m = line && /^\+CMEE:\s*(\d)/i.exec(line.trim());
  if (!m) return 'unknown';
  return Number(m[1]) === applied ? 'intact' : 'lost';
}

/** +CMS ERROR 310-316 (SIM missing, PIN/PUK required, SIM busy/failure) on an SMS command after init: a reset re-locked or re-read the SIM. */
export function isSimResetError(final: string | undefined, code: number | undefined): boolean {
  return code !== undefined && code >= 310 && code <= 316 && /CMS/i.test(final ?? '');
}
