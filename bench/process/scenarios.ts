/**
 * The process targets, measured on the real daemon process (harness.ts). Figures only, nothing asserted.
 *
 * - measureDaemon (one modem): a 30-SMS burst (bench/peer/workload.ts: 39 parts) timed from the first injection to the
 *   last POST, with where the time goes (breakdown below); an idle window (AT commands and CPU seconds per minute);
 *   then a 100-SMS burst, after which VmHWM (peak RSS since start) is read. `nodeArgs` / `env` make variants
 *   (--lite-mode, --max-semi-space-size, UV_THREADPOOL_SIZE).
 * - measureFleet (N modems in one daemon): a trickle on every modem at once (each modem: `trickle` single SMS with
 *   pauses of U(0, 2 x gapMs)), latency inject -> POST; then a burst of 30 on every modem at the same moment:
 *   aggregate rate (SMS/s, first injection -> last POST), the moment every SIM is empty (receive side done), VmHWM.
 * - Breakdown of a burst: the virtual modems' side of the serial line is stamped (bytes in = a command, bytes out =
 *   its answer), so the time between a command's final answer and the next command is the bridge's time, attributed
 *   to the step it belongs to by the pair of commands: read (AT+CMGR) -> re-check (AT+CMGR of the same index) =
 *   decode + durable spool write; re-check -> AT+CMGD = the compare; AT+CMGD -> next read = scheduling. With
 *   `strace` (if installed and allowed) the daemon's fsync/fdatasync calls are counted and summed during the burst.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';
import { summarize, type Summary } from '../stats.js';
import { burstPlan, commandHistogram, commandName, prng, singleText, tagFor } from '../peer/workload.js';
import { startHarness, type Harness } from './harness.js';

const now = () => performance.now();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ------------------------------------------------------------------ serial-line stamps

interface Stamp {
  t: number;
  k: number;
  dir: 'in' | 'out';
  text: string;
}

/** Stamps every chunk each virtual modem receives and sends (wrapping its onWrite and private send). */
function stampLines(modems: VirtualModem[]): { stamps: Stamp[]; stop(): void } {
  const stamps: Stamp[] = [];
  const undo: Array<() => void> = [];
  modems.forEach((vm, k) => {
    const target = vm as unknown as { onWrite(c: Buffer): void; send(text: string): void };
    const onWrite = target.onWrite.bind(vm);
    const send = target.send.bind(vm);
    target.onWrite = (c: Buffer) => {
      stamps.push({ t: now(), k, dir: 'in', text: c.toString('latin1') });
      onWrite(c);
    };
    target.send = (text: string) => {
      stamps.push({ t: now(), k, dir: 'out', text });
      send(text);
    };
    undo.push(() => {
      target.onWrite = onWrite;
      target.send = send;
    });
  });
  return { stamps, stop: () => undo.forEach((u) => u()) };
}

export interface Breakdown {
  /** Bridge time between commands, by step, summed over the burst (ms). */
  stepsMs: Record<string, number>;
  /** How many times each step happened. */
  stepsN: Record<string, number>;
  /** Bytes on the serial line both ways during the burst, and what they cost at 115200 baud (10 bits per byte). */
  serialBytes: number;
  wireMsAt115200: number;
  /** fsync + fdatasync calls of the daemon during the burst, and their summed duration (strace -T). */
  fsyncs?: { calls: number; totalMs: number; note: string };
}

