/**
 * The forwarder's work in flight by record id: POSTs and retried writes of held results. No I/O; no timers but
 * stop()'s grace. An id is in flight at most once (start() returns false otherwise). `posts` counts POSTs only.
 * A work's rejection goes to onError (never unhandled); on settle the id leaves first, then onSettled runs.
 * settled(graceMs) resolves with the ids still in flight after the grace.
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
      graceTimer = setTimeout(
        () => {
          timedOut = true;
          resolve();
        },
        Math.max(0, graceMs),
      );
    });
    while (this.byId.size > 0 && !timedOut) {
      await Promise.race([Promise.all([...this.byId.values()].map((f) => f.done)), expired]);
    }
    clearTimeout(graceTimer);
    return this.ids();
  }
}
