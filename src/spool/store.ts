/**
 * Crash-safe on-disk spool (I/O module). One directory per area: tmp/ pending/ sent/ dead/ ignored/ quarantine/ parts/.
 *
 * Contract
 * - A record file is `<area>/<id>.json`: the record's JSON plus `checksum` = sha256 (hex) over the canonical JSON of the
 *   record without `checksum` (keys sorted recursively, no whitespace). `v` must equal SPOOL_RECORD_VERSION.
 * - Every write is Maildir-like: write tmp/<id>.<unique>.tmp, fsync it, rename into the area, fsync the area directory.
 *   A put* / mark* / retry promise resolves only after that (unless opened with fsync:false, for tests and dev).
 * - A move writes the new file durably first, then unlinks the old one, then fsyncs the old directory. A crash in between
 *   leaves the id in two areas; the later state (higher `rev`; on a tie sent > dead > pending > ignored) is the truth.
 * - Ids match /^[A-Za-z0-9._-]{1,128}$/; other ids are refused (SpoolError 'invalid-id').
 * - SMS ids live in one namespace over pending/sent/dead/ignored (an id is in at most one of them); quarantine and parts
 *   have their own namespaces.
 * - Operations on one id are serialized inside this process (per-id promise chain).
 * - Events: 'pending' (id) when a new pending record lands or a record returns to pending.
 *
 * Roles (one owner, any number of clients)
 * - owner (the daemon; default): holds `<dir>/spool.lock` (created with O_EXCL; JSON {pid, startedAt, bootId, procStart})
 *   until close(). A lock whose process is alive (kill(pid, 0) succeeds or says EPERM) and, where /proc tells, started
 *   at the recorded procStart (field 22 of /proc/<pid>/stat) refuses the open (SpoolError 'locked'); a stale lock (dead
 *   pid, pid reused by another process, other boot, unreadable, or our own pid without this process holding it) is
 *   replaced with a warning. The takeover is atomic: the stale file is renamed to a private name (one starter wins),
 *   re-judged there, and a live lock moved by mistake is linked back. Only the owner recovers at open: deletes tmp/
 *   leftovers (half-written), removes the earlier copy of an id found in two areas, moves every unreadable record file
 *   (bad JSON, bad checksum, wrong version, wrong kind for its area, name/id mismatch) into quarantine/ as a
 *   QuarantineRecord holding the raw text. A corrupt file never crashes the process: it is logged and set aside.
 * - client (the `queue` CLI): no lock, no recovery: tmp/ is left alone, an id in two areas is shown in its later state
 *   and left where it is, unreadable files are skipped with a warning. Its retry / retryAllDead / drop write the same
 *   atomic way, re-read the record from disk first, and then send SIGHUP to the live owner so it calls rescan().
 * - The owner's index is in memory: rescan() re-reads the areas (no destructive step) and emits 'pending' for pending
 *   records that are new to it or changed on disk. mark* re-read the pending file first: a record a client dropped
 *   meanwhile fails with SpoolError 'not-found' and leaves the index, instead of being written back; a pending file that
 *   has become unreadable is moved to quarantine by the owner and leaves the index (SpoolError 'corrupt').
 * - retry / retryAllDead stamp `requeuedAt` (the operator's requeue time) on the record.
 * - Pending records are held in delivery order (PendingIndex: receivedAt, then id), updated incrementally as records
 *   enter and leave pending and sorted once per scan. nextDue() picks the next record for the forwarder by walking that
 *   order and copies only the record it returns; list('pending') copies all of them (CLI).
 */
