/**
 * Durable file primitives of the spool: where a record lives (`<dir>/<area>/<id>.json`) and how it is written,
 * removed and read. write() is Maildir-like (private tmp file -> fdatasync -> rename -> group-committed directory
 * fsync) and resolves only when durable; a reader sees the old file or the new one, never a part. Failures are
 * SpoolError naming the record. Reads are bounded (O_NOFOLLOW, fstat, MAX_RECORD_BYTES) and, with the spool key,
 * accept only records whose mac verifies; a client without the key may read but never write.
 * ensureSpoolDirs() refuses (UnsafePathError) a spool or area that is a symlink, foreign-owned or group/other-writable.
 * System calls go through `diskOps` (plain callback fs on numeric fds; tests spy on it).
 */
import { randomBytes } from 'node:crypto';
import fs, { constants as C, promises as fsp, type Dirent } from 'node:fs';
import path from 'node:path';
import { errorMessage, SpoolError, UnsafePathError } from '../errors.js';
import type { Logger } from '../log.js';
import { parseRecordFile, serializeRecord, type ParsedRecord } from './codec.js';
import { DirCommitter, type CommitStats } from './commit.js';
import { checkPrivateDir } from './safe-dir.js';
import type { AnyRecord, SpoolArea } from './types.js';

/** Why an unsigned record is refused once the spool has a key. */
export const UNSIGNED_REASON =
  'integrity check failed: unsigned record (no mac): written without the spool key after the spool was signed';

export function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** Mode of the spool directory and its areas: nothing for others (SMS text, phone numbers). */
export const SPOOL_DIR_MODE = 0o750;

/**
 * The largest record file read. A real record is far below it (a 255-part SMS with its PDUs is about 250 KB); the
 * quarantine record of an unreadable file up to MAX_QUARANTINE_RAW_BYTES stays below it, escaping included.
 */
export const MAX_RECORD_BYTES = 4 * 1024 * 1024;
/** An unreadable file above this is moved aside as it is rather than copied into a quarantine record. */
export const MAX_QUARANTINE_RAW_BYTES = 512 * 1024;
/** Where the owner moves files that are not records (too big, not regular, not *.json), as they are. */
export const FOREIGN_DIR = 'foreign';

/** An fs-like error with a code (ENOTREG and EFBIG for files the bounded read refuses). */
function fileError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}

/**
 * The text of a regular file of at most `max` bytes, checked with fstat before any read (see the header). A FIFO is
 * opened non-blocking, so it cannot stall the open; its fstat refuses it.
 */
export function readBounded(file: string, max: number): Promise<string> {
  return new Promise((resolve, reject) => {
    fs.open(file, C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK, (err, fd) => {
      if (err) return reject(err);
      const done = (e: NodeJS.ErrnoException | null, text?: string) =>
        fs.close(fd, () => (e ? reject(e) : resolve(text!)));
      fs.fstat(fd, (e, st) => {
        if (e) return done(e);
        if (!st.isFile()) return done(fileError('ENOTREG', `${file} is not a regular file`));
        if (st.size > max)
          return done(fileError('EFBIG', `${file} is ${st.size} bytes, above the ${max} a record may have`));
        // One byte more than fstat said: a file growing under us is caught, not read without bound.
        const buf = Buffer.allocUnsafe(st.size + 1);
        const step = (off: number): void =>
          fs.read(fd, buf, off, buf.length - off, off, (re, n) => {
            if (re) return done(re);
            if (n === 0) return done(null, buf.toString('utf8', 0, off));
            if (off + n > st.size) return done(fileError('EFBIG', `${file} grew while it was read`));
            step(off + n);
          });
        step(0);
      });
    });
  });
}

/**
 * mkdir -p one component at a time (never Node's recursive mkdir: under /proc it loops forever on ENOENT): a component
 * that exists must be a directory; any other failure is thrown as it is (ENOENT under /proc or /sys, EACCES, EROFS,
 * ENOTDIR). Returns the directories it created.
 */
