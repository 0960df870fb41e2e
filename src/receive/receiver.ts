/**
 * The receive path of one modem: indication -> read -> decode -> (multipart) -> filter -> spool -> delete.
 *
 * Invariants (the rules that keep messages alive):
 * - An SMS leaves the SIM (AT+CMGD) or is acknowledged (AT+CNMA) only after its spool record (or part record, or
 *   quarantine record) is durable.
 * - Two reads agree (a PDU has no checksum: one hex digit changed on a noisy UART decodes to a plausible wrong amount).
 *   A stored SMS (+CMTI -> AT+CMGR, or a sweep's AT+CMGL) is read again with AT+CMGR before anything is decided, and
 *   again until two reads give the same PDU (MAX_READS reads at most); only the PDU two reads agree on is decoded and
 *   spooled. Reads that never agree are quarantined together (every version read) and the index is deleted. That
 *   confirming read is also the re-check before AT+CMGD (it ran in the same scheduler task, with no command between
 *   it and the delete), so a confirmed SMS costs the same commands as before: two reads and a delete. When several
 *   +CMTI wait, ./batch.ts reads them together: AT+CMGL twice is the pair of reads of every slot, and the confirming
 *   listing is the re-check before the batch's deletes (only other slots' AT+CMGD come between it and a slot's own:
 *   deleting slot j cannot put a new SMS into slot k, which is still occupied).
 * - +CMT (direct delivery) has no index to read again and must be acknowledged within the SMSC's limit: its PDU is
 *   spooled when the decoder's strict structural checks pass (<length> equals the octets, every field complete, UDL
 *   neither beyond the data nor short of it) and the record says readsAgreed 1 (stored SMS: 2). A +CMT with octets
 *   after its UDL is not deliverable: one changed UDL digit truncates the text ("Rp 50000" -> "Rp 50") and looks the
 *   same, so it is quarantined raw and acknowledged like any undecodable PDU. What cannot be done here: a corruption
 *   that leaves a +CMT structurally valid (a changed digit inside the text) is not detected; the SMSC's redelivery of
 *   the same SMS is one record (same id), a redelivered copy that differs is a second record.
 * - User data running past its UDL (real SMSCs send it) in a stored SMS is decoded by the UDL once two reads agree; the
 *   extra octets are logged and kept in the record (extraOctets). A stored PDU shorter than its UDL is undecodable.
 * - Record ids derive from the SMS itself, so a message read twice (crash between spool write and delete, a modem that
 *   reports each SMS twice, a sweep racing a +CMTI) is one record.
 * - Multipart parts are spooled individually; the joined message is written before the parts are removed, so a crash
 *   at any point loses nothing; after the timeout the parts present are joined with visible gap markers.
 * - Multipart parts are split into messages and joined by ./parts.ts (PartAssembler): parts never mix, ages run on
 *   a monotonic clock, parts of modems renamed or removed in config are joined by the receiver given `adoptPartsOf`.
 * - A PDU that cannot be decoded is quarantined raw (modem + index), logged as an error, and only then deleted.
 * - Filtered-out messages are handled per policy: archive (spool 'ignored', then delete), delete, or keep on the SIM;
 *   keep is bounded (half the SIM's slots, keepOrArchive): past it they are archived, so the SIM never fills.
 * - Several +CMTI waiting when a read task starts are read as one batch (./batch.ts: AT+CMGL twice, every spool write
 *   at once, AT+CMGD per slot once all are durable); a lone one keeps AT+CMGR, AT+CMGR, AT+CMGD. +CMT is not batched.
 * - Event-driven: +CMTI is read at once. Sweeps (AT+CMGL) run at start, after reconnect/reboot, on a safety-net
 *   interval, and when storage is (nearly) full.
 * - Every command goes through the modem's one scheduler (src/modem/scheduler.ts), one task at a time: +CMT (direct
 *   delivery) tasks are 'urgent' so AT+CNMA is sent within the SMSC's limit (a sweep runs them between its items);
 *   reads, deletes and multipart work are 'receive'; sweeps are 'maintenance'. Without a scheduler in the options the
 *   receiver makes a private one (unit tests).
 * - The operator's `sms delete N` through the daemon is handled here too (operatorDelete, ./operator-delete.ts): inside
 *   the operator's one task, slot N is confirmed, decided and spooled by this code, and deleted only once durable.
 * - stop() withdraws the receiver's queued tasks (the SIM still holds those SMS) and waits for the one in progress.
 * - Storages: a +CMTI / +CDSI is read in the memory it names. One naming another memory than the modem's chosen one
 *   (a Quectel storing in ME while SM is selected) is handled inside modem.inStorage() (AT+CPMS there and back within
 *   the task), by the same per-slot pipeline; it is never batched and never kept by policy 'keep' (archived instead).
 *   Sweeps list the chosen memory, then every other memory that can hold received SMS (modem.receiveStorages()); one
 *   whose AT+CPMS answer shows it empty is not listed. A read that answers empty (+CMS ERROR: 321, a bare OK) for an
 *   index the modem announced, not handled lately, is checked with the batch's two listings before the slot counts as
 *   empty; an announced SMS no listing shows is logged and every memory is swept. stats.storages: each memory's fill.
 */
