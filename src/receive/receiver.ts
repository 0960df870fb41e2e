/**
 * The receive side of one modem: intake (+CMTI, +CDSI, +CMT), the queue of receive tasks on the modem's scheduler, and
 * sweeps. Each slot goes through ./pipeline.ts (read -> confirm -> decide -> write -> release); the receiver adds up
 * what the runs return and says what failed. docs/how-a-message-travels.md has the rules; here:
 * - A +CMTI is read at once; several waiting are read as one batch (./batch.ts); +CMT tasks are 'urgent', reads
 *   'receive', sweeps 'maintenance'. stop() withdraws the queued tasks (the SIM still holds those SMS).
 * - Sweeps list the chosen memory, then every other one holding received SMS; a slot announced in another memory is
 *   read there (modem.inStorage), never batched. An announced slot read empty, not released lately, is checked by a
 *   batch's two listings before it counts as empty; one no listing shows is logged and every memory swept.
 */
import { setMaxListeners } from 'node:events';
import type { OtherSendersPolicy } from '../config.js';
import { AtCommandError, errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import { AtScheduler, ModemUnavailableError, type TaskContext, type TaskPriority } from '../modem/scheduler.js';
import type { StorageFill } from '../modem/modem.js';
import type { SupervisorStatus } from '../modem/supervisor.js';
import type { StoredPdu } from '../sms/types.js';
import type { SimIdentity } from '../spool/types.js';
import { BatchReader, MAX_BATCH_SLOTS } from './batch.js';
import { operatorResult, type OperatorDeleteResult } from './operator-delete.js';
import { PartAssembler, type Joined } from './parts.js';
import { SlotPipeline, type RunResult, type SlotInput, type Stage } from './pipeline.js';
import { isOutgoing, SimStorage } from '../modem/sim-memory.js';
import { addCounts, type ReceiveModem, type ReceiveSpool } from './types.js';

export type { ReceiveModem, ReceiveSpool } from './types.js';

export interface ReceiverOptions {
  modem: ReceiveModem;
  spool: ReceiveSpool;
  sim: SimIdentity;
  accept: (sender: string) => { accept: boolean; rule?: string };
  otherSenders: OtherSendersPolicy;
  multipartTimeoutMs: number;
  sweepIntervalMs: number;
  logger: Logger;
  /** Storage capacity check for the "nearly full" sweep trigger; optional. */
  storageUsage?: () => Promise<{ used: number; total: number } | undefined>;
  now?: () => number;
  /** Monotonic milliseconds for multipart group and tombstone ages (default performance.now; tests inject one). */
  monotonic?: () => number;
  /**
   * Parts of the modems this names are this receiver's to join too: modems renamed or removed in config, whose parts
   * would otherwise wait forever. Give it to one receiver only (the daemon: the first configured modem).
   */
  adoptPartsOf?: (modem: string) => boolean;
  /** The modem's scheduler (attached by the supervisor); a private one, attached to `modem`, when absent. */
  scheduler?: ReceiveScheduler;
}

/** What the receiver needs of the modem's scheduler (AtScheduler satisfies it; the receiver ignores ctx.target). */
export interface ReceiveScheduler {
  schedule<R>(
    options: { priority: TaskPriority; label: string; signal?: AbortSignal },
    fn: (ctx: TaskContext<unknown>) => Promise<R>,
  ): Promise<R>;
  exclusive<R>(label: string, fn: (ctx: TaskContext<unknown>) => Promise<R>): Promise<R>;
}

export interface ReceiverStats {
  received: number;
  /** Records written to the spool (accepted senders; not yet delivered: the forwarder does that). */
  spooled: number;
  ignored: number;
  quarantined: number;
  duplicates: number;
  partsWaiting: number;
  sweeps: number;
  lastSweepAt: string | undefined;
  lastError: string | undefined;
  /** Each SMS memory's fill as the modem last showed it (SM, ME, ...), after every sweep. */
  storages?: StorageFill[] | undefined;
}

/** A supervised modem's status with this receiver's counts (status.json, the status board, metrics). */
export type ModemSupervisorStatus = SupervisorStatus<ReceiverStats>;

type Task = {
  label: string;
  run: (ctx: TaskContext<unknown>) => Promise<void>;
  /** Called when the task is withdrawn or refused before it ran (stop, disconnect). */
  dropped?: () => void;
};

export { MAX_READS } from './confirm-read.js';

/** How the per-slot failures of a batch are named in logs and lastError. */
const STAGE_WORDS: Record<Stage, string> = {
  read: 'per-slot read',
  confirm: 'confirming read',
  decide: 'decide',
  write: 'spool write (left on the SIM)',
  release: 'AT+CMGD',
  join: 'multipart join',
};

export class Receiver {
  private readonly o: ReceiverOptions;
  private readonly log: Logger;
  private readonly now: () => number;
  /** Multipart parts: spooled, split into messages, joined (./parts.ts). */
  private readonly parts: PartAssembler;
  private readonly scheduler: ReceiveScheduler;
  /** Aborted by stop(): withdraws this receiver's queued tasks. */
  private withdraw = new AbortController();
  /** Tasks queued or running; drained() waits for zero. */
  private outstanding = 0;
  private drainWaiters: Array<() => void> = [];
  /** Set while pause() holds the scheduler; resume() releases it. */
  private releasePause: (() => void) | undefined;
  private stopped = true;
  private sweepTimer: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  /**
   * +CMTI indexes waiting (queued, not yet read), each with the token of its task: a batch that takes an index removes
   * it here, and the task finding another token (or none) knows its index was read already.
   */
  private readonly waiting = new Map<number, object>();
  /** Several waiting indexes are read with one AT+CMGL pair (./batch.ts). */
  private readonly batch: BatchReader;
  /** Every slot's way: read -> confirm -> decide -> write -> release (./pipeline.ts). */
  private readonly pipeline: SlotPipeline;
  private readonly monotonic: () => number;
  /** The SIM's storage: how full, and the messages kept by policy 'keep' (modem/sim-memory.ts). */
  private readonly storage: SimStorage;
  private sweepQueued = false;
  /** Indications for another memory than the chosen one, waiting (`ME:67`): a second one for the same slot is dropped. */
  private readonly foreignWaiting = new Set<string>();
  /** The memory of the work in progress when it is not the chosen one (inside modem.inStorage). */
  private foreign: string | undefined;
  /** Slots released (deleted) lately, `memory:index` -> time: an empty read of an announced slot released around then is no loss. */
  private readonly releasedAt = new Map<string, number>();
  private readonly listeners: Array<[string, (...args: never[]) => void]> = [];
  readonly stats: ReceiverStats = {
    received: 0,
    spooled: 0,
    ignored: 0,
    quarantined: 0,
    duplicates: 0,
    partsWaiting: 0,
    sweeps: 0,
    lastSweepAt: undefined,
    lastError: undefined,
  };

  constructor(options: ReceiverOptions) {
    this.o = options;
    this.log = options.logger.child({ modem: options.sim.modem });
    this.now = options.now ?? Date.now;
    this.monotonic = options.monotonic ?? (() => performance.now());

    if (options.scheduler) {
      this.scheduler = options.scheduler;
    } else {
      const own = new AtScheduler<ReceiveModem>({ name: options.sim.modem });
      own.attach(options.modem);
      this.scheduler = own;
    }
    this.parts = new PartAssembler({
      spool: options.spool,
      sim: options.sim,
      multipartTimeoutMs: options.multipartTimeoutMs,
      logger: this.log,
      now: this.now,
      monotonic: this.monotonic,
      accept: options.accept,
      ...(options.adoptPartsOf ? { adoptPartsOf: options.adoptPartsOf } : {}),
    });
    this.storage = new SimStorage({ ...(options.storageUsage ? { usage: options.storageUsage } : {}), log: this.log });
    this.pipeline = new SlotPipeline({
      modem: options.modem,
      spool: options.spool,
      parts: this.parts,
      storage: this.storage,
      sim: options.sim,
      accept: options.accept,
      otherSenders: options.otherSenders,
      now: this.now,
      log: this.log,
    });
    this.batch = new BatchReader({
      modem: options.modem,
      pipeline: this.pipeline,
      storage: this.storage,
      log: this.log,
      monotonic: this.monotonic,
    });
  }

  /** Subscribes to the modem, sweeps, finishes multipart groups left by a previous run, starts the timers. */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.withdraw = new AbortController();
    setMaxListeners(0, this.withdraw.signal); // one listener per queued task of this receiver (a burst queues many)
    this.on('sms', (ev: { index: number; storage?: string }) => this.onIndication(ev.index, ev.storage));
    // +CDSI: a status report stored in the memory it names (read there; decide() deletes a status report).
    this.on('status-report', (ev: { index?: number; storage?: string }) => {
      if (typeof ev.index === 'number') this.onIndication(ev.index, ev.storage);
    });
    this.on('sms-direct', (ev: { pdu: string; length: number }) => this.onDirect(ev));
    this.on('storage-full', () => {
      this.log.warn('modem reports SMS storage full: sweeping');
      this.requestSweep('storage full');
    });
    this.requestSweep('start');
    this.enqueue({ label: 'finish multipart groups', run: () => this.joinParts(false) });
    this.sweepTimer = setInterval(() => this.requestSweep('interval'), this.o.sweepIntervalMs);
    this.sweepTimer.unref();
    const expiryEvery = Math.max(1000, Math.min(30_000, Math.floor(this.o.multipartTimeoutMs / 4)));
    this.expiryTimer = setInterval(
      () => this.enqueue({ label: 'multipart timeout check', run: () => this.joinParts(true) }),
      expiryEvery,
    );
    this.expiryTimer.unref();
  }

  /** Stops taking work and waits for the task in progress (the queue is dropped: the SIM still holds those SMS). */
  async stop(): Promise<void> {
    if (this.stopped) return this.drained(); // a second stop() (the supervisor's teardown) must also wait for the task in progress
    this.stopped = true;
    for (const [event, fn] of this.listeners) this.o.modem.off(event, fn as (...args: unknown[]) => void);
    this.listeners.length = 0;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    if (this.expiryTimer) clearInterval(this.expiryTimer);
    this.withdraw.abort(new Error('receiver stopped'));
    this.resume();
    this.waiting.clear();
    this.sweepQueued = false;
    await this.drained();
  }

  /** Resolves when every task this receiver queued has run or was withdrawn (tests, benchmarks). */
  drained(): Promise<void> {
    if (this.outstanding === 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.drainWaiters.push(resolve));
  }

  requestSweep(reason: string): void {
    if (this.sweepQueued || this.stopped) return;
    this.sweepQueued = true;
    this.enqueue(
      {
        label: `sweep (${reason})`,
        run: async (ctx) => {
          this.sweepQueued = false;
          await this.sweep(reason, ctx);
        },
        dropped: () => (this.sweepQueued = false),
      },
      'maintenance',
    );
  }

  private on(event: string, fn: (...args: never[]) => void): void {
    this.o.modem.on(event, fn as (...args: unknown[]) => void);
    this.listeners.push([event, fn]);
  }

  private onIndication(index: number, storage?: string): void {
    if (this.stopped) return;
    const announcedAt = this.now();
    const memory = storage === undefined || storage === '' ? undefined : storage.toUpperCase();
    const home = this.o.modem.homeStorage;
    if (memory !== undefined && home !== undefined && memory !== home && this.o.modem.inStorage) {
      this.onForeignIndication(index, memory, announcedAt);
      return;
    }
    if (this.waiting.has(index)) {
      this.log.debug({ index }, 'indication for an index already queued (duplicate +CMTI)');
      return;
    }
    const token = {};
    this.waiting.set(index, token);
    this.enqueue({
      label: `read index ${index}`,
      dropped: () => {
        if (this.waiting.get(index) === token) this.waiting.delete(index);
      },
      run: async (ctx) => {
        if (this.waiting.get(index) !== token) return; // read by a batch already
        this.waiting.delete(index);
        // Two or more waiting: one AT+CMGL pair for all of them (./batch.ts); a lone SMS keeps AT+CMGR, AT+CMGR, AT+CMGD.
        if (!ctx.interrupted && this.batch.worth(this.waiting.size + 1)) {
          const taken = [index];
          for (const other of this.waiting.keys()) {
            if (taken.length >= MAX_BATCH_SLOTS) break;
            taken.push(other);
          }
          for (const other of taken) this.waiting.delete(other);
          await this.readBatch(taken, ctx);
          return;
        }
        await this.readAnnounced(index, { at: announcedAt }, ctx);
        const full = await this.storage.checkEvery(10);
        if (full !== undefined) this.requestSweep(full);
      },
    });
  }

  /** An indication naming another memory than the chosen one: read there, one slot per task, never batched. */
  private onForeignIndication(index: number, memory: string, announcedAt: number): void {
    const key = `${memory}:${index}`;
    if (this.foreignWaiting.has(key)) {
      this.log.debug({ storage: memory, index }, 'indication for a slot already queued (duplicate +CMTI)');
      return;
    }
    this.foreignWaiting.add(key);
    this.log.info(
      { storage: memory, index, selected: this.o.modem.homeStorage },
      `SMS announced in storage ${memory} (not the selected ${this.o.modem.homeStorage}): read there`,
    );
    this.enqueue({
      label: `read ${memory} index ${index}`,
      dropped: () => this.foreignWaiting.delete(key),
      run: async (ctx) => {
        this.foreignWaiting.delete(key);
        await this.inMemory(memory, () => this.readAnnounced(index, { at: announcedAt }, ctx));
      },
    });
  }

  /**
   * Runs `work` with `memory` as the modem's read/delete memory (the chosen one: at once). Slots there are not kept
   * by policy 'keep' (archived instead: the receiver's kept map belongs to the chosen memory). The fills are noted.
   */
  private async inMemory<T>(
    memory: string,
    work: (fill: { used: number; total: number } | undefined) => Promise<T>,
  ): Promise<T> {
    const m = this.o.modem;
    if (!m.inStorage || m.homeStorage === undefined || memory === m.homeStorage) return work(undefined);
    try {
      return await m.inStorage(memory, async (fill) => {
        this.foreign = memory;
        try {
          return await work(fill);
        } finally {
          this.foreign = undefined;
        }
      });
    } finally {
      this.stats.storages = m.storageFills?.();
    }
  }

  /**
   * The per-slot path of one announced index (AT+CMGR, the confirming AT+CMGR, spool, AT+CMGD). A read that answers
   * empty for a slot not handled lately is not believed at once (a Quectel answers a bare OK for an index of another
   * memory, some firmware 321): the batch's two listings check it (and handle it when they show it); `listed` says
   * that was done already, then the loss is logged and every memory swept.
   */
  private async readAnnounced(
    index: number,
    announced: { at: number; listed?: boolean },
    ctx?: TaskContext<unknown>,
  ): Promise<void> {
    const run = await this.runSingle(index);
    if (run.slots[0]?.outcome !== 'empty') return;
    const where = this.foreign ?? this.o.modem.homeStorage ?? '';
    const released = this.releasedAt.get(`${where}:${index}`);
    if (released !== undefined && Math.abs(announced.at - released) < HANDLED_LATELY_MS) {
      this.log.debug({ storage: where, index }, 'index empty when read (handled already: the SMS was announced twice)');
      return;
    }
    if (!announced.listed && ctx) {
      this.log.info(
        { storage: where, index },
        `AT+CMGR=${index} answered empty for an SMS the modem announced${where ? ` in ${where}` : ''}: checking with a listing`,
      );
      await this.readBatch([index], ctx);
      return;
    }
    this.log.warn(
      { storage: where, index },
      `SMS announced at ${where ? `${where} ` : ''}index ${index} is neither readable nor listed there: sweeping every storage`,
    );
    this.requestSweep('announced SMS not found');
  }

  /**
   * One slot through the pipeline ('single'): an index to read now, or a read already made (a listing's line, a
   * +CMT). Its counters are added; its failure is thrown (the caller's task or sweep reports it).
   */
  private async runSingle(slot: SlotInput): Promise<RunResult> {
    const run = this.settle(await this.pipeline.run([slot], 'single', this.foreign));
    const failed = run.failures[0];
    if (failed) throw failed.error;
    return run;
  }

  /**
   * Reads `taken` (announced indexes) as a batch, then what the batch leaves to the per-slot path, in order. After a
   * failure there (a modem that stopped answering) the announced indexes not reached are queued again as tasks of
   * their own instead of waiting out one timeout each here; unannounced ones stay for the next batch or sweep.
   */
  private async readBatch(taken: number[], ctx: TaskContext<unknown>): Promise<void> {
    const outcome = await this.batch.run(taken, ctx, this.foreign);
    if (outcome.sweep !== undefined) this.requestSweep(outcome.sweep);
    if (outcome.handled) {
      this.settle(outcome.handled);
      for (const f of outcome.handled.failures) this.slotFailed(f.error, f.index, STAGE_WORDS[f.stage]);
    }
    const announced = new Set(taken);
    for (const [i, { index, read }] of outcome.perSlot.entries()) {
      try {
        if (read) await this.runSingle(read);
        else await this.readAnnounced(index, { at: this.now(), listed: true });
      } catch (err) {
        this.slotFailed(err, index, STAGE_WORDS.read);
        const rest = outcome.perSlot
          .slice(i + 1)
          .map((s) => s.index)
          .filter((x) => announced.has(x));
        for (const again of rest) this.onIndication(again);
        return;
      }
    }
  }

  /** Adds a run's counters to the stats and notes the slots it released; returns the run. */
  private settle(run: RunResult): RunResult {
    addCounts(this.stats, run.counts);
    for (const slot of run.slots)
      if (slot.outcome === 'released' && slot.index !== undefined) this.noteReleased(slot.index);
    return run;
  }

  /** Joins multipart messages (complete ones, or with `expiredToo` those past the timeout too); counts what was written. */
  private async joinParts(expiredToo: boolean): Promise<void> {
    const joined: Joined & { partsWaiting?: number } = await this.parts.assembleAll(expiredToo);
    for (const w of joined.written) addCounts(this.stats, w.counts);
    if (joined.partsWaiting !== undefined) this.stats.partsWaiting = joined.partsWaiting;
    if (joined.failed !== undefined) throw joined.failed;
  }

  /** An error of one slot of a batch: logged, counted, a full SIM swept. */
  private slotFailed(err: unknown, index: number | undefined, what: string): void {
    const at = index === undefined ? '' : ` at index ${index}`;
    this.stats.lastError = `${what}${at}: ${errorMessage(err)}`;
    this.log.error({ err, index }, `could not handle SMS${at}: ${what}: ${errorMessage(err)}`);
    this.sweepIfStorageFull(err);
  }

  private onDirect(ev: { pdu: string; length: number }): void {
    if (this.stopped) return;
    this.enqueue(
      {
        label: 'direct delivery (+CMT)',
        run: async () => {
          await this.runSingle({ index: undefined, stat: 0, length: ev.length, pdu: ev.pdu });
        },
      },
      'urgent',
    );
  }

  private enqueue(task: Task, priority: TaskPriority = 'receive'): void {
    if (this.stopped) return;
    this.outstanding++;
    this.scheduler
      .schedule({ priority, label: task.label, signal: this.withdraw.signal }, (ctx) => this.runTask(task, ctx))
      .catch((err: unknown) => {
        // runTask() never rejects: this is the scheduler refusing or withdrawing the task before it ran (stop, port
        // closed). Nothing was read or deleted; the SIM still holds the SMS and the next sweep finds it.
        task.dropped?.();
        this.log.debug({ task: task.label, err }, `receive task not run: ${task.label}: ${errorMessage(err)}`);
      })
      .finally(() => {
        if (--this.outstanding > 0) return;
        const waiters = this.drainWaiters;
        this.drainWaiters = [];
        for (const resolve of waiters) resolve();
      });
  }

  private async runTask(task: Task, ctx: TaskContext<unknown>): Promise<void> {
    try {
      await task.run(ctx);
    } catch (err) {
      // The SMS stays on the SIM (nothing was deleted before durability): the next sweep retries it.
      this.stats.lastError = `${task.label}: ${errorMessage(err)}`;
      this.log.error({ err, task: task.label }, `receive task failed: ${task.label}: ${errorMessage(err)}`);
      this.sweepIfStorageFull(err);
    }
  }

  /**
   * Holds the modem's scheduler (exclusive mode) after the task in progress and resolves when it is done; tasks and
   * indications arriving meanwhile are queued, not dropped, until resume(). (The supervisor holds the scheduler itself
   * while it re-initialises a rebooted modem; this is the same thing for a receiver on its own.)
   */
  async pause(): Promise<void> {
    if (this.releasePause) return;
    const held = new Promise<void>((resolve) => (this.releasePause = resolve));
    await new Promise<void>((started, failed) => {
      this.scheduler
        .exclusive('receiver paused', () => (started(), held))
        .catch((err: unknown) => {
          this.releasePause = undefined; // refused (scheduler detached or stopped): nothing is held
          failed(err);
        });
    });
  }

  resume(): void {
    const release = this.releasePause;
    this.releasePause = undefined;
    release?.();
  }

  /** The operator's `sms delete N` (./operator-delete.ts); call it inside a task on this scheduler, with its modem. */
  async operatorDelete(index: number, modem: unknown): Promise<OperatorDeleteResult> {
    if (this.stopped || modem !== this.o.modem)
      throw new ModemUnavailableError(this.o.sim.modem, `sms delete ${index}`, 'is not receiving (reconnecting?)');
    return operatorResult(index, this.settle(await this.pipeline.run([index], 'operator')));
  }

  /** `+CMS ERROR: 322` (memory full) from any command: the SIM needs emptying now, not at the next interval. */
  private sweepIfStorageFull(err: unknown): void {
    if (err instanceof AtCommandError && err.errorCode === 322 && /CMS/i.test(err.final ?? '')) {
      this.log.warn('modem reports SMS memory full (+CMS ERROR: 322): sweeping');
      this.requestSweep('storage full (+CMS ERROR: 322)');
    }
  }

  /**
   * Reads everything on the SIM and handles it. Runs as a scheduler task: between items it lets queued +CMT
   * acknowledgements go (they cannot wait for a long sweep), and it ends early when an exclusive task (re-init) waits.
   */
  private async sweep(reason: string, ctx: TaskContext<unknown>): Promise<{ seen: number }> {
    const list = await this.o.modem.listSms('all');
    this.stats.sweeps++;
    this.stats.lastSweepAt = new Date(this.now()).toISOString();
    let seen = await this.handleListed(list, ctx);
    let found = list.length;
    const elsewhere: string[] = [];
    // The other memories that can hold received SMS: AT+CPMS there (its answer tells the fill), a listing only when
    // something is there, AT+CPMS back. A memory the modem refuses is logged (modem.ts) and skipped for a while.
    for (const memory of (this.o.modem.receiveStorages?.() ?? []).slice(1)) {
      if (this.stopped || ctx.interrupted) break;
      try {
        await this.inMemory(memory, async (fill) => {
          if (fill && fill.used === 0) return;
          const there = await this.o.modem.listSms('all');
          found += there.length;
          if (there.length > 0) elsewhere.push(`${there.length} in ${memory}`);
          seen += await this.handleListed(there, ctx);
        });
      } catch (err) {
        this.stats.lastError = `sweep of storage ${memory}: ${errorMessage(err)}`;
        this.log.error({ err, storage: memory }, `sweep: could not look into storage ${memory}: ${errorMessage(err)}`);
      }
    }
    this.stats.storages = this.o.modem.storageFills?.();
    if (seen > 0 || reason !== 'interval')
      this.log.info(
        { reason, found, handled: seen },
        `sweep (${reason}): ${list.length} on SIM${elsewhere.length > 0 ? `, ${elsewhere.join(', ')}` : ''}`,
      );
    await this.storage.afterSweep();
    return { seen };
  }

  /** Handles every incoming SMS of one listing (the memory in use); returns how many it took on. */
  private async handleListed(list: readonly StoredPdu[], ctx: TaskContext<unknown>): Promise<number> {
    let seen = 0;
    for (const stored of list) {
      await ctx.runUrgent();
      if (this.stopped || ctx.interrupted) break; // held for a re-init: the sweep after it covers the rest
      if (isOutgoing(stored)) continue; // our own outgoing drafts/sent copies: not incoming SMS
      if (this.foreign === undefined && this.storage.isKept(stored.index, stored.pdu)) continue;
      seen++;
      try {
        await this.runSingle(stored);
      } catch (err) {
        this.stats.lastError = errorMessage(err);
        this.log.error(
          { err, index: stored.index, storage: this.foreign },
          `could not handle SMS at ${this.foreign ? `${this.foreign} ` : ''}index ${stored.index}: ${errorMessage(err)}`,
        );
        this.sweepIfStorageFull(err);
      }
    }
    return seen;
  }

  private noteReleased(index: number): void {
    const now = this.now();
    for (const [key, at] of this.releasedAt) if (now - at > HANDLED_LATELY_MS) this.releasedAt.delete(key);
    this.releasedAt.set(`${this.foreign ?? this.o.modem.homeStorage ?? ''}:${index}`, now);
  }
}

/** An empty read of an announced slot released this close to the announcement is the same SMS announced twice. */
const HANDLED_LATELY_MS = 60_000;
