/**
 * Measures one peer daemon (peers.ts) end to end: a fresh virtual modem (SIMCom profile, 255 SIM slots, no noise)
 * served on a socat pseudo-terminal in this process, a fresh local receiver (src/demo/receiver.ts, real HTTP on
 * 127.0.0.1), a fresh work directory, and the daemon as a separate process that opens the pseudo-terminal.
 *
 * Phases, each bounded by a timeout; a phase that fails is reported in `notes` and the phases that need it are skipped:
 *   1. start + warm-up: one SMS injected, wait for its POST (readiness; startup CPU is not counted below).
 *   2. single: `samples` SMS, one at a time; before each, the SIM must be empty and a seeded random pause of
 *      U(0, max(poll period, 1 s)) passes, so arrivals fall uniformly across a polling peer's cycle. Latency = the
 *      injectSms() call -> the POST body read by the receiver (one process, one clock: performance.now()).
 *   3. burst: the 30 messages of workload.burstPlan injected back to back; time from the first injection to the last
 *      POST; every text compared byte for byte with what was injected (multipart ones counted apart).
 *   4. idle: `idleSec` seconds with nothing arriving.
 * AT commands are counted at the virtual modem (every command line it receives); CPU from /proc/<pid>/stat at the
 * phase boundaries; peak RSS (VmHWM) just before the daemon is stopped. Nothing is asserted: figures only.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDemoReceiver, type DemoReceiver } from '../../src/demo/receiver.js';
import { hostVirtualModemOnPty, type PtyHost } from '../../src/virtual-modem/pty-host.js';
import { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';
import { summarize, type Summary } from '../stats.js';
import type { PeerSpec, RunningPeer } from './peers.js';
import { readCpuTimes, readPeakRssKiB, type CpuTimes } from './procstat.js';
import { burstPlan, commandHistogram, prng, SENDER, singleText, tagFor, tagOf, type PlannedSms } from './workload.js';

export interface MeasureOptions {
  samples: number;
  burst: number;
  idleSec: number;
  /** Seed of the pauses between single messages (the same for every peer). */
  seed: number;
  log: (line: string) => void;
}

export interface PeerResult {
  id: string;
  label: string;
  settings: string;
  /** What could not be measured, and why. */
  notes: string[];
  startupMs?: number;
  latencyMs?: Summary;
  burst?: {
    messages: number;
    parts: number;
    delivered: number;
    /** First injection -> last POST; undefined when not all arrived. */
    allDeliveredMs?: number;
    byteExact: number;
    multipart: number;
    multipartByteExact: number;
    /** Tags of messages that arrived different from what was sent (first few). */
    mismatches: string[];
  };
  duplicatePosts: number;
  atPerSmsSingle?: number;
  atPerSmsBurst?: number;
  atPerIdleMinute?: number;
  /** Most frequent commands in the idle window. */
  idleCommands?: Array<[string, number]>;
  /** CPU seconds over the single + burst phases. */
  cpuWork?: CpuTimes;
  /** CPU seconds per minute of idle. */
  cpuIdlePerMinute?: CpuTimes;
  peakRssMiB?: number;
  /** Wall time of the single + burst phases, ms. */
  workWallMs?: number;
}

const WARMUP_TIMEOUT_MS = 120_000;
const SETTLE_TIMEOUT_MS = 60_000;
const now = () => performance.now();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

class PhaseError extends Error {}

function cpuDelta(a: CpuTimes | undefined, b: CpuTimes | undefined, scale = 1): CpuTimes | undefined {
  if (!a || !b) return undefined;
  return { self: (b.self - a.self) * scale, withChildren: (b.withChildren - a.withChildren) * scale };
}

