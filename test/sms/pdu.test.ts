import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeDeliver, STATUS_REPORT_REASON } from '../../src/sms/pdu.js';
import type { StoredPdu } from '../../src/sms/types.js';
import { buildDeliverPdus } from '../../src/virtual-modem/pdu-builder.js';

/** TPDU length as AT+CMGL reports it: all octets minus the SMSC length octet and the SMSC octets. */
function tpduLength(pdu: string): number {
  return pdu.length / 2 - 1 - parseInt(pdu.slice(0, 2), 16);
}
function stored(pdu: string, length = tpduLength(pdu)): StoredPdu {
  return { index: 1, stat: 0, length, pdu };
}
function decodeOk(pdu: string) {
  const r = decodeDeliver(stored(pdu));
  if (!r.ok) throw new Error(`expected ok, got: ${r.reason}`);
  return r;
}

/**
 * Independent GSM 7-bit packer for plain ASCII letters/digits/punctuation (which sit at their ASCII code in the
 * default alphabet): writes each septet LSB first into a bit list, then cuts octets. Not the production algorithm.
 */
function refPackAscii(text: string): string {
  const bits: number[] = [];
  for (const ch of text) {
    const code = ch.charCodeAt(0);
    if (!/[A-Za-z0-9 .:#*-]/.test(ch)) throw new Error(`refPackAscii: ${ch} is not a plain character`);
    for (let b = 0; b < 7; b++) bits.push((code >> b) & 1);
  }
  while (bits.length % 8 !== 0) bits.push(0);
  let hex = '';
  for (let i = 0; i < bits.length; i += 8) {
    let v = 0;
    for (let b = 0; b < 8; b++) v |= (bits[i + b] ?? 0) << b;
    hex += v.toString(16).padStart(2, '0').toUpperCase();
  }
  return hex;
}

const TELKOMSEL_TEXT =
  'Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774 tgl 2018-01-08. Cek pulsa melalui *888#. Info CS: 188';

interface Fixture {
  description: string;
  pdu: string;
  length: number;
  expect: Record<string, unknown> & { ok: boolean; reasonIncludes?: string };
}
const FIXTURE_DIR = join(import.meta.dirname, '../fixtures/pdus');
const fixtures = readdirSync(FIXTURE_DIR)
  .filter((f) => f.endsWith('.json'))
  .map((f) => ({ file: f, ...(JSON.parse(readFileSync(join(FIXTURE_DIR, f), 'utf8')) as Fixture) }));

describe('decodeDeliver: fixtures in test/fixtures/pdus', () => {
  it('has fixtures to run', () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(5);
  });
  it.each(fixtures)('$file: $description', (fx) => {
    const r = decodeDeliver({ index: 0, stat: 0, length: fx.length, pdu: fx.pdu });
    const { ok, reasonIncludes, ...fields } = fx.expect;
    expect(r.ok).toBe(ok);
    if (!r.ok) {
      expect(r.reason).toContain(reasonIncludes);
      return;
    }
    // JSON has no undefined: null in a fixture means "absent".
    const actual = Object.fromEntries(
      Object.keys(fields).map((k) => [k, (r.sms as unknown as Record<string, unknown>)[k] ?? null]),
    );
    expect(actual).toEqual(fields);
    expect(r.sms.pdu).toBe(fx.pdu.toUpperCase());
  });
});

describe('decodeDeliver: hand-built PDUs (3GPP TS 23.040 §9.2.2.1)', () => {
  it('the Telkomsel fixture user data equals an independent packing of the real text', () => {
    const fx = fixtures.find((f) => f.file === 'telkomsel-858-credit.json');
    expect(fx).toBeDefined();
    expect(TELKOMSEL_TEXT.length).toBe(120);
    // 00 | 04 | 03 81 58F8 | 00 | 00 | 81 10 80 90 03 21 82 | 78 | UD
    expect(fx!.pdu).toBe(
      '00' + '04' + '038158F8' + '00' + '00' + '81108090032182' + '78' + refPackAscii(TELKOMSEL_TEXT),
    );
  });

  it('international +62 number, zone -03:00 across a year boundary', () => {
    const pdu =
      '00' + //               no SMSC
      '04' + //               DELIVER
      '0D91262811225377F4' + // OA: 13 digits, TOA 91, 62 82 11 22 35 77 4F -> +6282112235774
      '00' +
      '00' + //        PID, DCS GSM 7-bit
      '32211332959529' + //   SCTS 23-12-31 23:59:59, zone 29: sign bit 08 set, 0x21 -> "12" quarters = -03:00
      '02' +
      'C834'; //       UDL 2: 'H'=48, 'i'=69: C8 = 48|(69&1)<<7, 34 = 69>>1
    const { sms } = decodeOk(pdu);
    expect(sms.originator).toBe('+6282112235774');
    expect(sms.originatorType).toBe('international');
    expect(sms.text).toBe('Hi');
    expect(sms.scTimestamp).toBe('2023-12-31T23:59:59-03:00');
    expect(sms.scTimestampMs).toBe(1704077999000); // 2024-01-01T02:59:59Z
    expect(sms.scTimestampMs).toBe(Date.parse(sms.scTimestamp));
  });

  it.each([
    // zone octet, ISO suffix, epoch of 2024-01-08 10:15:00 local
    ['82', '+07:00', 1704683700000], // 28 quarters
    ['00', '+00:00', 1704708900000],
    ['22', '+05:30', 1704689100000], // 22 quarters
    ['29', '-03:00', 1704719700000], // 12 quarters, negative
    ['08', '+00:00', 1704708900000], // negative zero
  ])('zone octet %s -> %s', (zone, suffix, epoch) => {
    const pdu = '00' + '04' + '038158F8' + '0000' + '421080015100' + zone + '01' + '41'; // 'A'
    const { sms } = decodeOk(pdu);
    expect(sms.scTimestamp).toBe(`2024-01-08T10:15:00${suffix}`);
    expect(sms.scTimestampMs).toBe(epoch);
    expect(sms.scTimestampMs).toBe(Date.parse(sms.scTimestamp));
  });

  it("extension character '€' and 0x5F '§' (node-pdu gives a backtick), hand packed", () => {
    // UDL 4 septets: 1B 65 ('€'), 5F ('§'), 5B ('Ä')
    // octet0 = 1B | (65&1)<<7 = 9B; octet1 = 65>>1 | (5F&3)<<6 = 32|C0 = F2;
    // octet2 = 5F>>2 | (5B&7)<<5 = 17|60 = 77; octet3 = 5B>>3 = 0B
    const { sms } = decodeOk('00' + '04' + '038158F8' + '0000' + '42108001510082' + '04' + '9BF2770B');
    expect(sms.text).toBe('€§Ä');
  });

  it('alphanumeric originator with TOA 0x50 (extension bit missing) still decodes', () => {
    // OA: 07 semi-octets, TOA 50, "XL" + "1": X=58 L=4C 1=31 -> 58|(4C&1)<<7 = 58, 4C>>1|(31&3)<<6 = 26|40 = 66, 31>>2 = 0C
    const { sms } = decodeOk('00' + '04' + '0650' + '58660C' + '0000' + '42108001510082' + '01' + '41');
    expect(sms.originator).toBe('XL1');
    expect(sms.originatorType).toBe('alphanumeric');
  });

  it('16-bit reference concatenation, UCS2', () => {
    const pdu =
      '00' +
      '44' + //        no SMSC; DELIVER + UDHI
      '038158F8' +
      '00' +
      '08' +
      '42108001510082' +
      '0B' + //               UDL 11 octets
      '06' +
      '08041234' +
      '0302' + // UDHL 6; IE 08 len 04: ref 1234, total 3, seq 2
      '00610062'; //          'ab'
    const { sms } = decodeOk(pdu);
    expect(sms.concat).toEqual({ reference: 0x1234, referenceBits: 16, total: 3, sequence: 2 });
    expect(sms.text).toBe('ab');
    expect(sms.encoding).toBe('ucs2');
  });

  it('a UDH with another element before the concat element (fill bits 6)', () => {
    const pdu =
      '00' +
      '44' +
      '038158F8' +
      '0000' +
      '42108001510082' +
      '0B' + //          UDL 11 septets = 10 header septets + 1 text septet
      '07' + //          UDHL 7 -> UDH is 8 octets = 64 bits -> ceil(64/7) = 10 septets, fill bits 70 - 64 = 6
      '0A00' + //        IE 0A (text formatting) with length 0: skipped
      '0003050201' + //  IE 00 len 03: ref 05, total 2, seq 1
      '4010'; //         'A' = 41 after 6 fill bits: octet0 = (41<<6)&FF = 40, octet1 = 41>>2 = 10
    const { sms, warnings } = decodeOk(pdu);
    expect(sms.text).toBe('A');
    expect(sms.concat).toEqual({ reference: 5, referenceBits: 8, total: 2, sequence: 1 });
    expect(warnings).toEqual([]);
  });

  it.each([
    ['total 0', '00030700' + '01'],
    ['sequence 0', '00030702' + '00'],
    ['sequence > total', '00030702' + '03'],
  ])('a concat element with %s is ignored and noted; the part reads as a single SMS', (_name, ie) => {
    // UDL 7 + 2 ('hi' after 1 fill bit): 'h'=68 -> D0 (68<<1); 'i'=69 -> octet1 = 69. UDH: 05 + 5 IE octets
    const pdu = '00' + '44' + '038158F8' + '0000' + '42108001510082' + '09' + '05' + ie + 'D069';
    const r = decodeOk(pdu);
    expect(r.sms.concat).toBeUndefined();
    expect(r.sms.text).toBe('hi');
    expect(r.warnings.join(' ')).toMatch(/ignored, treated as a single SMS/);
  });

  it.each([
    ['F4', '8bit', 'data coding group, 8-bit', '03', 'DEADBE', 'DEADBE'],
    ['04', '8bit', 'general group, 8-bit', '02', '0102', '0102'],
    ['11', 'gsm7', 'general group, class 1', '01', '41', 'A'],
    ['C8', 'gsm7', 'message waiting, discard', '01', '41', 'A'],
    ['D0', 'gsm7', 'message waiting, store', '01', '41', 'A'],
    ['E0', 'ucs2', 'message waiting, store UCS2', '02', '20AC', '€'],
    ['F0', 'gsm7', 'data coding group, GSM 7-bit', '01', '41', 'A'],
  ])('DCS %s -> %s (%s)', (dcs, encoding, _what, udl, ud, text) => {
    const { sms } = decodeOk('00' + '04' + '038158F8' + '00' + dcs + '42108001510082' + udl + ud);
    expect(sms.encoding).toBe(encoding);
    expect(sms.text).toBe(text);
  });

  it('lower-case hex and a trailing CR are accepted; the stored PDU is upper case', () => {
    const r = decodeDeliver(stored('0004038158f8000042108001510082' + '0141\r', 16));
    if (!r.ok) throw new Error(r.reason);
    const { sms } = r;
    expect(sms.text).toBe('A');
    expect(sms.pdu).toBe('0004038158F8000042108001510082' + '0141');
  });

  it('a lone surrogate in a single UCS2 SMS becomes U+FFFD and is noted', () => {
    const r = decodeOk('00' + '04' + '038158F8' + '00' + '08' + '42108001510082' + '04' + '0041D83D');
    expect(r.sms.text).toBe('A\uFFFD');
    expect(r.warnings.join(' ')).toMatch(/unpaired surrogate/);
  });
});

describe('decodeDeliver: malformed PDUs -> ok:false with a reason, never a throw', () => {
  // A valid base: 00 | 04 | 03 81 58F8 | 00 | 00 | 42 10 80 01 51 00 82 | 02 | C834 ('Hi')
  const GOOD = '00' + '04' + '038158F8' + '00' + '00' + '42108001510082' + '02' + 'C834';
  it('the base is valid', () => {
    expect(decodeOk(GOOD).sms.text).toBe('Hi');
  });

  it('octets after the user data its UDL declares: decoded by the UDL (§9.2.3.16), the extra octets reported, not text', () => {
    const r = decodeDeliver({ index: 1, stat: 0, length: tpduLength(GOOD + '00FF'), pdu: GOOD + '00FF' });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.sms.text).toBe('Hi');
    expect(r.sms.extraOctets).toBe('00FF');
    expect(r.warnings).toEqual([
      expect.stringContaining(
        'UDL 2 covers 2 octets but 4 follow: decoded by the UDL, 2 extra octet(s) after the user data left out: 00FF',
      ),
    ]);
    expect(decodeOk(GOOD).sms.extraOctets).toBeUndefined();
  });

  it('a direct delivery (+CMT, no index) with octets after its UDL is not decoded: a changed UDL digit would truncate the amount', () => {
    const [p] = buildDeliverPdus({
      originator: '858',
      text: 'Anda mendapatkan pulsa Rp 50000 dari 6281234',
      timestamp: new Date('2024-05-01T00:00:00Z'),
    });
    const cmt = (pdu: string) => decodeDeliver({ index: undefined, stat: 0, length: tpduLength(pdu), pdu });
    const good = cmt(p!.pdu);
    expect(good.ok && good.sms.text).toBe('Anda mendapatkan pulsa Rp 50000 dari 6281234');
    // UDL 0x2C (44 septets) is the octet before the 39 octets of packed text; one hex digit flipped: 0x1C (28 septets)
    const udlAt = p!.pdu.length - 2 * Math.ceil((44 * 7) / 8) - 2;
    expect(p!.pdu.slice(udlAt, udlAt + 2)).toBe('2C');
    const noisy = p!.pdu.slice(0, udlAt) + '1C' + p!.pdu.slice(udlAt + 2);
    const r = cmt(noisy);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.reason).toMatch(/^UDL 28 covers 25 octets but 39 follow, in a direct delivery \(\+CMT\)/);
    // the same PDU read from storage (index set) is decoded by its UDL: the receiver only decodes what two reads agree on
    const fromSim = decodeDeliver({ index: 4, stat: 0, length: tpduLength(noisy), pdu: noisy });
    expect(fromSim.ok && fromSim.sms.extraOctets).toBeTruthy();
  });

  const cases: Array<[string, string, number | undefined, RegExp]> = [
    ['empty', '', 0, /empty/],
    ['odd length', GOOD + '0', undefined, /odd number of hex digits/],
    ['non-hex character', GOOD.slice(0, 10) + 'G' + GOOD.slice(11), undefined, /non-hex character "G" at position 10/],
    ['inner space', GOOD.slice(0, 10) + ' ' + GOOD.slice(10, -2), undefined, /non-hex/],
    [
      '<length> larger than the PDU',
      GOOD,
      tpduLength(GOOD) + 1,
      /length mismatch: modem reported <length> 18, PDU holds 17 TPDU octets/,
    ],
    ['<length> smaller than the PDU', GOOD, tpduLength(GOOD) - 1, /length mismatch/],
    ['<length> not an integer', GOOD, Number.NaN, /invalid <length>/],
    ['truncated in the SMSC', '0791261801', undefined, /truncated in SMSC address/],
    ['truncated before the first octet', '00', undefined, /truncated at first octet/],
    ['truncated in the originator digits', '0004038158', undefined, /truncated in TP-OA digits/],
    ['truncated at PID', '0004038158F8', undefined, /truncated at TP-PID/],
    ['truncated in the timestamp', '0004038158F800004210800151', undefined, /truncated in TP-SCTS/],
    ['truncated at UDL', '0004038158F8000042108001510082', undefined, /truncated at TP-UDL/],
    [
      'truncated in the user data (UDL too large)',
      GOOD.slice(0, -2),
      undefined,
      /UDL too large: UDL 2 needs 2 octets, only 1 left/,
    ],
    [
      'UDL too large (UCS2)',
      '0004038158F8' + '0008' + '42108001510082' + '06' + '00410042',
      undefined,
      /UDL too large/,
    ],
    [
      'UDL too small for the UDH (GSM 7-bit)',
      // UDHI set, UDL 3 septets, but the UDH 05 00 03 01 02 01 needs 7 septets
      '00' + '44' + '038158F8' + '0000' + '42108001510082' + '03' + '050003',
      undefined,
      /UDL too small for the UDH/,
    ],
    [
      'UDL too small for the UDH (8-bit)',
      '00' + '44' + '038158F8' + '0004' + '42108001510082' + '03' + '050003',
      undefined,
      /UDL too small for the UDH: UDH needs 6 octets, user data has 3/,
    ],
    [
      'UDH element overrunning the header',
      // UDHL 05, IE 00 with length 07 (only 4 octets of header left)
      '00' + '44' + '038158F8' + '0004' + '42108001510082' + '07' + '05000701020141',
      undefined,
      /length 7 overruns the UDH/,
    ],
    [
      'UDH element without its length octet',
      '00' + '44' + '038158F8' + '0004' + '42108001510082' + '02' + '0100',
      undefined,
      /has no length octet/,
    ],
    [
      'UDHI with UDL 0',
      '00' + '44' + '038158F8' + '0000' + '42108001510082' + '00',
      undefined,
      /UDL 0 with the UDH indicator/,
    ],
    [
      'UCS2 with an odd octet count',
      '0004038158F8' + '0008' + '42108001510082' + '03' + '004100',
      undefined,
      /odd number of octets/,
    ],
    ['compressed text', '0004038158F8' + '0020' + '42108001510082' + '01' + '41', undefined, /compressed/],
    [
      'national language shift table',
      '0044038158F8' + '0000' + '42108001510082' + '05' + '0325010141',
      undefined,
      /national language/,
    ],
    ['SMS-SUBMIT (MTI 01)', '0001' + '038158F8' + '0000' + '01' + '41', undefined, /not an SMS-DELIVER: MTI 1/],
    [
      'status report',
      '00' + '06' + '2A' + '038158F8' + '42108001510082' + '42108001520082' + '00',
      undefined,
      /^status report$/,
    ],
    [
      'filler nibble inside the originator',
      '0004' + '0481' + '5F88' + '0000' + '42108001510082' + '0141',
      undefined,
      /filler nibble F/,
    ],
    [
      'originator length over 20',
      '0004' + '1591' + '00'.repeat(11) + '0000' + '42108001510082' + '0141',
      undefined,
      /exceeds 20/,
    ],
    ['month 13', '0004038158F8' + '0000' + '42318001510082' + '0141', undefined, /invalid date/],
    ['30 February', '0004038158F8' + '0000' + '42200301510082' + '0141', undefined, /invalid date/],
    ['hour 24', '0004038158F8' + '0000' + '42108042510082' + '0141', undefined, /invalid date/],
    ['timestamp nibble A', '0004038158F8' + '0000' + '4A108001510082' + '0141', undefined, /not two decimal digits/],
  ];
  it.each(cases)('%s', (_name, pdu, length, reason) => {
    const len =
      length ??
      (pdu.length >= 2 && /^[0-9A-Fa-f]{2}/.test(pdu)
        ? Math.max(0, Math.floor(pdu.length / 2) - 1 - parseInt(pdu.slice(0, 2), 16))
        : 0);
    const r = decodeDeliver(stored(pdu, len));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(reason);
  });

  it('the status-report reason is the exported constant', () => {
    const r = decodeDeliver(stored('00' + '06' + '2A' + '038158F8' + '42108001510082' + '42108001520082' + '00'));
    expect(r).toEqual({ ok: false, reason: STATUS_REPORT_REASON });
  });

  it('every truncation of a valid multipart PDU fails cleanly (never throws, never ok)', () => {
    const pdu =
      '06912618010000' + '44' + '0D91262811225377F4' + '0000' + '42108000000000' + '0C' + '050003A70201' + 'D06536FB0D';
    expect(decodeOk(pdu).sms.text).toBe('hello');
    for (let cut = 2; cut < pdu.length; cut += 2) {
      const short = pdu.slice(0, cut);
      // Give the length the truncated PDU implies, so the field-level checks (not the length check) must catch it.
      const r = decodeDeliver(stored(short, Math.max(0, tpduLength(short))));
      expect(r.ok, `cut at ${cut}`).toBe(false);
    }
  });

  it('a PDU that is not a string does not throw', () => {
    const r = decodeDeliver({ index: 1, stat: 0, length: 0, pdu: undefined as unknown as string });
    expect(r.ok).toBe(false);
  });
});
