/**
 * The daemon's answer to a control request (the ControlServer's handler): each request becomes work on the named
 * modem's scheduler at priority 'operator', one task per AT command line asked for, so an SMS arriving waits for at most
 * one of them. An unknown modem runs nothing (`unknown_modem`); a request whose client went away while queued is
 * dropped; `sms delete` is handled by the receiver (spooled, archived or quarantined) before the slot is deleted; a raw
 * AT line that would break the daemon's state is refused unless forced (ops/at-guard.ts), and after a forced one the
 * modem is re-initialised. Modem-layer errors are answered with their BridgeError code and hint, so the CLI prints
 * what it prints on the direct path. The reading level never makes a modem dial: its `balance` is the shared one
 * (BalanceWatch.shared); its modem reads get few queue slots of their own; operating requests are rate-limited per uid.
 */
import { runRawAt } from '../../at/raw.js';
import type { AtChannel } from '../../at/types.js';
import { AtCommandError, BridgeError, errorMessage } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { Modem } from '../../modem/modem.js';
import { ModemUnavailableError, type AtScheduler, type TaskContext } from '../../modem/scheduler.js';
import { deleteSlot, encodeForSend, listSlots, modemInfo, readSlot } from '../../ops/actions.js';
import { levelNeeded, levelOf, refusal, type AccessPolicy } from './access.js';
import { RepeatedWarnings } from '../../log/repeated.js';
import { checkAtLine } from '../../ops/at-guard.js';
import { maskUssdAnswer, redactAtLine } from '../../redact.js';
import type { AtOutcome, UssdOutcome } from '../../ops/modem-ops.js';
import { ControlError, PROTOCOL_VERSION, type EventMessage, type Request } from '../protocol.js';
import type { ControlConnection, ControlHandler } from './server.js';
import { ussdBrokerOn, type UssdBroker, type UssdOwner } from '../../ops/ussd-broker.js';

/** One of the daemon's configured modems, as the dispatcher sees it. */
export interface DispatchModem {
  readonly name: string;
  /** The serial port from the config (the CLI matches `--port P` against it). */
  readonly port: string;
  /** Whether the daemon has a balance check for it (`balance` without a code): the CLI picks modems by it. */
  readonly balanceCheck?: boolean;
  readonly scheduler: AtScheduler<{ readonly modem: Modem; readonly channel: AtChannel }>;
  /** The supervisor's state ('running', 'initialising', 'disconnected', ...). */
  state(): string;
  /** The modem's USSD sessions (shared with the daemon's balance checks); built on the operator lane when absent. */
  readonly ussd?: UssdBroker;
  /** The modem's current receiver (undefined while none runs): `sms delete` is handled by it before the delete. */
  readonly receiver?: () => OperatorDeleter | undefined;
}

/**
 * What `sms delete` needs of the modem's receiver: handle slot N (confirm, decide, spool) and delete it once the record
 * is durable, and say what was done. The receiver satisfies it as it is; the reply carries its other fields as they are.
 */
export interface OperatorDeleter {
  operatorDelete(index: number, modem: Modem): Promise<HandledDelete>;
}

/** The receiver's account of an operator delete, as far as the dispatcher reads it. */
export interface HandledDelete {
  /** false: the slot was empty (nothing deleted). */
  deleted: boolean;
  /** What was done, in words (the reply and the log line). */
  summary: string;
  /** Something that went wrong after the delete; logged as a warning. */
  warning?: string | undefined;
}

export interface DispatcherOptions {
  modems: readonly DispatchModem[];
  version: string;
  logger: Logger;
  /** The daemon's status (`status` requests): its one status snapshot, what status.json holds. */
  status: () => unknown | Promise<unknown>;
  /** Events for the subscribed clients (`ussd`: each reply of a session). */
  publish?: (event: EventMessage) => void;
  /** A balance check now (the daemon's balance watch); absent: `balance` is not offered. */
  balance?: (
    modem: string,
    code: string | undefined,
    replies: readonly string[] | undefined,
    shared: boolean,
  ) => Promise<unknown>;
  /** The canaries (`canary.*` ops); absent: not offered. Errors are ControlErrors (the daemon maps its refusals). */
  canaries?: CanaryControl;
  /** Who may operate (access.ts): checked before anything else. */
  access: AccessPolicy;
  /** Requests queued or running on one modem at once, from all connections (default 8); beyond: `busy`. */
  maxPerModem?: number;
  /** Requests of the reading level (info, sms list/read) queued or running on one modem at once (default 2). */
  maxReadersPerModem?: number;
  /** Operating requests per peer uid: a burst, then so many a second (default 30 and 5); beyond: `busy`. */
  operateRate?: { burst: number; perSecond: number };
  /** Milliseconds clock (default Date.now). */
  now?: () => number;
}

