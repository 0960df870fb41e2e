/**
 * The owner's in-memory index of multipart parts (PURE): exactly the part records of `parts/`, so listParts() reads
 * no directory. Order: compareReceived (key parsed once per part). The index owns and freezes its records: everything
 * it hands out is a read-only view, except copies(). Map-like, so the scan and operator commands use it as a Map.
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
