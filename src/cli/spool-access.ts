/**
 * How the operator commands reach the spool: spoolHolder() says from its lock whether a daemon holds it (never throws;
 * refused, it names the group that may read the spool); spoolUnreadable() whether this user may list it at all;
 * spoolFrom() opens it as a 'client' (read-only index, no lock, no repairs), the directory from --spool or the config's
 * spool.dir and the integrity key from the config's stateDir. The spool's store module is loaded only when a command
 * opens the spool: `status` beside a running daemon reads the daemon's own counts from status.json instead.
 */
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { whoMayRead } from '../config-file.js';
import { loadSpoolConfig } from '../config-spool.js';
import { errorMessage } from '../errors.js';
import { silentLogger } from '../log/silent.js';
import { readLockOwner } from '../spool/lock.js';
import type { Spool } from '../spool/store.js';
import { configPath } from './io.js';

export async function spoolFrom(opts: { spool?: string; config?: string }): Promise<Spool> {
  let dir = opts.spool;
  let keyDir: string | undefined;
  if (!dir || opts.config !== undefined) {
    const cfg = await loadSpoolConfig(configPath(opts.config)); // spool-only: no secrets needed
    dir ??= cfg.spool.dir;
    keyDir = cfg.stateDir ?? cfg.spool.dir; // the spool's integrity key: where the daemon keeps it
  }
  const { Spool } = await import('../spool/store.js');
  return Spool.open(dir, { logger: silentLogger(), role: 'client', ...(keyDir !== undefined ? { keyDir } : {}) });
}

/**
 * Whether a daemon holds the spool (from its lock): the JSON `daemon` field of `queue` and `status`. `running` is null
 * when the lock could not be read. (What a running daemon reports about itself is DaemonStatus, in daemon.ts.)
 */
export interface SpoolHolder {
  running: boolean | null;
  pid?: number;
  startedAt?: string;
  error?: string;
  /** Refused (EACCES): which group may read the spool, and how to join it. */
  hint?: string;
}

export async function spoolHolder(dir: string): Promise<SpoolHolder> {
  try {
    const owner = await readLockOwner(dir);
    return owner ? { running: true, pid: owner.pid, startedAt: owner.startedAt } : { running: false };
  } catch (err) {
    const refused = errnoCode((err as { cause?: unknown }).cause) === 'EACCES';
    return { running: null, error: errorMessage(err), ...(refused ? { hint: await whoMayRead(dir) } : {}) };
  }
}

/** Whether this user may list the spool directory: the reason when not (EACCES: with who may), else undefined. */
export async function spoolUnreadable(dir: string): Promise<{ error: string; hint?: string } | undefined> {
  try {
    await access(dir, constants.R_OK | constants.X_OK);
    return undefined;
  } catch (err) {
    const code = errnoCode(err);
    if (code !== 'EACCES' && code !== 'EPERM') return undefined; // missing and the like: the spool's open says so
    return { error: `cannot read the spool ${dir} (${code})`, hint: await whoMayRead(dir) };
  }
}

function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}
