/**
 * USSD text codec (3GPP TS 23.038): the decoding of +CUSD reply strings in the forms modems really send, and the
 * parsing of one +CUSD line.
 * PURE: no I/O. The GSM 7-bit alphabet, septet packing and UCS2 come from the SMS layer (src/sms/); packing a USSD
 * string is its packGsm7. Invariants: packGsm7(x) round-trips through unpackGsm7Hex; decodeUssdPayload never throws
 * and returns the string unchanged when no encoding is recognised; embedded CR/LF are kept.
 */
import { hexToBytes, septetsToText, unpackSeptets } from '../sms/gsm7.js';
import { decodeUcs2Hex, hasLoneSurrogate } from '../sms/ucs2.js';

const CR = 0x0d;

/** Non-empty hex of whole octets (a +CUSD string, a PDU). */
export function isHex(text: string): boolean {
  return text.length > 0 && text.length % 2 === 0 && /^[0-9A-Fa-f]+$/.test(text);
}

/**
 * Packed GSM 7-bit hex of a USSD reply -> text. Unlike the SMS layer's unpackGsm7, a final septet of 0 in 7n octets
 * is dropped too, not shown as '@': Huawei modems fill the 7 spare bits with zeros instead of the CR of
 * TS 23.038 §6.1.2.3.1. Throws RangeError on empty, odd-length or non-hex input.
 */
export function unpackGsm7Hex(hex: string): string {
  const octets = isHex(hex) ? hexToBytes(hex) : undefined;
  if (octets === undefined) throw new RangeError('packed GSM 7-bit data must be an even number of hex digits');
  const septets = unpackSeptets(octets, Math.floor((octets.length * 8) / 7)) ?? [];
  if (octets.length % 7 === 0 && septets.length > 0) {
    const last = septets[septets.length - 1];
    if (last === CR || last === 0) septets.pop();
  }
  return septetsToText(septets);
}

export type UssdAlphabet = 'gsm7' | '8bit' | 'ucs2';

/** Alphabet of a CBS/USSD data coding scheme (TS 23.038 §5). */
export function dcsAlphabet(dcs: number): UssdAlphabet {
  const group = dcs >> 4;
  if (dcs === 0x11) return 'ucs2'; // UCS2 preceded by a language indication
  if (group <= 0x3) return 'gsm7';
  if ((group & 0xc) === 0x4 || group === 0x9) {
    const a = (dcs >> 2) & 0x3;
    return a === 1 ? '8bit' : a === 2 ? 'ucs2' : 'gsm7';
  }
  if (group === 0xf) return dcs & 0x04 ? '8bit' : 'gsm7';
  return 'gsm7';
}

const PRINTABLE = /^[\x20-\x7e\r\n\t]*$/;

function isPrintableUnicode(text: string): boolean {
  // No C0/C1 controls except CR/LF/TAB, no lone surrogates, no non-characters.
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]/.test(text)) return false;
  return !hasLoneSurrogate(text);
}

/** The text of hex that reads as UCS2 (some 00xx units, all printable), else undefined. */
function ucs2LookingHexToText(text: string): string | undefined {
  if (!isHex(text) || text.length % 4 !== 0) return undefined;
  let latin = 0;
  for (let i = 0; i < text.length; i += 4) if (text.startsWith('00', i)) latin++;
  const decoded = latin > 0 ? decodeUcs2Hex(text) : undefined;
  return decoded !== undefined && isPrintableUnicode(decoded) ? decoded : undefined;
}

export interface DecodedUssd {
  text: string;
  /** How the string was read. */
  form: 'text' | 'ucs2-hex' | 'packed-gsm7-hex' | 'ascii-hex' | '8bit-hex';
}

/**
 * Decodes the string of a +CUSD reply. `packed`: the modem sends and answers USSD as packed GSM 7-bit hex.
 * Order: UCS2 dcs (72, 0x11, ...) -> UCS2 hex; packed modem + GSM dcs + hex -> unpack; dcs 15 with hex that reads as
 * UCS2 -> UCS2; dcs 0 with hex that reads as printable ASCII -> ASCII; otherwise the text as it came.
 */
