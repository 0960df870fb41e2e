/**
 * The owner's in-memory index of multipart parts (PURE: no I/O, no timers, no clock).
 *
 * Contract and invariants
 * - Holds exactly the part records of `parts/` as the spool (their owner) knows them: filled by the scan at open and
 *   rescan, updated by putPart / deleteParts / drop. listParts() is served from it: the receiver's per-part call reads
 *   no directory and parses no file.
 * - Order: compareReceived (receivedAt parsed, unparseable = 0, then id), the order listParts() always returned. The
 *   order key is parsed once when a part is set (not per comparison); `order` holds the entries of `byId`, sorted.
 * - The index owns the records given to it and freezes them (shallow, and their `sim`): everything it hands out is a
 *   read-only view, except copies(), which returns fresh copies a caller may change (a PartRecord's only nested object
 *   is `sim`, a flat object of strings; copyPart copies it too).
 * - Map-like (has/get/set/delete/keys/values/size) so the scan and the operator commands use it as they used a Map.
 */
import { receivedAtKey } from './pending-index.js';
import type { PartRecord } from './types.js';

interface Entry {
  readonly record: Readonly<PartRecord>;
  readonly orderMs: number;
}

function compareEntries(a: Entry, b: Entry): number {
  const ai = a.record.id;
  const bi = b.record.id;
  return a.orderMs - b.orderMs || (ai < bi ? -1 : ai > bi ? 1 : 0);
}

/** A copy of a part that shares nothing with it (all fields are primitives except `sim`, a flat object). */
export function copyPart(p: Readonly<PartRecord>): PartRecord {
  return { ...p, sim: { ...p.sim } };
}

export class PartsIndex {
  private readonly byId = new Map<string, Entry>();
  /** Sorted by (orderMs, id); same entries as byId. */
  private readonly order: Entry[] = [];

  get size(): number {
    return this.byId.size;
  }

  has(id: string): boolean {
    return this.byId.has(id);
  }

  get(id: string): Readonly<PartRecord> | undefined {
    return this.byId.get(id)?.record;
  }

  /** Insert or replace. The index takes ownership of `rec` and freezes it. */
  set(id: string, rec: PartRecord): this {
    Object.freeze(rec.sim);
    const entry: Entry = { record: Object.freeze(rec), orderMs: receivedAtKey(rec.receivedAt) };
    if (this.byId.has(id)) this.delete(id);
    this.byId.set(id, entry);
    this.order.splice(this.lowerBound(entry), 0, entry);
    return this;
  }

  delete(id: string): boolean {
    const old = this.byId.get(id);
    if (old === undefined) return false;
    this.byId.delete(id);
    const i = this.lowerBound(old);
    if (this.order[i] !== old) throw new Error(`parts index out of order at ${id} (bug)`);
    this.order.splice(i, 1);
    return true;
  }

  keys(): IterableIterator<string> {
    return this.byId.keys();
  }

  /** Read-only views, in order. */
  *values(): IterableIterator<Readonly<PartRecord>> {
    for (const e of this.order) yield e.record;
  }

  /** Fresh copies, in order (listParts). */
  copies(): PartRecord[] {
    return this.order.map((e) => copyPart(e.record));
  }

  private lowerBound(entry: Entry): number {
    let lo = 0;
    let hi = this.order.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareEntries(this.order[mid]!, entry) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
