/**
 * UCS2 / UTF-16BE text as carried in SMS (DCS 0x08) and USSD replies (DCS 0x48/0x72...).
 *
 * Contract (PURE):
 * - `decodeUcs2Bytes` reads big-endian 16-bit code units; surrogate pairs (emoji) become one character. An odd
 *   octet count is an error (undefined), never half a character.
 * - Lone surrogates are kept by the decoder on purpose: phones split an emoji across the parts of a concatenated
 *   SMS, and the halves meet again when the parts are joined. `replaceLoneSurrogates` turns any that are still alone
 *   into U+FFFD so they are visible instead of silently producing invalid text downstream.
 */
import { bytesToHex, hexToBytes } from './gsm7.js';

/** Big-endian UTF-16 code units -> string; undefined on an odd octet count. */
export function decodeUcs2Bytes(bytes: ArrayLike<number>): string | undefined {
  if (bytes.length % 2 !== 0) return undefined;
  const units: number[] = [];
  for (let i = 0; i < bytes.length; i += 2) units.push((((bytes[i] ?? 0) & 0xff) << 8) | ((bytes[i + 1] ?? 0) & 0xff));
  let out = '';
  // Chunked to stay far below the engine's argument-count limit.
  for (let i = 0; i < units.length; i += 4096) out += String.fromCharCode(...units.slice(i, i + 4096));
  return out;
}

/** UCS2 hex -> string; undefined when the hex is malformed or not a whole number of code units. */
export function decodeUcs2Hex(hex: string): string | undefined {
  const bytes = hexToBytes(hex);
  return bytes === undefined ? undefined : decodeUcs2Bytes(bytes);
}

/** String -> big-endian UTF-16 bytes (characters outside the BMP become surrogate pairs). */
export function encodeUcs2Bytes(text: string): Uint8Array {
  const out = new Uint8Array(text.length * 2);
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    out[i * 2] = unit >> 8;
    out[i * 2 + 1] = unit & 0xff;
  }
  return out;
}

/** String -> upper-case UCS2 hex. */
export function encodeUcs2Hex(text: string): string {
  return bytesToHex(encodeUcs2Bytes(text));
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** True when `text` holds a surrogate without its partner. */
export function hasLoneSurrogate(text: string): boolean {
  LONE_SURROGATE.lastIndex = 0;
  const found = LONE_SURROGATE.test(text);
  LONE_SURROGATE.lastIndex = 0;
  return found;
}

/** Replaces every unpaired surrogate with U+FFFD (the replacement character). */
export function replaceLoneSurrogates(text: string): string {
  return text.replace(LONE_SURROGATE, '\uFFFD');
}
