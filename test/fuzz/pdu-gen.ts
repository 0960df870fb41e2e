/**
 * Generators of VALID SMS-DELIVER PDUs together with what they encode, for the PDU fuzz targets.
 *
 * Two independent encoders build them, neither of them src/sms/:
 * - src/virtual-modem/pdu-builder.ts (`buildDeliverPdus`): whole messages, split into concatenated parts by the builder;
 * - `assembleDeliver` below: one TPDU octet by octet from the builder's field encoders and src/virtual-modem/septets.ts, for
 *   what the builder does not make: 8-bit data, UDHs with other information elements beside (or without) the
 *   concatenation element, and every data coding scheme value that means the same alphabet.
 * Contract: every generated PDU is valid per TS 23.040 / 23.038, so the decoder must return exactly `expect`.
 */
import fc from 'fast-check';
import { GSM7_DEFAULT_CHARS, GSM7_EXTENSION_CHARS } from '../../src/sms/gsm7.js';
import type { ConcatInfo, DecodedSms } from '../../src/sms/types.js';
import { encodeAddressField, encodeSmscField, encodeTimestamp } from '../../src/virtual-modem/pdu-builder.js';
import { pack, toHex, toSeptets } from '../../src/virtual-modem/septets.js';

export interface Expected {
  originator: string;
  originatorType: DecodedSms['originatorType'];
  smsc: string | undefined;
  scTimestamp: string;
  scTimestampMs: number;
  encoding: DecodedSms['encoding'];
}

/** A GSM 7-bit character: mostly the default table, often the extension table (two septets each). */
export const gsm7CharArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...GSM7_DEFAULT_CHARS) },
  { weight: 2, arbitrary: fc.constantFrom(...GSM7_EXTENSION_CHARS) },
  { weight: 2, arbitrary: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789 .,') },
);

export function gsm7TextArb(maxLength: number): fc.Arbitrary<string> {
  return fc.array(gsm7CharArb, { maxLength, size: 'max' }).map((a) => a.join(''));
}

/** Any Unicode text: BMP and astral code points (surrogate pairs), no lone surrogates. */
export function unicodeTextArb(maxLength: number): fc.Arbitrary<string> {
  const unit = fc.oneof(
    { weight: 3, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
    { weight: 1, arbitrary: fc.integer({ min: 0x10000, max: 0x10ffff }).map((cp) => String.fromCodePoint(cp)) },
    { weight: 1, arbitrary: fc.constantFrom('😀', '€', 'ä', 'Σ', '中', '\u0000', '\uFFFF', '\r', '\n') },
  );
  return fc.array(unit, { maxLength, size: 'max' }).map((a) => a.join(''));
}

const digits = (min: number, max: number): fc.Arbitrary<string> =>
  fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: min, maxLength: max, size: 'max' });

