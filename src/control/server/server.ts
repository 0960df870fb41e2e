/**
 * The daemon's control socket: a Unix socket speaking control/protocol.ts, one request per line; what a request does
 * is the injected handler's job (./dispatch.ts). The socket appears with its final mode and group (bound under a
 * temporary name, then renamed; a stale socket file is replaced, a live one is an error). Every request line gets
 * exactly one reply; a handler's ControlError answers with its code, anything else `internal` (logged), and nothing a
 * client sends, or fails to read, takes the daemon down or makes it buffer without bound (ControlLimits). A client
 * that goes away aborts its requests in flight and runs its onClose callbacks. Every request is logged with the peer's
 * uid and pid (SO_PEERCRED, ./peer.ts) and its redacted arguments, naming what can move credit (./access.ts); a peer's
 * connection is admitted or refused when it connects, and repeated warnings of one cause are summarised.
 */
import { chmod, chown, lstat, rename, rm } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { ReadlineParser } from '@serialport/parser-readline';
import type { Logger } from '../../log.js';
import { RepeatedWarnings } from '../../log/repeated.js';
import { describeRequest, levelNeeded, type PeerState } from './access.js';
import { peerCredentials, peerLookupMethod } from './peer.js';
import {
  ControlError,
  encodeLine,
  errorReply,
  MAX_LINE_BYTES,
  okReply,
  parseRequest,
  type EventMessage,
  type Reply,
  type Request,
} from '../protocol.js';

/**
 * A local user must not exhaust the daemon's memory or lock operators out (counted when a peer connects, idle or not,
 * in the order peers connected):
 * - `maxInflight` requests in flight per connection; beyond, `busy` at once, and `maxBusyInARow` refusals disconnect;
 * - `maxConnections` for everyone, plus `reservedConnections` kept for privileged peers (root, the daemon's uid, the
 *   operating group); beyond, one `busy` line and the connection is closed;
 * - `maxPerUid` connections per peer uid (root and the daemon's uid excepted);
 * - the first request within `firstRequestMs`, a line complete within `lineMs`, no connection idle longer than `idleMs`
 *   (`subscribedIdleMs` once subscribed): otherwise a `closing` event saying why, and the connection is closed.
 */
export interface ControlLimits {
  maxConnections: number;
  reservedConnections: number;
  maxPerUid: number;
  maxInflight: number;
  maxBusyInARow: number;
  firstRequestMs: number;
  lineMs: number;
  idleMs: number;
  subscribedIdleMs: number;
  /** Bytes queued for a client that does not read before it is disconnected. */
  maxBuffered: number;
}

export const DEFAULT_LIMITS: Readonly<ControlLimits> = Object.freeze({
  maxConnections: 32,
  reservedConnections: 8,
  maxPerUid: 8,
  maxInflight: 4,
  maxBusyInARow: 32,
  firstRequestMs: 10_000,
  lineMs: 10_000,
  idleMs: 120_000,
  subscribedIdleMs: 30 * 60_000,
  maxBuffered: 1024 * 1024,
});

export interface ControlConnection {
  readonly id: number;
  readonly openedAt: string;
  /** What the client said it is in `hello` (e.g. "pulsa-bridge ussd"), for "busy, session opened by ...". */
  client: string | undefined;
  /** Who is connected (SO_PEERCRED), known before any request reaches the handler; `ok: false` says why not. */
  readonly peer: PeerState;
  /** "uid 1000 pid 4242" (or why the peer is unknown): what the log and `busy` messages name. */
  readonly who: string;
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
  /** See the header; defaults DEFAULT_LIMITS. */
  limits?: Partial<ControlLimits>;
  /** Who is on the other end (default: SO_PEERCRED, peer.ts: in process, or through perl). */
  identify?: (socket: Socket) => Promise<PeerState>;
  /** Whether a peer may use the reserved connections (default: root and the daemon's uid; the daemon adds the
   * operating group). */
  privileged?: (peer: PeerState) => boolean;
  /** How long repeated warnings of one cause are summarised into one line (default 10 s). */
  warnIntervalMs?: number;
  /** Milliseconds clock (default Date.now). */
  now?: () => number;
}

