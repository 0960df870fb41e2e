import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { httpRequest, type HttpRequestOptions } from '../../src/http/request.js';
import { hang, refusedPort, reply, startServer, type TestServer } from '../forward/server.js';

let server: TestServer | undefined;
let tls: HttpsServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  if (tls) await new Promise((r) => tls!.close(r));
  tls = undefined;
});

const opts = (url: string, over: Partial<HttpRequestOptions> = {}): HttpRequestOptions => ({
  method: 'POST',
  url,
  body: 'x',
  connectTimeoutMs: 1000,
  timeoutMs: 2000,
  maxBodyBytes: 64,
  ...over,
});

describe('httpRequest against a real local server', () => {
  it('sends the body with its length and returns status, headers and body', async () => {
    server = await startServer([reply(201, 'made', { 'x-extra': 'yes' })]);
    const out = await httpRequest(opts(server.url, { body: 'héllo', headers: { 'content-type': 'text/plain' } }));
    expect(out).toMatchObject({ kind: 'response', status: 201, truncated: false });
    if (out.kind !== 'response') throw new Error('no response');
    expect(out.body.toString()).toBe('made');
    expect(out.headers['x-extra']).toBe('yes');
    expect(server.requests[0]!.body.toString('utf8')).toBe('héllo');
    expect(server.requests[0]!.headers['content-length']).toBe(String(Buffer.byteLength('héllo')));
  });

  it('keeps at most maxBodyBytes of the decoded body of a gzip answer, and says it was truncated', async () => {
    const plain = 'A'.repeat(10_000);
    server = await startServer([
      (_req, res) => {
        res.writeHead(500, { 'content-encoding': 'gzip' });
        res.end(gzipSync(plain));
      },
    ]);
    const out = await httpRequest(opts(server.url));
    expect(out).toMatchObject({ kind: 'response', status: 500, truncated: true });
    if (out.kind === 'response') expect(out.body.toString()).toBe('A'.repeat(64));
  });

  it('a reused keep-alive socket is not held to the connect timeout', async () => {
    server = await startServer([reply(200, 'first'), (_req, res) => void setTimeout(() => res.end('second'), 150)]);
    expect(await httpRequest(opts(server.url, { connectTimeoutMs: 100 }))).toMatchObject({
      kind: 'response',
      status: 200,
    });
    const out = await httpRequest(opts(server.url, { connectTimeoutMs: 100 }));
    expect(out).toMatchObject({ kind: 'response', status: 200 });
    if (out.kind === 'response') expect(out.body.toString()).toBe('second');
  });

  it('the request timeout covers a body that never ends: the status still counts, cutShort says why', async () => {
    server = await startServer([
      (_req, res) => {
        res.writeHead(503, { 'content-length': '1000' });
        res.write('part');
      },
    ]);
    const out = await httpRequest(opts(server.url, { timeoutMs: 150 }));
    expect(out).toMatchObject({ kind: 'response', status: 503, cutShort: "Timeout awaiting 'request' for 150ms" });
    if (out.kind === 'response') expect(out.body.toString()).toBe('part');
  });

  it('timeouts, refused connections and bad URLs resolve, never throw', async () => {
    server = await startServer([hang]);
    expect(await httpRequest(opts(server.url, { timeoutMs: 100 }))).toMatchObject({
      kind: 'timeout',
      phase: 'request',
    });
    const port = await refusedPort();
    expect(await httpRequest(opts(`http://127.0.0.1:${port}/`))).toMatchObject({ kind: 'error', code: 'ECONNREFUSED' });
    expect(await httpRequest(opts('not a url'))).toMatchObject({ kind: 'error', code: 'ERR_INVALID_URL' });
    expect(await httpRequest(opts('ftp://example.com/'))).toMatchObject({
      kind: 'error',
      code: 'ERR_UNSUPPORTED_PROTOCOL',
    });
    expect(await httpRequest(opts(server.url, { headers: { 'x-bad': 'a\nb' } }))).toMatchObject({ kind: 'error' });
  });

  it('verifies TLS certificates: a self-signed server is refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'http-tls-'));
    try {
      const r = spawnSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-subj',
          '/CN=127.0.0.1',
          '-days',
          '1',
          '-keyout',
          join(dir, 'k.pem'),
          '-out',
          join(dir, 'c.pem'),
        ],
        { stdio: 'ignore' },
      );
      expect(r.status).toBe(0); // openssl is needed to make the certificate
      tls = createHttpsServer(
        { key: readFileSync(join(dir, 'k.pem')), cert: readFileSync(join(dir, 'c.pem')) },
        (_req, res) => res.end('ok'),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    await new Promise<void>((resolve) => tls!.listen(0, '127.0.0.1', resolve));
    const out = await httpRequest(opts(`https://127.0.0.1:${(tls.address() as AddressInfo).port}/`));
    expect(out).toMatchObject({ kind: 'error', code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
  });
});

/**
 * A raw HTTP/1.1 server over node:net that answers each connection's first request (keep-alive) and, on a
 * connection's second request, resets the connection without a byte: the race of a server closing an idle keep-alive
 * connection just as the client reuses it. `resetFirst`: reset even a connection's first request.
 */
async function resettingServer(
  o: { resetFirst?: boolean; resetAfterMs?: number; answerAfterMs?: number } = {},
): Promise<{ url: string; connections: () => number; answered: () => number; close: () => Promise<void> }> {
  const { createServer } = await import('node:net');
  let connections = 0;
  let answered = 0;
  const sockets = new Set<import('node:net').Socket>();
  const srv = createServer((sock) => {
    connections++;
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => undefined);
    let requests = 0;
    let buf = '';
    sock.on('data', (d) => {
      buf += d.toString('latin1');
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const len = Number(/content-length: *(\d+)/i.exec(buf.slice(0, end))?.[1] ?? 0);
      if (buf.length < end + 4 + len) return;
      buf = buf.slice(end + 4 + len);
      requests++;
      if (o.resetFirst || requests > 1) {
        if (o.resetAfterMs) return void setTimeout(() => sock.resetAndDestroy(), o.resetAfterMs);
        return void sock.resetAndDestroy();
      }
      const answer = () => {
        answered++;
        sock.write(
          'HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: keep-alive\r\nkeep-alive: timeout=60\r\n\r\nok',
        );
      };
      // The first request of every connection after the first one waits answerAfterMs (the retry's new connection).
      if (o.answerAfterMs && connections > 1) setTimeout(answer, o.answerAfterMs);
      else answer();
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    connections: () => connections,
    answered: () => answered,
    close: () =>
      new Promise((r) => {
        for (const s of sockets) s.destroy();
        srv.close(() => r());
      }),
  };
}

describe('httpRequest: a reused keep-alive socket reset before any answer', () => {
  it('with retryStaleSocket, is sent once more on a new connection and answered', async () => {
    const s = await resettingServer();
    try {
      expect(await httpRequest(opts(s.url, { retryStaleSocket: true }))).toMatchObject({
        kind: 'response',
        status: 200,
      });
      // The second request goes out on the kept-alive connection, which the server resets: sent again on a new one.
      expect(await httpRequest(opts(s.url, { retryStaleSocket: true }))).toMatchObject({
        kind: 'response',
        status: 200,
      });
      expect(s.connections()).toBe(2);
      expect(s.answered()).toBe(2);
    } finally {
      await s.close();
    }
  });

  it('without retryStaleSocket (the reseller client), the reset is returned as a network error', async () => {
    const s = await resettingServer();
    try {
      expect(await httpRequest(opts(s.url))).toMatchObject({ kind: 'response', status: 200 });
      expect(await httpRequest(opts(s.url))).toMatchObject({ kind: 'error', code: 'ECONNRESET' });
      expect(s.connections()).toBe(1);
    } finally {
      await s.close();
    }
  });

  it('both sends share one deadline: a late reset and a slow second answer end as a timeout, not an answer', async () => {
    const s = await resettingServer({ resetAfterMs: 250, answerAfterMs: 250 });
    try {
      expect(await httpRequest(opts(s.url, { retryStaleSocket: true, timeoutMs: 400 }))).toMatchObject({
        kind: 'response',
        status: 200,
      });
      // Reused socket reset after 250 ms, the new connection answers after 250 ms more: past the 400 ms deadline.
      expect(await httpRequest(opts(s.url, { retryStaleSocket: true, timeoutMs: 400 }))).toMatchObject({
        kind: 'timeout',
        phase: 'request',
      });
      expect(s.connections()).toBe(2);
    } finally {
      await s.close();
    }
  });

  it('a reset on a new connection is not retried, even with retryStaleSocket', async () => {
    const s = await resettingServer({ resetFirst: true });
    try {
      expect(await httpRequest(opts(s.url, { retryStaleSocket: true }))).toMatchObject({
        kind: 'error',
        code: 'ECONNRESET',
      });
      expect(s.connections()).toBe(1);
    } finally {
      await s.close();
    }
  });
});