import { EventEmitter } from 'node:events';
import { createHash, randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { BridgeError, errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import { compareReceived, PendingIndex } from './pending-index.js';
import {
  SPOOL_RECORD_VERSION,
  type AnyRecord,
  type PartRecord,
  type QuarantineRecord,
  type SmsRecord,
  type SpoolArea,
} from './types.js';

export const SPOOL_ID_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;
const AREAS: readonly SpoolArea[] = ['pending', 'sent', 'dead', 'ignored', 'quarantine', 'parts'];
const SMS_AREAS = ['pending', 'sent', 'dead', 'ignored'] as const;
type SmsArea = (typeof SMS_AREAS)[number];
/** Tie-break when an id is found in two SMS areas with the same revision: the later state of a move wins. */
const AREA_RANK: Record<SmsArea, number> = { ignored: 1, pending: 2, dead: 3, sent: 4 };
const DAY_MS = 86_400_000;

export type SpoolErrorReason = 'not-found' | 'invalid-id' | 'wrong-area' | 'io' | 'corrupt' | 'locked';

/** A spool failure; `reason` tells a CLI whether the operator mistyped an id or the disk failed. */
export class SpoolError extends BridgeError {
  override name = 'SpoolError';
  readonly reason: SpoolErrorReason;
  constructor(reason: SpoolErrorReason, message: string, options: { cause?: unknown; hint?: string } = {}) {
    super(reason === 'corrupt' ? 'SPOOL_CORRUPT' : 'SPOOL_IO', message, options);
    this.reason = reason;
  }
}

export interface SpoolOptions {
  logger: Logger;
  /** fsync files and directories (default true). false only for tests / throwaway spools. */
  fsync?: boolean;
  /** Injected clock for prune, stats and the lock's startedAt (default: new Date()). */
  clock?: () => Date;
  /** 'owner' (default): takes spool.lock and recovers; 'client': no lock, no recovery (see the header). */
  role?: SpoolRole;
  /** How a client tells the owner to rescan (default: process.kill, skipping this very process without a SIGHUP handler). */
  signal?: (pid: number, signal: NodeJS.Signals) => void;
}

export type SpoolRole = 'owner' | 'client';

/** The process holding a spool's lock, as written in `<dir>/spool.lock`. */
export interface SpoolLockOwner {
  pid: number;
  startedAt: string;
}

export interface SpoolStats {
  pending: number;
  oldestPendingAgeMs?: number;
  sent: number;
  dead: number;
  ignored: number;
  quarantine: number;
  parts: number;
  /** Last delivery failure seen by this process (markRetry / markDead). */
  lastError?: { id: string; error: string; at: string };
}

/** Recursively key-sorted, whitespace-free JSON: the form the checksum is computed over. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = sortKeys(v);
    }
    return out;
  }
  return value;
}

export function recordChecksum(record: object): string {
  const { checksum: _ignored, ...rest } = record as Record<string, unknown>;
  return createHash('sha256').update(canonicalJson(rest)).digest('hex');
}

/** The exact text written to disk for a record. */
export function serializeRecord(record: AnyRecord): string {
  const body = sortKeys(record) as Record<string, unknown>;
  delete body.checksum;
  return `${JSON.stringify({ ...body, checksum: recordChecksum(body) }, null, 2)}\n`;
}

type Parsed = { ok: true; record: AnyRecord } | { ok: false; reason: string };

/** Validate the text of `<area>/<file>`: JSON, version, checksum, kind for the area, id = file name. */
export function parseRecordFile(text: string, area: SpoolArea, fileName: string): Parsed {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    return { ok: false, reason: `invalid JSON: ${errorMessage(err)}` };
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return { ok: false, reason: 'not a JSON object' };
  const obj = data as Record<string, unknown>;
  if (obj.v !== SPOOL_RECORD_VERSION) return { ok: false, reason: `unsupported record version ${JSON.stringify(obj.v)}` };
  if (typeof obj.checksum !== 'string') return { ok: false, reason: 'missing checksum' };
  if (obj.checksum !== recordChecksum(obj)) return { ok: false, reason: 'bad checksum' };
  const expectedKind = area === 'quarantine' ? 'quarantine' : area === 'parts' ? 'part' : 'sms';
  if (obj.kind !== expectedKind) return { ok: false, reason: `kind ${JSON.stringify(obj.kind)} does not belong in ${area}/` };
  if (typeof obj.id !== 'string' || `${obj.id}.json` !== fileName) return { ok: false, reason: 'id does not match file name' };
  const shapeProblem = checkShape(obj);
  if (shapeProblem) return { ok: false, reason: shapeProblem };
  const { checksum: _c, ...record } = obj;
  return { ok: true, record: record as unknown as AnyRecord };
}

function checkShape(obj: Record<string, unknown>): string | undefined {
  const str = (k: string) => typeof obj[k] === 'string';
  if (obj.kind === 'sms') {
    const sim = obj.sim as Record<string, unknown> | undefined;
    if (!str('sender') || !str('text') || !str('receivedAt') || !str('scTimestamp')) return 'sms record misses a text field';
    if (typeof obj.attempts !== 'number' || !sim || typeof sim.modem !== 'string') return 'sms record misses attempts or sim.modem';
  } else if (obj.kind === 'part') {
    if (!str('groupKey') || !str('text') || typeof obj.sequence !== 'number' || typeof obj.total !== 'number') {
      return 'part record misses groupKey/text/sequence/total';
    }
  } else if (!str('raw') || !str('reason')) {
    return 'quarantine record misses raw or reason';
  }
  return undefined;
}

function assertId(id: string): void {
  if (typeof id !== 'string' || !SPOOL_ID_PATTERN.test(id)) {
    throw new SpoolError('invalid-id', `invalid spool id ${JSON.stringify(id)}: expected 1-128 characters of A-Z a-z 0-9 . _ -`);
  }
}

function isSmsArea(area: string): area is SmsArea {
  return (SMS_AREAS as readonly string[]).includes(area);
}

function isoTimeMs(iso: string | undefined): number | undefined {
  if (iso === undefined) return undefined;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? undefined : ms;
}

const byReceivedAt = compareReceived;

function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

// ---------------------------------------------------------------- the owner's lock file

export const SPOOL_LOCK_FILE = 'spool.lock';

/** Lock files held by this process (absolute paths): our own pid in a lock we do not hold is left from an earlier boot. */
const heldLocks = new Set<string>();

interface LockContent extends SpoolLockOwner {
  bootId?: string;
  /** Start time of the owner process (field 22 of /proc/<pid>/stat, clock ticks since boot); absent without /proc. */
  procStart?: string;
}

let bootIdCache: string | null | undefined;
/** Linux boot id; undefined elsewhere. A lock written under another boot is stale whatever its pid says. */
async function currentBootId(): Promise<string | undefined> {
  if (bootIdCache === undefined) {
    try {
      bootIdCache = (await fsp.readFile('/proc/sys/kernel/random/boot_id', 'utf8')).trim() || null;
    } catch {
      // Feature probe, not a failure: without a boot id the liveness of the pid decides alone.
      bootIdCache = null;
    }
  }
  return bootIdCache ?? undefined;
}

/**
 * Field 22 (starttime) of a /proc/<pid>/stat line, or undefined when the line does not have it. The comm field (2) is
 * in parentheses and may itself hold spaces and ')', so fields are counted after the LAST ')'.
 */
export function parseProcStartTime(statLine: string): string | undefined {
  const close = statLine.lastIndexOf(')');
  if (close < 0) return undefined;
  const fields = statLine.slice(close + 1).trim().split(/\s+/); // fields[0] is field 3 (state)
  const start = fields[22 - 3];
  return start !== undefined && /^\d+$/.test(start) ? start : undefined;
}

/**
 * When process `pid` started (clock ticks since boot), or undefined when this system cannot tell: no /proc, or the
 * process is hidden or gone (then the liveness check decides, as before start times were recorded).
 */
export async function processStartTime(pid: number): Promise<string | undefined> {
  try {
    return parseProcStartTime(await fsp.readFile(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    // Feature probe, not a failure: no /proc (not Linux), hidepid, or the process exited: liveness decides alone.
    return undefined;
  }
}

/** Give `file` the content of `aside` again without ever overwriting a file that holds the name (link, else 'wx'). */
async function putBack(aside: string, file: string, text: string): Promise<void> {
  try {
    await fsp.link(aside, file);
    return;
  } catch (err) {
    const code = errnoCode(err);
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw err;
  }
  await fsp.writeFile(file, text, { flag: 'wx', mode: 0o644 }); // no hard links on this filesystem
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errnoCode(err) !== 'ESRCH'; // EPERM: alive, owned by another user
  }
}

function parseLock(text: string): LockContent | undefined {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return undefined; // the caller reports the lock as unreadable (stale)
  }
  if (data === null || typeof data !== 'object') return undefined;
  const { pid, startedAt, bootId, procStart } = data as Record<string, unknown>;
  if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0 || typeof startedAt !== 'string') return undefined;
  const lock: LockContent = { pid, startedAt };
  if (typeof bootId === 'string') lock.bootId = bootId;
  if (typeof procStart === 'string') lock.procStart = procStart;
  return lock;
}

type LockState =
  | { state: 'absent' }
  | { state: 'live'; owner: SpoolLockOwner; text: string }
  | { state: 'stale'; reason: string; text: string; owner?: SpoolLockOwner };

async function inspectLock(file: string): Promise<LockState> {
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return { state: 'absent' };
    throw new SpoolError('io', `cannot read the spool lock ${file}: ${errorMessage(err)}`, {
      cause: err,
      hint: 'check the permissions of the spool directory',
    });
  }
  return judgeLock(file, text);
}