/** Splits the stamps into commands (per modem, in order) and attributes the gaps. */
function breakdown(stamps: Stamp[]): Omit<Breakdown, 'fsyncs'> {
  const steps: Record<string, number> = {};
  const counts: Record<string, number> = {};
  let bytes = 0;
  const byModem = new Map<number, Stamp[]>();
  for (const s of stamps) {
    bytes += Buffer.byteLength(s.text, 'latin1');
    byModem.set(s.k, [...(byModem.get(s.k) ?? []), s]);
  }
  const add = (step: string, ms: number) => {
    steps[step] = (steps[step] ?? 0) + ms;
    counts[step] = (counts[step] ?? 0) + 1;
  };
  for (const list of byModem.values()) {
    // Commands: an 'in' chunk holding a line that starts with AT (the PDU-mode reads carry no body going in).
    let prev: { name: string; arg: string; done: number } | undefined;
    let cur: { name: string; arg: string; start: number } | undefined;
    for (const s of list) {
      if (s.dir === 'in' && /AT/i.test(s.text)) {
        const line = s.text.trim();
        const name = commandName(line);
        const arg = line.replace(/^AT[+^]?[A-Z]*[=?]?/i, '');
        if (prev) {
          let step = `${prev.name} -> ${name}`;
          if (prev.name === 'AT+CMGR' && name === 'AT+CMGR')
            step = prev.arg === arg ? 'read -> re-check: decode + spool write (fsyncs)' : 're-check -> next read';
          else if (prev.name === 'AT+CMGR' && name === 'AT+CMGD') step = 're-check -> AT+CMGD: compare';
          else if (prev.name === 'AT+CMGD' && name === 'AT+CMGR') step = 'AT+CMGD -> next read: scheduling';
          add(`bridge: ${step}`, s.t - prev.done);
        }
        cur = { name, arg, start: s.t };
        prev = undefined;
      } else if (s.dir === 'out' && cur && /\r\n(OK|ERROR|\+CM[SE] ERROR[^\r]*)\r\n$/.test(s.text)) {
        add(`modem + pty: ${cur.name}`, s.t - cur.start);
        prev = { name: cur.name, arg: cur.arg, done: s.t };
        cur = undefined;
      }
    }
  }
  return { stepsMs: steps, stepsN: counts, serialBytes: bytes, wireMsAt115200: (bytes * 10 * 1000) / 115200 };
}

