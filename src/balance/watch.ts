/**
 * Balance and active-period watch: one USSD check (checkBalance, for the daemon and `pulsa-bridge balance`) and the
 * daemon's periodic schedule per modem (BalanceWatch). A check never throws: a USSD error is a result with state
 * `error`, an unparsed reply is kept verbatim with `balance: null` (never a guess). The USSD holds the modem's
 * scheduler only while a command is in flight. A failed check is retried after retryMs; a busy USSD session skips the
 * tick without touching the last result. Timers are injected; stop() cancels them and waits for a check in progress.
 */
import type { Logger } from '../log.js';
import { localDate } from '../time-format.js';
import { DEFAULT_BALANCE_PATTERNS, judgeBalance, parseBalanceReply, type BalancePatterns } from './parse.js';

export interface BalanceUssd {
  ussdOpen(
    code: string,
    options?: { timeoutMs?: number },
  ): Promise<{ status: number; statusText: string; text: string }>;
  ussdReply(
    text: string,
    options?: { timeoutMs?: number },
  ): Promise<{ status: number; statusText: string; text: string }>;
  ussdCancel(): Promise<void>;
}

export interface BalanceCheckSettings {
  code: string;
  replies: readonly string[];
  patterns: BalancePatterns;
  minBalance: number;
  activeWarnDays: number;
}

export interface BalanceResult {
  modem: string;
  code: string;
  /** The full text of the reply that was parsed (the last one), verbatim. */
  reply: string;
  /** Every reply of the session, in order (menus included). */
  replies: string[];
  /** Whole rupiah, or null when no pattern matched cleanly. */
  balance: number | null;
  /** YYYY-MM-DD, or null. */
  activeUntil: string | null;
  state: 'ok' | 'warning' | 'unknown' | 'error';
  reasons: string[];
  hint?: string;
  /** Set for state `error`. */
  error?: string;
  checkedAt: string;
}

/**
 * A modem's check with a code (and replies) given on demand (`balance --code`, the control op `balance`): the
 * modem's patterns and thresholds are kept; a modem without settings gets the built-in patterns, no balance threshold
 * and the 7-day active-period warning. Without a code: the modem's settings as they are (undefined when none).
 */
export function withOverrides(
  s: BalanceCheckSettings | undefined,
  code?: string,
  replies?: readonly string[],
): BalanceCheckSettings | undefined {
  if (code === undefined) return s;
  return { patterns: DEFAULT_BALANCE_PATTERNS, minBalance: 0, activeWarnDays: 7, ...s, code, replies: replies ?? [] };
}

/** `YYYY-MM-DD` of `d` in the machine's local time zone (a Pi in Indonesia runs on WIB). */
export async function checkBalance(
  modem: string,
  ussd: BalanceUssd,
  s: BalanceCheckSettings,
  now: Date = new Date(),
  timeoutMs?: number,
): Promise<BalanceResult> {
  const replies: string[] = [];
  const base = { modem, code: s.code, checkedAt: now.toISOString() };
  const o = timeoutMs ? { timeoutMs } : {};
  let r;
  try {
    r = await ussd.ussdOpen(s.code, o);
    replies.push(r.text);
    for (const answer of s.replies) {
      if (r.status !== 1)
        throw new Error(`the network ended the session (${r.statusText}) before the answer ${JSON.stringify(answer)}`);
      r = await ussd.ussdReply(answer, o);
      replies.push(r.text);
    }
    if (r.status === 1) await ussd.ussdCancel();
  } catch (err) {
    await ussd.ussdCancel().catch(() => undefined); // best effort: the session may already be gone with the error
    return {
      ...base,
      reply: replies[replies.length - 1] ?? '',
      replies,
      balance: null,
      activeUntil: null,
      state: 'error',
      reasons: [],
      error: (err as Error).message,
      hint: 'check the code with `pulsa-bridge ussd`; `pulsa-bridge status` shows whether the modem is running',
    };
  }
  if (r.status >= 4 || (r.status >= 2 && r.text === '')) {
    return {
      ...base,
      reply: '',
      replies,
      balance: null,
      activeUntil: null,
      state: 'error',
      reasons: [],
      error: `the network answered ${r.statusText}`,
      hint: `is ${s.code} the balance code of this SIM's operator? set modems[].balance.code`,
    };
  }
  const reply = r.text;
  const parsed = parseBalanceReply(reply, s.patterns);
  const verdict = judgeBalance(parsed, { minBalance: s.minBalance, activeWarnDays: s.activeWarnDays }, localDate(now));
  return {
    modem,
    code: s.code,
    reply,
    balance: parsed.balance,
    activeUntil: parsed.activeUntil,
    state: verdict.state,
    reasons: verdict.reasons,
    ...(verdict.hint ? { hint: verdict.hint } : {}),
    replies,
    checkedAt: base.checkedAt,
  };
}

export interface WatchedModem {
  name: string;
  settings: BalanceCheckSettings & { intervalHours: number };
}

