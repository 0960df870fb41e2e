/**
 * Shared pieces of the fuzz targets: the FuzzTarget shape, the seed corpus read from the test fixtures (real modem
 * transcripts as byte streams, PDU fixtures) and byte-level mutators.
 *
 * Contract: the seed corpus is read once, synchronously, from the repository (found by walking up to package.json,
 * so this works from test/fuzz/ under vitest and from dist/test/fuzz/ under `npm run fuzz`). Mutators are fast-check
 * arbitraries, so a failing input shrinks towards its seed. Nothing here asserts: targets do.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';

/** One fuzz target: a named property, run briefly by `npm test` and at length by `npm run fuzz`. */
export interface FuzzTarget {
  /** Stable id, `area/what`, e.g. `framer/split-invariance`. */
  name: string;
  /** One line: what must hold. */
  holds: string;
  /** Runs in `npm test` (small: the whole fuzz suite must stay at a few seconds under load). */
  quickRuns: number;
  /** A fresh property each call (fast-check properties keep no state between runs). */
  property: () => fc.IPropertyWithHooks<never> | fc.IProperty<never>;
}

/** Builds a FuzzTarget while keeping the property's own argument types checked. */
export function target<Ts extends [unknown, ...unknown[]]>(
  name: string,
  holds: string,
  quickRuns: number,
  property: () => fc.IPropertyWithHooks<Ts>,
): FuzzTarget {
  return { name, holds, quickRuns, property: property as unknown as FuzzTarget['property'] };
}

function findRepoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'test', 'fixtures'))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error('fuzz: cannot find the repository root (package.json beside test/fixtures)');
    dir = up;
  }
}

const FIXTURES = join(findRepoRoot(), 'test', 'fixtures');

/**
 * A transcript (test/fixtures/transcripts/<family>/*.txt) as the bytes a modem would put on the wire: `<` and `!`
 * lines framed by CRLF as modems send them, `>` lines as an echo (command + CR) the way a modem with echo on does.
 */
export function transcriptToBytes(text: string): Buffer {
  const out: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\r$/, '');
    if (line.startsWith('< ') || line.startsWith('! ')) out.push(`\r\n${line.slice(2)}\r\n`);
    else if (line.startsWith('> ')) out.push(`${line.slice(2)}\r`);
  }
  return Buffer.from(out.join(''), 'utf8');
}

function listTranscripts(): string[] {
  const root = join(FIXTURES, 'transcripts');
  const out: string[] = [];
  for (const family of readdirSync(root).sort()) {
    for (const file of readdirSync(join(root, family)).sort())
      if (file.endsWith('.txt')) out.push(join(root, family, file));
  }
  return out;
}

/** Byte streams that are hard on a framer, beside the transcripts: prompts, echoed Ctrl-Z, boot noise, UTF-8, Latin-1. */
const SYNTHETIC_STREAMS: readonly Buffer[] = [
  Buffer.from('AT+CMGS=23\r\r\n> 0001000B915121551532F40000\x1a\r\n+CMGS: 12\r\n\r\nOK\r\n', 'latin1'),
  Buffer.from('\r\n>\r\n\r\n+CMTI: "SM",3\r\n', 'latin1'),
  Buffer.from('\x00\xff\xfe\x80RDY\r\n\r\n+CFUN: 1\r\n\x1b\r\n', 'latin1'),
  Buffer.from('\r\n+CUSD: 1,"Pilih: 1.Paket Ke\xc3\xa7il \xe2\x82\xac\r\n2.Info\r\n",15\r\n\r\nOK\r\n', 'latin1'),
  Buffer.from(
    '\r\nCaf\xe9 ouvert\r\n\r\n+CMT: ,24\r\n07911326040000F0040B911346610089F60000208062917314080CC8F71D14969741F977FD07\r\n',
    'latin1',
  ),
  Buffer.from('\n\r\n\r\r\nRING\n\r\n\r+CSQ: 21,99\rOK\n', 'latin1'),
];

/** Every seed byte stream: the transcripts, then the synthetic streams. */
export const SEED_STREAMS: readonly Buffer[] = Object.freeze([
  ...listTranscripts().map((file) => transcriptToBytes(readFileSync(file, 'utf8'))),
  ...SYNTHETIC_STREAMS,
]);