/** What the dispatcher needs of the daemon's canaries (structural: control/server does not know src/canary). */
export interface CanaryControl {
  list(): unknown;
  run(name: string, who: string): Promise<unknown>;
  pause(name: string, who: string): Promise<unknown>;
  resume(name: string, who: string): Promise<unknown>;
}

/** A token bucket per peer uid for operating requests. */
class UidRate {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  constructor(
    private readonly rate: { burst: number; perSecond: number },
    private readonly now: () => number,
  ) {}

  /** Takes a token for `key`; false when none is left. */
  take(key: string): boolean {
    const now = this.now();
    const b = this.buckets.get(key) ?? { tokens: this.rate.burst, at: now };
    b.tokens = Math.min(this.rate.burst, b.tokens + ((now - b.at) / 1000) * this.rate.perSecond);
    b.at = now;
    this.buckets.set(key, b);
    if (this.buckets.size > 1000)
      for (const k of this.buckets.keys())
        if (k !== key) {
          this.buckets.delete(k);
          break;
        }
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }
}

/** Requests that queue work on a modem (and count towards maxPerModem). */
const MODEM_OPS: ReadonlySet<Request['op']> = new Set([
  'info',
  'sms.list',
  'sms.read',
  'sms.delete',
  'sms.send',
  'at',
  'ussd.open',
  'ussd.reply',
  'ussd.cancel',
  'balance',
]);

type Target = { readonly modem: Modem; readonly channel: AtChannel };

/** A modem-layer error as a wire error: the same message, hint and BridgeError code the direct path shows. */
export function toControlError(err: unknown): ControlError {
  if (err instanceof ControlError) return err;
  if (err instanceof ModemUnavailableError)
    return new ControlError('modem_unavailable', err.message, err.hint, { code: err.code });
  if (err instanceof AtCommandError) {
    const data = { code: err.code, command: err.command, final: err.final, lines: [...err.lines] };
    return new ControlError(err.code === 'AT_TIMEOUT' ? 'timeout' : 'modem_error', err.message, err.hint, data);
  }
  if (err instanceof BridgeError) {
    const wire =
      err.code === 'PDU_INVALID' ? 'bad_request' : err.code.startsWith('PORT_') ? 'modem_unavailable' : 'modem_error';
    return new ControlError(wire, err.message, err.hint, { code: err.code });
  }
  if (err instanceof Error && err.name === 'AbortError') return new ControlError('cancelled', err.message);
  throw err; // anything else is a bug: the server answers `internal` and logs it
}

export class Dispatcher {
  private readonly byName = new Map<string, DispatchModem>();
  private readonly sessions = new Map<string, UssdBroker>();
  /** Connections whose close already releases their USSD sessions. */
  private readonly releasing = new WeakSet<ControlConnection>();
  private readonly log: Logger;
  /** Refusals and rate limits, one line per cause per interval (no client floods the log). */
  private readonly warnings: RepeatedWarnings;
  private readonly rate: UidRate;

  constructor(private readonly o: DispatcherOptions) {
    this.log = o.logger.child({ stage: 'control' });
    this.warnings = new RepeatedWarnings((line, fields) => this.log.warn(fields ?? {}, line), 10_000);
    this.rate = new UidRate(o.operateRate ?? { burst: 30, perSecond: 5 }, o.now ?? Date.now);
    for (const m of o.modems) {
      this.byName.set(m.name, m);
      this.sessions.set(m.name, m.ussd ?? ussdBrokerOn(m.name, m.scheduler, this.log));
    }
  }

  /** Requests queued or running per modem name (operating), and per "reader:" + modem name (reading). */
  private readonly queued = new Map<string, number>();

