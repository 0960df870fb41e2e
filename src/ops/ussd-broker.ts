/**
 * One USSD session per modem, brokered between its owners (a control connection, a CLI command, a balance check): only
 * the owner answers or cancels it; another gets ControlError `busy` naming the owner. The channel is held only while a
 * command is in flight (`run`: the daemon's operator lane, or the CLI's own modem), never while the network thinks. No
 * reply, or no answer from the owner to an open menu, within the timeout cancels the session (AT+CUSD=2), so a late
 * reply never reaches the next one; release(owner) cancels the session of an owner gone away (logged, never thrown).
 */
import { WaitCancelledError, WaitTimeoutError } from '../at/wait.js';
import type { AtChannel } from '../at/types.js';
import type { Logger } from '../log.js';
import type { Modem } from '../modem/modem.js';
import type { AtScheduler } from '../modem/scheduler.js';
import type { PendingUssdReply, UssdReply } from '../modem/ussd-session.js';
import { ussdStatusText } from '../modem/ussd-status.js';
import type { UssdOutcome } from './modem-ops.js';
import { ControlError } from '../control/protocol.js';

export interface UssdOwner {
  id: string;
  /** Shown to other owners in the busy message (e.g. "pulsa-bridge ussd (pid 4242)"). */
  label: string;
}

export type UssdRun = <R>(label: string, fn: (m: Modem) => Promise<R>, signal?: AbortSignal) => Promise<R>;

export interface UssdBrokerOptions {
  modem: string;
  run: UssdRun;
  logger: Logger;
  /** Longest wait for a reply, and for the owner's answer to a menu. Default 30 s. */
  timeoutMs?: number;
  /** Milliseconds clock for openedAt. Default Date.now. */
  now?: () => number;
}

interface Current {
  owner: UssdOwner;
  openedAt: string;
  /** A request of this session is in flight (sent or waiting for its reply). */
  inflight: PendingUssdReply | 'sending' | undefined;
  /** Ends the session when the owner does not answer an open menu in time. */
  idle: NodeJS.Timeout | undefined;
}

const DEFAULT_TIMEOUT_MS = 30_000;