export async function measurePeer(spec: PeerSpec, o: MeasureOptions): Promise<PeerResult> {
  const result: PeerResult = { id: spec.id, label: spec.label, settings: spec.settings, notes: [], duplicatePosts: 0 };
  const cleanups: Array<() => Promise<void>> = [];
  let peer: RunningPeer | undefined;
  try {
    const workDir = await mkdtemp(join(tmpdir(), `pulsa-peer-${spec.id}-`));
    cleanups.push(() => rm(workDir, { recursive: true, force: true }));
    const receiver: DemoReceiver = await startDemoReceiver();
    cleanups.push(() => receiver.close());
    const vm = new VirtualModem({
      path: `virtual:peer-${spec.id}`,
      profile: 'simcom',
      storageCapacity: 255,
      noise: false,
      bootStepMs: 0,
      historyLimit: 50_000_000,
    });
    cleanups.push(async () => vm.stop());
    const modemPath = join(workDir, 'ttyV0');
    const host: PtyHost = await hostVirtualModemOnPty(vm, { linkPath: modemPath, baudRate: 115200 });
    cleanups.push(() => host.close());

    // Arrivals by tag (first POST of each), duplicates counted.
    const arrivals = new Map<string, { at: number; sender: string; message: string }>();
    const waiters = new Map<string, () => void>();
    receiver.onSms((sms) => {
      const at = now();
      const tag = tagOf(sms.message) ?? `?${sms.message.slice(0, 12)}`;
      if (arrivals.has(tag)) {
        result.duplicatePosts++;
        return;
      }
      arrivals.set(tag, { at, sender: sms.sender, message: sms.message });
      waiters.get(tag)?.();
    });
    const arrival = (tag: string, timeoutMs: number) =>
      new Promise<number>((resolve, reject) => {
        const got = arrivals.get(tag);
        if (got) return resolve(got.at);
        const fail = (why: string) => {
          clearTimeout(timer);
          clearInterval(watch);
          waiters.delete(tag);
          reject(new PhaseError(`${tag} ${why}`));
        };
        const timer = setTimeout(() => fail(`did not reach the receiver within ${timeoutMs / 1000} s`), timeoutMs);
        const watch = setInterval(() => {
          if (peer?.exited()) fail(`did not reach the receiver: the daemon exited (${peer.exited()})`);
        }, 200);
        waiters.set(tag, () => {
          clearTimeout(timer);
          clearInterval(watch);
          waiters.delete(tag);
          resolve(arrivals.get(tag)!.at);
        });
      });
    const simEmpty = async (what: string) => {
      const start = now();
      while (vm.storedMessages().length > 0) {
        if (peer?.exited()) throw new PhaseError(`the daemon exited (${peer.exited()}) while ${what}`);
        if (now() - start > SETTLE_TIMEOUT_MS)
          throw new PhaseError(
            `the SIM still held ${vm.storedMessages().length} message(s) ${SETTLE_TIMEOUT_MS / 1000} s after ${what}`,
          );
        await sleep(20);
      }
    };
    const commandsSoFar = () => vm.commandLog().length;
    const inject = (sms: PlannedSms) => vm.injectSms({ from: SENDER, text: sms.text });

    // 1. start + warm-up
    const t0 = now();
    peer = await spec.start({
      workDir,
      modemPath,
      webhookBaseUrl: receiver.baseUrl,
      webhookUrl: `${receiver.baseUrl}/webhook/sms-gateway`,
    });
    const running = peer;
    cleanups.push(() => running.stop());
    const warm = tagFor('W', 1);
    inject({ tag: warm, kind: 'gsm7', text: singleText(warm, 0) });
    try {
      await arrival(warm, WARMUP_TIMEOUT_MS);
      await simEmpty('the warm-up SMS');
    } catch (err) {
      result.notes.push(
        `not measured: the daemon did not deliver a first SMS (${(err as Error).message}; ${running.exited() ? `exited: ${running.exited()}` : 'still running'}); its log ends:\n${running.logTail()}`,
      );
      return result;
    }
    result.startupMs = now() - t0;
    o.log(`  ${spec.label}: ready after ${(result.startupMs / 1000).toFixed(1)} s (first SMS delivered)\n`);

    // 2. single messages
    const cpuStart = await readCpuTimes(running.pid);
    const workStart = now();
    const random = prng(o.seed);
    const maxPause = Math.max(spec.pollPeriodMs, 1000);
    const latencies: number[] = [];
    const singleCmdStart = commandsSoFar();
    let singleCmdEnd: number | undefined;
    try {
      for (let i = 1; i <= o.samples; i++) {
        await sleep(random() * maxPause);
        const tag = tagFor('L', i);
        const start = now();
        inject({ tag, kind: 'gsm7', text: singleText(tag, i) });
        latencies.push((await arrival(tag, spec.pollPeriodMs + 30_000)) - start);
        await simEmpty(`SMS ${tag}`);
      }
      singleCmdEnd = commandsSoFar();
    } catch (err) {
      result.notes.push(`single messages: ${latencies.length} of ${o.samples} measured (${(err as Error).message})`);
    }
    if (latencies.length > 0) result.latencyMs = summarize(latencies);
    if (singleCmdEnd !== undefined) result.atPerSmsSingle = (singleCmdEnd - singleCmdStart) / o.samples;
    o.log(
      `  ${spec.label}: ${latencies.length} single SMS, median ${result.latencyMs ? result.latencyMs.median.toFixed(0) : '-'} ms\n`,
    );

    // 3. burst
    const plan = burstPlan(o.burst);
    const burstCmdStart = commandsSoFar();
    const burstStart = now();
    let parts = 0;
    const multipartTags = new Set<string>();
    for (const sms of plan) {
      const n = inject(sms).pdus.length;
      parts += n;
      if (n > 1) multipartTags.add(sms.tag);
    }
    let lastArrival: number | undefined;
    try {
      const times = await Promise.all(plan.map((sms) => arrival(sms.tag, spec.pollPeriodMs + 120_000)));
      lastArrival = Math.max(...times);
      await simEmpty('the burst');
      result.atPerSmsBurst = (commandsSoFar() - burstCmdStart) / plan.length;
    } catch (err) {
      result.notes.push(`burst: ${(err as Error).message}`);
    }
    const workEnd = now();
    const cpuAfterWork = await readCpuTimes(running.pid);
    result.cpuWork = cpuDelta(cpuStart, cpuAfterWork);
    result.workWallMs = workEnd - workStart;
    const mismatches: string[] = [];
    let exact = 0;
    let multipartExact = 0;
    let delivered = 0;
    for (const sms of plan) {
      const got = arrivals.get(sms.tag);
      if (!got) continue;
      delivered++;
      if (got.message === sms.text && got.sender === SENDER) {
        exact++;
        if (multipartTags.has(sms.tag)) multipartExact++;
      } else if (mismatches.length < 5)
        mismatches.push(
          `${sms.tag} (${sms.kind}): got ${JSON.stringify(got.message.slice(0, 60))}${got.message.length > 60 ? '...' : ''} (${got.message.length} chars, sent ${sms.text.length})`,
        );
    }
    result.burst = {
      messages: plan.length,
      parts,
      delivered,
      ...(lastArrival !== undefined && delivered === plan.length ? { allDeliveredMs: lastArrival - burstStart } : {}),
      byteExact: exact,
      multipart: multipartTags.size,
      multipartByteExact: multipartExact,
      mismatches,
    };
    o.log(`  ${spec.label}: burst of ${plan.length} (${parts} parts): ${delivered} delivered, ${exact} byte-exact\n`);

    // 4. idle
    if (running.exited()) {
      result.notes.push(`idle: not measured, the daemon exited (${running.exited()})`);
    } else {
      await sleep(1000);
      const idleLogStart = vm.commandLog().length;
      const cpuIdleStart = await readCpuTimes(running.pid);
      const idleStart = now();
      await sleep(o.idleSec * 1000);
      const log = vm.commandLog();
      const perMinute = 60_000 / (now() - idleStart);
      const cpuIdleEnd = await readCpuTimes(running.pid);
      const idleLines = log.slice(idleLogStart);
      result.atPerIdleMinute = idleLines.length * perMinute;
      result.idleCommands = commandHistogram(idleLines)
        .slice(0, 6)
        .map(([c, n]) => [c, Math.round(n * perMinute * 10) / 10]);
      result.cpuIdlePerMinute = cpuDelta(cpuIdleStart, cpuIdleEnd, perMinute);
      o.log(`  ${spec.label}: idle ${o.idleSec} s: ${result.atPerIdleMinute.toFixed(0)} AT commands per minute\n`);
    }

    const hwm = await readPeakRssKiB(running.pid);
    if (hwm !== undefined) result.peakRssMiB = hwm / 1024;
    else result.notes.push(`peak RSS: not measured (process gone: ${running.exited() ?? 'unknown'})`);
    if (result.cpuWork === undefined) result.notes.push('CPU: not measured (process gone)');
    if (running.exited())
      result.notes.push(`the daemon exited during the run (${running.exited()}); its log ends:\n${running.logTail()}`);
    return result;
  } catch (err) {
    result.notes.push(`aborted: ${(err as Error).message}${peer ? `; the daemon's log ends:\n${peer.logTail()}` : ''}`);
    return result;
  } finally {
    for (const c of cleanups.reverse()) {
      try {
        await c();
      } catch (err) {
        result.notes.push(`cleanup step failed: ${(err as Error).message}`);
      }
    }
  }
}
