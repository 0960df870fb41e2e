/**
 * Collects what the health model (./model.ts) judges, from the running daemon: a periodic spool write probe (a small
 * file written, fsynced and removed in the spool directory; a probe that does not finish is itself a finding), and
 * per-sample bookkeeping of how long the same AT task or the same POST has been running (the stats the supervisor and
 * forwarder expose carry labels, not start times).
 * The daemon owns one HealthMonitor; the watchdog, /healthz and status.json read its verdicts. Timers are unref'd.
 */
import { open, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import {
  DEFAULT_THRESHOLDS,
  judgeHealth,
  judgeLiveness,
  type HealthSnapshot,
  type HealthThresholds,
  type ModemSnapshot,
  type Verdict,
} from './model.js';

/** The spool counts a verdict needs; the source may give more (the daemon's snapshot carries them on). */
export type SpoolCounts = HealthSnapshot['spool'];

/** What the monitor reads from the daemon on every sample. */
export interface HealthSource<S extends SpoolCounts = SpoolCounts> {
  startedAtMs: number;
  modems(): Array<Omit<ModemSnapshot, 'runningTask'> & { scheduler?: { running: string | undefined } }>;
  forwarder(): {
    running: boolean;
    unrecorded: number;
    inFlightId?: string | undefined;
    endpointDown?: { since: string; failures: number; lastError: string } | undefined;
  };
  spool(): Promise<S>;
  /** Each SIM's last balance check (absent: no balance watch). */
  sims?(): NonNullable<HealthSnapshot['sims']>;
  /** The canaries' status (absent: none configured); the scheduler's CanaryStatus[] fits as it is. */
  canaries?(): NonNullable<HealthSnapshot['canaries']>;
}

export interface HealthMonitorOptions<S extends SpoolCounts = SpoolCounts> {
  source: HealthSource<S>;
  spoolDir: string;
  logger: Logger;
  thresholds?: Partial<HealthThresholds>;
  /** Spool probe interval (default 30 s). */
  probeIntervalMs?: number;
  fsync?: boolean;
  now?: () => number;
}

export const PROBE_FILE = '.health-probe';

export class HealthMonitor<S extends SpoolCounts = SpoolCounts> {
  readonly thresholds: HealthThresholds;
  private readonly o: HealthMonitorOptions<S>;
  private readonly now: () => number;
  private readonly probe: HealthSnapshot['spoolProbe'] = {};
  private readonly tasks = new Map<string, { label: string; sinceMs: number }>();
  private inFlight: { id: string; sinceMs: number } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastLogged = '';

  constructor(o: HealthMonitorOptions<S>) {
    this.o = o;
    this.now = o.now ?? Date.now;
    this.thresholds = { ...DEFAULT_THRESHOLDS, ...o.thresholds };
  }

  start(): void {
    void this.probeSpool();
    this.timer = setInterval(() => void this.probeSpool(), this.o.probeIntervalMs ?? 30_000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One write probe: tmp file written, (fsynced,) closed, removed. Never throws; a probe already running is left alone. */
  async probeSpool(): Promise<void> {
    if (this.probe.pendingSinceMs !== undefined) return;
    this.probe.pendingSinceMs = this.now();
    const file = join(this.o.spoolDir, PROBE_FILE);
    try {
      const fh = await open(file, 'w', 0o600);
      try {
        await fh.writeFile(`${process.pid} ${new Date(this.now()).toISOString()}\n`);
        if (this.o.fsync !== false) await fh.sync();
      } finally {
        await fh.close();
      }
      await unlink(file);
      this.probe.okAtMs = this.now();
    } catch (err) {
      const first = this.probe.failedAtMs === undefined || (this.probe.okAtMs ?? 0) > this.probe.failedAtMs;
      this.probe.failedAtMs = this.now();
      this.probe.error = errorMessage(err);
      if (first) this.o.logger.error({ err }, `spool write probe failed: ${errorMessage(err)}`);
    } finally {
      this.probe.pendingSinceMs = undefined;
    }
  }

  /** The current snapshot (also advances the running-task and in-flight bookkeeping). */
  async snapshot(): Promise<HealthSnapshot & { spool: S }> {
    const nowMs = this.now();
    const spool = await this.o.source.spool();
    return { ...this.syncSnapshot(nowMs), spool };
  }

  private syncSnapshot(nowMs: number): Omit<HealthSnapshot, 'spool'> {
    const modems: ModemSnapshot[] = this.o.source.modems().map((m) => {
      const label = m.scheduler?.running;
      const prev = this.tasks.get(m.name);
      if (label === undefined) this.tasks.delete(m.name);
      else if (!prev || prev.label !== label) this.tasks.set(m.name, { label, sinceMs: nowMs });
      const { scheduler: _scheduler, ...rest } = m;
      return { ...rest, runningTask: this.tasks.get(m.name) };
    });
    const f = this.o.source.forwarder();
    if (!f.inFlightId) this.inFlight = undefined;
    else if (this.inFlight?.id !== f.inFlightId) this.inFlight = { id: f.inFlightId, sinceMs: nowMs };
    return {
      nowMs,
      startedAtMs: this.o.source.startedAtMs,
      modems,
      spoolProbe: { ...this.probe },
      forwarder: {
        running: f.running,
        unrecorded: f.unrecorded,
        inFlight: this.inFlight,
        ...(f.endpointDown
          ? {
              endpointDown: {
                since: f.endpointDown.since,
                failures: f.endpointDown.failures,
                lastError: f.endpointDown.lastError,
              },
            }
          : {}),
      },
      ...(this.o.source.sims ? { sims: this.o.source.sims() } : {}),
      ...(this.o.source.canaries ? { canaries: this.o.source.canaries() } : {}),
    };
  }

  /** The watchdog's verdict: synchronous (the spool's counts are not needed), logged when it changes. */
  liveness(): Verdict {
    const v = judgeLiveness({ ...this.syncSnapshot(this.now()), spool: { pending: 0 } }, this.thresholds);
    // Logged when the set of problems changes (their messages carry durations that change on every call).
    const key = v.problems.map((p) => `${p.code}:${p.modem ?? ''}`).join(',');
    if (key !== this.lastLogged) {
      if (v.healthy) this.o.logger.info('liveness restored: the watchdog is pinged again');
      else
        this.o.logger.error(
          { problems: v.problems },
          `not live, withholding the watchdog ping: ${v.problems.map((p) => p.message).join('; ')}`,
        );
      this.lastLogged = key;
    }
    return v;
  }

  async health(): Promise<Verdict & { snapshot: HealthSnapshot & { spool: S } }> {
    const snapshot = await this.snapshot();
    return { ...judgeHealth(snapshot, this.thresholds), snapshot };
  }
}