/** Whether the lock text found at `file` names a live owner. */
async function judgeLock(file: string, text: string): Promise<Exclude<LockState, { state: 'absent' }>> {
  const lock = parseLock(text);
  if (!lock) return { state: 'stale', reason: 'unreadable lock file', text };
  const owner: SpoolLockOwner = { pid: lock.pid, startedAt: lock.startedAt };
  const boot = await currentBootId();
  if (lock.bootId !== undefined && boot !== undefined && lock.bootId !== boot) {
    return { state: 'stale', reason: `written by process ${lock.pid} before the last reboot`, text, owner };
  }
  if (lock.pid === process.pid && !heldLocks.has(file)) {
    return { state: 'stale', reason: `written by an earlier process with this pid (${lock.pid})`, text, owner };
  }
  if (!processAlive(lock.pid)) return { state: 'stale', reason: `process ${lock.pid} is not running`, text, owner };
  if (lock.procStart !== undefined) {
    // A live pid is not enough: after a crash the pid may belong to an unrelated process now.
    const started = await processStartTime(lock.pid);
    if (started !== undefined && started !== lock.procStart) {
      return {
        state: 'stale',
        reason: `process ${lock.pid} is not the one that wrote the lock (pid reused: it started at tick ${started}, the lock says ${lock.procStart})`,
        text,
        owner,
      };
    }
  }
  return { state: 'live', owner, text };
}

/**
 * The live owner of the spool at `dir` (the running daemon), or undefined when there is no lock or the lock is stale.
 * Throws SpoolError 'io' only when the lock exists but cannot be read (permissions).
 */
export async function readLockOwner(dir: string): Promise<SpoolLockOwner | undefined> {
  const st = await inspectLock(path.join(path.resolve(dir), SPOOL_LOCK_FILE));
  return st.state === 'live' ? st.owner : undefined;
}

function defaultSignal(pid: number, signal: NodeJS.Signals): void {
  if (pid === process.pid && process.listenerCount(signal) === 0) {
    // The default action of SIGHUP would terminate this very process.
    throw new Error(`the owner is this process and it has no ${signal} handler`);
  }
  process.kill(pid, signal);
}

interface SpoolIndex {
  /** id -> area, for SMS records (pending/sent/dead/ignored). */
  sms: Map<string, SmsArea>;
  /** Pending records are kept in memory, in delivery order: the forwarder picks from them on every wake. */
  pending: PendingIndex;
  parts: Map<string, PartRecord>;
  quarantine: Set<string>;
}

const emptyIndex = (): SpoolIndex => ({ sms: new Map(), pending: new PendingIndex(), parts: new Map(), quarantine: new Set() });

function indexEntries(ix: SpoolIndex): Set<string> {
  const out = new Set<string>();
  for (const [id, area] of ix.sms) out.add(`${area}/${id}`);
  for (const id of ix.parts.keys()) out.add(`parts/${id}`);
  for (const id of ix.quarantine) out.add(`quarantine/${id}`);
  return out;
}

export class Spool extends EventEmitter {
  readonly dir: string;
  readonly role: SpoolRole;
  private readonly logger: Logger;
  private readonly doFsync: boolean;
  private readonly clock: () => Date;
  private readonly signal: (pid: number, signal: NodeJS.Signals) => void;
  private ix: SpoolIndex = emptyIndex();
  private readonly locks = new Map<string, Promise<unknown>>();
  /** Operations wait for this before they start; rescan() holds it while it rebuilds the index. */
  private barrier: Promise<void> = Promise.resolve();
  private rescanChain: Promise<unknown> = Promise.resolve();
  private lastError: SpoolStats['lastError'];
  private tmpCounter = 0;
  /** The exact text of our lock file while we own it. */
  private lockText: string | undefined;
  private closed = false;

  private constructor(dir: string, opts: SpoolOptions) {
    super();
    this.dir = dir;
    this.role = opts.role ?? 'owner';
    this.logger = opts.logger;
    this.doFsync = opts.fsync ?? true;
    this.clock = opts.clock ?? (() => new Date());
    this.signal = opts.signal ?? defaultSignal;
  }

  static async open(dir: string, opts: SpoolOptions): Promise<Spool> {
    const spool = new Spool(path.resolve(dir), opts);
    if (spool.role === 'client') {
      let isDir = false;
      try {
        isDir = (await fsp.stat(spool.dir)).isDirectory();
      } catch (err) {
        if (errnoCode(err) !== 'ENOENT') throw new SpoolError('io', `cannot open spool ${spool.dir}: ${errorMessage(err)}`, { cause: err });
      }
      if (!isDir) {
        throw new SpoolError('not-found', `no spool directory at ${spool.dir}`, { hint: 'check --spool or spool.dir in the config' });
      }
      spool.ix = await spool.scan('read');
      return spool;
    }
    try {
      for (const area of ['tmp', ...AREAS]) await fsp.mkdir(path.join(spool.dir, area), { recursive: true });
      await spool.fsyncDir(spool.dir);
    } catch (err) {
      throw new SpoolError('io', `cannot create spool directories under ${spool.dir}: ${errorMessage(err)}`, {
        cause: err,
        hint: 'check that the spool directory exists and is writable by the service user',
      });
    }
    await spool.acquireLock();
    try {
      await spool.recover();
    } catch (err) {
      await spool.close();
      throw err;
    }
    return spool;
  }

