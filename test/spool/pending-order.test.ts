import { describe, it, expect, beforeEach, afterEach, vi } from 'vitest';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pickNext } from '../../src/forward/schedule.js';
import { serializeRecord } from '../../src/spool/codec.js';
import { readKey } from '../../src/spool/integrity-key.js';
import { Spool } from '../../src/spool/store.js';
import type { SmsRecord } from '../../src/spool/types.js';
import { silentLogger } from '../../src/log.js';
import { makeSms, nextDue } from './helpers.js';
import { tempDir } from '../support/tmp.js';

let dir: string;
let cleanup: () => Promise<void>;
const opened: Spool[] = [];

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('order'));
});
afterEach(async () => {
  vi.restoreAllMocks();
  for (const s of opened.splice(0)) await s.close();
  await cleanup();
});

const openOwner = async () => {
  for (const s of opened.splice(0)) await s.close();
  const spool = await Spool.open(dir, { logger: silentLogger(), fsync: false });
  opened.push(spool);
  return spool;
};
const openClient = () => Spool.open(dir, { logger: silentLogger(), role: 'client', signal: () => undefined });

const at = (minute: number) => `2024-01-01T10:${String(minute).padStart(2, '0')}:00.000Z`;
const NOW = Date.parse('2024-01-01T12:00:00Z');
const LATER = new Date('2024-01-01T12:30:00Z');

const pendingIds = async (spool: Spool) => ((await spool.list('pending')) as SmsRecord[]).map((r) => r.id);

/** The ids the forwarder's pick hands out one after another, as if each was delivered before the next pick. */
function drainOrder(spool: Spool, nowMs: number, strictOrder = false): { sent: string[]; wakeAtMs?: number } {
  const sent = new Set<string>();
  for (;;) {
    const { next, wakeAtMs } = nextDue(spool, nowMs, { strictOrder, skip: sent });
    if (!next) return wakeAtMs === undefined ? { sent: [...sent] } : { sent: [...sent], wakeAtMs };
    sent.add(next.id);
  }
}