function describePeer(peer: PeerState): string {
  return peer.ok ? `uid ${peer.peer.uid} pid ${peer.peer.pid}` : `unknown peer (${peer.error})`;
}

class Connection implements ControlConnection {
  readonly openedAt = new Date().toISOString();
  client: string | undefined;
  peer: PeerState = { ok: false, error: 'not identified yet' };
  private identifying: Promise<PeerState> | undefined;
  readonly subscriptions = new Set<string>();
  closed = false;
  readonly inflight = new Set<AbortController>();
  private readonly closeFns: Array<() => void> = [];
  /** Requests received (any line), busy answers in a row, when the last activity was, when the partial line began. */
  requests = 0;
  busyInARow = 0;
  busyLogged = false;
  /** Settled when the peer is known and the connection admitted (true) or refused and closing (false). */
  admission: Promise<boolean> = Promise.resolve(false);
  admitted = false;
  lastActivity: number;
  partialSince: number | undefined;

  constructor(
    readonly id: number,
    readonly socket: Socket,
    private readonly log: Logger,
    private readonly maxBuffered: number,
    private readonly warnings: RepeatedWarnings,
    now: number,
  ) {
    this.lastActivity = now;
  }

  get who(): string {
    return describePeer(this.peer);
  }

  identify(fn: (socket: Socket) => Promise<PeerState>): Promise<PeerState> {
    this.identifying ??= fn(this.socket)
      .catch((err: unknown): PeerState => ({ ok: false, error: (err as Error)?.message ?? String(err) }))
      .then((p) => (this.peer = p));
    return this.identifying;
  }

