/**
 * Reads the SMS-SUBMIT PDU (3GPP TS 23.040 §9.2.2.2) a bridge sends with AT+CMGS, as far as the virtual modem needs:
 * validate the length like a modem does and record destination and text for `sentMessages()`.
 *
 * Contract (PURE): `readSubmitPdu(hex, tpduLength)` returns a result or a reason string (what a real modem answers
 * with +CMS ERROR: 304); it never throws. The TPDU must be exactly `tpduLength` octets after the SMSC part.
 */
import { fromHex, fromSeptets, unpack } from './septets.js';

export interface SubmitInfo {
  /** Destination as dialled: '+62…' for international numbers, digits otherwise. */
  destination: string;
  /** Decoded text when the DCS is GSM7 or UCS2 (user data header skipped); undefined for 8-bit data. */
  text: string | undefined;
  dcs: number;
  /** TP-SRR: the sender asked for a status report. */
  statusReportRequested: boolean;
}

export type SubmitReadResult = { ok: true; submit: SubmitInfo } | { ok: false; reason: string };

function semiOctets(bytes: readonly number[], digits: number): string {
  let out = '';
  for (let i = 0; i < digits; i++) {
    const b = bytes[i >> 1] ?? 0;
    const n = i % 2 === 0 ? b & 0x0f : b >> 4;
    out += n < 10 ? String(n) : n === 0xa ? '*' : n === 0xb ? '#' : '';
  }
  return out;
}

export function readSubmitPdu(hex: string, tpduLength: number): SubmitReadResult {
  const bytes = fromHex(hex.trim());
  if (!bytes) return { ok: false, reason: 'PDU is not hex' };
  const smscLen = bytes[0];
  if (smscLen === undefined) return { ok: false, reason: 'empty PDU' };
  const tpdu = bytes.slice(1 + smscLen);
  if (tpdu.length !== tpduLength)
    return { ok: false, reason: `TPDU is ${tpdu.length} octets, AT+CMGS announced ${tpduLength}` };
  let p = 0;
  const take = (n: number): number[] | undefined => {
    if (p + n > tpdu.length) return undefined;
    const out = tpdu.slice(p, p + n);
    p += n;
    return out;
  };
  const first = take(1)?.[0];
  if (first === undefined || (first & 0x03) !== 0x01) return { ok: false, reason: 'not an SMS-SUBMIT (TP-MTI)' };
  const vpf = (first >> 3) & 0x03;
  const udhi = (first & 0x40) !== 0;
  take(1); // TP-MR: the modem assigns its own
  const daHead = take(2);
  if (!daHead) return { ok: false, reason: 'truncated destination address' };
  const [daDigits = 0, toa = 0] = daHead;
  const daValue = take(Math.ceil(daDigits / 2));
  if (!daValue) return { ok: false, reason: 'truncated destination address' };
  const number = semiOctets(daValue, daDigits);
  const destination = (toa & 0x70) === 0x10 ? `+${number}` : number;
  const pidDcs = take(2);
  if (!pidDcs) return { ok: false, reason: 'truncated PID/DCS' };
  const dcs = pidDcs[1] ?? 0;
  const vpLength = vpf === 0 ? 0 : vpf === 2 ? 1 : 7;
  if (!take(vpLength)) return { ok: false, reason: 'truncated validity period' };
  const udl = take(1)?.[0];
  if (udl === undefined) return { ok: false, reason: 'missing TP-UDL' };
  const ud = tpdu.slice(p);
  const alphabet = (dcs & 0xc0) === 0 ? (dcs >> 2) & 0x03 : (dcs & 0xf0) === 0xf0 ? (dcs >> 2) & 0x01 : -1;
  let text: string | undefined;
  const udhOctets = udhi ? (ud[0] ?? 0) + 1 : 0;
  if (alphabet === 0) {
    const fill = udhi ? (7 - ((udhOctets * 8) % 7)) % 7 : 0;
    const udhSeptets = udhi ? (udhOctets * 8 + fill) / 7 : 0;
    const septets = unpack(ud.slice(udhOctets), udl - udhSeptets, fill);
    if (!septets) return { ok: false, reason: 'user data shorter than TP-UDL' };
    text = fromSeptets(septets);
  } else if (alphabet === 2) {
    if (ud.length < udl) return { ok: false, reason: 'user data shorter than TP-UDL' };
    const body = ud.slice(udhOctets, udl);
    text = '';
    for (let i = 0; i + 1 < body.length; i += 2)
      text += String.fromCharCode(((body[i] ?? 0) << 8) | (body[i + 1] ?? 0));
  }
  return { ok: true, submit: { destination, text, dcs, statusReportRequested: (first & 0x20) !== 0 } };
}