describe('Spool: the pending index stays in delivery order', () => {
  it('records put out of receivedAt order are picked oldest first, ties by id; the same after a restart', async () => {
    let spool = await openOwner();
    for (const [id, minute] of [
      ['e', 5],
      ['b', 2],
      ['d', 4],
      ['a2', 1],
      ['a1', 1],
      ['c', 3],
    ] as const) {
      await spool.putPending(makeSms(id, { receivedAt: at(minute) }));
    }
    const expected = ['a1', 'a2', 'b', 'c', 'd', 'e'];
    expect(await pendingIds(spool)).toEqual(expected);
    expect(drainOrder(spool, NOW).sent).toEqual(expected);

    spool = await openOwner(); // restart: the start-up scan reads the files in name order and sorts them once
    expect(await pendingIds(spool)).toEqual(expected);
    expect(drainOrder(spool, NOW).sent).toEqual(expected);
  });

  it('markRetry keeps a record in its place but makes it wait; later records go first; it is due again at its time', async () => {
    const spool = await openOwner();
    for (const [id, minute] of [
      ['r1', 1],
      ['r2', 2],
      ['r3', 3],
    ] as const)
      await spool.putPending(makeSms(id, { receivedAt: at(minute) }));
    await spool.markRetry('r1', { error: 'HTTP 503: x', nextAttemptAt: LATER });
    expect(await pendingIds(spool)).toEqual(['r1', 'r2', 'r3']);
    expect(drainOrder(spool, NOW)).toEqual({ sent: ['r2', 'r3'], wakeAtMs: LATER.getTime() });
    expect(drainOrder(spool, LATER.getTime()).sent).toEqual(['r1', 'r2', 'r3']);
    expect(nextDue(spool, NOW, { strictOrder: true })).toEqual({ wakeAtMs: LATER.getTime() }); // same modem: all held
  });

  it('a dead record put back by retry / retryAllDead returns to its receivedAt place, not to the end', async () => {
    const spool = await openOwner();
    for (const [id, minute] of [
      ['d1', 1],
      ['p2', 2],
      ['d3', 3],
      ['p4', 4],
    ] as const)
      await spool.putPending(makeSms(id, { receivedAt: at(minute) }));
    await spool.markDead('d1', 'HTTP 400: bad');
    await spool.markDead('d3', 'HTTP 400: bad');
    expect(await pendingIds(spool)).toEqual(['p2', 'p4']);
    await spool.retry('d3');
    expect(await pendingIds(spool)).toEqual(['p2', 'd3', 'p4']);
    expect(await spool.retryAllDead()).toBe(1);
    expect(drainOrder(spool, NOW).sent).toEqual(['d1', 'p2', 'd3', 'p4']);
  });

  it('rescan places records that appeared on disk (a client retry, a file written by another process) in order', async () => {
    const spool = await openOwner();
    for (const [id, minute] of [
      ['o1', 1],
      ['o5', 5],
    ] as const)
      await spool.putPending(makeSms(id, { receivedAt: at(minute) }));
    await spool.putPending(makeSms('dead3', { receivedAt: at(3) }));
    await spool.markDead('dead3', 'HTTP 400: bad');
    const client = await openClient();
    await client.retry('dead3');
    const key = (await readKey(dir))!; // another process of the daemon's user, signing as the spool does
    await writeFile(
      path.join(dir, 'pending', 'new2.json'),
      serializeRecord(makeSms('new2', { receivedAt: at(2) }), { area: 'pending', key }),
    );
    const woke: string[] = [];
    spool.on('pending', (id: string) => woke.push(id));
    await spool.rescan();
    expect(woke).toEqual(['new2', 'dead3']); // in delivery order too
    expect(await pendingIds(spool)).toEqual(['o1', 'new2', 'dead3', 'o5']);
    expect(drainOrder(spool, NOW).sent).toEqual(['o1', 'new2', 'dead3', 'o5']);
  });

  it('a record leaving pending (markDelivered, markDead, drop, a client drop seen by mark* or rescan) leaves the index', async () => {
    const spool = await openOwner();
    const names = ['sent1', 'dead1', 'drop1', 'cdrop1', 'cdrop2', 'stay1'];
    for (const [i, id] of names.entries()) await spool.putPending(makeSms(id, { receivedAt: at(i) }));
    await spool.markDelivered('sent1', { status: 200, at: new Date() });
    await spool.markDead('dead1', 'HTTP 400: bad');
    await spool.drop('drop1');
    const client = await openClient();
    await client.drop('cdrop1');
    await client.drop('cdrop2');
    await expect(spool.markDelivered('cdrop1', { status: 200, at: new Date() })).rejects.toMatchObject({
      reason: 'not-found',
    });
    expect(spool.isPending('cdrop2')).toBe(true); // the owner has not looked yet
    await spool.rescan();
    for (const id of names.slice(0, -1)) expect(spool.isPending(id), id).toBe(false);
    expect(spool.isPending('stay1')).toBe(true);
    expect(await pendingIds(spool)).toEqual(['stay1']);
    expect(drainOrder(spool, NOW).sent).toEqual(['stay1']);
    expect((await spool.stats()).pending).toBe(1);
  });

  it('the ordered pending view copies no record and cannot be changed; the pick copies one record, changing it changes nothing in the spool', async () => {
    const spool = await openOwner();
    for (let i = 0; i < 60; i++)
      await spool.putPending(makeSms(`n${String(i).padStart(2, '0')}`, { receivedAt: at(i % 60) }));
    await spool.markRetry('n00', { error: 'HTTP 503: x', nextAttemptAt: LATER });
    const clone = vi.spyOn(globalThis, 'structuredClone');
    const picked = pickNext(spool.pendingInOrder(), NOW).next!;
    expect(picked.id).toBe('n01');
    expect(clone).toHaveBeenCalledTimes(0);
    expect(() => {
      (picked.record as SmsRecord).attempts = 99;
    }).toThrow(TypeError);
    const { next } = nextDue(spool, NOW);
    expect(next?.id).toBe('n01');
    expect(clone).toHaveBeenCalledTimes(1);
    next!.attempts = 99;
    next!.nextAttemptAt = LATER.toISOString();
    expect(nextDue(spool, NOW).next).toMatchObject({ id: 'n01', attempts: 0 });
    expect(nextDue(spool, NOW).next?.nextAttemptAt).toBeUndefined();
  });

  it('skip passes over the given ids as if absent, also for strictOrder (a skipped record holds nothing back)', async () => {
    const spool = await openOwner();
    await spool.putPending(makeSms('s1', { receivedAt: at(1), sim: { modem: 'A' } }));
    await spool.putPending(makeSms('s2', { receivedAt: at(2), sim: { modem: 'A' } }));
    await spool.markRetry('s1', { error: 'HTTP 503: x', nextAttemptAt: LATER });
    expect(nextDue(spool, NOW, { strictOrder: true })).toEqual({ wakeAtMs: LATER.getTime() });
    expect(nextDue(spool, NOW, { strictOrder: true, skip: new Set(['s1']) }).next?.id).toBe('s2');
    expect(nextDue(spool, NOW, { skip: new Set(['s1', 's2']) })).toEqual({});
  });

  it('list(pending) with a limit copies only the oldest records', async () => {
    const spool = await openOwner();
    for (const [id, minute] of [
      ['l3', 3],
      ['l1', 1],
      ['l2', 2],
    ] as const)
      await spool.putPending(makeSms(id, { receivedAt: at(minute) }));
    const clone = vi.spyOn(globalThis, 'structuredClone');
    expect(((await spool.list('pending', { limit: 2 })) as SmsRecord[]).map((r) => r.id)).toEqual(['l1', 'l2']);
    expect(clone).toHaveBeenCalledTimes(2);
  });
});