  /**
   * Wait for operations in flight, then (owner) remove the lock file. Idempotent. Writes after close() fail with
   * SpoolError 'io'; reads keep working on the last index.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.locks.values(), this.rescanChain]);
    if (this.lockText === undefined) return;
    const file = this.lockFile();
    const ours = this.lockText;
    this.lockText = undefined;
    try {
      const now = await fsp.readFile(file, 'utf8');
      if (now === ours) await fsp.unlink(file);
      else this.logger.warn({ lock: file }, `spool: lock ${file} was replaced by another process; left in place`);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') this.logger.warn({ lock: file }, `spool: lock ${file} was already removed`);
      else throw new SpoolError('io', `cannot remove the spool lock ${file}: ${errorMessage(err)}`, { cause: err });
    } finally {
      heldLocks.delete(file);
    }
  }

  // ---------------------------------------------------------------- lock

  private lockFile(): string {
    return path.join(this.dir, SPOOL_LOCK_FILE);
  }

  private async acquireLock(): Promise<void> {
    const file = this.lockFile();
    const boot = await currentBootId();
    const procStart = await processStartTime(process.pid);
    const content: LockContent = {
      pid: process.pid,
      startedAt: this.clock().toISOString(),
      ...(boot ? { bootId: boot } : {}),
      ...(procStart ? { procStart } : {}),
    };
    const text = `${JSON.stringify(content)}\n`;
    for (let attempt = 0; attempt < 5; attempt += 1) {
      if (await this.createLockFile(file, text)) {
        this.lockText = text;
        heldLocks.add(file);
        return;
      }
      const st = await inspectLock(file);
      if (st.state === 'absent') continue;
      if (st.state === 'live') {
        const pid = st.owner.pid;
        throw new SpoolError('locked', `spool ${this.dir} is in use by process ${pid} (is pulsa-bridge already running?)`, {
          hint: `stop it first (systemctl stop pulsa-bridge); \`pulsa-bridge queue ...\` works while it runs; if process ${pid} is not pulsa-bridge, delete ${file}`,
        });
      }
      await this.setStaleLockAside(file, st);
      // Next round: create with O_EXCL semantics again; whoever created a lock meanwhile wins and we see it live.
    }
    throw new SpoolError('locked', `cannot take the spool lock ${file}: it keeps changing (another pulsa-bridge starting at the same time?)`);
  }

  /**
   * Remove a lock judged stale, atomically: rename() moves whatever file holds the lock name right now to a name only
   * this process uses, so of several starters judging the same stale lock exactly one gets it. The moved file is then
   * judged again: if it is not stale (another starter replaced the stale lock with its own live lock between our read
   * and our rename), it is linked back under the lock name (link() never overwrites) and we go on to be refused.
   */
  private async setStaleLockAside(file: string, st: Extract<LockState, { state: 'stale' }>): Promise<void> {
    const aside = `${file}.stale.${process.pid}.${randomBytes(4).toString('hex')}`;
    try {
      await fsp.rename(file, aside);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return; // another starter moved it first
      throw new SpoolError('io', `cannot replace the stale spool lock ${file}: ${errorMessage(err)}`, { cause: err });
    }
    let keepAside = false;
    try {
      let moved: string;
      try {
        moved = await fsp.readFile(aside, 'utf8');
      } catch (err) {
        throw new SpoolError('io', `cannot read the spool lock moved to ${aside}: ${errorMessage(err)}`, { cause: err });
      }
      const verdict = moved === st.text ? st : await judgeLock(file, moved);
      if (verdict.state === 'stale') {
        this.logger.warn(
          { lock: file, reason: verdict.reason, previousOwner: verdict.owner },
          `spool: replaced stale lock ${file} (${verdict.reason})`,
        );
        return;
      }
      try {
        await putBack(aside, file, moved);
        this.logger.debug({ lock: file, owner: verdict.owner }, 'spool: a live lock was set aside by mistake and has been put back');
      } catch (err) {
        keepAside = true;
        this.logger.error(
          { lock: file, owner: verdict.owner, err: errorMessage(err) },
          `spool: the lock of process ${verdict.owner.pid} could not be put back (${errorMessage(err)}); it is kept as ${aside}`,
        );
        throw new SpoolError('locked', `spool ${this.dir} is being taken by several processes at once (process ${verdict.owner.pid} among them)`, {
          hint: 'stop every pulsa-bridge on this spool, then start one',
        });
      }
    } finally {
      if (!keepAside) {
        await fsp.rm(aside, { force: true }).catch((rmErr: unknown) => {
          // A leftover aside file is harmless (not spool.lock, not *.json); say so and go on.
          this.logger.debug({ file: aside, err: errorMessage(rmErr) }, 'spool: could not remove the set-aside lock file');
        });
      }
    }
  }

  /**
   * Exclusive create with complete content: write a private file, then link() it to the lock name (fails with EEXIST
   * like O_EXCL, but a reader never sees a half-written lock). Filesystems without hard links fall back to 'wx'.
   */
  private async createLockFile(file: string, text: string): Promise<boolean> {
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    try {
      await fsp.writeFile(tmp, text, { flag: 'wx', mode: 0o644 });
      try {
        await fsp.link(tmp, file);
        heldLocks.add(file); // at once: an in-process judge of this lock must see it held, not left by an earlier boot
        return true;
      } catch (err) {
        const code = errnoCode(err);
        if (code === 'EEXIST') return false;
        if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw err;
      }
      try {
        await fsp.writeFile(file, text, { flag: 'wx', mode: 0o644 });
        heldLocks.add(file);
        return true;
      } catch (err) {
        if (errnoCode(err) === 'EEXIST') return false;
        throw err;
      }
    } catch (err) {
      throw new SpoolError('io', `cannot create the spool lock ${file}: ${errorMessage(err)}`, {
        cause: err,
        hint: 'check that the spool directory is writable by the service user',
      });
    } finally {
      await fsp.rm(tmp, { force: true }).catch((rmErr: unknown) => {
        // A leftover private lock file is harmless (not *.json, not spool.lock); say so and go on.
        this.logger.debug({ file: tmp, err: errorMessage(rmErr) }, 'spool: could not remove the private lock file');
      });
    }
  }

  // ---------------------------------------------------------------- recovery and rescan

