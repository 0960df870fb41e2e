/**
 * Where log lines go: a Node Writable (process.stdout by default, or the caller's destination), in order, with a bound
 * on what may wait in memory for a reader that does not read.
 *
 * Why process.stdout.write and no writer of our own (Node's "A note on process I/O", Linux):
 * - files: process.stdout is a SyncWriteStream (fs.writeSync): every line is on disk when write() returns;
 * - TTYs: tty.WriteStream sets its fd blocking: the same;
 * - pipes and sockets (journald's stream socket; child_process pipes are socketpairs): a net.Socket over a libuv handle
 *   that makes the fd non-blocking and tries each write at once (uv_try_write). What the kernel takes is in the kernel
 *   when write() returns; what it does not take (EAGAIN, a partial write) waits in the process, and libuv writes it
 *   when the fd polls writable: EAGAIN is handled there, without a thread or busy retry.
 * So a line logged just before process.exit() can be lost on a socket: an AF_UNIX stream socket charges each write's
 * buffer overhead to the send buffer, so a few hundred short lines fill it even while the reader keeps up (seen: 105
 * to 300 of 300 lines reached a prompt reader on Node 20, 22 and 24). Every exit of the daemon therefore waits for
 * flush() first (cli/run.ts, bounded). The process's event loop is never blocked by a stalled reader (a blocking
 * fs.writeSync on fd 1 would be), and no worker thread is involved.
 *
 * The bound: before each line, the stream's writableLength (bytes accepted but not yet taken by the kernel) is looked
 * at; a line that would take it over maxPendingBytes (1 MiB) is dropped and counted. Dropping goes on until everything
 * queued before it is written (an empty write's callback, which runs in order), then `notice(count, important)` is
 * written once (`important`: how many of them were warn or worse)
 * (one line saying how many were dropped) and lines flow again. An `important` line (warn and worse) is written while
 * dropping too, up to twice the bound: the lines an operator needs most are the last to go. flush() called while
 * dropping calls back once the notice is written too.
 * Left as it is: at process exit, what libuv still holds (the kernel did not take it, see above) is lost (it may be
 * partly written already, so it cannot be written again safely); a stop waits for it (cli/run.ts, bounded). A
 * stream that fails (EPIPE: the reader is gone) is written no more: logging must never end the daemon.
 * One sink per stream (sinkFor): every logger on process.stdout shares its order, its bound and its count.
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
