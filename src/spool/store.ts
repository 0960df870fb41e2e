/**
 * The crash-safe on-disk spool: one directory per area (pending, sent, dead, ignored, quarantine, parts), one
 * self-verifying, signed file per record (codec.ts, files.ts). A put* / mark* / retry resolves only once the record is
 * durable (tmp -> fdatasync -> rename -> fsync dir; group-committed); a crash mid-move leaves the later state as truth.
 * Roles: one owner (the daemon: holds spool.lock, recovers at open, keeps the index) and any number of clients (the
 * `queue` CLI: no lock, no recovery; after a change they SIGHUP the owner, which rescan()s).
 * Operations on one id are serialized in-process; mark* re-read the file first, so a record a client dropped fails
 * with SpoolError 'not-found'. Emits 'pending' (id) when a record enters or returns to pending.
 */
import { spoolStats, type SpoolStats } from './stats.js';
import { EventEmitter } from 'node:events';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { errorMessage, SpoolError } from '../errors.js';
import type { Logger } from '../log.js';
import { AREAS, assertId, isLaterCopy, SMS_AREAS, type SmsArea } from './codec.js';
import { errnoCode, FOREIGN_DIR, RecordFiles } from './files.js';
import { clientKey, doneAdopting, keyFile, ownerKey } from './integrity-key.js';
import { markedDead, markedDelivered, markedRetry } from './marks.js';
import { defaultSignal, signalLockOwner, SpoolLock, type SignalSender } from './lock.js';
import { sortByReceived, type PendingEntry } from './pending-index.js';
import * as operator from './operator.js';
import { appendSentIndex, readSentIndex, writeSentIndex } from './sent-index.js';
import {
  clearTmp,
  emptyIndex,
  indexEntries,
  quarantineCorruptPending,
  restoreCorruptPending,
  scan,
  sentMetaOf,
  type ScanDeps,
  type SpoolIndex,
} from './scan.js';
import {
  SPOOL_RECORD_VERSION,
  type AnyRecord,
  type PartRecord,
  type QuarantineRecord,
  type SmsRecord,
  type SpoolArea,
} from './types.js';

export { readLockOwner, type SpoolLockOwner } from './lock.js';
export type { SpoolStats } from './stats.js';

export interface SpoolOptions {
  logger: Logger;
  /** fsync files and directories (default true). false only for tests / throwaway spools. */
  fsync?: boolean;
  /** Injected clock for prune, stats and the lock's startedAt (default: new Date()). */
  clock?: () => Date;
  /** 'owner' (default): takes spool.lock and recovers; 'client': no lock, no recovery (see the header). */
  role?: SpoolRole;
  /** How a client tells the owner to rescan (default: process.kill, skipping this very process without a SIGHUP handler). */
  signal?: SignalSender;
  /** Where the spool's integrity key is (integrity-key.ts): the state directory; default the spool directory. */
  keyDir?: string;
}

export type SpoolRole = 'owner' | 'client';

export class Spool extends EventEmitter {
  readonly dir: string;
  readonly role: SpoolRole;
  private readonly logger: Logger;
  private readonly clock: () => Date;
  private readonly signal: SignalSender;
  private readonly files: RecordFiles;
  private readonly scanDeps: ScanDeps;
  /** The primitives the operator commands (operator.ts) work with. */
  private readonly port: operator.SpoolPort;
  private ix: SpoolIndex = emptyIndex();
  private readonly locks = new Map<string, Promise<unknown>>();
  /** Operations wait for this before they start; rescan() holds it while it rebuilds the index. */
  private barrier: Promise<void> = Promise.resolve();
  private rescanChain: Promise<unknown> = Promise.resolve();
  private lastError: SpoolStats['lastError'];
  /** The owner's lock while it holds it. */
  private lock: SpoolLock | undefined;
  private closed = false;