import { createHash } from 'node:crypto';
import { setMaxListeners, type EventEmitter } from 'node:events';
import type { Logger } from '../log.js';
import type { DecodedSms, StoredPdu } from '../sms/types.js';
import type { PartRecord, QuarantineRecord, SimIdentity, SmsRecord, SpoolArea } from '../spool/types.js';
import { SPOOL_RECORD_VERSION } from '../spool/types.js';
import { decodeDeliver, STATUS_REPORT_REASON } from '../sms/pdu.js';
import { newSmsRecord, PartAssembler } from './parts.js';
import type { OtherSendersPolicy } from '../config.js';
import { AtCommandError, errorMessage } from '../errors.js';
import { AtScheduler, ModemUnavailableError, type TaskContext, type TaskPriority } from '../modem/scheduler.js';
import { BatchReader, isOutgoing, MAX_BATCH_SLOTS, type PartsHolder, type SlotAction } from './batch.js';
import { confirmRead } from './confirm-read.js';
import type { StorageFill } from '../modem/modem.js';
import { SimStorage } from './sim-storage.js';
import { deleteHandled, type HandledAs, type OperatorDeleteResult } from './operator-delete.js';
/** Hears what a spool write (or no write) did for one SMS: the operator's `sms delete` says it. */
type Report = (handled: HandledAs) => void;

/** What the receiver needs of a modem (src/modem/modem.ts satisfies it). */
export interface ReceiveModem extends EventEmitter {
  listSms(which?: 'all' | 'unread'): Promise<StoredPdu[]>;
  readSms(index: number): Promise<StoredPdu | undefined>;
  deleteSms(index: number): Promise<void>;
  acknowledgeDirect(): Promise<void>;
  /** The memory init chose (indications without a memory name mean it); absent: one memory only. */
  readonly homeStorage?: string | undefined;
  /** Runs `work` with `storage` as the read/delete memory (src/modem/modem.ts inStorage). */
  inStorage?<T>(storage: string, work: (fill: { used: number; total: number } | undefined) => Promise<T>): Promise<T>;
  /** Memories to sweep, the chosen one first. */
  receiveStorages?(): string[];
  /** Each memory's fill as last seen. */
  storageFills?(): StorageFill[];
}

/** What the receiver needs of the spool (src/spool/store.ts satisfies it). */
export interface ReceiveSpool {
  putPending(rec: SmsRecord): Promise<{ created: boolean; area: SpoolArea }>;
  putIgnored(rec: SmsRecord): Promise<{ created: boolean; area?: SpoolArea }>;
  putQuarantine(rec: QuarantineRecord): Promise<{ created: boolean; area?: SpoolArea }>;
  putPart(rec: PartRecord): Promise<{ created: boolean; area?: SpoolArea }>;
  listParts(): Promise<PartRecord[]>;
  deleteParts(ids: string[]): Promise<void>;
}

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
  /** The modem is simulated: every record written carries `simulated: true` (spool/types.ts). */
  simulated?: boolean;
}

