/**
 * The spool's integrity key: `<stateDir>/spool.key`, one line of 64 hex digits, mode 0600, the HMAC key every record is
 * signed with (codec.ts), so a file written without it is not taken for a record. createKey never replaces a key and
 * a crash leaves none or the whole key. readKey refuses (UnsafePathError) a symlink, a non-regular, foreign-owned or
 * group/other-readable file, or one that is not one key line; ENOENT -> undefined. The adoption marker
 * `spool.key.adopting` (an interrupted upgrade resumes signing unsigned records) counts only when it is the daemon's
 * own: a regular file of its user, not writable by others, holding a MAC under the key; any other is refused.
 * A client (CLI, even under sudo) expects the key owned by the spool directory's owner.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import fs, { constants as C, promises as fsp } from 'node:fs';
import path from 'node:path';
import { UnsafePathError } from '../errors.js';
import type { Logger } from '../log.js';

export const SPOOL_KEY_FILE = 'spool.key';
const KEY_LINE = /^([0-9a-f]{64})\n?$/;

export function keyFile(stateDir: string): string {
  return path.join(path.resolve(stateDir), SPOOL_KEY_FILE);
}

/** Whose key file is trusted (see the header): a uid and how to name it in an error. */
export interface KeyOwner {
  uid: number;
  who: string;
}

/** The daemon's own expectation: the key is its euid's. */
export function selfOwner(): KeyOwner | undefined {
  return typeof process.geteuid === 'function' ? { uid: process.geteuid(), who: "the daemon's user" } : undefined;
}

/** A client's expectation: the key is owned by the owner of the spool directory `spoolDir` (the daemon's user). */
export async function spoolDirOwner(spoolDir: string): Promise<KeyOwner> {
  return { uid: (await fsp.stat(spoolDir)).uid, who: `the spool directory's owner (the daemon's user)` };
}

/**
 * The key in `stateDir`, undefined when there is none; errors as in the header (EACCES is thrown as it is). `owner`:
 * who must own the file (default: this process's euid, the daemon's expectation).
 */
export async function readKey(
  stateDir: string,
  owner: KeyOwner | undefined = selfOwner(),
): Promise<Buffer | undefined> {
  const file = keyFile(stateDir);
  let fd: number;
  try {
    fd = await new Promise<number>((resolve, reject) =>
      fs.open(file, C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK, (err, f) => (err ? reject(err) : resolve(f))),
    );
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP')
      throw new UnsafePathError(
        `the spool's integrity key ${file} is a symbolic link`,
        `replace it with the key file itself (mode 0600), restored from the backup of ${path.dirname(file)}`,
      );
    throw err;
  }
  try {
    const st = fs.fstatSync(fd);
    const uid = owner?.uid ?? st.uid;
    if (!st.isFile())
      throw new UnsafePathError(
        `the spool's integrity key ${file} is not a regular file`,
        `remove it; the daemon creates a new key only for a spool without signed records`,
      );
    if (st.uid !== uid) {
      // Never hint a chown to root: a key owned by root is refused by a daemon running as its service user.
      const hint =
        uid === 0
          ? `chown ${file} to the service user the daemon runs as (not root), and run the daemon as that user`
          : `chown ${uid} ${file}`;
      throw new UnsafePathError(
        `the spool's integrity key ${file} is owned by uid ${st.uid}, not by ${owner?.who ?? "the daemon's user"} (uid ${uid})`,
        hint,
      );
    }
    if ((st.mode & 0o077) !== 0) {
      throw new UnsafePathError(
        `the spool's integrity key ${file} is readable by others (mode ${(st.mode & 0o777).toString(8)}): anyone who read it can forge records`,
        `chmod 600 ${file}`,
      );
    }
    const buf = Buffer.alloc(Math.min(st.size, 256));
    const n = fs.readSync(fd, buf, 0, buf.length, 0);
    const m = KEY_LINE.exec(buf.subarray(0, n).toString('latin1'));
    if (!m)
      throw new UnsafePathError(
        `the spool's integrity key ${file} is not a key (64 hex digits)`,
        `restore ${file} from the backup of ${path.dirname(file)}`,
      );
    return Buffer.from(m[1]!, 'hex');
  } finally {
    fs.closeSync(fd);
  }
}

/** A new key's bytes (createKey writes them). */
export function newKey(): Buffer {
  return randomBytes(32);
}

/**
 * Owner: `key` (newKey()) as the spool's key, durably (see the header). Returns the key now in the file (another's, when
 * one appeared meanwhile).
 */
export async function createKey(stateDir: string, doFsync: boolean, key: Buffer = newKey()): Promise<Buffer> {
  const file = keyFile(stateDir);
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fh = await fsp.open(tmp, C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW, 0o600);
  try {
    await fh.writeFile(`${key.toString('hex')}\n`);
    if (doFsync) await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    try {
      await fsp.link(tmp, file);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return (await readKey(stateDir)) ?? key;
      if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw err;
      await fsp.rename(tmp, file); // no hard links on this filesystem
    }
  } finally {
    await fsp.rm(tmp, { force: true });
  }
  if (doFsync) {
    const dfd = await fsp.open(path.dirname(file), 'r');
    try {
      await dfd.sync();
    } finally {
      await dfd.close();
    }
  }
  return key;
}

/** The adoption marker's path (see the header). */
export function adoptingFile(stateDir: string): string {
  return `${keyFile(stateDir)}.adopting`;
}

