/**
 * The SMS memories of one modem, in one place. SmsMemories (the modem's side): which memory the SMS commands read and
 * delete in (AT+CPMS), the memories that hold received SMS, refusals remembered for a while, each memory's fill as
 * last seen. SimStorage (the receiver's side, no commands of its own): at NEARLY_FULL it asks for a sweep; policy
 * keep takes at most KEEP_SHARE of the slots, so kept messages never fill the SIM.
 * Invariant: after any work in another memory the chosen one is selected again before the next SMS command.
 */
import type { AtChannel } from '../at/types.js';
import { AtCommandError, BridgeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { ModemAt } from './commands.js';
import { describeFinal } from './error-codes.js';
import { parseCpmsQuery, parseCpmsSet, type StorageUsage } from './parse.js';

/** Memories that hold received SMS (27.005: SM the SIM, ME the modem, MT both); others (SR, BM) never do. */
const RECEIVE_MEMORIES = ['SM', 'ME', 'MT'];
/** A memory the modem refused to select is not tried again for this long. */
const REFUSED_FOR_MS = 10 * 60_000;

/** One memory's fill as the modem last reported it. */
export interface StorageFill {
  storage: string;
  used: number;
  total: number;
  /** ISO time of the answer that showed it. */
  checkedAt: string;
}

export interface SmsMemoriesOptions {
  channel: AtChannel;
  at: Pick<ModemAt, 'rethrowIfGone'>;
  name: string;
  log: Logger;
}

export class SmsMemories {
  /** The read/delete memory (mem1) as the modem has it now; undefined when unknown (before init, after a failed switch). */
  private readMemory: string | undefined;
  /** The memory the work in progress reads (inStorage); undefined: the one init chose. */
  private foreignMemory: string | undefined;
  /** Memories the modem refused to select, with the time (not tried again for REFUSED_FOR_MS). */
  private readonly refusedMemories = new Map<string, number>();
  private readonly fillsByMemory = new Map<string, StorageFill>();
  /** Use of the chosen memory as the last full listing saw it, kept current by deletes and indications. */
  private lastListing: { at: number; used: number } | undefined;

  constructor(private readonly o: SmsMemoriesOptions) {}

  /** Before init: what the modem has selected is unknown again. */
  forget(): void {
    this.lastListing = undefined;
    this.readMemory = undefined;
    this.foreignMemory = undefined;
  }

  /** Init chose `home` (undefined: the modem default kept) and reported its fill. */
  initialised(home: string | undefined, fill: { used: number; total: number } | undefined): void {
    this.readMemory = home;
    if (home !== undefined && fill) this.noteFill(home, fill);
  }

  /** Work is going on in another memory than the chosen one (inStorage). */
  get elsewhere(): boolean {
    return this.foreignMemory !== undefined;
  }

  /** AT+CPMS?: every memory's use, noted. */
  async usage(): Promise<StorageUsage[]> {
    const rows = parseCpmsQuery((await this.o.channel.run('AT+CPMS?')).lines);
    for (const row of rows) this.noteFill(row.memory, row);
    return rows;
  }

  /**
   * The memories to look for received SMS in: the chosen one (`home`) first, then every other memory AT+CPMS=? offers
   * that can hold received SMS (SM, ME). MT is the union of SM and ME (27.005): listed only when it is the chosen one,
   * then alone. A memory refused lately is left out. Empty when init kept the modem default (nothing to switch back to).
   */
  receiveStorages(home: string | undefined, offered: readonly string[], now: number = Date.now()): string[] {
    if (home === undefined) return [];
    if (home === 'MT') return ['MT'];
    const others = offered.filter(
      (m) => m !== home && m !== 'MT' && RECEIVE_MEMORIES.includes(m) && !this.refusedLately(m, now),
    );
    return [home, ...new Set(others)];
  }

  fills(): StorageFill[] {
    return [...this.fillsByMemory.values()].map((f) => ({ ...f }));
  }

  /**
   * Runs `work` with `storage` as the read/delete memory: AT+CPMS="<storage>" first (its answer's fill is handed to
   * `work`), the chosen memory (`home`) selected again after, also when `work` throws. A storage the modem refuses is a
   * BridgeError AT_ERROR naming it (and is left out of receiveStorages() for a while); the chosen memory itself, or
   * any memory when init kept the modem default, runs `work` at once.
   */
  async inStorage<T>(
    home: string | undefined,
    storage: string,
    work: (fill: { used: number; total: number } | undefined) => Promise<T>,
  ): Promise<T> {
    const want = storage.toUpperCase();
    if (home === undefined || want === home || want === '') return work(undefined);
    if (this.foreignMemory !== undefined && this.foreignMemory !== want)
      throw new BridgeError(
        'AT_ERROR',
        `${this.o.name}: storage ${want} asked for while working in ${this.foreignMemory}`,
      );
    const outer = this.foreignMemory;
    this.foreignMemory = want;
    try {
      const fill = await this.select(want);
      return await work(fill);
    } finally {
      this.foreignMemory = outer;
      await this.ensure(home).catch((err: unknown) => {
        this.o.at.rethrowIfGone(err);
        this.o.log.error(
          { err, storage: home },
          `could not select SMS storage ${home} again (AT+CPMS); retried before the next SMS command: ${err instanceof Error ? err.message : String(err)}`,
        );
      });
    }
  }

  /** Before every SMS command: mem1 is where the work in progress wants it (a failed switch back is retried here). */
  async ensure(home: string | undefined): Promise<void> {
    const want = this.foreignMemory ?? home;
    if (want === undefined || this.readMemory === want) return;
    await this.select(want);
  }

  /** A full listing of the memory being read saw `used` slots in use. */
  listed(home: string | undefined, used: number): void {
    if (this.foreignMemory === undefined) this.lastListing = { at: Date.now(), used };
    const memory = this.foreignMemory ?? home;
    const total = memory === undefined ? undefined : this.fillsByMemory.get(memory)?.total;
    if (memory !== undefined && total !== undefined) this.noteFill(memory, { used, total });
  }

  /** A slot of the memory being read was deleted. */
  deleted(home: string | undefined): void {
    if (this.lastListing && this.foreignMemory === undefined) this.lastListing.used--;
    const memory = this.foreignMemory ?? home;
    const fill = memory === undefined ? undefined : this.fillsByMemory.get(memory);
    if (fill && fill.used > 0) fill.used--;
  }

  /** A new SMS was announced in `storage` ('' : the chosen memory). */
  announced(home: string | undefined, storage: string): void {
    if (this.lastListing && (storage === '' || storage === home)) this.lastListing.used++;
  }

  /**
   * How full the memory received SMS land in is: the last full listing's count when it is at most `maxAgeMs` old and
   * the capacity is known from init (`capacity`), else AT+CPMS? (its rows are mem1 read/delete, mem2 write, mem3
   * receive: incoming SMS land in mem3).
   */
  async receiveUsage(
    home: string | undefined,
    capacity: { total: number } | undefined,
    maxAgeMs: number,
    now: number = Date.now(),
  ): Promise<{ used: number; total: number } | undefined> {
    if (this.lastListing && home !== undefined && capacity && now - this.lastListing.at <= maxAgeMs) {
      return { used: Math.max(0, Math.min(capacity.total, this.lastListing.used)), total: capacity.total };
    }
    const rows = await this.usage();
    return rows[2] ?? rows[0];
  }

  /** Points mem1 at `memory` (AT+CPMS="<memory>"); notes and returns the fill its answer shows. */
  private async select(memory: string): Promise<{ used: number; total: number } | undefined> {
    if (this.readMemory === memory) return this.fillsByMemory.get(memory);
    let lines: string[];
    const before = this.readMemory;
    try {
      this.readMemory = undefined; // unknown until the modem answered (a timeout leaves it unknown)
      lines = (await this.o.channel.run(`AT+CPMS="${memory}"`)).lines;
    } catch (err) {
      this.o.at.rethrowIfGone(err);
      if (err instanceof AtCommandError && err.code === 'AT_ERROR') {
        this.readMemory = before; // refused: the selection did not change (27.005)
        this.refusedMemories.set(memory, Date.now());
        this.o.log.error(
          { storage: memory, final: err.final },
          `the modem refuses to select SMS storage ${memory} (${describeFinal(err.final)}): SMS it announces there cannot be read; not tried again for ${REFUSED_FOR_MS / 60_000} minutes`,
        );
        throw new BridgeError(
          'AT_ERROR',
          `${this.o.name}: the modem refuses SMS storage ${memory} (${describeFinal(err.final)})`,
          { cause: err, hint: 'the SMS stays in the modem; `pulsa-bridge at AT+CPMS=?` shows the memories it offers' },
        );
      }
      throw err;
    }
    this.readMemory = memory;
    const fill = parseCpmsSet(lines)[0];
    if (fill) this.noteFill(memory, fill);
    return fill;
  }

  private refusedLately(memory: string, now: number): boolean {
    const at = this.refusedMemories.get(memory);
    return at !== undefined && now - at < REFUSED_FOR_MS;
  }

  private noteFill(storage: string, fill: { used: number; total: number }): void {
    this.fillsByMemory.set(storage.toUpperCase(), {
      storage: storage.toUpperCase(),
      used: fill.used,
      total: fill.total,
      checkedAt: new Date().toISOString(),
    });
  }
}

// ---- the receiver's view of the SIM's storage ---------------------------------------------------------------------
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
      this.o.log.warn(
        { used: use.used, total: use.total, kept: this.kept.size },
        'SIM storage nearly full after sweep (messages kept by policy "keep"?)',
      );
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
      this.o.log.warn(
        { index, kept: this.kept.size, limit, simTotal: this.total },
        `policy keep: ${this.kept.size} SMS already kept on the SIM (limit ${limit}); this one is archived instead, so the SIM cannot fill`,
      );
      return 'archive';
    }
    if (kept >= Math.ceil(limit * KEEP_WARN_AT) && !this.keepWarned) {
      this.keepWarned = true;
      this.o.log.warn(
        { kept, limit, simTotal: this.total },
        `policy keep: ${kept} SMS kept on the SIM (limit ${limit}); past the limit they are archived instead`,
      );
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
