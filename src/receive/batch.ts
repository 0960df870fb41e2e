/**
 * Batched reads: several +CMTI waiting are read with one AT+CMGL pair (the first read and the confirming read of every
 * slot). Only slots both listings show with the same PDU go through the pipeline ('batch': all writes at once, AT+CMGD
 * once all are durable, no other command from the second listing on); the others (changed, missing, a failed listing,
 * a listing mostly of kept or outgoing slots) are returned for the per-slot path. planBatch, worthBatching: PURE.
 */
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import type { TaskContext } from '../modem/scheduler.js';
import type { StoredPdu } from '../sms/types.js';
import { samePdu } from './confirm-read.js';
import type { RunResult, SlotPipeline } from './pipeline.js';
import { isKeptIn, isOutgoing, type SimStorage } from '../modem/sim-memory.js';

/** Slots handled by one batch at most (announced first): the deletes of one batch hold the modem (no +CMT ack between). */
export const MAX_BATCH_SLOTS = 32;
/** After a failed AT+CMGL, batches are not tried again for this long (ms, monotonic): the per-slot path is used. */
export const BATCH_BACKOFF_MS = 5 * 60_000;

export interface BatchPlan {
  /** Both listings show the same PDU: decoded, spooled and deleted in the batch (the second listing's copy). */
  agreed: StoredPdu[];
  /** The PDU changed between the listings: per-slot path, starting from the second listing's copy. */
  changed: StoredPdu[];
  /** Announced indexes the listings do not confirm (missing from either): per-slot path (AT+CMGR). */
  recheck: number[];
  /** Listed slots left alone on purpose: kept by policy, or outgoing copies. */
  leftAlone: number;
}

/**
 * Compares the two listings. `taken`: the announced indexes of this batch (at most MAX_BATCH_SLOTS); `kept`: index ->
 * PDU (upper case) of SMS kept on the SIM on purpose. Unannounced slots fill the batch up to `maxSlots`.
 */
export function planBatch(input: {
  taken: readonly number[];
  first: readonly StoredPdu[];
  second: readonly StoredPdu[];
  kept: ReadonlyMap<number, string>;
  maxSlots?: number;
}): BatchPlan {
  const maxSlots = input.maxSlots ?? MAX_BATCH_SLOTS;
  const taken = new Set(input.taken);
  const second = new Map<number, StoredPdu>();
  for (const s of input.second) if (s.index !== undefined) second.set(s.index, s);
  const plan: BatchPlan = { agreed: [], changed: [], recheck: [], leftAlone: 0 };
  const listed = new Set<number>();
  // Announced slots first (in the listing's order), then the others, while there is room.
  const ordered = [
    ...input.first.filter((s) => s.index !== undefined && taken.has(s.index)),
    ...input.first.filter((s) => s.index !== undefined && !taken.has(s.index)),
  ];
  let room = Math.max(maxSlots, taken.size);
  for (const one of ordered) {
    const index = one.index!;
    if (listed.has(index)) continue; // a listing that shows one index twice: the first line counts
    listed.add(index);
    const announced = taken.has(index);
    if (isOutgoing(one)) {
      plan.leftAlone++;
      if (announced) plan.recheck.push(index); // an index announced as incoming but listed as outgoing: read it alone
      continue;
    }
    const two = second.get(index);
    if (isKeptIn(input.kept, index, one.pdu) && two && samePdu(one, two)) {
      plan.leftAlone++;
      continue;
    }
    if (!announced && room <= 0) continue; // left on the SIM for the next batch or sweep
    if (!two) {
      if (announced) plan.recheck.push(index);
      continue;
    }
    room--;
    if (samePdu(one, two)) plan.agreed.push({ ...two, index, stat: two.stat ?? one.stat });
    else plan.changed.push({ ...two, index });
  }
  for (const index of input.taken) if (!listed.has(index)) plan.recheck.push(index);
  return plan;
}

/** Whether a batch is worth a listing: two or more waiting, not backing off, and not mostly slots it would leave alone. */
export function worthBatching(s: {
  waiting: number;
  leftAloneLastSeen: number;
  kept: number;
  nowMs: number;
  backoffUntilMs: number;
}): boolean {
  if (s.waiting < 2 || s.nowMs < s.backoffUntilMs) return false;
  return Math.max(s.kept, s.leftAloneLastSeen) <= s.waiting;
}

export interface BatchReaderOptions {
  modem: { listSms(which?: 'all' | 'unread'): Promise<StoredPdu[]> };
  pipeline: SlotPipeline;
  /** The kept slots (left alone) and the storage check made right after the first listing. */
  storage: Pick<SimStorage, 'kept' | 'check'>;
  log: Logger;
  monotonic(): number;
}

/** What a batch did, and what it leaves to the per-slot path. */
export interface BatchOutcome {
  /** The slots both listings agreed on, taken through the pipeline ('batch'). */
  handled?: RunResult;
  /** In order: indexes for the per-slot path, each with the read already made when there is one. */
  perSlot: Array<{ index: number; read?: StoredPdu }>;
  /** The storage check found the SIM nearly full: sweep for this reason. */
  sweep?: string;
}

