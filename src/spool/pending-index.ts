/**
 * The owner's in-memory index of pending SMS records, kept in delivery order (PURE: no I/O, no timers, no clock).
 *
 * Contract and invariants
 * - Delivery order: receivedAt (parsed; unparseable counts as 0), then id (code-unit order). The same order as
 *   `compareReceived`, which the spool uses for every list().
 * - `order` holds exactly the records of `byId`, sorted. set() of a new id inserts by binary search; set() of a known id
 *   whose receivedAt is unchanged (markRetry: attempts, nextAttemptAt) replaces its entry in place; otherwise it moves.
 *   delete() finds the entry by binary search. PendingIndex.from() sorts once (start-up scan, rescan).
 * - An entry caches its order key, modem and due time when it is set; the record is frozen (shallow) at that moment, so
 *   the cache cannot go stale through a later mutation: the index owns the records given to it, and everything it hands
 *   out (get, values, nextDue) is a read-only view. Callers that need a copy they may change use structuredClone.
 * - nextDue(now, strictOrder, skip, hold) answers exactly what firstDue (the forwarder's pickNext) answers for the
 *   records in delivery order minus `skip` (and `hold`, see firstDue), without copying them: it walks from the oldest and stops at the first due record.
 *   Cost O(k), k = entries before that record (those waiting for a retry time or held back by strictOrder); when
 *   nothing is due it walks all n (number comparisons only, no allocation).
 */
import type { SmsRecord } from './types.js';

/** receivedAt as a number for ordering; an unparseable timestamp sorts first (0), as list() always did. */
export function receivedAtKey(iso: string): number {
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? 0 : ms;
}

/** Delivery order: receivedAt, then id. */
export function compareReceived(a: { receivedAt: string; id: string }, b: { receivedAt: string; id: string }): number {
  return compareKeys(receivedAtKey(a.receivedAt), a.id, receivedAtKey(b.receivedAt), b.id);
}

function compareKeys(aMs: number, aId: string, bMs: number, bId: string): number {
  return aMs - bMs || (aId < bId ? -1 : aId > bId ? 1 : 0);
}

/** nextAttemptAt as epoch ms; undefined when absent or unparseable (= due now). */
export function dueAtMs(rec: { nextAttemptAt?: string }): number | undefined {
  if (rec.nextAttemptAt === undefined) return undefined;
  const t = Date.parse(rec.nextAttemptAt);
  return Number.isNaN(t) ? undefined : t;
}

/** How firstDue reads an item. */
export interface DueAccess<T> {
  /** Epoch ms the item is due at; undefined = due now. */
  dueMs(item: T): number | undefined;
  modem(item: T): string;
  id(item: T): string;
}

/**
 * The first due item of `ordered` (oldest first), or when none is due the earliest due time among the items looked at.
 * Items whose id is in `skip` are passed over as if absent. With strictOrder, an item not yet due holds back every later
 * item of the same modem (they are neither picked nor counted for the wake-up time).
 * Items whose id is a key of `hold` are never picked either; without strictOrder they are passed over like `skip`.
 * With strictOrder each counts as a waiting item that is never due: it holds back the later items of its modem, and
 * the later of its own due time and the time `hold` gives counts for the wake-up time. (The forwarder holds records
 * whose not-delivered result it could not record yet: they are sent again later, so nothing may overtake them.)
 */
export function firstDue<T>(
  ordered: Iterable<T>,
  nowMs: number,
  strictOrder: boolean,
  access: DueAccess<T>,
  skip?: ReadonlySet<string>,
  hold?: ReadonlyMap<string, number>,
): { next?: T; wakeAtMs?: number } {
  const held = strictOrder ? new Set<string>() : undefined;
  const skipping = skip !== undefined && skip.size > 0;
  const holding = hold !== undefined && hold.size > 0;
  let wakeAtMs: number | undefined;
  for (const item of ordered) {
    if (skipping && skip.has(access.id(item))) continue;
    if (held !== undefined && held.size > 0 && held.has(access.modem(item))) continue;
    const holdMs = holding ? hold.get(access.id(item)) : undefined;
    if (holdMs !== undefined) {
      if (held === undefined) continue;
      const own = access.dueMs(item);
      const until = own === undefined ? holdMs : Math.max(own, holdMs);
      wakeAtMs = wakeAtMs === undefined ? until : Math.min(wakeAtMs, until);
      held.add(access.modem(item));
      continue;
    }
    const due = access.dueMs(item);
    if (due === undefined || due <= nowMs) return { next: item };
    wakeAtMs = wakeAtMs === undefined ? due : Math.min(wakeAtMs, due);
    held?.add(access.modem(item));
  }
  return wakeAtMs === undefined ? {} : { wakeAtMs };
}

