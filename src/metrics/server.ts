/**
 * The optional read-only HTTP listener (config `metrics`): /metrics (Prometheus), /healthz (200 `ok` or 503 with one
 * reason per line), the status page and /api/status, all from the daemon's one status snapshot. GET and HEAD only.
 * With `token` the page (and /metrics, /healthz with protectMetrics) need Bearer or Basic auth, compared in constant
 * time. Bounded in connections (a share per client address; idle ones give way to new ones), header size and time,
 * URL length and body (none), so a client cannot take memory, the daemon's file descriptors or others' /healthz; the
 * Host header must name this listener (no DNS rebinding); repeated warnings are summarised. The page is served with a strict Content-Security-Policy. A failing answer is 500 and
 * logged; the listener never blocks the daemon.
 */
import http, { type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createHash, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import type { AddressInfo, Socket } from 'node:net';
import { RepeatedWarnings } from '../log/repeated.js';
import { BridgeError, errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import type { Registry } from 'prom-client';

export interface MetricsServerOptions {
  /** "host:port"; "[::1]:9469" for IPv6; port 0 picks a free one (tests). */
  listen: string;
  registry: Registry;
  health(): Promise<{
    healthy: boolean;
    state?: string | undefined;
    problems: Array<{ message: string; hint?: string | undefined }>;
    warnings?: Array<{ message: string; hint?: string | undefined }> | undefined;
  }>;
  /** The status page's JSON (serialised); absent: no page. */
  page?: (() => Promise<string>) | undefined;
  /** Protects the page (and with protectMetrics, /metrics and /healthz). */
  token?: string | undefined;
  protectMetrics?: boolean | undefined;
  maxConnections?: number | undefined;
  /** Host names answered besides loopback names and IP literals (the Host check). */
  hosts?: readonly string[] | undefined;
  logger: Logger;
}

export interface MetricsServer {
  /** The bound address, e.g. 127.0.0.1:9469. */
  readonly address: string;
  close(): Promise<void>;
}

export const MAX_URL = 2048;
export const MAX_HEADER_BYTES = 8192;
export const HEADERS_TIMEOUT_MS = 5_000;
export const REQUEST_TIMEOUT_MS = 10_000;
/** Connections beyond metrics.maxConnections that are still answered (503), before new ones are closed unanswered. */
export const OVERFLOW = 16;
/** A socket with no traffic either way for this long is closed (a client that stopped reading, or went away). */
export const IDLE_TIMEOUT_MS = 10_000;
/** The share of the connection slots one client address may hold. */
export const PER_ADDRESS_SHARE = 0.25;

/**
 * Whether a request's Host header names this listener: a loopback name, an IP literal, or one of `hosts`. Anything
 * else is what a DNS-rebinding page in a browser would send (a name that resolved to 127.0.0.1 a moment ago).
 */
export function hostAllowed(header: string | undefined, hosts: readonly string[]): boolean {
  if (header === undefined) return true; // HTTP/1.0 clients and probes: no browser page sends no Host
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:]*))(?::\d{1,5})?$/.exec(header.trim());
  if (!m) return false;
  if (m[1] !== undefined) return true; // [IPv6]
  const name = m[2]!.toLowerCase().replace(/\.$/, '');
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(name)) return true;
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  return hosts.some((h) => h.toLowerCase() === name);
}

/**
 * The page's files: web/status-page/ at the package's root, beside dist/ in an install (this module runs from
 * dist/src/metrics/) and in the source tree (tests run src/metrics/): the nearest ancestor that has it.
 */
function assetDir(): URL {
  for (const up of ['../../', '../../../']) {
    const dir = new URL(`${up}web/status-page/`, import.meta.url);
    if (existsSync(dir)) return dir;
  }
  return new URL('../../../web/status-page/', import.meta.url); // the install's place, named in the error
}
const ASSETS: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/page.js': { file: 'page.js', type: 'text/javascript; charset=utf-8' },
  '/page.css': { file: 'page.css', type: 'text/css; charset=utf-8' },
  '/favicon.svg': { file: 'favicon.svg', type: 'image/svg+xml' },
};

export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const PAGE_HEADERS = {
  'content-security-policy': CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
};

export function parseListen(listen: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(listen);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65_535)
    throw new BridgeError('CONFIG_INVALID', `metrics.listen: expected host:port, got ${JSON.stringify(listen)}`);
  return { host: (m[1] ?? m[2])!, port };
}

