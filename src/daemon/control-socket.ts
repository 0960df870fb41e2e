/**
 * The daemon's control socket, wired: who may operate (root, the daemon's uid, control.operateGroup), the dispatcher
 * over the daemon's modems, the server on config `control.socket` (its reserved connections for the operating
 * level). A socket that cannot be opened is logged and the daemon runs on without it (diagnostics never stop SMS):
 * openControlSocket() then resolves undefined.
 */
import { lstat, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Config } from '../config.js';
import { levelOf, type AccessPolicy } from '../control/server/access.js';
import { Dispatcher, type DispatcherOptions } from '../control/server/dispatch.js';
import { ControlServer } from '../control/server/server.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import { checkPrivateDir } from '../spool/safe-dir.js';

export type ControlSocketOptions = Omit<DispatcherOptions, 'access' | 'logger'>;

/** The control socket's directory, when it exists (else the socket's listen fails and says so), must be private. */
export async function checkSocketDir(socketPath: string): Promise<void> {
  const dir = dirname(socketPath);
  try {
    await lstat(dir);
  } catch {
    return; // missing: nothing is trusted in it; the control server's listen reports the failure
  }
  await checkPrivateDir(dir, 'the control socket directory (control.socket)');
}

/** The control socket, listening; undefined (logged) when it could not be opened. */
export async function openControlSocket(
  config: Config,
  logger: Logger,
  o: ControlSocketOptions,
): Promise<ControlServer | undefined> {
  const path = config.control.socketPath;
  try {
    const gid =
      config.control.group === undefined
        ? undefined
        : await groupId(config.control.group).catch((err: unknown) =>
            Promise.reject(new Error(`control.group: ${errorMessage(err)}`)),
          );
    const access = await accessPolicy(config, logger);
    const dispatcher = new Dispatcher({ ...o, access, logger });
    // The reserved connections are the operating level's: a reading user never locks operators out.
    const privileged = (peer: Parameters<typeof levelOf>[0]) => levelOf(peer, access) === 'operate';
    const server = new ControlServer({
      path,
      handler: dispatcher.handle,
      logger: logger.child({ stage: 'control' }),
      privileged,
      ...(gid !== undefined ? { gid } : {}),
    });
    await server.listen();
    return server;
  } catch (err) {
    logger.error(
      { err, path },
      `control socket ${path} not opened: ${errorMessage(err)}; the CLI's diagnostics open the port directly (and find it busy) until the next start`,
    );
    return undefined;
  }
}

/** Who may operate through the control socket: root, this uid, and control.operateGroup when it exists. */
async function accessPolicy(config: Config, logger: Logger): Promise<AccessPolicy> {
  const daemonUid = process.getuid?.() ?? -1;
  const operateGroup = String(config.control.operateGroup);
  let operateGid: number | undefined;
  try {
    operateGid = await groupId(config.control.operateGroup);
  } catch (err) {
    logger.warn(
      { operateGroup },
      `control.operateGroup: ${errorMessage(err)}: only root and the daemon's user (uid ${daemonUid}) may operate (AT, USSD, SMS send/delete)`,
    );
  }
  logger.info(
    { operateGroup, operateGid, daemonUid },
    `control socket: reading for its group, operating for root, uid ${daemonUid}${operateGid === undefined ? '' : ` and group ${operateGroup} (gid ${operateGid})`}`,
  );
  return { daemonUid, operateGid, operateGroup };
}

/** A group name or gid -> gid (from /etc/group). */
async function groupId(group: string | number): Promise<number> {
  if (typeof group === 'number') return group;
  const line = (await readFile('/etc/group', 'utf8')).split('\n').find((l) => l.split(':')[0] === group);
  const gid = line === undefined ? NaN : Number(line.split(':')[2]);
  if (!Number.isInteger(gid)) throw new Error(`no group named "${group}" in /etc/group`);
  return gid;
}
