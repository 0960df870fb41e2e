import { describe, it, expect } from 'vitest';
import { AtFramer, MAX_LINE_BYTES } from '../../src/at/framer.js';
import type { FrameEvent } from '../../src/at/types.js';

const b = (s: string): Buffer => Buffer.from(s, 'latin1');
const lines = (evs: FrameEvent[]): string[] =>
  evs.filter((e) => e.type === 'line').map((e) => (e as { text: string }).text);

/** A session: bytes from the modem, with the points where the channel armed an echo expectation. */
type Step = { echo: string } | { bytes: string };

/** Feeds a session, cutting the byte stream at the given absolute offsets (echo points are always cuts). */
function feed(steps: readonly Step[], cuts: readonly number[], options: { maxLineBytes?: number } = {}): FrameEvent[] {
  const framer = new AtFramer(options);
  const out: FrameEvent[] = [];
  const cutSet = [...new Set(cuts)].sort((x, y) => x - y);
  let offset = 0;
  for (const step of steps) {
    if ('echo' in step) {
      framer.expectEcho(step.echo);
      continue;
    }
    const data = b(step.bytes);
    let start = 0;
    for (const c of cutSet) {
      const rel = c - offset;
      if (rel <= start || rel >= data.length) continue;
      out.push(...framer.push(data.subarray(start, rel)));
      start = rel;
    }
    out.push(...framer.push(data.subarray(start)));
    offset += data.length;
  }
  out.push(...framer.flush());
  return out;
}

const totalBytes = (steps: readonly Step[]): number =>
  steps.reduce((n, s) => n + ('bytes' in s ? b(s.bytes).length : 0), 0);

