/**
 * USSD sessions on one modem: start, answer a menu (status 1), cancel; the +CUSD reply is assembled and handed to the
 * waiting request, or reported as network-initiated. One request at a time; a session asking for input must be
 * answered or cancelled first. The waiter is armed before the command is sent, and send() returns once the command is
 * accepted (the scheduler is not held while the network thinks). No reply in time: the session is ended with
 * AT+CUSD=2. A release notice before the reply waits RELEASE_GRACE_MS for it (else `noReply`).
 */
import { WaitCancelledError, WaitTimeoutError } from '../at/wait.js';
import type { AtResponse, Urc } from '../at/types.js';
import { AtCommandError, BridgeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { ModemAt } from './commands.js';
import { ussdStatusText } from './ussd-status.js';
import { describeFinal } from './error-codes.js';
import type { ModemProfile } from './types.js';
import { encodeUcs2Hex } from '../sms/ucs2.js';
import {
  continueCusd,
  decodeUssdPayload,
  isUndecodedUssd,
  parseCusdLine,
  ussdLanguage,
  type CusdLine,
} from './ussd-codec.js';

/** A request the modem accepted whose +CUSD reply is still to come (UssdSession.send). */
export interface PendingUssdReply {
  reply: Promise<UssdReply>;
  /** Stops waiting (reply rejects with WaitCancelledError). */
  cancel(): void;
}

export interface UssdReply {
  /** 0 done, 1 further input needed, 2 ended by network, 3 answered by another client, 4 not supported, 5 timeout. */
  status: number;
  text: string;
  dcs?: number;
  /** The text is the payload as it came: no encoding was recognised (shown raw with its DCS). */
  undecoded?: boolean;
  /** ISO 639 language the reply named at its start (DCS 0x10, 0x11), taken off `text`. */
  language?: string;
  /** The +CUSD line(s) as received ('' when the reply was an error result). */
  raw: string;
  /** The release notice line as received (`+CUSD: 2,"Initiating Release",15`, `+CUSD: 2`) that came before this reply. */
  releaseNotice?: string;
  /** Status 2 with only a release notice: no reply came within RELEASE_GRACE_MS after it. */
  noReply?: boolean;
}

/** After a release notice, the reply may still come (python-gsmmodem test_modem.py: OK, notice, reply): this long. */
export const RELEASE_GRACE_MS = 5000;

/** Status 2 with no text, or with a text that only says the session is being released. */
export function isReleaseNotice(reply: Pick<UssdReply, 'status' | 'text' | 'raw'>): boolean {
  if (reply.status !== 2) return false;
  return !/^\+CUSD:\s*2\s*,\s*"/i.test(reply.raw) || /^\s*(initiating\s+)?release\b/i.test(reply.text);
}

/**
 * The generic USSD step: the code dialled with ATD<code>; when the profile says so (menu answers still go by
 * AT+CUSD: `ATD1;` would be a voice call); otherwise the text in the profile's charset: as it is for GSM and IRA,
 * as UCS2 hex when the charset is UCS2 (27.007 §7.15: the string is in the TE character set).
 */
export function ussdCommandGeneric(
  profile: Pick<ModemProfile, 'ussd'>,
  text: string,
  kind: 'open' | 'reply' = 'open',
): string {
  if (profile.ussd.send === 'atd' && kind === 'open') return `ATD${text};`;
  return `AT+CUSD=1,"${profile.ussd.charset === 'UCS2' ? encodeUcs2Hex(text) : text}",15`;
}

/** The generic decoding step: by the DCS (GSM 7-bit text, UCS2 hex, ...). */
export function ussdTextGeneric(payload: string, dcs: number | undefined): string {
  return decodeUssdPayload(payload, dcs, { packed: false }).text;
}

/** A continued reply string waits this long for its closing quote. */
const CONTINUATION_GRACE_MS = 2000;

export interface UssdSessionOptions {
  at: ModemAt;
  name: string;
  log: Logger;
  profile: () => ModemProfile;
  /** Default reply timeout. Default 30 s. */
  timeoutMs?: number;
  /** A reply nobody waits for (network-initiated, or late after a timeout). */
  onUnsolicited: (reply: UssdReply) => void;
}

export class UssdSession {
  private readonly o: UssdSessionOptions;
  private busy = false;
  private open = false;
  private partial: { line: CusdLine; raw: string[]; timer: NodeJS.Timeout } | undefined;
  private readonly replyListeners = new Set<(reply: UssdReply) => void>();

  constructor(options: UssdSessionOptions) {
    this.o = options;
  }

  /** true while the network waits for an answer (status 1). */
  get waitingForInput(): boolean {
    return this.open;
  }

  /** Starts a USSD session (`*888#`). Status 1 in the reply: answer with reply() or end with cancel(). */
  async start(code: string, options: { timeoutMs?: number } = {}): Promise<UssdReply> {
    return this.exchange(code, 'open', options);
  }

  /** Answers a USSD session that asked for input (status 1). */
  async reply(text: string, options: { timeoutMs?: number } = {}): Promise<UssdReply> {
    return this.exchange(text, 'reply', options);
  }

  /**
   * The first half of start()/reply(): sends the request (the reply waiter armed first) and resolves once the modem
   * accepted it (its final result), with the reply still to come. The caller may give the channel back before it
   * awaits `reply` (the network may think for seconds). `reply` rejects with WaitTimeoutError when no +CUSD comes
   * in time; ending the session then (cancel()) is the caller's job. A +CME ERROR 132..134 resolves as status 4.
   */
  async send(text: string, kind: 'open' | 'reply', options: { timeoutMs?: number } = {}): Promise<PendingUssdReply> {
    const { at, name, log } = this.o;
    if (this.busy) throw new BridgeError('USSD', `${name}: a USSD request is already in progress`);
    if (kind === 'open' && this.open) {
      throw new BridgeError('USSD', `${name}: a USSD session is waiting for input`, {
        hint: 'answer it with ussdReply() or end it with ussdCancel()',
      });
    }
    if (kind === 'reply' && !this.open) throw new BridgeError('USSD', `${name}: no USSD session is waiting for input`);
    const timeoutMs = options.timeoutMs ?? this.o.timeoutMs ?? 30_000;
    this.busy = true;
    let handedOver = false;
    try {
      const command = this.command(text, kind);
      const profile = this.o.profile();
      const charset = profile.ussd.charset;
      if (profile.ussd.send === 'text' && charset !== undefined) {
        if ((await at.tryLines(`AT+CSCS="${charset}"`)) === undefined)
          log.warn({ charset }, 'AT+CSCS refused; sending USSD in the current charset');
      }
      const waiter = this.awaitReply(timeoutMs, `the +CUSD reply to ${text}`);
      let res: AtResponse;
      try {
        res = await at.channel.run(command, { timeoutMs });
      } catch (err) {
        waiter.cancel();
        at.rethrowIfGone(err);
        if (
          err instanceof AtCommandError &&
          err.errorCode !== undefined &&
          err.errorCode >= 132 &&
          err.errorCode <= 134
        ) {
          this.open = false;
          const reply: UssdReply = {
            status: 4,
            text: `USSD not supported by the network or the SIM: ${describeFinal(err.final)}`,
            raw: err.final ?? '',
          };
          return { reply: Promise.resolve(reply), cancel: () => undefined };
        }
        this.open = false;
        const final = err instanceof AtCommandError ? err.final : undefined;
        throw new BridgeError('USSD', `${name}: USSD ${text} failed: ${describeFinal(final)}`, { cause: err });
      }
      // A reply string with CR/LF inside may have spilled into the command's own lines.
      if (this.partial) for (const line of res.lines) this.feed(line);
      const reply = waiter.promise.then(
        (r) => {
          this.open = r.status === 1;
          return r;
        },
        (err: unknown) => {
          this.open = false;
          throw err;
        },
      );
      void reply.finally(() => (this.busy = false)).catch(() => undefined); // the rejection is the awaiter's
      handedOver = true;
      return { reply, cancel: () => waiter.cancel() };
    } finally {
      if (!handedOver) this.busy = false;
    }
  }

  /** Ends the USSD session (AT+CUSD=2). A refusal is logged: many modems answer ERROR when no session is open. */
  async cancel(): Promise<void> {
    this.open = false;
    try {
      await this.o.at.channel.run('AT+CUSD=2');
    } catch (err) {
      this.o.at.rethrowIfGone(err);
      this.o.log.warn(
        { final: err instanceof AtCommandError ? err.final : undefined },
        'AT+CUSD=2 refused (no session open?)',
      );
    }
  }

  /** A +CUSD URC from the channel. */
  onCusd(urc: Urc): void {
    const line = urc.lines[0] ?? '';
    const parsed = parseCusdLine(line);
    if (!parsed) {
      this.o.log.error({ line }, 'unreadable +CUSD line');
      return;
    }
    if (this.partial) this.flushPartial('a new +CUSD arrived');
    if (!parsed.complete) {
      // The quoted string continues on the next line(s): collect them (bounded by a short grace period).
      const timer = setTimeout(() => this.flushPartial('its closing quote never arrived'), CONTINUATION_GRACE_MS);
      this.partial = { line: parsed, raw: [line], timer };
      return;
    }
    this.deliver(parsed, [line]);
  }

  /** A line no command claimed: the continuation of a reply string, when one is open. */
  onUnexpected(line: string): void {
    if (this.partial) this.feed(line);
  }

  /** Stops the continuation timer (the modem detaches). */
  dispose(): void {
    if (this.partial) clearTimeout(this.partial.timer);
    this.partial = undefined;
  }

  private command(text: string, kind: 'open' | 'reply'): string {
    const { name } = this.o;
    if (/["\r\n\x1a]/.test(text))
      throw new BridgeError(
        'USSD',
        `${name}: USSD string ${JSON.stringify(text)} contains a quote or control character`,
      );
    const profile = this.o.profile();
    const step = profile.steps?.ussdCommand;
    if (!step) return ussdCommandGeneric(profile, text, kind);
    try {
      return step(text, kind);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      throw new BridgeError('USSD', `${name}: USSD string ${JSON.stringify(text)} ${why}`, {
        cause: err instanceof Error && err.cause !== undefined ? err.cause : err,
      });
    }
  }

  private async exchange(text: string, kind: 'open' | 'reply', options: { timeoutMs?: number }): Promise<UssdReply> {
    const pending = await this.send(text, kind, options);
    try {
      return await pending.reply;
    } catch (err) {
      if (!(err instanceof WaitTimeoutError)) throw err;
      await this.o.at.tryLines('AT+CUSD=2');
      throw new BridgeError(
        'USSD',
        `${this.o.name}: no USSD reply to ${text} within ${Math.round(err.timeoutMs / 1000)} s`,
        {
          cause: err,
          hint: 'check the code and network registration; some modems need ATD<code>; (profile ussd.send)',
        },
      );
    }
  }

  /**
   * The reply to the request in flight: the first +CUSD, except a release notice, after which the wait goes on for
   * RELEASE_GRACE_MS (see the header). Armed synchronously, so a reply in the same chunk as the notice is not lost.
   */
  private awaitReply(timeoutMs: number, what: string): { promise: Promise<UssdReply>; cancel(): void } {
    let settle!: { resolve: (r: UssdReply) => void; reject: (e: Error) => void };
    const promise = new Promise<UssdReply>((resolve, reject) => (settle = { resolve, reject }));
    promise.catch(() => undefined); // handled here, still seen by whoever awaits
    let done = false;
    let notice: UssdReply | undefined;
    let timer: NodeJS.Timeout | undefined;
    const finish = (fn: () => void): void => {
      if (done) return;
      done = true;
      if (timer) clearTimeout(timer);
      this.replyListeners.delete(listener);
      fn();
    };
    const listener = (reply: UssdReply): void => {
      if (notice === undefined && isReleaseNotice(reply)) {
        notice = reply;
        this.o.log.info(
          { raw: reply.raw },
          `USSD release notice (${reply.raw}): waiting up to ${RELEASE_GRACE_MS / 1000} s for the reply`,
        );
        if (timer) clearTimeout(timer);
        timer = setTimeout(() => {
          const n = notice!;
          this.o.log.warn(
            { raw: n.raw },
            `the network ended the USSD session (${n.raw}) and no reply came within ${RELEASE_GRACE_MS / 1000} s`,
          );
          finish(() => settle.resolve({ ...n, noReply: true }));
        }, RELEASE_GRACE_MS);
        return;
      }
      finish(() => settle.resolve(notice ? { ...reply, releaseNotice: notice.raw } : reply));
    };
    this.replyListeners.add(listener);
    timer = setTimeout(() => finish(() => settle.reject(new WaitTimeoutError(what, timeoutMs))), timeoutMs);
    return { promise, cancel: () => finish(() => settle.reject(new WaitCancelledError(what))) };
  }

  private feed(line: string): void {
    const partial = this.partial;
    if (!partial) return;
    partial.line = continueCusd(partial.line, line);
    partial.raw.push(line);
    if (partial.line.complete) {
      clearTimeout(partial.timer);
      this.partial = undefined;
      this.deliver(partial.line, partial.raw);
    }
  }

  private flushPartial(reason: string): void {
    const partial = this.partial;
    if (!partial) return;
    clearTimeout(partial.timer);
    this.partial = undefined;
    this.o.log.warn({ reason }, 'USSD reply string did not close; using what arrived');
    this.deliver(partial.line, partial.raw);
  }

  private deliver(line: CusdLine, raw: string[]): void {
    const profile = this.o.profile();
    const text =
      line.payload === undefined
        ? ussdStatusText(line.status)
        : (profile.steps?.ussdText ?? ussdTextGeneric)(line.payload, line.dcs);
    const reply: UssdReply = { status: line.status, text, raw: raw.join('\n') };
    if (line.dcs !== undefined) reply.dcs = line.dcs;
    if (line.payload !== undefined && isUndecodedUssd(line.payload, line.dcs, text)) reply.undecoded = true;
    const language = line.payload === undefined ? undefined : ussdLanguage(line.payload, line.dcs, text);
    if (language !== undefined) reply.language = language;
    if (this.replyListeners.size > 0) {
      for (const listener of [...this.replyListeners]) listener(reply);
      return;
    }
    // Network-initiated (or a late reply after a timeout).
    this.open = line.status === 1;
    this.o.onUnsolicited(reply);
  }
}
