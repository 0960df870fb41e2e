/**
 * Is a directory private to this process's user? (lstat/stat only; never changes a mode or an owner.)
 * checkPrivateDir(dir) passes when `dir` is a real directory owned by the effective uid and not group/other-writable,
 * and every directory above it is owned by root or this uid and not writable by others (unless sticky, as /tmp).
 * Otherwise UnsafePathError naming the problem, with the fixing command as its hint. Without getuid every check passes.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { UnsafePathError } from '../errors.js';

const GROUP_OR_OTHER_WRITE = 0o022;
const STICKY = 0o1000;

function euid(): number | undefined {
  return typeof process.geteuid === 'function' ? process.geteuid() : undefined;
}

/** `what`: how the operator knows the directory, e.g. 'spool.dir' (it names the setting to change). */
export async function checkPrivateDir(dir: string, what: string): Promise<void> {
  const uid = euid();
  if (uid === undefined) return;
  const abs = path.resolve(dir);
  const st = await fsp.lstat(abs);
  if (st.isSymbolicLink()) {
    const target = await fsp.realpath(abs).catch(() => '(a missing target)');
    throw new UnsafePathError(
      `${what} ${abs} is a symbolic link (to ${target}); the daemon does not follow it`,
      `set ${what} to the real directory ${target}`,
    );
  }
  if (!st.isDirectory())
    throw new UnsafePathError(
      `${what} ${abs} is not a directory`,
      `move it away, or set ${what} to a directory of the service user`,
    );
  if (st.uid !== uid) {
    throw new UnsafePathError(
      `${what} ${abs} is owned by uid ${st.uid}, not by the daemon's user (uid ${uid}); the daemon does not take over others' directories`,
      `run the daemon as the user it belongs to (uid ${st.uid}: systemctl start pulsa-bridge), or give ${what} a directory of the daemon's own user`,
    );
  }
  if ((st.mode & GROUP_OR_OTHER_WRITE) !== 0) {
    // A shared directory (/tmp, sticky) is others' too: the fix is a private one, never a change to it.
    const shared = (st.mode & STICKY) !== 0;
    throw new UnsafePathError(
      `${what} ${abs} is writable by ${writers(st.mode)} (mode ${(st.mode & 0o7777).toString(8).padStart(4, '0')}): others could drop or replace records`,
      shared
        ? `set ${what} to a private directory of the service user, e.g. under /run/pulsa-bridge or /var/lib/pulsa-bridge (${abs} is shared: leave its mode alone)`
        : `chmod go-w ${abs} (the daemon's own directories are 0750), or set ${what} to a private directory`,
    );
  }
  let parent = await fsp.realpath(path.dirname(abs));
  for (;;) {
    const ps = await fsp.stat(parent);
    if (ps.uid !== 0 && ps.uid !== uid) {
      throw new UnsafePathError(
        `${what} ${abs} lies under ${parent}, owned by uid ${ps.uid}: that user could replace it`,
        `put ${what} under directories owned by root or the service user, e.g. /var/lib/pulsa-bridge`,
      );
    }
    if ((ps.mode & GROUP_OR_OTHER_WRITE) !== 0 && (ps.mode & STICKY) === 0) {
      throw new UnsafePathError(
        `${what} ${abs} lies under ${parent}, writable by ${writers(ps.mode)} without the sticky bit: others could rename it away`,
        `put ${what} under a private directory of the service user, e.g. /var/lib/pulsa-bridge (${parent} may be others' too: do not change its mode)`,
      );
    }
    const up = path.dirname(parent);
    if (up === parent) return;
    parent = up;
  }
}

function writers(mode: number): string {
  const g = (mode & 0o020) !== 0;
  const o = (mode & 0o002) !== 0;
  return g && o ? 'group and others' : g ? 'its group' : 'others';
}
