/**
 * The forwarder's choice of the next records to send (PURE: time comes in as nowMs). pickDue walks the pending items
 * in delivery order and returns up to `max` due ones, or else the earliest wake-up time; O(k), no copies.
 * skip: passed over; busy: in flight, never picked; hold: never picked; dueNow: due whatever their dueMs.
 * strictOrder: a waiting, held or busy item holds back every later item of its modem (until its releaseAtMs), so
 * nothing of one modem overtakes another and never two of one modem are picked at once.
 */

/** What the choice needs to know of a pending record. */
export interface Schedulable {
  readonly id: string;
  readonly modem: string;
  /** Epoch ms the item is due at; undefined = due now. */
  readonly dueMs: number | undefined;
}

export interface PickOptions {
  strictOrder?: boolean;
  skip?: ReadonlySet<string>;
  hold?: ReadonlyMap<string, number>;
  dueNow?: ReadonlySet<string>;
  releaseAtMs?: ReadonlyMap<string, number>;
  busy?: { has(id: string): boolean; readonly size: number };
}

export function pickNext<T extends Schedulable>(
  ordered: Iterable<T>,
  nowMs: number,
  opts: PickOptions = {},
): { next?: T; wakeAtMs?: number } {
  const { picked, wakeAtMs } = pickDue(ordered, nowMs, opts, 1);
  if (picked.length > 0) return { next: picked[0]! };
  return wakeAtMs === undefined ? {} : { wakeAtMs };
}

export function pickDue<T extends Schedulable>(
  ordered: Iterable<T>,
  nowMs: number,
  opts: PickOptions,
  max: number,
): { picked: T[]; wakeAtMs?: number } {
  const { skip, hold, busy } = opts;
  const picked: T[] = [];
  if (max <= 0) return { picked };
  const held = opts.strictOrder ? new Set<string>() : undefined;
  const skipping = skip !== undefined && skip.size > 0;
  const holding = hold !== undefined && hold.size > 0;
  const busying = busy !== undefined && busy.size > 0;
  let wakeAtMs: number | undefined;
  for (const item of ordered) {
    if (skipping && skip.has(item.id)) continue;
    if (held !== undefined && held.size > 0 && held.has(item.modem)) continue;
    if (busying && busy.has(item.id)) {
      held?.add(item.modem);
      continue;
    }
    const holdMs = holding ? hold.get(item.id) : undefined;
    if (holdMs !== undefined) {
      if (held === undefined) continue;
      const own = item.dueMs;
      const until = own === undefined ? holdMs : Math.max(own, holdMs);
      wakeAtMs = wakeAtMs === undefined ? until : Math.min(wakeAtMs, until);
      held.add(item.modem);
      continue;
    }
    const due = opts.dueNow !== undefined && opts.dueNow.has(item.id) ? undefined : item.dueMs;
    if (due === undefined || due <= nowMs) {
      picked.push(item);
      if (picked.length >= max) return { picked };
      held?.add(item.modem);
      continue;
    }
    wakeAtMs = wakeAtMs === undefined ? due : Math.min(wakeAtMs, due);
    if (held === undefined) continue;
    const releaseMs = opts.releaseAtMs?.get(item.id);
    if (releaseMs !== undefined && releaseMs <= nowMs) continue; // its hold on the modem has ended
    if (releaseMs !== undefined) wakeAtMs = Math.min(wakeAtMs, releaseMs);
    held.add(item.modem);
  }
  return wakeAtMs === undefined ? { picked } : { picked, wakeAtMs };
}
