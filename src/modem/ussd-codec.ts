/**
 * USSD text codec (3GPP TS 23.038): the decoding of +CUSD reply strings in the forms modems really send, and the
 * parsing of one +CUSD line.
 * PURE: no I/O. The GSM 7-bit alphabet, septet packing and UCS2 come from the SMS layer (src/sms/); packing a USSD
 * string is its packGsm7. Invariants: packGsm7(x) round-trips through unpackGsm7Hex; decodeUssdPayload never throws
 * and returns the string unchanged when no encoding is recognised; embedded CR/LF are kept.
 */
import { hexToBytes, packSeptets, septetsToText, udhFillBits, unpackSeptets } from '../sms/gsm7.js';
import { decodeUcs2Bytes, decodeUcs2Hex, hasLoneSurrogate } from '../sms/ucs2.js';
import { cbsDcs, type CbsDcs, type DcsAlphabet } from '../sms/dcs.js';

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

export type UssdAlphabet = DcsAlphabet | 'compressed';

/** Alphabet of a CBS/USSD data coding scheme (TS 23.038 §5; src/sms/dcs.ts cbsDcs has the whole table). */
export function dcsAlphabet(dcs: number): UssdAlphabet {
  return cbsDcs(dcs).alphabet;
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
  /** ISO 639 language the text began with (DCS 0x10 and 0x11), taken off the text. */
  language?: string;
}

const LETTER = /^[A-Za-z]$/;

/** Two GSM 7-bit letters packed in two octets with 2 zero fill bits (the language of DCS 0x11), else undefined. */
function packedLanguage(octets: Uint8Array): string | undefined {
  if (octets.length < 2 || ((octets[1] ?? 0) & 0xc0) !== 0) return undefined;
  const septets = unpackSeptets(octets.subarray(0, 2), 2);
  const text = septets === undefined ? '' : septetsToText(septets);
  return text.length === 2 && LETTER.test(text[0]!) && LETTER.test(text[1]!) ? text.toLowerCase() : undefined;
}

/** Two GSM 7-bit letters and a CR packed in three octets (3 zero fill bits), else undefined. */
function packedLanguageAndCr(octets: Uint8Array): string | undefined {
  if (octets.length < 3 || ((octets[2] ?? 0) & 0xe0) !== 0) return undefined;
  const septets = unpackSeptets(octets.subarray(0, 3), 3);
  if (septets === undefined || septets[2] !== 0x0d) return undefined;
  return packedLanguage(packSeptets(septets.slice(0, 2)));
}

/** The language of DCS 0x11 as two 8-bit letters (a modem that unpacked it), else undefined. */
function octetLanguage(octets: Uint8Array): string | undefined {
  const text = Buffer.from(octets.subarray(0, 2)).toString('latin1');
  return text.length === 2 && LETTER.test(text[0]!) && LETTER.test(text[1]!) ? text.toLowerCase() : undefined;
}

/** Octets after a user data header (group 1001), or undefined when the header does not fit. */
function afterUdh(octets: Uint8Array): { body: Uint8Array; headerOctets: number } | undefined {
  const headerOctets = 1 + (octets[0] ?? 0);
  return headerOctets <= octets.length ? { body: octets.subarray(headerOctets), headerOctets } : undefined;
}

/**
 * UCS2 hex of a UCS2 DCS: a group 1001 header skipped; for 0x11 the language taken off first (two packed GSM 7-bit
 * letters, two octets; read as two 8-bit letters too; without either the whole is read as UCS2, as a network that
 * left the language out sends it). Undefined unless it reads as printable text.
 */
function ucs2WithIndication(text: string, d: CbsDcs): DecodedUssd | undefined {
  let octets = isHex(text) && text.length % 4 === 0 ? hexToBytes(text) : undefined;
  let language: string | undefined;
  if (octets === undefined && d.languagePrefix === 'ucs2') {
    // The language as two characters before the hex (a modem that wrote it in its character set).
    const m = /^([A-Za-z]{2})[\r\n ]?((?:[0-9A-Fa-f]{4})+)$/.exec(text);
    if (m) [language, octets] = [m[1]!.toLowerCase(), hexToBytes(m[2]!)];
    // Or packed with a CR as DCS 0x10 writes it (three septets in three octets) before the UCS2.
    const withCr = m || !isHex(text) ? undefined : packedLanguageAndCr(hexToBytes(text)!);
    if (withCr !== undefined) [language, octets] = [withCr, hexToBytes(text)!.subarray(3)];
  }
  if (octets === undefined && d.udh && isHex(text)) octets = hexToBytes(text);
  if (octets === undefined) return undefined;
  if (d.udh) octets = afterUdh(octets)?.body;
  if (octets === undefined) return undefined;
  if (d.languagePrefix === 'ucs2' && language === undefined && octets.length % 2 === 0) {
    language = packedLanguage(octets) ?? octetLanguage(octets);
    if (language !== undefined) octets = octets.subarray(2);
  }
  const decoded = decodeUcs2Bytes(octets);
  if (decoded === undefined || !isPrintableUnicode(decoded)) return undefined;
  return language === undefined ? { text: decoded, form: 'ucs2-hex' } : { text: decoded, form: 'ucs2-hex', language };
}

