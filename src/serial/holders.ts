/**
 * Who holds a serial device open: a scan of /proc/<pid>/fd for links to the device (what `fuser` does). The port
 * probe uses it so a port another process holds is never written to (root bypasses the open's exclusive lock).
 * Contract: read-only; never throws (no /proc, or a process whose fds cannot be read, is skipped: the open itself is
 * the remaining guard); this process is never listed.
 */
import { readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';

/** A process that has the device open. */
export interface Holder {
  pid: number;
  command: string;
}

/**
 * Processes (other than this one) holding each device open, keyed by the device's real path. Processes whose fds
 * cannot be read (another user's, or gone meanwhile) are skipped: as non-root the open itself reports busy.
 */
export async function findHolders(devices: readonly string[], procRoot = '/proc'): Promise<Map<string, Holder[]>> {
  const wanted = new Set(devices);
  const found = new Map<string, Holder[]>();
  if (wanted.size === 0) return found;
  let pids: string[];
  try {
    pids = (await readdir(procRoot)).filter((n) => /^\d+$/.test(n) && Number(n) !== process.pid);
  } catch {
    return found; // no /proc (not Linux, or a sandbox): the open is the only guard left
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = await readdir(join(procRoot, pid, 'fd'));
    } catch {
      continue; // another user's process, or it exited: see above
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = await readlink(join(procRoot, pid, 'fd', fd));
      } catch {
        continue; // the fd closed meanwhile
      }
      if (!wanted.has(target)) continue;
      const command = (await readFile(join(procRoot, pid, 'comm'), 'utf8').catch(() => '?')).trim() || '?';
      const list = found.get(target) ?? [];
      if (!list.some((h) => h.pid === Number(pid))) list.push({ pid: Number(pid), command });
      found.set(target, list);
    }
  }
  return found;
}