export async function makeDirs(dir: string, mode = SPOOL_DIR_MODE): Promise<string[]> {
  const abs = path.resolve(dir);
  const chain: string[] = [];
  for (let d = abs; ; d = path.dirname(d)) {
    chain.unshift(d);
    if (path.dirname(d) === d) break;
  }
  const created: string[] = [];
  for (const d of chain) {
    try {
      await fsp.mkdir(d, { mode });
      created.push(d);
    } catch (err) {
      if (errnoCode(err) !== 'EEXIST') throw err;
      const st = await fsp.stat(d);
      if (!st.isDirectory()) throw Object.assign(new Error(`${d} exists and is not a directory`), { code: 'ENOTDIR' });
    }
  }
  return created;
}

/**
 * A callback fs call as a promise. Callback fs on numeric fds, not fs/promises FileHandles: those cost about twice the
 * main-thread CPU per open+close and per read (bench/README.md, the daemon CPU profile).
 */
function fdCall(
  call: (fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => void,
  fd: number,
): Promise<void> {
  return new Promise((resolve, reject) => call(fd, (err) => (err ? reject(err) : resolve())));
}

/** Write all of `buf` at the file's position (a short write is continued). */
function writeAll(fd: number, buf: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const step = (off: number): void =>
      fs.write(fd, buf, off, buf.length - off, null, (err, n) => {
        if (err) reject(err);
        else if (off + n < buf.length) step(off + n);
        else resolve();
      });
    step(0);
  });
}

/**
 * The system calls of the record files, looked up on this object at each call so tests can spy on one (count the
 * directory fsyncs, fail one tmp write or one open).
 */
export const diskOps = {
  /** open(2): a numeric fd; the caller closes it. */
  open: (file: string, flags: string, mode?: number): Promise<number> =>
    new Promise((resolve, reject) => fs.open(file, flags, mode, (err, fd) => (err ? reject(err) : resolve(fd)))),
  close: (fd: number): Promise<void> => fdCall(fs.close, fd),
  /** A new private tmp file ('wx', 0640). */
  openNew: (file: string): Promise<number> => diskOps.open(file, 'wx', 0o640),
  write: (fd: number, buf: Buffer): Promise<void> => writeAll(fd, buf),
  datasync: (fd: number): Promise<void> => fdCall(fs.fdatasync, fd),
  /** A record file's text, bounded (readBounded: never more than MAX_RECORD_BYTES, never through a symlink). */
  readText: (file: string): Promise<string> => readBounded(file, MAX_RECORD_BYTES),
  rename: (from: string, to: string): Promise<void> =>
    new Promise((resolve, reject) => fs.rename(from, to, (err) => (err ? reject(err) : resolve()))),
  unlink: (file: string): Promise<void> =>
    new Promise((resolve, reject) => fs.unlink(file, (err) => (err ? reject(err) : resolve()))),
  /** open the directory, fsync it, close it (not kept open: a kept fd would outlive a spool directory replaced under it). */
  async fsyncDir(dir: string): Promise<void> {
    const fd = await diskOps.open(dir, 'r');
    try {
      await fdCall(fs.fsync, fd);
    } finally {
      await diskOps.close(fd);
    }
  },
};

export class RecordFiles {
  private tmpCounter = 0;
  /** Shares directory fsyncs between overlapping writes and unlinks (commit.ts). */
  private readonly committer = new DirCommitter((dir) => diskOps.fsyncDir(dir));

  /** The spool key records are signed and checked with (undefined: neither). */
  private key: Buffer | undefined;
  /** Why this process cannot sign (a client that cannot read the key): write() refuses with it. */
  private keyProblem: string | undefined;
  /** What to do about keyProblem (default: run as the service user or root). */
  private keyHint: string | undefined;

  constructor(
    readonly dir: string,
    private readonly doFsync: boolean,
    private readonly logger: Logger,
  ) {}

  /** Records are signed with and checked against `key` from now on; `problem`: this process cannot sign (see header). */
  setKey(key: Buffer | undefined, problem?: string, hint?: string): void {
    this.key = key;
    this.keyProblem = problem;
    this.keyHint = hint;
  }

  get signing(): Buffer | undefined {
    return this.key;
  }

  /** Directory fsyncs done and calls they covered (group commit; figures and tests). */
  commitStats(): CommitStats {
    return this.committer.stats();
  }