  /** The ControlServer's handler. */
  readonly handle: ControlHandler = async (req, conn, signal) => {
    const refused = refusal(req, conn.peer, this.o.access);
    const uid = conn.peer.ok ? conn.peer.peer.uid : undefined;
    const peerFields = conn.peer.ok ? { peerUid: conn.peer.peer.uid, peerPid: conn.peer.peer.pid } : {};
    if (refused) {
      const line = `control: ${req.op} from ${conn.who} refused: ${refused.message}`;
      this.warnings.note(`refused:${uid ?? '?'}:${req.op}`, line, { conn: conn.id, op: req.op, ...peerFields });
      throw new ControlError('forbidden', refused.message, refused.hint);
    }
    const operating = levelNeeded(req) === 'operate';
    if (operating && !this.rate.take(String(uid ?? 'unknown'))) {
      const r = this.o.operateRate ?? { burst: 30, perSecond: 5 };
      const who = `uid ${uid ?? '(unknown)'}`;
      const rate = `${r.burst} operating requests at once (then ${r.perSecond} a second)`;
      const message = `busy: ${who} sent more than ${rate}`;
      const line = `control: ${req.op} from ${conn.who} refused: ${message}`;
      this.warnings.note(`rate:${uid ?? '?'}`, line, { conn: conn.id, op: req.op, ...peerFields });
      throw new ControlError('busy', message, 'slow down: wait a second and try again');
    }
    // The reading level's `balance` dials nothing of its own (the shared check) and takes no queue slot.
    const reader = levelOf(conn.peer, this.o.access) === 'read';
    let counted: string | undefined;
    try {
      if (MODEM_OPS.has(req.op) && !(reader && req.op === 'balance')) {
        const m = this.modemOf(req);
        const key = reader ? `reader:${m.name}` : m.name;
        const max = reader ? (this.o.maxReadersPerModem ?? 2) : (this.o.maxPerModem ?? 8);
        const n = this.queued.get(key) ?? 0;
        if (n >= max) {
          const whose = reader ? 'reading-level' : 'operator';
          const what = `${n} ${whose} requests are already queued or running on ${m.name}`;
          const fields = { conn: conn.id, op: req.op, modem: m.name, ...peerFields };
          this.warnings.note(`queue:${key}`, `control: ${req.op} from ${conn.who}: ${what}: busy`, fields);
          const data = { modem: m.name, queued: n };
          throw new ControlError('busy', `busy: ${what}`, 'wait for them to finish, then try again', data);
        }
        this.queued.set(key, n + 1);
        counted = key;
      }
      return await this.dispatch(req, conn, signal);
    } catch (err) {
      throw toControlError(err);
    } finally {
      if (counted !== undefined) this.queued.set(counted, (this.queued.get(counted) ?? 1) - 1);
    }
  };

  private modemOf(req: Request): DispatchModem {
    const names = [...this.byName.keys()];
    if (req.modem === undefined) {
      if (names.length === 1) return this.byName.get(names[0]!)!;
      throw new ControlError(
        'unknown_modem',
        `this daemon runs ${names.length} modems: name one (${names.join(', ')})`,
        'pass --modem NAME',
        { modems: names },
      );
    }
    const m = this.byName.get(req.modem);
    if (!m)
      throw new ControlError(
        'unknown_modem',
        `no modem named "${req.modem}" in the running daemon (it runs: ${names.join(', ')})`,
        "names are the config's modems[].name",
        { modems: names },
      );
    return m;
  }

  /** One operator task on the modem's scheduler. */
  private operator<R>(
    m: DispatchModem,
    label: string,
    signal: AbortSignal,
    fn: (ctx: TaskContext<Target>) => Promise<R>,
  ): Promise<R> {
    return m.scheduler.schedule({ priority: 'operator', label: `operator: ${label}`, signal }, fn);
  }

