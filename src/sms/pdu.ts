/**
 * SMS-DELIVER decoder from 3GPP TS 23.040 §9.2 and TS 23.038 §4 (PURE). decodeDeliver never throws and never returns a
 * wrong text: anything it cannot decode with certainty is `{ ok: false, reason }` naming the field and octet offset;
 * harmless oddities come back as `warnings`. Octets after the declared user data are returned as `extraOctets` for a
 * stored SMS (read twice), but make a direct delivery (+CMT, cannot be re-read) fail: on a noisy line they look like a
 * changed UDL. node-pdu is not used: it validates almost nothing.
 * Layout: SCA-len [SCA-TOA SCA...] | FO | OA-len OA-TOA OA... | PID | DCS | SCTS(7) | UDL | UD...
 */
import type { ConcatInfo, DecodedSms, SmsEncoding, StoredPdu } from './types.js';
import { bytesToHex, septetsToText, udhFillBits, unpackSeptets } from './gsm7.js';
import { decodeUcs2Bytes, hasLoneSurrogate, replaceLoneSurrogates } from './ucs2.js';
import { octetHex, smsDcs, type SmsDcs } from './dcs.js';

export type DecodeResult = { ok: true; sms: DecodedSms; warnings: string[] } | { ok: false; reason: string };

/** Reason given for an SMS-STATUS-REPORT (MTI 2); callers may treat it as "not a message" rather than a fault. */
export const STATUS_REPORT_REASON = 'status report';

class PduFailure extends Error {}

function fail(reason: string): never {
  throw new PduFailure(reason);
}