  /** Owner, at open: the spool directory and every area exist, are private to the daemon (see the header). */
  async ensureSpoolDirs(areas: readonly (SpoolArea | 'tmp' | typeof FOREIGN_DIR)[]): Promise<void> {
    const dirs = [this.dir, ...areas.map((a) => path.join(this.dir, a))];
    try {
      await makeDirs(this.dir);
      await checkPrivateDir(this.dir, 'spool.dir');
      for (const d of dirs.slice(1)) {
        await fsp.mkdir(d, { mode: SPOOL_DIR_MODE }).catch((err: unknown) => {
          if (errnoCode(err) !== 'EEXIST') throw err;
        });
        await checkPrivateDir(d, `the spool area ${path.basename(d)}/ of spool.dir`);
      }
      for (const d of dirs) {
        const st = await fsp.lstat(d);
        if ((st.mode & 0o007) !== 0) {
          await fsp.chmod(d, st.mode & 0o7770); // ours (checked above): never a directory of another user
          this.logger.info(
            { dir: d, was: (st.mode & 0o777).toString(8) },
            `spool: ${d} was open to other users; permissions for others removed`,
          );
        }
      }
      await this.fsyncDir(this.dir);
    } catch (err) {
      if (err instanceof UnsafePathError) throw err;
      const code = errnoCode(err);
      throw new SpoolError('io', `cannot create the spool directory ${this.dir}: ${errorMessage(err)}`, {
        cause: err,
        hint:
          code === 'ENOENT' || code === 'EPERM' || code === 'EROFS'
            ? `spool.dir must be on a normal writable filesystem (not /proc, /sys or a read-only mount), e.g. /var/lib/pulsa-bridge/spool`
            : 'check that the spool directory exists and is writable by the service user',
      });
    }
  }