  private constructor(dir: string, opts: SpoolOptions) {
    super();
    this.dir = dir;
    this.role = opts.role ?? 'owner';
    this.logger = opts.logger;
    this.clock = opts.clock ?? (() => new Date());
    this.signal = opts.signal ?? defaultSignal;
    this.files = new RecordFiles(dir, opts.fsync ?? true, this.logger);
    this.scanDeps = { files: this.files, logger: this.logger, clock: this.clock };
    this.port = {
      files: this.files,
      logger: this.logger,
      index: () => this.ix,
      now: () => this.clock(),
      withLock: (id, fn, nested) => this.withLock(id, fn, nested),
      locate: (id) => this.locate(id),
      readRecord: (area, id) => this.readRecord(area, id),
      moveSms: (from, to, rec) => this.moveSms(from, to, rec),
      notFound: (id, expected) => this.notFound(id, expected),
      forget: (area, id) => this.forget(area, id),
      woke: (id) => void this.emit('pending', id),
      notifyOwner: () => this.notifyOwner(),
      saveSentIndex: () =>
        this.role === 'owner' ? writeSentIndex(this.dir, this.ix.sent, this.logger) : Promise.resolve(),
    };
  }

  static async open(dir: string, opts: SpoolOptions): Promise<Spool> {
    const spool = new Spool(path.resolve(dir), opts);
    if (spool.role === 'client') {
      let isDir = false;
      try {
        isDir = (await fsp.stat(spool.dir)).isDirectory();
      } catch (err) {
        if (errnoCode(err) !== 'ENOENT')
          throw new SpoolError('io', `cannot open spool ${spool.dir}: ${errorMessage(err)}`, { cause: err });
      }
      if (!isDir) {
        throw new SpoolError('not-found', `no spool directory at ${spool.dir}`, {
          hint: 'check --spool or spool.dir in the config',
        });
      }
      const keyDir = opts.keyDir ?? spool.dir;
      const keyless = await spool.loadClientKey(keyDir);
      // Without a key every sent file is read too: a signed one anywhere means the key is elsewhere (below).
      spool.ix = await scan(spool.scanDeps, 'read', keyless ? new Map() : await readSentIndex(spool.dir, spool.logger));
      if (keyless && spool.ix.signed) {
        spool.files.setKey(
          undefined,
          `no integrity key at ${keyFile(keyDir)}, but the spool holds signed records: a record written unsigned would be quarantined by the daemon`,
          `give the daemon's config (--config FILE, whose stateDir holds spool.key) instead of or together with --spool`,
        );
      }
      return spool;
    }
    await spool.files.ensureSpoolDirs(['tmp', ...AREAS, FOREIGN_DIR]);
    spool.lock = await SpoolLock.acquire(spool.dir, { logger: spool.logger, clock: spool.clock });
    try {
      const keyDir = opts.keyDir ?? spool.dir;
      const { key, adopting } = await ownerKey(keyDir, opts.fsync ?? true, spool.logger);
      spool.files.setKey(key);
      await clearTmp(spool.scanDeps);
      // An adopting start reads every sent file too: the upgrade signs them (scan.ts).
      spool.ix = await scan(
        spool.scanDeps,
        'recover',
        adopting ? new Map() : await readSentIndex(spool.dir, spool.logger),
        { adoptUnsigned: adopting },
      );
      if (adopting && spool.ix.adoptFailed === 0) await doneAdopting(keyDir, opts.fsync ?? true);
      await writeSentIndex(spool.dir, spool.ix.sent, spool.logger); // compact, and rebuilt when it was missing
    } catch (err) {
      await spool.close();
      throw err;
    }
    return spool;
  }

  /**
   * Client: check records with the key where this user can read it; without it records are shown unchecked and
   * writes are refused (files.ts). A spool that has no key yet (never opened by a signing daemon) is written unsigned:
   * its owner signs such records at the start that creates the key; but when no key is found and the spool holds
   * signed records (the key is in a stateDir not given), writes are refused (open). Returns: no key was found.
   */
  private async loadClientKey(keyDir: string): Promise<boolean> {
    const { key, unreadable } = await clientKey(keyDir, this.dir, this.logger);
    this.files.setKey(key, unreadable);
    return key === undefined && unreadable === undefined;
  }

