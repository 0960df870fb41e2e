/**
 * Builds SMS-DELIVER and SMS-STATUS-REPORT PDUs (3GPP TS 23.040 §9.2.2.1, §9.2.2.3) as a modem shows them in PDU mode,
 * written from the standard independently of node-pdu and src/sms/, so the bridge's decoder is checked against a second
 * encoder. PURE; throws RangeError on input it cannot encode. Long texts are split into concatenated parts, never
 * splitting an escape or surrogate pair; `partsOverride` gives each part's text verbatim.
 */
import { charToSeptets, pack, toHex, toSeptets } from './septets.js';

export type SmsEncoding = 'gsm7' | 'ucs2' | 'auto';

export interface DeliverPduOptions {
  /** '+6281…' (international), '0812…' (national), '858' (short code) or 'TELKOMSEL' (alphanumeric). */
  originator: string;
  text: string;
  /** Default 'auto': GSM7 when every character has a GSM 7-bit encoding, else UCS2. */
  encoding?: SmsEncoding;
  /** Service-centre time stamp; written as the local time of `tzQuarterHours`. */
  timestamp: Date;
  /** Time zone in quarters of an hour: 28 = +07:00 (WIB), -12 = -03:00. Default 0. */
  tzQuarterHours?: number;
  /** SMSC address ('+628110000…'); omitted -> length octet 00 (modem shows no SMSC). */
  smsc?: string;
  /** Concatenation reference; default derived from the text. */
  concatRef?: number;
  concatRefBits?: 8 | 16;
  /** Text of each part, verbatim (skips automatic splitting). More than one entry -> concatenated with a UDH. */
  partsOverride?: string[];
  /** TP-PID; default 0. */
  pid?: number;
  /**
   * TP-DCS octet written as given (message class, message waiting groups...); the text is still encoded by
   * `encoding`, which must be the alphabet that octet names. Default 0x00 (GSM 7-bit) or 0x08 (UCS2).
   */
  dcs?: number;
  /** TP-MMS: the SMSC has more messages waiting. Default false. */
  moreMessagesToSend?: boolean;
}

export interface BuiltPdu {
  /** Upper-case hex: SMSC address + TPDU. */
  pdu: string;
  /** Octets of the TPDU (without the SMSC address). */
  tpduLength: number;
}

const GSM7_SINGLE = 160;
const UCS2_SINGLE_UNITS = 70;
const TOA_INTERNATIONAL = 0x91;
const TOA_UNKNOWN_ISDN = 0x81;
const TOA_ALPHANUMERIC = 0xd0;

/** Swapped-nibble BCD of a dial string ('*' = A, '#' = B), padded with F. */
function bcdSwapped(digits: string): number[] {
  const nibble = (c: string): number => {
    if (c >= '0' && c <= '9') return c.charCodeAt(0) - 48;
    if (c === '*') return 0xa;
    if (c === '#') return 0xb;
    throw new RangeError(`not a dial digit: ${JSON.stringify(c)}`);
  };
  const out: number[] = [];
  for (let i = 0; i < digits.length; i += 2) {
    const lo = nibble(digits[i] ?? '');
    const hi = i + 1 < digits.length ? nibble(digits[i + 1] ?? '') : 0xf;
    out.push((hi << 4) | lo);
  }
  return out;
}

