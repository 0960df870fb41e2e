/**
 * Where log lines go: a Writable (process.stdout by default), in order, through process.stdout.write: the event loop
 * is never blocked by a stalled reader and no thread is used. Bound: a line that would take the stream's
 * writableLength over maxPendingBytes is dropped and counted (warn and worse only beyond twice the bound), then one
 * notice says how many. flush() calls back once everything so far reached the OS; every exit waits for it, since a
 * socket (journald) may not take a burst at once. A failing stream (EPIPE) is written no more: logging never ends the
 * daemon. One sink per stream (sinkFor).
 */

export const MAX_PENDING_BYTES = 1024 * 1024;

export interface SinkOptions {
  /** Bytes that may wait for the reader before lines are dropped (default MAX_PENDING_BYTES). */
  maxPendingBytes?: number;
  /** The line (with its newline) written once the reader caught up, saying how many lines were dropped. */
  notice: (dropped: number, important: number) => string;
}

type Stream = NodeJS.WritableStream & { writableLength?: number };

export class LineSink {
  private dropped = 0;
  private droppedImportant = 0;
  private dropping = false;
  private afterResume: Array<(err?: Error | null) => void> = [];
  private failed: Error | undefined;
  private readonly maxPending: number;

  constructor(
    private readonly stream: Stream,
    private readonly opts: SinkOptions,
  ) {
    this.maxPending = opts.maxPendingBytes ?? MAX_PENDING_BYTES;
    stream.on('error', (err: Error) => {
      // EPIPE (the reader went away) or any other write error: nothing can be logged about it through this stream.
      this.failed = err;
    });
  }

  /** Lines dropped since the last notice (0 while flowing). */
  get droppedLines(): number {
    return this.dropped;
  }

  write(line: string, important = false): void {
    if (this.failed) return;
    if (this.dropping && !important) {
      this.dropped++;
      return;
    }
    const pending = this.stream.writableLength ?? 0;
    if (pending > 0 && pending + line.length > (important ? 2 * this.maxPending : this.maxPending)) {
      if (!this.dropping) {
        this.dropping = true;
        this.dropped = 0;
        this.droppedImportant = 0;
        this.afterPending(() => this.resume());
      }
      this.dropped++;
      if (important) this.droppedImportant++;
      return;
    }
    this.stream.write(line);
  }

  /** Calls `cb` once every line written so far has been handed to the kernel (or the stream failed). */
  flush(cb?: (err?: Error | null) => void): void {
    if (!cb) return;
    if (this.failed) {
      const err = this.failed;
      process.nextTick(() => cb(err));
      return;
    }
    if (this.dropping) {
      this.afterResume.push(cb); // after the notice of what was dropped
      return;
    }
    if ((this.stream.writableLength ?? 0) === 0) {
      process.nextTick(() => cb(null));
      return;
    }
    this.afterPending(() => cb(this.failed ?? null));
  }

  /** Runs `fn` once everything queued on the stream before this call is written: an empty write's callback. */
  private afterPending(fn: () => void): void {
    try {
      this.stream.write('', () => fn());
    } catch (err) {
      // a stream destroyed or ended under us: the 'error' handler above may not see this
      this.failed = err as Error;
      fn();
    }
  }

  private resume(): void {
    const count = this.dropped;
    const important = this.droppedImportant;
    this.dropping = false;
    this.dropped = 0;
    this.droppedImportant = 0;
    if (!this.failed && count > 0) this.stream.write(this.opts.notice(count, important));
    for (const cb of this.afterResume.splice(0)) this.flush(cb);
  }
}

const sinks = new WeakMap<object, LineSink>();

/** The one sink of `stream` (made with `opts` the first time). */
export function sinkFor(stream: NodeJS.WritableStream, opts: SinkOptions): LineSink {
  let sink = sinks.get(stream);
  if (!sink) sinks.set(stream, (sink = new LineSink(stream, opts)));
  return sink;
}