export function decodeUssdPayload(text: string, dcs: number | undefined, options: { packed?: boolean } = {}): DecodedUssd {
  const alphabet = dcs === undefined ? 'gsm7' : dcsAlphabet(dcs);
  if (alphabet === 'ucs2' && isHex(text) && text.length % 4 === 0) {
    const decoded = decodeUcs2Hex(text);
    if (decoded !== undefined && isPrintableUnicode(decoded)) return { text: decoded, form: 'ucs2-hex' };
  }
  if (alphabet === '8bit' && isHex(text)) {
    const decoded = Buffer.from(text, 'hex').toString('latin1');
    if (isPrintableUnicode(decoded)) return { text: decoded, form: '8bit-hex' };
  }
  if (options.packed === true && alphabet === 'gsm7' && isHex(text)) {
    const decoded = unpackGsm7Hex(text);
    if (isPrintableUnicode(decoded)) return { text: decoded, form: 'packed-gsm7-hex' };
  }
  const ucs2 = dcs === 15 ? ucs2LookingHexToText(text) : undefined;
  if (ucs2 !== undefined) return { text: ucs2, form: 'ucs2-hex' };
  if (dcs === 0 && isHex(text)) {
    const decoded = Buffer.from(text, 'hex').toString('latin1');
    if (PRINTABLE.test(decoded) && /[A-Za-z]/.test(decoded)) return { text: decoded, form: 'ascii-hex' };
  }
  return { text, form: 'text' };
}

/**
 * True when `text` (what a decoding step made of `payload`) is the payload left as it came and that is not readable:
 * data in an 8-bit or UCS2 DCS that no rule could decode, or hex that reads as nothing (at least 4 octets, digits and
 * letters A-F mixed: a menu of plain words or a number alone is never that). The CLI shows it raw with its DCS.
 */
export function isUndecodedUssd(payload: string, dcs: number | undefined, text: string): boolean {
  if (text !== payload || payload === '') return false;
  if (dcs !== undefined && dcsAlphabet(dcs) !== 'gsm7') return true;
  return /^(?:[0-9A-Fa-f]{2}){4,}$/.test(payload) && /[0-9]/.test(payload) && /[A-Fa-f]/.test(payload);
}

const ASCII_BLANKS_AT_ENDS = /^[ \t\r\n]+|[ \t\r\n]+$/g;

/** One +CUSD line as it arrived. `complete` is false when the quoted string did not close on this line. */
export interface CusdLine {
  status: number;
  /** The string between the quotes (or up to the line end when it did not close), undefined for `+CUSD: 4`. */
  payload: string | undefined;
  dcs: number | undefined;
  complete: boolean;
}

/**
 * Parses `+CUSD: <m>[,<str>[,<dcs>]]`. The string may hold CR/LF: then only its first line arrives here
 * (complete=false) and the caller appends the following lines with continueCusd().
 */
export function parseCusdLine(line: string): CusdLine | undefined {
  // Only ASCII blanks are trimmed and `.` spans every character (flag s): a U+2028 inside the text, or a Unicode
  // space at the end of its first line, is text (found by test/fuzz, ussd/cusd-line-round-trip).
  const m = /^\+CUSD:\s*(\d+)\s*(?:,(.*))?$/is.exec(line.replace(ASCII_BLANKS_AT_ENDS, ''));
  if (!m) return undefined;
  const status = Number(m[1]);
  const rest = m[2]?.trimStart();
  if (rest === undefined || rest === '') return { status, payload: undefined, dcs: undefined, complete: true };
  if (rest.startsWith('"')) {
    const close = rest.lastIndexOf('"');
    if (close === 0) return { status, payload: rest.slice(1), dcs: undefined, complete: false };
    const tail = /^\s*,\s*(\d+)/.exec(rest.slice(close + 1));
    return { status, payload: rest.slice(1, close), dcs: tail ? Number(tail[1]) : undefined, complete: true };
  }
  // Unquoted string (seen from some firmware): everything up to a trailing ",<dcs>".
  const unquoted = /^(.*?)(?:\s*,\s*(\d+))?\s*$/s.exec(rest)!;
  return { status, payload: unquoted[1], dcs: unquoted[2] === undefined ? undefined : Number(unquoted[2]), complete: true };
}

/** Appends one more line to an incomplete +CUSD; the string is joined with '\n'. */
export function continueCusd(partial: CusdLine, line: string): CusdLine {
  const close = /^(.*)"\s*(?:,\s*(\d+))?\s*$/s.exec(line);
  if (!close) return { ...partial, payload: `${partial.payload ?? ''}\n${line}` };
  return {
    ...partial,
    payload: `${partial.payload ?? ''}\n${close[1]}`,
    dcs: close[2] === undefined ? undefined : Number(close[2]),
    complete: true,
  };
}
