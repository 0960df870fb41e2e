/**
 * Benchmark scenario 'backlog': draining a large pending backlog (the webhook was down for an hour) with the production
 * classes: a real Spool (fsync on) in a temp dir, WebhookClient, Forwarder, and the local demo receiver on 127.0.0.1.
 *
 * Phases (each on a fresh spool holding `records` pending records, written with fsync and then re-opened, so the
 * owner's start-up scan builds the index as a restarted daemon would):
 * - 'due': every record is due now; the forwarder drains them back to back.
 * - 'waiting' (skipped when `waitingSpreadMs` is 0): every record waits for a retry time, spread evenly over
 *   `waitingSpreadMs` ms starting 0.5 s into the drain, in an order unrelated to receivedAt (as after a retry storm);
 *   the forwarder wakes per due time. The forwarder's clock is shifted so the retry times need no markRetry rewrite.
 *
 * Figures per phase:
 * - drain time and POSTs/s (forwarder.start() -> last record in sent/);
 * - pick gap: markDelivered resolved -> the next POST started. Nothing in between waits for I/O (only promise hops),
 *   so this is the event-loop time the forwarder spends choosing and preparing the next record (due phase only: in the
 *   waiting phase the gap also contains the wait for the next due time);
 * - spool read: synchronous time of the spool call the forwarder uses to choose (pendingInOrder walked by its pick,
 *   nextDue or list('pending'), whichever the Spool under test has), one per pick;
 * - event-loop delay (monitorEventLoopDelay, 1 ms resolution) over the phase: p50 / p99 / max.
 * Prints figures only; asserts nothing.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startDemoReceiver } from '../src/demo/receiver.js';
import { Forwarder } from '../src/forward/forwarder.js';
import { DEFAULT_RETRY_POLICY } from '../src/forward/policy.js';
import { WebhookClient, webhookUrl } from '../src/forward/webhook.js';
import { silentLogger } from '../src/log.js';
import { Spool } from '../src/spool/store.js';
import { SPOOL_RECORD_VERSION, type SmsRecord } from '../src/spool/types.js';
import { benchLogger } from './scenario.js';
import { summarize, type Summary } from './stats.js';

export interface BacklogOptions {
  records: number;
  /** Spread of the retry times in the 'waiting' phase (ms); 0 skips the phase. */
  waitingSpreadMs: number;
  /** Records written concurrently while filling the spool (each write is still fsynced on its own). */
  fillConcurrency: number;
  logLevel: string;
}

export interface BacklogPhaseResult {
  phase: 'due' | 'waiting';
  records: number;
  /** Spool.open on the filled directory (start-up scan), ms. */
  openMs: number;
  drainMs: number;
  postsPerSecond: number;
  /** markDelivered resolved -> next POST started (ms); due phase only. */
  pickGap?: Summary;
  /** Synchronous time of the spool read per pick (ms), and which method it was. */
  spoolRead: Summary;
  spoolReadMethod: string;
  /** Event-loop delay over the phase (ms). */
  eventLoopDelay: { p50: number; p99: number; max: number };
  delivered: number;
}

export interface BacklogResult {
  fillMs: number;
  phases: BacklogPhaseResult[];
}

const now = () => performance.now();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A deterministic shuffle (records reach the spool out of receivedAt order, as several modems would write them). */
function shuffled<T>(items: T[], seed: number): T[] {
  const out = [...items];
  let s = seed >>> 0 || 1;
  const rand = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

function makeRecords(n: number, nextAttemptAt?: (i: number) => string): SmsRecord[] {
  const base = Date.now() - 3_600_000; // received during the last hour
  return Array.from({ length: n }, (_, i) => {
    const rec: SmsRecord = {
      v: SPOOL_RECORD_VERSION,
      kind: 'sms',
      id: `backlog-${String(i).padStart(6, '0')}`,
      sim: { modem: `modem-${i % 4}`, imsi: '510100123456789' },
      sender: '858',
      text: `Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774 tgl 2026-11-22. Cek pulsa *888#. SN: BACKLOG${String(i).padStart(6, '0')}`,
      scTimestamp: '2026-11-22T10:15:30+07:00',
      receivedAt: new Date(base + Math.floor((i * 3_600_000) / n)).toISOString(),
      pdus: ['07912618485400F9040381580000108110015103820A'],
      attempts: 0,
    };
    if (nextAttemptAt) {
      rec.attempts = 1;
      rec.lastError = 'HTTP 503: temporarily unavailable';
      rec.nextAttemptAt = nextAttemptAt(i);
    }
    return rec;
  });
}

async function fill(dir: string, records: SmsRecord[], concurrency: number): Promise<number> {
  const spool = await Spool.open(dir, { logger: silentLogger(), fsync: true });
  const t = now();
  try {
    const queue = shuffled(records, 7);
    const worker = async () => {
      for (let rec = queue.pop(); rec; rec = queue.pop()) await spool.putPending(rec);
    };
    await Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker));
  } finally {
    await spool.close();
  }
  return now() - t;
}

/**
 * Time the synchronous part of whichever spool read the forwarder uses to choose a record. For the ordered view
 * (pendingInOrder) that is the walk itself: from the call until the forwarder's pick stops iterating it.
 */
