/**
 * The health model (PURE: a snapshot in, verdicts out; the snapshot carries nowMs), shared by the daemon and `status`.
 * liveness (systemd watchdog): is the process making progress (spool writable, no wedged modem, forwarder running)?
 * A restart can fix these. health (/healthz, `status`, the page): liveness plus whatever stops money flowing (the
 * webhook failing, a modem disconnected or down or needing its PIN, a SIM whose active period ended, old pending
 * records, unrecorded results): `unhealthy`; what only warns (a SIM's balance low or its period ending soon, a balance
 * check failing, a canary paused, disabled or whose last run did not end approved: SMS still flow): `degraded`. Each
 * problem is one line with a hint; `healthy` is exactly "no problems".
 */

import { localTime } from '../time-format.js';

export type HealthProblemCode =
  | 'spool-unwritable'
  | 'spool-probe-stuck'
  | 'modem-stuck'
  | 'modem-down'
  | 'sim-not-ready'
  | 'forwarder-stopped'
  | 'forwarder-stuck'
  | 'results-unrecorded'
  | 'pending-too-old'
  | 'status-stale'
  | 'webhook-unreachable'
  | 'sim-expired'
  | 'sim-warning'
  | 'canary-paused'
  | 'canary-disabled'
  | 'canary-failing';

export interface HealthProblem {
  code: HealthProblemCode;
  /** The modem concerned, for per-modem problems. */
  modem?: string;
  /** The canary concerned, for a canary's warning. */
  canary?: string;
  message: string;
  /** What to do about it. */
  hint?: string;
}

export interface Verdict {
  /** No problem (warnings may remain: then `state` is degraded). */
  healthy: boolean;
  /** unhealthy: money cannot flow; degraded: only warnings; healthy: neither. */
  state?: 'healthy' | 'degraded' | 'unhealthy';
  problems: HealthProblem[];
  /** What only warns (absent from liveness verdicts). */
  warnings?: HealthProblem[];
}

export interface ModemSnapshot {
  name: string;
  /** The supervisor's state: running, connecting, initialising, sim-not-ready, disconnected, failed, stopped. */
  state: string;
  /** When the state was entered (ISO). */
  since: string;
  /** While not running: when it was last up, or the daemon's start (kept across retries). */
  downSince?: string | undefined;
  lastError?: string | undefined;
  hint?: string | undefined;
  /** Label of the AT task running on the modem's scheduler, and since when (epoch ms) the same one has been seen. */
  runningTask?: { label: string; sinceMs: number } | undefined;
}

/** A canary (scheduled test transfer) as the model reads it: CanaryStatus (src/canary/types.ts) fits as it is. */
export interface CanarySnapshot {
  name: string;
  /** waiting, running, paused, capped or disabled. */
  state: string;
  /** Why it is paused or disabled. */
  reason?: string | undefined;
  pausedAt?: string | undefined;
  failuresInARow: number;
  pauseAfterFailures: number;
  lastRun?: { at: string; outcome: string; orderId?: string | undefined; detail?: string | undefined } | undefined;
}

export interface HealthSnapshot {
  nowMs: number;
  /** When the daemon started (epoch ms): modems still connecting within the grace after it are not "down". */
  startedAtMs: number;
  modems: ModemSnapshot[];
  /** The last spool write probe: its result, and a probe started but not finished (a hung fs call). */
  spoolProbe: {
    okAtMs?: number | undefined;
    failedAtMs?: number | undefined;
    error?: string | undefined;
    pendingSinceMs?: number | undefined;
  };
  forwarder: {
    running: boolean;
    unrecorded: number;
    inFlight?: { id: string; sinceMs: number } | undefined;
    /** Set while the webhook fails (connection refused, timeouts, 5xx): since when (ISO), failures in a row. */
    endpointDown?: { since: string; failures: number; lastError: string } | undefined;
  };
  spool: { pending: number; oldestPendingAgeMs?: number | undefined };
  /** Each SIM's last balance check that said anything of its account (absent: none yet). */
  sims?: Array<{ modem: string; activeUntil: string | null; state: string; reasons: readonly string[] }> | undefined;
  /** The scheduled test transfers (absent: none configured). */
  canaries?: readonly CanarySnapshot[] | undefined;
}

export interface HealthThresholds {
  /** Pending records older than this make the bridge unhealthy (default 5 min). */
  maxPendingAgeMs: number;
  /** A modem may connect/initialise this long after start or after a state change before it counts as down. */
  startupGraceMs: number;
  /** A spool probe older than this (no success since) counts as a failure; the probe runs far more often. */
  spoolProbeMaxAgeMs: number;
  /** One AT task, a connect/initialise, or one POST running longer than this is wedged. */
  stuckMs: number;
}