interface Entry {
  readonly rec: Readonly<SmsRecord>;
  readonly id: string;
  readonly orderMs: number;
  readonly dueMs: number | undefined;
  readonly modem: string;
}

const ENTRY_ACCESS: DueAccess<Entry> = { dueMs: (e) => e.dueMs, modem: (e) => e.modem, id: (e) => e.id };

function entryOf(rec: SmsRecord): Entry {
  Object.freeze(rec);
  return { rec, id: rec.id, orderMs: receivedAtKey(rec.receivedAt), dueMs: dueAtMs(rec), modem: rec.sim.modem };
}

export class PendingIndex {
  private readonly byId = new Map<string, Entry>();
  /** Sorted by (orderMs, id); same entries as byId. */
  private readonly order: Entry[] = [];

  /** An index of `records` (ids unique; a repeated id keeps the last one), sorted once. */
  static from(records: Iterable<SmsRecord>): PendingIndex {
    const ix = new PendingIndex();
    for (const rec of records) ix.byId.set(rec.id, entryOf(rec));
    ix.order.push(...ix.byId.values());
    ix.order.sort((a, b) => compareKeys(a.orderMs, a.id, b.orderMs, b.id));
    return ix;
  }

  get size(): number {
    return this.byId.size;
  }

  has(id: string): boolean {
    return this.byId.has(id);
  }

  /** The indexed record (frozen; structuredClone it to get a copy to change). */
  get(id: string): Readonly<SmsRecord> | undefined {
    return this.byId.get(id)?.rec;
  }

  /** Insert or replace. The index takes ownership of `rec` and freezes it. */
  set(rec: SmsRecord): void {
    const entry = entryOf(rec);
    const old = this.byId.get(entry.id);
    this.byId.set(entry.id, entry);
    if (old !== undefined && old.orderMs === entry.orderMs) {
      this.order[this.positionOf(old)] = entry;
      return;
    }
    if (old !== undefined) this.order.splice(this.positionOf(old), 1);
    this.order.splice(this.lowerBound(entry.orderMs, entry.id), 0, entry);
  }

  delete(id: string): boolean {
    const old = this.byId.get(id);
    if (old === undefined) return false;
    this.byId.delete(id);
    this.order.splice(this.positionOf(old), 1);
    return true;
  }

  /** Records in delivery order (read-only views; do not keep them across changes of the index). */
  *values(): IterableIterator<Readonly<SmsRecord>> {
    for (const e of this.order) yield e.rec;
  }

  /** See the header: firstDue over the records in delivery order, returning the indexed record itself (read-only). */
  nextDue(
    nowMs: number,
    strictOrder: boolean,
    skip?: ReadonlySet<string>,
    hold?: ReadonlyMap<string, number>,
  ): { next?: Readonly<SmsRecord>; wakeAtMs?: number } {
    const { next, wakeAtMs } = firstDue(this.order, nowMs, strictOrder, ENTRY_ACCESS, skip, hold);
    if (next !== undefined) return { next: next.rec };
    return wakeAtMs === undefined ? {} : { wakeAtMs };
  }

  /** First position whose key is >= (orderMs, id). */
  private lowerBound(orderMs: number, id: string): number {
    let lo = 0;
    let hi = this.order.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const e = this.order[mid]!;
      if (compareKeys(e.orderMs, e.id, orderMs, id) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Position of an entry that is in `order` (keys are unique and never change while an entry is indexed). */
  private positionOf(entry: Entry): number {
    const i = this.lowerBound(entry.orderMs, entry.id);
    if (this.order[i] !== entry) throw new Error(`pending index out of order at ${entry.id} (bug)`);
    return i;
  }
}
