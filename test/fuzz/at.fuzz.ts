/**
 * Fuzz targets of the AT layer: the framer (bytes -> lines) fed real transcripts with bytes flipped, inserted and
 * deleted, cut at random chunk boundaries; the URC table of every profile, the final-result table and the response
 * parsers fed the lines that come out of it.
 *
 * What must hold (src/at/framer.ts, src/modem/urcs.ts, src/modem/parse.ts, src/at/results.ts headers):
 * - the framer never throws and gives the same events for every split of the same bytes (including one byte at a
 *   time), with and without an echo armed at any point of the stream;
 * - clean text (ASCII, UTF-8, line ends, prompts) gives exactly the lines an independent splitter finds;
 * - memory stays bounded: no event and no pending line (seen by flushing any prefix) exceeds maxLineBytes;
 * - every URC row's parse/isComplete, parseCusdLine/continueCusd, the final-result matchers and the 27.005/27.007
 *   response parsers never throw on any line;
 * - well-formed URCs, +CMGL/+CMGR listings and +COPS/+CSCA answers parse back to the values written into them,
 *   whatever text their quoted fields hold.
 */
import fc from 'fast-check';
import { AtFramer } from '../../src/at/framer.js';
import { explainFinal, FINAL_RESULTS, matchFinalResult } from '../../src/at/results.js';
import type { FrameEvent } from '../../src/at/types.js';
import * as parse from '../../src/modem/parse.js';
import { PROFILES } from '../../src/modem/profiles/index.js';
import { buildUrcTable, GENERIC_URCS } from '../../src/modem/urcs.js';
import { continueCusd, decodeUssdPayload, parseCusdLine } from '../../src/modem/ussd-codec.js';
import { byteArb, type FuzzTarget, mutatedFrom, SEED_STREAMS, splitAt, target } from './support.js';

/** Pieces of modem output that meet at awkward places when strung together in random order. */
const TOKENS: readonly Buffer[] = [
  '\r\n',
  '\r',
  '\n',
  '> ',
  '>',
  ' ',
  '\t',
  'OK',
  'ERROR',
  'AT+CSQ',
  '+CMTI: "SM",1',
  '+CUSD: 1,"Menu',
  '",15',
  'RDY',
  '0891261801000004',
  '\x1a',
  '\x1b',
  '\x00',
  '\xff',
  '\x80',
  '\xc3\xa7',
  '\xe2\x82\xac',
  '\xe9',
  '\xc3',
  'A'.repeat(70),
].map((t) => Buffer.from(t, 'latin1'));

const tokenStreamArb: fc.Arbitrary<Buffer> = fc
  .array(
    fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...TOKENS) },
      { weight: 1, arbitrary: byteArb.map((b) => Buffer.from([b])) },
    ),
    { maxLength: 60, size: 'max' },
  )
  .map((parts) => Buffer.concat(parts));

/** Input streams: mutated transcripts, strings of awkward tokens, raw biased bytes. */
const streamArb: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 3, arbitrary: mutatedFrom(SEED_STREAMS, { maxSlice: 1500 }) },
  { weight: 3, arbitrary: tokenStreamArb },
  { weight: 1, arbitrary: fc.array(byteArb, { maxLength: 600, size: 'max' }).map((b) => Buffer.from(b)) },
);

const maxLineArb = fc.oneof(fc.constant(undefined), fc.integer({ min: 2, max: 80 }));

/**
 * Feeds the chunks in order; when `echo` is given, expectEcho(echo.text) is called once `echo.at` bytes have been
 * pushed (the chunk holding that offset is cut there, as the channel arms an echo between two reads).
 */
function run(
  chunks: readonly Buffer[],
  options: { maxLineBytes?: number },
  echo: { text: string; at: number } | undefined,
): FrameEvent[] {
  const f = new AtFramer(options);
  const out: FrameEvent[] = [];
  let offset = 0;
  let armed = echo === undefined;
  const arm = () => {
    if (!armed && echo !== undefined && offset >= echo.at) {
      f.expectEcho(echo.text);
      armed = true;
    }
  };
  for (const c of chunks) {
    arm();
    const cut = echo !== undefined && !armed && echo.at < offset + c.length ? echo.at - offset : c.length;
    out.push(...f.push(c.subarray(0, cut)));
    offset += cut;
    arm();
    if (cut < c.length) {
      out.push(...f.push(c.subarray(cut)));
      offset += c.length - cut;
    }
  }
  arm();
  out.push(...f.flush());
  return out;
}