describe('AtFramer: lines', () => {
  const table: Array<{ name: string; input: string; echo?: string; expected: FrameEvent[] }> = [
    { name: 'CRLF framed OK', input: '\r\nOK\r\n', expected: [{ type: 'line', text: 'OK' }] },
    {
      name: 'lone CR and lone LF both end lines',
      input: '+CSQ: 21,99\rOK\n',
      expected: [
        { type: 'line', text: '+CSQ: 21,99' },
        { type: 'line', text: 'OK' },
      ],
    },
    {
      name: 'LFCR and blank lines are dropped',
      input: '\n\r\n\r\r\nRING\n\r\n\r',
      expected: [{ type: 'line', text: 'RING' }],
    },
    { name: 'spaces around a line are trimmed', input: '\r\n  OK \t\r\n', expected: [{ type: 'line', text: 'OK' }] },
    {
      name: 'SIM800 boot banner',
      input: '\r\nRDY\r\n\r\n+CFUN: 1\r\n\r\n+CPIN: READY\r\n\r\nCall Ready\r\n\r\nSMS Ready\r\n',
      expected: ['RDY', '+CFUN: 1', '+CPIN: READY', 'Call Ready', 'SMS Ready'].map((text) => ({
        type: 'line' as const,
        text,
      })),
    },
    {
      name: 'echo of the command is removed',
      input: 'AT+CSQ\r\r\n+CSQ: 18,99\r\n\r\nOK\r\n',
      echo: 'AT+CSQ',
      expected: [
        { type: 'line', text: '+CSQ: 18,99' },
        { type: 'line', text: 'OK' },
      ],
    },
    {
      name: 'ATE0 is itself echoed (echo still on when received)',
      input: 'ATE0\r\r\nOK\r\n',
      echo: 'ATE0',
      expected: [{ type: 'line', text: 'OK' }],
    },
    {
      name: 'echo match is case-insensitive',
      input: 'at+cmgf=0\r\r\nOK\r\n',
      echo: 'AT+CMGF=0',
      expected: [{ type: 'line', text: 'OK' }],
    },
    {
      name: 'echo off: nothing to remove',
      input: '\r\n+CSQ: 18,99\r\n\r\nOK\r\n',
      echo: 'AT+CSQ',
      expected: [
        { type: 'line', text: '+CSQ: 18,99' },
        { type: 'line', text: 'OK' },
      ],
    },
    { name: 'prompt of AT+CMGS', input: 'AT+CMGS=23\r\r\n> ', echo: 'AT+CMGS=23', expected: [{ type: 'prompt' }] },
    { name: 'prompt as a line of its own', input: '\r\n>\r\n', expected: [{ type: 'prompt' }] },
    { name: '">" inside a line is text', input: 'a > b\r\n', expected: [{ type: 'line', text: 'a > b' }] },
    {
      name: 'Ctrl-Z and ESC echoed back are dropped from the line',
      input: '0011000B91\x1a\r\n',
      expected: [{ type: 'line', text: '0011000B91' }],
    },
    {
      name: 'UTF-8 text (USSD menu) decodes',
      input: 'Pilih: 1.Paket Ke\xc3\xa7il \xe2\x82\xac\r\n',
      expected: [{ type: 'line', text: 'Pilih: 1.Paket Keçil €' }],
    },
    { name: 'Latin-1 text decodes', input: 'Caf\xe9 ouvert\r\n', expected: [{ type: 'line', text: 'Café ouvert' }] },
  ];
  for (const row of table) {
    it(row.name, () => {
      const f = new AtFramer();
      if (row.echo) f.expectEcho(row.echo);
      expect([...f.push(b(row.input)), ...f.flush()]).toEqual(row.expected);
    });
  }

  it('removes only the first echo, then a line equal to the command is kept', () => {
    const f = new AtFramer();
    f.expectEcho('AT');
    expect(lines(f.push(b('AT\r\r\nOK\r\nAT\r\n')))).toEqual(['OK', 'AT']);
  });

  it('the PDU echoed after the prompt is removed when armed after the prompt', () => {
    const f = new AtFramer();
    f.expectEcho('AT+CMGS=18');
    expect(f.push(b('AT+CMGS=18\r\r\n> '))).toEqual([{ type: 'prompt' }]);
    const pdu = '0001000B915121551532F40000';
    f.expectEcho(pdu);
    expect(lines(f.push(b(`${pdu}\x1a\r\n+CMGS: 7\r\n\r\nOK\r\n`)))).toEqual(['+CMGS: 7', 'OK']);
  });

  it('detects the prompt split across chunks as ">" | " "', () => {
    const f = new AtFramer();
    expect(f.push(b('\r\n>'))).toEqual([]);
    expect(f.push(b(' '))).toEqual([{ type: 'prompt' }]);
  });

  it('flush() hands over a pending partial line', () => {
    const f = new AtFramer();
    expect(f.push(b('\r\nNO CARR'))).toEqual([]);
    expect(f.push(b('IER'))).toEqual([]);
    expect(f.flush()).toEqual([{ type: 'line', text: 'NO CARRIER' }]);
    expect(f.flush()).toEqual([]);
  });
});