  private async dispatch(req: Request, conn: ControlConnection, signal: AbortSignal): Promise<unknown> {
    switch (req.op) {
      case 'hello':
        if (req.client !== undefined) conn.client = req.client;
        return {
          daemon: 'pulsa-bridge',
          version: this.o.version,
          protocol: PROTOCOL_VERSION,
          pid: process.pid,
          modems: this.o.modems.map((m) => ({
            name: m.name,
            port: m.port,
            state: m.state(),
            balanceCheck: m.balanceCheck ?? false,
          })),
        };
      case 'status':
        return this.o.status();
      case 'subscribe':
        if (req.modem !== undefined) this.modemOf(req); // an unknown name is an error, not a silent empty stream
        for (const e of req.events) conn.subscriptions.add(e);
        return { subscribed: [...conn.subscriptions] };
      case 'info': {
        const m = this.modemOf(req);
        return this.operator(m, 'info', signal, ({ target }) => modemInfo(target.modem));
      }
      case 'sms.list': {
        const m = this.modemOf(req);
        return this.operator(m, 'sms list', signal, ({ target }) => listSlots(target.modem, req.which ?? 'all'));
      }
      case 'sms.read': {
        const m = this.modemOf(req);
        return (
          (await this.operator(m, `sms read ${req.index}`, signal, ({ target }) =>
            readSlot(target.modem, req.index),
          )) ?? null
        );
      }
      case 'sms.delete': {
        const m = this.modemOf(req);
        if (!m.receiver) {
          const r = await this.operator(m, `sms delete ${req.index}`, signal, ({ target }) =>
            deleteSlot(target.modem, req.index),
          );
          this.log.info(
            { modem: m.name, index: req.index, deleted: r.deleted, peer: conn.who, client: conn.client },
            `operator (${conn.who}): sms delete ${req.index} on ${m.name}: ${r.deleted ? 'deleted' : 'slot was empty'}`,
          );
          return r;
        }
        const receiver = m.receiver;
        const r = await this.operator(m, `sms delete ${req.index}`, signal, ({ target }) => {
          const running = receiver();
          if (!running)
            throw new ControlError(
              'modem_unavailable',
              `${m.name} is not receiving now (state ${m.state()}): SMS at index ${req.index} not deleted`,
              'try again once the modem runs (`pulsa-bridge status`)',
            );
          return running.operatorDelete(req.index, target.modem);
        });
        const { summary, ...fields } = r;
        const line = `operator (${conn.who}): sms delete ${req.index} on ${m.name}: ${summary}`;
        if ('warning' in r && r.warning)
          this.log.warn({ modem: m.name, ...fields, peer: conn.who, client: conn.client }, line);
        else this.log.info({ modem: m.name, ...fields, peer: conn.who, client: conn.client }, line);
        return r;
      }
      case 'sms.send': {
        const m = this.modemOf(req);
        const pdus = encodeForSend(req.to, req.text);
        const references: number[] = [];
        for (const [i, part] of pdus.entries()) {
          // One task per part: an SMS arriving during a long send waits for one AT+CMGS, not all of them.
          const [ref] = await this.operator(m, `sms send part ${i + 1}/${pdus.length}`, signal, ({ target }) =>
            target.modem.sendSms(req.to, [part]),
          );
          references.push(ref ?? -1);
        }
        this.log.info(
          { modem: m.name, to: req.to, parts: pdus.length, peer: conn.who, client: conn.client },
          `operator (${conn.who}): SMS sent to ${req.to} on ${m.name} (${pdus.length} part(s))`,
        );
        return { parts: pdus.length, references };
      }
      case 'at':
        return this.at(req, conn, signal);
      case 'ussd.open':
      case 'ussd.reply':
      case 'ussd.cancel':
        return this.ussd(req, conn, signal);
      case 'balance': {
        const m = this.modemOf(req);
        if (!this.o.balance) throw new ControlError('bad_request', 'balance checks are not offered by this daemon');
        if (levelOf(conn.peer, this.o.access) === 'read') {
          // The last check, or the one check all readers share: a reader never makes the modem dial at will.
          const line = `balance of ${m.name} for ${conn.who} (reading level: the shared check)`;
          this.log.debug({ modem: m.name, peer: conn.who }, line);
          return this.o.balance(m.name, undefined, undefined, true);
        }
        const open = this.sessions.get(m.name)!.current();
        if (open) {
          throw new ControlError(
            'busy',
            `busy, session opened by ${open.owner.label} at ${open.openedAt}`,
            'one USSD session per modem: check the balance when it has ended',
            { owner: open.owner.label, openedAt: open.openedAt },
          );
        }
        if (req.code !== undefined || req.replies !== undefined) {
          // Not a plain balance check: a code and menu answers of the caller's can move credit (a transfer menu).
          const steps = [
            req.code ?? '(the configured code)',
            ...(req.replies ?? []).map((r) => JSON.stringify(r)),
          ].join(' then ');
          this.log.info(
            { modem: m.name, code: req.code, replies: req.replies, peer: conn.who, client: conn.client },
            `operator (${conn.who}): USSD ${steps} on ${m.name}, asked as a balance request with the caller's code or replies`,
          );
        } else
          this.log.info(
            { modem: m.name, peer: conn.who, client: conn.client },
            `operator (${conn.who}): balance check on ${m.name} (the configured code)`,
          );
        return this.o.balance(m.name, req.code, req.replies, false);
      }
      case 'canary.ls':
      case 'canary.run':
      case 'canary.pause':
      case 'canary.resume': {
        const canaries = this.o.canaries;
        if (!canaries) throw new ControlError('bad_request', 'canaries are not offered by this daemon');
        if (req.op === 'canary.ls') return canaries.list();
        const who = `${conn.who}${conn.client ? ` via ${conn.client}` : ''}`;
        if (req.op === 'canary.run') {
          this.log.info({ canary: req.name, peer: conn.who }, `operator (${conn.who}): canary run ${req.name}`);
          return canaries.run(req.name, who);
        }
        return req.op === 'canary.pause' ? canaries.pause(req.name, who) : canaries.resume(req.name, who);
      }
    }
  }