/** TP-OA / TP-DA / TP-RA (§9.1.2.5): [length in useful semi-octets, TOA, value...]. */
export function encodeAddressField(address: string): number[] {
  if (/^\+[0-9]{1,20}$/.test(address)) {
    const digits = address.slice(1);
    return [digits.length, TOA_INTERNATIONAL, ...bcdSwapped(digits)];
  }
  if (/^[0-9*#]{1,20}$/.test(address)) return [address.length, TOA_UNKNOWN_ISDN, ...bcdSwapped(address)];
  const septets = toSeptets(address);
  if (!septets || address.length === 0 || address.length > 11) {
    throw new RangeError(
      `originator ${JSON.stringify(address)} is neither a number nor a GSM 7-bit name of 1-11 characters`,
    );
  }
  const packed = pack(septets);
  return [Math.ceil((septets.length * 7) / 4), TOA_ALPHANUMERIC, ...packed];
}

/** SMSC address as in the PDU-mode prefix (TS 24.011 §8.2.5.1): [length in octets incl. TOA, TOA, BCD...]. */
export function encodeSmscField(smsc: string | undefined): number[] {
  if (smsc === undefined || smsc === '') return [0];
  const international = smsc.startsWith('+');
  const digits = international ? smsc.slice(1) : smsc;
  if (!/^[0-9]{1,20}$/.test(digits)) throw new RangeError(`SMSC ${JSON.stringify(smsc)} is not a number`);
  const bcd = bcdSwapped(digits);
  return [bcd.length + 1, international ? TOA_INTERNATIONAL : TOA_UNKNOWN_ISDN, ...bcd];
}

/** TP-SCTS (§9.2.3.11): 7 swapped-BCD octets of local time; time zone in quarter hours, sign in bit 3. */
export function encodeTimestamp(date: Date, tzQuarterHours = 0): number[] {
  if (!Number.isInteger(tzQuarterHours) || Math.abs(tzQuarterHours) > 79) {
    throw new RangeError(`time zone ${tzQuarterHours} quarter hours is out of range`);
  }
  if (Number.isNaN(date.getTime())) throw new RangeError('timestamp is an invalid Date');
  const local = new Date(date.getTime() + tzQuarterHours * 15 * 60_000);
  const swapped = (n: number): number => ((n % 10) << 4) | Math.floor(n / 10);
  const fields = [
    local.getUTCFullYear() % 100,
    local.getUTCMonth() + 1,
    local.getUTCDate(),
    local.getUTCHours(),
    local.getUTCMinutes(),
    local.getUTCSeconds(),
  ].map(swapped);
  const tz = swapped(Math.abs(tzQuarterHours)) | (tzQuarterHours < 0 ? 0x08 : 0);
  return [...fields, tz];
}

/** Splits GSM7 text into parts of at most `max` septets, keeping each escape pair whole. */
function splitGsm7(text: string, max: number): string[] {
  const parts: string[] = [];
  let current = '';
  let used = 0;
  for (const ch of text) {
    const cost = charToSeptets(ch)?.length ?? 1;
    if (used + cost > max) {
      parts.push(current);
      current = '';
      used = 0;
    }
    current += ch;
    used += cost;
  }
  parts.push(current);
  return parts;
}

/** Splits text into parts of at most `maxUnits` UTF-16 code units, keeping each surrogate pair whole. */
function splitUcs2(text: string, maxUnits: number): string[] {
  const parts: string[] = [];
  let current = '';
  for (const ch of text) {
    if (current.length + ch.length > maxUnits) {
      parts.push(current);
      current = '';
    }
    current += ch;
  }
  parts.push(current);
  return parts;
}

function ucs2Bytes(text: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    out.push(unit >> 8, unit & 0xff);
  }
  return out;
}

function concatHeader(ref: number, refBits: 8 | 16, total: number, seq: number): number[] {
  const ie =
    refBits === 8 ? [0x00, 0x03, ref & 0xff, total, seq] : [0x08, 0x04, (ref >> 8) & 0xff, ref & 0xff, total, seq];
  return [ie.length, ...ie];
}

function defaultRef(text: string, bits: 8 | 16): number {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (h * 31 + text.charCodeAt(i)) >>> 0;
  return bits === 8 ? (h % 255) + 1 : (h % 65535) + 1;
}

/** Builds the SMS-DELIVER PDU(s) of one message: one entry per part, in part order. */
export function buildDeliverPdus(opts: DeliverPduOptions): BuiltPdu[] {
  const encoding: 'gsm7' | 'ucs2' =
    opts.encoding === 'gsm7' || opts.encoding === 'ucs2' ? opts.encoding : toSeptets(opts.text) ? 'gsm7' : 'ucs2';
  if (encoding === 'gsm7') {
    for (const part of opts.partsOverride ?? [opts.text]) {
      if (!toSeptets(part)) throw new RangeError(`text ${JSON.stringify(part)} cannot be encoded in GSM 7-bit`);
    }
  }
  const refBits = opts.concatRefBits ?? 8;
  let parts: string[];
  if (opts.partsOverride) {
    if (opts.partsOverride.length === 0) throw new RangeError('partsOverride is empty');
    parts = opts.partsOverride;
  } else if (encoding === 'gsm7') {
    const total = toSeptets(opts.text)?.length ?? 0;
    parts = total <= GSM7_SINGLE ? [opts.text] : splitGsm7(opts.text, refBits === 8 ? 153 : 152);
  } else {
    parts = opts.text.length <= UCS2_SINGLE_UNITS ? [opts.text] : splitUcs2(opts.text, refBits === 8 ? 67 : 66);
  }
  if (parts.length > 255)
    throw new RangeError(`message needs ${parts.length} parts; at most 255 fit a concatenation header`);
  const ref = opts.concatRef ?? defaultRef(opts.text, refBits);
  const maxRef = refBits === 8 ? 0xff : 0xffff;
  if (!Number.isInteger(ref) || ref < 0 || ref > maxRef)
    throw new RangeError(`concatRef ${ref} does not fit ${refBits} bits`);

  const smsc = encodeSmscField(opts.smsc);
  const oa = encodeAddressField(opts.originator);
  const scts = encodeTimestamp(opts.timestamp, opts.tzQuarterHours ?? 0);
  for (const [name, value] of [
    ['pid', opts.pid],
    ['dcs', opts.dcs],
  ] as const) {
    if (value !== undefined && (!Number.isInteger(value) || value < 0 || value > 0xff)) {
      throw new RangeError(`${name} ${value} is not an octet (0-255)`);
    }
  }
  const dcs = opts.dcs ?? (encoding === 'gsm7' ? 0x00 : 0x08);
  const concatenated = parts.length > 1;

  return parts.map((partText, i) => {
    const udh = concatenated ? concatHeader(ref, refBits, parts.length, i + 1) : [];
    let udl: number;
    let ud: number[];
    if (encoding === 'gsm7') {
      const septets = toSeptets(partText) ?? [];
      const fill = udh.length === 0 ? 0 : (7 - ((udh.length * 8) % 7)) % 7;
      udl = (udh.length * 8 + fill) / 7 + septets.length;
      ud = [...udh, ...pack(septets, fill)];
      if (udl > 160) throw new RangeError(`part ${i + 1} needs ${udl} septets; at most 160 fit`);
    } else {
      ud = [...udh, ...ucs2Bytes(partText)];
      udl = ud.length;
      if (udl > 140) throw new RangeError(`part ${i + 1} needs ${udl} octets; at most 140 fit`);
    }
    // First octet: TP-MTI 00 (deliver), TP-MMS bit 2 (1 = no more messages), TP-UDHI bit 6.
    const first = 0x00 | (opts.moreMessagesToSend ? 0 : 0x04) | (concatenated ? 0x40 : 0);
    const tpdu = [first, ...oa, opts.pid ?? 0x00, dcs, ...scts, udl, ...ud];
    return { pdu: toHex([...smsc, ...tpdu]), tpduLength: tpdu.length };
  });
}

export interface StatusReportOptions {
  /** The recipient of the message this report is about. */
  recipient: string;
  /** TP-MR of the submitted message (the number +CMGS answered). */
  messageRef: number;
  /** When the SMSC received the message (TP-SCTS). */
  submitted: Date;
  /** When it was delivered or finally failed (TP-DT). */
  discharged: Date;
  /** TP-ST (§9.2.3.15): 0x00 delivered, 0x20-0x2F temporary error, 0x40+ permanent error. */
  status: number;
  tzQuarterHours?: number;
  smsc?: string;
}

/** Builds an SMS-STATUS-REPORT (§9.2.2.3), as carried by +CDS / +CDSI. */
export function buildStatusReportPdu(opts: StatusReportOptions): BuiltPdu {
  if (!Number.isInteger(opts.messageRef) || opts.messageRef < 0 || opts.messageRef > 255) {
    throw new RangeError(`messageRef ${opts.messageRef} is not 0-255`);
  }
  const tz = opts.tzQuarterHours ?? 0;
  // First octet: TP-MTI 10 (status report), TP-MMS bit 2 set.
  const tpdu = [
    0x06,
    opts.messageRef,
    ...encodeAddressField(opts.recipient),
    ...encodeTimestamp(opts.submitted, tz),
    ...encodeTimestamp(opts.discharged, tz),
    opts.status & 0xff,
  ];
  return { pdu: toHex([...encodeSmscField(opts.smsc), ...tpdu]), tpduLength: tpdu.length };
}
