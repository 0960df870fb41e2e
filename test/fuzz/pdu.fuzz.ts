/**
 * Fuzz targets of the SMS-DELIVER decoder (src/sms/pdu.ts) and multipart reassembly (src/sms/multipart.ts).
 *
 * What must hold (src/sms/pdu.ts header):
 * - "no wrong text from a valid PDU": for every valid PDU (pdu-gen.ts: random originator kinds, GSM 7-bit text with
 *   extension characters, UCS2 with surrogate pairs, 8-bit data, UDH with and without concatenation 8/16-bit and
 *   other elements, every DCS value of an alphabet, random timestamps and zones), the decoded text, originator,
 *   SMSC, timestamp, encoding and concatenation info equal what was encoded;
 * - decodeDeliver never throws and never reports an internal error, whatever the input (valid PDUs and fixtures
 *   with octets flipped, inserted, deleted, a wrong <length>, non-hex, odd lengths); an accepted mutated PDU still
 *   obeys the output invariants;
 * - parts of a concatenated message, decoded, shuffled and duplicated, join back to the text that was sent,
 *   also when the sender split a surrogate pair across parts;
 * - node-pdu, a second decoder, agrees on the text of simple single-part messages (not on 0x5F, which it decodes as
 *   a backtick, nor on the form feed of the extension table, which it lacks; nor on zones, which it replaces).
 */
import fc from 'fast-check';
import { parse as nodePduParse, type Deliver } from 'node-pdu';
import { joinParts } from '../../src/sms/multipart.js';
import { decodeDeliver, STATUS_REPORT_REASON, type DecodeResult } from '../../src/sms/pdu.js';
import { hasLoneSurrogate } from '../../src/sms/ucs2.js';
import { encodeSubmit } from '../../src/sms/submit.js';
import { buildDeliverPdus, buildStatusReportPdu } from '../../src/virtual-modem/pdu-builder.js';
import { readSubmitPdu } from '../../src/virtual-modem/submit-reader.js';
import {
  assembledArb,
  gsm7TextArb,
  originatorArb,
  smscArb,
  timestampArb,
  unicodeTextArb,
  type Expected,
} from './pdu-gen.js';
import { mutate, mutationArb, SEED_PDUS, type FuzzTarget, target } from './support.js';

function check(result: DecodeResult, want: Expected & { text?: string; concat?: unknown }, what: string): string {
  if (!result.ok) throw new Error(`${what}: valid PDU rejected: ${result.reason}`);
  const got: Record<string, unknown> = { ...result.sms, concat: result.sms.concat ?? undefined };
  for (const [k, v] of Object.entries(want)) {
    if (JSON.stringify(got[k]) !== JSON.stringify(v)) {
      throw new Error(`${what}: ${k} decoded as ${JSON.stringify(got[k])}, encoded ${JSON.stringify(v)}`);
    }
  }
  return result.sms.text;
}

const messageArb = fc.record({
  who: originatorArb,
  smsc: smscArb,
  ts: timestampArb,
  text: fc.oneof(
    { weight: 3, arbitrary: gsm7TextArb(480).map((t) => ({ text: t, encoding: 'gsm7' as const })) },
    { weight: 2, arbitrary: unicodeTextArb(220).map((t) => ({ text: t, encoding: 'ucs2' as const })) },
  ),
  refBits: fc.constantFrom(8 as const, 16 as const),
  ref: fc.nat({ max: 65535 }),
  pid: fc.integer({ min: 0, max: 255 }),
  more: fc.boolean(),
});

const validBuilt = target(
  'pdu/valid-built-messages',
  'every part of a message built by src/virtual-modem/pdu-builder.ts decodes to exactly what was encoded; the parts join to the text',
  60,
  () =>
    fc.property(messageArb, (m) => {
      const ref = m.refBits === 8 ? m.ref & 0xff : m.ref;
      const parts = buildDeliverPdus({
        originator: m.who.originator,
        text: m.text.text,
        encoding: m.text.encoding,
        timestamp: m.ts.date,
        tzQuarterHours: m.ts.tz,
        ...(m.smsc === undefined ? {} : { smsc: m.smsc }),
        concatRef: ref,
        concatRefBits: m.refBits,
        pid: m.pid,
        moreMessagesToSend: m.more,
      });
      const texts = parts.map((p, i) =>
        check(
          decodeDeliver({ index: 1, stat: 0, length: p.tpduLength, pdu: p.pdu }),
          {
            originator: m.who.originator,
            originatorType: m.who.type,
            smsc: m.smsc,
            scTimestamp: m.ts.iso,
            scTimestampMs: m.ts.ms,
            encoding: m.text.encoding,
            concat:
              parts.length === 1
                ? undefined
                : { reference: ref, referenceBits: m.refBits, total: parts.length, sequence: i + 1 },
          },
          `part ${i + 1}/${parts.length}`,
        ),
      );
      if (texts.join('') !== m.text.text)
        throw new Error(`parts decode to ${JSON.stringify(texts)}, not ${JSON.stringify(m.text.text)}`);
    }),
);

