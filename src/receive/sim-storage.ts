/**
 * What the receiver knows of one SIM's SMS storage (no commands of its own: it asks `usage()`).
 * - At NEARLY_FULL of the slots check() warns and returns the reason to sweep; afterSweep() warns when still that full.
 * - Policy keep is bounded: kept SMS (slot index + PDU, so a sweep leaves them alone) take at most KEEP_SHARE of the
 *   slots; keepOrArchive() answers 'archive' past that, so kept messages never fill the SIM.
 */
import type { Logger } from '../log.js';

/** Fraction of SIM storage use that triggers an extra sweep. */
const NEARLY_FULL = 0.8;
/** Policy keep: share of the SIM's slots kept messages may take; the limit when the capacity is unknown; warn at. */
const KEEP_SHARE = 0.5;
const KEEP_LIMIT_UNKNOWN = 10;
const KEEP_WARN_AT = 0.8;

/** A stored outgoing message (<stat> 2 STO UNSENT, 3 STO SENT): not an SMS anybody sent us. PURE. */
export const isOutgoing = (s: { stat?: number | undefined }): boolean => s.stat === 2 || s.stat === 3;

/** Whether slot `index` holds the PDU kept there on purpose (`kept`: index -> upper-cased PDU). PURE. */
export function isKeptIn(kept: ReadonlyMap<number, string>, index: number | undefined, pdu: string): boolean {
  return index !== undefined && kept.get(index) === pdu.toUpperCase();
}

export interface StorageUse {
  used: number;
  total: number;
}

export interface SimStorageOptions {
  /** How full the SIM is (the receiver's storageUsage); absent: the checks do nothing, the keep limit is the fallback. */
  usage?: () => Promise<StorageUse | undefined>;
  log: Logger;
}

export class SimStorage {
  /** Indexes kept on the SIM by the 'keep' policy, with their PDU (upper-cased). */
  readonly kept = new Map<number, string>();
  private total: number | undefined;
  private keepWarned = false;
  private sinceCheck = 0;

  constructor(private readonly o: SimStorageOptions) {}

  /** check() on every n-th call (the per-slot path after each announced SMS); check() restarts the count. */
  async checkEvery(n: number): Promise<string | undefined> {
    if (!this.o.usage || ++this.sinceCheck < n) return undefined;
    return this.check();
  }

  /** Asks for the usage; returns the reason to sweep now when the SIM is nearly full. */
  async check(): Promise<string | undefined> {
    this.sinceCheck = 0;
    if (!this.o.usage) return undefined;
    const use = this.note(await this.o.usage());
    if (use && use.used / use.total >= NEARLY_FULL) {
      this.o.log.warn({ used: use.used, total: use.total }, 'SIM storage nearly full: sweeping');
      return 'storage nearly full';
    }
    return undefined;
  }

  async afterSweep(): Promise<void> {
    if (!this.o.usage) return;
    const use = this.note(await this.o.usage().catch(() => undefined));
    if (use && use.used / use.total >= NEARLY_FULL) {
      this.o.log.warn({ used: use.used, total: use.total, kept: this.kept.size }, 'SIM storage nearly full after sweep (messages kept by policy "keep"?)');
    }
  }

  isKept(index: number | undefined, pdu: string): boolean {
    return isKeptIn(this.kept, index, pdu);
  }

  keep(index: number, pdu: string): void {
    this.kept.set(index, pdu.toUpperCase());
  }

  forget(index: number): void {
    this.kept.delete(index);
  }

  /** Policy keep for one more SMS at `index` (see the header); `mayQuery`: the capacity may be asked for now. */
  async keepOrArchive(index: number, mayQuery: boolean): Promise<'keep' | 'archive'> {
    if (this.total === undefined && this.o.usage && mayQuery) {
      this.total = (await this.o.usage().catch(() => undefined))?.total || undefined;
    }
    const limit = this.total ? Math.max(1, Math.floor(this.total * KEEP_SHARE)) : KEEP_LIMIT_UNKNOWN;
    const kept = this.kept.size + (this.kept.has(index) ? 0 : 1);
    if (kept > limit) {
      this.o.log.warn({ index, kept: this.kept.size, limit, simTotal: this.total }, `policy keep: ${this.kept.size} SMS already kept on the SIM (limit ${limit}); this one is archived instead, so the SIM cannot fill`);
      return 'archive';
    }
    if (kept >= Math.ceil(limit * KEEP_WARN_AT) && !this.keepWarned) {
      this.keepWarned = true;
      this.o.log.warn({ kept, limit, simTotal: this.total }, `policy keep: ${kept} SMS kept on the SIM (limit ${limit}); past the limit they are archived instead`);
    }
    return 'keep';
  }

  /** Remembers the capacity of a usage answer; returns it when it can be judged (a known, non-zero total). */
  private note(use: StorageUse | undefined): StorageUse | undefined {
    if (!use || !(use.total > 0)) return undefined;
    this.total = use.total;
    return use;
  }
}