describe('AtFramer: garbage', () => {
  it('a line of control bytes is garbage, the following OK is intact', () => {
    const f = new AtFramer();
    const evs = f.push(b('\x00\x01\x02\x03\r\nOK\r\n'));
    expect(evs).toEqual([
      { type: 'garbage', bytes: b('\x00\x01\x02\x03'), reason: expect.any(String) },
      { type: 'line', text: 'OK' },
    ]);
  });

  it('boot noise glued to a banner is split off', () => {
    const f = new AtFramer();
    const evs = f.push(b('\x00\xff\xfeRDY\r\n'));
    expect(evs).toEqual([
      { type: 'garbage', bytes: b('\x00\xff\xfe'), reason: 'noise before a line' },
      { type: 'line', text: 'RDY' },
    ]);
  });

  it('noise after a line is split off', () => {
    const f = new AtFramer();
    expect(f.push(b('OK\x00\x00\r\n'))).toEqual([
      { type: 'line', text: 'OK' },
      { type: 'garbage', bytes: b('\x00\x00'), reason: 'noise after a line' },
    ]);
  });

  it('a NUL inside a line makes the whole line garbage (never a half-truth like "O" or "K")', () => {
    const f = new AtFramer();
    const evs = f.push(b('O\x00K\r\n'));
    expect(evs).toEqual([{ type: 'garbage', bytes: b('O\x00K'), reason: expect.any(String) }]);
  });

  it('high-byte runs that are neither UTF-8 nor plausible Latin-1 are garbage (wrong baud rate)', () => {
    const f = new AtFramer();
    const evs = f.push(b('\xe0\xf8\xe0\xf8\xa8\xe8x\r\n'));
    expect(evs.map((e) => e.type)).toEqual(['garbage']);
  });

  it('an overlong line is garbage in bounded pieces and the framer recovers at the next line end', () => {
    const f = new AtFramer();
    const long = 'A'.repeat(MAX_LINE_BYTES + 904);
    const evs = f.push(b(`${long}\r\nOK\r\n`));
    expect(evs.map((e) => e.type)).toEqual(['garbage', 'garbage', 'line']);
    const [first, second] = evs as Array<{ type: 'garbage'; bytes: Buffer }>;
    expect(first?.bytes.length).toBe(MAX_LINE_BYTES);
    expect(second?.bytes.length).toBe(904);
    expect(lines(evs)).toEqual(['OK']);
  });

  it('a stream without line ends never holds more than the bound', () => {
    const f = new AtFramer({ maxLineBytes: 100 });
    let garbageBytes = 0;
    for (let i = 0; i < 50; i++) {
      for (const e of f.push(b('x'.repeat(37)))) if (e.type === 'garbage') garbageBytes += e.bytes.length;
    }
    // 1850 bytes pushed: 18 full pieces emitted, 50 pending
    expect(garbageBytes).toBe(1800);
    const tail = f.flush();
    expect(tail).toEqual([{ type: 'garbage', bytes: b('x'.repeat(50)), reason: 'end of an overlong line' }]);
  });

  it('no "> " prompt is seen in the tail of an overlong line', () => {
    const f = new AtFramer({ maxLineBytes: 4 });
    const evs = [...f.push(b('abcd> \r\nOK\r\n')), ...f.flush()];
    expect(evs.some((e) => e.type === 'prompt')).toBe(false);
    expect(lines(evs)).toEqual(['OK']);
  });
});

// ---------------- chunk-split property ----------------

const PDU_IN = '07912658050000F0040B912618485400F900004130228180238205C8329BFD06';
const CAPTURED: Step[][] = [
  // init with echo on: ATE0 echoed, then echo off
  [
    { echo: 'ATE0' },
    { bytes: 'ATE0\r\r\nOK\r\n' },
    { echo: 'AT+CMGF=0' },
    { bytes: '\r\nOK\r\n' },
    { echo: 'AT+CNMI=2,1,0,2,0' },
    { bytes: '\r\nOK\r\n' },
  ],
  // AT+CSQ with a +CMTI between the information line and OK
  [{ echo: 'AT+CSQ' }, { bytes: 'AT+CSQ\r\r\n+CSQ: 21,99\r\n\r\n+CMTI: "SM",4\r\n\r\nOK\r\n' }],
  // +CMT with its PDU line, then a read
  [
    { bytes: `\r\n+CMT: ,39\r\n${PDU_IN}\r\n` },
    { echo: 'AT+CMGR=4' },
    { bytes: `\r\n+CMGR: 0,,39\r\n${PDU_IN}\r\n\r\nOK\r\n` },
  ],
  // USSD: +CUSD before OK, then text with embedded CR LF, then an error
  [
    { echo: 'AT+CUSD=1,"*888#",15' },
    {
      bytes:
        'AT+CUSD=1,"*888#",15\r\r\n+CUSD: 1,"Sisa pulsa Rp.24025.\r\nAktif sd 28/08/2016.\r\n1.Info",15\r\n\r\nOK\r\n',
    },
    { echo: 'AT+CUSD=1,"1",15' },
    { bytes: '\r\n+CME ERROR: 134\r\n' },
  ],
  // CMGS with echo: prompt, PDU echo, +CMGS, OK; a RING in between
  [
    { echo: 'AT+CMGS=18' },
    { bytes: 'AT+CMGS=18\r\r\n> ' },
    { echo: '0001000B915121551532F40000' },
    { bytes: '0001000B915121551532F40000\x1a\r\nRING\r\n\r\n+CMGS: 12\r\n\r\nOK\r\n' },
  ],
  // Huawei noise, garbage bytes and a Latin-1 / UTF-8 line
  [
    {
      bytes:
        '\r\n^RSSI:17\r\n\x00\x00\xff\xff\r\n\r\n^BOOT:12345,0,0,0,75\r\nOK\x00\r\n\r\nCaf\xe9\r\nnasi g\xc3\xa9\r\n',
    },
  ],
];