/** Events as comparable plain values (garbage bytes as hex). */
function shape(events: readonly FrameEvent[]): unknown[] {
  return events.map((e) =>
    e.type === 'garbage' ? { type: 'garbage', hex: e.bytes.toString('hex'), reason: e.reason } : e,
  );
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function eventBytes(e: FrameEvent): number {
  if (e.type === 'garbage') return e.bytes.length;
  if (e.type === 'line') return e.text.length;
  return 0;
}

const splitInvariance = target(
  'framer/split-invariance',
  'same events for every split of the same bytes (random cuts and byte by byte), an echo armed anywhere; never throws',
  100,
  () =>
    fc.property(
      streamArb,
      fc.array(fc.nat(), { maxLength: 24, size: 'max' }),
      maxLineArb,
      fc.option(
        fc.record({
          text: fc.constantFrom('AT', 'AT+CSQ', 'ATE0', 'AT+CMGS=23', 'AT+CPIN?', '0891261801000004'),
          at: fc.nat(),
        }),
        { nil: undefined },
      ),
      (bytes, cuts, maxLineBytes, echoPick) => {
        const options = maxLineBytes === undefined ? {} : { maxLineBytes };
        const echo = echoPick === undefined ? undefined : { text: echoPick.text, at: echoPick.at % (bytes.length + 1) };
        const whole = shape(run([bytes], options, echo));
        const cut = shape(run(splitAt(bytes, cuts), options, echo));
        if (!same(whole, cut)) throw new Error(`events differ between one chunk and cuts ${JSON.stringify(cuts)}`);
        const single = shape(
          run(
            [...bytes].map((b) => Buffer.from([b])),
            options,
            echo,
          ),
        );
        if (!same(whole, single)) throw new Error('events differ between one chunk and one byte at a time');
      },
    ),
);

/**
 * What the framer must make of clean text (no controls but CR/LF/TAB, no noise, valid UTF-8), written independently:
 * split on CR or LF, drop a byte order mark opening a line, trim spaces and tabs, drop empty lines; `> ` at a line
 * start and a line that is exactly `>` are prompts.
 */
function expectedEvents(text: string): FrameEvent[] {
  const out: FrameEvent[] = [];
  const finish = (raw: string) => {
    // A UTF-8 byte order mark opening a line is dropped (the framer's TextDecoder does that; harmless, and it lets
    // a URC behind it be recognised). Found by this target; kept as the framer's behaviour.
    const t = raw.replace(/^\ufeff/, '').replace(/^[ \t]+|[ \t]+$/g, '');
    if (t === '>') out.push({ type: 'prompt' });
    else if (t !== '') out.push({ type: 'line', text: t });
  };
  let cur = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (cur === '' && c === '>' && text[i + 1] === ' ') {
      out.push({ type: 'prompt' });
      i++;
    } else if (c === '\r' || c === '\n') {
      finish(cur);
      cur = '';
    } else {
      cur += c;
    }
  }
  finish(cur);
  return out;
}

const cleanSegmentArb: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '\r\n',
      '\r',
      '\n',
      '> ',
      '>',
      ' ',
      '\t',
      'OK',
      '+CMTI: "SM",1',
      'Caf\u00e9',
      '\u20ac 5.000',
      '😀',
      '\u2028',
    ),
  },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme-ascii', maxLength: 12, size: 'max' }) },
  {
    weight: 1,
    arbitrary: fc
      .string({ unit: 'binary', maxLength: 6 })
      .map((t) => t.replace(/[\u0000-\u0008\u000a-\u001f\u007f]/g, '')),
  },
);

const lineOracle = target(
  'framer/clean-text-oracle',
  'clean text (ASCII, UTF-8, CR/LF, prompts) at any chunk split gives exactly the lines and prompts of an independent splitter',
  100,
  () =>
    fc.property(
      fc.array(cleanSegmentArb, { maxLength: 40, size: 'max' }),
      fc.array(fc.nat(), { maxLength: 12, size: 'max' }),
      (segments, cuts) => {
        const text = segments.join('');
        const got = run(splitAt(Buffer.from(text, 'utf8'), cuts), {}, undefined);
        const want = expectedEvents(text);
        if (!same(shape(got), shape(want)))
          throw new Error(`framer gave ${JSON.stringify(shape(got))}, expected ${JSON.stringify(want)}`);
      },
    ),
);

