/**
 * The running daemon as the CLI reaches it: its control socket found from the config's control section (a socket this
 * user may not use is an error naming the group to join, never a silent fallback), its `hello` (the modems it runs and
 * whether each has a balance check), and RemoteOps whose errors read like the direct path's BridgeErrors.
 */
import { realpath } from 'node:fs/promises';
import { controlSocketCandidates, type DaemonAddress } from '../config-control.js';
import { ControlClient, ControlClientError, RemoteError } from '../control/client/client.js';
import type { ModemOps } from '../ops/modem-ops.js';
import { RemoteOps } from '../control/client/remote-ops.js';
import { BridgeError, type ErrorCode } from '../errors.js';
import { owningGroup } from '../config-file.js';

export async function findDaemon(
  config: DaemonAddress,
): Promise<{ client?: ControlClient; socket?: string; tried: string[] }> {
  const tried: string[] = [];
  for (const socket of controlSocketCandidates(config)) {
    tried.push(socket);
    try {
      return { client: await ControlClient.connect(socket), socket, tried };
    } catch (err) {
      if (err instanceof ControlClientError && err.code === 'no_daemon') continue;
      if (err instanceof ControlClientError) {
        const hint = err.code === 'permission' ? await socketGroupHint(socket, config) : undefined;
        throw new BridgeError(
          'PORT_PERMISSION',
          err.message,
          ...((hint ?? err.hint) ? [{ hint: hint ?? err.hint }] : []),
        );
      }
      throw err;
    }
  }
  return { tried };
}

/**
 * What a user refused by the socket (EACCES) is to do, naming the socket's own group (the socket's mode lets its group
 * read): join it; a socket of root's group (no control.group, the daemon run as root): sudo, never "join root".
 * Undefined when the group cannot be seen (the client's generic hint stays).
 */
async function socketGroupHint(socket: string, config: DaemonAddress): Promise<string | undefined> {
  const g = await owningGroup(socket);
  if (!g) return undefined;
  const operate = `operating also ${config.control.operateGroup} (control.operateGroup)`;
  if (g.gid === 0)
    return `the socket belongs to root's group (control.group unset, the daemon run as root): run with sudo, or set control.group to the group whose members may read`;
  const group = g.name ?? String(g.gid);
  return `reading needs the socket's group, ${g.name ?? `gid ${g.gid}`} (control.group), ${operate}: sudo usermod -aG ${group} $USER, then log in again`;
}

/** A modem as the daemon's `hello` lists it. */
export interface DaemonModem {
  name: string;
  port: string;
  state: string;
  /** Whether the daemon has a balance check for it (`balance` without a code); absent from a daemon older than this. */
  balanceCheck?: boolean;
}

/** The modems the daemon on `client` runs (its `hello`, which also names this client in the daemon's log). */
async function hello(client: ControlClient): Promise<DaemonModem[]> {
  const reply = await client.request<{ modems: DaemonModem[] }>(
    { op: 'hello', client: `pulsa-bridge CLI (pid ${process.pid})` },
    10_000,
  );
  return reply.modems;
}

/** The daemon's name for the modem asked for, when it runs it. */
export async function daemonHolds(
  client: ControlClient,
  name: string | undefined,
  port: string | undefined,
): Promise<string | undefined> {
  const modems = await hello(client);
  if (name !== undefined) return modems.find((m) => m.name === name)?.name;
  const want = await canonical(port!);
  for (const m of modems) if (m.port === port || (await canonical(m.port)) === want) return m.name;
  return undefined;
}

/** A greeted connection to the running daemon, for a command that decides per modem what to ask (balance). */
export interface DaemonSession {
  socket: string;
  modems: readonly DaemonModem[];
  /** One of its modems' operations on this connection (closing the session closes them). */
  ops(name: string): ModemOps & Pick<RemoteOps, 'balance'>;
  close(): Promise<void>;
}

/** The running daemon found from the config's control section, greeted; undefined when none answers. */
export async function greetDaemon(config: DaemonAddress): Promise<DaemonSession | undefined> {
  const { client, socket } = await findDaemon(config);
  if (!client) return undefined;
  try {
    const modems = await hello(client);
    return {
      socket: socket!,
      modems,
      ops: (name) => ({ ...translated(new RemoteOps(client, name)), close: async () => undefined }),
      close: () => client.close(),
    };
  } catch (err) {
    await client.close();
    throw asBridgeError(err);
  }
}

async function canonical(path: string): Promise<string> {
  return realpath(path).catch(() => path);
}

const BRIDGE_CODES: ReadonlySet<string> = new Set<ErrorCode>([
  'PORT_NOT_FOUND',
  'PORT_PERMISSION',
  'PORT_BUSY',
  'PORT_CLOSED',
  'PORT_IO',
  'AT_TIMEOUT',
  'AT_ERROR',
  'MODEM_SILENT',
  'SIM_NOT_READY',
  'PDU_INVALID',
  'USSD',
]);

/** A daemon's or the connection's error as the BridgeError the direct path would have raised. */
export function asBridgeError(err: unknown): unknown {
  if (err instanceof RemoteError) {
    const data = err.data as { code?: unknown } | undefined;
    const code =
      typeof data?.code === 'string' && BRIDGE_CODES.has(data.code)
        ? (data.code as ErrorCode)
        : err.code === 'timeout'
          ? 'AT_TIMEOUT'
          : err.code === 'modem_unavailable'
            ? 'PORT_CLOSED'
            : err.code === 'forbidden'
              ? 'PORT_PERMISSION'
              : 'AT_ERROR';
    return new BridgeError(code, err.message, { cause: err, ...(err.hint ? { hint: err.hint } : {}) });
  }
  if (err instanceof ControlClientError) {
    return new BridgeError(err.code === 'timeout' ? 'AT_TIMEOUT' : 'PORT_CLOSED', err.message, {
      cause: err,
      hint: err.hint ?? 'is the daemon still running? see `pulsa-bridge status`',
    });
  }
  return err;
}

/** RemoteOps whose errors read like the direct path's (and its daemon-side balance check). */
export function translated(ops: RemoteOps): ModemOps & Pick<RemoteOps, 'balance'> {
  const wrap =
    <A extends unknown[], R>(fn: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      try {
        return await fn(...a);
      } catch (err) {
        throw asBridgeError(err);
      }
    };
  return {
    name: ops.name,
    path: ops.path,
    info: wrap(() => ops.info()),
    at: wrap((command: string, o?: Parameters<ModemOps['at']>[1]) => ops.at(command, o)),
    ussdOpen: wrap((code: string, o?: { timeoutMs?: number }) => ops.ussdOpen(code, o)),
    ussdReply: wrap((text: string, o?: { timeoutMs?: number }) => ops.ussdReply(text, o)),
    ussdCancel: wrap(() => ops.ussdCancel()),
    smsList: wrap((which?: 'all' | 'unread') => ops.smsList(which)),
    smsRead: wrap((index: number) => ops.smsRead(index)),
    smsDelete: wrap((index: number) => ops.smsDelete(index)),
    smsSend: wrap((to: string, text: string) => ops.smsSend(to, text)),
    onEvent: wrap((listener: Parameters<ModemOps['onEvent']>[0]) => ops.onEvent(listener)),
    balance: wrap((code?: string, replies?: readonly string[]) => ops.balance(code, replies)),
    close: () => ops.close(),
  };
}