  /**
   * Owner: move `<area>/<name>` aside as it is (rename into foreign/, never read): a file too big, not regular, or not
   * a record's name. Returns the name it got there; throws as the system said.
   */
  async moveAside(area: SpoolArea | 'tmp', name: string): Promise<string> {
    const base = `${area}.${name}`.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 200);
    const foreign = path.join(this.dir, FOREIGN_DIR);
    let target = base;
    for (let n = 1; ; n++) {
      try {
        await fsp.lstat(path.join(foreign, target));
      } catch (err) {
        if (errnoCode(err) === 'ENOENT') break;
        throw err;
      }
      target = `${base}.${n}`;
    }
    await diskOps.rename(path.join(this.dir, area, name), path.join(foreign, target));
    await this.fsyncDir(foreign);
    await this.fsyncDir(path.join(this.dir, area));
    return target;
  }

  fileOf(area: SpoolArea, id: string): string {
    return path.join(this.dir, area, `${id}.json`);
  }

  areaDir(area: SpoolArea | 'tmp'): string {
    return path.join(this.dir, area);
  }

  /** fsync `dir` (shared with overlapping callers: commit.ts); resolves after an fsync that started after this call. */
  async fsyncDir(dir: string): Promise<void> {
    if (!this.doFsync) return;
    await this.committer.sync(dir);
  }

  /**
   * A client run as root (`sudo pulsa-bridge queue retry`) would otherwise leave root-owned 0640 files that the
   * daemon's service user cannot read: give new files the owner of the spool directory. No-op for other users.
   */
  private async matchOwnership(fd: number): Promise<void> {
    if (typeof process.getuid !== 'function' || process.getuid() !== 0) return;
    const st = await fsp.stat(this.dir);
    if (st.uid !== 0 || st.gid !== 0)
      await new Promise<void>((resolve, reject) =>
        fs.fchown(fd, st.uid, st.gid, (err) => (err ? reject(err) : resolve())),
      );
  }

  /** tmp write -> fdatasync -> rename into area -> fsync area dir (shared with overlapping calls). */
  async write(area: SpoolArea, rec: AnyRecord): Promise<void> {
    if (this.keyProblem !== undefined) {
      throw new SpoolError('io', `cannot write ${area}/${rec.id}.json: ${this.keyProblem}`, {
        hint:
          this.keyHint ??
          'run the command as the service user (sudo -u pulsa-bridge pulsa-bridge queue ...) or as root',
      });
    }
    const buf = Buffer.from(serializeRecord(rec, this.key ? { area, key: this.key } : undefined), 'utf8');
    const tmp = path.join(
      this.dir,
      'tmp',
      `${rec.id}.${process.pid}.${++this.tmpCounter}.${randomBytes(4).toString('hex')}.tmp`,
    );
    let renamed = false;
    try {
      const fd = await diskOps.openNew(tmp);
      try {
        await this.matchOwnership(fd);
        await diskOps.write(fd, buf);
        if (this.doFsync) await diskOps.datasync(fd);
      } finally {
        await diskOps.close(fd);
      }
      await diskOps.rename(tmp, this.fileOf(area, rec.id));
      renamed = true;
      await this.fsyncDir(this.areaDir(area));
    } catch (err) {
      if (!renamed) {
        await fsp.rm(tmp, { force: true }).catch((rmErr: unknown) => {
          // Best effort: the owner's open() deletes tmp leftovers anyway.
          this.logger.debug(
            { file: tmp, err: errorMessage(rmErr) },
            'spool: could not remove tmp file after failed write',
          );
        });
      }
      throw new SpoolError('io', `cannot write ${area}/${rec.id}.json: ${errorMessage(err)}`, {
        cause: err,
        hint: `check free space and permissions of ${this.dir}`,
      });
    }
  }

  /** `missingOk`: the file being gone already is fine (the source of a move another process removed). */
  async unlink(area: SpoolArea, id: string, missingOk = false): Promise<void> {
    try {
      await diskOps.unlink(this.fileOf(area, id));
    } catch (err) {
      if (missingOk && errnoCode(err) === 'ENOENT') {
        this.logger.debug({ id, area }, `spool: ${area}/${id}.json was already removed by another process`);
        return;
      }
      throw new SpoolError('io', `cannot remove ${area}/${id}.json: ${errorMessage(err)}`, { cause: err });
    }
    try {
      await this.fsyncDir(this.areaDir(area));
    } catch (err) {
      throw new SpoolError('io', `cannot fsync ${area}/ after removing ${id}.json: ${errorMessage(err)}`, {
        cause: err,
      });
    }
  }

  /** Remove `<area>/<name>` (any name, e.g. an unreadable file) and fsync the area; errors are thrown as they are. */
  async unlinkName(area: SpoolArea, name: string): Promise<void> {
    await fsp.unlink(path.join(this.dir, area, name));
    await this.fsyncDir(this.areaDir(area));
  }

  /** The raw text of `<area>/<name>`; fs errors are thrown as they are. */
  readText(area: SpoolArea, name: string): Promise<string> {
    return diskOps.readText(path.join(this.dir, area, name));
  }

  /** The record file as it is on disk now; undefined when there is no such file. */
  async read(area: SpoolArea, id: string): Promise<AnyRecord | undefined> {
    let text: string;
    try {
      text = await diskOps.readText(this.fileOf(area, id));
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return undefined;
      throw new SpoolError('io', `cannot read ${area}/${id}.json: ${errorMessage(err)}`, { cause: err });
    }
    const parsed = this.parse(text, area, `${id}.json`);
    if (!parsed.ok) {
      throw new SpoolError('corrupt', `record ${area}/${id}.json is unreadable: ${parsed.reason}`, {
        hint: 'restart the bridge: start-up moves unreadable records to quarantine',
      });
    }
    return parsed.record;
  }

  /** parseRecordFile with this spool's key: with a key, a record without a mac fails as unsigned. */
  parse(text: string, area: SpoolArea, name: string): ParsedRecord {
    const parsed = parseRecordFile(text, area, name, this.key);
    if (parsed.ok && this.key && parsed.mac === 'absent') return { ok: false, reason: UNSIGNED_REASON };
    return parsed;
  }

  /**
   * The entries of an area, sorted by name, each with whether it is a regular file (lstat's view: a symlink is not).
   * A missing or unlistable directory is logged and counts as empty.
   */
  async listEntries(dir: string): Promise<{ name: string; regular: boolean }[]> {
    let entries: Dirent[];
    try {
      entries = await fsp.readdir(dir, { withFileTypes: true });
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return [];
      this.logger.error({ dir, err: errorMessage(err) }, 'spool: cannot list directory');
      return [];
    }
    return entries
      .map((e) => ({ name: e.name, regular: e.isFile() }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Names in a directory, sorted; a missing or unlistable directory is logged and counts as empty. */
  async list(dir: string): Promise<string[]> {
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
}
