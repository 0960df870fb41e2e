/**
 * A webhook receiver for tests that need more than a scripted reply: a real HTTP server on 127.0.0.1 that records
 * every POST (raw body, Idempotency-Key, arrival time, answer) and answers as its `mode` says: 200, a status (with an
 * optional body), 429 with Retry-After, or never (hang). It can go down (listener closed, connections cut) and come
 * back on the same port. Invariant: every request that reaches the handler is recorded before it is answered.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Post {
  /** Raw body bytes as received. */
  body: Buffer;
  key: string | undefined;
  /** performance.now() when the body was complete. */
  at: number;
  /** What this request was answered with ('hang' when left open). */
  answer: string;
}

export type ReceiverMode =
  | { kind: 'ok' }
  | { kind: 'status'; status: number; body?: string }
  | { kind: 'retry-after'; seconds: number }
  | { kind: 'hang' };

export class FaultReceiver {
  readonly posts: Post[] = [];
  mode: ReceiverMode = { kind: 'ok' };
  private server: Server | undefined;
  private port = 0;
  private readonly hanging = new Set<ServerResponse>();

  get url(): string {
    return `http://127.0.0.1:${this.port}/api/v1/convert-pulsa/webhook/sms-gateway`;
  }

  get isUp(): boolean {
    return this.server !== undefined;
  }

  /** Listens on the port used before (or a free one the first time). Retries briefly if the port is not free yet. */
  async up(): Promise<void> {
    if (this.server) return;
    for (let attempt = 0; ; attempt++) {
      const server = createServer((req, res) => this.handle(req, res));
      try {
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(this.port, '127.0.0.1', () => resolve());
        });
        this.server = server;
        this.port = (server.address() as AddressInfo).port;
        return;
      } catch (err) {
        if (attempt >= 50) throw new Error(`receiver cannot listen on 127.0.0.1:${this.port} again: ${String(err)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  /** The server goes away: the listener closes and open connections (hanging requests included) are cut. */
  async down(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    this.hanging.clear();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  /** Cuts the connections of hanging requests (the daemon has usually timed out on them already). */
  releaseHanging(): void {
    for (const res of this.hanging) if (!res.writableEnded) res.destroy();
    this.hanging.clear();
  }

  async close(): Promise<void> {
    this.releaseHanging();
    await this.down();
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const mode = this.mode;
      const key = req.headers['idempotency-key'];
      const post: Post = {
        body: Buffer.concat(chunks),
        key: Array.isArray(key) ? key[0] : key,
        at: performance.now(),
        answer: '',
      };
      this.posts.push(post);
      switch (mode.kind) {
        case 'ok':
          post.answer = '200';
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"success":true}');
          break;
        case 'status':
          post.answer = String(mode.status);
          res
            .writeHead(mode.status, { 'content-type': 'text/plain' })
            .end(mode.body ?? 'fault suite: failing on purpose');
          break;
        case 'retry-after':
          post.answer = `429 Retry-After ${mode.seconds}`;
          res.writeHead(429, { 'content-type': 'text/plain', 'retry-after': String(mode.seconds) }).end('slow down');
          break;
        case 'hang':
          post.answer = 'hang';
          this.hanging.add(res);
          res.on('close', () => this.hanging.delete(res));
          break;
      }
    });
  }
}