/** Originators of every kind the builder writes, with the type the decoder must report. */
export const originatorArb: fc.Arbitrary<{ originator: string; type: DecodedSms['originatorType'] }> = fc.oneof(
  digits(1, 20).map((d) => ({ originator: `+${d}`, type: 'international' as const })),
  fc
    .string({ unit: fc.constantFrom(...'0123456789*#'), minLength: 1, maxLength: 20, size: 'max' })
    .map((d) => ({ originator: d, type: 'unknown' as const })),
  // Alphanumeric: at most 11 septets fit the 10 octets of TP-OA (TS 23.040 §9.1.2.5); not all dial characters.
  fc
    .array(gsm7CharArb, { minLength: 1, maxLength: 11, size: 'max' })
    .map((a) => a.join(''))
    .filter((s) => (toSeptets(s)?.length ?? 99) <= 11 && !/^\+?[0-9*#]*$/.test(s))
    .map((s) => ({ originator: s, type: 'alphanumeric' as const })),
);

export const smscArb: fc.Arbitrary<string | undefined> = fc.option(
  fc.oneof(
    digits(1, 20).map((d) => `+${d}`),
    digits(1, 20),
  ),
  { nil: undefined },
);

const pad2 = (n: number): string => String(n).padStart(2, '0');

/** A service-centre time: local wall time in 2000-2099 (second precision) and a zone of -79..79 quarter hours. */
export const timestampArb: fc.Arbitrary<{ date: Date; tz: number; iso: string; ms: number }> = fc
  .record({
    localMs: fc
      .integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2099, 11, 31, 23, 59, 59) })
      .map((t) => t - (t % 1000)),
    tz: fc.oneof(fc.integer({ min: -79, max: 79 }), fc.constantFrom(0, 28, -12, 22, 79, -79)),
  })
  .map(({ localMs, tz }) => {
    const l = new Date(localMs);
    const offset = tz * 15;
    const abs = Math.abs(offset);
    const zone = `${offset < 0 ? '-' : '+'}${pad2(Math.floor(abs / 60))}:${pad2(abs % 60)}`;
    const iso = `${l.getUTCFullYear()}-${pad2(l.getUTCMonth() + 1)}-${pad2(l.getUTCDate())}T${pad2(l.getUTCHours())}:${pad2(l.getUTCMinutes())}:${pad2(l.getUTCSeconds())}${zone}`;
    const ms = localMs - offset * 60_000;
    return { date: new Date(ms), tz, iso, ms };
  });

/** DCS values (TS 23.038 §4) that all mean the same alphabet; the decoder must read each the same way. */
export const DCS_BY_ALPHABET = {
  gsm7: [0x00, 0x01, 0x02, 0x03, 0x10, 0x11, 0x12, 0x13, 0x40, 0x50, 0x53, 0xc0, 0xc8, 0xd0, 0xd3, 0xf0, 0xf1, 0xf3],
  '8bit': [0x04, 0x05, 0x14, 0x15, 0x17, 0x44, 0x54, 0xf4, 0xf5, 0xf7],
  ucs2: [0x08, 0x09, 0x18, 0x1a, 0x48, 0x58, 0xe0, 0xe8, 0xeb],
} as const;

/** An information element of the UDH that is neither concatenation nor a national language table. */
export const otherIeArb: fc.Arbitrary<number[]> = fc
  .tuple(
    fc.integer({ min: 0, max: 255 }).filter((iei) => iei !== 0x00 && iei !== 0x08 && iei !== 0x24 && iei !== 0x25),
    fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 6 }),
  )
  .map(([iei, data]) => [iei, data.length, ...data]);

export const concatArb: fc.Arbitrary<ConcatInfo> = fc
  .record({
    bits: fc.constantFrom(8 as const, 16 as const),
    reference: fc.nat({ max: 65535 }),
    total: fc.integer({ min: 1, max: 255 }),
    seq: fc.nat(),
  })
  .map(({ bits, reference, total, seq }) => ({
    reference: bits === 8 ? reference & 0xff : reference,
    referenceBits: bits,
    total,
    sequence: (seq % total) + 1,
  }));

function concatIe(c: ConcatInfo): number[] {
  return c.referenceBits === 8
    ? [0x00, 0x03, c.reference, c.total, c.sequence]
    : [0x08, 0x04, c.reference >> 8, c.reference & 0xff, c.total, c.sequence];
}

export interface AssembledCase {
  pdu: string;
  length: number;
  expect: Expected & { text: string; concat: ConcatInfo | undefined };
}

/**
 * One SMS-DELIVER assembled octet by octet. `body` is the text (GSM 7-bit, UCS2) or the data bytes (8-bit); the
 * UDH holds the IEs in order, the concatenation IE (when given) at `concatAt` among them.
 */