const validAssembled = target(
  'pdu/valid-assembled',
  'single TPDUs with 8-bit data, UDHs with other elements, every DCS of an alphabet decode to exactly what was encoded',
  100,
  () =>
    fc.property(assembledArb, (c) => {
      check(decodeDeliver({ index: 1, stat: 0, length: c.length, pdu: c.pdu }), c.expect, 'assembled PDU');
    }),
);

/** Seeds for mutation: the fixtures, plus freshly built valid PDUs (and a status report). */
const seedPduArb: fc.Arbitrary<{ pdu: string; length: number }> = fc.oneof(
  fc.constantFrom(...SEED_PDUS.map(({ pdu, length }) => ({ pdu, length }))),
  assembledArb.map((c) => ({ pdu: c.pdu, length: c.length })),
  fc
    .record({ ts: timestampArb, status: fc.integer({ min: 0, max: 255 }), ref: fc.integer({ min: 0, max: 255 }) })
    .map(({ ts, status, ref }) => {
      const r = buildStatusReportPdu({
        recipient: '+6281234567890',
        messageRef: ref,
        submitted: ts.date,
        discharged: ts.date,
        status,
        tzQuarterHours: ts.tz,
      });
      return { pdu: r.pdu, length: r.tpduLength };
    }),
);

type LengthChoice = 'kept' | 'recomputed' | 'random';

const mutatedPduArb = fc
  .record({
    seed: seedPduArb,
    edits: fc.array(mutationArb, { minLength: 1, maxLength: 6 }),
    length: fc.constantFrom<LengthChoice>('kept', 'recomputed', 'recomputed', 'random'),
    randomLength: fc.oneof(fc.integer({ min: -2, max: 300 }), fc.constantFrom(Number.NaN, 1.5, Infinity)),
    hexEdit: fc.option(
      fc.record({ at: fc.nat(), text: fc.constantFrom('G', ' ', '0', 'z', '\u00e9', '\n', 'ff', '') }),
      { nil: undefined },
    ),
    lowerCase: fc.boolean(),
  })
  .map((m) => {
    const octets = mutate(Buffer.from(m.seed.pdu, 'hex'), m.edits);
    let pdu = octets.toString('hex');
    pdu = m.lowerCase ? pdu : pdu.toUpperCase();
    if (m.hexEdit) {
      const at = m.hexEdit.at % (pdu.length + 1);
      pdu = pdu.slice(0, at) + m.hexEdit.text + pdu.slice(at);
    }
    const smscOctets = 1 + (octets[0] ?? 0);
    const length =
      m.length === 'kept'
        ? m.seed.length
        : m.length === 'recomputed'
          ? Math.max(0, octets.length - smscOctets)
          : m.randomLength;
    return { index: 1, stat: 0, length, pdu };
  });

const mutated = target(
  'pdu/mutated',
  'decodeDeliver never throws nor fails internally on mutated PDUs; what it accepts obeys the output invariants',
  200,
  () =>
    fc.property(mutatedPduArb, (stored) => {
      const r = decodeDeliver(stored);
      if (!r.ok) {
        if (typeof r.reason !== 'string' || r.reason === '') throw new Error('rejection without a reason');
        if (r.reason.startsWith('internal decoder error')) throw new Error(`decoder bug: ${r.reason}`);
        return;
      }
      const s = r.sms;
      if (s.pdu !== stored.pdu.trim().toUpperCase()) throw new Error('pdu field is not the input, upper-cased');
      if (!Number.isFinite(s.scTimestampMs) || Number.isNaN(Date.parse(s.scTimestamp)))
        throw new Error(`bad timestamp ${s.scTimestamp}`);
      if (Date.parse(s.scTimestamp) !== s.scTimestampMs)
        throw new Error(`${s.scTimestamp} is not ${s.scTimestampMs} ms`);
      if (s.encoding === 'ucs2' && s.concat === undefined && hasLoneSurrogate(s.text))
        throw new Error('lone surrogate in a single-part text');
      if (s.encoding === '8bit' && !/^(?:[0-9A-F]{2})*$/.test(s.text))
        throw new Error('8-bit text is not upper-case hex');
      if (s.encoding === 'gsm7' && [...s.text].length > 160)
        throw new Error(`${[...s.text].length} GSM 7-bit characters in one PDU`);
      if (s.concat && (s.concat.sequence < 1 || s.concat.sequence > s.concat.total))
        throw new Error('concat sequence outside 1..total');
    }),
);