  /**
   * Wait for operations in flight, then (owner) remove the lock file. Idempotent. Writes after close() fail with
   * SpoolError 'io'; reads keep working on the last index.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.locks.values(), this.rescanChain]);
    const lock = this.lock;
    this.lock = undefined;
    await lock?.release();
  }

  // ---------------------------------------------------------------- rescan and the index

  /**
   * Re-read every area and rebuild the in-memory index (no tmp deletion, no quarantining, no duplicate removal).
   * Emits 'pending' for each pending record that is new to this process or changed on disk (another rev).
   * `added` / `removed` count `<area>/<id>` entries that appeared / disappeared (a move counts once in each).
   */
  async rescan(): Promise<{ added: number; removed: number }> {
    const run = this.rescanChain.then(() => this.rescanNow());
    this.rescanChain = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  private async rescanNow(): Promise<{ added: number; removed: number }> {
    const inFlight = [...this.locks.values()];
    let release: () => void = () => undefined;
    this.barrier = new Promise<void>((resolve) => {
      release = resolve;
    });
    let woke: string[];
    let counts: { added: number; removed: number };
    try {
      await Promise.all(inFlight);
      const before = this.ix;
      const after = await scan(this.scanDeps, 'read', before.sent);
      const oldEntries = indexEntries(before);
      const newEntries = indexEntries(after);
      counts = {
        added: [...newEntries].filter((e) => !oldEntries.has(e)).length,
        removed: [...oldEntries].filter((e) => !newEntries.has(e)).length,
      };
      woke = [...after.pending.values()]
        .filter((r) => {
          const old = before.pending.get(r.id);
          return old === undefined || (old.rev ?? 0) !== (r.rev ?? 0);
        })
        .map((r) => r.id); // delivery order: the index keeps it
      this.ix = after;
    } finally {
      release();
    }
    if (counts.added > 0 || counts.removed > 0) {
      this.logger.info(
        { ...counts, woke: woke.length },
        `spool: rescan found ${counts.added} new and ${counts.removed} removed entries`,
      );
    }
    for (const id of woke) this.emit('pending', id);
    return counts;
  }

  /**
   * Find where an id is on disk now (another process may have moved or removed it) and update the index for it.
   * Called inside the id's lock. A copy that cannot be parsed fails with SpoolError 'corrupt'.
   */
  private async locate(id: string): Promise<SmsArea | undefined> {
    let best: { area: SmsArea; rec: SmsRecord } | undefined;
    for (const area of SMS_AREAS) {
      const rec = await this.files.read(area, id);
      if (rec?.kind !== 'sms') continue;
      if (!best || isLaterCopy({ area, rev: rec.rev ?? 0 }, { area: best.area, rev: best.rec.rev ?? 0 }))
        best = { area, rec };
    }
    if (best) this.ix.sms.set(id, best.area);
    else this.ix.sms.delete(id);
    if (best?.area === 'sent') this.ix.sent.set(id, sentMetaOf(best.rec));
    else this.ix.sent.delete(id);
    if (best?.area === 'pending') this.ix.pending.set(best.rec);
    else this.ix.pending.delete(id);
    if ((await this.files.read('quarantine', id)) !== undefined) this.ix.quarantine.add(id);
    else this.ix.quarantine.delete(id);
    return best?.area;
  }

  /** From the in-memory copy (pending, parts) or the disk; a missing file is SpoolError 'not-found'. */
  private async readRecord(area: SpoolArea, id: string): Promise<AnyRecord> {
    const cached = area === 'pending' ? this.ix.pending.get(id) : area === 'parts' ? this.ix.parts.get(id) : undefined;
    if (cached) return structuredClone(cached) as AnyRecord;
    const rec = await this.files.read(area, id);
    if (!rec) throw new SpoolError('not-found', `record ${area}/${id}.json is gone (removed by another process?)`);
    return rec;
  }

  /** Durable move of an SMS record: write into `to`, then unlink from `from` (already gone is fine). */
  private async moveSms(from: SmsArea, to: SmsArea, rec: SmsRecord): Promise<void> {
    await this.files.write(to, rec);
    this.ix.sms.set(rec.id, to);
    if (to === 'pending') this.ix.pending.set(rec);
    if (to === 'sent') {
      this.ix.sent.set(rec.id, sentMetaOf(rec));
      if (this.role === 'owner') await appendSentIndex(this.dir, rec.id, sentMetaOf(rec), this.logger);
    }
    if (from !== to) {
      if (from === 'pending') this.ix.pending.delete(rec.id);
      await this.files.unlink(from, rec.id, true);
    }
  }

  /** Per-id chain. `nested`: called while holding another id's lock (must not wait for a rescan that waits for us). */
  private withLock<T>(id: string, fn: () => Promise<T>, nested = false): Promise<T> {
    if (this.closed) return Promise.reject(new SpoolError('io', `spool ${this.dir} is closed`));
    const prev = this.locks.get(id) ?? Promise.resolve();
    const run = (nested ? prev : Promise.all([prev, this.barrier])).then(fn);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.locks.set(id, tail);
    void tail.then(() => {
      if (this.locks.get(id) === tail) this.locks.delete(id);
    });
    return run;
  }

  private areaOf(id: string): SpoolArea | undefined {
    return (
      this.ix.sms.get(id) ?? (this.ix.quarantine.has(id) ? 'quarantine' : this.ix.parts.has(id) ? 'parts' : undefined)
    );
  }

  private notFound(id: string, expected: string): SpoolError {
    const area = this.areaOf(id);
    if (area === undefined)
      return new SpoolError('not-found', `no spool record with id ${id}`, { hint: 'list records to find the id' });
    return new SpoolError('wrong-area', `record ${id} is in ${area}, not in ${expected}`);
  }

  private forget(area: SpoolArea, id: string): void {
    if (area === 'quarantine') this.ix.quarantine.delete(id);
    else if (area === 'parts') this.ix.parts.delete(id);
    else if (this.ix.sms.get(id) === area) {
      this.ix.sms.delete(id);
      this.ix.pending.delete(id);
      if (area === 'sent') this.ix.sent.delete(id);
    }
  }

  /** Client only: tell the live owner (if any) to rescan. */
  private async notifyOwner(): Promise<void> {
    if (this.role === 'client') await signalLockOwner(this.dir, this.signal, this.logger);
  }

  // ---------------------------------------------------------------- writes

  /** Idempotent: a record already in pending/sent/dead is left alone. An ignored copy is replaced (moved to pending). */
  async putPending(rec: SmsRecord): Promise<{ created: boolean; area: SpoolArea }> {
    assertId(rec.id);
    return this.withLock(rec.id, async () => {
      const existing = this.ix.sms.get(rec.id);
      if (existing !== undefined && existing !== 'ignored') return { created: false, area: existing };
      const fresh: SmsRecord = { ...structuredClone(rec), kind: 'sms', v: SPOOL_RECORD_VERSION };
      if (existing === 'ignored') {
        const old = await this.files.read('ignored', rec.id); // undefined when an operator dropped it meanwhile
        fresh.rev = (old?.kind === 'sms' ? (old.rev ?? 0) : 0) + 1;
        await this.moveSms('ignored', 'pending', fresh);
        this.logger.info({ id: rec.id }, `spool: record ${rec.id} was ignored before, now accepted into pending`);
      } else {
        await this.moveSms('pending', 'pending', fresh);
      }
      this.emit('pending', rec.id);
      return { created: true, area: 'pending' };
    });
  }

  /** Idempotent: nothing is written when the id is already in any SMS area. */
  async putIgnored(rec: SmsRecord): Promise<{ created: boolean; area: SpoolArea }> {
    assertId(rec.id);
    return this.withLock(rec.id, async () => {
      const existing = this.ix.sms.get(rec.id);
      if (existing !== undefined) return { created: false, area: existing };
      await this.files.write('ignored', { ...structuredClone(rec), kind: 'sms', v: SPOOL_RECORD_VERSION });
      this.ix.sms.set(rec.id, 'ignored');
      return { created: true, area: 'ignored' };
    });
  }

  async putQuarantine(rec: QuarantineRecord): Promise<{ created: boolean; area: SpoolArea }> {
    assertId(rec.id);
    return this.withLock(`q:${rec.id}`, async () => {
      if (this.ix.quarantine.has(rec.id)) return { created: false, area: 'quarantine' };
      await this.files.write('quarantine', { ...structuredClone(rec), kind: 'quarantine', v: SPOOL_RECORD_VERSION });
      this.ix.quarantine.add(rec.id);
      return { created: true, area: 'quarantine' };
    });
  }

  async putPart(p: PartRecord): Promise<{ created: boolean; area: SpoolArea }> {
    assertId(p.id);
    return this.withLock(`p:${p.id}`, async () => {
      if (this.ix.parts.has(p.id)) return { created: false, area: 'parts' };
      const rec: PartRecord = { ...structuredClone(p), kind: 'part', v: SPOOL_RECORD_VERSION };
      await this.files.write('parts', rec);
      this.ix.parts.set(p.id, rec);
      return { created: true, area: 'parts' };
    });
  }

  /** Copies, oldest receivedAt first, from memory (the index kept by putPart/deleteParts/scan): no disk access. */
  async listParts(): Promise<PartRecord[]> {
    return this.ix.parts.copies();
  }

  /** Unknown ids are skipped (already deleted). The unlinks run together and share the fsync of parts/ (commit.ts). */
  async deleteParts(ids: string[]): Promise<void> {
    for (const id of ids) assertId(id);
    const done = await Promise.allSettled(
      ids.map((id) =>
        this.withLock(`p:${id}`, async () => {
          if (!this.ix.parts.has(id)) {
            this.logger.debug({ id }, 'spool: deleteParts: part already gone');
            return;
          }
          await this.files.unlink('parts', id, true);
          this.ix.parts.delete(id);
        }),
      ),
    );
    const failed = done.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  // ---------------------------------------------------------------- reads

  /** A record whose file another process removed is looked up again on disk (and forgotten when it is gone). */
  async get(id: string): Promise<{ area: SpoolArea; record: AnyRecord } | undefined> {
    assertId(id);
    const area = this.areaOf(id);
    if (area === undefined) return undefined;
    try {
      return { area, record: await this.readRecord(area, id) };
    } catch (err) {
      if (!(err instanceof SpoolError && err.reason === 'not-found')) throw err;
    }
    this.forget(area, id);
    const now = area === 'quarantine' || area === 'parts' ? undefined : await this.locate(id);
    return now === undefined ? undefined : { area: now, record: await this.readRecord(now, id) };
  }

  /**
   * Records of one area (copies), oldest receivedAt first. A record that cannot be read is skipped with an error log.
   * For pending this copies every record: the forwarder uses pendingInOrder() instead.
   */
  async list(area: SpoolArea, opts: { limit?: number } = {}): Promise<AnyRecord[]> {
    let out: AnyRecord[];
    if (area === 'pending') {
      const limit = opts.limit === undefined ? Infinity : Math.max(0, opts.limit);
      out = [];
      for (const r of this.ix.pending.values()) {
        if (out.length >= limit) break;
        out.push(structuredClone(r) as SmsRecord);
      }
      return out; // already in delivery order
    }
    if (area === 'parts')
      out = this.ix.parts.copies(); // already in order
    else {
      const ids =
        area === 'quarantine'
          ? [...this.ix.quarantine]
          : [...this.ix.sms].filter(([, a]) => a === area).map(([id]) => id);
      out = [];
      for (const id of ids) {
        try {
          out.push(await this.readRecord(area, id));
        } catch (err) {
          if (err instanceof SpoolError && err.reason === 'not-found') {
            this.logger.debug({ id, area }, 'spool: record removed by another process; forgotten');
            this.forget(area, id);
            continue;
          }
          this.logger.error({ id, area, err: errorMessage(err) }, 'spool: skipping unreadable record in list');
        }
      }
    }
    if (area !== 'parts') sortByReceived(out);
    return opts.limit !== undefined ? out.slice(0, Math.max(0, opts.limit)) : out;
  }

  /**
   * The pending records in delivery order (receivedAt, then id) with their cached due time and modem: a read-only view
   * of the index, for the forwarder's choice (src/forward/schedule.ts). Iterating it copies nothing; a walk that stops
   * early costs only the entries it passed. Use it synchronously: the index changes with every write.
   */
  pendingInOrder(): Iterable<PendingEntry> {
    return this.ix.pending.entries();
  }

  /** Whether the in-memory index holds `id` as pending (no disk access). */
  isPending(id: string): boolean {
    return this.ix.pending.has(id);
  }

  async stats(): Promise<SpoolStats> {
    return spoolStats(this.ix, this.clock().getTime(), this.lastError);
  }

  // ---------------------------------------------------------------- delivery transitions

  /**
   * The pending record as it is on disk now (an operator may have retried it since it was cached). Gone from pending
   * -> SpoolError 'not-found' (dropped) or 'wrong-area' (moved), and the index follows the disk.
   */
  private async loadPending(id: string): Promise<SmsRecord> {
    if (this.ix.sms.get(id) !== 'pending') throw this.notFound(id, 'pending');
    let rec: AnyRecord | undefined;
    try {
      rec = await this.files.read('pending', id);
    } catch (err) {
      if (err instanceof SpoolError && err.reason === 'corrupt' && this.role === 'owner') {
        const cached = this.ix.pending.get(id);
        if (cached) return await restoreCorruptPending(this.scanDeps, this.ix, id, cached);
        throw await quarantineCorruptPending(this.scanDeps, this.ix, id, err);
      }
      throw err;
    }
    if (rec?.kind === 'sms') return rec;
    const now = await this.locate(id);
    this.logger.debug({ id, now: now ?? 'gone' }, `spool: pending record ${id} was changed by another process`);
    if (now === undefined) {
      throw new SpoolError(
        'not-found',
        `record ${id} is no longer in pending: removed by another process (e.g. \`pulsa-bridge queue drop\`)`,
      );
    }
    throw this.notFound(id, 'pending');
  }

  /** pending -> sent. */
  async markDelivered(id: string, info: { status: number; at: Date }): Promise<void> {
    assertId(id);
    return this.withLock(id, async () => {
      await this.moveSms('pending', 'sent', markedDelivered(await this.loadPending(id), info));
    });
  }

  /**
   * attempts+1, stays pending with nextAttemptAt; rewritten durably.
   * `baseRev`: the rev of the record the caller attempted (SmsRecord.rev, absent = 0). It makes a retried mark
   * idempotent: a write that failed after its rename (the directory fsync failed) left the marked record on disk, and
   * if the disk holds exactly that (rev baseRev+1 with this error and retry time), it is written again as it is instead of
   * counting the attempt twice. Any other disk state (e.g. an operator's `queue retry` in between) is marked as before,
   * from the disk (the rev tells the two apart; the attempt count alone could not).
   */
  async markRetry(
    id: string,
    info: { error: string; status?: number; nextAttemptAt: Date; baseRev?: number },
  ): Promise<void> {
    assertId(id);
    return this.withLock(id, async () => {
      const rec = await this.loadPending(id);
      const { record, again } = markedRetry(rec, info);
      if (again)
        this.logger.debug(
          { id, rev: rec.rev },
          `spool: retry mark of ${id} is already on disk; written again, not counted twice`,
        );
      await this.moveSms('pending', 'pending', record);
      this.lastError = { id, error: info.error, at: this.clock().toISOString() };
    });
  }

  /** pending -> dead (permanently rejected or too old). */
  async markDead(id: string, reason: string, status?: number): Promise<void> {
    assertId(id);
    return this.withLock(id, async () => {
      await this.moveSms('pending', 'dead', markedDead(await this.loadPending(id), reason, status));
      this.lastError = { id, error: reason, at: this.clock().toISOString() };
    });
  }

  // ---------------------------------------------------------------- operator commands (operator.ts)

  /**
   * dead -> pending with attempts reset; for a pending record: make it due now; a record quarantined for its integrity
   * check is released where it was (operator.ts). A client then signals the owner. Returns where the record is now.
   */
  async retry(id: string): Promise<{ id: string; area: SmsArea }> {
    assertId(id);
    return operator.retry(this.port, id);
  }

  /** Every dead record back to pending; records another process moved meanwhile are skipped. Returns the count. */
  retryAllDead(): Promise<number> {
    return operator.retryAllDead(this.port);
  }

  /**
   * Remove a record from pending/dead/ignored/quarantine, or a multipart part. Sent records are pruned, not dropped.
   * `id` may be an unambiguous prefix of the id; the result names the id dropped.
   */
  async drop(id: string): Promise<{ area: SpoolArea; id: string }> {
    assertId(id);
    return operator.drop(this.port, id);
  }

  /** Delete sent (by deliveredAt) or ignored (by receivedAt) records older than `olderThanDays`. Returns the count. */
  prune(area: 'sent' | 'ignored', olderThanDays: number): Promise<number> {
    return operator.prune(this.port, area, olderThanDays);
  }
}