  /** Owner only, at open: delete tmp leftovers, then scan with quarantining and duplicate resolution. */
  private async recover(): Promise<void> {
    const tmpDir = path.join(this.dir, 'tmp');
    for (const name of await this.readdirSafe(tmpDir)) {
      try {
        await fsp.rm(path.join(tmpDir, name), { recursive: true, force: true });
        this.logger.warn({ file: `tmp/${name}` }, 'spool: deleted half-written file left by a crash');
      } catch (err) {
        this.logger.error({ file: `tmp/${name}`, err: errorMessage(err) }, 'spool: cannot delete tmp leftover');
      }
    }
    this.ix = await this.scan('recover');
  }

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
      const after = await this.scan('read');
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
      this.logger.info({ ...counts, woke: woke.length }, `spool: rescan found ${counts.added} new and ${counts.removed} removed entries`);
    }
    for (const id of woke) this.emit('pending', id);
    return counts;
  }

  /** Read every area into a fresh index. 'recover' (owner at open) repairs; 'read' only reads. */
  private async scan(mode: 'recover' | 'read'): Promise<SpoolIndex> {
    const ix = emptyIndex();
    const found = new Map<string, { area: SmsArea; rev: number; rec: SmsRecord }[]>();
    const pending: SmsRecord[] = [];
    for (const area of AREAS) {
      for (const name of await this.readdirSafe(path.join(this.dir, area))) {
        if (!name.endsWith('.json')) {
          this.logger.warn({ file: `${area}/${name}` }, 'spool: ignoring a file that is not a record (*.json)');
          continue;
        }
        let text: string;
        try {
          text = await fsp.readFile(path.join(this.dir, area, name), 'utf8');
        } catch (err) {
          // Vanished between readdir and read: another process moved or dropped it; nothing to index.
          if (errnoCode(err) === 'ENOENT') {
            this.logger.debug({ file: `${area}/${name}` }, 'spool: record file vanished while scanning');
            continue;
          }
          this.logger.error({ file: `${area}/${name}`, err: errorMessage(err) }, 'spool: cannot read record file; left in place');
          continue;
        }
        const parsed = parseRecordFile(text, area, name);
        if (!parsed.ok) {
          if (mode === 'recover') await this.quarantineUnreadable(ix, area, name, text, parsed.reason);
          else this.logger.warn({ file: `${area}/${name}`, reason: parsed.reason }, `spool: skipping unreadable record ${area}/${name} (${parsed.reason})`);
          continue;
        }
        const rec = parsed.record;
        if (rec.kind === 'part') ix.parts.set(rec.id, rec);
        else if (rec.kind === 'quarantine') ix.quarantine.add(rec.id);
        else if (isSmsArea(area)) {
          const list = found.get(rec.id) ?? [];
          list.push({ area, rev: rec.rev ?? 0, rec });
          found.set(rec.id, list);
        }
      }
    }
    for (const [id, copies] of found) {
      copies.sort((a, b) => b.rev - a.rev || AREA_RANK[b.area] - AREA_RANK[a.area]);
      const keep = copies[0]!;
      ix.sms.set(id, keep.area);
      if (keep.area === 'pending') pending.push(keep.rec);
      for (const loser of copies.slice(1)) {
        if (mode === 'read') {
          this.logger.debug({ id, kept: keep.area, other: loser.area }, `spool: record ${id} is in two areas; using ${keep.area}`);
          continue;
        }
        try {
          await this.unlinkRecord(loser.area, id);
          this.logger.warn(
            { id, kept: keep.area, removed: loser.area },
            `spool: record ${id} was in two areas (interrupted move); kept ${keep.area}, removed ${loser.area}`,
          );
        } catch (err) {
          this.logger.error({ id, area: loser.area, err: errorMessage(err) }, 'spool: cannot remove duplicate record');
        }
      }
    }
    ix.pending = PendingIndex.from(pending); // sorted once
    return ix;
  }

  /**
   * Move an unreadable record file into quarantine (raw text kept); on failure it stays where it is, logged.
   * Returns the quarantine id, or undefined when the file could not be moved.
   */
  /** `unlink`: remove the unreadable file (false when the caller rewrites it in place). */
  private async quarantineUnreadable(ix: SpoolIndex, area: SpoolArea, name: string, text: string, reason: string, unlink = true): Promise<string | undefined> {
    const stem = name.slice(0, -'.json'.length).replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 80);
    const hash = createHash('sha256').update(text).digest('hex').slice(0, 12);
    const id = `corrupt.${area}.${stem}.${hash}`.slice(0, 128);
    const q: QuarantineRecord = {
      v: SPOOL_RECORD_VERSION,
      kind: 'quarantine',
      id,
      modem: 'unknown',
      raw: text,
      reason: `unreadable record file: ${reason}`,
      receivedAt: this.clock().toISOString(),
      originalFile: `${area}/${name}`,
    };
    try {
      if (!ix.quarantine.has(id)) await this.writeRecord('quarantine', q);
      ix.quarantine.add(id);
      if (unlink && !(area === 'quarantine' && `${id}.json` === name)) {
        await fsp.unlink(path.join(this.dir, area, name));
        await this.fsyncDir(path.join(this.dir, area));
      }
      this.logger.warn({ file: `${area}/${name}`, quarantineId: id, reason }, `spool: unreadable record ${area}/${name} moved to quarantine (${reason})`);
      return id;
    } catch (err) {
      this.logger.error({ file: `${area}/${name}`, reason, err: errorMessage(err) }, 'spool: unreadable record could not be quarantined; left in place');
      return undefined;
    }
  }

  private async readdirSafe(dir: string): Promise<string[]> {
    try {
      return (await fsp.readdir(dir)).sort();
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') {
        this.logger.debug({ dir }, 'spool: area directory missing; treated as empty');
        return [];
      }
      this.logger.error({ dir, err: errorMessage(err) }, 'spool: cannot list directory');
      return [];
    }
  }

  /**
   * Find where an id is on disk now (another process may have moved or removed it) and update the index for it.
   * Called inside the id's lock. A copy that cannot be parsed fails with SpoolError 'corrupt'.
   */
  private async locate(id: string): Promise<SmsArea | undefined> {
    let best: { area: SmsArea; rec: SmsRecord } | undefined;
    for (const area of SMS_AREAS) {
      const rec = await this.readFromDisk(area, id);
      if (rec?.kind !== 'sms') continue;
      const rev = rec.rev ?? 0;
      const bestRev = best ? best.rec.rev ?? 0 : -1;
      if (!best || rev > bestRev || (rev === bestRev && AREA_RANK[area] > AREA_RANK[best.area])) best = { area, rec };
    }
    if (best) this.ix.sms.set(id, best.area);
    else this.ix.sms.delete(id);
    if (best?.area === 'pending') this.ix.pending.set(best.rec);
    else this.ix.pending.delete(id);
    if ((await this.readFromDisk('quarantine', id)) !== undefined) this.ix.quarantine.add(id);
    else this.ix.quarantine.delete(id);
    return best?.area;
  }

  /** Client only: tell the live owner (if any) to rescan. Failures are expected races and only logged at debug. */
  private async notifyOwner(): Promise<void> {
    if (this.role !== 'client') return;
    let owner: SpoolLockOwner | undefined;
    try {
      owner = await readLockOwner(this.dir);
    } catch (err) {
      // Ignored on purpose: without the lock we cannot know the owner; it rescans at its next start anyway.
      this.logger.debug({ err: errorMessage(err) }, 'spool: cannot read the lock; owner not signalled');
      return;
    }
    if (!owner) {
      this.logger.debug({ dir: this.dir }, 'spool: no owner running; it sees the change at its next start');
      return;
    }
    try {
      this.signal(owner.pid, 'SIGHUP');
      this.logger.debug({ pid: owner.pid }, 'spool: owner signalled (SIGHUP) to rescan');
    } catch (err) {
      // Ignored on purpose: the owner may have exited since the lock was read; a new owner scans at start.
      this.logger.debug({ pid: owner.pid, err: errorMessage(err) }, 'spool: could not signal the owner');
    }
  }

  // ---------------------------------------------------------------- low-level I/O

  private async fsyncDir(dir: string): Promise<void> {
    if (!this.doFsync) return;
    const fh = await fsp.open(dir, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  }

  /**
   * A client run as root (`sudo pulsa-bridge queue retry`) would otherwise leave root-owned 0640 files that the
   * daemon's service user cannot read: give new files the owner of the spool directory. No-op for other users.
   */
  private async matchOwnership(fh: fsp.FileHandle): Promise<void> {
    if (typeof process.getuid !== 'function' || process.getuid() !== 0) return;
    const st = await fsp.stat(this.dir);
    if (st.uid !== 0 || st.gid !== 0) await fh.chown(st.uid, st.gid);
  }

  private fileOf(area: SpoolArea, id: string): string {
    return path.join(this.dir, area, `${id}.json`);
  }

  /** tmp write -> fsync -> rename into area -> fsync area dir. */
  private async writeRecord(area: SpoolArea, rec: AnyRecord): Promise<void> {
    const text = serializeRecord(rec);
    const tmp = path.join(this.dir, 'tmp', `${rec.id}.${process.pid}.${++this.tmpCounter}.${randomBytes(4).toString('hex')}.tmp`);
    try {
      const fh = await fsp.open(tmp, 'wx', 0o640);
      try {
        await this.matchOwnership(fh);
        await fh.writeFile(text, 'utf8');
        if (this.doFsync) await fh.sync();
      } finally {
        await fh.close();
      }
      await fsp.rename(tmp, this.fileOf(area, rec.id));
      await this.fsyncDir(path.join(this.dir, area));
    } catch (err) {
      await fsp.rm(tmp, { force: true }).catch((rmErr: unknown) => {
        // Best effort: the owner's open() deletes tmp leftovers anyway.
        this.logger.debug({ file: tmp, err: errorMessage(rmErr) }, 'spool: could not remove tmp file after failed write');
      });
      throw new SpoolError('io', `cannot write ${area}/${rec.id}.json: ${errorMessage(err)}`, {
        cause: err,
        hint: `check free space and permissions of ${this.dir}`,
      });
    }
  }

  /** `missingOk`: the file being gone already is fine (the source of a move another process removed). */
  private async unlinkRecord(area: SpoolArea, id: string, missingOk = false): Promise<void> {
    try {
      await fsp.unlink(this.fileOf(area, id));
    } catch (err) {
      if (missingOk && errnoCode(err) === 'ENOENT') {
        this.logger.debug({ id, area }, `spool: ${area}/${id}.json was already removed by another process`);
        return;
      }
      throw new SpoolError('io', `cannot remove ${area}/${id}.json: ${errorMessage(err)}`, { cause: err });
    }
    try {
      await this.fsyncDir(path.join(this.dir, area));
    } catch (err) {
      throw new SpoolError('io', `cannot fsync ${area}/ after removing ${id}.json: ${errorMessage(err)}`, { cause: err });
    }
  }

  /** The record file as it is on disk now; undefined when there is no such file. */
  private async readFromDisk(area: SpoolArea, id: string): Promise<AnyRecord | undefined> {
    let text: string;
    try {
      text = await fsp.readFile(this.fileOf(area, id), 'utf8');
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return undefined;
      throw new SpoolError('io', `cannot read ${area}/${id}.json: ${errorMessage(err)}`, { cause: err });
    }
    const parsed = parseRecordFile(text, area, `${id}.json`);
    if (!parsed.ok) {
      throw new SpoolError('corrupt', `record ${area}/${id}.json is unreadable: ${parsed.reason}`, {
        hint: 'restart the bridge: start-up moves unreadable records to quarantine',
      });
    }
    return parsed.record;
  }

  /** From the in-memory copy (pending, parts) or the disk; a missing file is SpoolError 'not-found'. */
  private async readRecord(area: SpoolArea, id: string): Promise<AnyRecord> {
    if (area === 'pending') {
      const cached = this.ix.pending.get(id);
      if (cached) return structuredClone(cached);
    }
    if (area === 'parts') {
      const cached = this.ix.parts.get(id);
      if (cached) return structuredClone(cached);
    }
    const rec = await this.readFromDisk(area, id);
    if (!rec) throw new SpoolError('not-found', `record ${area}/${id}.json is gone (removed by another process?)`);
    return rec;
  }

  /** Durable move of an SMS record: write into `to`, then unlink from `from` (already gone is fine). */
  private async moveSms(from: SmsArea, to: SmsArea, rec: SmsRecord): Promise<void> {
    await this.writeRecord(to, rec);
    this.ix.sms.set(rec.id, to);
    if (to === 'pending') this.ix.pending.set(rec);
    if (from !== to) {
      if (from === 'pending') this.ix.pending.delete(rec.id);
      await this.unlinkRecord(from, rec.id, true);
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
    return this.ix.sms.get(id) ?? (this.ix.quarantine.has(id) ? 'quarantine' : this.ix.parts.has(id) ? 'parts' : undefined);
  }

  private notFound(id: string, expected: string): SpoolError {
    const area = this.areaOf(id);
    if (area === undefined) return new SpoolError('not-found', `no spool record with id ${id}`, { hint: 'list records to find the id' });
    return new SpoolError('wrong-area', `record ${id} is in ${area}, not in ${expected}`);
  }

  private forget(area: SpoolArea, id: string): void {
    if (area === 'quarantine') this.ix.quarantine.delete(id);
    else if (area === 'parts') this.ix.parts.delete(id);
    else if (this.ix.sms.get(id) === area) {
      this.ix.sms.delete(id);
      this.ix.pending.delete(id);
    }
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
        const old = await this.readFromDisk('ignored', rec.id); // undefined when an operator dropped it meanwhile
        fresh.rev = (old?.kind === 'sms' ? old.rev ?? 0 : 0) + 1;
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
      await this.writeRecord('ignored', { ...structuredClone(rec), kind: 'sms', v: SPOOL_RECORD_VERSION });
      this.ix.sms.set(rec.id, 'ignored');
      return { created: true, area: 'ignored' };
    });
  }

  async putQuarantine(rec: QuarantineRecord): Promise<{ created: boolean; area: SpoolArea }> {
    assertId(rec.id);
    return this.withLock(`q:${rec.id}`, async () => {
      if (this.ix.quarantine.has(rec.id)) return { created: false, area: 'quarantine' };
      await this.writeRecord('quarantine', { ...structuredClone(rec), kind: 'quarantine', v: SPOOL_RECORD_VERSION });
      this.ix.quarantine.add(rec.id);
      return { created: true, area: 'quarantine' };
    });
  }

  async putPart(p: PartRecord): Promise<{ created: boolean; area: SpoolArea }> {
    assertId(p.id);
    return this.withLock(`p:${p.id}`, async () => {
      if (this.ix.parts.has(p.id)) return { created: false, area: 'parts' };
      const rec: PartRecord = { ...structuredClone(p), kind: 'part', v: SPOOL_RECORD_VERSION };
      await this.writeRecord('parts', rec);
      this.ix.parts.set(p.id, rec);
      return { created: true, area: 'parts' };
    });
  }

  async listParts(): Promise<PartRecord[]> {
    return [...this.ix.parts.values()].map((p) => structuredClone(p)).sort(byReceivedAt);
  }

  /** Unknown ids are skipped (already deleted). */
  async deleteParts(ids: string[]): Promise<void> {
    for (const id of ids) {
      assertId(id);
      await this.withLock(`p:${id}`, async () => {
        if (!this.ix.parts.has(id)) {
          this.logger.debug({ id }, 'spool: deleteParts: part already gone');
          return;
        }
        await this.unlinkRecord('parts', id, true);
        this.ix.parts.delete(id);
      });
    }
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
   * For pending this copies every record: the forwarder uses nextDue() instead.
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
    if (area === 'parts') out = [...this.ix.parts.values()].map((r) => structuredClone(r));
    else {
      const ids = area === 'quarantine' ? [...this.ix.quarantine] : [...this.ix.sms].filter(([, a]) => a === area).map(([id]) => id);
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
    out.sort(byReceivedAt);
    return opts.limit !== undefined ? out.slice(0, Math.max(0, opts.limit)) : out;
  }

  /**
   * The next pending record to deliver (a copy), or when none is due the earliest time one will be: the oldest record
   * (receivedAt, then id) whose nextAttemptAt is absent, unparseable or <= nowMs. Ids in `skip` are passed over as if
   * absent; ids in `hold` are never handed out and, with strictOrder, hold back their modem like a waiting record due at
   * the later of its nextAttemptAt and the time given (see firstDue). With strictOrder, a record not yet due holds back
   * every later record of the same modem. Same answer as the
   * forwarder's pickNext over list('pending'), without copying the list: it walks the ordered index and stops at the
   * first due record (cost: the records before it). Reads the in-memory index only; never throws for I/O.
   */
  nextDue(
    nowMs: number,
    opts: { strictOrder?: boolean; skip?: ReadonlySet<string>; hold?: ReadonlyMap<string, number> } = {},
  ): { next?: SmsRecord; wakeAtMs?: number } {
    const { next, wakeAtMs } = this.ix.pending.nextDue(nowMs, opts.strictOrder ?? false, opts.skip, opts.hold);
    if (next !== undefined) return { next: structuredClone(next) as SmsRecord };
    return wakeAtMs === undefined ? {} : { wakeAtMs };
  }

  /** Whether the in-memory index holds `id` as pending (no disk access). */
  isPending(id: string): boolean {
    return this.ix.pending.has(id);
  }

  async stats(): Promise<SpoolStats> {
    const count = (a: SmsArea) => [...this.ix.sms.values()].filter((x) => x === a).length;
    const now = this.clock().getTime();
    let oldest: number | undefined;
    for (const r of this.ix.pending.values()) {
      const t = isoTimeMs(r.receivedAt);
      if (t !== undefined && (oldest === undefined || t < oldest)) oldest = t;
    }
    const s: SpoolStats = {
      pending: this.ix.pending.size,
      sent: count('sent'),
      dead: count('dead'),
      ignored: count('ignored'),
      quarantine: this.ix.quarantine.size,
      parts: this.ix.parts.size,
    };
    if (oldest !== undefined) s.oldestPendingAgeMs = Math.max(0, now - oldest);
    if (this.lastError) s.lastError = { ...this.lastError };
    return s;
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
      rec = await this.readFromDisk('pending', id);
    } catch (err) {
      if (err instanceof SpoolError && err.reason === 'corrupt' && this.role === 'owner') {
        const cached = this.ix.pending.get(id);
        if (cached) return await this.restoreCorruptPending(id, cached);
        throw await this.quarantineCorruptPending(id, err);
      }
      throw err;
    }
    if (rec?.kind === 'sms') return rec;
    const now = await this.locate(id);
    this.logger.debug({ id, now: now ?? 'gone' }, `spool: pending record ${id} was changed by another process`);
    if (now === undefined) {
      throw new SpoolError('not-found', `record ${id} is no longer in pending: removed by another process (e.g. \`pulsa-bridge queue drop\`)`);
    }
    throw this.notFound(id, 'pending');
  }

  /**
   * Owner, inside the id's lock: the pending file went bad on disk (bit rot, a hand edit) while this process holds a
   * valid copy in memory. The SMS must not be lost to quarantine: the corrupt bytes are kept in quarantine for audit,
   * the pending file is rewritten from memory, and the caller's mark goes on with that copy.
   */
  private async restoreCorruptPending(id: string, cached: Readonly<SmsRecord>): Promise<SmsRecord> {
    const name = `${id}.json`;
    const text = await fsp.readFile(this.fileOf('pending', id), 'utf8').catch(() => undefined);
    const parsed = text === undefined ? undefined : parseRecordFile(text, 'pending', name);
    const qid = text !== undefined && parsed && !parsed.ok ? await this.quarantineUnreadable(this.ix, 'pending', name, text, parsed.reason, false) : undefined;
    const rec = structuredClone(cached) as SmsRecord;
    await this.writeRecord('pending', rec);
    this.logger.error({ id, quarantineId: qid }, `spool: pending record ${id} was corrupt on disk; rewritten from memory (the corrupt bytes are kept in quarantine)`);
    return structuredClone(rec);
  }

  /**
   * Owner, inside the id's lock: a pending file that fails its checks (bad JSON, checksum, ...) is moved to quarantine
   * and leaves the index, so it cannot block delivery; the same as start-up recovery does. Returns the error to throw
   * (SpoolError 'corrupt'); when the move fails the record stays pending and the error says so.
   */
  private async quarantineCorruptPending(id: string, err: SpoolError): Promise<SpoolError> {
    const name = `${id}.json`;
    let text: string;
    try {
      text = await fsp.readFile(this.fileOf('pending', id), 'utf8');
    } catch (readErr) {
      this.logger.error({ id, err: errorMessage(readErr) }, `spool: cannot re-read the unreadable pending record ${id}; left in place`);
      return err;
    }
    const parsed = parseRecordFile(text, 'pending', name);
    if (parsed.ok) return err; // rewritten by another process since: the caller's next try reads the new file
    const qid = await this.quarantineUnreadable(this.ix, 'pending', name, text, parsed.reason);
    if (qid === undefined) return err;
    this.forget('pending', id);
    return new SpoolError('corrupt', `record pending/${name} is unreadable (${parsed.reason}); moved to quarantine as ${qid}`, {
      cause: err,
      hint: `pulsa-bridge queue show ${qid}`,
    });
  }

  /** pending -> sent. */
  async markDelivered(id: string, info: { status: number; at: Date }): Promise<void> {
    assertId(id);
    return this.withLock(id, async () => {
      const rec = await this.loadPending(id);
      rec.attempts += 1;
      rec.lastStatus = info.status;
      rec.deliveredAt = info.at.toISOString();
      delete rec.nextAttemptAt;
      rec.rev = (rec.rev ?? 0) + 1;
      await this.moveSms('pending', 'sent', rec);
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
  async markRetry(id: string, info: { error: string; status?: number; nextAttemptAt: Date; baseRev?: number }): Promise<void> {
    assertId(id);
    return this.withLock(id, async () => {
      const rec = await this.loadPending(id);
      const nextAttemptAt = info.nextAttemptAt.toISOString();
      if (
        info.baseRev !== undefined &&
        (rec.rev ?? 0) === info.baseRev + 1 &&
        rec.lastError === info.error &&
        rec.nextAttemptAt === nextAttemptAt &&
        rec.lastStatus === info.status
      ) {
        this.logger.debug({ id, rev: rec.rev }, `spool: retry mark of ${id} is already on disk; written again, not counted twice`);
        await this.moveSms('pending', 'pending', rec);
        this.lastError = { id, error: info.error, at: this.clock().toISOString() };
        return;
      }
      rec.attempts += 1;
      rec.lastError = info.error;
      if (info.status !== undefined) rec.lastStatus = info.status;
      else delete rec.lastStatus;
      rec.nextAttemptAt = nextAttemptAt;
      rec.rev = (rec.rev ?? 0) + 1;
      await this.moveSms('pending', 'pending', rec);
      this.lastError = { id, error: info.error, at: this.clock().toISOString() };
    });
  }

  /** pending -> dead (permanently rejected or too old). */
  async markDead(id: string, reason: string, status?: number): Promise<void> {
    assertId(id);
    return this.withLock(id, async () => {
      const rec = await this.loadPending(id);
      rec.deadReason = reason;
      rec.lastError = reason;
      if (status !== undefined) {
        rec.attempts += 1;
        rec.lastStatus = status;
      }
      delete rec.nextAttemptAt;
      rec.rev = (rec.rev ?? 0) + 1;
      await this.moveSms('pending', 'dead', rec);
      this.lastError = { id, error: reason, at: this.clock().toISOString() };
    });
  }

  // ---------------------------------------------------------------- operator commands

  /** dead -> pending with attempts reset; for a pending record: make it due now. A client then signals the owner. */
  async retry(id: string): Promise<void> {
    assertId(id);
    await this.retryOne(id);
    await this.notifyOwner();
  }

  private retryOne(id: string): Promise<void> {
    return this.withLock(id, async () => {
      const area = await this.locate(id);
      if (area !== 'dead' && area !== 'pending') throw this.notFound(id, 'dead or pending');
      const rec = (await this.readRecord(area, id)) as SmsRecord;
      rec.attempts = 0;
      rec.requeuedAt = this.clock().toISOString(); // maxAge counts from here: the operator asked for another chance
      delete rec.nextAttemptAt;
      delete rec.deadReason;
      rec.rev = (rec.rev ?? 0) + 1;
      await this.moveSms(area, 'pending', rec);
      this.logger.info({ id, from: area }, `spool: record ${id} queued for delivery again`);
      this.emit('pending', id);
    });
  }

  /** Every dead record back to pending; records another process moved meanwhile are skipped. Returns the count. */
  async retryAllDead(): Promise<number> {
    let n = 0;
    try {
      for (const [id, area] of [...this.ix.sms]) {
        if (area !== 'dead') continue;
        try {
          await this.retryOne(id);
          n += 1;
        } catch (err) {
          if (!(err instanceof SpoolError && (err.reason === 'not-found' || err.reason === 'wrong-area'))) throw err;
          this.logger.info({ id, err: err.message }, `spool: ${id} is no longer dead; skipped`);
        }
      }
    } finally {
      if (n > 0) await this.notifyOwner();
    }
    return n;
  }

  /** Remove a record from pending/dead/ignored/quarantine. Sent records are pruned, not dropped. */
  async drop(id: string): Promise<{ area: SpoolArea }> {
    assertId(id);
    const result = await this.withLock(id, async (): Promise<{ area: SpoolArea }> => {
      const area = await this.locate(id);
      if (area === 'pending' || area === 'dead' || area === 'ignored') {
        await this.unlinkRecord(area, id);
        this.ix.sms.delete(id);
        this.ix.pending.delete(id);
        this.logger.warn({ id, area }, `spool: record ${id} dropped from ${area} by operator`);
        return { area };
      }
      if (area === undefined && this.ix.quarantine.has(id)) {
        await this.withLock(
          `q:${id}`,
          async () => {
            await this.unlinkRecord('quarantine', id);
            this.ix.quarantine.delete(id);
          },
          true,
        );
        this.logger.warn({ id, area: 'quarantine' }, `spool: record ${id} dropped from quarantine by operator`);
        return { area: 'quarantine' };
      }
      if (area === 'sent') throw new SpoolError('wrong-area', `record ${id} was delivered (sent); sent records are pruned, not dropped`);
      throw new SpoolError('not-found', `no record ${id} in pending, dead, ignored or quarantine`, { hint: 'list records to find the id' });
    });
    await this.notifyOwner();
    return result;
  }

  /** Delete sent (by deliveredAt) or ignored (by receivedAt) records older than `olderThanDays`. Returns the count. */
  async prune(area: 'sent' | 'ignored', olderThanDays: number): Promise<number> {
    if (!(olderThanDays >= 0)) throw new SpoolError('io', `prune: olderThanDays must be >= 0, got ${olderThanDays}`);
    const cutoff = this.clock().getTime() - olderThanDays * DAY_MS;
    let removed = 0;
    for (const [id, a] of [...this.ix.sms]) {
      if (a !== area) continue;
      await this.withLock(id, async () => {
        if (this.ix.sms.get(id) !== area) return;
        let rec: SmsRecord;
        try {
          rec = (await this.readRecord(area, id)) as SmsRecord;
        } catch (err) {
          if (err instanceof SpoolError && err.reason === 'not-found') {
            this.forget(area, id);
            return;
          }
          this.logger.error({ id, area, err: errorMessage(err) }, 'spool: prune skips unreadable record');
          return;
        }
        const t = isoTimeMs(area === 'sent' ? rec.deliveredAt ?? rec.receivedAt : rec.receivedAt);
        if (t === undefined || t >= cutoff) return;
        await this.unlinkRecord(area, id, true);
        this.ix.sms.delete(id);
        removed += 1;
      });
    }
    if (removed > 0) this.logger.info({ area, removed, olderThanDays }, `spool: pruned ${removed} ${area} records`);
    return removed;
  }
}
