/**
 * GSM 7-bit default alphabet and extension table (3GPP TS 23.038 §6.2.1) and septet packing (§6.1.2.1), PURE.
 * septetsToText follows §6.2.1.1 for unknown or lone escapes; textToSeptets returns undefined when a character has no
 * GSM 7-bit encoding (the caller falls back to UCS2). unpackSeptets never reads past the octets given (undefined when
 * too short). packGsm7 / unpackGsm7: the packed hex form of USSD, with the CR padding rule of §6.1.2.3.1.
 */

/** Default alphabet, index = septet value. ESC (0x1B) is a placeholder here, handled separately. */
const DEFAULT_TABLE: readonly string[] = [
  '@',
  '£',
  '$',
  '¥',
  'è',
  'é',
  'ù',
  'ì',
  'ò',
  'Ç',
  '\n',
  'Ø',
  'ø',
  '\r',
  'Å',
  'å',
  'Δ',
  '_',
  'Φ',
  'Γ',
  'Λ',
  'Ω',
  'Π',
  'Ψ',
  'Σ',
  'Θ',
  'Ξ',
  '\u001b',
  'Æ',
  'æ',
  'ß',
  'É',
  ' ',
  '!',
  '"',
  '#',
  '¤',
  '%',
  '&',
  "'",
  '(',
  ')',
  '*',
  '+',
  ',',
  '-',
  '.',
  '/',
  '0',
  '1',
  '2',
  '3',
  '4',
  '5',
  '6',
  '7',
  '8',
  '9',
  ':',
  ';',
  '<',
  '=',
  '>',
  '?',
  '¡',
  'A',
  'B',
  'C',
  'D',
  'E',
  'F',
  'G',
  'H',
  'I',
  'J',
  'K',
  'L',
  'M',
  'N',
  'O',
  'P',
  'Q',
  'R',
  'S',
  'T',
  'U',
  'V',
  'W',
  'X',
  'Y',
  'Z',
  'Ä',
  'Ö',
  'Ñ',
  'Ü',
  '§',
  '¿',
  'a',
  'b',
  'c',
  'd',
  'e',
  'f',
  'g',
  'h',
  'i',
  'j',
  'k',
  'l',
  'm',
  'n',
  'o',
  'p',
  'q',
  'r',
  's',
  't',
  'u',
  'v',
  'w',
  'x',
  'y',
  'z',
  'ä',
  'ö',
  'ñ',
  'ü',
  'à',
];

export const GSM7_ESCAPE = 0x1b;

/** Extension table: septet after ESC -> character. */
const EXTENSION_TABLE: ReadonlyMap<number, string> = new Map([
  [0x0a, '\f'],
  [0x14, '^'],
  [0x28, '{'],
  [0x29, '}'],
  [0x2f, '\\'],
  [0x3c, '['],
  [0x3d, '~'],
  [0x3e, ']'],
  [0x40, '|'],
  [0x65, '€'],
]);

const CHAR_TO_DEFAULT = new Map<string, number>();
DEFAULT_TABLE.forEach((ch, code) => {
  if (code !== GSM7_ESCAPE) CHAR_TO_DEFAULT.set(ch, code);
});
const CHAR_TO_EXTENSION = new Map<string, number>();
for (const [code, ch] of EXTENSION_TABLE) CHAR_TO_EXTENSION.set(ch, code);

/** Every character of the default table (ESC excluded), in septet order. */
export const GSM7_DEFAULT_CHARS: readonly string[] = DEFAULT_TABLE.filter((_, code) => code !== GSM7_ESCAPE);
/** Every character of the extension table. */
export const GSM7_EXTENSION_CHARS: readonly string[] = [...EXTENSION_TABLE.values()];

/** Septets (0..127) -> text. */
export function septetsToText(septets: ArrayLike<number>): string {
  let out = '';
  for (let i = 0; i < septets.length; i++) {
    const s = (septets[i] ?? 0) & 0x7f;
    if (s !== GSM7_ESCAPE) {
      out += DEFAULT_TABLE[s];
      continue;
    }
    const next = i + 1 < septets.length ? (septets[i + 1] ?? 0) & 0x7f : undefined;
    if (next === undefined || next === GSM7_ESCAPE) {
      // §6.2.1.1: ESC ESC (reserved for a further extension table) is displayed as a space; a lone trailing ESC too.
      out += ' ';
      i += next === undefined ? 0 : 1;
      continue;
    }
    out += EXTENSION_TABLE.get(next) ?? DEFAULT_TABLE[next];
    i += 1;
  }
  return out;
}

/** Text -> septets, or undefined when some character is not in the GSM 7-bit default alphabet or its extension. */
export function textToSeptets(text: string): number[] | undefined {
  const out: number[] = [];
  for (const ch of text) {
    const d = CHAR_TO_DEFAULT.get(ch);
    if (d !== undefined) {
      out.push(d);
      continue;
    }
    const e = CHAR_TO_EXTENSION.get(ch);
    if (e === undefined) return undefined;
    out.push(GSM7_ESCAPE, e);
  }
  return out;
}