export const DEFAULT_THRESHOLDS: HealthThresholds = {
  maxPendingAgeMs: 5 * 60_000,
  startupGraceMs: 2 * 60_000,
  spoolProbeMaxAgeMs: 2 * 60_000,
  stuckMs: 10 * 60_000,
};

const secs = (ms: number): string => `${Math.round(ms / 1000)} s`;

/** Problems a restart can fix: the watchdog withholds its ping while there is one. */
export function judgeLiveness(s: HealthSnapshot, t: HealthThresholds = DEFAULT_THRESHOLDS): Verdict {
  const problems: HealthProblem[] = [];
  const probe = s.spoolProbe;
  if (probe.pendingSinceMs !== undefined && s.nowMs - probe.pendingSinceMs > t.spoolProbeMaxAgeMs) {
    problems.push({
      code: 'spool-probe-stuck',
      message: `a spool write has not completed for ${secs(s.nowMs - probe.pendingSinceMs)} (file system hung, or the I/O thread pool exhausted)`,
    });
  } else if (probe.failedAtMs !== undefined && (probe.okAtMs === undefined || probe.failedAtMs > probe.okAtMs)) {
    problems.push({ code: 'spool-unwritable', message: `the spool is not writable: ${probe.error ?? 'write failed'}` });
  } else if ((probe.okAtMs ?? s.startedAtMs) < s.nowMs - t.spoolProbeMaxAgeMs) {
    problems.push({
      code: 'spool-unwritable',
      message: `no successful spool write for ${secs(s.nowMs - (probe.okAtMs ?? s.startedAtMs))}`,
    });
  }
  for (const m of s.modems) {
    const inState = s.nowMs - Date.parse(m.since);
    if ((m.state === 'connecting' || m.state === 'initialising') && inState > t.stuckMs) {
      problems.push({
        code: 'modem-stuck',
        modem: m.name,
        message: `modem ${m.name} has been ${m.state} for ${secs(inState)}`,
      });
    } else if (m.runningTask && s.nowMs - m.runningTask.sinceMs > t.stuckMs) {
      problems.push({
        code: 'modem-stuck',
        modem: m.name,
        message: `modem ${m.name}: AT task "${m.runningTask.label}" has been running for ${secs(s.nowMs - m.runningTask.sinceMs)}`,
      });
    }
  }
  if (!s.forwarder.running) problems.push({ code: 'forwarder-stopped', message: 'the forwarder is not running' });
  else if (s.forwarder.inFlight && s.nowMs - s.forwarder.inFlight.sinceMs > t.stuckMs) {
    problems.push({
      code: 'forwarder-stuck',
      message: `the POST of ${s.forwarder.inFlight.id} has been in flight for ${secs(s.nowMs - s.forwarder.inFlight.sinceMs)}`,
    });
  }
  return { healthy: problems.length === 0, problems };
}

