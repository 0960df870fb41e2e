/**
 * Batched reads on the receive path: several +CMTI indexes waiting are read with one AT+CMGL pair instead of an
 * AT+CMGR pair each, spooled concurrently, then deleted one by one. Used by ./receiver.ts inside one scheduler task.
 *
 * Contract (test/receive/batch.test.ts checks each line):
 * - Two listings agree before anything is decided: AT+CMGL=4 is the first read, AT+CMGL=4 again the confirming read.
 *   Only a slot both listings show with the same PDU (length and hex) is decoded, spooled and deleted here, from the
 *   second listing's copy (a slot whose <stat> went from unread to read is still the same PDU).
 * - Every spool write of the batch (putPending / putIgnored / putQuarantine / putPart) is started at once; AT+CMGD goes
 *   out only when ALL of them have settled, and only for the slots whose write resolved. A slot whose write failed stays
 *   on the SIM (the next sweep retries it; record ids make a second read one record). Between the confirming AT+CMGL and
 *   the deletes the task sends no other command, so that listing is the re-check just before each delete.
 * - A slot whose PDU changed between the listings (a new SMS in a freed slot, a noisy line) is never deleted on the
 *   strength of a listing: it goes to the per-slot path afterwards (AT+CMGR until two reads agree, or quarantine).
 *   An announced index missing from either listing (a line the parser skipped, or deleted meanwhile) is read by the
 *   per-slot path too (an empty slot costs one AT+CMGR); an unannounced slot missing from the second listing is
 *   skipped (gone; a sweep would find it if not).
 * - Slots the listing shows that were not announced (arrived meanwhile, left by a crash) are handled in the batch like
 *   a sweep would handle them, up to MAX_BATCH_SLOTS slots per batch (the announced ones first); slots kept on purpose
 *   (the receiver's `kept` map: same index, same PDU) and outgoing copies (<stat> 2/3) are left alone.
 * - When the listing would mostly carry slots the batch leaves alone (kept messages, outgoing copies: more than the
 *   waiting indexes), it is not worth its bytes: after such a first listing the announced indexes take the sweep's path
 *   (the listing is their first read, AT+CMGR confirms), and the next tasks do not batch while that many are left.
 * - A listing that fails (timeout: a modem whose answer is cut, an error) loses nothing: the announced indexes go to
 *   the per-slot path in the same task, and no batch is tried again for BATCH_BACKOFF_MS.
 * - Every index the batch took from the receiver's queue is handled within this task (batch or per-slot path): none is
 *   left waiting for a task that no longer exists.
 * - Multipart parts found in one batch share one parts listing for the retransmission checks (a part twice in the
 *   batch is spooled once) and their families are joined after the deletes, each family once; families share no
 *   record, so they are joined concurrently (their writes can share fsyncs).
 * - The storage check right after the first listing needs no command; if it fails anyway it is logged and the batch
 *   goes on.
 * planBatch() and worthBatching() are pure; BatchReader does the I/O through the host (the receiver).
 */
import type { Logger } from '../log.js';
import { isKeptIn } from './sim-storage.js';
import type { StoredPdu } from '../sms/types.js';
import type { DecodedSms } from '../sms/types.js';
import type { PartRecord } from '../spool/types.js';
import type { TaskContext } from '../modem/scheduler.js';
import { errorMessage } from '../errors.js';

/** Slots handled by one batch at most (announced first): the deletes of one batch hold the modem (no +CMT ack between). */
export const MAX_BATCH_SLOTS = 32;
/** After a failed AT+CMGL, batches are not tried again for this long (ms, monotonic): the per-slot path is used. */
export const BATCH_BACKOFF_MS = 5 * 60_000;

export const samePdu = (a: StoredPdu, b: StoredPdu): boolean => a.length === b.length && a.pdu.trim().toUpperCase() === b.pdu.trim().toUpperCase();

