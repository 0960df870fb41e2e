/**
 * The daemon's control socket: a Unix socket speaking protocol.ts, one request per line. Transport only: what a
 * request does is the injected handler's job (src/control/dispatch.ts).
 *
 * Contract
 * - The socket appears at its path already with its final mode (default 0660) and group: it is bound under a
 *   temporary name, chmod/chown'ed, then renamed into place, so there is no moment when others could connect.
 *   A stale socket file (no daemon behind it) is replaced; a live one is an error (another daemon listens there).
 * - Every request line gets exactly one reply. Lines that are not valid requests are answered by protocol.ts's error
 *   replies and reach no handler. A line longer than MAX_LINE_BYTES is answered `too_large` and the connection is
 *   closed (its rest cannot be framed). A handler that throws a ControlError answers with its code; anything else
 *   thrown is answered `internal` and logged, and never takes the daemon down.
 * - A client that disconnects aborts the AbortSignal of its requests in flight and runs its onClose callbacks (the
 *   dispatcher cancels its USSD session there). A client that stops reading cannot make the daemon buffer without
 *   bound: past MAX_BUFFERED bytes waiting for it, its connection is closed. Nothing here ever waits for a client.
 */
import { chmod, chown, rename, rm } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { ReadlineParser } from '@serialport/parser-readline';
import type { Logger } from '../log.js';
import {
  encodeLine,
  errorReply,
  MAX_LINE_BYTES,
  okReply,
  parseRequest,
  type ErrorCode,
  type EventMessage,
  type Reply,
  type Request,
} from './protocol.js';

/** Bytes queued for a client that does not read before it is disconnected. */
const MAX_BUFFERED = 1024 * 1024;

export class ControlError extends Error {
  override readonly name = 'ControlError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly hint?: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export interface ControlConnection {
  readonly id: number;
  readonly openedAt: string;
  /** What the client said it is in `hello` (e.g. "pulsa-bridge ussd"), for "busy, session opened by ...". */
  client: string | undefined;
  readonly subscriptions: Set<string>;
  readonly closed: boolean;
  send(event: EventMessage): void;
  onClose(fn: () => void): void;
}

export type ControlHandler = (request: Request, conn: ControlConnection, signal: AbortSignal) => Promise<unknown>;

export interface ControlServerOptions {
  path: string;
  handler: ControlHandler;
  logger: Logger;
  /** File mode of the socket (default 0o660: the service's user and group). */
  mode?: number;
  /** Group id to own the socket (default: the daemon's own group). */
  gid?: number;
  maxConnections?: number;
}

class Connection implements ControlConnection {
  readonly openedAt = new Date().toISOString();
  client: string | undefined;
  readonly subscriptions = new Set<string>();
  closed = false;
  readonly inflight = new Set<AbortController>();
  private readonly closeFns: Array<() => void> = [];

  constructor(
    readonly id: number,
    private readonly socket: Socket,
    private readonly log: Logger,
  ) {}

  write(message: Reply | EventMessage): void {
    if (this.closed || this.socket.destroyed) return;
    if (this.socket.writableLength > MAX_BUFFERED) {
      this.log.warn({ conn: this.id }, `control client ${this.id} stopped reading (${this.socket.writableLength} bytes waiting): disconnecting it`);
      this.socket.destroy();
      return;
    }
    this.socket.write(encodeLine(message));
  }

  send(event: EventMessage): void {
    this.write(event);
  }

  onClose(fn: () => void): void {
    if (this.closed) fn();
    else this.closeFns.push(fn);
  }

  /** Ends the connection (the daemon is stopping): what was written is flushed first, then the socket goes. */
  end(): void {
    this.socket.end();
    setTimeout(() => this.socket.destroy(), 200).unref();
  }

  markClosed(): void {
    if (this.closed) return;
    this.closed = true;
    for (const c of this.inflight) c.abort(new ControlError('cancelled', 'the client disconnected'));
    for (const fn of this.closeFns.splice(0)) {
      try {
        fn();
      } catch (err) {
        this.log.error({ err, conn: this.id }, 'control: a close callback failed');
      }
    }
  }
}

export class ControlServer {
  private server: Server | undefined;
  private readonly conns = new Set<Connection>();
  private nextId = 1;
  private readonly log: Logger;

