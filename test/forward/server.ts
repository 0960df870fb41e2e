/** A real HTTP server on 127.0.0.1 (port 0) that records every request and answers from a script. */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** Raw body bytes as received. */
  body: Buffer;
}

/** Answer a request; return without ending `res` to leave it hanging (a server that never answers). */
export type Responder = (req: SeenRequest, res: ServerResponse) => void;

export const reply =
  (status: number, body = '', headers: Record<string, string> = {}): Responder =>
  (_req, res) => {
    res.writeHead(status, { 'content-type': 'text/plain', ...headers });
    res.end(body);
  };

export const hang: Responder = () => undefined;

export interface TestServer {
  url: string;
  requests: SeenRequest[];
  /** Responses in order; the last one repeats. */
  script: Responder[];
  /** Responses left hanging, to end them later. */
  hanging: ServerResponse[];
  close(): Promise<void>;
}

export async function startServer(script: Responder[]): Promise<TestServer> {
  const requests: SeenRequest[] = [];
  const hanging: ServerResponse[] = [];
  const state = { script };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const seen: SeenRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks),
      };
      const responder = state.script[Math.min(requests.length, state.script.length - 1)] ?? reply(500, 'no script');
      requests.push(seen);
      responder(seen, res);
      if (!res.writableEnded) hanging.push(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/api/v1/convert-pulsa/webhook/sms-gateway`,
    requests,
    get script() {
      return state.script;
    },
    set script(s: Responder[]) {
      state.script = s;
    },
    hanging,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port on 127.0.0.1 that refuses connections (listened once, then closed). */
export async function refusedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}
