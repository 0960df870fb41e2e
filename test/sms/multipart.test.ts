import { describe, expect, it } from 'vitest';
import {
  clusterParts,
  isExpired,
  joinParts,
  MAX_PART_SPREAD_MS,
  MISSING_PART_PREFIX,
  missingPartMarker,
  partGroupKey,
  type ClusterablePart,
} from '../../src/sms/multipart.js';
import { decodeDeliver } from '../../src/sms/pdu.js';
import type { ConcatInfo } from '../../src/sms/types.js';

function decodeText(pdu: string) {
  const r = decodeDeliver({ index: 1, stat: 0, length: pdu.length / 2 - 1 - parseInt(pdu.slice(0, 2), 16), pdu });
  if (!r.ok) throw new Error(r.reason);
  return r.sms;
}

describe('joinParts', () => {
  it('orders by sequence whatever the arrival order', () => {
    const j = joinParts(
      [
        { sequence: 3, text: 'c' },
        { sequence: 1, text: 'a' },
        { sequence: 2, text: 'b' },
      ],
      3,
    );
    expect(j).toEqual({ text: 'abc', received: [1, 2, 3], missing: [], complete: true, conflicting: [], ignored: [] });
  });

  it('a part read twice counts once (first copy wins; a different copy is reported)', () => {
    const j = joinParts(
      [
        { sequence: 1, text: 'a' },
        { sequence: 2, text: 'b' },
        { sequence: 1, text: 'a' },
        { sequence: 2, text: 'X' },
      ],
      2,
    );
    expect(j.text).toBe('ab');
    expect(j.received).toEqual([1, 2]);
    expect(j.conflicting).toEqual([2]);
    expect(j.complete).toBe(true);
  });

  it('a missing part leaves a visible marker in its place', () => {
    const j = joinParts(
      [
        { sequence: 1, text: 'Anda mendapatkan ' },
        { sequence: 3, text: ' dari nomor 0812' },
      ],
      3,
    );
    expect(j.text).toBe('Anda mendapatkan […missing part 2/3…] dari nomor 0812');
    expect(j.text).toContain(missingPartMarker(2, 3));
    expect(j.text).toContain(MISSING_PART_PREFIX);
    expect(j.missing).toEqual([2]);
    expect(j.received).toEqual([1, 3]);
    expect(j.complete).toBe(false);
  });

  it('sequences outside 1..total are left out and listed', () => {
    const j = joinParts(
      [
        { sequence: 0, text: 'z' },
        { sequence: 1, text: 'a' },
        { sequence: 4, text: 'q' },
      ],
      1,
    );
    expect(j.text).toBe('a');
    expect(j.ignored).toEqual([0, 4]);
    expect(j.complete).toBe(true);
  });

  it('no parts at all: every place is a marker', () => {
    const j = joinParts([], 2);
    expect(j.text).toBe('[…missing part 1/2…][…missing part 2/2…]');
    expect(j.complete).toBe(false);
  });

  it('an emoji split across two parts is whole again after joining; a half without its partner becomes U+FFFD', () => {
    expect(
      joinParts(
        [
          { sequence: 1, text: 'A\uD83D' },
          { sequence: 2, text: '\uDE00B' },
        ],
        2,
      ).text,
    ).toBe('A😀B');
    expect(joinParts([{ sequence: 1, text: 'A\uD83D' }], 2).text).toBe('A\uFFFD[…missing part 2/2…]');
  });

  it('decodes and joins hand-built 8-bit reference parts (GSM 7-bit, 1 fill bit)', () => {
    // 00 | 44 DELIVER+UDHI | 0D 91 26 28 11 22 53 77 F4 | 00 | 00 | SCTS 24-01-08 00:00:00 +00:00 | 0C (7+5 septets)
    // | 05 00 03 A7 02 0n | "hello" = D0 65 36 FB 0D ; "world" = EE 6F 39 9B 0C
    // world: EE = 77<<1, 6F = 6F|(72&1)<<7, 39 = 72>>1|(6C&3)<<6, 9B = 6C>>2|(64&7)<<5, 0C = 64>>3
    const head = '00' + '44' + '0D91262811225377F4' + '0000' + '42108000000000' + '0C';
    const p1 = decodeText(head + '050003A70201' + 'D06536FB0D');
    const p2 = decodeText(head + '050003A70202' + 'EE6F399B0C');
    expect(p1.concat).toEqual({ reference: 0xa7, referenceBits: 8, total: 2, sequence: 1 });
    expect(p2.concat).toEqual({ reference: 0xa7, referenceBits: 8, total: 2, sequence: 2 });
    expect(partGroupKey('sim1', p1.originator, p1.concat!)).toBe(partGroupKey('sim1', p2.originator, p2.concat!));
    expect(
      joinParts(
        [p2, p1].map((p) => ({ sequence: p.concat!.sequence, text: p.text })),
        2,
      ).text,
    ).toBe('helloworld');
  });

  it('decodes and joins hand-built 16-bit reference UCS2 parts with an emoji split between them', () => {
    // 00 | 44 | 03 81 58 F8 | 00 | 08 UCS2 | SCTS | 0B = 7 UDH octets + 4 | 06 08 04 BE EF 02 0n | text
    const head = '00' + '44' + '038158F8' + '00' + '08' + '42108001510082' + '0B' + '060804BEEF02';
    const p1 = decodeText(head + '01' + '0041D83D'); // 'A' + high surrogate
    const p2 = decodeText(head + '02' + 'DE000042'); // low surrogate + 'B'
    expect(p1.concat).toEqual({ reference: 0xbeef, referenceBits: 16, total: 2, sequence: 1 });
    expect(
      joinParts(
        [p1, p2].map((p) => ({ sequence: p.concat!.sequence, text: p.text })),
        2,
      ).text,
    ).toBe('A😀B');
  });
});