const memoryBound = target(
  'framer/memory-bound',
  'no event and no pending partial line is ever longer than maxLineBytes',
  60,
  () =>
    fc.property(
      fc.oneof(
        streamArb,
        fc
          .array(byteArb, { maxLength: 400, size: 'max' })
          .map((b) => Buffer.concat([Buffer.from(b), Buffer.alloc(300, 0x41)])),
      ),
      fc.array(fc.nat(), { maxLength: 8 }),
      maxLineArb,
      (bytes, cuts, maxLineBytes) => {
        const max = maxLineBytes ?? 4096;
        const f = new AtFramer(maxLineBytes === undefined ? {} : { maxLineBytes });
        for (const chunk of splitAt(bytes, cuts)) {
          for (const e of f.push(chunk)) {
            if (eventBytes(e) > max)
              throw new Error(`${e.type} event of ${eventBytes(e)} bytes exceeds the cap ${max}`);
          }
        }
        // What flush() returns is what was pending: at any cut point (the stream is random), it is within the cap.
        for (const e of f.flush()) {
          if (eventBytes(e) > max) throw new Error(`pending line of ${eventBytes(e)} bytes exceeds the cap ${max}`);
        }
      },
    ),
);

/** Lines shaped like URCs and responses, with fields that are sometimes wrong. */
const PREFIXES = [
  '+CMTI:',
  '+CDSI:',
  '+CMT:',
  '+CDS:',
  '+CUSD:',
  '+CLIP:',
  '+CFUN:',
  '+CPIN:',
  '+CREG:',
  '+CEREG:',
  '+CGREG:',
  '^RSSI:',
  '^HCSQ:',
  '^SMMEMFULL:',
  '+QUSIM:',
  '+QIND:',
  '+WIND:',
  '+ZPASR:',
  '+CSQ:',
  '+COPS:',
  '+CSCA:',
  '+CNUM:',
  '+CPMS:',
  '+CNMI:',
  '+CMGL:',
  '+CMGR:',
  '+CMGS:',
  '+CME ERROR:',
  '+CMS ERROR:',
  'RING',
  'RDY',
  'OK',
  'ERROR',
];
const fieldArb = fc.oneof(
  fc.nat({ max: 400 }).map(String),
  fc.constantFrom(
    '"SM"',
    '"ME"',
    '"',
    '""',
    ',',
    ' ',
    '-1',
    '99',
    '(0-3)',
    '(0,1,2)',
    '"+6281234"',
    '145',
    'READY',
    '1A2B',
  ),
  fc.string({ unit: 'binary', maxLength: 12, size: 'max' }),
  fc.string({ unit: fc.constantFrom(...'0123456789ABCDEF'), maxLength: 40, size: 'max' }),
);
const urcLikeArb: fc.Arbitrary<string> = fc
  .tuple(
    fc.constantFrom(...PREFIXES),
    fc.constantFrom('', ' ', '  '),
    fc.array(fieldArb, { maxLength: 8 }),
    fc.constantFrom(',', ', ', ',,'),
  )
  .map(([p, sp, fields, sep]) => `${p}${sp}${fields.join(sep)}`);

/** Lines as the framer gives them from a mutated transcript. */
const framedLinesArb: fc.Arbitrary<string[]> = mutatedFrom(SEED_STREAMS, { maxSlice: 800 }).map((bytes) =>
  run([bytes], {}, undefined).flatMap((e) => (e.type === 'line' ? [e.text] : [])),
);

const linesArb: fc.Arbitrary<string[]> = fc.oneof(
  framedLinesArb,
  fc.array(fc.oneof(urcLikeArb, fc.string({ unit: 'binary', maxLength: 40, size: 'max' })), {
    minLength: 1,
    maxLength: 6,
  }),
);

const TABLES = PROFILES.map((p) => ({
  id: p.id,
  table: buildUrcTable(p),
  finals: [...p.finalResults, ...FINAL_RESULTS],
}));

