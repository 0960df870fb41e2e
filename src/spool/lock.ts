/**
 * The spool's owner lock, `<dir>/spool.lock`: one JSON line {pid, startedAt, bootId?, procStart?} shared with every
 * released version. Created exclusively with complete content (link(), else 'wx'); a live owner refuses the open
 * (SpoolError 'locked'); a stale lock (dead or reused pid, other boot, unreadable) is taken over atomically with a
 * warning. release() removes only our own text. Clients take no lock; signalLockOwner SIGHUPs only a pulsa-bridge
 * process of the lock file's owner.
 */
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { errorMessage, SpoolError } from '../errors.js';
import type { Logger } from '../log.js';

const SPOOL_LOCK_FILE = 'spool.lock';

/** The process holding a spool's lock, as written in `<dir>/spool.lock`. */
export interface SpoolLockOwner {
  pid: number;
  startedAt: string;
}

interface LockContent extends SpoolLockOwner {
  bootId?: string;
  /** Start time of the owner process (field 22 of /proc/<pid>/stat, clock ticks since boot); absent without /proc. */
  procStart?: string;
}

/** Lock files held by this process (absolute paths): our own pid in a lock we do not hold is left from an earlier boot. */
const heldLocks = new Set<string>();

function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
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
  const fields = statLine
    .slice(close + 1)
    .trim()
    .split(/\s+/); // fields[0] is field 3 (state)
  const start = fields[22 - 3];
  return start !== undefined && /^\d+$/.test(start) ? start : undefined;
}

/**
 * When process `pid` started (clock ticks since boot), or undefined when this system cannot tell: no /proc, or the
 * process is hidden or gone (then the liveness check decides, as before start times were recorded).
 */
async function processStartTime(pid: number): Promise<string | undefined> {
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
  await fsp.writeFile(file, text, { flag: 'wx', mode: 0o640 }); // no hard links on this filesystem
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
  if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0 || typeof startedAt !== 'string')
    return undefined;
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

export type SignalSender = (pid: number, signal: NodeJS.Signals) => void;

/** process.kill, except towards this very process when it has no handler (the default action would terminate it). */
export function defaultSignal(pid: number, signal: NodeJS.Signals): void {
  if (pid === process.pid && process.listenerCount(signal) === 0) {
    throw new Error(`the owner is this process and it has no ${signal} handler`);
  }
  process.kill(pid, signal);
}

/**
 * Why process `pid` must not get the spool's SIGHUP, or undefined when it may: it must be a pulsa-bridge process (its
 * command line names pulsa-bridge) run by the user that owns the lock file. This very process always may (an owner
 * Spool in the same process). Without /proc (not Linux) nothing can be checked and the lock's liveness decides alone.
 */
