/**
 * HeapGuard: keeps the JS heap near its live size, so a burst of SMS does not raise the daemon's peak RSS by several
 * MB of garbage (issue 13: one modem at most 50 MB through a 100-SMS burst; bench/README.md has the figures).
 *
 * Why: V8 collects its old generation only once it has grown by a minimum step (MBs) beyond what the last full
 * collection left. In a burst, objects that live a few milliseconds too long (a listing's lines, records waiting for
 * their fsync) survive two young collections, are promoted and die in the old generation; with a 1 MB semi-space
 * (the unit's --max-semi-space-size=1) that is ~4 MB for 100 SMS, all of it resident until V8's step is reached.
 * No V8 flag lowers that step, so the daemon asks for the full collection itself.
 *
 * Contract
 * - start() watches garbage collections (perf_hooks 'gc' entries: event-driven, nothing runs while nothing
 *   allocates). After a young collection that leaves the heap more than `slack` above what the last full collection
 *   left, it runs one full collection (`gc()`, present when node runs with --expose-gc, as the unit starts it);
 *   slack = max(minSlackBytes, slackRatio x that size): 2 MiB, or a quarter of a larger heap, so a large live heap
 *   (16 modems, a long outage's backlog) is not collected more often than its size needs. Measured (bench/README.md):
 *   with 1.5 MiB / 15 % the 16-modem burst cost ~7 % more CPU for one modem's -0.5 MiB; with 2 MiB / 25 % no CPU
 *   difference was measurable, and the 16-modem peak stays 4-5 MiB lower than without the guard.
 * - Only young and full collections count (perf_hooks kinds MINOR and MAJOR); incremental-marking steps and weak
 *   callbacks are not a collection's result.
 * - Without `gc` (node started without --expose-gc) start() returns false and nothing is watched.
 * - stop() disconnects the observer. Counts (forced collections, their total pause) are readable for the logs and
 *   benches. Never throws into the caller; a failing gc() disables the guard and is reported once (onError).
 */
import { PerformanceObserver, constants, type PerformanceEntry } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';

export interface HeapGuardOptions {
  /** Least growth over the last full collection's result before one is forced (default 2 MiB). */
  minSlackBytes?: number;
  /** Growth allowed as a share of the last full collection's result when that is larger (default 0.25). */
  slackRatio?: number;
  /** The full-collection function (default globalThis.gc, present with --expose-gc). */
  gc?: (() => void) | undefined;
  /** Heap size now (default: V8's used_heap_size). */
  heapUsed?: () => number;
  /** Told once when gc() throws and the guard stops (the daemon logs it). */
  onError?: (err: unknown) => void;
}

export class HeapGuard {
  private readonly minSlack: number;
  private readonly ratio: number;
  private readonly gc: (() => void) | undefined;
  private readonly heapUsed: () => number;
  private observer: PerformanceObserver | undefined;
  /** Heap size after the last full collection (ours or V8's). */
  private base = 0;
  private forcedCount = 0;
  private forcedMsTotal = 0;
  private readonly onError: ((err: unknown) => void) | undefined;

  constructor(options: HeapGuardOptions = {}) {
    this.onError = options.onError;
    this.minSlack = options.minSlackBytes ?? 2 * 1024 * 1024;
    this.ratio = options.slackRatio ?? 0.25;
    this.gc = 'gc' in options ? options.gc : (globalThis as { gc?: () => void }).gc;
    this.heapUsed = options.heapUsed ?? (() => getHeapStatistics().used_heap_size);
  }

  /** Starts watching; false when no full-collection function is available (node without --expose-gc). */
  start(): boolean {
    if (!this.gc || this.observer) return this.observer !== undefined;
    this.base = this.heapUsed();
    this.observer = new PerformanceObserver((list) => this.onEntries(list.getEntries()));
    this.observer.observe({ entryTypes: ['gc'] });
    return true;
  }

  stop(): void {
    this.observer?.disconnect();
    this.observer = undefined;
  }

  /** Full collections this guard ran, and their summed pause (ms). */
  get stats(): { forced: number; forcedMs: number } {
    return { forced: this.forcedCount, forcedMs: this.forcedMsTotal };
  }

  /** Handles a batch of gc entries (exported through the observer; tests call it with their own entries). */
  onEntries(entries: readonly PerformanceEntry[]): void {
    if (!this.observer) return; // stopped (or never started): entries still queued are ignored
    let major = false;
    let minor = false;
    for (let i = 0; i < entries.length; i++) {
      const kind = (entries[i] as { detail?: { kind?: number } }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) major = true;
      else if (kind === constants.NODE_PERFORMANCE_GC_MINOR) minor = true;
    }
    if (!major && !minor) return; // incremental marking steps, weak callbacks: not a collection's result
    const used = this.heapUsed();
    if (major) {
      this.base = used;
      return;
    }
    if (used <= this.base + Math.max(this.minSlack, this.base * this.ratio)) return;
    this.collect();
  }

  private collect(): void {
    const gc = this.gc;
    if (!gc) return;
    const t0 = performance.now();
    try {
      gc();
    } catch (err) {
      this.stop(); // a gc() that throws will not do better next time: V8's own schedule takes over
      this.onError?.(err);
      return;
    }
    this.forcedCount++;
    this.forcedMsTotal += performance.now() - t0;
    this.base = this.heapUsed();
  }
}
