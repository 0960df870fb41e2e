/**
 * The owner's in-memory index of pending SMS records in delivery order (receivedAt, then id; as compareReceived),
 * PURE. Updates are incremental (binary search); from() sorts once. The index owns and freezes the records given to it:
 * everything it hands out is a read-only view (callers needing a copy use structuredClone). entries() is the ordered
 * view the forwarder picks from: iterating copies nothing.
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

/**
 * `records` sorted in place by compareReceived, each receivedAt parsed once (not twice per comparison). Returns `records`.
 */
export function sortByReceived<T extends { receivedAt: string; id: string }>(records: T[]): T[] {
  const keys = new Map<T, number>();
  for (const r of records) keys.set(r, receivedAtKey(r.receivedAt));
  return records.sort((a, b) => compareKeys(keys.get(a)!, a.id, keys.get(b)!, b.id));
}

function compareKeys(aMs: number, aId: string, bMs: number, bId: string): number {
  return aMs - bMs || (aId < bId ? -1 : aId > bId ? 1 : 0);
}

/** nextAttemptAt as epoch ms; undefined when absent or unparseable (= due now). */
function dueAtMs(rec: { nextAttemptAt?: string }): number | undefined {
  if (rec.nextAttemptAt === undefined) return undefined;
  const t = Date.parse(rec.nextAttemptAt);
  return Number.isNaN(t) ? undefined : t;
}

/** One pending record as the index holds it: the record (frozen) and the keys cached when it was set. */
export interface PendingEntry {
  readonly record: Readonly<SmsRecord>;
  readonly id: string;
  /** receivedAtKey(record.receivedAt): the delivery-order key. */
  readonly orderMs: number;
  /** dueAtMs(record): when it is due; undefined = due now. */
  readonly dueMs: number | undefined;
  readonly modem: string;
}

type Entry = PendingEntry;

function entryOf(rec: SmsRecord): Entry {
  Object.freeze(rec);
  return Object.freeze({
    record: rec,
    id: rec.id,
    orderMs: receivedAtKey(rec.receivedAt),
    dueMs: dueAtMs(rec),
    modem: rec.sim.modem,
  });
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
    return this.byId.get(id)?.record;
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
    for (const e of this.order) yield e.record;
  }

  /** Entries in delivery order (read-only; do not keep the iterator across changes of the index). */
  *entries(): IterableIterator<PendingEntry> {
    yield* this.order;
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
