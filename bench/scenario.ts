/**
 * One benchmark scenario: the production daemon (Daemon.start, real spool with fsync in a temp dir) receiving SMS from
 * the virtual modem and POSTing them to the local demo receiver (real HTTP on 127.0.0.1), over
 *   - 'mock': a virtual modem's port (`virtual:<name>`), or
 *   - 'pty':  a socat pseudo-terminal pair opened with the native binding at 115200 baud (the
 *             modem's port is the pty link), optionally paced like a 115200-baud UART (paceBaud).
 *
 * Timestamps (performance.now(), one process, one clock):
 * - +CMTI: taken in a wrapper around the virtual modem's private send(), just before the URC's bytes go to the
 *   serial side (mock binding or pty write). injectSms() is also stamped; the two differ by the PDU-building time.
 * - POST: taken in the receiver's onSms listener, once the request body has been read, before it answers.
 * Everything runs in one process and one event loop (simulator, daemon, receiver), as `--simulate` does.
 *
 * Phases: warm-up (not counted), `samples` single messages one at a time (each waits for the previous one to be
 * delivered and deleted from the SIM), then a burst of `burst` messages injected in one go.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { parseConfig } from '../src/config.js';
import { Daemon } from '../src/daemon.js';
import { startDemoReceiver, type DemoReceiver } from '../src/demo/receiver.js';
import { createLogger, type Logger } from '../src/log.js';
import { hostVirtualModemOnPty, type PtyHost } from '../src/virtual-modem/pty-host.js';
import { VirtualModem, type VirtualModemOptions } from '../src/virtual-modem/virtual-modem.js';
import type { SmsRecord } from '../src/spool/types.js';
import { summarize, type Summary } from './stats.js';
import { configureVirtualModems, stopVirtualModems, virtualModemAt } from '../src/virtual-modem/virtual-ports.js';

export type Transport = 'mock' | 'pty';

export interface ScenarioOptions {
  name: string;
  transport: Transport;
  /** pty only: pace the pseudo-terminal like a UART at this rate. */
  paceBaud?: number;
  samples: number;
  burst: number;
  warmup: number;
  /** Lines at warn level and above go to stderr; everything else is serialised and dropped (as journald would get it). */
  logLevel: string;
}

/**
 * toCmgr: +CMTI emitted -> AT+CMGR reaches the modem (URC parsing, receiver queue, command write);
 * readAndDecode: AT+CMGR at the modem -> Spool.putPending called (answer back, framing, PDU decode, filter, record);
 * putPending: the durable spool write; toPost: putPending resolved -> POST body at the receiver (forwarder wake-up,
 * pick of the next record, HTTP client, server).
 */
export type StageName = 'toCmgr' | 'readAndDecode' | 'putPending' | 'toPost';

export interface ScenarioResult {
  name: string;
  transport: Transport;
  baudRate: number;
  paceBaud: number | undefined;
  single: Summary;
  /** Where a single message's time goes (see StageName). */
  stages: Record<StageName, Summary>;
  /** injectSms() call -> +CMTI bytes handed to the serial side, single phase. */
  injectToCmti: Summary;
  burst: {
    latency: Summary;
    /** First +CMTI -> last POST received. */
    drainMs: number;
    /** First +CMTI -> SIM empty and nothing pending in the spool. */
    settledMs: number;
    messagesPerSecond: number;
  };
  putPendingSingle: Summary;
  putPendingBurst: Summary;
  markDeliveredSingle: Summary;
  /** Serial bytes counted at the virtual modem during the single phase, per SMS. */
  bytesPerSms: { fromModem: number; toModem: number };
  /** A PDU as delivered (for the wire-time arithmetic). */
  samplePdu: { index: number; pduHex: string; tpduLength: number } | undefined;
  memoryAfterBurst: { maxRssMiB: number; rssMiB: number; heapUsedMiB: number };
  duplicatesAtReceiver: number;
}

