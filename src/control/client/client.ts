/**
 * The CLI's side of the control socket: connect, send requests, match replies by id, receive events.
 * connect() rejects with a ControlClientError whose code says why: `no_daemon` (the caller opens the port itself),
 * `permission` (with a hint naming the group) or `io`. request() resolves with the result or rejects with a
 * RemoteError carrying the daemon's code, hint and data; every request has a timeout, and a dropped connection rejects
 * every pending one at once (`disconnected`). Events go to onEvent listeners in arrival order.
 */
import { connect, type Socket } from 'node:net';
import { ReadlineParser } from '@serialport/parser-readline';
import { ControlError, PROTOCOL_VERSION, type EventMessage, type Reply, type Request } from '../protocol.js';

export type ClientErrorCode = 'no_daemon' | 'permission' | 'io' | 'disconnected' | 'timeout' | 'protocol' | 'busy';

export class ControlClientError extends Error {
  override readonly name = 'ControlClientError';
  constructor(
    readonly code: ClientErrorCode,
    message: string,
    readonly hint?: string,
  ) {
    super(message);
  }
}

/** An error the daemon answered with: the ControlError it sent, as this side of the socket received it. */
export class RemoteError extends ControlError {
  override readonly name: string = 'RemoteError';
}

type RequestBody = Request extends infer R ? (R extends Request ? Omit<R, 'v' | 'id'> : never) : never;

interface Pending {
  resolve(value: unknown): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

const DEFAULT_TIMEOUT_MS = 120_000;

export class ControlClient {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly listeners = new Set<(e: EventMessage) => void>();
  private closedErr: ControlClientError | undefined;
  /** Why the daemon said it closes this connection (its `closing` event), for the error pending requests get. */
  private closingReason: string | undefined;

  private constructor(private readonly socket: Socket) {
    const parser = socket.pipe(new ReadlineParser({ delimiter: '\n', encoding: 'utf8' }));
    parser.on('data', (line: string) => this.onLine(line));
    socket.on('error', () => undefined); // 'close' follows and fails what is pending
    socket.on('close', () =>
      this.failAll(
        new ControlClientError(
          'disconnected',
          `the daemon closed the control connection${this.closingReason ? `: ${this.closingReason}` : ''}`,
        ),
      ),
    );
  }

  static connect(path: string, timeoutMs = 2000): Promise<ControlClient> {
    return new Promise((resolve, reject) => {
      const socket = connect(path);
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new ControlClientError('no_daemon', `no answer on ${path} within ${timeoutMs} ms`));
      }, timeoutMs);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeAllListeners('error');
        resolve(new ControlClient(socket));
      });
      socket.once('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED')
          reject(new ControlClientError('no_daemon', `no daemon at ${path}`));
        else if (err.code === 'EACCES' || err.code === 'EPERM') {
          reject(
            new ControlClientError(
              'permission',
              `permission denied on the control socket ${path}`,
              "reading needs the socket's group (control.group, pulsa-bridge), operating also pulsa-bridge-ops (control.operateGroup): sudo usermod -aG pulsa-bridge $USER, then log in again",
            ),
          );
        } else reject(new ControlClientError('io', `cannot connect to ${path}: ${err.message}`));
      });
    });
  }

  request<T = unknown>(body: RequestBody, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<T> {
    if (this.closedErr) return Promise.reject(this.closedErr);
    const id = this.nextId++;
    const line = JSON.stringify({ v: PROTOCOL_VERSION, id, ...body }) + '\n';
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(
          new ControlClientError(
            'timeout',
            `the daemon did not answer ${body.op} within ${Math.round(timeoutMs / 1000)} s`,
          ),
        );
      }, timeoutMs);
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
      this.socket.write(line);
    });
  }

  onEvent(listener: (e: EventMessage) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      if (this.socket.destroyed) return resolve();
      this.socket.once('close', () => resolve());
      this.socket.end();
      setTimeout(() => this.socket.destroy(), 500).unref();
    });
  }

  private onLine(line: string): void {
    let msg: Reply | EventMessage;
    try {
      msg = JSON.parse(line) as Reply | EventMessage;
    } catch {
      this.failAll(new ControlClientError('protocol', `the daemon sent a line that is not JSON: ${line.slice(0, 80)}`));
      this.socket.destroy();
      return;
    }
    if ('event' in msg) {
      if (msg.event === 'closing')
        this.closingReason = String((msg.data as { reason?: unknown } | null)?.reason ?? '') || undefined;
      for (const l of this.listeners) l(msg);
      return;
    }
    const p = typeof msg.id === 'number' ? this.pending.get(msg.id) : undefined;
    if (!p) {
      // A reply without a request we know of: an error about an unframeable line, or the socket being full (id null).
      if (!msg.ok) {
        if (msg.error.code === 'busy') this.failAll(new ControlClientError('busy', msg.error.message, msg.error.hint));
        else this.failAll(new ControlClientError('protocol', `the daemon refused a request: ${msg.error.message}`));
      }
      return;
    }
    this.pending.delete(msg.id as number);
    clearTimeout(p.timer);
    if (msg.ok) p.resolve(msg.result);
    else p.reject(new RemoteError(msg.error.code, msg.error.message, msg.error.hint, msg.error.data));
  }

  private failAll(err: ControlClientError): void {
    this.closedErr ??= err;
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(err);
      this.pending.delete(id);
    }
  }
}
