/**
 * The forwarder's work in flight, by record id: POSTs (a record sent to the webhook and its result recorded) and the
 * retried spool writes of results held in memory. No timers of its own except stop()'s grace; no I/O.
 *
 * Contract and invariants
 * - A record id is in flight at most once: start() refuses (returns false) an id already in flight, whatever the kind,
 *   so a record is never POSTed twice at the same time and never POSTed while its held result is being written.
 * - `posts` counts the POSTs in flight (writes are not requests and count for nothing but their id). The forwarder
 *   starts a POST only while posts < its limit (the concurrency, or 1 while the endpoint counts as down).
 * - The work given to start() is a promise-returning function that should not reject; if it does, the rejection is
 *   handed to `onError` (never unhandled). When it settles its id leaves the set first, then `onSettled` runs (the
 *   forwarder looks for more work), so the next pick already sees the slot free and the id pickable.
 * - oldestPost() is the id of the POST in flight longest (insertion order), for the status and the watchdog.
 * - settled(graceMs) waits up to graceMs for everything in flight at the call (and anything started meanwhile) and
 *   resolves with the ids still in flight then (empty when all settled).
 */

export type FlightKind = 'post' | 'write';

interface Flight {
  readonly kind: FlightKind;
  readonly done: Promise<void>;
}

export class Flights {
  private readonly byId = new Map<string, Flight>();

  constructor(
    private readonly onSettled: () => void,
    private readonly onError: (id: string, err: unknown) => void,
  ) {}

  /** POSTs in flight (counted: the map holds at most the concurrency plus the held-result writes). */
  get posts(): number {
    let n = 0;
    for (const f of this.byId.values()) if (f.kind === 'post') n++;
    return n;
  }

  /** Everything in flight (POSTs and writes). */
  get size(): number {
    return this.byId.size;
  }

  has(id: string): boolean {
    return this.byId.has(id);
  }

  /** The POST in flight longest, if any. */
  oldestPost(): string | undefined {
    for (const [id, f] of this.byId) if (f.kind === 'post') return id;
    return undefined;
  }

  /** Ids in flight, in the order they started. */
  ids(): string[] {
    return [...this.byId.keys()];
  }

  /** Start `work` for `id` unless that id is in flight already (then nothing happens and false is returned). */
  start(id: string, kind: FlightKind, work: () => Promise<void>): boolean {
    if (this.byId.has(id)) return false;
    let run: Promise<void>;
    try {
      run = work();
    } catch (err) {
      run = Promise.reject(err);
    }
    const done = run
      .catch((err: unknown) => this.onError(id, err))
      .finally(() => {
        this.byId.delete(id);
        try {
          this.onSettled();
        } catch (err) {
          this.onError(id, err);
        }
      });
    this.byId.set(id, { kind, done });
    return true;
  }

  /** Wait up to graceMs for all work in flight; resolves with the ids still in flight then. */
  async settled(graceMs: number): Promise<string[]> {
    if (this.byId.size === 0) return [];
    let graceTimer: ReturnType<typeof setTimeout> | undefined;
    let timedOut = false;
    const expired = new Promise<void>((resolve) => {
      graceTimer = setTimeout(() => {
        timedOut = true;
        resolve();
      }, Math.max(0, graceMs));
    });
    while (this.byId.size > 0 && !timedOut) {
      await Promise.race([Promise.all([...this.byId.values()].map((f) => f.done)), expired]);
    }
    clearTimeout(graceTimer);
    return this.ids();
  }
}
