/**
 * Fuzz targets of the text codecs: GSM 7-bit septets and packing (src/sms/gsm7.ts), UCS2 (src/sms/ucs2.ts), and the
 * USSD codecs (src/modem/ussd-codec.ts: packed GSM 7-bit hex with the CR padding rule, UCS2 hex, ASCII hex, +CUSD
 * lines).
 *
 * What must hold:
 * - any string of GSM-alphabet characters survives textToSeptets -> pack (any fill bits) -> unpack -> septetsToText,
 *   and its septets equal those of the simulator's independent table (src/virtual-modem/septets.ts);
 * - packGsm7 -> unpackGsm7 gives the text back for every GSM string (CR padding rule of TS 23.038 §6.1.2.3.1; a
 *   text ending in CR on an octet boundary comes back as CR CR, which the standard defines as the same);
 *   unpackGsm7Hex (USSD, which also drops a zero-filled last septet for Huawei) too, except for a text whose last
 *   character is '@' (septet 0) on an octet boundary: that is the documented price of the Huawei rule;
 * - any string of BMP and astral characters survives UCS2 bytes and hex;
 * - decodeUssdPayload reads back UCS2 hex (UCS2 DCS), packed GSM 7-bit hex (packed modems) and ASCII hex (DCS 0) of
 *   printable text, and never throws on garbage; unpackGsm7Hex throws only its RangeError;
 * - a +CUSD line written from (status, payload, dcs), also split over several lines, parses back to them.
 */
import fc from 'fast-check';
import { packGsm7, packSeptets, septetsToText, textToSeptets, unpackGsm7, unpackSeptets } from '../../src/sms/gsm7.js';
import {
  decodeUcs2Bytes,
  decodeUcs2Hex,
  encodeUcs2Bytes,
  encodeUcs2Hex,
  hasLoneSurrogate,
  replaceLoneSurrogates,
} from '../../src/sms/ucs2.js';
import { continueCusd, decodeUssdPayload, parseCusdLine, unpackGsm7Hex } from '../../src/modem/ussd-codec.js';
import { packUssdHex, toSeptets as simToSeptets } from '../../src/virtual-modem/septets.js';
import { gsm7TextArb, unicodeTextArb } from './pdu-gen.js';
import { type FuzzTarget, target } from './support.js';