export class BatchReader {
  private backoffUntil = Number.NEGATIVE_INFINITY;
  /** Slots the last listing showed that a batch leaves alone (kept, outgoing): a batch is not tried while more wait. */
  private leftAloneLastSeen = 0;
  readonly stats = { batches: 0, batchedSlots: 0, fallbacks: 0 };

  constructor(private readonly o: BatchReaderOptions) {}

  /** Whether `waiting` indexes (the task's own included) should be read as a batch now. */
  worth(waiting: number): boolean {
    return worthBatching({
      waiting,
      leftAloneLastSeen: this.leftAloneLastSeen,
      kept: this.o.storage.kept.size,
      nowMs: this.o.monotonic(),
      backoffUntilMs: this.backoffUntil,
    });
  }

  /**
   * Lists twice and takes the agreed slots of `taken` (announced indexes, at most MAX_BATCH_SLOTS) and what the listing
   * adds through the pipeline; returns the rest for the per-slot path. `memory`: as SlotPipeline.run's.
   */
  async run(taken: number[], ctx: TaskContext<unknown>, memory?: string): Promise<BatchOutcome> {
    const { log, storage } = this.o;
    let first: StoredPdu[];
    try {
      first = await this.o.modem.listSms('all');
    } catch (err) {
      return this.fallback(taken, err, 'first');
    }
    // Right after a listing: no AT+CPMS? needed; keep policy decisions need no command later. A failure (an AT+CPMS?
    // that timed out) is logged and the batch goes on: the indexes it took are read here or nowhere.
    const sweep = await storage
      .check()
      .catch(
        (err: unknown) =>
          void log.warn({ err: errorMessage(err) }, 'batch: storage check failed; reading the batch anyway'),
      );
    const also = sweep === undefined ? {} : { sweep };
    const incoming = first.filter((s) => !isOutgoing(s));
    const leftAlone =
      first.length - incoming.length + incoming.filter((s) => isKeptIn(storage.kept, s.index, s.pdu)).length;
    this.leftAloneLastSeen = leftAlone;
    if (leftAlone > taken.length) {
      // Mostly slots the batch would leave alone: a second listing is not worth its bytes. The sweep's path instead.
      log.debug(
        { listed: first.length, leftAlone, waiting: taken.length },
        'batch: listing mostly kept/outgoing slots; announced indexes read one by one',
      );
      const byIndex = new Map(first.map((s) => [s.index, s]));
      return {
        perSlot: taken.map((index) => {
          const listed = byIndex.get(index);
          return listed && !isOutgoing(listed) ? { index, read: listed } : { index };
        }),
        ...also,
      };
    }
    await ctx.runUrgent(); // +CMT acknowledgements may go between the two listings, never after the second
    let second: StoredPdu[];
    try {
      second = await this.o.modem.listSms('all');
    } catch (err) {
      return { ...this.fallback(taken, err, 'confirming'), ...also };
    }
    // ---- from here to the last AT+CMGD: no other command (the second listing is the re-check before each delete).
    const plan = planBatch({ taken, first, second, kept: storage.kept });
    this.stats.batches++;
    this.stats.batchedSlots += plan.agreed.length;
    const handled = await this.o.pipeline.run(plan.agreed, 'batch', memory);
    // ---- the deletes (and the joins after them) are done; the per-slot leftovers may send commands again.
    if (plan.agreed.length > 0 || plan.recheck.length > 0 || plan.changed.length > 0) {
      log.debug(
        {
          listed: first.length,
          agreed: plan.agreed.length,
          changed: plan.changed.length,
          recheck: plan.recheck.length,
          leftAlone: plan.leftAlone,
        },
        'batch read',
      );
    }
    const changed = plan.changed.map((s) => ({ index: s.index!, read: s }));
    if (changed.length > 0) {
      const indexes = changed.map((c) => c.index);
      log.warn(
        { indexes },
        `SMS changed between the two listings at index ${indexes.join(', ')}: read again one by one`,
      );
    }
    return { handled, perSlot: [...changed, ...plan.recheck.map((index) => ({ index }))], ...also };
  }

  /** A listing failed: nothing was decided; the announced indexes take the per-slot path, batches pause. */
  private fallback(taken: number[], err: unknown, which: string): BatchOutcome {
    this.stats.fallbacks++;
    this.backoffUntil = this.o.monotonic() + BATCH_BACKOFF_MS;
    this.o.log.warn(
      { err, waiting: taken.length },
      `batch: the ${which} AT+CMGL failed (${errorMessage(err)}): reading the ${taken.length} waiting indexes one by one; no batch for ${BATCH_BACKOFF_MS / 60_000} min`,
    );
    return { perSlot: taken.map((index) => ({ index })) };
  }
}
