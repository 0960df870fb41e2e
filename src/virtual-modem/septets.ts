/**
 * The virtual modem's own GSM 7-bit alphabet and septet packing (3GPP TS 23.038 §6.1.2.1, §6.2.1, §6.2.1.1).
 *
 * Contract (PURE): written from the standard separately from src/sms/gsm7.ts on purpose, so PDUs the simulator builds
 * check the bridge's decoder against a second, independent encoder (a table error on one side shows up in tests).
 * - `toSeptets(text)` returns undefined when a character has no GSM 7-bit encoding; extension characters are ESC + code.
 * - `pack(septets, fillBits)` writes septet i at bit (fillBits + 7i), LSB first; `unpack` is its inverse.
 * - `packUssdHex` / `unpackUssdHex`: the packed hex form of USSD strings with the CR padding rule of §6.1.2.3.1.
 */

/** Default alphabet in septet order, 16 per row; ESC (0x1B) is a placeholder. */
const DEFAULT_ALPHABET: readonly string[] = [
  ...'@£$¥èéùìòÇ\nØø\rÅå',
  ...'Δ_ΦΓΛΩΠΨΣΘΞ\u001bÆæßÉ',
  ...' !"#¤%&\'()*+,-./',
  ...'0123456789:;<=>?',
  ...'¡ABCDEFGHIJKLMNO',
  ...'PQRSTUVWXYZÄÖÑÜ§',
  ...'¿abcdefghijklmno',
  ...'pqrstuvwxyzäöñüà',
];

const ESC = 0x1b;
const CR = 0x0d;

/** Extension table (§6.2.1.1): character -> code following ESC. */
const EXTENSION: ReadonlyMap<string, number> = new Map([
  ['\f', 0x0a],
  ['^', 0x14],
  ['{', 0x28],
  ['}', 0x29],
  ['\\', 0x2f],
  ['[', 0x3c],
  ['~', 0x3d],
  [']', 0x3e],
  ['|', 0x40],
  ['€', 0x65],
]);
const EXTENSION_BY_CODE: ReadonlyMap<number, string> = new Map([...EXTENSION].map(([ch, code]) => [code, ch]));

const DEFAULT_BY_CHAR: ReadonlyMap<string, number> = new Map(
  DEFAULT_ALPHABET.map((ch, code) => [ch, code] as const).filter(([, code]) => code !== ESC),
);

if (DEFAULT_ALPHABET.length !== 128)
  throw new Error(`septets.ts: default alphabet has ${DEFAULT_ALPHABET.length} entries, expected 128`);

/** Septets of one character (1 or 2), or undefined when it has no GSM 7-bit encoding. */
export function charToSeptets(ch: string): number[] | undefined {
  const d = DEFAULT_BY_CHAR.get(ch);
  if (d !== undefined) return [d];
  const e = EXTENSION.get(ch);
  return e === undefined ? undefined : [ESC, e];
}

/** Text -> septets; undefined when some character is not in the default alphabet or its extension. */
export function toSeptets(text: string): number[] | undefined {
  const out: number[] = [];
  for (const ch of text) {
    const s = charToSeptets(ch);
    if (!s) return undefined;
    out.push(...s);
  }
  return out;
}

/** Septets -> text (ESC + unknown code shows the default-table character, as §6.2.1.1 asks). */
export function fromSeptets(septets: readonly number[]): string {
  let out = '';
  for (let i = 0; i < septets.length; i++) {
    const s = (septets[i] ?? 0) & 0x7f;
    if (s === ESC && i + 1 < septets.length) {
      const next = (septets[i + 1] ?? 0) & 0x7f;
      out += EXTENSION_BY_CODE.get(next) ?? DEFAULT_ALPHABET[next] ?? '';
      i++;
      continue;
    }
    out += s === ESC ? ' ' : DEFAULT_ALPHABET[s];
  }
  return out;
}

/** Packs septets LSB first after `fillBits` zero bits. */
export function pack(septets: readonly number[], fillBits = 0): number[] {
  const out: number[] = new Array<number>(Math.ceil((fillBits + septets.length * 7) / 8)).fill(0);
  septets.forEach((septet, i) => {
    const bit = fillBits + 7 * i;
    const byte = bit >> 3;
    const shift = bit & 7;
    out[byte] = (out[byte] ?? 0) | ((septet << shift) & 0xff);
    if (shift > 1) out[byte + 1] = (out[byte + 1] ?? 0) | (septet >> (8 - shift));
  });
  return out;
}

/** Reads `count` septets starting at bit `fillBits`; undefined when the octets are too short. */
export function unpack(octets: readonly number[], count: number, fillBits = 0): number[] | undefined {
  if (Math.ceil((fillBits + count * 7) / 8) > octets.length) return undefined;
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const bit = fillBits + 7 * i;
    const byte = bit >> 3;
    const shift = bit & 7;
    let v = (octets[byte] ?? 0) >> shift;
    if (shift > 1) v |= (octets[byte + 1] ?? 0) << (8 - shift);
    out.push(v & 0x7f);
  }
  return out;
}

export function toHex(bytes: readonly number[]): string {
  return bytes
    .map((b) => (b & 0xff).toString(16).padStart(2, '0'))
    .join('')
    .toUpperCase();
}

/** Hex -> bytes; undefined when malformed. */
export function fromHex(hex: string): number[] | undefined {
  if (hex.length % 2 !== 0 || !/^[0-9A-Fa-f]*$/.test(hex)) return undefined;
  const out: number[] = [];
  for (let i = 0; i < hex.length; i += 2) out.push(parseInt(hex.slice(i, i + 2), 16));
  return out;
}

/** Text -> packed GSM 7-bit hex as Huawei modems carry USSD; a CR fills 7 spare bits (§6.1.2.3.1). Throws on non-GSM text. */
export function packUssdHex(text: string): string {
  const septets = toSeptets(text);
  if (!septets)
    throw new RangeError(`packUssdHex: ${JSON.stringify(text)} has characters outside the GSM 7-bit alphabet`);
  if (septets.length % 8 === 7) septets.push(CR);
  return toHex(pack(septets));
}

/** Packed GSM 7-bit hex -> text; undefined when the hex is malformed. A trailing CR padding septet is dropped. */
export function unpackUssdHex(hex: string): string | undefined {
  const bytes = fromHex(hex);
  if (!bytes) return undefined;
  const septets = unpack(bytes, Math.floor((bytes.length * 8) / 7));
  if (!septets) return undefined;
  if (bytes.length % 7 === 0 && septets[septets.length - 1] === CR) septets.pop();
  return fromSeptets(septets);
}
