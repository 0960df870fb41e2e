/**
 * USSD text codec (3GPP TS 23.038): GSM 7-bit packing for modems that want the USSD string as packed hex, the
 * decoding of +CUSD reply strings in the forms modems really send, and the parsing of one +CUSD line.
 * PURE: no I/O. Invariants: packGsm7Hex(x) round-trips through unpackGsm7Hex; decodeUssdPayload never throws and
 * returns the string unchanged when no encoding is recognised; embedded CR/LF are kept.
 */

// GSM 7-bit default alphabet, index = septet value (0x1B is the escape to the extension table).
const GSM7_BASIC =
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ\u001bÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?' +
  '¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà';
const GSM7_EXTENSION: Readonly<Record<number, string>> = {
  0x0a: '\f', 0x14: '^', 0x28: '{', 0x29: '}', 0x2f: '\\', 0x3c: '[', 0x3d: '~', 0x3e: ']', 0x40: '|', 0x65: '€',
};
const ESC = 0x1b;
const CR = 0x0d;

const BASIC_INDEX = new Map<string, number>();
for (let i = 0; i < GSM7_BASIC.length; i++) if (i !== ESC) BASIC_INDEX.set(GSM7_BASIC[i]!, i);
const EXTENSION_INDEX = new Map<string, number>(Object.entries(GSM7_EXTENSION).map(([k, v]) => [v, Number(k)]));

/** Text -> septet values (extension characters take two). Throws RangeError on a character outside GSM 7-bit. */
export function textToSeptets(text: string): number[] {
  const out: number[] = [];
  for (const ch of text) {
    const basic = BASIC_INDEX.get(ch);
    if (basic !== undefined) { out.push(basic); continue; }
    const ext = EXTENSION_INDEX.get(ch);
    if (ext !== undefined) { out.push(ESC, ext); continue; }
    throw new RangeError(`character ${JSON.stringify(ch)} is not in the GSM 7-bit alphabet`);
  }
  return out;
}

export function septetsToText(septets: readonly number[]): string {
  let out = '';
  for (let i = 0; i < septets.length; i++) {
    const s = septets[i]! & 0x7f;
    if (s === ESC) {
      const next = septets[i + 1];
      if (next === undefined) break; // a dangling escape carries no character
      out += GSM7_EXTENSION[next] ?? GSM7_BASIC[next] ?? '';
      i++;
      continue;
    }
    out += GSM7_BASIC[s] ?? '';
  }
  return out;
}

/**
 * USSD string -> packed GSM 7-bit, upper-case hex (`*100#` -> `AA180C3602`). When the septets leave 7 spare bits in
 * the last octet (count % 8 == 7) a CR is appended so the receiver does not read a trailing '@' (TS 23.038 §6.1.2.3.1);
 * a CR that ends the text on an octet boundary gets another CR for the same reason.
 */
export function packGsm7Hex(text: string): string {
  const septets = textToSeptets(text);
  if (septets.length % 8 === 7) septets.push(CR);
  else if (septets.length > 0 && septets.length % 8 === 0 && septets[septets.length - 1] === CR) septets.push(CR);
  const octets: number[] = [];
  let acc = 0;
  let bits = 0;
  for (const s of septets) {
    acc |= s << bits;
    bits += 7;
    while (bits >= 8) {
      octets.push(acc & 0xff);
      acc >>= 8;
      bits -= 8;
    }
  }
  if (bits > 0) octets.push(acc & 0xff);
  return octets.map((o) => o.toString(16).padStart(2, '0')).join('').toUpperCase();
}

/** Packed GSM 7-bit hex -> text. Drops the CR / '@' padding septet of an octet-aligned end. Throws on non-hex. */
export function unpackGsm7Hex(hex: string): string {
  if (!isHex(hex)) throw new RangeError('packed GSM 7-bit data must be an even number of hex digits');
  const octets = hexToBytes(hex);
  const count = Math.floor((octets.length * 8) / 7);
  const septets: number[] = [];
  let acc = 0;
  let bits = 0;
  for (const o of octets) {
    acc |= o << bits;
    bits += 8;
    while (bits >= 7 && septets.length < count) {
      septets.push(acc & 0x7f);
      acc >>= 7;
      bits -= 7;
    }
  }
  // 7n octets hold 8n septets: the last one is padding when it is CR or 0 (the 7 spare bits).
  if (octets.length % 7 === 0 && septets.length > 0) {
    const last = septets[septets.length - 1];
    if (last === CR || last === 0) septets.pop();
  }
  return septetsToText(septets);
}

export function isHex(text: string): boolean {
  return text.length > 0 && text.length % 2 === 0 && /^[0-9A-Fa-f]+$/.test(text);
}

function hexToBytes(hex: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < hex.length; i += 2) out.push(parseInt(hex.slice(i, i + 2), 16));
  return out;
}

export function ucs2HexToText(hex: string): string {
  let out = '';
  for (let i = 0; i + 4 <= hex.length; i += 4) out += String.fromCharCode(parseInt(hex.slice(i, i + 4), 16));
  return out;
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
  return !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);
}

function looksLikeUcs2Hex(text: string): boolean {
  if (!isHex(text) || text.length % 4 !== 0) return false;
  let latin = 0;
  for (let i = 0; i < text.length; i += 4) if (text.startsWith('00', i)) latin++;
  return latin > 0 && isPrintableUnicode(ucs2HexToText(text));
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
    const decoded = ucs2HexToText(text);
    if (isPrintableUnicode(decoded)) return { text: decoded, form: 'ucs2-hex' };
  }
  if (alphabet === '8bit' && isHex(text)) {
    const decoded = Buffer.from(text, 'hex').toString('latin1');
    if (isPrintableUnicode(decoded)) return { text: decoded, form: '8bit-hex' };
  }
  if (options.packed === true && alphabet === 'gsm7' && isHex(text)) {
    const decoded = unpackGsm7Hex(text);
    if (isPrintableUnicode(decoded)) return { text: decoded, form: 'packed-gsm7-hex' };
  }
  if (dcs === 15 && looksLikeUcs2Hex(text)) return { text: ucs2HexToText(text), form: 'ucs2-hex' };
  if (dcs === 0 && isHex(text)) {
    const decoded = Buffer.from(text, 'hex').toString('latin1');
    if (PRINTABLE.test(decoded) && /[A-Za-z]/.test(decoded)) return { text: decoded, form: 'ascii-hex' };
  }
  return { text, form: 'text' };
}

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
  const m = /^\+CUSD:\s*(\d+)\s*(?:,(.*))?$/i.exec(line.trim());
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
  const unquoted = /^(.*?)(?:\s*,\s*(\d+))?\s*$/.exec(rest)!;
  return { status, payload: unquoted[1], dcs: unquoted[2] === undefined ? undefined : Number(unquoted[2]), complete: true };
}

/** Appends one more line to an incomplete +CUSD; the string is joined with '\n'. */
export function continueCusd(partial: CusdLine, line: string): CusdLine {
  const close = /^(.*)"\s*(?:,\s*(\d+))?\s*$/.exec(line);
  if (!close) return { ...partial, payload: `${partial.payload ?? ''}\n${line}` };
  return {
    ...partial,
    payload: `${partial.payload ?? ''}\n${close[1]}`,
    dcs: close[2] === undefined ? undefined : Number(close[2]),
    complete: true,
  };
}