const garbage = target(
  'pdu/garbage',
  'decodeDeliver never throws nor fails internally on arbitrary hex, text and <length> values',
  100,
  () =>
    fc.property(
      fc.oneof(
        fc.string({ unit: fc.constantFrom(...'0123456789ABCDEFabcdef'), maxLength: 400, size: 'max' }),
        fc.string({ unit: 'binary', maxLength: 60, size: 'max' }),
        fc.constantFrom(undefined as unknown as string, 42 as unknown as string, null as unknown as string),
      ),
      fc.oneof(fc.integer({ min: -1, max: 200 }), fc.constant(Number.NaN)),
      (pdu, length) => {
        const r = decodeDeliver({ index: undefined, stat: undefined, length, pdu });
        if (!r.ok && r.reason.startsWith('internal decoder error')) throw new Error(`decoder bug: ${r.reason}`);
      },
    ),
);

/** Splits `text` into 1-6 parts at random code-unit offsets (so a surrogate pair may be cut in two). */
const splitArb = (text: string, cutUnits: boolean): fc.Arbitrary<string[]> =>
  fc.array(fc.nat(), { maxLength: 5 }).map((cuts) => {
    const units = cutUnits ? text.split('') : [...text];
    const points = [...new Set(cuts.map((c) => c % (units.length + 1)))].sort((a, b) => a - b);
    const out: string[] = [];
    let start = 0;
    for (const p of points) {
      out.push(units.slice(start, p).join(''));
      start = p;
    }
    out.push(units.slice(start).join(''));
    return out.length > 1 ? out : [...out, ''];
  });

const multipartJoin = target(
  'pdu/multipart-join',
  'parts decoded in any order, some twice, join to the text that was sent (surrogate pairs split across parts too)',
  60,
  () =>
    fc.property(
      fc
        .oneof(
          gsm7TextArb(70).chain((t) =>
            splitArb(t, false).map((parts) => ({ text: t, parts, encoding: 'gsm7' as const })),
          ),
          unicodeTextArb(30).chain((t) =>
            splitArb(t, true).map((parts) => ({ text: t, parts, encoding: 'ucs2' as const })),
          ),
        )
        .chain((m) =>
          fc.record({
            m: fc.constant(m),
            order: fc.shuffledSubarray([...m.parts.keys(), ...m.parts.keys()], { minLength: m.parts.length }),
            refBits: fc.constantFrom(8 as const, 16 as const),
          }),
        ),
      ({ m, order, refBits }) => {
        const built = buildDeliverPdus({
          originator: '858',
          text: m.text,
          encoding: m.encoding,
          partsOverride: m.parts,
          timestamp: new Date(Date.UTC(2024, 0, 8)),
          concatRef: 42,
          concatRefBits: refBits,
        });
        const seen = new Set(order);
        const arrived = [...order, ...[...m.parts.keys()].filter((i) => !seen.has(i))];
        const decoded = arrived.map((i) => {
          const p = built[i];
          if (p === undefined) throw new Error(`no part ${i}`);
          const r = decodeDeliver({ index: i, stat: 0, length: p.tpduLength, pdu: p.pdu });
          if (!r.ok) throw new Error(`part ${i + 1} rejected: ${r.reason}`);
          if (r.sms.concat === undefined) throw new Error(`part ${i + 1} lost its concatenation element`);
          return { sequence: r.sms.concat.sequence, text: r.sms.text, total: r.sms.concat.total };
        });
        const joined = joinParts(decoded, m.parts.length);
        if (!joined.complete || joined.conflicting.length > 0)
          throw new Error(`join incomplete or conflicting: ${JSON.stringify(joined)}`);
        if (joined.text !== m.text)
          throw new Error(`joined ${JSON.stringify(joined.text)}, sent ${JSON.stringify(m.text)}`);
      },
    ),
);

/**
 * Characters node-pdu decodes wrongly, both as a backtick: 0x5F '§', and ESC 0x0A form feed (TS 23.038 §6.2.1.1),
 * which its extension table lacks.
 */
const NODE_PDU_WRONG = /[§\f]/;