function timeSpoolRead(spool: Spool): { times: number[]; method: string } {
  const times: number[] = [];
  const target = spool as unknown as Record<string, unknown>;
  const method =
    typeof target.pendingInOrder === 'function'
      ? 'pendingInOrder'
      : typeof target.nextDue === 'function'
        ? 'nextDue'
        : 'list';
  const original = (target[method] as (...a: unknown[]) => unknown).bind(spool);
  if (method === 'pendingInOrder') {
    target[method] = () => {
      const t = now();
      const inner = (original() as Iterable<unknown>)[Symbol.iterator]();
      let open = true;
      const done = () => {
        if (open) times.push(now() - t);
        open = false;
      };
      const it: IterableIterator<unknown> = {
        next: () => {
          const r = inner.next();
          if (r.done) done();
          return r;
        },
        return: (value?: unknown) => {
          done();
          return inner.return?.(value) ?? { done: true, value };
        },
        [Symbol.iterator]: () => it,
      };
      return it;
    };
    return { times, method };
  }
  target[method] = (...args: unknown[]) => {
    const t = now();
    const result = original(...args);
    if (method !== 'list' || args[0] === 'pending') times.push(now() - t);
    return result;
  };
  return { times, method: method === 'list' ? "list('pending')" : method };
}

/** Retry times of the 'waiting' phase are laid out from this instant; the forwarder's clock is shifted onto it. */
const WAITING_EPOCH_MS = Date.parse('2030-01-01T00:00:00Z');

async function runPhase(
  phase: 'due' | 'waiting',
  o: BacklogOptions,
  work: string,
): Promise<{ fillMs: number; result: BacklogPhaseResult }> {
  const dir = join(work, phase);
  let records: SmsRecord[];
  if (phase === 'due') records = makeRecords(o.records);
  else {
    // Retry times spread over [epoch + 0.5 s, epoch + 0.5 s + spread), in an order unrelated to receivedAt.
    const slot = shuffled(
      Array.from({ length: o.records }, (_, k) => k),
      11,
    );
    records = makeRecords(o.records, (i) =>
      new Date(WAITING_EPOCH_MS + 500 + Math.floor((slot[i]! * o.waitingSpreadMs) / o.records)).toISOString(),
    );
  }
  const fillMs = await fill(dir, records, o.fillConcurrency);

  const receiver = await startDemoReceiver();
  const t0 = now();
  const spool = await Spool.open(dir, { logger: benchLogger(o.logLevel), fsync: true });
  const openMs = now() - t0;
  let clockShiftMs = 0;
  const client = new WebhookClient({ url: webhookUrl(receiver.baseUrl).url, userAgent: 'pulsa-bridge-bench' });
  const forwarder = new Forwarder({
    spool,
    client,
    policy: { ...DEFAULT_RETRY_POLICY },
    logger: benchLogger(o.logLevel),
    clock: () => new Date(Date.now() + clockShiftMs),
  });
  const read = timeSpoolRead(spool);
  const gaps: number[] = [];
  let markEnd: number | undefined;
  const markDelivered = spool.markDelivered.bind(spool);
  spool.markDelivered = async (id, info) => {
    try {
      return await markDelivered(id, info);
    } finally {
      markEnd = now();
    }
  };
  const post = client.post.bind(client);
  client.post = (rec: SmsRecord) => {
    if (phase === 'due' && markEnd !== undefined) gaps.push(now() - markEnd);
    markEnd = undefined;
    return post(rec);
  };

  const eld = monitorEventLoopDelay({ resolution: 1 });
  let delivered = 0;
  let drainMs: number;
  try {
    read.times.length = 0;
    if (phase === 'waiting') clockShiftMs = WAITING_EPOCH_MS - Date.now();
    eld.enable();
    const started = now();
    forwarder.start();
    const deadline = started + 900_000 + (phase === 'waiting' ? o.waitingSpreadMs : 0);
    while ((delivered = forwarder.stats().delivered) < records.length) {
      if (now() > deadline)
        throw new Error(`bench: backlog ${phase}: only ${delivered} of ${records.length} delivered in time`);
      await sleep(5);
    }
    drainMs = now() - started;
    eld.disable();
  } finally {
    await forwarder.stop(2000);
    await spool.close();
    await receiver.close();
  }
  const ns = 1e6;
  return {
    fillMs,
    result: {
      phase,
      records: records.length,
      openMs,
      drainMs,
      postsPerSecond: (delivered * 1000) / drainMs,
      ...(phase === 'due' ? { pickGap: summarize(gaps) } : {}),
      spoolRead: summarize(read.times),
      spoolReadMethod: read.method,
      eventLoopDelay: { p50: eld.percentile(50) / ns, p99: eld.percentile(99) / ns, max: eld.max / ns },
      delivered,
    },
  };
}

export async function runBacklog(o: BacklogOptions): Promise<BacklogResult> {
  const work = await mkdtemp(join(tmpdir(), 'pulsa-bench-backlog-'));
  try {
    const due = await runPhase('due', o, work);
    const phases = [due.result];
    if (o.waitingSpreadMs > 0) phases.push((await runPhase('waiting', o, work)).result);
    return { fillMs: due.fillMs, phases };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