const BAUD = 115_200;
const MODEM = 'bench';
const TEXT = (n: number) =>
  `Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774 tgl 2026-11-22. Cek pulsa *888#. SN: BENCH${String(n).padStart(6, '0')}`;
const TAG = /SN: BENCH(\d{6})/;
const VM_OPTIONS: Partial<VirtualModemOptions> = {
  profile: 'simcom',
  storageCapacity: 255,
  noise: false,
  bootStepMs: 0,
};

const now = () => performance.now();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function until(cond: () => boolean | Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const start = now();
  while (!(await cond())) {
    if (now() - start > timeoutMs) throw new Error(`bench: timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(1);
  }
}

/** A real pino logger: every line is serialised; warn and above are shown on stderr. */
export function benchLogger(level: string): Logger {
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      const text = chunk.toString('utf8');
      if (/"level":(?:[4-9]\d)/.test(text)) process.stderr.write(text);
      cb();
    },
  });
  return createLogger({ level, pretty: false, destination });
}

/** Stage time stamps of the single message in flight (single phase only). */
interface Probe {
  cmgrAt?: number;
  putStart?: number;
  putEnd?: number;
}

/**
 * Hooks the virtual modem: +CMTI time stamps by storage index, byte counters in both directions, and the moment the
 * first AT+CMGR of the probed message reaches the modem.
 */
function instrument(
  vm: VirtualModem,
  probe: () => Probe | undefined,
): { cmtiAt: Map<number, number>; bytes: { fromModem: number; toModem: number } } {
  const cmtiAt = new Map<number, number>();
  const bytes = { fromModem: 0, toModem: 0 };
  const internals = vm as unknown as { send?: (text: string) => void };
  if (typeof internals.send !== 'function')
    throw new Error('bench: VirtualModem has no send() to hook any more; update bench/scenario.ts');
  const send = internals.send.bind(vm);
  internals.send = (text: string) => {
    if (text.includes('+CMTI')) {
      const t = now();
      for (const m of text.matchAll(/\+CMTI: "\w+",(\d+)/g)) cmtiAt.set(Number(m[1]), t);
    }
    bytes.fromModem += text.length;
    send(text);
  };
  const onWrite = vm.onWrite.bind(vm);
  vm.onWrite = (chunk: Buffer) => {
    bytes.toModem += chunk.length;
    const p = probe();
    if (p && p.cmgrAt === undefined && chunk.includes('AT+CMGR=')) p.cmgrAt = now();
    onWrite(chunk);
  };
  return { cmtiAt, bytes };
}

interface Timed {
  single: number[];
  burst: number[];
  phase: 'single' | 'burst' | 'other';
}

/** Times Spool.putPending / markDelivered in the daemon's own spool (the receiver calls it through this object). */
function timeSpool(
  daemon: Daemon,
  probe: () => Probe | undefined,
): { put: Timed; mark: Timed; setPhase(p: Timed['phase']): void } {
  const put: Timed = { single: [], burst: [], phase: 'other' };
  const mark: Timed = { single: [], burst: [], phase: 'other' };
  const spool = daemon.spool;
  const putPending = spool.putPending.bind(spool);
  spool.putPending = async (rec: SmsRecord) => {
    const t = now();
    const p = probe();
    if (p && p.putStart === undefined) p.putStart = t;
    try {
      return await putPending(rec);
    } finally {
      const end = now();
      if (p && p.putEnd === undefined) p.putEnd = end;
      if (put.phase !== 'other') put[put.phase].push(end - t);
    }
  };
  const markDelivered = spool.markDelivered.bind(spool);
  spool.markDelivered = async (id: string, info: { status: number; at: Date }) => {
    const t = now();
    try {
      return await markDelivered(id, info);
    } finally {
      if (mark.phase !== 'other') mark[mark.phase].push(now() - t);
    }
  };
  return {
    put,
    mark,
    setPhase: (p) => {
      put.phase = p;
      mark.phase = p;
    },
  };
}

export async function runScenario(o: ScenarioOptions): Promise<ScenarioResult> {
  const logger = benchLogger(o.logLevel);
  const cleanups: Array<() => Promise<void>> = [];
  const cleanup = async () => {
    for (const c of cleanups.reverse()) {
      try {
        await c();
      } catch (err) {
        process.stderr.write(`bench: cleanup step failed: ${err instanceof Error ? err.message : String(err)}\n`);
      }
    }
  };
  try {
    const receiver: DemoReceiver = await startDemoReceiver();
    cleanups.push(() => receiver.close());
    const work = await mkdtemp(join(tmpdir(), 'pulsa-bench-'));
    cleanups.push(() => rm(work, { recursive: true, force: true }));

    let vm: VirtualModem | undefined;
    let host: PtyHost | undefined;
    const linkPath = join(work, 'ttyV0');
    if (o.transport === 'pty') {
      vm = new VirtualModem({ path: `virtual:${MODEM}-pty`, ...VM_OPTIONS });
      const hosted = vm;
      cleanups.push(async () => hosted.stop());
      host = await hostVirtualModemOnPty(vm, {
        linkPath,
        logger,
        baudRate: BAUD,
        ...(o.paceBaud ? { paceBaud: o.paceBaud } : {}),
      });
      const h = host;
      cleanups.push(() => h.close());
    }

    const config = parseConfig(
      {
        webhook: { baseUrl: receiver.baseUrl },
        spool: { dir: join(work, 'spool'), fsync: true },
        modems: [
          {
            name: MODEM,
            port: o.transport === 'pty' ? linkPath : `virtual:${MODEM}`,
            baudRate: BAUD,
            senders: ['858'],
            // The safety-net sweep (AT+CMGL) would land in the middle of a sample; the bench runs well under an hour.
            sweepIntervalSec: 3600,
          },
        ],
        shutdownGraceSec: 2,
      },
      {},
    );
    const undoDefaults = configureVirtualModems(VM_OPTIONS);
    const daemon = await Daemon.start({ config, logger });
    undoDefaults();
    cleanups.push(async () => {
      await daemon.stop();
      stopVirtualModems();
    });
    if (o.transport === 'mock') vm = virtualModemAt(`virtual:${MODEM}`);
    if (!vm) throw new Error('bench: no virtual modem');
    const modem = vm;
    const supervisor = daemon.supervisors[0]!;
    await until(() => supervisor.status().state === 'running', 'the modem to be running', 15_000);
    await supervisor.currentReceiver()?.drained();

    let probe: Probe | undefined;
    const { cmtiAt, bytes } = instrument(modem, () => probe);
    const spoolTimes = timeSpool(daemon, () => probe);

    const arrivals = new Map<number, number>();
    const waiters = new Map<number, () => void>();
    let duplicates = 0;
    receiver.onSms((sms) => {
      const t = now();
      const m = TAG.exec(sms.message);
      if (!m) return;
      const n = Number(m[1]);
      if (arrivals.has(n) || sms.duplicate) {
        duplicates++;
        return;
      }
      arrivals.set(n, t);
      waiters.get(n)?.();
    });
    const arrival = (n: number, timeoutMs: number) =>
      new Promise<number>((resolve, reject) => {
        const got = arrivals.get(n);
        if (got !== undefined) return resolve(got);
        const timer = setTimeout(
          () => reject(new Error(`bench: SMS #${n} did not reach the receiver within ${timeoutMs} ms`)),
          timeoutMs,
        );
        waiters.set(n, () => {
          clearTimeout(timer);
          waiters.delete(n);
          resolve(arrivals.get(n)!);
        });
      });
    let seq = 0;
    let samplePdu: ScenarioResult['samplePdu'];
    const inject = () => {
      const n = ++seq;
      const t0 = now();
      const r = modem.injectSms({ from: '858', text: TEXT(n) });
      const index = r.indexes[0];
      const cmti = index === undefined ? undefined : cmtiAt.get(index);
      if (index === undefined || cmti === undefined || r.pdus.length !== 1) {
        throw new Error(
          `bench: SMS #${n} was not stored and announced at once (indexes ${r.indexes.join(',')}, held ${r.held}, parts ${r.pdus.length})`,
        );
      }
      cmtiAt.delete(index);
      samplePdu ??= { index, pduHex: r.pdus[0]!.pdu, tpduLength: r.pdus[0]!.tpduLength };
      return { n, injectedAt: t0, cmtiAt: cmti };
    };
    const idle = () =>
      until(
        async () =>
          modem.storedMessages().length === 0 &&
          daemon.forwarder.stats().inFlightId === undefined &&
          (await daemon.spool.stats()).pending === 0,
        'the bridge to be idle',
        10_000,
      ).then(() => supervisor.currentReceiver()?.drained());

    // Warm-up: JIT, HTTP keep-alive connection, spool directories in the page cache.
    for (let i = 0; i < o.warmup; i++) {
      const s = inject();
      await arrival(s.n, 10_000);
      await idle();
    }

    // Single messages, one at a time.
    spoolTimes.setPhase('single');
    bytes.fromModem = 0;
    bytes.toModem = 0;
    const single: number[] = [];
    const injectToCmti: number[] = [];
    const stages: Record<StageName, number[]> = { toCmgr: [], readAndDecode: [], putPending: [], toPost: [] };
    for (let i = 0; i < o.samples; i++) {
      probe = {};
      const p = probe;
      const s = inject();
      const at = await arrival(s.n, 10_000);
      single.push(at - s.cmtiAt);
      injectToCmti.push(s.cmtiAt - s.injectedAt);
      if (p.cmgrAt !== undefined && p.putStart !== undefined && p.putEnd !== undefined) {
        stages.toCmgr.push(p.cmgrAt - s.cmtiAt);
        stages.readAndDecode.push(p.putStart - p.cmgrAt);
        stages.putPending.push(p.putEnd - p.putStart);
        stages.toPost.push(at - p.putEnd);
      }
      probe = undefined;
      await idle();
    }
    const bytesPerSms = { fromModem: bytes.fromModem / o.samples, toModem: bytes.toModem / o.samples };

    // A burst, injected in one go.
    spoolTimes.setPhase('burst');
    const burst = Array.from({ length: o.burst }, () => inject());
    const firstCmti = Math.min(...burst.map((b) => b.cmtiAt));
    const arrived = await Promise.all(burst.map((b) => arrival(b.n, 90_000)));
    const lastArrival = Math.max(...arrived);
    await idle();
    const settled = now();
    spoolTimes.setPhase('other');
    const usage = process.memoryUsage();
    const memoryAfterBurst = {
      maxRssMiB: process.resourceUsage().maxRSS / 1024,
      rssMiB: usage.rss / 1048576,
      heapUsedMiB: usage.heapUsed / 1048576,
    };
    const drainMs = lastArrival - firstCmti;

    return {
      name: o.name,
      transport: o.transport,
      baudRate: BAUD,
      paceBaud: o.paceBaud,
      single: summarize(single),
      stages: {
        toCmgr: summarize(stages.toCmgr),
        readAndDecode: summarize(stages.readAndDecode),
        putPending: summarize(stages.putPending),
        toPost: summarize(stages.toPost),
      },
      injectToCmti: summarize(injectToCmti),
      burst: {
        latency: summarize(burst.map((b, i) => arrived[i]! - b.cmtiAt)),
        drainMs,
        settledMs: settled - firstCmti,
        messagesPerSecond: (o.burst * 1000) / drainMs,
      },
      putPendingSingle: summarize(spoolTimes.put.single),
      putPendingBurst: summarize(spoolTimes.put.burst),
      markDeliveredSingle: summarize(spoolTimes.mark.single),
      bytesPerSms,
      samplePdu,
      memoryAfterBurst,
      duplicatesAtReceiver: duplicates,
    };
  } finally {
    await cleanup();
  }
}