/** Cursor over the PDU octets; every read names its field so a truncation says where it happened. */
class Reader {
  pos = 0;
  constructor(readonly bytes: Uint8Array) {}
  get remaining(): number {
    return this.bytes.length - this.pos;
  }
  u8(field: string): number {
    if (this.remaining < 1) fail(`truncated at ${field} (octet ${this.pos}, PDU has ${this.bytes.length} octets)`);
    const v = this.bytes[this.pos] ?? 0;
    this.pos += 1;
    return v;
  }
  take(n: number, field: string): Uint8Array {
    if (this.remaining < n)
      fail(`truncated in ${field}: needs ${n} octets at octet ${this.pos}, only ${this.remaining} left`);
    const out = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
}

const BCD_DIGITS = '0123456789*#abc';

/** Semi-octet digits, low nibble first; 0xF is only allowed as the fill nibble after the last digit. */
function decodeBcd(octets: Uint8Array, digitCount: number, field: string): string {
  let out = '';
  for (let i = 0; i < digitCount; i++) {
    const byte = octets[i >> 1] ?? 0;
    const nibble = i % 2 === 0 ? byte & 0x0f : byte >> 4;
    if (nibble === 0x0f) fail(`${field}: filler nibble F inside the digits (digit ${i + 1} of ${digitCount})`);
    out += BCD_DIGITS[nibble];
  }
  return out;
}

type OriginatorType = DecodedSms['originatorType'];

function tonToType(ton: number): OriginatorType {
  switch (ton) {
    case 0:
      return 'unknown';
    case 1:
      return 'international';
    case 2:
      return 'national';
    case 5:
      return 'alphanumeric';
    default:
      return 'other';
  }
}

function readOriginator(r: Reader): { originator: string; originatorType: OriginatorType } {
  const len = r.u8('TP-OA length');
  if (len > 20) fail(`TP-OA length ${len} exceeds 20 semi-octets (octet ${r.pos - 1})`);
  const toa = r.u8('TP-OA type-of-address');
  const value = r.take(Math.ceil(len / 2), 'TP-OA digits');
  const type = tonToType((toa >> 4) & 0x07);
  if (type === 'alphanumeric') {
    // §9.1.2.5: GSM 7-bit packed; the length counts useful semi-octets, so floor(4*len/7) characters.
    const septets = unpackSeptets(value, Math.floor((len * 4) / 7));
    if (septets === undefined) fail('TP-OA alphanumeric value shorter than its length');
    return { originator: septetsToText(septets), originatorType: type };
  }
  const digits = decodeBcd(value, len, 'TP-OA');
  return { originator: type === 'international' ? `+${digits}` : digits, originatorType: type };
}

function readSmsc(r: Reader, warnings: string[]): string | undefined {
  const len = r.u8('SMSC length');
  if (len === 0) return undefined;
  if (len > 11) fail(`SMSC length ${len} exceeds 11 octets`);
  const field = r.take(len, 'SMSC address');
  const toa = field[0] ?? 0;
  const value = field.subarray(1);
  let digitCount = value.length * 2;
  if (digitCount > 0 && (value[value.length - 1] ?? 0) >> 4 === 0x0f) digitCount -= 1;
  try {
    const digits = decodeBcd(value, digitCount, 'SMSC');
    return ((toa >> 4) & 0x07) === 1 ? `+${digits}` : digits;
  } catch (err) {
    if (!(err instanceof PduFailure)) throw err;
    // The SMSC address does not affect the message; keep decoding and say so.
    warnings.push(`SMSC address unreadable (${err.message}); left empty`);
    return undefined;
  }
}

/** TS 23.038 §4 via smsDcs. Compressed text cannot be decoded: failure, naming it. */
function interpretDcs(dcs: number): SmsDcs & { alphabet: SmsEncoding } {
  const d = smsDcs(dcs);
  if (d.alphabet === 'compressed') fail(`DCS ${octetHex(dcs)}: compressed text (TS 23.042) is not supported`);
  return d as SmsDcs & { alphabet: SmsEncoding };
}

function bcdPair(byte: number, field: string): number {
  const lo = byte & 0x0f;
  const hi = byte >> 4;
  if (lo > 9 || hi > 9)
    fail(`TP-SCTS ${field}: octet ${byte.toString(16).padStart(2, '0').toUpperCase()} is not two decimal digits`);
  return lo * 10 + hi; // semi-octets are swapped: the low nibble is the tens digit
}

const pad2 = (n: number): string => String(n).padStart(2, '0');

function readTimestamp(r: Reader): { iso: string; ms: number } {
  const t = r.take(7, 'TP-SCTS');
  const year = 2000 + bcdPair(t[0] ?? 0, 'year');
  const month = bcdPair(t[1] ?? 0, 'month');
  const day = bcdPair(t[2] ?? 0, 'day');
  const hour = bcdPair(t[3] ?? 0, 'hour');
  const minute = bcdPair(t[4] ?? 0, 'minute');
  const second = bcdPair(t[5] ?? 0, 'second');
  const tz = t[6] ?? 0;
  // §9.2.3.11: quarters of an hour; bit 3 (of the first semi-octet, which is the low nibble) is the sign.
  const negative = (tz & 0x08) !== 0;
  const quarters = bcdPair(tz & 0xf7, 'time zone');
  const local = Date.UTC(year, month - 1, day, hour, minute, second);
  const check = new Date(local);
  if (check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day || hour > 23 || minute > 59 || second > 59) {
    fail(
      `TP-SCTS: invalid date/time ${year}-${pad2(month)}-${pad2(day)} ${pad2(hour)}:${pad2(minute)}:${pad2(second)}`,
    );
  }
  const offsetMinutes = (negative ? -1 : 1) * quarters * 15;
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  const zone = `${sign}${pad2(Math.floor(abs / 60))}:${pad2(abs % 60)}`;
  const iso = `${year}-${pad2(month)}-${pad2(day)}T${pad2(hour)}:${pad2(minute)}:${pad2(second)}${zone}`;
  return { iso, ms: local - offsetMinutes * 60_000 };
}

type Waiting = NonNullable<DecodedSms['waiting']>;

interface Udh {
  concat: ConcatInfo | undefined;
  /** Special SMS Message Indication (IEI 0x01, TS 23.040 §9.2.3.24.2): the first, with `store` from bit 7. */
  waiting: Waiting | undefined;
  /** UDH octets including the UDHL octet. */
  octets: number;
}

/** Parses the UDH at the start of `ud`; `udOctets` is how many UD octets exist. */
function parseUdh(ud: Uint8Array, warnings: string[]): Udh {
  const udhl = ud[0] ?? 0;
  const octets = 1 + udhl;
  if (octets > ud.length) fail(`UDL too small for the UDH: UDH needs ${octets} octets, user data has ${ud.length}`);
  let concat: ConcatInfo | undefined;
  let waiting: Waiting | undefined;
  let i = 1;
  while (i < octets) {
    const iei = ud[i] ?? 0;
    if (i + 1 >= octets)
      fail(`UDH element 0x${iei.toString(16).padStart(2, '0')} at UDH octet ${i} has no length octet`);
    const iel = ud[i + 1] ?? 0;
    if (i + 2 + iel > octets) {
      fail(
        `UDH element 0x${iei.toString(16).padStart(2, '0')} length ${iel} overruns the UDH (UDHL ${udhl}) at UDH octet ${i}`,
      );
    }
    const data = ud.subarray(i + 2, i + 2 + iel);
    if (iei === 0x24 || iei === 0x25)
      fail(`UDH element 0x${iei.toString(16)}: national language shift tables are not supported`);
    if (iei === 0x01 && iel === 2 && waiting === undefined) {
      // Octet 1: bit 7 store (0 = discard after updating the indication), bits 1-0 the basic type; octet 2 the count.
      const type = data[0] ?? 0;
      const kinds = ['voicemail', 'fax', 'email', 'other'] as const;
      waiting = { kind: kinds[type & 0x03]!, active: (data[1] ?? 0) > 0, store: (type & 0x80) !== 0 };
    }
    if (iei === 0x00 || iei === 0x08) {
      const found = readConcat(iei, data, warnings);
      if (found !== undefined) {
        if (concat === undefined) concat = found;
        else warnings.push('more than one concatenation element in the UDH; the first one is used');
      }
    }
    i += 2 + iel;
  }
  return { concat, waiting, octets };
}

function readConcat(iei: number, data: Uint8Array, warnings: string[]): ConcatInfo | undefined {
  const bits: 8 | 16 = iei === 0x00 ? 8 : 16;
  const want = bits === 8 ? 3 : 4;
  if (data.length !== want) {
    warnings.push(
      `concatenation element (${bits}-bit reference) has length ${data.length}, expected ${want}; ignored, treated as a single SMS`,
    );
    return undefined;
  }
  const reference = bits === 8 ? (data[0] ?? 0) : ((data[0] ?? 0) << 8) | (data[1] ?? 0);
  const total = data[want - 2] ?? 0;
  const sequence = data[want - 1] ?? 0;
  if (total === 0 || sequence === 0 || sequence > total) {
    warnings.push(
      `concatenation element with total ${total}, sequence ${sequence} is invalid; ignored, treated as a single SMS`,
    );
    return undefined;
  }
  return { reference, referenceBits: bits, total, sequence };
}

function decode(stored: StoredPdu, warnings: string[]): DecodedSms {
  const raw = typeof stored.pdu === 'string' ? stored.pdu.trim() : '';
  if (raw.length === 0) fail('empty PDU');
  const bad = /[^0-9a-fA-F]/.exec(raw);
  if (bad) fail(`non-hex character ${JSON.stringify(bad[0])} at position ${bad.index}`);
  if (raw.length % 2 !== 0) fail(`odd number of hex digits (${raw.length})`);
  if (!Number.isInteger(stored.length) || stored.length < 0) fail(`invalid <length> ${String(stored.length)}`);
  const pdu = raw.toUpperCase();
  const bytes = new Uint8Array(pdu.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(pdu.slice(i * 2, i * 2 + 2), 16);

  const r = new Reader(bytes);
  const smsc = readSmsc(r, warnings);
  // <length> counts TPDU octets: everything after the SMSC length octet and the SMSC address.
  const tpduOctets = r.remaining;
  if (tpduOctets !== stored.length) {
    fail(
      `length mismatch: modem reported <length> ${stored.length}, PDU holds ${tpduOctets} TPDU octets (${bytes.length} total, SMSC ${r.pos})`,
    );
  }

  const fo = r.u8('first octet');
  const mti = fo & 0x03;
  if (mti === 0x02) fail(STATUS_REPORT_REASON);
  if (mti !== 0x00) fail(`not an SMS-DELIVER: MTI ${mti} (${mti === 1 ? 'SMS-SUBMIT / SUBMIT-REPORT' : 'reserved'})`);
  const udhi = (fo & 0x40) !== 0;

  const { originator, originatorType } = readOriginator(r);
  const protocolId = r.u8('TP-PID');
  const dataCoding = r.u8('TP-DCS');
  const dcs = interpretDcs(dataCoding);
  if (dcs.reserved) warnings.push(dcs.reserved);
  const ts = readTimestamp(r);
  const udl = r.u8('TP-UDL');

  const udOctets = dcs.alphabet === 'gsm7' ? Math.ceil((udl * 7) / 8) : udl;
  if (udOctets > r.remaining) fail(`UDL too large: UDL ${udl} needs ${udOctets} octets, only ${r.remaining} left`);
  let extraOctets: string | undefined;
  if (udOctets < r.remaining) {
    extraOctets = bytesToHex(bytes.subarray(r.pos + udOctets));
    if (stored.index === undefined) {
      fail(
        `UDL ${udl} covers ${udOctets} octets but ${r.remaining} follow, in a direct delivery (+CMT): a UDL changed on the line ` +
          `would decode to a shortened text and a +CMT cannot be read again to rule that out: ${extraOctets}`,
      );
    }
    warnings.push(
      `UDL ${udl} covers ${udOctets} octets but ${r.remaining} follow: decoded by the UDL, ${r.remaining - udOctets} extra octet(s) after the user data left out: ${extraOctets}`,
    );
  }
  const ud = r.take(udOctets, 'TP-UD');

  let concat: ConcatInfo | undefined;
  let udhWaiting: Waiting | undefined;
  let text: string;
  if (dcs.alphabet === 'gsm7') {
    let headerSeptets = 0;
    let fill = 0;
    let body = ud;
    if (udhi) {
      if (udl === 0) fail('UDL too small for the UDH: UDL 0 with the UDH indicator set');
      const udh = parseUdh(ud, warnings);
      concat = udh.concat;
      udhWaiting = udh.waiting;
      headerSeptets = Math.ceil((udh.octets * 8) / 7);
      if (headerSeptets > udl) fail(`UDL too small for the UDH: UDL ${udl} septets, UDH takes ${headerSeptets}`);
      fill = udhFillBits(udh.octets);
      body = ud.subarray(udh.octets);
    }
    const septets = unpackSeptets(body, udl - headerSeptets, fill);
    if (septets === undefined) fail(`UDL ${udl}: user data shorter than its septet count`);
    text = septetsToText(septets);
  } else {
    let body = ud;
    if (udhi) {
      if (udl === 0) fail('UDL too small for the UDH: UDL 0 with the UDH indicator set');
      const udh = parseUdh(ud, warnings);
      concat = udh.concat;
      udhWaiting = udh.waiting;
      body = ud.subarray(udh.octets);
    }
    if (dcs.alphabet === '8bit') {
      text = bytesToHex(body);
    } else {
      const decoded = decodeUcs2Bytes(body);
      if (decoded === undefined) fail(`UCS2 text has an odd number of octets (${body.length})`);
      text = decoded;
      if (hasLoneSurrogate(text)) {
        if (concat === undefined) {
          text = replaceLoneSurrogates(text);
          warnings.push('UCS2 text has an unpaired surrogate; replaced with U+FFFD');
        } else {
          warnings.push(
            'UCS2 part ends or starts with half a surrogate pair; it is completed when the parts are joined',
          );
        }
      }
    }
  }

  return {
    originator,
    originatorType,
    smsc,
    scTimestamp: ts.iso,
    scTimestampMs: ts.ms,
    encoding: dcs.alphabet,
    text,
    concat,
    pdu,
    protocolId,
    dataCoding,
    ...(dcs.messageClass === undefined ? {} : { messageClass: dcs.messageClass }),
    ...((dcs.waiting ?? udhWaiting) ? { waiting: (dcs.waiting ?? udhWaiting)! } : {}),
    ...(extraOctets === undefined ? {} : { extraOctets }),
  };
}

/** Decodes one SMS-DELIVER as the modem listed it. Never throws. */
export function decodeDeliver(stored: StoredPdu): DecodeResult {
  const warnings: string[] = [];
  try {
    const sms = decode(stored, warnings);
    return { ok: true, sms, warnings };
  } catch (err) {
    if (err instanceof PduFailure) return { ok: false, reason: err.message };
    // A bug in this decoder must not take the daemon down: report it as an undecodable PDU (it gets quarantined).
    return { ok: false, reason: `internal decoder error: ${err instanceof Error ? err.message : String(err)}` };
  }
}