function responseParsers(lines: string[]): void {
  parse.parseCsq(lines);
  for (const source of ['CREG', 'CEREG', 'CGREG'] as const) parse.parseRegistrationQuery(lines, source);
  parse.parseCopsName(lines);
  parse.parseCsca(lines);
  parse.parseCnum(lines);
  parse.parseCpmsQuery(lines);
  parse.parseCpmsSet(lines);
  const supported = parse.parseCpmsSupported(lines);
  parse.chooseStorage(supported, ['SM', 'ME', 'MT']);
  const ranges = parse.parseCnmiRanges(lines);
  if (ranges !== undefined) {
    parse.chooseCnmi(ranges, 'store');
    parse.chooseCnmi(ranges, 'direct');
  }
  parse.parseCmgl(lines);
  parse.parseCmgr(lines, 1);
  parse.parseCmgs(lines);
  parse.plainAnswer(lines);
  parse.extractId(lines, /\d{15}/);
}

const lineParsers = target(
  'urc/line-parsers',
  'URC rows of every profile, CUSD line parsing, final results and response parsers never throw on any line',
  120,
  () =>
    fc.property(linesArb, (lines) => {
      for (let i = 0; i < lines.length; i++) {
        const line = lines[i] as string;
        const next = lines[i + 1] ?? '';
        for (const { id, table, finals } of TABLES) {
          for (const entry of table) {
            entry.pattern.lastIndex = 0;
            if (!entry.pattern.test(line)) continue;
            const urcLines = [line, ...lines.slice(i + 1, i + 1 + (entry.extraLines ?? 0))];
            try {
              entry.isComplete?.([...urcLines]);
              const data = entry.parse?.([...urcLines]);
              if (data !== undefined && (typeof data !== 'object' || data === null))
                throw new Error('parse returned a non-object');
            } catch (err) {
              throw new Error(
                `profile ${id}, URC row ${entry.name} threw on ${JSON.stringify(urcLines)}: ${String(err)}`,
              );
            }
          }
          const fin = matchFinalResult(line, finals);
          if (fin !== undefined && fin.errorCode !== undefined && !Number.isInteger(fin.errorCode))
            throw new Error('non-integer error code');
        }
        explainFinal(line);
        const cusd = parseCusdLine(line);
        if (cusd !== undefined) {
          const joined = cusd.complete ? cusd : continueCusd(cusd, next);
          if (joined.payload !== undefined) {
            decodeUssdPayload(joined.payload, joined.dcs, { packed: true });
            decodeUssdPayload(joined.payload, joined.dcs);
          }
        }
      }
      responseParsers(lines);
    }),
);

