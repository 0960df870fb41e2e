/**
 * What the running daemon reports about itself: the shape of its one status snapshot, which status.json, /healthz,
 * the metrics, the status page and `pulsa-bridge status` all read. Types only; the daemon builds the values.
 */
import type { BalanceResult } from './balance/watch.js';
import type { CanaryStatus } from './canary/types.js';
import type { ForwarderStats } from './forward/forwarder.js';
import type { Verdict } from './health/model.js';
import type { ModemSupervisorStatus as SupervisorStatus } from './receive/receiver.js';
import type { SpoolStats } from './spool/store.js';

/** A modem in status.json: its supervisor's status; the receiver counts carry `spooled` (records written to the spool). */
export type ModemStatus = Omit<SupervisorStatus, 'receiver'> & {
  receiver: (NonNullable<SupervisorStatus['receiver']> & { forwarded: number }) | undefined;
  /** The last balance check (periodic or on demand), when there was one. */
  balance?: BalanceResult;
};

/** The daemon's status without a health judgement (status.json of a daemon that predates the verdict has only this). */
export interface DaemonStatus {
  version: string;
  startedAt: string;
  webhookUrl: string;
  modems: ModemStatus[];
  forwarder: ForwarderStats;
  /** The health verdict (as /healthz answers), refreshed with each status.json write; `pulsa-bridge status` exits on it. */
  health?: Verdict;
  /** The scheduled test transfers (absent from a daemon without any, or one that predates them). */
  canaries?: CanaryStatus[];
  /** The spool's counts the verdict was judged on (in the snapshot; absent from status() alone). */
  spool?: SpoolStats;
}

/** The one status snapshot: status, the health verdict and the spool counts, judged together. */
export type StatusSnapshot = DaemonStatus & { health: Verdict; spool: SpoolStats };