/** What the receiver needs of the modem's scheduler (AtScheduler satisfies it; the receiver ignores ctx.target). */
export interface ReceiveScheduler {
  schedule<R>(options: { priority: TaskPriority; label: string; signal?: AbortSignal }, fn: (ctx: TaskContext<unknown>) => Promise<R>): Promise<R>;
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

type Task = {
  label: string;
  run: (ctx: TaskContext<unknown>) => Promise<void>;
  /** Called when the task is withdrawn or refused before it ran (stop, disconnect). */
  dropped?: () => void;
};

export { MAX_READS } from './confirm-read.js';

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
  private readonly monotonic: () => number;
  /** The SIM's storage: how full, and the messages kept by policy 'keep' (sim-storage.ts). */
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
    received: 0, spooled: 0, ignored: 0, quarantined: 0, duplicates: 0, partsWaiting: 0, sweeps: 0,
    lastSweepAt: undefined, lastError: undefined,
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
      stats: this.stats,
      storeMessage: (rec, accepted) => this.storeMessage(rec, accepted),
      ...(options.simulated === true ? { simulated: true } : {}),
      ...(options.adoptPartsOf ? { adoptPartsOf: options.adoptPartsOf } : {}),
    });
    this.storage = new SimStorage({
      ...(options.storageUsage ? { usage: options.storageUsage } : {}),
      sweep: (reason) => this.requestSweep(reason),
      log: this.log,
    });
    this.batch = new BatchReader({
      modem: options.modem, log: this.log, kept: this.storage.kept, monotonic: this.monotonic,
      decide: (stored, readsAgreed, parts) => this.decide(stored, readsAgreed, parts, false),
      release: (stored) => this.release(stored),
      handleIndex: (index) => this.readAnnounced(index, { at: this.now(), listed: true }),
      handleRead: (first) => this.handle(first),
      assemble: (parts) => this.parts.assembleFamiliesOf(parts),
      checkStorage: () => this.storage.check(),
      requeue: (indexes) => indexes.forEach((index) => this.onIndication(index)),
      slotFailed: (err, index, what) => {
        const at = index === undefined ? '' : ` at index ${index}`;
        this.stats.lastError = `${what}${at}: ${errorMessage(err)}`;
        this.log.error({ err, index }, `could not handle SMS${at}: ${what}: ${errorMessage(err)}`);
        this.sweepIfStorageFull(err);
      },
      counted: () => this.stats.received++,
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
    this.enqueue({ label: 'finish multipart groups', run: () => this.parts.assembleAll(false) });
    this.sweepTimer = setInterval(() => this.requestSweep('interval'), this.o.sweepIntervalMs);
    this.sweepTimer.unref();
    const expiryEvery = Math.max(1000, Math.min(30_000, Math.floor(this.o.multipartTimeoutMs / 4)));
    this.expiryTimer = setInterval(() => this.enqueue({ label: 'multipart timeout check', run: () => this.parts.assembleAll(true) }), expiryEvery);
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
          await this.batch.run(taken, ctx);
          return;
        }
        await this.readAnnounced(index, { at: announcedAt }, ctx);
        await this.storage.checkEvery(10);
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
    this.log.info({ storage: memory, index, selected: this.o.modem.homeStorage }, `SMS announced in storage ${memory} (not the selected ${this.o.modem.homeStorage}): read there`);
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
  private async inMemory<T>(memory: string, work: (fill: { used: number; total: number } | undefined) => Promise<T>): Promise<T> {
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
  private async readAnnounced(index: number, announced: { at: number; listed?: boolean }, ctx?: TaskContext<unknown>): Promise<void> {
    const stored = await this.o.modem.readSms(index);
    if (stored) {
      await this.handle(stored);
      return;
    }
    const where = this.foreign ?? this.o.modem.homeStorage ?? '';
    const released = this.releasedAt.get(`${where}:${index}`);
    if (released !== undefined && Math.abs(announced.at - released) < HANDLED_LATELY_MS) {
      this.log.debug({ storage: where, index }, 'index empty when read (handled already: the SMS was announced twice)');
      return;
    }
    if (!announced.listed && ctx) {
      this.log.info({ storage: where, index }, `AT+CMGR=${index} answered empty for an SMS the modem announced${where ? ` in ${where}` : ''}: checking with a listing`);
      await this.batch.run([index], ctx);
      return;
    }
    this.log.warn({ storage: where, index }, `SMS announced at ${where ? `${where} ` : ''}index ${index} is neither readable nor listed there: sweeping every storage`);
    this.requestSweep('announced SMS not found');
  }

  private onDirect(ev: { pdu: string; length: number }): void {
    if (this.stopped) return;
    this.enqueue(
      {
        label: 'direct delivery (+CMT)',
        run: async () => {
          await this.handle({ index: undefined, stat: 0, length: ev.length, pdu: ev.pdu });
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
      this.scheduler.exclusive('receiver paused', () => (started(), held)).catch((err: unknown) => {
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
    if (this.stopped || modem !== this.o.modem) throw new ModemUnavailableError(this.o.sim.modem, `sms delete ${index}`, 'is not receiving (reconnecting?)');
    return deleteHandled(index, {
      readSms: (i) => this.o.modem.readSms(i),
      confirmRead: (first) => confirmRead(this.o.modem, first, this.log),
      decide: (stored, report) => this.decide(stored, 2, undefined, false, report),
      quarantineDisagreeing: (first, reads, report) => this.quarantineReads(first, reads, report),
      release: (stored) => this.release(stored),
      assemble: (part) => this.parts.assembleFamilyOf(part),
      counted: () => this.stats.received++,
    });
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
    if (seen > 0 || reason !== 'interval') this.log.info({ reason, found, handled: seen }, `sweep (${reason}): ${list.length} on SIM${elsewhere.length > 0 ? `, ${elsewhere.join(', ')}` : ''}`);
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
        await this.handle(stored);
      } catch (err) {
        this.stats.lastError = errorMessage(err);
        this.log.error({ err, index: stored.index, storage: this.foreign }, `could not handle SMS at ${this.foreign ? `${this.foreign} ` : ''}index ${stored.index}: ${errorMessage(err)}`);
        this.sweepIfStorageFull(err);
      }
    }
    return seen;
  }

  /** Handles one stored or directly delivered PDU, end to end. */
  private async handle(read: StoredPdu): Promise<void> {
    this.stats.received++;
    let stored = read;
    let readsAgreed = 1;
    if (read.index !== undefined) {
      const confirmed = await confirmRead(this.o.modem, read, this.log);
      if (confirmed.kind === 'gone') {
        this.log.debug({ index: read.index }, 'index empty when read again (already handled)');
        return;
      }
      if (confirmed.kind === 'disagree') {
        await this.quarantineReads(read, confirmed.reads);
        await this.o.modem.deleteSms(read.index);
        this.noteReleased(read.index);
        if (this.foreign === undefined) this.storage.forget(read.index);
        return;
      }
      stored = confirmed.stored;
      readsAgreed = 2;
    }
    const action = await this.decide(stored, readsAgreed, undefined, true);
    if (action.kind === 'keep') return;
    const part = action.write ? await action.write() : undefined;
    await this.release(stored);
    if (part) await this.parts.assembleFamilyOf(part);
  }

  /**
   * What one confirmed (or +CMT) PDU needs, without sending a command: kept on the SIM, or an optional spool write
   * (started by the caller) and then its release. A multipart part's write resolves to the part when it is new (its
   * family is joined after the release). `parts`: the batch's shared parts listing; `mayQuery`: false inside a batch
   * (no command may come between its confirming listing and its deletes). `report`: the operator's delete (keep is
   * archive then), told what was written.
   */
  private async decide(stored: StoredPdu, readsAgreed: number, parts: PartsHolder | undefined, mayQuery: boolean, report?: Report): Promise<SlotAction> {
    const decoded = decodeDeliver(stored);
    if (!decoded.ok && decoded.reason.startsWith(STATUS_REPORT_REASON)) {
      // The bridge never asks for delivery reports (CNMI ds=0); one left by a test send is not an incoming SMS.
      this.log.info({ index: stored.index }, 'SMS-STATUS-REPORT on the modem (not an incoming SMS): deleted');
      report?.({ spooled: 'none', reason: 'an SMS-STATUS-REPORT, not an incoming SMS' });
      return { kind: 'release', stored };
    }
    if (!decoded.ok) return { kind: 'release', stored, write: () => this.quarantine(stored, decoded.reason, stored.pdu, undefined, report) };
    const sms = decoded.sms;
    if (sms.extraOctets !== undefined) {
      this.log.warn(
        { index: stored.index, sender: sms.originator, extraOctets: sms.extraOctets },
        `SMS user data runs past its UDL: decoded by the UDL, ${sms.extraOctets.length / 2} extra octet(s) kept in the record: ${sms.extraOctets}`,
      );
    }
    const verdict = this.o.accept(sms.originator);
    // Policy 'keep' holds slots of the chosen memory only; in another memory such an SMS is archived.
    const policy = !verdict.accept && this.o.otherSenders === 'keep' && stored.index !== undefined && this.foreign !== undefined ? 'archive'
      : !verdict.accept && this.o.otherSenders === 'keep' && stored.index !== undefined ? (report ? 'archive' : await this.storage.keepOrArchive(stored.index, mayQuery)) : this.o.otherSenders;
    if (!verdict.accept && policy !== 'archive') {
      if (policy === 'keep' && stored.index !== undefined) {
        this.storage.keep(stored.index, stored.pdu);
        this.log.info({ index: stored.index, sender: sms.originator }, 'SMS from a sender not accepted: kept on the SIM (policy keep)');
        return { kind: 'keep' };
      }
      // 'delete', or 'keep' for a +CMT that was never stored (it cannot be kept: acknowledge it).
      this.stats.ignored++;
      this.log.info({ index: stored.index, sender: sms.originator }, 'SMS from a sender not accepted: deleted (policy delete)');
      report?.({ spooled: 'none', reason: 'sender not accepted (policy delete)' });
      return { kind: 'release', stored };
    }
    if (sms.concat && sms.concat.total > 1) {
      const c = sms.concat;
      const write = async (): Promise<DecodedSms | void> => {
        const created = await this.parts.store(sms, readsAgreed, parts);
        report?.({ spooled: 'part', part: `${c.sequence}/${c.total} (ref ${c.reference})`, created });
        return created ? sms : undefined;
      };
      return { kind: 'release', stored, write };
    }
    const rec = newSmsRecord(this.o.sim, sms, sms.text, [stored.pdu], this.now());
    rec.readsAgreed = readsAgreed;
    if (sms.extraOctets !== undefined) rec.extraOctets = sms.extraOctets;
    if (this.o.simulated === true) rec.simulated = true;
    return { kind: 'release', stored, write: () => this.storeMessage(rec, verdict.accept, report) };
  }

  private async storeMessage(rec: SmsRecord, accepted: boolean, report?: Report): Promise<void> {
    if (accepted) {
      const r = await this.o.spool.putPending(rec);
      report?.({ spooled: 'pending', id: rec.id, created: r.created });
      if (r.created) {
        this.stats.spooled++;
        this.log.info({ id: rec.id, sender: rec.sender, chars: rec.text.length, parts: rec.multipart?.total }, 'SMS received and spooled');
      } else {
        this.stats.duplicates++;
        this.log.info({ id: rec.id, area: r.area }, 'SMS already in the spool (read twice): not spooled again');
      }
    } else {
      rec.ignoredReason = 'sender not accepted';
      const r = await this.o.spool.putIgnored(rec);
      report?.({ spooled: 'ignored', id: rec.id, created: r.created });
      if (r.created) this.stats.ignored++;
      this.log.info({ id: rec.id, sender: rec.sender }, 'SMS from a sender not accepted: archived (policy archive)');
    }
  }

  /** Reads of one index that never agreed: quarantined together (every version read). */
  private quarantineReads(first: StoredPdu, reads: StoredPdu[], report?: Report): Promise<void> {
    const versions = [...new Set(reads.map((r) => r.pdu.trim().toUpperCase()))];
    return this.quarantine(first, `${reads.length} reads of index ${first.index} gave ${versions.length} different PDUs; none confirmed`, versions.join('\n'), 'reads disagree', report);
  }

  private async quarantine(stored: StoredPdu, reason: string, raw = stored.pdu, what = 'undecodable PDU', report?: Report): Promise<void> {
    const id = 'q-' + createHash('sha256').update(`${this.o.sim.modem}\n${raw}`).digest('hex').slice(0, 32);
    const rec: QuarantineRecord = {
      v: SPOOL_RECORD_VERSION,
      kind: 'quarantine',
      id,
      modem: this.o.sim.modem,
      raw,
      reason: `${what}: ${reason}`,
      receivedAt: new Date(this.now()).toISOString(),
    };
    if (stored.index !== undefined) rec.index = stored.index;
    const r = await this.o.spool.putQuarantine(rec);
    report?.({ spooled: 'quarantine', id, created: r.created });
    this.stats.quarantined++;
    this.log.error({ id, index: stored.index, reason, pdu: raw.slice(0, 400) }, `${what} quarantined: ${reason}`);
  }

  /**
   * Removes a durably handled SMS from the modem: AT+CNMA for +CMT, AT+CMGD otherwise. The index was read last by
   * confirmRead() in this same task (no command in between), or by the batch's confirming AT+CMGL (only other slots'
   * deletes in between), which is the re-check that it still holds this PDU.
   */
  private async release(stored: StoredPdu): Promise<void> {
    if (stored.index === undefined) {
      await this.o.modem.acknowledgeDirect();
      return;
    }
    await this.o.modem.deleteSms(stored.index);
    this.noteReleased(stored.index);
    if (this.foreign === undefined) this.storage.forget(stored.index);
  }

  private noteReleased(index: number): void {
    const now = this.now();
    for (const [key, at] of this.releasedAt) if (now - at > HANDLED_LATELY_MS) this.releasedAt.delete(key);
    this.releasedAt.set(`${this.foreign ?? this.o.modem.homeStorage ?? ''}:${index}`, now);
  }
}

/** An empty read of an announced slot released this close to the announcement is the same SMS announced twice. */
const HANDLED_LATELY_MS = 60_000;