/** True when every character of `text` has a GSM 7-bit encoding. */
export function isGsm7Encodable(text: string): boolean {
  return textToSeptets(text) !== undefined;
}

/** Septets needed for `text` (extension characters count 2), or undefined when not encodable. */
export function gsm7SeptetLength(text: string): number | undefined {
  return textToSeptets(text)?.length;
}

/**
 * Reads `count` septets starting at bit `fillBits` of `octets` (LSB first). Undefined when the octets are too short.
 * After a UDH of n octets (UDHL octet included) the text starts on the next septet boundary: pass the octets after
 * the UDH with fillBits = (7 - (8n % 7)) % 7 (see `udhFillBits`).
 */
export function unpackSeptets(octets: ArrayLike<number>, count: number, fillBits = 0): number[] | undefined {
  if (!Number.isInteger(count) || count < 0 || !Number.isInteger(fillBits) || fillBits < 0) return undefined;
  const bitsNeeded = fillBits + count * 7;
  if (Math.ceil(bitsNeeded / 8) > octets.length) return undefined;
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const bit = fillBits + i * 7;
    const byteIndex = bit >> 3;
    const shift = bit & 7;
    let value = (octets[byteIndex] ?? 0) >> shift;
    if (shift > 1) value |= (octets[byteIndex + 1] ?? 0) << (8 - shift);
    out.push(value & 0x7f);
  }
  return out;
}

/** Fill bits between a UDH of `udhOctets` octets (UDHL octet included) and the first septet of text (TS 23.040 §9.2.3.24). */
export function udhFillBits(udhOctets: number): number {
  return (7 - ((udhOctets * 8) % 7)) % 7;
}

/** Packs septets LSB first, starting after `fillBits` zero bits. Unused high bits of the last octet are zero. */
export function packSeptets(septets: ArrayLike<number>, fillBits = 0): Uint8Array {
  const totalBits = fillBits + septets.length * 7;
  const out = new Uint8Array(Math.ceil(totalBits / 8));
  for (let i = 0; i < septets.length; i++) {
    const s = (septets[i] ?? 0) & 0x7f;
    const bit = fillBits + i * 7;
    const byteIndex = bit >> 3;
    const shift = bit & 7;
    out[byteIndex] = (out[byteIndex] ?? 0) | ((s << shift) & 0xff);
    if (shift > 1) out[byteIndex + 1] = (out[byteIndex + 1] ?? 0) | (s >> (8 - shift));
  }
  return out;
}

/** Decodes `count` septets of GSM 7-bit text; undefined when the octets are too short. */
export function decodeGsm7(octets: ArrayLike<number>, count: number, fillBits = 0): string | undefined {
  const septets = unpackSeptets(octets, count, fillBits);
  return septets === undefined ? undefined : septetsToText(septets);
}

const CR = 0x0d;

/**
 * Text -> packed GSM 7-bit hex (upper case), as Huawei modems want USSD strings. Throws RangeError when a character
 * has no GSM 7-bit encoding. §6.1.2.3.1: when 7 bits of the last octet would be spare (septet count = 8n-1), a CR
 * fills them, so the receiver cannot mistake them for '@'; when the text itself ends with CR on an octet boundary
 * (septet count = 8n), a second CR is added so the receiver does not drop the wanted one.
 */
export function packGsm7(text: string): string {
  const septets = textToSeptets(text);
  if (septets === undefined)
    throw new RangeError(`packGsm7: text has characters outside the GSM 7-bit alphabet: ${JSON.stringify(text)}`);
  if (septets.length % 8 === 7) septets.push(CR);
  else if (septets.length > 0 && septets.length % 8 === 0 && septets[septets.length - 1] === CR) septets.push(CR);
  return bytesToHex(packSeptets(septets));
}

/**
 * Packed GSM 7-bit hex -> text. Undefined when the hex is malformed (odd length, non-hex). Reads floor(8*octets/7)
 * septets; when the octet count is a multiple of 7 the last septet fills the final 7 bits, and a CR there is the
 * §6.1.2.3.1 padding and is dropped.
 */
export function unpackGsm7(hex: string): string | undefined {
  const bytes = hexToBytes(hex);
  if (bytes === undefined) return undefined;
  const count = Math.floor((bytes.length * 8) / 7);
  const septets = unpackSeptets(bytes, count);
  if (septets === undefined) return undefined;
  if (bytes.length % 7 === 0 && septets.length > 0 && septets[septets.length - 1] === CR) septets.pop();
  return septetsToText(septets);
}

/** Hex string -> bytes; undefined on odd length or a non-hex character. */
export function hexToBytes(hex: string): Uint8Array | undefined {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) return undefined;
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/** Bytes -> upper-case hex. */
export function bytesToHex(bytes: ArrayLike<number>): string {
  let out = '';
  for (let i = 0; i < bytes.length; i++) out += ((bytes[i] ?? 0) & 0xff).toString(16).padStart(2, '0');
  return out.toUpperCase();
}
