/**
 * One HTTP(S) request over node:http / node:https, the only HTTP client (the webhook POST, the reseller client).
 * httpRequest() never throws or rejects: it resolves to a response, a timeout ('connect' or 'request', one deadline for
 * the whole call) or a network error. No redirects, TLS always verified, no retries except retryStaleSocket. At most
 * maxBodyBytes of the decoded body are kept, then the response is destroyed (`truncated`); a body cut short after the
 * status line gives what was read (`cutShort`). Nothing here logs.
 */
import http, { type IncomingHttpHeaders, type IncomingMessage, type ClientRequest } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';

export interface HttpRequestOptions {
  method: 'GET' | 'POST';
  url: string;
  /** Lowercase or not; content-length is set here for a body. */
  headers?: Record<string, string>;
  body?: string | Buffer;
  connectTimeoutMs: number;
  timeoutMs: number;
  /** Bytes of the (decoded) body kept at most. */
  maxBodyBytes: number;
  /**
   * Send once more, at once, on a new connection (agent: false) when a REUSED keep-alive socket fails with ECONNRESET or
   * EPIPE: the race of a server closing an idle connection just as it is reused. Only for an idempotent request (the
   * webhook POST, by its Idempotency-Key: a repeat the server already had is harmless); the reseller client never sets
   * it. A reset on a new connection is returned as it is; both sends share the one deadline.
   */
  retryStaleSocket?: boolean;
}

export type HttpResult =
  | {
      kind: 'response';
      status: number;
      headers: IncomingHttpHeaders;
      body: Buffer;
      /** The body was longer than maxBodyBytes: the rest was not read. */
      truncated: boolean;
      /** Why the body ended early (after the status line), if it did. */
      cutShort?: string;
    }
  | { kind: 'timeout'; phase: 'connect' | 'request'; message: string }
  | { kind: 'error'; code: string; message: string };

function errorResult(err: unknown): HttpResult {
  const e = err as { code?: unknown; message?: unknown };
  return {
    kind: 'error',
    code: typeof e?.code === 'string' ? e.code : 'EUNKNOWN',
    message: typeof e?.message === 'string' ? e.message : String(err),
  };
}

function decoded(res: IncomingMessage): Readable {
  const enc = String(res.headers['content-encoding'] ?? '')
    .trim()
    .toLowerCase();
  if (enc === 'gzip' || enc === 'x-gzip') return res.pipe(zlib.createGunzip());
  if (enc === 'deflate') return res.pipe(zlib.createInflate());
  if (enc === 'br') return res.pipe(zlib.createBrotliDecompress());
  return res;
}

export async function httpRequest(o: HttpRequestOptions): Promise<HttpResult> {
  const started = Date.now();
  const first = await attempt(o, false);
  if (!first.staleSocket || !o.retryStaleSocket) return first.result;
  // One deadline for both sends: the second gets what is left of timeoutMs (and of connectTimeoutMs, at most).
  const left = o.timeoutMs - (Date.now() - started);
  if (left <= 0) return first.result;
  return (await attempt({ ...o, timeoutMs: left, connectTimeoutMs: Math.min(o.connectTimeoutMs, left) }, true)).result;
}

const STALE_SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE']);

/** One exchange; `staleSocket`: it failed on a reused keep-alive socket before any answer byte arrived. */
function attempt(
  o: HttpRequestOptions,
  freshConnection: boolean,
): Promise<{ result: HttpResult; staleSocket: boolean }> {
  return new Promise((done) => {
    let staleSocket = false;
    const resolve = (result: HttpResult) => done({ result, staleSocket });
    let url: URL;
    try {
      url = new URL(o.url);
    } catch (err) {
      return resolve(errorResult(err));
    }
    const send = url.protocol === 'https:' ? https.request : url.protocol === 'http:' ? http.request : undefined;
    if (!send)
      return resolve({
        kind: 'error',
        code: 'ERR_UNSUPPORTED_PROTOCOL',
        message: `unsupported protocol ${url.protocol}`,
      });

    const headers: Record<string, string> = { ...(o.headers ?? {}) };
    const body = o.body === undefined ? undefined : typeof o.body === 'string' ? Buffer.from(o.body, 'utf8') : o.body;
    if (body) headers['content-length'] = String(body.length);

    let req: ClientRequest;
    let res: IncomingMessage | undefined;
    let stream: Readable | undefined;
    let settled = false;
    let status: { status: number; headers: IncomingHttpHeaders } | undefined;
    const chunks: Buffer[] = [];
    let size = 0;
    let truncated = false;

    const timers: NodeJS.Timeout[] = [];
    const settle = (result: HttpResult) => {
      if (settled) return;
      settled = true;
      for (const t of timers) clearTimeout(t);
      // Stop reading: the rest of a long body is never downloaded. destroy() on a finished exchange is a no-op.
      stream?.destroy();
      res?.destroy();
      req.destroy();
      resolve(result);
    };
    const finish = (cutShort?: string) => {
      if (!status) return;
      const out: HttpResult = {
        kind: 'response',
        status: status.status,
        headers: status.headers,
        body: Buffer.concat(chunks),
        truncated,
      };
      if (cutShort !== undefined) out.cutShort = cutShort;
      settle(out);
    };
    const timeout = (phase: 'connect' | 'request', ms: number) => {
      const message = `Timeout awaiting '${phase}' for ${ms}ms`;
      if (status) finish(message);
      else settle({ kind: 'timeout', phase, message });
    };

    try {
      req = send(url, {
        method: o.method,
        headers,
        rejectUnauthorized: true,
        ...(freshConnection ? { agent: false } : {}),
      });
    } catch (err) {
      return resolve(errorResult(err)); // e.g. a header value node:http refuses
    }
    timers.push(setTimeout(() => timeout('request', o.timeoutMs), o.timeoutMs));
    const connectTimer = setTimeout(() => timeout('connect', o.connectTimeoutMs), o.connectTimeoutMs);
    timers.push(connectTimer);
    req.once('socket', (socket: Socket) => {
      if (!socket.connecting)
        clearTimeout(connectTimer); // a reused keep-alive socket
      else socket.once('connect', () => clearTimeout(connectTimer));
    });
    req.on('error', (err) => {
      if (status) return finish((err as Error).message);
      const code = (err as NodeJS.ErrnoException).code;
      staleSocket = req.reusedSocket && code !== undefined && STALE_SOCKET_CODES.has(code);
      settle(errorResult(err));
    });
    req.on('response', (r) => {
      res = r;
      status = { status: r.statusCode ?? 0, headers: r.headers };
      let s: Readable;
      try {
        s = decoded(r);
      } catch (err) {
        return finish((err as Error).message);
      }
      stream = s;
      s.on('data', (chunk: Buffer) => {
        if (settled) return;
        const take = Math.min(chunk.length, o.maxBodyBytes - size);
        if (take > 0) chunks.push(take < chunk.length ? chunk.subarray(0, take) : chunk);
        size += take;
        if (take < chunk.length || size >= o.maxBodyBytes) {
          truncated = take < chunk.length || !r.complete;
          finish();
        }
      });
      s.on('end', () => finish());
      s.on('error', (err) => finish(err.message));
      r.on('aborted', () => finish('the response was aborted'));
      r.on('error', (err) => finish(err.message));
    });
    req.end(body);
  });
}