export interface WatchTimers {
  now(): Date;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realTimers: WatchTimers = {
  now: () => new Date(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

export interface BalanceWatchOptions {
  modems: readonly WatchedModem[];
  /** The USSD of a modem (the daemon's UssdBroker for that modem). */
  ussdFor(name: string): BalanceUssd;
  /** Why the modem's USSD is not free now (a session open), or undefined: a periodic check then waits its turn. */
  busy?(name: string): string | undefined;
  logger: Logger;
  timers?: WatchTimers;
  firstDelayMs?: number;
  retryMs?: number;
  ussdTimeoutMs?: number;
  /** After every result (the daemon refreshes its status file). */
  onResult?: (r: BalanceResult) => void;
}

/** How often the control socket's reading level may cause a balance check of a modem (BalanceWatch.shared). */
export const SHARED_CHECK_MIN_INTERVAL_MS = 10 * 60_000;

export class BalanceWatch {
  private readonly last = new Map<string, BalanceResult>();
  private readonly handles = new Map<string, unknown>();
  private readonly running = new Set<Promise<unknown>>();
  /** The one check of the configured code in flight per modem that readers share. */
  private readonly sharing = new Map<string, Promise<BalanceResult>>();
  /** When a reader last started a shared check per modem (ms clock). */
  private readonly sharedAt = new Map<string, number>();
  private readonly timers: WatchTimers;
  private stopped = false;

  constructor(private readonly o: BalanceWatchOptions) {
    this.timers = o.timers ?? realTimers;
  }

  start(): void {
    for (const m of this.o.modems) if (m.settings.intervalHours > 0) this.schedule(m, this.o.firstDelayMs ?? 60_000);
  }

  /** The last result of a modem (periodic or on demand). */
  lastResult(name: string): BalanceResult | undefined {
    return this.last.get(name);
  }

  /** A check now, with the modem's settings or the given code/replies; the result is kept and logged. */
  async checkNow(name: string, settings: BalanceCheckSettings): Promise<BalanceResult> {
    const p = checkBalance(name, this.o.ussdFor(name), settings, this.timers.now(), this.o.ussdTimeoutMs);
    this.running.add(p);
    try {
      const r = await p;
      this.record(r);
      return r;
    } finally {
      this.running.delete(p);
    }
  }

  /**
   * A balance for someone who may not make the modem talk at will (the control socket's reading level): the last
   * result when it is younger than `minIntervalMs` or a shared check started less than that ago, else the check in
   * flight, else one new check that everyone asking meanwhile shares. So any number of requests dial at most one
   * USSD per modem per `minIntervalMs`. `fresh` says whether this call started the check.
   */
  async shared(
    name: string,
    settings: BalanceCheckSettings,
    minIntervalMs: number,
  ): Promise<{ result: BalanceResult; fresh: boolean }> {
    const inFlight = this.sharing.get(name);
    if (inFlight) return { result: await inFlight, fresh: false };
    const last = this.last.get(name);
    const now = this.timers.now().getTime();
    const lastAt = Math.max(last ? Date.parse(last.checkedAt) || 0 : 0, this.sharedAt.get(name) ?? -Infinity);
    if (last && now - lastAt < minIntervalMs) return { result: last, fresh: false };
    if (!last && now - (this.sharedAt.get(name) ?? -Infinity) < minIntervalMs) {
      const s = Math.round(minIntervalMs / 1000);
      throw new Error(`no balance known yet for ${name}, and a check ran less than ${s} s ago`);
    }
    const busy = this.o.busy?.(name);
    if (busy !== undefined) {
      if (last) return { result: last, fresh: false }; // an operator's session is not a reader's to wait on or break
      throw new Error(`no balance known yet for ${name}, and its USSD is busy: ${busy}`);
    }
    this.sharedAt.set(name, now);
    const p = this.checkNow(name, settings).finally(() => this.sharing.delete(name));
    this.sharing.set(name, p);
    return { result: await p, fresh: true };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const h of this.handles.values()) this.timers.clearTimeout(h);
    this.handles.clear();
    await Promise.allSettled([...this.running]);
  }

  private schedule(m: WatchedModem, ms: number): void {
    if (this.stopped) return;
    this.handles.set(
      m.name,
      this.timers.setTimeout(() => {
        this.handles.delete(m.name);
        const busy = this.o.busy?.(m.name);
        if (busy !== undefined) {
          const retry = Math.min(m.settings.intervalHours * 3_600_000, this.o.retryMs ?? 15 * 60_000);
          this.o.logger.info(
            { modem: m.name, retryInMs: retry },
            `balance check of ${m.name} skipped: ${busy}; retrying in ${Math.round(retry / 1000)} s`,
          );
          this.schedule(m, retry);
          return;
        }
        void this.checkNow(m.name, m.settings).then(
          (r) => {
            const interval = m.settings.intervalHours * 3_600_000;
            this.schedule(m, r.state === 'error' ? Math.min(interval, this.o.retryMs ?? 15 * 60_000) : interval);
          },
          (err: unknown) => {
            this.o.logger.error({ modem: m.name, err }, 'balance check failed unexpectedly');
            this.schedule(m, m.settings.intervalHours * 3_600_000);
          },
        );
      }, ms),
    );
  }

  private record(r: BalanceResult): void {
    this.last.set(r.modem, r);
    const fields = { modem: r.modem, code: r.code, balance: r.balance, activeUntil: r.activeUntil, state: r.state };
    if (r.state === 'ok')
      this.o.logger.info(fields, `balance: Rp ${r.balance ?? '?'}, active until ${r.activeUntil ?? '?'}`);
    else if (r.state === 'error') this.o.logger.warn({ ...fields, error: r.error }, `balance check failed: ${r.error}`);
    else
      this.o.logger.warn(
        { ...fields, reply: r.reply, reasons: r.reasons, hint: r.hint },
        `balance ${r.state}: ${r.reasons.join('; ')}${r.hint ? ` (hint: ${r.hint})` : ''}`,
      );
    this.o.onResult?.(r);
  }
}
