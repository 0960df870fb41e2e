/**
 * The forwarder's choice of the next record to send (PURE: no timers, no clock, no fs; time comes in as nowMs).
 *
 * Contract and invariants
 * - Input: pending items in delivery order (oldest receivedAt first, then id), as the spool's ordered view
 *   (Spool.pendingInOrder) gives them; each says its id, its modem and when it is due (dueMs; undefined = due now).
 * - pickNext returns the first due item (dueMs undefined or <= nowMs), or, when none is due, the earliest due time
 *   among the items it looked at (wakeAtMs; neither when there is nothing to wait for).
 * - skip: ids passed over as if absent (they hold nothing back).
 * - strictOrder: an item not yet due holds back every later item of the same modem (they are neither picked nor counted
 *   for the wake-up time), except once its time in `releaseAtMs` (the end of the hold a rejected record may impose on
 *   its modem) has come: then it holds nothing back (it is still picked when due); before that, that time also counts
 *   for the wake-up time.
 * - dueNow: ids treated as due whatever their dueMs (records whose backoff an endpoint outage made moot).
 * - hold: ids never picked. Without strictOrder they are passed over like skip. With strictOrder each counts as a
 *   waiting item that is never due: it holds back the later items of its modem, and the later of its own due time and
 *   the time `hold` gives counts for the wake-up time. (The forwarder holds records whose not-delivered result it could
 *   not record yet: they are sent again later, so nothing may overtake them.)
 * - busy: ids in flight (being sent, or their held result being written). Never picked and they count nothing for the
 *   wake-up time (their end wakes the forwarder). With strictOrder each holds back the later items of its modem (one
 *   record of a modem in flight at a time, and nothing overtakes it); without, they are passed over like skip.
 * - pickDue returns up to `max` due items in one walk, in order (pickNext is pickDue with max 1). With strictOrder a
 *   picked item holds back the later items of its modem like a busy one (never two of one modem in one pick). When it
 *   picks `max` items it stops there and gives no wake-up time (the end of those sends wakes the forwarder).
 * - Cost: it walks from the oldest and stops at the max-th due item: O(k), k = items before it; number comparisons and
 *   set lookups only. It returns the items themselves (no copy): the spool's entries are frozen, read-only views.
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

export function pickNext<T extends Schedulable>(ordered: Iterable<T>, nowMs: number, opts: PickOptions = {}): { next?: T; wakeAtMs?: number } {
  const { picked, wakeAtMs } = pickDue(ordered, nowMs, opts, 1);
  if (picked.length > 0) return { next: picked[0]! };
  return wakeAtMs === undefined ? {} : { wakeAtMs };
}

export function pickDue<T extends Schedulable>(ordered: Iterable<T>, nowMs: number, opts: PickOptions, max: number): { picked: T[]; wakeAtMs?: number } {
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