  write(message: Reply | EventMessage): void {
    if (this.closed || this.socket.destroyed) return;
    if (this.socket.writableLength > this.maxBuffered) {
      const waiting = this.socket.writableLength;
      const line = `control client ${this.id} (${this.who}) stopped reading (${waiting} bytes waiting)`;
      const peerUid = this.peer.ok ? this.peer.peer.uid : undefined;
      this.warnings.note('not-reading', `${line}: disconnecting it`, { conn: this.id, peerUid });
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

  /** Ends the connection: what was written is flushed first, then the socket goes. */
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
  private readonly limits: ControlLimits;
  private readonly now: () => number;
  private readonly identify: (socket: Socket) => Promise<PeerState>;
  private readonly daemonUid = process.getuid?.() ?? -1;
  private readonly privileged: (peer: PeerState) => boolean;
  private sweeper: NodeJS.Timeout | undefined;
  /** Settles once every connection accepted so far has been admitted or refused (see accept()). */
  private admissions: Promise<void> = Promise.resolve();
  /** Warnings a client can cause, one line per cause per interval. */
  private readonly warnings: RepeatedWarnings;
  /** The request lines of reading requests (and of operating ones a peer may not make), summarised the same way. */
  private readonly requestLines: RepeatedWarnings;

  constructor(private readonly o: ControlServerOptions) {
    this.log = o.logger;
    this.limits = { ...DEFAULT_LIMITS, ...(o.limits ?? {}) };
    this.now = o.now ?? Date.now;
    this.identify = o.identify ?? ((socket) => peerCredentials(socket));
    this.privileged = o.privileged ?? ((p) => p.ok && (p.peer.uid === 0 || p.peer.uid === this.daemonUid));
    const interval = o.warnIntervalMs ?? 10_000;
    this.warnings = new RepeatedWarnings((line, fields) => this.log.warn(fields ?? {}, line), interval);
    this.requestLines = new RepeatedWarnings((line, fields) => this.log.info(fields ?? {}, line), interval);
  }

  get connections(): readonly ControlConnection[] {
    return [...this.conns];
  }

  async listen(): Promise<void> {
    await this.removeStale();
    const tmp = `${this.o.path}.${process.pid}.tmp`;
    await rm(tmp, { force: true });
    const server = createServer((socket) => this.accept(socket));
    // A backstop only: up to here a connection past the limits still gets its `busy` line (accept()).
    server.maxConnections = this.backstop() + 16;
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
    this.sweepWhileConnected(); // a client may have connected to the socket before it was renamed into place
    this.log.info({ path: this.o.path }, `control socket listening at ${this.o.path}`);
    if (!this.o.identify) {
      // loaded now, not on the first connection; perl per connection costs every command ~10 ms more
      const how = await peerLookupMethod();
      if (how.inProcess) this.log.info(`control: ${how.text}`);
      else this.log.warn(`control: ${how.text}`);
    }
  }

  /** Sends an event to every connection subscribed to its kind (and, for modem events, to that modem or all). */
  broadcast(event: EventMessage): void {
    for (const c of this.conns) if (c.subscriptions.has(event.event)) c.send(event);
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    const closing = server ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
    for (const c of this.conns) {
      c.send({ v: 1, event: 'closing', data: { reason: 'the daemon is stopping' } });
      c.end();
    }
    await closing;
    for (const c of this.conns) c.markClosed();
    this.warnings.flush();
    this.requestLines.flush();
    await rm(this.o.path, { force: true });
  }

  private async removeStale(): Promise<void> {
    // Only a socket is ours to replace: a file someone put at the path (a config typo pointing at a real file) stays.
    const existing = await lstat(this.o.path).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
    if (existing === undefined) return;
    if (!existing.isSocket()) {
      const kind = existing.isSymbolicLink()
        ? 'symbolic link'
        : existing.isDirectory()
          ? 'directory'
          : 'regular file or device';
      throw new ControlError(
        'internal',
        `${this.o.path} exists and is not a socket (a ${kind}): not removing it`,
        'move it away, or set control.socket to a path of its own',
      );
    }
    const alive = await new Promise<boolean>((resolve) => {
      const s = connect(this.o.path);
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (alive) {
      throw new ControlError(
        'internal',
        `another process is listening on the control socket ${this.o.path}`,
        'is a second pulsa-bridge daemon running with the same runtime directory?',
      );
    }
    await rm(this.o.path, { force: true }); // stale file of a daemon that died, or nothing
  }

  /** Closes a connection for a reason the client is told (a `closing` event, or an error line before any request). */
  private dismiss(conn: Connection, reason: string, asError = false): void {
    if (asError)
      conn.write(
        errorReply(null, {
          code: 'busy',
          message: reason,
          hint: "try again in a moment; `pulsa-bridge status` reads the daemon's state without the socket",
        }),
      );
    else conn.send({ v: 1, event: 'closing', data: { reason } });
    conn.end();
  }

  /** The limits' sweep runs only while a connection is open: an idle daemon with no client wakes for nothing. */
  private sweepWhileConnected(): void {
    if (this.conns.size === 0) {
      if (this.sweeper) clearInterval(this.sweeper);
      this.sweeper = undefined;
    } else if (!this.sweeper && this.server) {
      const l = this.limits;
      this.sweeper = setInterval(
        () => this.sweep(),
        Math.max(20, Math.min(1000, l.firstRequestMs / 4, l.lineMs / 4, l.idleMs / 4)),
      );
      this.sweeper.unref();
    }
  }

  private sweep(): void {
    const now = this.now();
    const l = this.limits;
    for (const c of this.conns) {
      if (c.closed) continue;
      if (c.partialSince !== undefined && now - c.partialSince > l.lineMs) {
        this.log.info(
          { conn: c.id },
          `control client ${c.id} (${c.who}): a request line did not end within ${l.lineMs} ms: closing the connection`,
        );
        this.dismiss(c, `a request line did not end within ${l.lineMs} ms`);
        continue;
      }
      if (c.inflight.size > 0) continue;
      const [limit, what] =
        c.requests === 0
          ? [l.firstRequestMs, 'no request']
          : c.subscriptions.size > 0
            ? [l.subscribedIdleMs, 'idle']
            : [l.idleMs, 'idle'];
      if (now - c.lastActivity > limit) {
        this.log.debug(
          { conn: c.id },
          `control client ${c.id} (${c.who}): ${what} for ${limit} ms: closing the connection`,
        );
        this.dismiss(c, `${what} for ${limit < 1000 ? `${limit} ms` : `${Math.round(limit / 1000)} s`}`);
      }
    }
  }

  /** Connections open at all (identified or not) beyond which a new one is refused before its peer is read. */
  private backstop(): number {
    return this.limits.maxConnections + this.limits.reservedConnections + 8;
  }

  private accept(socket: Socket): void {
    const l = this.limits;
    const open = [...this.conns].filter((c) => !c.closed).length;
    const conn = new Connection(this.nextId++, socket, this.log, l.maxBuffered, this.warnings, this.now());
    this.conns.add(conn);
    this.sweepWhileConnected();
    socket.on('error', (err) => this.log.debug({ err, conn: conn.id }, 'control client socket error (it went away)'));
    socket.on('close', () => {
      this.conns.delete(conn);
      this.sweepWhileConnected();
      conn.markClosed();
      this.log.debug({ conn: conn.id }, 'control client disconnected');
    });
    if (open >= this.backstop()) {
      const line = `control socket full (${open} connections open or being identified): refusing connection ${conn.id}`;
      this.warnings.note('full', line, { conn: conn.id });
      this.dismiss(conn, `the daemon's control socket is full (${open} connections open)`, true);
      return;
    }
    // Peers are looked up side by side, but admitted in the order they connected: a later connection whose lookup
    // ends first never takes a slot ahead of an earlier one.
    const peer = conn.identify(this.identify);
    conn.admission = this.admissions.then(() => peer).then((p) => this.admit(conn, p));
    this.admissions = conn.admission.then(
      () => undefined,
      // admit() does not throw: a bug, logged; the connections behind this one are decided all the same
      (err: unknown) => this.log.error({ err, conn: conn.id }, 'control: admitting a connection failed'),
    );
    this.log.debug({ conn: conn.id }, 'control client connected');
    let pending = 0; // bytes since the last newline, counted before the line parser buffers them
    const parser = new ReadlineParser({ delimiter: '\n', encoding: 'utf8' });
    socket.on('data', (chunk: Buffer) => {
      const nl = chunk.lastIndexOf(0x0a);
      pending = nl < 0 ? pending + chunk.length : chunk.length - nl - 1;
      if (pending === 0) conn.partialSince = undefined;
      else if (nl >= 0 || conn.partialSince === undefined) conn.partialSince = this.now();
      if (pending > MAX_LINE_BYTES) {
        conn.write(
          errorReply(null, {
            code: 'too_large',
            message: `request longer than ${MAX_LINE_BYTES} bytes; closing the connection`,
          }),
        );
        socket.end();
        socket.destroy();
        return;
      }
      parser.write(chunk);
    });
    parser.on('data', (line: string) => void this.onLine(conn, line.replace(/\r$/, '')));
  }

  /**
   * Admits a connection whose peer is known, counting every admitted one (idle or not): a non-privileged uid holds at
   * most maxPerUid, non-privileged peers together at most maxConnections, privileged ones the reserved slots too.
   */
  private admit(conn: Connection, peer: PeerState): boolean {
    if (conn.closed) return false;
    const l = this.limits;
    const admitted = [...this.conns].filter((c) => c.admitted && !c.closed);
    const privileged = this.privileged(peer);
    const refuse = (cause: string, message: string, hint: string): false => {
      const uid = peer.ok ? peer.peer.uid : undefined;
      const fields = { conn: conn.id, peerUid: uid, ...(peer.ok ? { peerPid: peer.peer.pid } : {}) };
      const line = `control client ${conn.id} (${conn.who}): ${message}: refusing the connection`;
      this.warnings.note(`${cause}:${uid ?? '?'}`, line, fields);
      conn.write(errorReply(null, { code: 'busy', message, hint }));
      conn.end();
      return false;
    };
    if (peer.ok && peer.peer.uid !== 0 && peer.peer.uid !== this.daemonUid) {
      const same = admitted.filter((c) => c.peer.ok && c.peer.peer.uid === peer.peer.uid).length;
      if (same >= l.maxPerUid) {
        const message = `uid ${peer.peer.uid} already holds ${same} control connections (at most ${l.maxPerUid})`;
        return refuse('per-uid', message, 'close the other pulsa-bridge commands of this user first');
      }
    }
    const total = admitted.length;
    const hint = "try again in a moment; `pulsa-bridge status` reads the daemon's state without the socket";
    if (!privileged && admitted.filter((c) => !this.privileged(c.peer)).length >= l.maxConnections) {
      const kept = `the last ${l.reservedConnections} are kept for operators`;
      return refuse('full-readers', `the daemon's control socket is full (${total} connections open; ${kept})`, hint);
    }
    if (total >= l.maxConnections + l.reservedConnections) {
      return refuse('full', `the daemon's control socket is full (${total} connections open)`, hint);
    }
    conn.admitted = true;
    return true;
  }

  private busy(conn: Connection, req: Request, message: string, hint: string): void {
    conn.busyInARow++;
    conn.write(errorReply(req.id, { code: 'busy', message, hint }));
    if (!conn.busyLogged) {
      conn.busyLogged = true;
      this.warnings.note('busy', `control client ${conn.id} (${conn.who}): ${message}`, { conn: conn.id });
    }
    if (conn.busyInARow >= this.limits.maxBusyInARow) {
      const n = conn.busyInARow;
      const line = `control client ${conn.id} (${conn.who}) went on sending past busy (${n} requests refused in a row)`;
      this.warnings.note('past-busy', `${line}: disconnecting it`, { conn: conn.id });
      conn.socket.destroy();
    }
  }

  private async onLine(conn: Connection, line: string): Promise<void> {
    if (conn.closed || line.trim() === '') return;
    conn.requests++;
    conn.lastActivity = this.now();
    const parsed = parseRequest(line);
    if (!parsed.ok) {
      conn.write(parsed.reply);
      return;
    }
    const req = parsed.request;
    const l = this.limits;
    if (conn.inflight.size >= l.maxInflight) {
      return this.busy(
        conn,
        req,
        `busy: ${l.maxInflight} requests of this connection are still in flight`,
        'wait for their answers before sending more',
      );
    }
    conn.busyInARow = 0;
    const ac = new AbortController();
    conn.inflight.add(ac);
    try {
      if (!(await conn.admission) || conn.closed) return;
      const peer = conn.peer;
      const view = describeRequest(req);
      const fields = {
        conn: conn.id,
        op: req.op,
        ...(req.modem !== undefined ? { modem: req.modem } : {}),
        ...(peer.ok ? { peerUid: peer.peer.uid, peerPid: peer.peer.pid } : { peerError: peer.error }),
        ...(view.moves.length > 0 ? { moves: view.moves } : {}),
      };
      const moves = view.moves.length > 0 ? ` [can move credit or change the SIM: ${view.moves.join('; ')}]` : '';
      const line = `control request from ${conn.who} (connection ${conn.id}): ${view.text}${moves}`;
      // What an operator does is logged line by line (they are rate-limited); what anyone may repeat, summarised.
      if (levelNeeded(req) === 'operate' && this.privileged(peer)) this.log.info(fields, line);
      else this.requestLines.note(`${peer.ok ? peer.peer.uid : '?'}:${req.op}`, line, fields);
      const result = await this.o.handler(req, conn, ac.signal);
      conn.write(okReply(req.id, result ?? null));
    } catch (err) {
      if (err instanceof ControlError) {
        conn.write(
          errorReply(req.id, {
            code: err.code,
            message: err.message,
            ...(err.hint ? { hint: err.hint } : {}),
            ...(err.data !== undefined ? { data: err.data } : {}),
          }),
        );
      } else {
        this.log.error(
          { err, op: req.op },
          `control request ${req.op} failed: ${(err as Error)?.message ?? String(err)}`,
        );
        conn.write(errorReply(req.id, { code: 'internal', message: (err as Error)?.message ?? String(err) }));
      }
    } finally {
      conn.inflight.delete(ac);
      conn.lastActivity = this.now();
    }
  }
}