describe('partGroupKey', () => {
  const c: ConcatInfo = { reference: 7, referenceBits: 8, total: 3, sequence: 1 };
  it('ignores the sequence, a leading + and letter case of the originator', () => {
    expect(partGroupKey('sim1', '+6281', c)).toBe(partGroupKey('sim1', '6281', { ...c, sequence: 3 }));
    expect(partGroupKey('sim1', 'Telkomsel', c)).toBe(partGroupKey('sim1', 'TELKOMSEL', c));
  });
  it.each([
    ['another SIM', 'sim2', '858', c],
    ['another originator', 'sim1', '168', c],
    ['another reference', 'sim1', '858', { ...c, reference: 8 }],
    ['another total', 'sim1', '858', { ...c, total: 4 }],
    ['16-bit reference with the same number', 'sim1', '858', { ...c, referenceBits: 16 as const }],
  ])('differs for %s', (_name, sim, orig, other) => {
    expect(partGroupKey(sim, orig, other)).not.toBe(partGroupKey('sim1', '858', c));
  });
  it('a separator inside a component cannot make two groups collide', () => {
    expect(partGroupKey('a|b', 'c', c)).not.toBe(partGroupKey('a', 'b|c', c));
  });
});

describe('isExpired', () => {
  it.each([
    [1_000, 1_000 + 599_999, 600_000, false],
    [1_000, 1_000 + 600_000, 600_000, true],
    [1_000, 500, 600_000, false], // clock went backwards
  ])('first %i, now %i, timeout %i -> %s', (first, now, timeout, expired) => {
    expect(isExpired(first, now, timeout)).toBe(expired);
  });
});