/** A stored outgoing message (<stat> 2 STO UNSENT, 3 STO SENT): not an SMS anybody sent us. */
export const isOutgoing = (s: StoredPdu): boolean => s.stat === 2 || s.stat === 3;

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
export function planBatch(input: { taken: readonly number[]; first: readonly StoredPdu[]; second: readonly StoredPdu[]; kept: ReadonlyMap<number, string>; maxSlots?: number }): BatchPlan {
  const maxSlots = input.maxSlots ?? MAX_BATCH_SLOTS;
  const taken = new Set(input.taken);
  const second = new Map<number, StoredPdu>();
  for (const s of input.second) if (s.index !== undefined) second.set(s.index, s);
  const plan: BatchPlan = { agreed: [], changed: [], recheck: [], leftAlone: 0 };
  const listed = new Set<number>();
  // Announced slots first (in the listing's order), then the others, while there is room.
  const ordered = [...input.first.filter((s) => s.index !== undefined && taken.has(s.index)), ...input.first.filter((s) => s.index !== undefined && !taken.has(s.index))];
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
export function worthBatching(s: { waiting: number; leftAloneLastSeen: number; kept: number; nowMs: number; backoffUntilMs: number }): boolean {
  if (s.waiting < 2 || s.nowMs < s.backoffUntilMs) return false;
  return Math.max(s.kept, s.leftAloneLastSeen) <= s.waiting;
}

/** What one agreed slot needs: nothing (kept on the SIM), or an optional spool write and then its delete. */
export type SlotAction =
  | { kind: 'keep' }
  | { kind: 'release'; stored: StoredPdu; write?: () => Promise<DecodedSms | void> };

/** What the batch needs of its receiver. */
export interface BatchHost {
  readonly modem: { listSms(which?: 'all' | 'unread'): Promise<StoredPdu[]> };
  readonly log: Logger;
  readonly kept: ReadonlyMap<number, string>;
  monotonic(): number;
  /** Decides one agreed slot (decode, filter, policy) without sending a command; the write is started by the batch. */
  decide(stored: StoredPdu, readsAgreed: number, parts: PartsHolder): Promise<SlotAction>;
  /** AT+CMGD of a slot whose record is durable (and forgets it in `kept`). */
  release(stored: StoredPdu): Promise<void>;
  /** The per-slot path for an index: AT+CMGR, confirming AT+CMGR(s), spool, AT+CMGD. */
  handleIndex(index: number): Promise<void>;
  /** The per-slot path from a read already made (the confirming reads are AT+CMGR). */
  handleRead(first: StoredPdu): Promise<void>;
  /** Joins the families of parts spooled by the batch (each family once). */
  assemble(parts: DecodedSms[]): Promise<void>;
  /** The storage check (once per batch; right after a listing it needs no command). */
  checkStorage(): Promise<void>;
  /** Queues announced indexes again (each its own task), when this batch stops before reaching them. */
  requeue(indexes: number[]): void;
  /** An error of one slot: logged, counted, a full SIM swept. */
  slotFailed(err: unknown, index: number | undefined, what: string): void;
  /** Counts a slot read and handled by the batch. */
  counted(): void;
}

/**
 * The parts listing shared by the multipart slots of one batch: fetched on first use, then each part spooled by the
 * batch is added to it, so a part listed twice is spooled once (see PartAssembler.store).
 */
export interface PartsHolder {
  snapshot?: Promise<PartRecord[]>;
}

export class BatchReader {
  private backoffUntil = Number.NEGATIVE_INFINITY;
  /** Slots the last listing showed that a batch leaves alone (kept, outgoing): a batch is not tried while more wait. */
  private leftAloneLastSeen = 0;
  /** The announced indexes of the batch running (requeued if it stops before them). */
  private announced = new Set<number>();
  readonly stats = { batches: 0, batchedSlots: 0, fallbacks: 0 };

  constructor(private readonly host: BatchHost) {}

  /** Whether `waiting` indexes (the task's own included) should be read as a batch now. */
  worth(waiting: number): boolean {
    return worthBatching({ waiting, leftAloneLastSeen: this.leftAloneLastSeen, kept: this.host.kept.size, nowMs: this.host.monotonic(), backoffUntilMs: this.backoffUntil });
  }

  /** Reads, spools and deletes the slots of `taken` (announced indexes, at most MAX_BATCH_SLOTS) and what the listing adds. */
  async run(taken: number[], ctx: TaskContext<unknown>): Promise<void> {
    const h = this.host;
    this.announced = new Set(taken);
    let first: StoredPdu[];
    try {
      first = await h.modem.listSms('all');
    } catch (err) {
      return this.fallback(taken, err, 'first');
    }
    // Right after a listing: no AT+CPMS? needed; keep policy decisions need no command later. A failure (an AT+CPMS?
    // that timed out) is logged and the batch goes on: the indexes it took are read here or nowhere.
    await h.checkStorage().catch((err: unknown) => h.log.warn({ err: errorMessage(err) }, 'batch: storage check failed; reading the batch anyway'));
    const incoming = first.filter((s) => !isOutgoing(s));
    const leftAlone = first.length - incoming.length + incoming.filter((s) => isKeptIn(h.kept, s.index, s.pdu)).length;
    this.leftAloneLastSeen = leftAlone;
    if (leftAlone > taken.length) {
      // Mostly slots the batch would leave alone: a second listing is not worth its bytes. The sweep's path instead.
      h.log.debug({ listed: first.length, leftAlone, waiting: taken.length }, 'batch: listing mostly kept/outgoing slots; announced indexes read one by one');
      const byIndex = new Map(first.map((s) => [s.index, s]));
      await this.oneByOne(taken, (index) => {
        const listed = byIndex.get(index);
        return listed && !isOutgoing(listed) ? h.handleRead(listed) : h.handleIndex(index);
      });
      return;
    }
    await ctx.runUrgent(); // +CMT acknowledgements may go between the two listings, never after the second
    let second: StoredPdu[];
    try {
      second = await h.modem.listSms('all');
    } catch (err) {
      return this.fallback(taken, err, 'confirming');
    }
    // ---- from here to the last AT+CMGD: no other command (the second listing is the re-check before each delete).
    const plan = planBatch({ taken, first, second, kept: h.kept });
    this.stats.batches++;
    this.stats.batchedSlots += plan.agreed.length;
    const parts: PartsHolder = {};
    const jobs: Array<{ action: Extract<SlotAction, { kind: 'release' }>; write: Promise<DecodedSms | void> }> = [];
    for (const stored of plan.agreed) {
      h.counted();
      let action: SlotAction;
      try {
        action = await h.decide(stored, 2, parts);
      } catch (err) {
        h.slotFailed(err, stored.index, 'decide');
        continue;
      }
      if (action.kind === 'keep') continue;
      jobs.push({ action, write: action.write ? action.write() : Promise.resolve() });
    }
    const written = await Promise.allSettled(jobs.map((j) => j.write));
    const newParts: DecodedSms[] = [];
    let deleteError: unknown;
    for (const [i, job] of jobs.entries()) {
      const outcome = written[i]!;
      if (outcome.status === 'rejected') {
        h.slotFailed(outcome.reason, job.action.stored.index, 'spool write (left on the SIM)');
        continue;
      }
      if (outcome.value) newParts.push(outcome.value);
      if (deleteError !== undefined) continue; // the modem stopped answering deletes: the rest stay on the SIM
      try {
        await h.release(job.action.stored);
      } catch (err) {
        deleteError = err;
        h.slotFailed(err, job.action.stored.index, 'AT+CMGD');
      }
    }
    // ---- the deletes are done; joins and the per-slot leftovers may send commands again.
    if (plan.agreed.length > 0 || plan.recheck.length > 0 || plan.changed.length > 0) {
      h.log.debug({ listed: first.length, agreed: plan.agreed.length, changed: plan.changed.length, recheck: plan.recheck.length, leftAlone: plan.leftAlone }, 'batch read');
    }
    if (newParts.length > 0) await this.guard(undefined, 'multipart join', () => h.assemble(newParts));
    const changed = new Map(plan.changed.map((s) => [s.index!, s]));
    if (changed.size > 0) h.log.warn({ indexes: [...changed.keys()] }, `SMS changed between the two listings at index ${[...changed.keys()].join(', ')}: read again one by one`);
    await this.oneByOne([...changed.keys(), ...plan.recheck], (index) => {
      const c = changed.get(index);
      return c ? h.handleRead(c) : h.handleIndex(index);
    });
  }

  /**
   * The per-slot path for each index, in order. After a failure (a modem that stopped answering) the announced indexes
   * not reached are queued again as tasks of their own instead of waiting out one timeout each here; unannounced
   * ones stay on the SIM for the next batch or sweep.
   */
  private async oneByOne(indexes: number[], fn: (index: number) => Promise<void>): Promise<void> {
    for (const [i, index] of indexes.entries()) {
      try {
        await fn(index);
      } catch (err) {
        this.host.slotFailed(err, index, 'per-slot read');
        const rest = indexes.slice(i + 1).filter((x) => this.announced.has(x));
        if (rest.length > 0) this.host.requeue(rest);
        return;
      }
    }
  }

  /** A listing failed: nothing was decided; the announced indexes take the per-slot path now, batches pause. */
  private async fallback(taken: number[], err: unknown, which: string): Promise<void> {
    this.stats.fallbacks++;
    this.backoffUntil = this.host.monotonic() + BATCH_BACKOFF_MS;
    this.host.log.warn({ err, waiting: taken.length }, `batch: the ${which} AT+CMGL failed (${errorMessage(err)}): reading the ${taken.length} waiting indexes one by one; no batch for ${BATCH_BACKOFF_MS / 60_000} min`);
    await this.oneByOne(taken, (index) => this.host.handleIndex(index));
  }

  /** Runs one slot's work; an error is reported and the next slot goes on (the SIM still holds what failed). */
  private async guard(index: number | undefined, what: string, fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      this.host.slotFailed(err, index, what);
    }
  }
}