export async function notOurDaemon(pid: number, lockFile: string): Promise<string | undefined> {
  if (pid === process.pid) return undefined;
  let argv: string[];
  try {
    argv = (await fsp.readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').filter((a) => a !== '');
  } catch (err) {
    if (!(await procAvailable())) return undefined; // no /proc here: cannot tell; liveness decided
    return `its command line cannot be read (${errnoCode(err) ?? errorMessage(err)})`;
  }
  if (!argv.some((a) => a.includes('pulsa-bridge')))
    return `it runs ${JSON.stringify(argv.slice(0, 3).join(' ').slice(0, 80))}`;
  try {
    const [proc, lock] = await Promise.all([fsp.stat(`/proc/${pid}`), fsp.stat(lockFile)]);
    if (proc.uid !== lock.uid) return `it runs as uid ${proc.uid}, the spool lock belongs to uid ${lock.uid}`;
  } catch (err) {
    return `its owner cannot be checked (${errnoCode(err) ?? errorMessage(err)})`;
  }
  return undefined;
}

let procCache: boolean | undefined;
async function procAvailable(): Promise<boolean> {
  if (procCache === undefined) {
    try {
      await fsp.access('/proc/self/cmdline');
      procCache = true;
    } catch {
      // Feature probe, not a failure: no /proc on this system.
      procCache = false;
    }
  }
  return procCache;
}

/** Client side: tell the live owner of `dir` (if any) to rescan (SIGHUP). Never throws; failures are logged at debug. */
export async function signalLockOwner(dir: string, signal: SignalSender, logger: Logger): Promise<void> {
  let owner: SpoolLockOwner | undefined;
  try {
    owner = await readLockOwner(dir);
  } catch (err) {
    // Ignored on purpose: without the lock we cannot know the owner; it rescans at its next start anyway.
    logger.debug({ err: errorMessage(err) }, 'spool: cannot read the lock; owner not signalled');
    return;
  }
  if (!owner) {
    logger.debug({ dir }, 'spool: no owner running; it sees the change at its next start');
    return;
  }
  const refused = await notOurDaemon(owner.pid, path.join(path.resolve(dir), SPOOL_LOCK_FILE));
  if (refused) {
    logger.warn(
      { pid: owner.pid, reason: refused },
      `spool: the lock names process ${owner.pid}, which is not the spool's daemon (${refused}); not signalled`,
    );
    return;
  }
  try {
    signal(owner.pid, 'SIGHUP');
    logger.debug({ pid: owner.pid }, 'spool: owner signalled (SIGHUP) to rescan');
  } catch (err) {
    // Ignored on purpose: the owner may have exited since the lock was read; a new owner scans at start.
    logger.debug({ pid: owner.pid, err: errorMessage(err) }, 'spool: could not signal the owner');
  }
}

/** The lock of one spool directory, held by this process from acquire() until release(). */
export class SpoolLock {
  /** The exact text of our lock file while we hold it. */
  private text: string | undefined;

  private constructor(
    private readonly dir: string,
    private readonly file: string,
    private readonly logger: Logger,
  ) {}

  /** Take `<dir>/spool.lock` (see the header) or fail with SpoolError 'locked' / 'io'. */
  static async acquire(dir: string, opts: { logger: Logger; clock: () => Date }): Promise<SpoolLock> {
    const lock = new SpoolLock(dir, path.join(dir, SPOOL_LOCK_FILE), opts.logger);
    await lock.take(opts.clock());
    return lock;
  }

  /** Remove the lock file if it is still ours. Idempotent. */
  async release(): Promise<void> {
    if (this.text === undefined) return;
    const { file } = this;
    const ours = this.text;
    this.text = undefined;
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

  private async take(startedAt: Date): Promise<void> {
    const { file } = this;
    const boot = await currentBootId();
    const procStart = await processStartTime(process.pid);
    const content: LockContent = {
      pid: process.pid,
      startedAt: startedAt.toISOString(),
      ...(boot ? { bootId: boot } : {}),
      ...(procStart ? { procStart } : {}),
    };
    const text = `${JSON.stringify(content)}\n`;
    for (let attempt = 0; attempt < 5; attempt += 1) {
      if (await this.createLockFile(text)) {
        this.text = text;
        heldLocks.add(file);
        return;
      }
      const st = await inspectLock(file);
      if (st.state === 'absent') continue;
      if (st.state === 'live') {
        const pid = st.owner.pid;
        throw new SpoolError(
          'locked',
          `spool ${this.dir} is in use by process ${pid} (is pulsa-bridge already running?)`,
          {
            hint: `stop it first (systemctl stop pulsa-bridge); \`pulsa-bridge queue ...\` works while it runs; if process ${pid} is not pulsa-bridge, delete ${file}`,
          },
        );
      }
      await this.setStaleLockAside(st);
      // Next round: create with O_EXCL semantics again; whoever created a lock meanwhile wins and we see it live.
    }
    throw new SpoolError(
      'locked',
      `cannot take the spool lock ${file}: it keeps changing (another pulsa-bridge starting at the same time?)`,
    );
  }

  /**
   * Remove a lock judged stale, atomically: rename() moves whatever file holds the lock name right now to a name only
   * this process uses, so of several starters judging the same stale lock exactly one gets it. The moved file is then
   * judged again: if it is not stale (another starter replaced the stale lock with its own live lock between our read
   * and our rename), it is linked back under the lock name (link() never overwrites) and we go on to be refused.
   */
  private async setStaleLockAside(st: Extract<LockState, { state: 'stale' }>): Promise<void> {
    const { file } = this;
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
        throw new SpoolError('io', `cannot read the spool lock moved to ${aside}: ${errorMessage(err)}`, {
          cause: err,
        });
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
        this.logger.debug(
          { lock: file, owner: verdict.owner },
          'spool: a live lock was set aside by mistake and has been put back',
        );
      } catch (err) {
        keepAside = true;
        this.logger.error(
          { lock: file, owner: verdict.owner, err: errorMessage(err) },
          `spool: the lock of process ${verdict.owner.pid} could not be put back (${errorMessage(err)}); it is kept as ${aside}`,
        );
        throw new SpoolError(
          'locked',
          `spool ${this.dir} is being taken by several processes at once (process ${verdict.owner.pid} among them)`,
          {
            hint: 'stop every pulsa-bridge on this spool, then start one',
          },
        );
      }
    } finally {
      if (!keepAside) {
        await fsp.rm(aside, { force: true }).catch((rmErr: unknown) => {
          // A leftover aside file is harmless (not spool.lock, not *.json); say so and go on.
          this.logger.debug(
            { file: aside, err: errorMessage(rmErr) },
            'spool: could not remove the set-aside lock file',
          );
        });
      }
    }
  }

  /**
   * Exclusive create with complete content: write a private file, then link() it to the lock name (fails with EEXIST
   * like O_EXCL, but a reader never sees a half-written lock). Filesystems without hard links fall back to 'wx'.
   */
  private async createLockFile(text: string): Promise<boolean> {
    const { file } = this;
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    try {
      await fsp.writeFile(tmp, text, { flag: 'wx', mode: 0o640 });
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
        await fsp.writeFile(file, text, { flag: 'wx', mode: 0o640 });
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
}