describe('clusterParts: messages sharing a family never mix', () => {
  const T = Date.parse('2026-11-22T05:00:00Z');
  const part = (id: string, sequence: number, dt: number, encoding?: string): ClusterablePart => ({
    id,
    sequence,
    scTimestampMs: T + dt,
    ...(encoding ? { encoding } : {}),
  });
  const ids = (clusters: ClusterablePart[][]) => clusters.map((c) => c.map((p) => p.id).sort()).sort();
  function permutations<X>(xs: X[]): X[][] {
    if (xs.length <= 1) return [xs];
    return xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((rest) => [x, ...rest]));
  }

  it('A1 B1 A2 B2 with two time stamps: two messages, whatever the arrival order', () => {
    const parts = [part('a1', 1, 0), part('b1', 1, 7000), part('a2', 2, 0), part('b2', 2, 7000)];
    for (const order of permutations(parts))
      expect(ids(clusterParts(order))).toEqual([
        ['a1', 'a2'],
        ['b1', 'b2'],
      ]);
  });

  it('parts of one message stamped a second apart join', () => {
    expect(ids(clusterParts([part('a1', 1, 0), part('a2', 2, 1000), part('a3', 3, 2000)]))).toEqual([
      ['a1', 'a2', 'a3'],
    ]);
  });

  it('a part that fits two messages equally joins neither (incomplete, never mixed)', () => {
    // a1 at 0 and b1 at 2 s; a part 2 at 1 s could be either's
    const out = ids(clusterParts([part('a1', 1, 0), part('b1', 1, 2000), part('x2', 2, 1000)]));
    expect(out).toEqual([['a1'], ['b1'], ['x2']]);
  });

  it('the exact time stamp decides between two messages', () => {
    expect(ids(clusterParts([part('a1', 1, 0), part('b1', 1, 2000), part('a2', 2, 0)]))).toEqual([
      ['a1', 'a2'],
      ['b1'],
    ]);
  });

  it('two SMS of one sender a minute apart sharing reference and total: A1 and B2 are two messages, not one "complete" one', () => {
    expect(MAX_PART_SPREAD_MS).toBeLessThanOrEqual(10_000);
    expect(ids(clusterParts([part('a1', 1, 0), part('b2', 2, 61_000)]))).toEqual([['a1'], ['b2']]);
    expect(ids(clusterParts([part('a1', 1, 0), part('b2', 2, 20_000)]))).toEqual([['a1'], ['b2']]);
  });

  it('a family that shows reuse (stamps further apart than one message can be) never fits by time alone', () => {
    // a1 and a2 two seconds apart would join; a third stamp a minute later proves the reference was used twice
    expect(ids(clusterParts([part('a1', 1, 0), part('a2', 2, 2000)]))).toEqual([['a1', 'a2']]);
    expect(ids(clusterParts([part('a1', 1, 0), part('a2', 2, 2000), part('b1', 1, 60_000)]))).toEqual([
      ['a1'],
      ['a2'],
      ['b1'],
    ]);
    // the evidence may be a message already joined (its tombstones' stamps)
    expect(ids(clusterParts([part('a1', 1, 0), part('a2', 2, 2000)], { seenStampsMs: [T - 180_000] }))).toEqual([
      ['a1'],
      ['a2'],
    ]);
    // the exact stamp still joins
    expect(ids(clusterParts([part('a1', 1, 0), part('a2', 2, 0), part('b1', 1, 60_000)]))).toEqual([
      ['a1', 'a2'],
      ['b1'],
    ]);
  });

  it('parts further apart than MAX_PART_SPREAD_MS, or in another alphabet, are not one message', () => {
    expect(ids(clusterParts([part('a1', 1, 0), part('z2', 2, MAX_PART_SPREAD_MS + 1)]))).toEqual([['a1'], ['z2']]);
    expect(ids(clusterParts([part('a1', 1, 0, 'gsm7'), part('u2', 2, 0, 'ucs2')]))).toEqual([['a1'], ['u2']]);
    expect(ids(clusterParts([part('a1', 1, 0, 'gsm7'), part('o2', 2, 0)]))).toEqual([['a1', 'o2']]); // an old part without the field
  });
});
