import { describe, it, expect } from 'vitest';
import { pickNext } from '../../src/forward/schedule.js';
import { compareReceived, PendingIndex } from '../../src/spool/pending-index.js';
import type { SmsRecord } from '../../src/spool/types.js';
import { makeSms } from './helpers.js';

/** Small deterministic PRNG (xorshift32) so a failure replays. */
function rng(seed: number): (n: number) => number {
  let s = seed >>> 0 || 1;
  return (n) => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) % n;
  };
}

const NOW = Date.parse('2024-01-01T12:00:00Z');
/** Few distinct receivedAt values (ties broken by id) and an unparseable one, which sorts first. */
const RECEIVED = [
  '2024-01-01T10:00:00Z',
  '2024-01-01T10:00:00.000Z',
  '2024-01-01T09:00:00+07:00',
  '2024-01-01T11:30:00Z',
  'not a date',
  '2023-12-31T23:59:59Z',
];
/** Absent (due), past, now, future, unparseable (due). */
const NEXT: (string | undefined)[] = [
  undefined,
  '2024-01-01T11:59:00Z',
  '2024-01-01T12:00:00Z',
  '2024-01-01T12:00:01Z',
  '2024-01-01T12:05:00Z',
  'garbage',
];
const MODEMS = ['A', 'B', 'C'];

function randomRecord(id: string, r: (n: number) => number): SmsRecord {
  const next = NEXT[r(NEXT.length)];
  return makeSms(id, {
    receivedAt: RECEIVED[r(RECEIVED.length)]!,
    sim: { modem: MODEMS[r(MODEMS.length)]! },
    ...(next !== undefined ? { nextAttemptAt: next } : {}),
  });
}

/**
 * The forwarder's choice written out plainly (its pickNext before the index existed), as an independent reference:
 * first record due at `now` in the given order; with strictOrder a waiting record holds back its modem's later ones.
 */
function referencePick(sorted: SmsRecord[], now: number, strict: boolean): { next?: SmsRecord; wakeAtMs?: number } {
  const held = new Set<string>();
  let wakeAtMs: number | undefined;
  for (const rec of sorted) {
    if (strict && held.has(rec.sim.modem)) continue;
    const due =
      rec.nextAttemptAt === undefined || Number.isNaN(Date.parse(rec.nextAttemptAt))
        ? undefined
        : Date.parse(rec.nextAttemptAt);
    if (due === undefined || due <= now) return { next: rec };
    wakeAtMs = wakeAtMs === undefined ? due : Math.min(wakeAtMs, due);
    if (strict) held.add(rec.sim.modem);
  }
  return wakeAtMs === undefined ? {} : { wakeAtMs };
}

const ids = (recs: Iterable<Readonly<SmsRecord>>) => [...recs].map((x) => x.id);