/** The local calendar day of `ms`, YYYY-MM-DD (a SIM's active period ends at the end of its last day). */
function localDay(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

/**
 * A canary's one warning, if any: disabled (its ledger unreadable) or paused comes first (nothing runs), else a last run
 * that did not end approved. SMS still flow either way: the whole verdict is at worst degraded.
 */
export function canaryWarning(c: CanarySnapshot): HealthProblem | undefined {
  const last = c.lastRun;
  const order = last?.orderId ? ` (order ${last.orderId})` : '';
  if (c.state === 'disabled') {
    return {
      code: 'canary-disabled',
      canary: c.name,
      message: `canary ${c.name} is disabled: ${c.reason ?? 'its ledger cannot be read'}`,
      hint: "nothing runs on a ledger that cannot be read: check the day's spend, fix or remove canary-ledger.json in the state directory, then restart the daemon",
    };
  }
  if (c.state === 'paused') {
    return {
      code: 'canary-paused',
      canary: c.name,
      message: `canary ${c.name} is paused${c.pausedAt ? ` since ${localTime(c.pausedAt)}` : ''}: ${c.reason ?? 'no reason recorded'}`,
      hint: `check the centre SIM and ${last?.orderId ? `order ${last.orderId}` : 'the last order'} (\`pulsa-bridge canary ls\` shows its runs), then \`pulsa-bridge canary resume ${c.name}\``,
    };
  }
  if (last && last.outcome !== 'approved') {
    return {
      code: 'canary-failing',
      canary: c.name,
      message: `canary ${c.name}: its last run (${localTime(last.at)}) ended ${last.outcome}${order}${last.detail ? `: ${last.detail}` : ''} (${c.failuresInARow} of ${c.pauseAfterFailures} failures in a row before it pauses itself)`,
      hint: 'check the centre SIM, the webhook and the order (`pulsa-bridge canary ls` shows its runs); it runs again at its next interval',
    };
  }
  return undefined;
}

/** Liveness plus what needs an operator (see the header); warnings make it degraded, problems unhealthy. */
export function judgeHealth(s: HealthSnapshot, t: HealthThresholds = DEFAULT_THRESHOLDS): Verdict {
  const problems = [...judgeLiveness(s, t).problems];
  const warnings: HealthProblem[] = [];
  for (const m of s.modems) {
    if (m.state === 'running' || problems.some((p) => p.modem === m.name)) continue;
    const inState = s.nowMs - Date.parse(m.since);
    const why = m.lastError ? `: ${m.lastError}` : '';
    const hint = m.hint ? { hint: m.hint } : {};
    if (m.state === 'sim-not-ready') {
      problems.push({ code: 'sim-not-ready', modem: m.name, message: `modem ${m.name}: SIM not ready${why}`, ...hint });
    } else if (m.state === 'disconnected') {
      // Gone (unplugged, reset, the port vanished): no SMS comes in from now, whatever the grace.
      problems.push({
        code: 'modem-down',
        modem: m.name,
        message: `modem ${m.name} is disconnected, down since ${localTime(m.downSince ?? m.since)}${why}`,
        hint: m.hint ?? 'check the cable and the power; `pulsa-bridge ports` lists what is plugged in',
      });
    } else if (
      (m.state === 'connecting' || m.state === 'initialising') &&
      (inState <= t.startupGraceMs || s.nowMs - s.startedAtMs <= t.startupGraceMs)
    ) {
      continue; // starting up or reconnecting: not down yet
    } else {
      problems.push({
        code: 'modem-down',
        modem: m.name,
        message: `modem ${m.name} is ${m.state}, down since ${localTime(m.downSince ?? m.since)}${why}`,
        ...hint,
      });
    }
  }
  const down = s.forwarder.endpointDown;
  if (down) {
    problems.push({
      code: 'webhook-unreachable',
      message: `the webhook fails since ${localTime(down.since)} (${down.failures} attempt${down.failures === 1 ? '' : 's'} in a row): ${down.lastError}`,
      hint: 'SMS wait in the spool and go as soon as it answers; check the server, the network and webhook.url (`pulsa-bridge queue ls` shows what waits)',
    });
  }
  const today = localDay(s.nowMs);
  for (const sim of s.sims ?? []) {
    if (sim.activeUntil !== null && sim.activeUntil < today) {
      problems.push({
        code: 'sim-expired',
        modem: sim.modem,
        message: `modem ${sim.modem}: the SIM's active period ended on ${sim.activeUntil}: it no longer receives transfers`,
        hint: 'top the SIM up now, before its grace period ends and the number is recycled',
      });
    } else if (sim.state === 'warning' || sim.state === 'error') {
      warnings.push({
        code: 'sim-warning',
        modem: sim.modem,
        message: `modem ${sim.modem}: ${sim.reasons.length ? sim.reasons.join('; ') : `the balance check says ${sim.state}`}`,
        hint: sim.state === 'error' ? 'check the balance code with `pulsa-bridge balance`' : 'top the SIM up',
      });
    }
  }
  for (const c of s.canaries ?? []) {
    const w = canaryWarning(c);
    if (w) warnings.push(w);
  }
  if (s.forwarder.unrecorded > 0) {
    problems.push({
      code: 'results-unrecorded',
      message: `${s.forwarder.unrecorded} delivery result(s) could not be written to the spool (disk full or read-only?)`,
    });
  }
  const age = s.spool.oldestPendingAgeMs;
  if (s.spool.pending > 0 && age !== undefined && age > t.maxPendingAgeMs) {
    problems.push({
      code: 'pending-too-old',
      message: `${s.spool.pending} record(s) pending, the oldest for ${secs(age)} (threshold ${secs(t.maxPendingAgeMs)})`,
      hint: 'is the webhook reachable? `pulsa-bridge queue ls` shows what waits and the last error',
    });
  }
  return {
    healthy: problems.length === 0,
    state: problems.length > 0 ? 'unhealthy' : warnings.length > 0 ? 'degraded' : 'healthy',
    problems,
    warnings,
  };
}