export const assembledArb: fc.Arbitrary<AssembledCase> = fc
  .record({
    who: originatorArb,
    smsc: smscArb,
    ts: timestampArb,
    pid: fc.integer({ min: 0, max: 255 }),
    alphabet: fc.constantFrom('gsm7' as const, '8bit' as const, 'ucs2' as const),
    dcsPick: fc.nat(),
    others: fc.array(otherIeArb, { maxLength: 3 }),
    concat: fc.option(concatArb, { nil: undefined }),
    concatAt: fc.nat(),
    udhiWithoutIes: fc.boolean(),
    gsm7: gsm7TextArb(160),
    ucs2: unicodeTextArb(70),
    data: fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 140, size: 'max' }),
    mms: fc.boolean(),
    // Type-of-address variants the builder never writes: numbering plan (low nibble) and, for plain digit strings,
    // TON national (2), network specific (3), subscriber (4), abbreviated (6), reserved (7).
    plan: fc.constantFrom(0x1, 0x0, 0x8, 0x9),
    ton: fc.constantFrom(0, 0, 2, 3, 4, 6, 7),
  })
  .map((g) => {
    const ies = [...g.others];
    if (g.concat) ies.splice(g.concatAt % (ies.length + 1), 0, concatIe(g.concat));
    const udhi = ies.length > 0 || g.udhiWithoutIes;
    const udhBody = ies.flat();
    const udh = udhi ? [udhBody.length, ...udhBody] : [];
    const dcsList = DCS_BY_ALPHABET[g.alphabet];
    const dcs = dcsList[g.dcsPick % dcsList.length] as number;
    let ud: number[];
    let udl: number;
    let text: string;
    if (g.alphabet === 'gsm7') {
      const room = 160 - Math.ceil((udh.length * 8) / 7);
      let septets = toSeptets(g.gsm7) ?? [];
      let chars = [...g.gsm7];
      while (septets.length > room) {
        chars = chars.slice(0, -1);
        septets = toSeptets(chars.join('')) ?? [];
      }
      text = chars.join('');
      const fill = udh.length === 0 ? 0 : (7 - ((udh.length * 8) % 7)) % 7;
      ud = [...udh, ...pack(septets, fill)];
      udl = (udh.length * 8 + fill) / 7 + septets.length;
    } else if (g.alphabet === 'ucs2') {
      const units: string[] = [];
      let used = 0;
      for (const ch of g.ucs2) {
        if (udh.length + 2 * (used + ch.length) > 140) break;
        units.push(ch);
        used += ch.length;
      }
      text = units.join('');
      const bytes: number[] = [];
      for (let i = 0; i < text.length; i++) bytes.push(text.charCodeAt(i) >> 8, text.charCodeAt(i) & 0xff);
      ud = [...udh, ...bytes];
      udl = ud.length;
    } else {
      const data = g.data.slice(0, 140 - udh.length);
      text = toHex(data);
      ud = [...udh, ...data];
      udl = ud.length;
    }
    const first = 0x00 | (g.mms ? 0 : 0x04) | (udhi ? 0x40 : 0);
    const oa = encodeAddressField(g.who.originator);
    let who = g.who;
    if (who.type !== 'alphanumeric') {
      const ton = who.type === 'international' ? 1 : g.ton;
      oa[1] = 0x80 | (ton << 4) | g.plan;
      if (who.type === 'unknown' && ton !== 0) who = { ...who, type: ton === 2 ? 'national' : 'other' };
    }
    const tpdu = [first, ...oa, g.pid, dcs, ...encodeTimestamp(g.ts.date, g.ts.tz), udl, ...ud];
    const smsc = encodeSmscField(g.smsc);
    return {
      pdu: toHex([...smsc, ...tpdu]),
      length: tpdu.length,
      expect: {
        originator: who.originator,
        originatorType: who.type,
        smsc: g.smsc,
        scTimestamp: g.ts.iso,
        scTimestampMs: g.ts.ms,
        encoding: g.alphabet,
        text,
        concat: g.concat,
      },
    };
  });