/** Counts fsync/fdatasync of `pid` (all threads) until stop(); undefined when strace cannot attach. */
function traceFsyncs(pid: number): { stop(): Promise<Breakdown['fsyncs']> } | undefined {
  if (spawnSync('sh', ['-c', 'command -v strace'], { stdio: 'ignore' }).status !== 0) return undefined;
  const child: ChildProcess = spawn('strace', ['-f', '-T', '-e', 'trace=fsync,fdatasync', '-p', String(pid)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  child.on('error', () => undefined); // reported as not measured below
  return {
    stop: async () => {
      await sleep(100);
      child.kill('SIGINT');
      await new Promise((r) => child.once('exit', r));
      const durations = [...err.matchAll(/f(?:data)?sync\(\d+\)\s+=\s+\d+\s+<([\d.]+)>/g)].map(
        (m) => Number(m[1]) * 1000,
      );
      if (durations.length === 0 && !/attached/.test(err))
        return { calls: 0, totalMs: 0, note: `strace did not attach: ${err.trim().split('\n').pop()}` };
      return {
        calls: durations.length,
        totalMs: durations.reduce((a, b) => a + b, 0),
        note: 'strace -f -T (slows the daemon: the burst time is from the untraced run)',
      };
    },
  };
}

// ------------------------------------------------------------------ one modem

export interface DaemonResult {
  variant: string;
  burst30?: {
    messages: number;
    parts: number;
    allDeliveredMs: number;
    simEmptyMs: number;
    msPerPart: number;
    cpuS?: number;
    breakdown: Breakdown;
  };
  /** Same burst again with strace attached, for the fsync count only. */
  burst30Traced?: { allDeliveredMs: number; fsyncs: Breakdown['fsyncs'] };
  idle?: { seconds: number; atPerMinute: number; cpuSPerMinute?: number; commands: Array<[string, number]> };
  burst100?: { messages: number; parts: number; allDeliveredMs: number; peakRssMiB?: number; rssAfterMiB?: number };
  /** VmRSS once ready (after the warm-up SMS). */
  readyRssMiB?: number;
  notes: string[];
}

function retag(text: string, from: string, to: string): string {
  return to + text.slice(from.length);
}

/** Injects `plan` on modem k with fresh tags (`phase`, numbered from `first`); resolves the tags and part count. */
function injectPlan(
  h: Harness,
  k: number,
  count: number,
  phase: 'B' | 'L',
  first: number,
): { tags: string[]; parts: number } {
  const tags: string[] = [];
  let parts = 0;
  for (const [i, sms] of burstPlan(count).entries()) {
    const tag = tagFor(phase, first + i);
    parts += h.inject(k, retag(sms.text, sms.tag, tag));
    tags.push(tag);
  }
  return { tags, parts };
}

export async function measureDaemon(o: {
  variant: string;
  nodeArgs?: string[];
  env?: Record<string, string>;
  idleSec: number;
  trace: boolean;
  log: (l: string) => void;
}): Promise<DaemonResult> {
  const r: DaemonResult = { variant: o.variant, notes: [] };
  o.log(`process: daemon, one modem (${o.variant})\n`);
  const h = await startHarness({
    modems: 1,
    ...(o.nodeArgs ? { nodeArgs: o.nodeArgs } : {}),
    ...(o.env ? { env: o.env } : {}),
    log: o.log,
  });
  try {
    r.readyRssMiB = await h.rssMiB();
    // 30-SMS burst, stamped.
    const line = stampLines(h.modems);
    const cpu0 = await h.cpu();
    const t0 = now();
    const b = injectPlan(h, 0, 30, 'B', 1);
    const times = await Promise.all(b.tags.map((t) => h.arrival(t, 120_000)));
    const last = Math.max(...times);
    const empty = await h.simsEmpty(60_000);
    const cpu1 = await h.cpu();
    line.stop();
    r.burst30 = {
      messages: 30,
      parts: b.parts,
      allDeliveredMs: last - t0,
      simEmptyMs: empty - t0,
      msPerPart: (last - t0) / b.parts,
      ...(cpu0 && cpu1 ? { cpuS: cpu1.self - cpu0.self } : {}),
      breakdown: breakdown(line.stamps),
    };
    o.log(`  burst of 30 (${b.parts} parts): ${(last - t0).toFixed(0)} ms\n`);
    if (o.trace) {
      const tr = traceFsyncs(h.pid);
      if (!tr) r.notes.push('fsyncs: strace not installed');
      else {
        await sleep(300);
        const t1 = now();
        const b2 = injectPlan(h, 0, 30, 'B', 101);
        const times2 = await Promise.all(b2.tags.map((t) => h.arrival(t, 120_000)));
        await h.simsEmpty(60_000);
        await sleep(200); // the last markDelivered
        r.burst30Traced = { allDeliveredMs: Math.max(...times2) - t1, fsyncs: await tr.stop() };
      }
    }
    // Idle.
    if (o.idleSec > 0) {
      await sleep(1000);
      const marks = h.commandMarks();
      const c0 = await h.cpu();
      const i0 = now();
      await sleep(o.idleSec * 1000);
      const perMinute = 60_000 / (now() - i0);
      const c1 = await h.cpu();
      const lines = h.commandsSince(marks);
      r.idle = {
        seconds: o.idleSec,
        atPerMinute: lines.length * perMinute,
        ...(c0 && c1 ? { cpuSPerMinute: (c1.self - c0.self) * perMinute } : {}),
        commands: commandHistogram(lines).map(([c, n]) => [c, Math.round(n * perMinute * 10) / 10]),
      };
      o.log(`  idle ${o.idleSec} s: ${r.idle.atPerMinute.toFixed(1)} AT/min\n`);
    }
    // 100-SMS burst, then the peak.
    const t2 = now();
    const b3 = injectPlan(h, 0, 100, 'L', 1);
    const times3 = await Promise.all(b3.tags.map((t) => h.arrival(t, 240_000)));
    await h.simsEmpty(60_000);
    await sleep(500);
    const peak = await h.peakRssMiB();
    const rss = await h.rssMiB();
    r.burst100 = {
      messages: 100,
      parts: b3.parts,
      allDeliveredMs: Math.max(...times3) - t2,
      ...(peak !== undefined ? { peakRssMiB: peak } : {}),
      ...(rss !== undefined ? { rssAfterMiB: rss } : {}),
    };
    o.log(
      `  burst of 100 (${b3.parts} parts): ${r.burst100.allDeliveredMs.toFixed(0)} ms, VmHWM ${peak?.toFixed(1)} MiB\n`,
    );
    if (h.duplicates() > 0) r.notes.push(`${h.duplicates()} duplicate POSTs`);
  } catch (err) {
    r.notes.push(`aborted: ${(err as Error).message}`);
  } finally {
    await h.stop();
  }
  return r;
}

// ------------------------------------------------------------------ N modems

export interface FleetResult {
  variant: string;
  modems: number;
  /** samples: every latency (ms) in the order they arrived (one modem: the order injected, the first SMS after start first). */
  trickle?: { perModem: number; gapMs: number; latency: Summary; samples: number[] };
  burst?: {
    messages: number;
    parts: number;
    allDeliveredMs: number;
    allSpooledMs: number;
    smsPerSecond: number;
    firstModemDoneMs: number;
    lastModemDoneMs: number;
    cpuS?: number;
    breakdown: Breakdown;
  };
  peakRssMiB?: number;
  readyRssMiB?: number;
  notes: string[];
}

export async function measureFleet(o: {
  variant: string;
  modems: number;
  trickle: number;
  gapMs: number;
  nodeArgs?: string[];
  env?: Record<string, string>;
  paceBaud?: number;
  seed: number;
  log: (l: string) => void;
}): Promise<FleetResult> {
  const r: FleetResult = { variant: o.variant, modems: o.modems, notes: [] };
  o.log(`process: fleet of ${o.modems} modem(s) (${o.variant})\n`);
  const h = await startHarness({
    modems: o.modems,
    ...(o.nodeArgs ? { nodeArgs: o.nodeArgs } : {}),
    ...(o.env ? { env: o.env } : {}),
    ...(o.paceBaud ? { paceBaud: o.paceBaud } : {}),
    log: o.log,
  });
  try {
    r.readyRssMiB = await h.rssMiB();
    // Trickle: every modem at once, each its own seeded pauses.
    if (o.trickle > 0) {
      let n = 0;
      const latencies: number[] = [];
      await Promise.all(
        h.modems.map(async (_, k) => {
          const random = prng(o.seed + k);
          for (let i = 0; i < o.trickle; i++) {
            await sleep(random() * 2 * o.gapMs);
            const tag = tagFor('L', ++n);
            const t = now();
            h.inject(k, singleText(tag, n));
            latencies.push((await h.arrival(tag, 120_000)) - t);
          }
        }),
      );
      await h.simsEmpty(60_000);
      r.trickle = { perModem: o.trickle, gapMs: o.gapMs, latency: summarize(latencies), samples: latencies };
      o.log(`  trickle: p95 ${r.trickle.latency.p95.toFixed(0)} ms\n`);
      await sleep(500);
    }
    // Burst of 30 on every modem at the same moment.
    const line = stampLines(h.modems);
    const cpu0 = await h.cpu();
    const t0 = now();
    let parts = 0;
    const perModem: string[][] = [];
    h.modems.forEach((_, k) => {
      const p = injectPlan(h, k, 30, 'B', 1 + k * 30);
      parts += p.parts;
      perModem.push(p.tags);
    });
    const spooled = h.simsEmpty(300_000);
    const done = await Promise.all(
      perModem.map(async (tags) => Math.max(...(await Promise.all(tags.map((t) => h.arrival(t, 300_000)))))),
    );
    const allSpooled = await spooled;
    const cpu1 = await h.cpu();
    line.stop();
    const last = Math.max(...done);
    r.burst = {
      messages: 30 * o.modems,
      parts,
      allDeliveredMs: last - t0,
      allSpooledMs: allSpooled - t0,
      smsPerSecond: (30 * o.modems) / ((last - t0) / 1000),
      firstModemDoneMs: Math.min(...done) - t0,
      lastModemDoneMs: last - t0,
      ...(cpu0 && cpu1 ? { cpuS: cpu1.self - cpu0.self } : {}),
      breakdown: breakdown(line.stamps),
    };
    o.log(
      `  burst of ${30 * o.modems}: ${(last - t0).toFixed(0)} ms (${r.burst.smsPerSecond.toFixed(1)} SMS/s), SIMs empty after ${(allSpooled - t0).toFixed(0)} ms\n`,
    );
    await sleep(500);
    r.peakRssMiB = await h.peakRssMiB();
    if (h.duplicates() > 0) r.notes.push(`${h.duplicates()} duplicate POSTs`);
  } catch (err) {
    r.notes.push(`aborted: ${(err as Error).message}`);
  } finally {
    await h.stop();
  }
  return r;
}
