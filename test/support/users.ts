/**
 * Another user for the permission tests: root runs commands as `nobody` through runuser (CliProcess's `as`), only
 * when this machine allows it. groupWithoutNobody() is a group of /etc/group `nobody` is not in and that is not root's:
 * it stands for the package's pulsa-bridge group, which a user outside it is told to join.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { bin } from './daemon.js';

/** Root can run a command as `nobody` here. */
export const asNobody =
  process.getuid?.() === 0 && spawnSync('runuser', ['-u', 'nobody', '--', process.execPath, '-e', '0']).status === 0;

/** `nobody` can run this checkout's bin/pulsa-bridge (a checkout under a private directory cannot). */
export const nobodyRunsCli =
  asNobody && spawnSync('runuser', ['-u', 'nobody', '--', process.execPath, bin, '--version']).status === 0;

/** A group `nobody` is not in, other than root's and nobody's own (staff when there is one, else the first). */
export function groupWithoutNobody(): { name: string; gid: number } {
  const groups = readFileSync('/etc/group', 'utf8')
    .split('\n')
    .map((l) => l.split(':'))
    .filter((f) => f.length >= 4)
    .map(([name, , gid, members]) => ({ name: name!, gid: Number(gid), members: members!.split(',') }))
    .filter((g) => g.gid > 0 && g.gid < 65534 && !g.members.includes('nobody'));
  const g = groups.find((x) => x.name === 'staff') ?? groups[0];
  if (!g) throw new Error('/etc/group has no group without nobody besides root and nogroup');
  return { name: g.name, gid: g.gid };
}