const eq = (what: string, got: unknown, want: unknown): void => {
  if (JSON.stringify(got) !== JSON.stringify(want))
    throw new Error(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
};

const gsm7Septets = target(
  'gsm7/septets-round-trip',
  'GSM text -> septets -> packed (any fill bits) -> unpacked -> text is the identity; septets match the simulator table',
  150,
  () =>
    fc.property(gsm7TextArb(200), fc.integer({ min: 0, max: 6 }), (text, fill) => {
      const septets = textToSeptets(text);
      if (septets === undefined) throw new Error(`GSM text ${JSON.stringify(text)} not encodable`);
      eq('septets vs simulator table', septets, simToSeptets(text));
      const packed = packSeptets(septets, fill);
      eq('unpacked septets', unpackSeptets(packed, septets.length, fill), septets);
      eq('text', septetsToText(septets), text);
    }),
);

const gsm7Packed = target(
  'gsm7/packed-hex-round-trip',
  'packGsm7 -> unpackGsm7 is the identity for GSM text; unpackGsm7Hex too unless the text ends in @ on an octet boundary',
  150,
  () =>
    fc.property(gsm7TextArb(200), (text) => {
      const hex = packGsm7(text);
      const septets = textToSeptets(text) ?? [];
      const onBoundary = septets.length > 0 && septets.length % 8 === 0;
      // §6.1.2.3.1: a text ending in CR on an octet boundary gets a second CR; the receiver sees CR CR, which the
      // standard defines as equal to CR. That is the one case where the text comes back one CR longer.
      const endsInCrOnBoundary = onBoundary && septets[septets.length - 1] === 0x0d;
      const want = endsInCrOnBoundary ? `${text}\r` : text;
      eq('unpackGsm7', unpackGsm7(hex), want);
      const endsInZeroOnBoundary = onBoundary && septets[septets.length - 1] === 0;
      if (text !== '' && !endsInZeroOnBoundary) eq('unpackGsm7Hex', unpackGsm7Hex(hex), want);
      // The simulator's packer agrees except where packGsm7 adds that second CR.
      if (!endsInCrOnBoundary) eq('simulator packUssdHex', packUssdHex(text), hex);
    }),
);

const ucs2RoundTrip = target(
  'ucs2/round-trip',
  'any BMP + astral string survives UCS2 bytes and hex; lone-surrogate helpers leave well-formed text alone',
  150,
  () =>
    fc.property(unicodeTextArb(120), (text) => {
      eq('bytes', decodeUcs2Bytes(encodeUcs2Bytes(text)), text);
      eq('hex', decodeUcs2Hex(encodeUcs2Hex(text)), text);
      if (hasLoneSurrogate(text)) throw new Error('well-formed text reported as having a lone surrogate');
      eq('replaceLoneSurrogates', replaceLoneSurrogates(text), text);
    }),
);

const ucs2Units = target(
  'ucs2/any-code-units',
  'any sequence of 16-bit units decodes to exactly those units; lone surrogates are found and replaced',
  100,
  () =>
    fc.property(fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 80, size: 'max' }), (units) => {
      const text = decodeUcs2Bytes(units.flatMap((u) => [u >> 8, u & 0xff]));
      if (text === undefined) throw new Error('even byte count refused');
      eq(
        'units',
        [...text].flatMap((c) => [...Array(c.length).keys()].map((i) => c.charCodeAt(i))),
        units,
      );
      const fixed = replaceLoneSurrogates(text);
      if (hasLoneSurrogate(fixed)) throw new Error('replaceLoneSurrogates left a lone surrogate');
      if (fixed.length !== text.length) throw new Error('replaceLoneSurrogates changed the length');
    }),
);

/** Printable text as a USSD menu carries it: no C0/C1 controls except CR, LF, TAB; no non-characters. */
const printableOnly = (t: string): string =>
  t.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]/g, '');

const ussdRoundTrip = target(
  'ussd/decode-round-trip',
  'decodeUssdPayload reads back UCS2 hex, packed GSM 7-bit hex and ASCII hex of printable text',
  150,
  () =>
    fc.property(
      unicodeTextArb(60)
        .map(printableOnly)
        .filter((t) => t !== ''),
      gsm7TextArb(100)
        .map(printableOnly)
        .filter((t) => t !== ''),
      fc.string({
        unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
        minLength: 1,
        maxLength: 80,
        size: 'max',
      }),
      fc.constantFrom(72, 0x11, 0x5a, 0x98),
      fc.constantFrom(0x0f, 0x00, 0x01, 0x10, 0xf0),
      (uni, gsm, ascii, ucs2Dcs, gsmDcs) => {
        // TS 23.038 §5: 0x11 starts with its language (packed 'id': 6932), group 1001 (0x98) with a user data header.
        const prefix = ucs2Dcs === 0x11 ? '6932' : ucs2Dcs === 0x98 ? '050003010101' : '';
        const wantUcs2 = { text: uni, form: 'ucs2-hex', ...(ucs2Dcs === 0x11 ? { language: 'id' } : {}) };
        eq(`UCS2 hex, dcs ${ucs2Dcs}`, decodeUssdPayload(prefix + encodeUcs2Hex(uni), ucs2Dcs), wantUcs2);
        // 0x10 (TS 23.038 §5): the text starts with its language and a CR.
        const full = gsmDcs === 0x10 ? `id\r${gsm}` : gsm;
        const septets = textToSeptets(full) ?? [];
        const zeroOnBoundary = septets.length % 8 === 0 && septets[septets.length - 1] === 0;
        if (!zeroOnBoundary) {
          const crOnBoundary = septets.length % 8 === 0 && septets[septets.length - 1] === 0x0d;
          const want = crOnBoundary ? `${gsm}\r` : gsm;
          const packedText = packGsm7(full);
          const wantGsm = { text: want, form: 'packed-gsm7-hex', ...(gsmDcs === 0x10 ? { language: 'id' } : {}) };
          eq(`packed GSM hex, dcs ${gsmDcs}`, decodeUssdPayload(packedText, gsmDcs, { packed: true }), wantGsm);
        }
        if (/[A-Za-z]/.test(ascii)) {
          eq('ASCII hex, dcs 0', decodeUssdPayload(Buffer.from(ascii, 'latin1').toString('hex').toUpperCase(), 0), {
            text: ascii,
            form: 'ascii-hex',
          });
        }
      },
    ),
);

