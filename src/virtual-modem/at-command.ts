/**
 * The virtual modem's command plumbing, pure: Outcome, Needs, the table entry shape, +CME / +CMS error texts
 * (following AT+CMEE), splitting a command line, and rendering an Outcome to response bytes. dispatch() runs the first
 * matching entry after its needs are checked; no match answers the family's UNSUPPORTED; a throwing handler is a
 * simulator bug, reported to onHandlerError and answered ERROR. No I/O and no timers here.
 */

export type ErrorSpec = { cme: number } | { cms: number } | 'ERROR' | 'UNSUPPORTED';

export interface Outcome {
  lines?: string[];
  error?: ErrorSpec;
  /** AT+CMGS: show the prompt and read a PDU of this many TPDU octets. */
  prompt?: number;
  /** URCs the family sends between the information lines and the final result. */
  beforeFinal?: string[];
  /** URCs sent right after the final result. */
  afterFinal?: string[];
  /** The answer goes out without a final result (a quirk of some firmware: Wavecom's AT+CPIN?). */
  noFinal?: boolean;
  /** Runs after the final result went out (e.g. reboot after AT+CFUN=1,1). */
  then?: () => void;
}

export interface Needs {
  /** SIM must be unlocked; the error family to answer with. */
  sim?: 'cme' | 'cms';
  /** Registered on a network (and radio on). */
  network?: 'cme' | 'cms';
  /** SMS subsystem ready (SIM800 answers ERROR before `SMS Ready`). */
  sms?: boolean;
}

export interface CommandEntry {
  pattern: RegExp;
  needs?: Needs;
  run: (m: RegExpMatchArray) => Outcome;
}

export const OK: Outcome = {};

const CME_TEXT: Readonly<Record<number, string>> = {
  3: 'operation not allowed',
  4: 'operation not supported',
  10: 'SIM not inserted',
  11: 'SIM PIN required',
  12: 'SIM PUK required',
  13: 'SIM failure',
  16: 'incorrect password',
  30: 'no network service',
  50: 'incorrect parameters',
  100: 'unknown',
};
const CMS_TEXT: Readonly<Record<number, string>> = {
  302: 'operation not allowed',
  303: 'operation not supported',
  304: 'invalid PDU mode parameter',
  310: 'SIM not inserted',
  311: 'SIM PIN required',
  316: 'SIM PUK required',
  321: 'invalid memory index',
  322: 'memory full',
  331: 'no network service',
  340: 'no +CNMA acknowledgement expected',
  500: 'unknown error',
};

/** Splits `+A;+B="x;y"` on semicolons outside quotes. */
export function splitCommands(body: string): string[] {
  const out: string[] = [];
  let current = '';
  let quoted = false;
  for (const ch of body) {
    if (ch === '"') quoted = !quoted;
    if (ch === ';' && !quoted) {
      out.push(current.trim());
      current = '';
    } else current += ch;
  }
  out.push(current.trim());
  return out.filter((c, i) => c !== '' || i === 0);
}

/** The final result line for an error (or OK), per the AT+CMEE setting and the family's unknown-command answer. */
export function finalText(error: ErrorSpec | undefined, cmee: number, unknownCommand: string): string {
  if (error === undefined) return 'OK';
  if (error === 'ERROR') return 'ERROR';
  if (error === 'UNSUPPORTED') return unknownCommand;
  if ('cme' in error) {
    if (cmee === 0) return 'ERROR';
    return `+CME ERROR: ${cmee === 2 ? (CME_TEXT[error.cme] ?? String(error.cme)) : error.cme}`;
  }
  return `+CMS ERROR: ${cmee === 2 ? (CMS_TEXT[error.cms] ?? String(error.cms)) : error.cms}`;
}

/** The bytes of a response: information lines, URCs before the final result, an optional noise URC, the final result, URCs after it. */
export function renderResponse(outcome: Outcome, final: string, noise: () => string | undefined): string {
  const lines = outcome.lines ?? [];
  let out = lines.length > 0 ? `\r\n${lines.join('\r\n')}\r\n` : '';
  for (const u of outcome.beforeFinal ?? []) out += `\r\n${u}\r\n`;
  if (lines.length > 0) {
    const line = noise();
    if (line) out += `\r\n${line}\r\n`;
  }
  out += `\r\n${final}\r\n`;
  for (const u of outcome.afterFinal ?? []) out += `\r\n${u}\r\n`;
  return out;
}

/** Runs the first entry whose pattern matches `command`, after `checkNeeds` let it; a throwing handler answers ERROR. */
export function dispatch(
  table: readonly CommandEntry[],
  command: string,
  checkNeeds: (needs: Needs | undefined) => ErrorSpec | undefined,
  onHandlerError: (error: Error) => void,
): Outcome {
  for (const entry of table) {
    const m = command.match(entry.pattern);
    if (!m) continue;
    const blocked = checkNeeds(entry.needs);
    if (blocked) return { error: blocked };
    try {
      return entry.run(m);
    } catch (err) {
      onHandlerError(err instanceof Error ? err : new Error(String(err)));
      return { error: 'ERROR' };
    }
  }
  return { error: 'UNSUPPORTED' };
}
