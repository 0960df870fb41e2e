/**
 * Human texts for +CME ERROR (3GPP TS 27.007 §9.2) and +CMS ERROR (3GPP TS 27.005 §3.2.5) codes.
 * PURE: a lookup, never throws; an unknown code still yields a line that names the number.
 */

const CME: Readonly<Record<number, string>> = {
  0: 'phone failure',
  1: 'no connection to phone',
  3: 'operation not allowed',
  4: 'operation not supported',
  5: 'PH-SIM PIN required',
  10: 'SIM not inserted',
  11: 'SIM PIN required',
  12: 'SIM PUK required',
  13: 'SIM failure',
  14: 'SIM busy',
  15: 'SIM wrong',
  16: 'incorrect password',
  17: 'SIM PIN2 required',
  18: 'SIM PUK2 required',
  20: 'memory full',
  21: 'invalid index',
  22: 'not found',
  23: 'memory failure',
  24: 'text string too long',
  25: 'invalid characters in text string',
  26: 'dial string too long',
  27: 'invalid characters in dial string',
  30: 'no network service',
  31: 'network timeout',
  32: 'network not allowed, emergency calls only',
  100: 'unknown error',
  132: 'service option not supported',
  133: 'requested service option not subscribed',
  134: 'service option temporarily out of order',
};

const CMS: Readonly<Record<number, string>> = {
  300: 'ME failure',
  301: 'SMS service of ME reserved',
  302: 'operation not allowed',
  303: 'operation not supported',
  304: 'invalid PDU mode parameter',
  305: 'invalid text mode parameter',
  310: 'SIM not inserted',
  311: 'SIM PIN required',
  312: 'PH-SIM PIN required',
  313: 'SIM failure',
  314: 'SIM busy',
  315: 'SIM wrong',
  316: 'SIM PUK required',
  317: 'SIM PIN2 required',
  318: 'SIM PUK2 required',
  320: 'memory failure',
  321: 'invalid memory index',
  322: 'memory full',
  330: 'SMSC address unknown',
  331: 'no network service',
  332: 'network timeout',
  340: 'no +CNMA acknowledgement expected',
  500: 'unknown error',
};

export function describeCmeError(code: number): string {
  return CME[code] ?? `CME error ${code}`;
}

export function describeCmsError(code: number): string {
  const known = CMS[code];
  if (known !== undefined) return known;
  if (code >= 1 && code <= 127) return `network rejected the message (RP cause ${code})`;
  if (code >= 128 && code <= 255) return `SMS transfer failed (TP cause ${code})`;
  if (code >= 512) return `manufacturer-specific error ${code}`;
  return `CMS error ${code}`;
}

/** Describes a final result line such as `+CMS ERROR: 321`; other lines are returned unchanged. */
export function describeFinal(final: string | undefined): string {
  if (final === undefined) return 'no final result';
  const m = /^\+(CME|CMS) ERROR:\s*(\d+)\s*$/i.exec(final.trim());
  if (!m) return final;
  const code = Number(m[2]);
  const text = m[1]!.toUpperCase() === 'CME' ? describeCmeError(code) : describeCmsError(code);
  return `${final.trim()} (${text})`;
}
