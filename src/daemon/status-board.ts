/**
 * The daemon's one status snapshot: status (modems, balance, forwarder) with the health verdict and the spool counts it
 * was judged on. status.json, /healthz, the metrics, the status page and the control socket's `status` all read
 * snapshot(); status() is the part without a judgement.
 * A snapshot is judged at most once per maxAgeMs (concurrent readers share one judgement) and anew after changed()
 * (a modem's state, a balance, an SMS spooled or delivered). A failed judgement is not reused.
 */
import type { BalanceResult } from '../balance/watch.js';
import type { CanaryStatus } from '../canary/types.js';
import type { ForwarderStats } from '../forward/forwarder.js';
import type { Verdict } from '../health/model.js';
import type { ModemSupervisorStatus as SupervisorStatus } from '../receive/receiver.js';
import type { SpoolStats } from '../spool/store.js';
import type { DaemonStatus, ModemStatus, StatusSnapshot } from '../status.js';

export interface StatusSources {
  version: string;
  startedAt: string;
  /** Masked: never the credentials or query values. */
  webhookUrl: string;
  modems(): SupervisorStatus[];
  balance(modem: string): BalanceResult | undefined;
  forwarder(): ForwarderStats;
  /** The canaries (absent or empty: none configured, nothing shown). */
  canaries?(): CanaryStatus[];
  /** The health monitor's verdict and the spool counts it judged. */
  judge(): Promise<Verdict & { spool: SpoolStats }>;
  maxAgeMs: number;
}

/**
 * status.json calls the count of records written to the spool `spooled`; releases before it called it `forwarded`,
 * which is kept (the same number) for one release, for readers of the old field.
 */
function withSpooledCount(s: SupervisorStatus): ModemStatus {
  return { ...s, receiver: s.receiver && { ...s.receiver, forwarded: s.receiver.spooled } };
}

export class StatusBoard {
  private lastHealth: Verdict | undefined;
  private snap: { atMs: number; value: Promise<StatusSnapshot> } | undefined;

  constructor(private readonly o: StatusSources) {}

  /** Something a reader shows changed: the next snapshot is judged anew. */
  readonly changed = (): void => {
    this.snap = undefined;
  };

  snapshot(): Promise<StatusSnapshot> {
    const now = Date.now();
    if (this.snap && now - this.snap.atMs < this.o.maxAgeMs) return this.snap.value;
    const value = this.o.judge().then(({ spool, ...verdict }) => {
      this.lastHealth = verdict;
      return { ...this.status(), health: this.lastHealth, spool };
    });
    const entry = { atMs: now, value };
    this.snap = entry;
    value.catch(() => {
      if (this.snap === entry) this.snap = undefined;
    });
    return value;
  }

  status(): DaemonStatus {
    const canaries = this.o.canaries?.();
    return {
      version: this.o.version,
      startedAt: this.o.startedAt,
      webhookUrl: this.o.webhookUrl,
      modems: this.o.modems().map((s) => {
        const status = withSpooledCount(s);
        const balance = this.o.balance(status.name);
        return balance ? { ...status, balance } : status;
      }),
      forwarder: this.o.forwarder(),
      ...(canaries?.length ? { canaries } : {}),
      ...(this.lastHealth ? { health: this.lastHealth } : {}),
    };
  }
}