  /**
   * The modem's one USSD broker; the owner is the connection (its `hello` label and id): another connection gets `busy`,
   * the connection closing cancels its session. Each reply is the result and also a `ussd` event for subscribers.
   */
  private async ussd(
    req: Extract<Request, { op: 'ussd.open' | 'ussd.reply' | 'ussd.cancel' }>,
    conn: ControlConnection,
    signal: AbortSignal,
  ): Promise<UssdOutcome | { cancelled: true }> {
    const m = this.modemOf(req);
    const sessions = this.sessions.get(m.name)!;
    const owner: UssdOwner = {
      id: `conn-${conn.id}`,
      label: `${conn.client ?? 'a control client'} (${conn.peer.ok ? `uid ${conn.peer.peer.uid}, ` : ''}connection ${conn.id})`,
    };
    if (!this.releasing.has(conn)) {
      this.releasing.add(conn);
      // A client that goes away mid-menu must not leave it open: the next dial would be taken as its answer.
      conn.onClose(() => {
        for (const s of this.sessions.values()) s.release(owner.id);
      });
    }
    if (req.op === 'ussd.cancel') {
      await sessions.cancel(owner);
      return { cancelled: true };
    }
    const o = { signal, ...(req.timeoutMs !== undefined ? { timeoutMs: req.timeoutMs } : {}) };
    const outcome =
      req.op === 'ussd.open' ? await sessions.open(owner, req.code, o) : await sessions.reply(owner, req.text, o);
    // An answer may be a PIN or a token typed into a menu: logged only when it is a one- or two-character choice.
    const shown = req.op === 'ussd.open' ? req.code : maskUssdAnswer(req.text);
    this.log.info(
      { modem: m.name, request: shown, status: outcome.status, peer: conn.who },
      `operator (${conn.who}): USSD ${req.op === 'ussd.open' ? req.code : `answer ${JSON.stringify(shown)}`} on ${m.name}: status ${outcome.status}`,
    );
    this.o.publish?.({
      v: PROTOCOL_VERSION,
      event: 'ussd',
      modem: m.name,
      id: req.id,
      data: { owner: owner.label, request: req.op === 'ussd.open' ? req.code : req.text, ...outcome },
    });
    return outcome;
  }

  private async at(
    req: Extract<Request, { op: 'at' }>,
    conn: ControlConnection,
    signal: AbortSignal,
  ): Promise<AtOutcome> {
    const m = this.modemOf(req);
    const verdict = checkAtLine(req.command);
    if (verdict.notAt) throw new ControlError('bad_request', verdict.notAt);
    if (verdict.refused.length > 0 && !req.force) {
      throw new ControlError(
        'refused',
        `refused through the running daemon: ${verdict.refused.join('; ')}`,
        'add --force if you mean it (the daemon then re-checks its settings and re-initialises the modem)',
        {
          reasons: verdict.refused,
        },
      );
    }
    const options = {
      ...(req.timeoutMs !== undefined ? { timeoutMs: req.timeoutMs } : {}),
      ...(req.body !== undefined ? { body: req.body } : {}),
      ...(req.cancelPrompt ? { cancelPrompt: true } : {}),
    };
    const shown = redactAtLine(req.command);
    if (verdict.moves.length > 0)
      this.log.info(
        {
          modem: m.name,
          command: shown,
          moves: verdict.moves.map(redactAtLine),
          peer: conn.who,
          force: req.force === true,
        },
        `operator (${conn.who}): ${shown} on ${m.name}: ${verdict.moves.map(redactAtLine).join('; ')}`,
      );
    const outcome = await this.operator(m, `AT ${shown}`, signal, ({ target }) =>
      runRawAt(target.channel, req.command, options),
    );
    if (verdict.recheck) {
      this.log.warn(
        { modem: m.name, command: shown, peer: conn.who, client: conn.client },
        `operator (${conn.who}): ${shown} may have changed what the daemon relies on: re-initialising ${m.name}`,
      );
      // Not tied to the client's signal: once the line ran, the modem must be put back whatever the client does.
      void m.scheduler
        .exclusive('re-init after an operator AT command', ({ target }) => target.modem.init())
        .catch((err: unknown) =>
          this.log.error(
            { err, modem: m.name },
            `re-initialising ${m.name} after an operator command failed: ${errorMessage(err)}`,
          ),
        );
    }
    return outcome;
  }
}
