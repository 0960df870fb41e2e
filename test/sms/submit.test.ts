import { parse, Submit } from 'node-pdu';
import { describe, expect, it } from 'vitest';
import { BridgeError } from '../../src/errors.js';
import { decodeGsm7, hexToBytes, udhFillBits } from '../../src/sms/gsm7.js';
import { encodeSubmit } from '../../src/sms/submit.js';
import { decodeUcs2Bytes } from '../../src/sms/ucs2.js';

/** Splits a SUBMIT PDU (SCA '00', no VP) built by encodeSubmit into its fields, octet by octet. */
function fields(pdu: string) {
  const b = hexToBytes(pdu)!;
  const daLen = b[3]!;
  let i = 4 + 1 + Math.ceil(daLen / 2); // SCA(1) FO(1) MR(1) DA-len(1) TOA(1) digits
  const pid = b[i++]!;
  const dcs = b[i++]!;
  const udl = b[i++]!;
  return { fo: b[1]!, pid, dcs, udl, ud: b.subarray(i) };
}

/** Text of one part, using the UDH length and fill bits as a receiver would. */
function partText(pdu: string): { text: string; udh: number[] } {
  const f = fields(pdu);
  const udhOctets = f.fo & 0x40 ? f.ud[0]! + 1 : 0;
  const udh = [...f.ud.subarray(0, udhOctets)];
  if (f.dcs === 0x08) return { text: decodeUcs2Bytes(f.ud.subarray(udhOctets))!, udh };
  const headerSeptets = Math.ceil((udhOctets * 8) / 7);
  return { text: decodeGsm7(f.ud.subarray(udhOctets), f.udl - headerSeptets, udhFillBits(udhOctets))!, udh };
}

describe('encodeSubmit', () => {
  it('single GSM 7-bit SMS to an international number, hand-built', () => {
    // 00 SCA (SIM's) | 01 FO SUBMIT | 00 MR | 0A 91 26 18 32 54 76 DA +6281234567 | 00 PID | 00 DCS
    // | 02 UDL | E8 = 68|(69&1)<<7, 34 = 69>>1  ("hi")
    expect(encodeSubmit('+6281234567', 'hi')).toEqual([{ pdu: '0001000A912618325476000002E834', tpduLength: 14 }]);
  });

  it('national / short-code destination uses TOA 0x81 and an F filler', () => {
    // 03 81 58 F8 = "858"
    expect(encodeSubmit('858', 'A')[0]!.pdu).toBe('00010003' + '8158F8' + '0000' + '01' + '41');
  });

  it('status report request and relative validity set FO bits and add the VP octet', () => {
    const [p] = encodeSubmit('858', 'A', { statusReport: true, validityRelative: 0xa7 });
    // FO 31 = SUBMIT 01 | VPF relative 10 | SRR 20
    expect(p!.pdu).toBe('00310003' + '8158F8' + '0000' + 'A7' + '01' + '41');
    expect(p!.tpduLength).toBe(p!.pdu.length / 2 - 1);
  });

  it('160 GSM characters fit one PDU; 161 need two parts of 153 + 8 with an 8-bit concat UDH', () => {
    expect(encodeSubmit('858', 'a'.repeat(160))).toHaveLength(1);
    const parts = encodeSubmit('858', 'a'.repeat(161), { reference: 0x42 });
    expect(parts).toHaveLength(2);
    expect(parts.map((p) => fields(p.pdu).udl)).toEqual([7 + 153, 7 + 8]);
    expect(parts.map((p) => partText(p.pdu).udh)).toEqual([
      [0x05, 0x00, 0x03, 0x42, 0x02, 0x01],
      [0x05, 0x00, 0x03, 0x42, 0x02, 0x02],
    ]);
    expect(parts.map((p) => partText(p.pdu).text).join('')).toBe('a'.repeat(161));
    for (const p of parts) expect(p.tpduLength).toBe(p.pdu.length / 2 - 1);
  });

  it('extension characters count two septets and are never split from their ESC', () => {
    expect(encodeSubmit('858', '€'.repeat(80))).toHaveLength(1); // 160 septets
    expect(encodeSubmit('858', '€'.repeat(81))).toHaveLength(2);
    const text = 'a'.repeat(152) + '€' + 'b'.repeat(7); // 161 septets; septet 153 would be the ESC of '€'
    const parts = encodeSubmit('858', text);
    expect(parts.map((p) => fields(p.pdu).udl)).toEqual([7 + 152, 7 + 9]);
    expect(parts.map((p) => partText(p.pdu).text)).toEqual(['a'.repeat(152), '€' + 'b'.repeat(7)]);
  });

  it('text outside GSM 7-bit goes UCS2: 70 units in one PDU, else parts of 67', () => {
    expect(fields(encodeSubmit('858', '✓'.repeat(70))[0]!.pdu).dcs).toBe(0x08);
    expect(encodeSubmit('858', '✓'.repeat(70))).toHaveLength(1);
    const parts = encodeSubmit('858', '✓'.repeat(71));
    expect(parts.map((p) => fields(p.pdu).udl)).toEqual([6 + 134, 6 + 8]);
    expect(parts.map((p) => partText(p.pdu).text).join('')).toBe('✓'.repeat(71));
  });

  it('a surrogate pair is never split between UCS2 parts', () => {
    const text = 'a'.repeat(66) + '😀' + 'b'.repeat(10);
    const parts = encodeSubmit('858', text).map((p) => partText(p.pdu).text);
    expect(parts).toEqual(['a'.repeat(66), '😀' + 'b'.repeat(10)]);
  });

  it('node-pdu (an independent decoder) reads back what was encoded', () => {
    for (const [to, text] of [
      ['+6281234567', 'TRANSFERPULSA 081234567890 5000'],
      ['168', 'BAGI 081234567890 10000'],
      ['879', 'Hai 😀 '.repeat(15)],
      ['858', 'x'.repeat(200)],
    ] as const) {
      const decoded = encodeSubmit(to, text).map((p) => {
        const s = parse(p.pdu);
        expect(s).toBeInstanceOf(Submit);
        expect((s as Submit).address.phone).toBe(to.replace('+', ''));
        return (s as Submit).data.getText();
      });
      expect(decoded.join('')).toBe(text);
    }
  });

  it.each([
    ['letters in the destination', () => encodeSubmit('TELKOMSEL', 'x')],
    ['empty destination', () => encodeSubmit('', 'x')],
    ['reference out of range', () => encodeSubmit('858', 'x', { reference: 256 })],
    ['validity out of range', () => encodeSubmit('858', 'x', { validityRelative: -1 })],
    ['more than 255 parts', () => encodeSubmit('858', 'a'.repeat(153 * 255 + 1))],
  ])('rejects %s with PDU_INVALID', (_name, fn) => {
    expect(fn).toThrow(BridgeError);
    try {
      fn();
    } catch (err) {
      expect((err as BridgeError).code).toBe('PDU_INVALID');
    }
  });
});
