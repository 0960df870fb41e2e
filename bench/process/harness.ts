/**
 * The process benchmarks' test bench: the real daemon as its own process (`node [nodeArgs] bin/pulsa-bridge run`, as
 * systemd starts it), opening N virtual modems (SIMCom profile, 255 slots, no noise) each served on its own socat
 * pseudo-terminal by THIS process, and POSTing to a local receiver (src/demo/receiver.ts, real HTTP on 127.0.0.1).
 *
 * Contract
 * - start() resolves once the daemon has delivered one warm-up SMS from every modem (readiness); stop() ends the daemon
 *   (SIGTERM, then SIGKILL after 10 s), the pty hosts, the receiver, and removes the work directory. Every wait is
 *   bounded; a failure rejects with the end of the daemon's log.
 * - Arrivals are keyed by the tag a text starts with (bench/peer/workload.ts), first POST only; duplicates are counted.
 * - Figures read from /proc/<pid> (CPU, VmHWM, VmRSS) and the virtual modems' command logs. Nothing is asserted.
 */
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDemoReceiver, type DemoReceiver } from '../../src/demo/receiver.js';
import { hostVirtualModemOnPty, type PtyHost } from '../../src/virtual-modem/pty-host.js';
import { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';
import { BIN, launch, type RunningPeer } from '../peer/peers.js';
import { readCpuTimes, readPeakRssKiB, statusFieldKiB, type CpuTimes } from '../peer/procstat.js';
import { SENDER, singleText, tagFor, tagOf } from '../peer/workload.js';

export interface HarnessOptions {
  modems: number;
  /** Flags for node before the script (e.g. --lite-mode). */
  nodeArgs?: string[];
  /** The daemon's script (default: this checkout's bin/pulsa-bridge; another built checkout's to compare builds). */
  bin?: string;
  /** Copy the daemon's log (stdout and stderr) here once it has exited, at stop() (its work directory is removed). */
  keepLog?: string;
  /** Extra environment for the daemon (e.g. UV_THREADPOOL_SIZE). */
  env?: Record<string, string>;
  /** Pace every pseudo-terminal like a UART at this rate (a real modem's wire); unpaced when absent. */
  paceBaud?: number;
  /** Daemon log level (production default: info). */
  logLevel?: string;
  /** The daemon's `metrics` config section (the listener and the status page); none when absent. */
  metrics?: Record<string, unknown>;
  log?: (line: string) => void;
}

export interface Harness {
  pid: number;
  modems: VirtualModem[];
  /** The daemon's control socket. */
  socketPath: string;
  /** Injects one SMS on modem k; returns its PDU count. */
  inject(k: number, text: string): number;
  /** Resolves with the arrival time (performance.now()) of the message tagged `tag`. */
  arrival(tag: string, timeoutMs: number): Promise<number>;
  /** Resolves once no modem holds a message (the daemon deleted everything it read). */
  simsEmpty(timeoutMs: number): Promise<number>;
  duplicates(): number;
  commandCount(): number;
  commandsSince(start: number[]): string[];
  commandMarks(): number[];
  cpu(): Promise<CpuTimes | undefined>;
  peakRssMiB(): Promise<number | undefined>;
  rssMiB(): Promise<number | undefined>;
  logTail(lines?: number): string;
  stop(): Promise<void>;
}

const now = () => performance.now();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function startHarness(o: HarnessOptions): Promise<Harness> {
  const cleanups: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined); // best effort: figures are taken already
  };
  try {
    const workDir = await mkdtemp(join(tmpdir(), 'pulsa-process-'));
    cleanups.push(() => rm(workDir, { recursive: true, force: true }));
    const receiver: DemoReceiver = await startDemoReceiver();
    cleanups.push(() => receiver.close());
    const modems: VirtualModem[] = [];
    for (let k = 0; k < o.modems; k++) {
      // Each modem its own SIM and device identity, as in a modem pool (the spool keys records and multipart groups by SIM).
      const n = String(k).padStart(3, '0');
      const identity = {
        imei: `867000000000${n}`,
        imsi: `510100000000${n}`,
        iccid: `89621000000000000${n}`,
        ownNumber: `+62812000${n}`,
      };
      const vm = new VirtualModem({
        path: `virtual:process-${k}`,
        profile: 'simcom',
        storageCapacity: 255,
        noise: false,
        bootStepMs: 0,
        historyLimit: 1_000_000,
        identity,
      });
      cleanups.push(async () => vm.stop());
      const host: PtyHost = await hostVirtualModemOnPty(vm, {
        linkPath: join(workDir, `ttyV${k}`),
        baudRate: 115200,
        ...(o.paceBaud ? { paceBaud: o.paceBaud } : {}),
      });
      cleanups.push(() => host.close());
      modems.push(vm);
    }
    const arrivals = new Map<string, number>();
    const waiters = new Map<string, () => void>();
    let duplicates = 0;
    receiver.onSms((sms) => {
      const at = now();
      const tag = tagOf(sms.message) ?? `?${sms.message.slice(0, 12)}`;
      if (arrivals.has(tag)) return void duplicates++;
      arrivals.set(tag, at);
      waiters.get(tag)?.();
    });

    const config = {
      webhook: { baseUrl: receiver.baseUrl },
      spool: { dir: join(workDir, 'spool') },
      modems: modems.map((_, k) => ({
        name: `m${k}`,
        port: join(workDir, `ttyV${k}`),
        baudRate: 115200,
        senders: [SENDER],
      })),
      log: { level: o.logLevel ?? 'info', pretty: false },
      ...(o.metrics ? { metrics: o.metrics } : {}),
    };
    const configPath = join(workDir, 'config.json');
    await writeFile(configPath, JSON.stringify(config, null, 2));
    const logPath = join(workDir, 'daemon.log');
    const { RUNTIME_DIRECTORY: _runtime, ...env } = process.env; // the socket goes beside the spool (socketPath)
    const peer: RunningPeer = launch(
      process.execPath,
      [...(o.nodeArgs ?? []), o.bin ?? BIN, 'run', '--config', configPath],
      logPath,
      { ...env, ...(o.env ?? {}) },
    );
    if (o.keepLog) cleanups.push(() => copyFile(logPath, o.keepLog!)); // runs after the daemon's stop (reverse order)
    cleanups.push(() => peer.stop());

    const arrival = (tag: string, timeoutMs: number) =>
      new Promise<number>((resolve, reject) => {
        const got = arrivals.get(tag);
        if (got !== undefined) return resolve(got);
        const timer = setTimeout(() => {
          waiters.delete(tag);
          reject(
            new Error(
              `${tag} did not arrive within ${timeoutMs / 1000} s (${peer.exited() ?? 'daemon running'}); log:\n${peer.logTail()}`,
            ),
          );
        }, timeoutMs);
        waiters.set(tag, () => {
          clearTimeout(timer);
          waiters.delete(tag);
          resolve(arrivals.get(tag)!);
        });
      });
    const simsEmpty = async (timeoutMs: number) => {
      const start = now();
      while (modems.some((vm) => vm.storedMessages().length > 0)) {
        if (peer.exited()) throw new Error(`the daemon exited (${peer.exited()}); log:\n${peer.logTail()}`);
        if (now() - start > timeoutMs) throw new Error(`SIMs not empty after ${timeoutMs / 1000} s`);
        await sleep(5);
      }
      return now();
    };
    const status = (field: string) => {
      try {
        const kib = statusFieldKiB(readFileSync(`/proc/${peer.pid}/status`, 'utf8'), field);
        return kib === undefined ? undefined : kib / 1024;
      } catch {
        return undefined; // process gone: reported as not measured
      }
    };
    const h: Harness = {
      pid: peer.pid,
      modems,
      socketPath: join(workDir, 'spool', 'control.sock'),
      inject: (k, text) => modems[k]!.injectSms({ from: SENDER, text }).pdus.length,
      arrival,
      simsEmpty,
      duplicates: () => duplicates,
      commandCount: () => modems.reduce((n, vm) => n + vm.commandLog().length, 0),
      commandMarks: () => modems.map((vm) => vm.commandLog().length),
      commandsSince: (marks) => modems.flatMap((vm, k) => vm.commandLog().slice(marks[k] ?? 0)),
      cpu: () => readCpuTimes(peer.pid),
      peakRssMiB: async () => {
        const k = await readPeakRssKiB(peer.pid);
        return k === undefined ? undefined : k / 1024;
      },
      rssMiB: async () => status('VmRSS'),
      logTail: (lines) => peer.logTail(lines),
      stop,
    };
    // Readiness: one SMS from every modem delivered and deleted.
    const t0 = now();
    const warm = modems.map((_, k) => {
      const tag = tagFor('W', k + 1);
      h.inject(k, singleText(tag, k));
      return tag;
    });
    await Promise.all(warm.map((t) => arrival(t, 120_000)));
    await simsEmpty(60_000);
    o.log?.(`  daemon ready with ${o.modems} modem(s) after ${((now() - t0) / 1000).toFixed(1)} s\n`);
    return h;
  } catch (err) {
    await stop();
    throw err;
  }
}