describe('PendingIndex: delivery order kept incrementally, same choice as the forwarder always made', () => {
  it('after every random insert, update (retry time or receivedAt) and delete: order = sorted copy, pickNext over entries() = reference', () => {
    for (const seed of [1, 2, 3, 42, 1234]) {
      const r = rng(seed);
      const ix = new PendingIndex();
      const model = new Map<string, SmsRecord>();
      for (let step = 0; step < 400; step++) {
        const op = r(10);
        const id = `id${r(40)}`;
        if (op < 5) {
          const rec = randomRecord(id, r);
          ix.set(structuredClone(rec));
          model.set(id, rec);
        } else if (op < 7 && model.has(id)) {
          // markRetry: same record, another nextAttemptAt (order unchanged)
          const rec = {
            ...model.get(id)!,
            attempts: model.get(id)!.attempts + 1,
            nextAttemptAt: NEXT[r(NEXT.length)] ?? '2024-01-01T12:10:00Z',
          };
          ix.set(structuredClone(rec));
          model.set(id, rec);
        } else {
          expect(ix.delete(id)).toBe(model.delete(id));
        }
        const sorted = [...model.values()].sort(compareReceived);
        expect(ids(ix.values())).toEqual(ids(sorted));
        expect(ix.size).toBe(model.size);
        const skip = new Set(step % 3 === 0 ? [`id${r(40)}`, `id${r(40)}`] : []);
        for (const strict of [false, true]) {
          const want = referencePick(
            sorted.filter((x) => !skip.has(x.id)),
            NOW,
            strict,
          );
          const got = pickNext(ix.entries(), NOW, { strictOrder: strict, skip });
          expect({ next: got.next?.id, wakeAtMs: got.wakeAtMs }, `seed ${seed} step ${step} strict ${strict}`).toEqual({
            next: want.next?.id,
            wakeAtMs: want.wakeAtMs,
          });
        }
      }
    }
  });

  it('from() sorts once, whatever the order it is given; a repeated id keeps the last copy', () => {
    const recs = [
      makeSms('c', { receivedAt: '2024-01-03T00:00:00Z' }),
      makeSms('b2', { receivedAt: '2024-01-02T00:00:00Z' }),
      makeSms('a', { receivedAt: '2024-01-01T00:00:00Z' }),
      makeSms('b1', { receivedAt: '2024-01-02T00:00:00Z' }),
      makeSms('a', { receivedAt: '2024-01-04T00:00:00Z' }),
    ];
    expect(ids(PendingIndex.from(recs).values())).toEqual(['b1', 'b2', 'c', 'a']);
  });

  it('holds its records frozen: a caller cannot change the retry time behind the cached order and due time', () => {
    const ix = new PendingIndex();
    const rec = makeSms('f1', { nextAttemptAt: '2024-01-01T12:05:00Z' });
    ix.set(rec);
    expect(() => {
      rec.nextAttemptAt = undefined;
    }).toThrow(TypeError);
    expect(pickNext(ix.entries(), NOW)).toEqual({ wakeAtMs: Date.parse('2024-01-01T12:05:00Z') });
  });
});

describe('pickNext over PendingIndex.entries() with held ids (results the forwarder could not record yet)', () => {
  const now = Date.parse('2024-01-01T12:00:00Z');
  const rec = (id: string, modem: string, next?: string) =>
    makeSms(id, {
      receivedAt: `2024-01-01T00:00:0${id.slice(-1)}Z`,
      sim: { modem },
      ...(next ? { nextAttemptAt: next } : {}),
    });
  const ix = PendingIndex.from([rec('a1', 'A'), rec('a2', 'A'), rec('b3', 'B', '2024-01-01T12:10:00Z')]);
  const t = (iso: string) => Date.parse(iso);

  it.each([
    // strictOrder, hold, expected
    [false, new Map([['a1', t('2024-01-01T12:05:00Z')]]), { next: 'a2' }],
    [true, new Map([['a1', t('2024-01-01T12:05:00Z')]]), { wakeAtMs: t('2024-01-01T12:05:00Z') }],
    [true, new Map([['a1', t('2024-01-01T11:00:00Z')]]), { wakeAtMs: t('2024-01-01T11:00:00Z') }],
    [true, new Map([['b3', t('2024-01-01T12:01:00Z')]]), { next: 'a1' }],
    [
      true,
      new Map([
        ['a1', t('2024-01-01T12:20:00Z')],
        ['b3', t('2024-01-01T12:01:00Z')],
      ]),
      { wakeAtMs: t('2024-01-01T12:10:00Z') },
    ],
  ] as const)('strictOrder %s, hold %o -> %o', (strictOrder, hold, want) => {
    const got = pickNext(ix.entries(), now, { strictOrder, hold });
    expect(got.next?.id).toBe('next' in want ? want.next : undefined);
    if ('wakeAtMs' in want) expect(got.wakeAtMs).toBe(want.wakeAtMs);
  });

  it('a held id holds back its modem even when it is due; a skipped id does not', () => {
    expect(pickNext(ix.entries(), now, { strictOrder: true, skip: new Set(['a1']) })).toMatchObject({
      next: { id: 'a2' },
    });
    expect(pickNext(ix.entries(), now, { strictOrder: true, hold: new Map([['a1', now - 1]]) })).toEqual({
      wakeAtMs: now - 1,
    });
  });
});