/** One PDU fixture (test/fixtures/pdus/*.json): the PDU as a modem lists it and its <length>. */
export interface PduSeed {
  name: string;
  pdu: string;
  length: number;
}

export const SEED_PDUS: readonly PduSeed[] = Object.freeze(
  readdirSync(join(FIXTURES, 'pdus'))
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => {
      const json = JSON.parse(readFileSync(join(FIXTURES, 'pdus', f), 'utf8')) as { pdu: string; length: number };
      return { name: f, pdu: json.pdu, length: json.length };
    }),
);

/** Bytes that matter to the parsers: line ends, prompt, quotes, commas, Ctrl-Z, ESC, noise, UTF-8 lead/continuation. */
export const INTERESTING_BYTES: readonly number[] = [
  0x0d, 0x0a, 0x3e, 0x20, 0x22, 0x2c, 0x3a, 0x2b, 0x1a, 0x1b, 0x00, 0x09, 0x7f, 0x80, 0x9f, 0xa0, 0xc3, 0xe2, 0xf0,
  0xfe, 0xff,
];

/** A byte, biased towards the interesting ones. */
export const byteArb: fc.Arbitrary<number> = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 255 }) },
  { weight: 2, arbitrary: fc.constantFrom(...INTERESTING_BYTES) },
  { weight: 2, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) },
);

/** One edit of a byte string; positions are taken modulo the current length. */
export type Mutation =
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'set'; at: number; byte: number }
  | { kind: 'insert'; at: number; bytes: number[] }
  | { kind: 'delete'; at: number; count: number }
  | { kind: 'duplicate'; at: number; count: number }
  | { kind: 'truncate'; at: number };

export const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('set' as const), at: fc.nat(), byte: byteArb }),
  fc.record({
    kind: fc.constant('insert' as const),
    at: fc.nat(),
    bytes: fc.array(byteArb, { minLength: 1, maxLength: 8 }),
  }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), count: fc.integer({ min: 1, max: 16 }) }),
  fc.record({ kind: fc.constant('duplicate' as const), at: fc.nat(), count: fc.integer({ min: 1, max: 32 }) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
);

/** Applies the edits in order; never throws, works on an empty input. */
export function mutate(input: Uint8Array, mutations: readonly Mutation[]): Buffer {
  let b = [...input];
  for (const m of mutations) {
    const n = b.length;
    switch (m.kind) {
      case 'flip':
        if (n > 0) b[m.at % n] = (b[m.at % n] as number) ^ (1 << m.bit);
        break;
      case 'set':
        if (n > 0) b[m.at % n] = m.byte;
        break;
      case 'insert':
        b.splice(m.at % (n + 1), 0, ...m.bytes);
        break;
      case 'delete':
        if (n > 0) b.splice(m.at % n, m.count);
        break;
      case 'duplicate':
        if (n > 0) {
          const at = m.at % n;
          b.splice(at, 0, ...b.slice(at, at + m.count));
        }
        break;
      case 'truncate':
        b = b.slice(0, m.at % (n + 1));
        break;
    }
  }
  return Buffer.from(b);
}

/** A seed (or a slice of one, to keep inputs small) with 0-8 edits. */
export function mutatedFrom(seeds: readonly Uint8Array[], options: { maxSlice?: number } = {}): fc.Arbitrary<Buffer> {
  const maxSlice = options.maxSlice ?? 4096;
  return fc
    .record({
      seed: fc.integer({ min: 0, max: seeds.length - 1 }),
      start: fc.nat(),
      edits: fc.array(mutationArb, { maxLength: 8 }),
    })
    .map(({ seed, start, edits }) => {
      const s = seeds[seed] as Uint8Array;
      const from = s.length <= maxSlice ? 0 : start % (s.length - maxSlice + 1);
      return mutate(s.subarray(from, from + maxSlice), edits);
    });
}

/** Splits `bytes` at the given offsets (taken modulo length + 1, deduplicated, sorted). */
export function splitAt(bytes: Buffer, cuts: readonly number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let start = 0;
  for (const p of points) {
    out.push(bytes.subarray(start, p));
    start = p;
  }
  out.push(bytes.subarray(start));
  return out;
}