  constructor(private readonly o: ControlServerOptions) {
    this.log = o.logger;
  }

  get connections(): readonly ControlConnection[] {
    return [...this.conns];
  }

  async listen(): Promise<void> {
    await this.removeStale();
    const tmp = `${this.o.path}.${process.pid}.tmp`;
    await rm(tmp, { force: true });
    const server = createServer((socket) => this.accept(socket));
    server.maxConnections = this.o.maxConnections ?? 32;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(tmp, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (err) => this.log.error({ err }, `control socket error: ${err.message}`));
    try {
      await chmod(tmp, this.o.mode ?? 0o660);
      if (this.o.gid !== undefined) await chown(tmp, process.getuid?.() ?? -1, this.o.gid);
      await rename(tmp, this.o.path);
    } catch (err) {
      server.close();
      await rm(tmp, { force: true });
      throw err;
    }
    this.server = server;
    this.log.info({ path: this.o.path }, `control socket listening at ${this.o.path}`);
  }

  /** Sends an event to every connection subscribed to its kind (and, for modem events, to that modem or all). */
  broadcast(event: EventMessage): void {
    for (const c of this.conns) if (c.subscriptions.has(event.event)) c.send(event);
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    const closing = server ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
    for (const c of this.conns) {
      c.send({ v: 1, event: 'closing', data: { reason: 'the daemon is stopping' } });
      c.end();
    }
    await closing;
    for (const c of this.conns) c.markClosed();
    await rm(this.o.path, { force: true });
  }

  private async removeStale(): Promise<void> {
    const alive = await new Promise<boolean>((resolve) => {
      const s = connect(this.o.path);
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (alive) {
      throw new ControlError('internal', `another process is listening on the control socket ${this.o.path}`, 'is a second pulsa-bridge daemon running with the same runtime directory?');
    }
    await rm(this.o.path, { force: true }); // stale file of a daemon that died, or nothing
  }

  private accept(socket: Socket): void {
    const conn = new Connection(this.nextId++, socket, this.log);
    this.conns.add(conn);
    this.log.debug({ conn: conn.id }, 'control client connected');
    let pending = 0; // bytes since the last newline, counted before the line parser buffers them
    const parser = new ReadlineParser({ delimiter: '\n', encoding: 'utf8' });
    socket.on('data', (chunk: Buffer) => {
      const nl = chunk.lastIndexOf(0x0a);
      pending = nl < 0 ? pending + chunk.length : chunk.length - nl - 1;
      if (pending > MAX_LINE_BYTES) {
        conn.write(errorReply(null, { code: 'too_large', message: `request longer than ${MAX_LINE_BYTES} bytes; closing the connection` }));
        socket.end();
        socket.destroy();
        return;
      }
      parser.write(chunk);
    });
    parser.on('data', (line: string) => void this.onLine(conn, line.replace(/\r$/, '')));
    socket.on('error', (err) => this.log.debug({ err, conn: conn.id }, 'control client socket error (it went away)'));
    socket.on('close', () => {
      this.conns.delete(conn);
      conn.markClosed();
      this.log.debug({ conn: conn.id }, 'control client disconnected');
    });
  }

  private async onLine(conn: Connection, line: string): Promise<void> {
    if (line.trim() === '') return;
    const parsed = parseRequest(line);
    if (!parsed.ok) {
      conn.write(parsed.reply);
      return;
    }
    const req = parsed.request;
    const ac = new AbortController();
    conn.inflight.add(ac);
    try {
      const result = await this.o.handler(req, conn, ac.signal);
      conn.write(okReply(req.id, result ?? null));
    } catch (err) {
      if (err instanceof ControlError) {
        conn.write(errorReply(req.id, { code: err.code, message: err.message, ...(err.hint ? { hint: err.hint } : {}), ...(err.data !== undefined ? { data: err.data } : {}) }));
      } else {
        this.log.error({ err, op: req.op }, `control request ${req.op} failed: ${(err as Error)?.message ?? String(err)}`);
        conn.write(errorReply(req.id, { code: 'internal', message: (err as Error)?.message ?? String(err) }));
      }
    } finally {
      conn.inflight.delete(ac);
    }
  }
}