function seconds(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} s`;
}

/** Status texts the operator reads (`[status 1: ...]` in the CLI takes the short label from ussd-session.ts). */
export function toUssdOutcome(reply: UssdReply): UssdOutcome {
  const out: UssdOutcome = {
    status: reply.status,
    statusText: ussdStatusText(reply.status),
    text: reply.text,
    raw: reply.raw,
  };
  if (reply.dcs !== undefined) out.dcs = reply.dcs;
  if (reply.undecoded) out.undecoded = true;
  if (reply.language !== undefined) out.language = reply.language;
  if (reply.releaseNotice !== undefined) out.releaseNotice = reply.releaseNotice;
  if (reply.noReply) out.noReply = true;
  return out;
}

export class UssdBroker {
  private readonly o: UssdBrokerOptions;
  private readonly log: Logger;
  private readonly timeoutMs: number;
  private readonly now: () => number;
  private session: Current | undefined;

  constructor(o: UssdBrokerOptions) {
    this.o = o;
    this.log = o.logger.child({ ussd: o.modem });
    this.timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.now = o.now ?? Date.now;
  }

  current(): { owner: UssdOwner; openedAt: string } | undefined {
    return this.session ? { owner: this.session.owner, openedAt: this.session.openedAt } : undefined;
  }

  async open(
    owner: UssdOwner,
    code: string,
    o: { timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<UssdOutcome> {
    const s = this.session;
    if (s && s.owner.id !== owner.id) throw this.busy(s);
    if (s?.inflight)
      throw new ControlError(
        'busy',
        `a USSD request of this session is still waiting for its reply`,
        'wait for the reply, or cancel the session',
      );
    if (s) {
      // The same owner dials again while its menu is open: end that menu first (it would take the code as an answer).
      this.forget(s);
      await this.o.run('ussd: cancel before a new code', (m) => m.ussdCancel(), o.signal);
    }
    const session: Current = {
      owner,
      openedAt: new Date(this.now()).toISOString(),
      inflight: undefined,
      idle: undefined,
    };
    this.session = session;
    return this.exchange(session, code, 'open', o);
  }

  async reply(
    owner: UssdOwner,
    text: string,
    o: { timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<UssdOutcome> {
    const s = this.session;
    if (!s)
      throw new ControlError(
        'not_found',
        `no USSD session is open on ${this.o.modem}`,
        'open one with `pulsa-bridge ussd <code>`',
      );
    if (s.owner.id !== owner.id) throw this.busy(s);
    if (s.inflight)
      throw new ControlError(
        'busy',
        `a USSD request of this session is still waiting for its reply`,
        'wait for the reply, or cancel the session',
      );
    return this.exchange(s, text, 'reply', o);
  }

  async cancel(owner: UssdOwner): Promise<void> {
    const s = this.session;
    if (!s) return;
    if (s.owner.id !== owner.id) throw this.busy(s);
    await this.end(s, 'cancelled by its owner');
  }

  release(ownerId: string): void {
    const s = this.session;
    if (!s || s.owner.id !== ownerId) return;
    this.end(s, 'its owner went away').catch((err: unknown) => {
      this.log.warn({ err }, `USSD: cancelling the session of ${s.owner.label} (gone) failed`);
    });
  }

  private busy(s: Current): ControlError {
    return new ControlError(
      'busy',
      `busy, session opened by ${s.owner.label} at ${s.openedAt}`,
      'one USSD session per modem: wait until it ends (it times out when left alone)',
      { owner: s.owner.label, openedAt: s.openedAt },
    );
  }

  private async exchange(
    s: Current,
    text: string,
    kind: 'open' | 'reply',
    o: { timeoutMs?: number; signal?: AbortSignal },
  ): Promise<UssdOutcome> {
    this.clearIdle(s);
    const timeoutMs = o.timeoutMs ?? this.timeoutMs;
    s.inflight = 'sending';
    let pending: PendingUssdReply;
    try {
      // Held only while the command is in flight: send() resolves at the command's final result.
      pending = await this.o.run(
        `ussd: ${text}`,
        async (m) => {
          if (kind === 'open' && m.ussdWaitingForInput) {
            // A menu nobody here owns (network-initiated, or left by an earlier run): it would take the code as an answer.
            this.log.info('USSD: ending a menu no session owns before dialling');
            await m.ussdCancel();
          }
          return m.ussdSend(text, kind, { timeoutMs });
        },
        o.signal,
      );
    } catch (err) {
      s.inflight = undefined;
      if (this.session === s) this.forget(s);
      throw err;
    }
    if (this.session !== s) {
      // Released or cancelled while the command was in flight: that cancel already went to the modem.
      pending.cancel();
      throw new ControlError('cancelled', `USSD ${text}: the session was cancelled`);
    }
    s.inflight = pending;
    const onAbort = (): void => pending.cancel();
    o.signal?.addEventListener('abort', onAbort, { once: true });
    let reply: UssdReply;
    try {
      reply = await pending.reply;
    } catch (err) {
      if (err instanceof WaitTimeoutError) {
        await this.end(s, `no reply within ${timeoutMs} ms`);
        throw new ControlError(
          'timeout',
          `no USSD reply to ${text} within ${seconds(timeoutMs)}; the session was cancelled`,
          'check the code and the network registration (`pulsa-bridge info`); some modems need ATD<code>; (profile ussd.send)',
        );
      }
      if (err instanceof WaitCancelledError) {
        if (this.session === s) await this.end(s, 'the request was abandoned');
        throw new ControlError('cancelled', `USSD ${text}: the session was cancelled`);
      }
      throw err;
    } finally {
      o.signal?.removeEventListener('abort', onAbort);
      s.inflight = undefined;
    }
    if (reply.status === 1 && this.session === s) this.armIdle(s, timeoutMs);
    else if (this.session === s) this.forget(s);
    return toUssdOutcome(reply);
  }

  /** Forgets the session and ends it on the modem (AT+CUSD=2 in `run`). */
  private async end(s: Current, why: string): Promise<void> {
    const inflight = s.inflight;
    this.forget(s);
    if (inflight && inflight !== 'sending') inflight.cancel();
    this.log.info({ owner: s.owner.label }, `USSD session cancelled: ${why}`);
    await this.o.run('ussd: cancel', (m) => m.ussdCancel());
  }

  private forget(s: Current): void {
    this.clearIdle(s);
    if (this.session === s) this.session = undefined;
  }

  private armIdle(s: Current, timeoutMs: number): void {
    this.clearIdle(s);
    s.idle = setTimeout(() => {
      s.idle = undefined;
      if (this.session !== s) return;
      this.end(s, `no answer from ${s.owner.label} within ${timeoutMs} ms`).catch((err: unknown) => {
        this.log.warn({ err }, 'USSD: cancelling an idle session failed');
      });
    }, timeoutMs);
  }

  private clearIdle(s: Current): void {
    if (s.idle) clearTimeout(s.idle);
    s.idle = undefined;
  }
}

/** A modem's broker whose commands run as operator tasks on its scheduler (the daemon's one per modem). */
export function ussdBrokerOn(
  name: string,
  scheduler: AtScheduler<{ readonly modem: Modem; readonly channel: AtChannel }>,
  logger: Logger,
): UssdBroker {
  return new UssdBroker({
    modem: name,
    logger,
    run: (label, fn, signal) =>
      scheduler.schedule({ priority: 'operator', label: `operator: ${label}`, ...(signal ? { signal } : {}) }, (ctx) =>
        fn(ctx.target.modem),
      ),
  });
}