const nodePduOracle = target(
  'pdu/node-pdu-agrees',
  'node-pdu, a second decoder, reads the same text and originator digits from simple single-part messages',
  40,
  () =>
    fc.property(
      fc.oneof(
        gsm7TextArb(150)
          .filter((t) => !NODE_PDU_WRONG.test(t))
          .map((t) => ({ text: t, encoding: 'gsm7' as const })),
        unicodeTextArb(60).map((t) => ({ text: t, encoding: 'ucs2' as const })),
      ),
      fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 3, maxLength: 15, size: 'max' }),
      timestampArb,
      ({ text, encoding }, digits, ts) => {
        const [part, ...more] = buildDeliverPdus({
          originator: `+${digits}`,
          text,
          encoding,
          timestamp: ts.date,
          tzQuarterHours: ts.tz,
        });
        if (part === undefined || more.length > 0) return; // multi-part: outside this oracle's scope
        const ours = decodeDeliver({ index: 1, stat: 0, length: part.tpduLength, pdu: part.pdu });
        if (!ours.ok) throw new Error(`rejected: ${ours.reason}`);
        const theirs = nodePduParse(part.pdu) as Deliver;
        if (theirs.data.getText() !== ours.sms.text) {
          throw new Error(
            `text: ours ${JSON.stringify(ours.sms.text)}, node-pdu ${JSON.stringify(theirs.data.getText())}`,
          );
        }
        if (theirs.address.phone !== digits)
          throw new Error(`originator: node-pdu ${theirs.address.phone}, sent ${digits}`);
      },
    ),
);

const statusReports = target(
  'pdu/status-report',
  'a valid SMS-STATUS-REPORT is rejected as a status report, never decoded as a message',
  40,
  () =>
    fc.property(
      originatorArb,
      timestampArb,
      fc.integer({ min: 0, max: 255 }),
      fc.integer({ min: 0, max: 255 }),
      smscArb,
      (who, ts, ref, status, smsc) => {
        const r = buildStatusReportPdu({
          recipient: who.originator,
          messageRef: ref,
          submitted: ts.date,
          discharged: ts.date,
          status,
          tzQuarterHours: ts.tz,
          ...(smsc === undefined ? {} : { smsc }),
        });
        const d = decodeDeliver({ index: 1, stat: 0, length: r.tpduLength, pdu: r.pdu });
        if (d.ok || d.reason !== STATUS_REPORT_REASON) throw new Error(`status report decoded as ${JSON.stringify(d)}`);
      },
    ),
);

const submitRoundTrip = target(
  'pdu/submit-round-trip',
  'every SMS-SUBMIT part of encodeSubmit reads back (src/virtual-modem/submit-reader.ts) to the destination, and the parts to the text',
  60,
  () =>
    fc.property(
      fc
        .tuple(
          fc.constantFrom('', '+'),
          fc.string({ unit: fc.constantFrom(...'0123456789*#'), minLength: 1, maxLength: 20, size: 'max' }),
        )
        .map(([p, d]) => `${p}${d}`),
      fc.oneof(gsm7TextArb(480), unicodeTextArb(220)),
      fc.record({
        reference: fc.nat({ max: 255 }),
        statusReport: fc.boolean(),
        validityRelative: fc.option(fc.nat({ max: 255 }), { nil: undefined }),
      }),
      (to, text, opts) => {
        const parts = encodeSubmit(
          to,
          text,
          opts.validityRelative === undefined ? { reference: opts.reference, statusReport: opts.statusReport } : opts,
        );
        const texts = parts.map((p, i) => {
          const r = readSubmitPdu(p.pdu, p.tpduLength);
          if (!r.ok) throw new Error(`part ${i + 1}/${parts.length} unreadable: ${r.reason}`);
          if (r.submit.destination !== to)
            throw new Error(`destination ${JSON.stringify(r.submit.destination)}, sent to ${JSON.stringify(to)}`);
          if (r.submit.statusReportRequested !== opts.statusReport) throw new Error('status report flag lost');
          const digits = to.replace(/^\+/, '').length;
          const udOctets =
            p.tpduLength - (2 + 2 + Math.ceil(digits / 2) + 2 + (opts.validityRelative === undefined ? 0 : 1) + 1);
          if (udOctets > 140) throw new Error(`part ${i + 1} carries ${udOctets} octets of user data; at most 140 fit`);
          return r.submit.text ?? '';
        });
        if (texts.join('') !== text)
          throw new Error(`parts read as ${JSON.stringify(texts)}, sent ${JSON.stringify(text)}`);
      },
    ),
);

export const PDU_TARGETS: readonly FuzzTarget[] = [
  validBuilt,
  validAssembled,
  mutated,
  garbage,
  multipartJoin,
  nodePduOracle,
  statusReports,
  submitRoundTrip,
];
