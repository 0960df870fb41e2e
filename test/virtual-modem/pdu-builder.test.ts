import { describe, expect, it } from 'vitest';
import { parse, type Deliver, type Report, Submit } from 'node-pdu';
import {
  buildDeliverPdus,
  buildStatusReportPdu,
  encodeAddressField,
  encodeTimestamp,
} from '../../src/virtual-modem/pdu-builder.js';
import { fromHex, fromSeptets, packUssdHex, unpack, unpackUssdHex } from '../../src/virtual-modem/septets.js';
import { readSubmitPdu } from '../../src/virtual-modem/submit-reader.js';

// 2024-01-08 12:34:56 at +07:00 (WIB)
const TS = new Date(Date.UTC(2024, 0, 8, 5, 34, 56));

/** Part fields after the fixed header of a deliver PDU without SMSC from originator '858'. */
function split858(pdu: string): { first: string; udl: number; ud: string } {
  // 00 | first | 03 81 58F8 | PID | DCS | SCTS(7) | UDL | UD
  return { first: pdu.slice(2, 4), udl: parseInt(pdu.slice(30, 32), 16), ud: pdu.slice(32) };
}

describe('buildDeliverPdus: hand-built vectors from TS 23.040 §9.2.2.1', () => {
  it('short code 858, GSM7 "hellohello", +07:00', () => {
    const [part, ...rest] = buildDeliverPdus({
      originator: '858',
      text: 'hellohello',
      timestamp: TS,
      tzQuarterHours: 28,
    });
    expect(rest).toEqual([]);
    // SMSC none | MTI=deliver, MMS | OA len 3, TOA 81, 58F8 | PID | DCS | SCTS 24-01-08 12:34:56 +28q | UDL 10 | UD
    expect(part?.pdu).toBe('00' + '04' + '038158F8' + '00' + '00' + '42108021436582' + '0A' + 'E8329BFD4697D9EC37');
    expect(part?.tpduLength).toBe(24);
  });

  it('negative time zone sets bit 3 of the TZ octet: -03:00 = -12 quarters -> 0x29', () => {
    expect(encodeTimestamp(TS, -12)).toEqual([0x42, 0x10, 0x80, 0x20, 0x43, 0x65, 0x29]);
  });

  it('international originator and SMSC', () => {
    const [part] = buildDeliverPdus({
      originator: '+6281234567890',
      text: 'Hi',
      timestamp: TS,
      tzQuarterHours: 28,
      smsc: '+6281100000',
    });
    expect(part?.pdu.startsWith('06912618010000' + '04' + '0D91261832547698F0')).toBe(true);
    expect(part?.tpduLength).toBe((part?.pdu.length ?? 0) / 2 - 7);
  });

  it('alphanumeric originator is GSM7-packed with TON 5 and the semi-octet count as length', () => {
    // I=49 n=6E f=66 o=6F packed -> 49 B7 F9 0D; 4 septets = 28 bits = 7 semi-octets
    expect(encodeAddressField('Info')).toEqual([0x07, 0xd0, 0x49, 0xb7, 0xf9, 0x0d]);
    expect(encodeAddressField('TELKOMSEL').slice(0, 2)).toEqual([16, 0xd0]);
  });

  it('rejects what cannot be encoded instead of producing a wrong PDU', () => {
    expect(() => encodeAddressField('A-very-long-name')).toThrow(RangeError);
    expect(() => buildDeliverPdus({ originator: '858', text: 'Rp 5.000 ✓', encoding: 'gsm7', timestamp: TS })).toThrow(
      RangeError,
    );
  });

  it('extension characters cost two septets; 0x5F is §', () => {
    const [ext] = buildDeliverPdus({ originator: '858', text: '€[]{}^~|\\', timestamp: TS });
    expect(split858(ext?.pdu ?? '').udl).toBe(18);
    const [sect] = buildDeliverPdus({ originator: '858', text: '§', timestamp: TS });
    expect(split858(sect?.pdu ?? '').ud).toBe('5F');
  });

  it('auto picks UCS2 for non-GSM text, keeping surrogate pairs', () => {
    const [part] = buildDeliverPdus({ originator: '858', text: 'Rp😀', timestamp: TS });
    expect(part?.pdu.slice(14, 16)).toBe('08'); // DCS
    expect(split858(part?.pdu ?? '')).toMatchObject({ udl: 8, ud: '00520070D83DDE00' });
  });
});