const ussdGarbage = target(
  'ussd/garbage',
  'decodeUssdPayload never throws; unpackGsm7Hex throws nothing but RangeError; +CUSD parsing never throws',
  150,
  () =>
    fc.property(
      fc.oneof(
        fc.string({ unit: fc.constantFrom(...'0123456789ABCDEFabcdef'), maxLength: 200, size: 'max' }),
        fc.string({ unit: 'binary', maxLength: 80, size: 'max' }),
      ),
      fc.option(fc.integer({ min: -1, max: 300 }), { nil: undefined }),
      fc.boolean(),
      (text, dcs, packed) => {
        const d = decodeUssdPayload(text, dcs, { packed });
        if (typeof d.text !== 'string') throw new Error('no text');
        if (d.form === 'text' && d.text !== text) throw new Error('unrecognised string not returned unchanged');
        try {
          unpackGsm7Hex(text);
        } catch (err) {
          if (!(err instanceof RangeError)) throw err;
        }
        const line = parseCusdLine(`+CUSD: ${dcs ?? 0},${text}`);
        if (line && !line.complete) continueCusd(line, text);
      },
    ),
);

/** Characters that regular expressions and String.trim treat specially: line/paragraph separators, NEL, Unicode spaces. */
const AWKWARD_CHARS = ['\u2028', '\u2029', '\u0085', '\u00a0', '\ufeff', '\u3000', '\u000b', '\u000c', '\t', '😀'];

const cusdLines = target(
  'ussd/cusd-line-round-trip',
  'a +CUSD line (its string possibly spread over several lines) parses back to its status, payload and dcs',
  150,
  () =>
    fc.property(
      fc.integer({ min: 0, max: 5 }),
      // Payload lines as the framer hands them over: no CR/LF, trimmed of spaces and tabs, non-empty, no quote.
      fc.array(
        fc
          .string({
            unit: fc.oneof(
              fc.constantFrom(...'abcXYZ019 .,:;*#+-()Rp'),
              fc.constantFrom(...AWKWARD_CHARS),
              fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
            ),
            minLength: 1,
            maxLength: 30,
            size: 'max',
          })
          .map((s) => s.replace(/["\r\n]/g, '').replace(/^[ \t]+|[ \t]+$/g, ''))
          .filter((s) => s !== ''),
        { minLength: 1, maxLength: 4 },
      ),
      fc.option(fc.integer({ min: 0, max: 255 }), { nil: undefined }),
      fc.constantFrom('', ' '),
      (status, payloadLines, dcs, sp) => {
        const tail = dcs === undefined ? '"' : `",${sp}${dcs}`;
        const lines = [`+CUSD:${sp}${status},${sp}"${payloadLines[0]}`, ...payloadLines.slice(1)];
        lines[lines.length - 1] += tail;
        let parsed = parseCusdLine(lines[0] as string);
        if (parsed === undefined) throw new Error(`not a +CUSD line: ${lines[0]}`);
        for (const l of lines.slice(1)) {
          if (parsed.complete) throw new Error(`complete before line ${JSON.stringify(l)}`);
          parsed = continueCusd(parsed, l);
        }
        eq('parsed', parsed, { status, payload: payloadLines.join('\n'), dcs, complete: true });
      },
    ),
);

export const CODEC_TARGETS: readonly FuzzTarget[] = [
  gsm7Septets,
  gsm7Packed,
  ucs2RoundTrip,
  ucs2Units,
  ussdRoundTrip,
  ussdGarbage,
  cusdLines,
];