/** Packed GSM 7-bit hex, after a user data header when the DCS says there is one (group 1001). */
function unpackWithUdh(hex: string, d: CbsDcs): string | undefined {
  if (!d.udh) return unpackGsm7Hex(hex);
  const octets = hexToBytes(hex);
  const split = octets && afterUdh(octets);
  if (split === undefined) return undefined;
  const fill = udhFillBits(split.headerOctets);
  const count = Math.floor((split.body.length * 8 - fill) / 7);
  const septets = unpackSeptets(split.body, count, fill);
  return septets === undefined ? undefined : septetsToText(septets);
}

/** DCS 0x10: the text starts with its language, two characters and one CR (a LF when lines were joined); no more. */
function takeLanguage(decoded: DecodedUssd, d: CbsDcs | undefined): DecodedUssd {
  if (d?.languagePrefix !== 'gsm7') return decoded;
  const m = /^([A-Za-z]{2})[\r\n]/.exec(decoded.text);
  if (!m) return decoded;
  return { text: decoded.text.slice(m[0].length), form: decoded.form, language: m[1]!.toLowerCase() };
}

/**
 * Decodes the string of a +CUSD reply. `packed`: the modem sends and answers USSD as packed GSM 7-bit hex.
 * The DCS is read by TS 23.038 §5 (src/sms/dcs.ts): UCS2 hex (a language indication or a user data header taken off
 * first); 8-bit data as Latin-1 when printable; packed modem + GSM dcs + hex -> unpack; dcs 15 with hex that reads
 * as UCS2 -> UCS2; dcs 0 with hex that reads as printable ASCII -> ASCII; otherwise the text as it came. A DCS 0x10
 * text loses its language prefix to `language`. Compressed data is never decoded (it is the payload as it came).
 */
export function decodeUssdPayload(
  text: string,
  dcs: number | undefined,
  options: { packed?: boolean } = {},
): DecodedUssd {
  const d = dcs === undefined ? undefined : cbsDcs(dcs);
  const alphabet = d?.alphabet ?? 'gsm7';
  if (alphabet === 'compressed') return { text, form: 'text' };
  if (alphabet === 'ucs2' && d !== undefined) {
    const decoded = ucs2WithIndication(text, d);
    if (decoded !== undefined) return decoded;
  }
  if (alphabet === '8bit' && isHex(text)) {
    const octets = d?.udh ? afterUdh(hexToBytes(text)!)?.body : hexToBytes(text);
    const decoded = octets === undefined ? '' : Buffer.from(octets).toString('latin1');
    if (decoded !== '' && isPrintableUnicode(decoded)) return { text: decoded, form: '8bit-hex' };
  }
  if (options.packed === true && alphabet === 'gsm7' && isHex(text)) {
    const decoded = unpackWithUdh(text, d ?? { alphabet });
    if (decoded !== undefined && isPrintableUnicode(decoded)) {
      return takeLanguage({ text: decoded, form: 'packed-gsm7-hex' }, d);
    }
  }
  const ucs2 = dcs === 15 ? ucs2LookingHexToText(text) : undefined;
  if (ucs2 !== undefined) return { text: ucs2, form: 'ucs2-hex' };
  if (dcs === 0 && isHex(text)) {
    const decoded = Buffer.from(text, 'hex').toString('latin1');
    if (PRINTABLE.test(decoded) && /[A-Za-z]/.test(decoded)) return { text: decoded, form: 'ascii-hex' };
  }
  return takeLanguage({ text, form: 'text' }, d);
}

/**
 * The language a DCS 0x10 / 0x11 reply named at its start, when `text` (what the profile's decoding step made of
 * `payload`) is a decoding that took it off; undefined otherwise.
 */
export function ussdLanguage(payload: string, dcs: number | undefined, text: string): string | undefined {
  if (dcs === undefined || cbsDcs(dcs).languagePrefix === undefined) return undefined;
  for (const packed of [false, true]) {
    const decoded = decodeUssdPayload(payload, dcs, { packed });
    if (decoded.text === text) return decoded.language;
  }
  return undefined;
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
  return {
    status,
    payload: unquoted[1],
    dcs: unquoted[2] === undefined ? undefined : Number(unquoted[2]),
    complete: true,
  };
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