async function syncDir(dir: string): Promise<void> {
  const dfd = await fsp.open(dir, 'r');
  try {
    await dfd.sync();
  } finally {
    await dfd.close();
  }
}

const MARKER_LINE = /^adopting v1 ([0-9a-f]{64})\n?$/;

/** What the marker holds: a MAC of its purpose under the key, so only a holder of the key can write one. */
function markerMac(key: Buffer): string {
  return createHmac('sha256', key).update('pulsa-bridge spool.key.adopting v1').digest('hex');
}

/**
 * Whether an adoption (signing of records that predate the key) is unfinished: 'yes' only for the daemon's own marker
 * (a regular file of `owner`, not writable by others, whose MAC verifies with `key`); 'refused' with the reason for any
 * other file of that name (it is never obeyed); 'no' when there is none.
 */
export async function adoptionState(
  stateDir: string,
  key: Buffer,
  owner: KeyOwner | undefined = selfOwner(),
): Promise<{ state: 'yes' | 'no' } | { state: 'refused'; reason: string }> {
  const file = adoptingFile(stateDir);
  let fd: number;
  try {
    fd = await new Promise<number>((resolve, reject) =>
      fs.open(file, C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK, (err, f) => (err ? reject(err) : resolve(f))),
    );
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { state: 'no' };
    if (code === 'ELOOP') return { state: 'refused', reason: `${file} is a symbolic link` };
    return { state: 'refused', reason: `${file} cannot be read (${code ?? String(err)})` };
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) return { state: 'refused', reason: `${file} is not a regular file` };
    if (owner !== undefined && st.uid !== owner.uid)
      return { state: 'refused', reason: `${file} is owned by uid ${st.uid}, not by ${owner.who} (uid ${owner.uid})` };
    if ((st.mode & 0o022) !== 0)
      return { state: 'refused', reason: `${file} is writable by others (mode ${(st.mode & 0o777).toString(8)})` };
    const buf = Buffer.alloc(Math.min(st.size, 256));
    const m = MARKER_LINE.exec(buf.subarray(0, fs.readSync(fd, buf, 0, buf.length, 0)).toString('latin1'));
    const want = Buffer.from(markerMac(key), 'hex');
    if (!m || !timingSafeEqual(Buffer.from(m[1]!, 'hex'), want))
      return {
        state: 'refused',
        reason: `${file} was not written by this spool's daemon (its MAC does not verify with ${SPOOL_KEY_FILE})`,
      };
    return { state: 'yes' };
  } finally {
    fs.closeSync(fd);
  }
}

/** Owner: durably mark the adoption as started, bound to `key` (written before the key itself). */
export async function markAdopting(stateDir: string, key: Buffer, doFsync: boolean): Promise<void> {
  const file = adoptingFile(stateDir);
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fh = await fsp.open(tmp, C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW, 0o600);
  try {
    await fh.writeFile(`adopting v1 ${markerMac(key)}\n`);
    if (doFsync) await fh.sync();
  } finally {
    await fh.close();
  }
  await fsp.rename(tmp, file);
  if (doFsync) await syncDir(path.dirname(file));
}

/** Owner: every record is signed; durably remove the marker. */
export async function doneAdopting(stateDir: string, doFsync: boolean): Promise<void> {
  await fsp.rm(adoptingFile(stateDir), { force: true });
  if (doFsync) await syncDir(path.dirname(adoptingFile(stateDir)));
}

/**
 * The owner's key at open, and whether unsigned records are to be signed (adopted) now: a spool without a key gets
 * one (the marker, bound to it by a MAC, goes down first and comes off only when every record is signed: a start that
 * dies in between resumes); with a key, only the daemon's own marker resumes an adoption; any other is refused, logged,
 * and the unsigned records are then quarantined, never signed.
 */
export async function ownerKey(
  stateDir: string,
  doFsync: boolean,
  logger: Logger,
): Promise<{ key: Buffer; adopting: boolean }> {
  const existing = await readKey(stateDir);
  if (existing === undefined) {
    const fresh = newKey();
    await markAdopting(stateDir, fresh, doFsync);
    const key = await createKey(stateDir, doFsync, fresh);
    logger.warn(
      { file: keyFile(stateDir) },
      `spool: integrity key ${keyFile(stateDir)} created: records are signed with it from now on (back it up with the spool)`,
    );
    return { key, adopting: true };
  }
  const marker = await adoptionState(stateDir, existing);
  if (marker.state === 'refused') {
    logger.error(
      { reason: marker.reason },
      `spool: ignoring the adoption marker: ${marker.reason}; unsigned records are quarantined, not signed (remove the file once you have checked the quarantine)`,
    );
  }
  return { key: existing, adopting: marker.state === 'yes' };
}

/**
 * A client's key (the CLI, even under sudo): the daemon's, owned by the spool directory's owner. A key this user may
 * not read is no error: records are then shown unchecked, and `unreadable` says why.
 */
export async function clientKey(
  stateDir: string,
  spoolDir: string,
  logger: Logger,
): Promise<{ key: Buffer | undefined; unreadable?: string }> {
  try {
    return { key: await readKey(stateDir, await spoolDirOwner(spoolDir)) };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EACCES' && code !== 'EPERM') throw err;
    logger.debug(
      { file: keyFile(stateDir) },
      'spool: integrity key not readable by this user; records are not checked',
    );
    return {
      key: undefined,
      unreadable: `this user cannot read the spool's integrity key ${keyFile(stateDir)} (records are shown unchecked)`,
    };
  }
}