/** Text a modem may put in a quoted field (phonebook name, operator name): anything but the quote, CR and LF. */
const quotedTextArb: fc.Arbitrary<string> = fc
  .string({
    unit: fc.oneof(
      fc.constantFrom(...'abcXYZ019 ,.:;'),
      fc.constantFrom('\u2028', '\u2029', '\u0085', '\u00a0', '\u3000', '\t', '😀'),
      fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
    ),
    maxLength: 20,
    size: 'max',
  })
  .map((t) => t.replace(/["\r\n]/g, ''));

const storageArb = fc.constantFrom('SM', 'ME', 'MT', 'SR', 'BM');

const urcRoundTrip = target(
  'urc/well-formed-round-trip',
  'well-formed +CMTI/+CDSI/+CMT (any <alpha>)/+CDS/+CREG lines parse back to the values written into them',
  120,
  () =>
    fc.property(
      storageArb,
      fc.nat({ max: 65535 }),
      fc.constantFrom('', ' ', '  '),
      fc.boolean(),
      fc.string({ unit: fc.constantFrom(...'0123456789ABCDEF'), minLength: 2, maxLength: 60, size: 'max' }),
      fc.integer({ min: 0, max: 10 }),
      fc.option(quotedTextArb, { nil: undefined }),
      (storage, index, sp, quoted, pdu, stat, alpha) => {
        const mem = quoted ? `"${storage}"` : storage;
        const find = (line: string) => {
          const e = GENERIC_URCS.find((r) => r.pattern.test(line));
          if (e === undefined) throw new Error(`no URC row matches ${JSON.stringify(line)}`);
          return e;
        };
        const check = (line: string, name: string, lines: string[], want: Record<string, unknown>) => {
          const e = find(line);
          if (e.name !== name) throw new Error(`${JSON.stringify(line)} matched ${e.name}, expected ${name}`);
          const got = e.parse?.(lines) ?? {};
          for (const [k, v] of Object.entries(want)) {
            if (got[k] !== v)
              throw new Error(
                `${name}: ${k} is ${JSON.stringify(got[k])}, expected ${JSON.stringify(v)} from ${JSON.stringify(lines)}`,
              );
          }
        };
        const cmti = `+CMTI:${sp}${mem},${sp}${index}`;
        check(cmti, 'cmti', [cmti], { storage, index });
        const cdsi = `+CDSI:${sp}${mem},${index}`;
        check(cdsi, 'cdsi', [cdsi], { storage, index });
        const cmt = `+CMT:${sp}${alpha === undefined ? '' : `"${alpha}"`},${index}`;
        check(cmt, 'cmt', [cmt, pdu], { alpha: alpha === '' ? undefined : alpha, length: index, pdu });
        const cds = `+CDS:${sp}${index}`;
        check(cds, 'cds', [cds, pdu], { length: index, pdu });
        const creg = `+CREG:${sp}${stat},"${pdu.slice(0, 4)}","${pdu.slice(0, 8)}",${index % 8}`;
        check(creg, 'creg', [creg], { stat, lac: pdu.slice(0, 4), ci: pdu.slice(0, 8), act: index % 8 });
      },
    ),
);

const responseRoundTrip = target(
  'parse/response-round-trip',
  '+CMGL/+CMGR listings and +COPS/+CSCA answers with any text in their quoted fields parse back to what was written',
  120,
  () =>
    fc.property(
      fc.array(
        fc.record({
          index: fc.nat({ max: 400 }),
          stat: fc.integer({ min: 0, max: 3 }),
          alpha: fc.option(quotedTextArb, { nil: undefined }),
          length: fc.integer({ min: 1, max: 180 }),
          pdu: fc.string({ unit: fc.constantFrom(...'0123456789ABCDEF'), minLength: 2, maxLength: 40, size: 'max' }),
        }),
        { maxLength: 4 },
      ),
      quotedTextArb.filter((t) => t.trim() !== ''),
      fc.string({ unit: fc.constantFrom(...'+0123456789'), minLength: 1, maxLength: 16, size: 'max' }),
      (rows, operator, smsc) => {
        const lines = rows.flatMap((r) => [
          `+CMGL: ${r.index},${r.stat},${r.alpha === undefined ? '' : `"${r.alpha}"`},${r.length}`,
          r.pdu,
        ]);
        const listed = parse.parseCmgl(lines);
        const want = rows.map((r) => ({ index: r.index, stat: r.stat, length: r.length, pdu: r.pdu }));
        if (JSON.stringify(listed.messages) !== JSON.stringify(want) || listed.skipped.length > 0) {
          throw new Error(`+CMGL ${JSON.stringify(lines)} parsed as ${JSON.stringify(listed)}`);
        }
        for (const r of rows) {
          const read = parse.parseCmgr(
            [`+CMGR: ${r.stat},${r.alpha === undefined ? '' : `"${r.alpha}"`},${r.length}`, r.pdu],
            r.index,
          );
          if (JSON.stringify(read) !== JSON.stringify({ index: r.index, stat: r.stat, length: r.length, pdu: r.pdu })) {
            throw new Error(`+CMGR with alpha ${JSON.stringify(r.alpha)} parsed as ${JSON.stringify(read)}`);
          }
        }
        const cops = parse.parseCopsName([`+COPS: 0,0,"${operator}",7`]);
        if (cops !== operator)
          throw new Error(`+COPS name ${JSON.stringify(operator)} parsed as ${JSON.stringify(cops)}`);
        const csca = parse.parseCsca([`+CSCA: "${smsc}",145`]);
        if (csca !== smsc) throw new Error(`+CSCA ${JSON.stringify(smsc)} parsed as ${JSON.stringify(csca)}`);
      },
    ),
);

export const AT_TARGETS: readonly FuzzTarget[] = [
  splitInvariance,
  lineOracle,
  memoryBound,
  lineParsers,
  urcRoundTrip,
  responseRoundTrip,
];
