/**
 * SMS-SUBMIT encoder for AT+CMGS in PDU mode (3GPP TS 23.040 §9.2.2.2), PURE. SCA '00' (the SIM's service centre);
 * tpduLength is what AT+CMGS=<length> wants. GSM 7-bit when every character fits, else UCS2; long texts become
 * concatenated parts that never split an escape or surrogate pair. Invalid input throws BridgeError 'PDU_INVALID'.
 */
import { BridgeError } from '../errors.js';
import { bytesToHex, GSM7_ESCAPE, packSeptets, textToSeptets, udhFillBits } from './gsm7.js';
import { encodeUcs2Bytes } from './ucs2.js';

export interface SubmitOptions {
  /** Concatenation reference (0..255). Pass a counter per destination; default: derived from `to` and `text`. */
  reference?: number;
  /** Ask the network for a status report (TP-SRR). */
  statusReport?: boolean;
  /** TP-VP relative format octet (0..255, e.g. 0xA7 = 24 h); omitted by default (network default validity). */
  validityRelative?: number;
}

export interface SubmitPdu {
  pdu: string;
  tpduLength: number;
}

const SINGLE_GSM7 = 160;
const PART_GSM7 = 153;
const SINGLE_UCS2 = 70;
const PART_UCS2 = 67;

function invalid(message: string): never {
  throw new BridgeError('PDU_INVALID', message);
}

function encodeAddress(to: string): number[] {
  const trimmed = to.trim();
  const international = trimmed.startsWith('+');
  const digits = international ? trimmed.slice(1) : trimmed;
  if (!/^[0-9*#]{1,20}$/.test(digits))
    invalid(`destination ${JSON.stringify(to)} is not a dialable number (digits, * and #, at most 20)`);
  const nibbles = [...digits].map((d) => (d === '*' ? 0xa : d === '#' ? 0xb : Number(d)));
  if (nibbles.length % 2 === 1) nibbles.push(0xf);
  const out = [digits.length, international ? 0x91 : 0x81];
  for (let i = 0; i < nibbles.length; i += 2) out.push((nibbles[i] ?? 0) | ((nibbles[i + 1] ?? 0) << 4));
  return out;
}

/** Splits septets into chunks of at most `size`, never ending a chunk on an ESC. */
function chunkSeptets(septets: number[], size: number): number[][] {
  const out: number[][] = [];
  let i = 0;
  while (i < septets.length) {
    let end = Math.min(i + size, septets.length);
    if (end < septets.length && septets[end - 1] === GSM7_ESCAPE) end -= 1;
    out.push(septets.slice(i, end));
    i = end;
  }
  return out;
}

/** Splits UTF-16 text into chunks of at most `size` units, never between the halves of a surrogate pair. */
function chunkUnits(text: string, size: number): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    let end = Math.min(i + size, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
    out.push(text.slice(i, end));
    i = end;
  }
  return out;
}

function defaultReference(to: string, text: string): number {
  let h = 0;
  for (const ch of `${to}\u0000${text}`) h = (h * 31 + (ch.codePointAt(0) ?? 0)) >>> 0;
  return h & 0xff;
}

export function encodeSubmit(to: string, text: string, opts: SubmitOptions = {}): SubmitPdu[] {
  const address = encodeAddress(to);
  const reference = opts.reference ?? defaultReference(to, text);
  if (!Number.isInteger(reference) || reference < 0 || reference > 255)
    invalid(`concat reference ${reference} is not 0..255`);
  const vp = opts.validityRelative;
  if (vp !== undefined && (!Number.isInteger(vp) || vp < 0 || vp > 255)) invalid(`validity ${vp} is not an octet`);

  const septets = textToSeptets(text);
  type Body = { udhi: boolean; udl: number; ud: Uint8Array };
  const bodies: Body[] = [];
  const udh = (total: number, seq: number): number[] => [0x05, 0x00, 0x03, reference, total, seq];

  if (septets !== undefined) {
    if (septets.length <= SINGLE_GSM7) {
      bodies.push({ udhi: false, udl: septets.length, ud: packSeptets(septets) });
    } else {
      const chunks = chunkSeptets(septets, PART_GSM7);
      if (chunks.length > 255) invalid(`text needs ${chunks.length} parts, at most 255 are possible`);
      chunks.forEach((chunk, k) => {
        const header = udh(chunks.length, k + 1);
        const packed = packSeptets(chunk, udhFillBits(header.length));
        bodies.push({
          udhi: true,
          udl: Math.ceil((header.length * 8) / 7) + chunk.length,
          ud: Uint8Array.from([...header, ...packed]),
        });
      });
    }
  } else if (text.length <= SINGLE_UCS2) {
    const ud = encodeUcs2Bytes(text);
    bodies.push({ udhi: false, udl: ud.length, ud });
  } else {
    const chunks = chunkUnits(text, PART_UCS2);
    if (chunks.length > 255) invalid(`text needs ${chunks.length} parts, at most 255 are possible`);
    chunks.forEach((chunk, k) => {
      const ud = Uint8Array.from([...udh(chunks.length, k + 1), ...encodeUcs2Bytes(chunk)]);
      bodies.push({ udhi: true, udl: ud.length, ud });
    });
  }

  const dcs = septets !== undefined ? 0x00 : 0x08;
  return bodies.map((b) => {
    // First octet: MTI 01 (SUBMIT), VPF 10 when a relative validity is given, SRR bit 5, UDHI bit 6.
    const fo = 0x01 | (vp !== undefined ? 0x10 : 0) | (opts.statusReport ? 0x20 : 0) | (b.udhi ? 0x40 : 0);
    const tpdu = [fo, 0x00 /* TP-MR: set by the phone */, ...address, 0x00 /* PID */, dcs];
    if (vp !== undefined) tpdu.push(vp);
    tpdu.push(b.udl, ...b.ud);
    return { pdu: `00${bytesToHex(tpdu)}`, tpduLength: tpdu.length };
  });
}
