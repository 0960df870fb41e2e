/**
 * Who may do what through the control socket, and how a request reads in the log. PURE.
 * Reading (reaching the socket: its mode and control.group): hello, status, info, sms list/read, `sms` and `delivery`
 * events, `balance` with the configured code. Operating (root, the daemon's uid, control.operateGroup): everything
 * else, including `balance` with the caller's code or replies and `ussd`/`urc` events (they carry codes and PINs).
 * Unknown credentials read only (fail closed). describeRequest() redacts secrets and names what can move credit.
 */
import { checkAtLine } from '../../ops/at-guard.js';
import type { PeerCredentials } from './peer.js';
import type { Request } from '../protocol.js';
import { redactAtLine } from '../../redact.js';

export type AccessLevel = 'read' | 'operate';

export interface AccessPolicy {
  /** The daemon's own uid (it may operate). */
  daemonUid: number;
  /** The gid of control.operateGroup; undefined when that group does not exist (only root and the daemon's uid operate). */
  operateGid: number | undefined;
  /** Its name, for messages. */
  operateGroup: string;
}

export type PeerState = { ok: true; peer: PeerCredentials } | { ok: false; error: string };

/** Events that show operators' USSD sessions (codes, menu answers, replies): the operating level's to see. */
const OPERATOR_EVENTS: ReadonlySet<string> = new Set(['ussd', 'urc']);

/** The level a request needs. */
export function levelNeeded(req: Request): AccessLevel {
  switch (req.op) {
    case 'hello':
    case 'status':
    case 'info':
    case 'sms.list':
    case 'sms.read':
    case 'canary.ls':
      return 'read';
    case 'subscribe':
      return req.events.some((e) => OPERATOR_EVENTS.has(e)) ? 'operate' : 'read';
    case 'balance':
      return req.code === undefined && req.replies === undefined ? 'read' : 'operate';
    default:
      return 'operate';
  }
}

/** The level a peer has. */
export function levelOf(peer: PeerState, policy: AccessPolicy): AccessLevel {
  if (!peer.ok) return 'read';
  const p = peer.peer;
  if (p.uid === 0 || p.uid === policy.daemonUid) return 'operate';
  if (policy.operateGid !== undefined && p.groups.includes(policy.operateGid)) return 'operate';
  return 'read';
}

/** Why `req` is refused for this peer (undefined: allowed), with the hint the operator needs. */
export function refusal(
  req: Request,
  peer: PeerState,
  policy: AccessPolicy,
): { message: string; hint: string } | undefined {
  if (levelNeeded(req) === 'read' || levelOf(peer, policy) === 'operate') return undefined;
  const what =
    req.op === 'balance'
      ? '`balance` with a code or replies (a USSD session that can move credit)'
      : req.op === 'subscribe'
        ? `\`subscribe\` to ${req.events.filter((e) => OPERATOR_EVENTS.has(e)).join(' and ')} events (operators' USSD codes, menu answers and replies)`
        : `\`${req.op}\``;
  const readable =
    req.op === 'subscribe'
      ? 'reading commands and `sms`/`delivery` events work without it'
      : 'reading commands work without it';
  if (!peer.ok) {
    return {
      message: `${what} needs the operating level, and the daemon could not tell who is connected (${peer.error}): refused`,
      hint: 'reading commands (status, info, sms list/read) still work; the daemon log says at start how it reads peers (in process, or /usr/bin/perl from perl-base)',
    };
  }
  const group =
    policy.operateGid === undefined
      ? `group ${policy.operateGroup} (control.operateGroup) does not exist on this host`
      : `uid ${peer.peer.uid} is not in group ${policy.operateGroup} (control.operateGroup)`;
  return {
    message: `${what} needs the operating level: ${group}`,
    hint: `an administrator adds the operator with \`sudo usermod -aG ${policy.operateGroup} USER\` (then log in again); ${readable}`,
  };
}

export interface RequestView {
  /** One line: the op and its redacted arguments. */
  text: string;
  /** What the request dials or sends that can move credit or change the SIM (empty: nothing). */
  moves: string[];
}

/** The request as the log shows it (see the header). */
export function describeRequest(req: Request): RequestView {
  switch (req.op) {
    case 'at': {
      const command = redactAtLine(req.command);
      const verdict = checkAtLine(req.command);
      const moves = verdict.moves.map(redactAtLine);
      return {
        text: `at ${JSON.stringify(command)}${req.force ? ' --force' : ''}${req.body !== undefined ? ` with a ${req.body.length}-character body` : ''}`,
        moves: req.body !== undefined ? [...moves, 'sends a message body (AT+CMGS/CMGW)'] : moves,
      };
    }
    case 'ussd.open':
      return { text: `ussd.open ${JSON.stringify(req.code)}`, moves: [`USSD ${req.code}`] };
    case 'ussd.reply':
      return {
        text: `ussd.reply ${JSON.stringify(req.text)}`,
        moves: [`USSD menu answer ${JSON.stringify(req.text)}`],
      };
    case 'sms.send':
      return {
        text: `sms.send to ${JSON.stringify(req.to)} (${req.text.length} characters)`,
        moves: [`SMS to ${req.to}: ${JSON.stringify(req.text.length > 160 ? `${req.text.slice(0, 160)}…` : req.text)}`],
      };
    case 'sms.delete':
      return { text: `sms.delete ${req.index}`, moves: [] };
    case 'canary.run':
      return { text: `canary.run ${JSON.stringify(req.name)}`, moves: [`a canary test transfer (${req.name})`] };
    case 'canary.pause':
    case 'canary.resume':
      return { text: `${req.op} ${JSON.stringify(req.name)}`, moves: [] };
    case 'balance': {
      const own = req.code !== undefined || req.replies !== undefined;
      const text = `balance${req.code !== undefined ? ` --code ${JSON.stringify(req.code)}` : ''}${req.replies ? ` --reply ${req.replies.map((r) => JSON.stringify(r)).join(' --reply ')}` : ''}`;
      return {
        text,
        moves: own
          ? [
              `USSD ${req.code ?? '(the configured code)'}${req.replies?.length ? ` then ${req.replies.map((r) => JSON.stringify(r)).join(', ')}` : ''} (a balance request with the caller's code or replies)`,
            ]
          : [],
      };
    }
    case 'sms.read':
      return { text: `sms.read ${req.index}`, moves: [] };
    case 'sms.list':
      return { text: `sms.list${req.which ? ` ${req.which}` : ''}`, moves: [] };
    case 'subscribe':
      return { text: `subscribe ${req.events.join(',')}`, moves: [] };
    default:
      return { text: req.op, moves: [] };
  }
}
