/**
 * Benchmark scenario 'outage': how long after a webhook outage ends the pending records arrive.
 * Production classes: a real Spool (fsync on) in a temp dir, WebhookClient, Forwarder with the production retry
 * defaults (1 s base, 5 min cap, 2 s probe interval), and a real HTTP server on 127.0.0.1.
 *
 * Two outages, each with `records` pending records (written at the start of the outage):
 * - '500': the server answers 500 for `outageMs`, then 200;
 * - 'refused': the server stops listening for `outageMs / 2` (connections refused), then listens again on its port.
 * Figures per outage: requests the server saw (or, refused, that the forwarder made) during the outage, the smallest
 * gap between two of them, and the delay from the end of the outage to each record's 2xx (median / max).
 * Prints figures only; asserts nothing.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Forwarder } from '../src/forward/forwarder.js';
import { DEFAULT_PROBE_INTERVAL_MS, DEFAULT_RETRY_POLICY, type Outcome } from '../src/forward/policy.js';
import { WebhookClient } from '../src/forward/webhook.js';
import { silentLogger } from '../src/log.js';
import { Spool } from '../src/spool/store.js';
import { SPOOL_RECORD_VERSION, type SmsRecord } from '../src/spool/types.js';
import { summarize, type Summary } from './stats.js';

export interface OutageOptions {
  records: number;
  outageMs: number;
}

export interface OutageResult {
  kind: '500' | 'refused';
  records: number;
  outageMs: number;
  /** Requests made while the endpoint was failing. */
  requestsDuringOutage: number;
  /** Smallest gap between two of those requests (ms); undefined with fewer than two. */
  minGapMs: number | undefined;
  /** End of outage -> each record's 2xx (ms). */
  delay: Summary;
  delivered: number;
}

function record(i: number): SmsRecord {
  return {
    v: SPOOL_RECORD_VERSION,
    kind: 'sms',
    id: `sms-outage-${String(i).padStart(4, '0')}`,
    sim: { modem: `modem-${i % 2}` },
    sender: '858',
    text: `Anda mendapatkan penambahan pulsa Rp ${5000 + i} dari nomor 6282112235774.`,
    scTimestamp: '2024-01-08T10:15:30+07:00',
    receivedAt: new Date(Date.now() - 1000 + i).toISOString(),
    pdus: [],
    attempts: 0,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function listen(server: Server, port = 0): Promise<number> {
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

async function runOne(kind: '500' | 'refused', opts: OutageOptions): Promise<OutageResult> {
  const dir = await mkdtemp(join(tmpdir(), 'pulsa-bench-outage-'));
  const state = { status: 500 };
  const delivered = new Map<string, number>();
  const failing: number[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const now = performance.now();
      if (state.status === 200) delivered.set(String(req.headers['idempotency-key']), now);
      else failing.push(now);
      res.writeHead(state.status, { 'content-type': 'text/plain' });
      res.end(state.status === 200 ? '{"success":true}' : 'down');
    });
  });
  const port = await listen(server);
  const spool = await Spool.open(dir, { logger: silentLogger(), fsync: true });
  const base = new WebhookClient({
    url: `http://127.0.0.1:${port}/api/v1/convert-pulsa/webhook/sms-gateway`,
    userAgent: 'pulsa-bridge-bench',
  });
  // Counts the refused requests (the server never sees them).
  const client = {
    async post(rec: SmsRecord): Promise<Outcome> {
      const o = await base.post(rec);
      if (o.kind !== 'http') failing.push(performance.now());
      return o;
    },
  };
  const policy = { ...DEFAULT_RETRY_POLICY, probeIntervalMs: DEFAULT_PROBE_INTERVAL_MS, maxAgeMs: 72 * 3_600_000 };
  const forwarder = new Forwarder({ spool, client, policy, logger: silentLogger() });
  let outageMs = opts.outageMs;
  try {
    if (kind === 'refused') {
      outageMs = Math.round(opts.outageMs / 2);
      await close(server);
      state.status = 200;
    }
    forwarder.start();
    for (let i = 0; i < opts.records; i++) await spool.putPending(record(i));
    await sleep(outageMs);
    if (kind === 'refused') await listen(server, port);
    else state.status = 200;
    const endedAt = performance.now();
    const deadline = endedAt + 10 * 60_000;
    while (delivered.size < opts.records && performance.now() < deadline) await sleep(20);
    const gaps = failing.slice(1).map((t, i) => t - failing[i]!);
    return {
      kind,
      records: opts.records,
      outageMs,
      requestsDuringOutage: failing.length,
      minGapMs: gaps.length > 0 ? Math.round(Math.min(...gaps)) : undefined,
      delay: summarize([...delivered.values()].map((t) => t - endedAt)),
      delivered: delivered.size,
    };
  } finally {
    await forwarder.stop(1000);
    await spool.close();
    if (server.listening) await close(server);
    await rm(dir, { recursive: true, force: true });
  }
}

export async function runOutage(opts: OutageOptions): Promise<OutageResult[]> {
  return [await runOne('500', opts), await runOne('refused', opts)];
}