/** The page's files, read once (a missing file is an error at start, not a 500 per request). */
function loadAssets(): Map<string, { body: Buffer; type: string }> {
  const out = new Map<string, { body: Buffer; type: string }>();
  const dir = assetDir();
  for (const [path, a] of Object.entries(ASSETS)) {
    const url = new URL(a.file, dir);
    try {
      out.set(path, { body: readFileSync(url), type: a.type });
    } catch (err) {
      throw new BridgeError(
        'METRICS_LISTEN',
        `metrics: the status page's file ${url.pathname} cannot be read: ${errorMessage(err)}`,
        {
          cause: err,
          hint: 'the install is incomplete (web/status-page/ belongs beside dist/); or set metrics.page.enabled false',
        },
      );
    }
  }
  return out;
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** The token given as a bearer token or as Basic auth's password, compared in constant time. */
export function authorised(header: string | undefined, expected: Buffer): boolean {
  if (!header) return false;
  let given: string | undefined;
  const bearer = /^Bearer +(\S+) *$/i.exec(header);
  const basic = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(header);
  if (bearer) given = bearer[1];
  else if (basic) {
    const plain = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = plain.indexOf(':');
    given = colon >= 0 ? plain.slice(colon + 1) : undefined;
  }
  return given !== undefined && timingSafeEqual(digest(given), expected);
}

export async function startMetricsServer(o: MetricsServerOptions): Promise<MetricsServer> {
  const { host, port } = parseListen(o.listen);
  const assets = o.page ? loadAssets() : new Map<string, { body: Buffer; type: string }>();
  const expected = o.token === undefined ? undefined : digest(o.token);
  const known = new Set(['/metrics', '/healthz', ...(o.page ? [...assets.keys(), '/api/status'] : [])]);
  const text = (res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}) => {
    res
      .writeHead(status, {
        'content-type': 'text/plain; charset=utf-8',
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
        ...headers,
      })
      .end(body);
  };

  const cap = o.maxConnections ?? 128;
  let open = 0; // connections open now
  // One warning line per cause per minute, with how many times it happened (no client can flood the log).
  const warnings = new RepeatedWarnings((line) => o.logger.warn(line), 60_000);
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (open > cap) {
      warnings.note('busy', `metrics: ${open} connections open (metrics.maxConnections ${cap}): answering 503`);
      return text(res, 503, 'too many connections to this listener: try again in a few seconds\n', {
        'retry-after': '5',
        connection: 'close',
      });
    }
    if (!hostAllowed(req.headers.host, o.hosts ?? [])) {
      warnings.note(
        'host',
        `metrics: refused a request for Host ${JSON.stringify(String(req.headers.host).slice(0, 100))} (not a loopback name, an IP address or metrics.hosts)`,
      );
      return text(res, 421, 'this listener does not answer for that host name (add it to metrics.hosts)\n', {
        connection: 'close',
      });
    }
    const url = req.url ?? '/';
    if (url.length > MAX_URL) return text(res, 414, 'URL too long\n', { connection: 'close' });
    const path = url.split('?')[0]!;
    if (!known.has(path)) return text(res, 404, `not found: try ${o.page ? '/, ' : ''}/metrics or /healthz\n`);
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return text(res, 405, 'method not allowed: this listener is read-only\n', {
        allow: 'GET, HEAD',
        connection: 'close',
      });
    if (Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined) {
      return text(res, 413, 'a GET carries no body\n', { connection: 'close' });
    }
    const unguarded = path === '/metrics' || path === '/healthz' ? !o.protectMetrics : false;
    if (expected && !unguarded && !authorised(req.headers.authorization, expected)) {
      return text(
        res,
        401,
        'the token is needed (metrics.token): as the password when the browser asks, or Authorization: Bearer\n',
        { 'www-authenticate': 'Basic realm="pulsa-bridge", charset="UTF-8"' },
      );
    }
    const head = req.method === 'HEAD';
    if (path === '/metrics') {
      const body = await o.registry.metrics();
      res.writeHead(200, { 'content-type': o.registry.contentType }).end(head ? undefined : body);
      return;
    }
    if (path === '/healthz') {
      const v = await o.health();
      // 200 while money can flow (degraded: warnings listed), 503 with each problem and its hint when it cannot.
      const line = (p: { message: string; hint?: string | undefined }) =>
        `- ${p.message}\n${p.hint ? `  hint: ${p.hint}\n` : ''}`;
      const warnings = v.warnings ?? [];
      const body = !v.healthy
        ? `unhealthy\n${v.problems.map(line).join('')}${warnings.map(line).join('')}`
        : warnings.length > 0
          ? `degraded\n${warnings.map(line).join('')}`
          : 'ok\n';
      res
        .writeHead(v.healthy ? 200 : 503, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' })
        .end(head ? undefined : body);
      return;
    }
    if (path === '/api/status') {
      const body = await o.page!();
      res
        .writeHead(200, { ...PAGE_HEADERS, 'content-type': 'application/json; charset=utf-8' })
        .end(head ? undefined : body);
      return;
    }
    const a = assets.get(path)!;
    res
      .writeHead(200, { ...PAGE_HEADERS, 'content-type': a.type, 'content-length': String(a.body.length) })
      .end(head ? undefined : a.body);
  };

  const server: Server = http.createServer(
    {
      maxHeaderSize: MAX_HEADER_BYTES,
      requestTimeout: REQUEST_TIMEOUT_MS,
      headersTimeout: HEADERS_TIMEOUT_MS,
      connectionsCheckingInterval: 1_000,
    },
    (req, res) => {
      handle(req, res).catch((err: unknown) => {
        o.logger.error({ err }, `metrics: answering ${(req.url ?? '').slice(0, 200)} failed: ${errorMessage(err)}`);
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(`error: ${errorMessage(err)}\n`);
      });
    },
  );
  server.keepAliveTimeout = 5_000;
  // Up to `cap` connections are served; the next OVERFLOW get a 503 with Retry-After (a page view too many sees why
  // and tries again); beyond those Node closes new connections at once ('drop').
  server.maxConnections = cap + OVERFLOW;
  // Each address holds at most its share of the slots. A connection that would pass the cap or its address's share
  // takes the place of the oldest idle one (no request in flight: waiting for headers, or kept alive), its own
  // address's first, so idle connections, from one client or many, never starve /healthz; with none idle it is closed.
  const share = Math.max(2, Math.floor(cap * PER_ADDRESS_SHARE));
  const sockets = new Map<Socket, { address: string; busy: number }>();
  const ofAddress = (address: string) => [...sockets].filter(([, s]) => s.address === address);
  const evictIdle = (candidates: Array<[Socket, { busy: number }]>): boolean => {
    const idle = candidates.find(([, s]) => s.busy === 0);
    if (!idle) return false;
    sockets.delete(idle[0]);
    idle[0].destroy();
    return true;
  };
  server.on('connection', (socket: Socket) => {
    open++;
    const address = socket.remoteAddress ?? '?';
    socket.once('close', () => {
      open--;
      sockets.delete(socket);
    });
    const mine = ofAddress(address);
    if (mine.length >= share || sockets.size >= cap) {
      const made = (mine.length >= share ? evictIdle(mine) : false) || evictIdle([...sockets]);
      if (!made) {
        warnings.note(
          'full',
          `metrics: ${sockets.size} connections busy (${mine.length} from ${address}; metrics.maxConnections ${cap}, ${share} per address): a new one from ${address} is closed`,
        );
        socket.destroy();
        return;
      }
      warnings.note(
        'evicted',
        `metrics: listener full (${cap}, ${share} per address): idle connections are closed to make room`,
      );
    }
    sockets.set(socket, { address, busy: 0 });
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const s = sockets.get(req.socket);
    if (!s) return;
    s.busy++;
    res.once('close', () => s.busy--);
  });
  server.maxRequestsPerSocket = 1_000;
  server.setTimeout(IDLE_TIMEOUT_MS, (socket) => socket.destroy());
  server.on('drop', () => {
    // Connections beyond maxConnections are closed by Node.
    warnings.note(
      'drop',
      `metrics: ${server.maxConnections} connections open, new ones are closed (metrics.maxConnections ${cap}, plus ${OVERFLOW} answered 503)`,
    );
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    // Malformed requests, oversized headers, timeouts: a status line when the socket still takes one, then closed.
    o.logger.debug({ code: err.code }, `metrics: bad request: ${errorMessage(err)}`);
    if (!socket.writable || (socket as { _httpMessage?: unknown })._httpMessage) return void socket.destroy();
    const status =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? '431 Request Header Fields Too Large'
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? '408 Request Timeout'
          : '400 Bad Request';
    socket.end(
      `HTTP/1.1 ${status}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: ${status.length + 1}\r\n\r\n${status}\n`,
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) =>
      reject(
        new BridgeError('METRICS_LISTEN', `metrics: cannot listen on ${o.listen}: ${errorMessage(err)}`, {
          cause: err,
          hint: 'another process (or a second bridge) uses the port? change metrics.listen',
        }),
      ),
    );
    server.listen(port, host, () => resolve());
  });
  const a = server.address() as AddressInfo;
  const address = a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
  o.logger.info(
    { listen: address },
    `metrics: serving /metrics and /healthz on http://${address} ${o.page ? `and the status page at / (${o.token ? 'token required' : 'no token: anyone who reaches the port reads it'})` : '(status page off)'}`,
  );
  return {
    address,
    close: () =>
      new Promise<void>((resolve) => {
        warnings.flush();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