const FRAGMENTS = [
  '\r\n',
  '\r',
  '\n',
  'OK',
  'ERROR',
  '+CMTI: "SM",3',
  '+CMS ERROR: 321',
  '> ',
  '>',
  ' ',
  'RING',
  '\x1a',
  '\x1b',
  '\x00',
  '\xff\xfe',
  '\xc3\xa9',
  '\xe2\x82\xac',
  '\xe9',
  '+CSQ: 12,99',
  PDU_IN,
  'AT+CSQ',
  'A'.repeat(70),
  '\t',
  ' > ',
  '+CUSD: 0,"ok",15',
];

function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomSession(rand: () => number): Step[] {
  const steps: Step[] = [];
  const n = 1 + Math.floor(rand() * 4);
  for (let k = 0; k < n; k++) {
    if (rand() < 0.5) steps.push({ echo: rand() < 0.5 ? 'AT+CSQ' : 'OK' });
    let bytes = '';
    const m = 3 + Math.floor(rand() * 15);
    for (let j = 0; j < m; j++) {
      if (rand() < 0.1) bytes += String.fromCharCode(Math.floor(rand() * 256));
      else bytes += FRAGMENTS[Math.floor(rand() * FRAGMENTS.length)];
    }
    steps.push({ bytes });
  }
  return steps;
}

function checkAllSplits(steps: Step[], rand: () => number, maxLineBytes: number): void {
  const reference = feed(steps, [], { maxLineBytes });
  const n = totalBytes(steps);
  const all = Array.from({ length: n }, (_, i) => i);
  expect(feed(steps, all, { maxLineBytes }), 'byte by byte').toEqual(reference);
  for (let cut = 1; cut < n; cut++) {
    const got = feed(steps, [cut], { maxLineBytes });
    if (JSON.stringify(got) !== JSON.stringify(reference)) expect(got, `single cut at ${cut}`).toEqual(reference);
  }
  for (let r = 0; r < 20; r++) {
    const cuts = all.filter(() => rand() < 0.2);
    const got = feed(steps, cuts, { maxLineBytes });
    if (JSON.stringify(got) !== JSON.stringify(reference)) expect(got, `cuts ${cuts.join(',')}`).toEqual(reference);
  }
}

describe('AtFramer: every split of the byte stream yields the same events', () => {
  CAPTURED.forEach((steps, i) => {
    it(`captured session ${i}`, () => {
      const rand = prng(1000 + i);
      checkAllSplits(steps, rand, MAX_LINE_BYTES);
      checkAllSplits(steps, rand, 48); // small bound: the overflow path under every split
    });
  });

  it('the captured sessions frame as expected', () => {
    const evs = feed(CAPTURED[1] as Step[], []);
    expect(evs).toEqual([
      { type: 'line', text: '+CSQ: 21,99' },
      { type: 'line', text: '+CMTI: "SM",4' },
      { type: 'line', text: 'OK' },
    ]);
    const cmgs = feed(CAPTURED[4] as Step[], []);
    expect(cmgs).toEqual([
      { type: 'prompt' },
      { type: 'line', text: 'RING' },
      { type: 'line', text: '+CMGS: 12' },
      { type: 'line', text: 'OK' },
    ]);
    const noisy = feed(CAPTURED[5] as Step[], []);
    expect(lines(noisy)).toEqual(['^RSSI:17', '^BOOT:12345,0,0,0,75', 'OK', 'Café', 'nasi gé']);
    expect(noisy.filter((e) => e.type === 'garbage')).toHaveLength(2);
  });

  it('120 random sessions (seeded) with URCs, prompts, echo, binary and overlong lines', () => {
    const rand = prng(42);
    for (let i = 0; i < 120; i++) {
      const steps = randomSession(rand);
      checkAllSplits(steps, rand, rand() < 0.5 ? 64 : MAX_LINE_BYTES);
    }
  });
});
