/**
 * The optional metrics listener (config `metrics.listen`, off by default): GET /metrics in the Prometheus text format,
 * GET /healthz 200 `ok` when healthy, 503 with one reason per line otherwise (the daemon's health verdict). Anything
 * else is 404; methods other than GET/HEAD are 405. Plain node:http: it serves scrapes, nothing else, and never
 * blocks the daemon (a failing scrape is answered 500 and logged).
 */
import http, { type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BridgeError, errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import type { Registry } from 'prom-client';

export interface MetricsServerOptions {
  /** "host:port"; "[::1]:9469" for IPv6; port 0 picks a free one (tests). */
  listen: string;
  registry: Registry;
  health(): Promise<{ healthy: boolean; problems: Array<{ message: string }> }>;
  logger: Logger;
}

export interface MetricsServer {
  /** The bound address, e.g. 127.0.0.1:9469. */
  readonly address: string;
  close(): Promise<void>;
}

export function parseListen(listen: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(listen);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65_535) throw new BridgeError('CONFIG_INVALID', `metrics.listen: expected host:port, got ${JSON.stringify(listen)}`);
  return { host: (m[1] ?? m[2])!, port };
}

export async function startMetricsServer(o: MetricsServerOptions): Promise<MetricsServer> {
  const { host, port } = parseListen(o.listen);
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics' && path !== '/healthz') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found: try /metrics or /healthz\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('method not allowed\n');
      return;
    }
    if (path === '/metrics') {
      const body = await o.registry.metrics();
      res.writeHead(200, { 'content-type': o.registry.contentType }).end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    const v = await o.health();
    const body = v.healthy ? 'ok\n' : `unhealthy\n${v.problems.map((p) => `- ${p.message}\n`).join('')}`;
    res.writeHead(v.healthy ? 200 : 503, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : body);
  };
  const server: Server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      o.logger.error({ err }, `metrics: answering ${req.url ?? ''} failed: ${errorMessage(err)}`);
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`error: ${errorMessage(err)}\n`);
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) =>
      reject(new BridgeError('METRICS_LISTEN', `metrics: cannot listen on ${o.listen}: ${errorMessage(err)}`, { cause: err, hint: 'another process (or a second bridge) uses the port? change metrics.listen' })),
    );
    server.listen(port, host, () => resolve());
  });
  const a = server.address() as AddressInfo;
  const address = a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
  o.logger.info({ listen: address }, `metrics: serving /metrics and /healthz on http://${address}`);
  return {
    address,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