describe('buildDeliverPdus: concatenation', () => {
  const sizes = (text: string, extra: object = {}): number[] =>
    buildDeliverPdus({ originator: '858', text, timestamp: TS, ...extra }).map((p) => split858(p.pdu).udl);

  it.each([
    ['160 septets fit one SMS', 'a'.repeat(160), [160]],
    ['161 septets need two parts (7 UDH septets + 153)', 'a'.repeat(161), [160, 15]],
    ['159 a + € = 161 septets', 'a'.repeat(159) + '€', [160, 7 + 8]],
    ['an escape pair is never split across parts', 'a'.repeat(152) + '€' + 'b'.repeat(10), [7 + 152, 7 + 12]],
  ])('%s', (_name, text, expected) => {
    expect(sizes(text)).toEqual(expected);
  });

  it('8-bit reference UDH, UDHI set, one fill bit before the text', () => {
    const parts = buildDeliverPdus({
      originator: '858',
      text: 'a'.repeat(153) + 'b'.repeat(8),
      timestamp: TS,
      concatRef: 0x2a,
    });
    expect(parts).toHaveLength(2);
    const second = split858(parts[1]?.pdu ?? '');
    expect(second.first).toBe('44');
    expect(second.ud.slice(0, 12)).toBe('0500032A0202');
    const body = fromHex(second.ud.slice(12)) ?? [];
    expect(second.udl).toBe(7 + 8);
    expect(fromSeptets(unpack(body, second.udl - 7, 1) ?? [])).toBe('bbbbbbbb');
  });

  it('16-bit reference UDH: 152 septets per part, no fill bits', () => {
    const parts = buildDeliverPdus({
      originator: '858',
      text: 'x'.repeat(200),
      timestamp: TS,
      concatRef: 0x1234,
      concatRefBits: 16,
    });
    expect(parts.map((p) => split858(p.pdu).udl)).toEqual([160, 8 + 48]);
    const first = split858(parts[0]?.pdu ?? '');
    expect(first.ud.slice(0, 14)).toBe('06080412340201');
    expect(fromSeptets(unpack(fromHex(first.ud.slice(14)) ?? [], 152, 0) ?? [])).toBe('x'.repeat(152));
  });

  it('UCS2: 70 units fit, then 67 per part; a surrogate pair moves whole to the next part', () => {
    expect(sizes('é'.repeat(70), { encoding: 'ucs2' })).toEqual([140]);
    expect(sizes('é'.repeat(71), { encoding: 'ucs2' })).toEqual([6 + 134, 6 + 8]);
    const parts = buildDeliverPdus({
      originator: '858',
      text: 'x'.repeat(66) + '😀' + 'y'.repeat(10),
      timestamp: TS,
      encoding: 'ucs2',
    });
    expect(parts.map((p) => split858(p.pdu).udl)).toEqual([6 + 132, 6 + 24]);
    expect(split858(parts[1]?.pdu ?? '').ud.slice(12, 20)).toBe('D83DDE00');
  });

  it('partsOverride can split an emoji across parts on purpose', () => {
    const parts = buildDeliverPdus({
      originator: '858',
      text: '',
      encoding: 'ucs2',
      partsOverride: ['a\uD83D', '\uDE00b'],
      timestamp: TS,
      concatRef: 1,
    });
    expect(parts.map((p) => split858(p.pdu).ud)).toEqual(['050003010201' + '0061D83D', '050003010202' + 'DE000062']);
  });
});

describe('cross-check with node-pdu (second decoder, simple cases)', () => {
  it.each([
    ['858', 'Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774'],
    ['+6281234567890', 'Halo 😀 dunia'],
    ['TELKOMSEL', 'Pulsa Rp10.000 {bonus} [SN:123] €'],
  ])('%s: %s', (originator, text) => {
    const [part] = buildDeliverPdus({ originator, text, timestamp: TS, tzQuarterHours: 28, smsc: '+6281100000' });
    const d = parse(part?.pdu ?? '') as Deliver;
    expect(d.address.phone).toBe(originator.replace(/^\+/, ''));
    expect(d.data.getText()).toBe(text);
    expect(d.serviceCenterTimeStamp.getIsoString()).toBe('2024-01-08T12:34:56+07:00');
  });

  it('concatenated parts carry ref, total and sequence node-pdu agrees with', () => {
    const parts = buildDeliverPdus({ originator: '858', text: 'z'.repeat(170), timestamp: TS, concatRef: 7 });
    const decoded = parts.map((p) => (parse(p.pdu) as Deliver).getParts()[0]);
    expect(decoded.map((p) => [p?.header?.getPointer(), p?.header?.getSegments(), p?.header?.getCurrent()])).toEqual([
      [7, 2, 1],
      [7, 2, 2],
    ]);
    expect(decoded.map((p) => p?.text).join('')).toBe('z'.repeat(170));
  });

  it('status report', () => {
    const r = buildStatusReportPdu({
      recipient: '+6281234567890',
      messageRef: 12,
      submitted: TS,
      discharged: TS,
      status: 0,
      tzQuarterHours: 28,
    });
    const parsed = parse(r.pdu) as Report;
    expect([parsed.reference, parsed.status, parsed.address.phone]).toEqual([12, 0, '6281234567890']);
    expect(r.tpduLength).toBe(r.pdu.length / 2 - 1);
  });

  it('readSubmitPdu reads what node-pdu submits', () => {
    const hex = new Submit('+6281234567890', 'TRANSFERPULSA 08123 5000').toString();
    const result = readSubmitPdu(hex, hex.length / 2 - 1);
    expect(result).toMatchObject({
      ok: true,
      submit: { destination: '+6281234567890', text: 'TRANSFERPULSA 08123 5000' },
    });
    expect(readSubmitPdu(hex, hex.length / 2)).toMatchObject({ ok: false });
    expect(readSubmitPdu('00ZZ', 1)).toMatchObject({ ok: false });
  });
});

describe('packed GSM7 for USSD (TS 23.038 §6.1.2.3.1)', () => {
  it.each([
    ['*100#', 'AA180C3602'],
    ['1', '31'],
  ])('%s <-> %s', (text, hex) => {
    expect(packUssdHex(text)).toBe(hex);
    expect(unpackUssdHex(hex)).toBe(text);
  });

  it('7 septets get a CR in the spare bits, which unpacking drops', () => {
    const hex = packUssdHex('*858*1#');
    expect(hex.length).toBe(14);
    expect(hex.slice(-2)).toBe('1A'); // CR (0x0D) << 1 in the top 7 bits of the last octet
    expect(unpackUssdHex(hex)).toBe('*858*1#');
  });
});
