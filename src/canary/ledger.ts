/**
 * The canaries' money ledger: one small JSON file in the daemon's state directory (canary-ledger.json), the only
 * record of what canaries spent. A run reserves its amount for the day (in the canary's time zone) and the ledger is
 * written tmp -> fdatasync -> rename -> fsync dir before the run dials; settle() refunds the amount only when nothing
 * left the modem. So the day's spend survives restarts and SIGKILL: a run found `in-flight` at load was cut off
 * mid-send, stays spent and ends `unknown`, and its canary is paused (never repeated blindly). The failures in a row,
 * the pause and the last success are kept here too. A ledger that is not a regular file, too large, writable by
 * others, not JSON or not exactly this shape is refused with LedgerError: no canary spends on a ledger it cannot read.
 */
import * as path from 'node:path';
import { lstat } from 'node:fs/promises';
import { diskOps, readBounded } from '../spool/files.js';

export const LEDGER_FILE = 'canary-ledger.json';
const MAX_LEDGER_BYTES = 256 * 1024;
/** Runs kept per canary (newest last), for `canary ls` and the status page. */
export const KEPT_RUNS = 20;

export type CanaryOutcome = 'approved' | 'failed' | 'timeout' | 'unknown';

export interface LedgerRun {
  id: string;
  /** ISO time the run was reserved. */
  at: string;
  day: string;
  amount: number;
  /** Rupiah counted against the day: the amount, or 0 once it is known that nothing left the modem. */
  spent: number;
  state: 'in-flight' | 'done';
  outcome?: CanaryOutcome;
  orderId?: string;
  detail?: string;
  durationMs?: number;
}

export interface CanaryEntry {
  /** The day `spent` counts (YYYY-MM-DD in the canary's time zone). */
  day: string;
  spent: number;
  failuresInARow: number;
  paused?: { at: string; reason: string };
  lastSuccessAt?: string;
  runs: LedgerRun[];
}

export interface LedgerData {
  version: 1;
  canaries: Record<string, CanaryEntry>;
}

export class LedgerError extends Error {
  override readonly name = 'LedgerError';
}

/** The calendar day (YYYY-MM-DD) of `ms` in `timeZone`. */
export function dayIn(timeZone: string, ms: number): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(ms);
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const NAME = /^[A-Za-z0-9._-]{1,64}$/;
const OUTCOMES: readonly string[] = ['approved', 'failed', 'timeout', 'unknown'];
const isCount = (x: unknown): x is number => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
const isShort = (x: unknown, max = 2000): x is string => typeof x === 'string' && x.length <= max;
const isTime = (x: unknown): x is string => isShort(x, 40) && !Number.isNaN(Date.parse(x));
const isObj = (x: unknown): x is Record<string, unknown> => !!x && typeof x === 'object' && !Array.isArray(x);

function onlyKeys(o: Record<string, unknown>, allowed: readonly string[], where: string): void {
  for (const k of Object.keys(o))
    if (!allowed.includes(k)) throw new LedgerError(`${where}: unknown key ${JSON.stringify(k)}`);
}

function checkRun(r: unknown, where: string): LedgerRun {
  if (!isObj(r)) throw new LedgerError(`${where}: expected an object`);
  onlyKeys(r, ['id', 'at', 'day', 'amount', 'spent', 'state', 'outcome', 'orderId', 'detail', 'durationMs'], where);
  const bad = (k: string) => new LedgerError(`${where}.${k}: not valid`);
  if (!isShort(r.id, 100) || r.id === '') throw bad('id');
  if (!isTime(r.at)) throw bad('at');
  if (!isShort(r.day, 10) || !DAY.test(r.day)) throw bad('day');
  if (!isCount(r.amount)) throw bad('amount');
  if (!isCount(r.spent) || r.spent > r.amount) throw bad('spent');
  if (r.state !== 'in-flight' && r.state !== 'done') throw bad('state');
  if (r.outcome !== undefined && !OUTCOMES.includes(r.outcome as string)) throw bad('outcome');
  if (r.orderId !== undefined && !isShort(r.orderId, 200)) throw bad('orderId');
  if (r.detail !== undefined && !isShort(r.detail)) throw bad('detail');
  if (r.durationMs !== undefined && !isCount(r.durationMs)) throw bad('durationMs');
  return r as unknown as LedgerRun;
}

/** Parsed JSON as a ledger, exactly (unknown keys refused); LedgerError names the first problem. */
export function checkLedger(raw: unknown): LedgerData {
  if (!isObj(raw)) throw new LedgerError('expected a JSON object');
  onlyKeys(raw, ['version', 'canaries'], 'ledger');
  if (raw.version !== 1) throw new LedgerError(`version ${JSON.stringify(raw.version)} is not 1`);
  if (!isObj(raw.canaries)) throw new LedgerError('canaries: expected an object');
  const canaries: Record<string, CanaryEntry> = Object.create(null) as Record<string, CanaryEntry>;
  for (const [name, e] of Object.entries(raw.canaries)) {
    const where = `canaries[${JSON.stringify(name)}]`;
    if (!NAME.test(name)) throw new LedgerError(`${where}: not a canary name`);
    if (!isObj(e)) throw new LedgerError(`${where}: expected an object`);
    onlyKeys(e, ['day', 'spent', 'failuresInARow', 'paused', 'lastSuccessAt', 'runs'], where);
    if (!isShort(e.day, 10) || !DAY.test(e.day)) throw new LedgerError(`${where}.day: not valid`);
    if (!isCount(e.spent)) throw new LedgerError(`${where}.spent: not valid`);
    if (!isCount(e.failuresInARow)) throw new LedgerError(`${where}.failuresInARow: not valid`);
    if (e.paused !== undefined) {
      const p = e.paused;
      if (!isObj(p) || !isTime(p.at) || !isShort(p.reason) || Object.keys(p).some((k) => k !== 'at' && k !== 'reason'))
        throw new LedgerError(`${where}.paused: not valid`);
    }
    if (e.lastSuccessAt !== undefined && !isTime(e.lastSuccessAt))
      throw new LedgerError(`${where}.lastSuccessAt: not valid`);
    if (!Array.isArray(e.runs) || e.runs.length > KEPT_RUNS) throw new LedgerError(`${where}.runs: not valid`);
    const runs = e.runs.map((r, i) => checkRun(r, `${where}.runs[${i}]`));
    canaries[name] = { ...(e as unknown as CanaryEntry), runs };
  }
  return { version: 1, canaries };
}

/** What settle() records of a finished run. */
export interface Settlement {
  outcome: CanaryOutcome;
  /** Whether anything left the modem, or may have: false refunds the amount. */
  spent: boolean;
  orderId?: string;
  detail: string;
  durationMs: number;
  /** Pause the canary whatever the failure count says (an unknown send: never repeated blindly). */
  pause?: string;
}

export class Ledger {
  private constructor(
    readonly file: string,
    private data: LedgerData,
    private readonly now: () => number,
  ) {}

  /**
   * The ledger of `dir` (a missing file is an empty ledger). Runs left `in-flight` become `unknown`, still spent, their
   * canary paused, and the ledger is written back before anything else happens. LedgerError for anything else.
   */
  static async open(
    dir: string,
    now: () => number = Date.now,
  ): Promise<{ ledger: Ledger; interrupted: Array<{ canary: string; run: LedgerRun }> }> {
    const file = path.join(dir, LEDGER_FILE);
    const refuse = (why: string) =>
      new LedgerError(
        `the canary ledger ${file} ${why}: no canary runs until an operator checks the day's spend and fixes or removes it`,
      );
    let text: string | undefined;
    try {
      const st = await lstat(file);
      if (st.isFile() && (st.mode & 0o022) !== 0) throw refuse('is writable by others');
      text = await readBounded(file, MAX_LEDGER_BYTES);
    } catch (err) {
      if (err instanceof LedgerError) throw err;
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') throw refuse(`cannot be read (${code ?? (err as Error).message})`);
    }
    let data: LedgerData = { version: 1, canaries: Object.create(null) as Record<string, CanaryEntry> };
    if (text !== undefined) {
      try {
        data = checkLedger(JSON.parse(text));
      } catch (err) {
        throw refuse(`is not valid (${(err as Error).message})`);
      }
    }
    const ledger = new Ledger(file, data, now);
    const interrupted: Array<{ canary: string; run: LedgerRun }> = [];
    for (const [canary, e] of Object.entries(data.canaries)) {
      for (const run of e.runs) {
        if (run.state !== 'in-flight') continue;
        run.state = 'done';
        run.outcome = 'unknown';
        run.detail =
          'the daemon stopped while this run was in flight: whether credit was sent is unknown (counted as spent)';
        e.failuresInARow += 1;
        e.paused = {
          at: new Date(now()).toISOString(),
          reason: `run ${run.id} was cut off mid-send: check the centre SIM${run.orderId ? ` and order ${run.orderId}` : ''}, then resume`,
        };
        interrupted.push({ canary, run });
      }
    }
    if (interrupted.length > 0)
      await ledger.save().catch((err: unknown) => {
        // The in-flight records stay on disk as they are: the next start finds them again.
        throw refuse(`could not be written back (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
      });
    return { ledger, interrupted };
  }

  /** The canary's entry, rolled over to `day` (a new day starts at 0 spent; the pause and failures carry over). */
  entry(name: string, day: string): Readonly<CanaryEntry> {
    return this.mutable(name, day);
  }

  /** Names with an entry, for the check of canaries no longer configured. */
  names(): string[] {
    return Object.keys(this.data.canaries);
  }

  /** A copy, for listings. */
  snapshot(): LedgerData {
    return structuredClone(this.data);
  }

  /** Counts `amount` against the day and marks the run in flight, durably, before anything is dialled. */
  async reserve(name: string, day: string, run: { id: string; amount: number; orderId?: string }): Promise<void> {
    const e = this.mutable(name, day);
    e.spent += run.amount;
    e.runs.push({
      id: run.id,
      at: new Date(this.now()).toISOString(),
      day,
      amount: run.amount,
      spent: run.amount,
      state: 'in-flight',
      ...(run.orderId ? { orderId: run.orderId.slice(0, 200) } : {}),
    });
    while (e.runs.length > KEPT_RUNS) e.runs.shift();
    try {
      await this.save();
    } catch (err) {
      // Not on disk: not reserved (the run does not dial), so the memory must not count it either (on its own day:
      // a reader may have rolled the entry over to a new day meanwhile).
      if (e.day === day) e.spent = Math.max(0, e.spent - run.amount);
      e.runs = e.runs.filter((r) => r.id !== run.id);
      throw err;
    }
  }

  /**
   * A finished run (reserved or not: a run held back before dialling is recorded too, spending nothing): its outcome,
   * the refund when nothing left the modem, the failures in a row and the pause after `pauseAfter` of them. Returns
   * the entry as saved.
   */
  async settle(
    name: string,
    day: string,
    id: string,
    s: Settlement,
    pauseAfter: number,
  ): Promise<Readonly<CanaryEntry>> {
    const e = this.mutable(name, day);
    let run = e.runs.find((r) => r.id === id);
    if (!run) {
      run = { id, at: new Date(this.now()).toISOString(), day, amount: 0, spent: 0, state: 'done' };
      e.runs.push(run);
      while (e.runs.length > KEPT_RUNS) e.runs.shift();
    }
    if (run.state === 'in-flight' && !s.spent) {
      if (run.day === e.day) e.spent = Math.max(0, e.spent - run.spent);
      run.spent = 0;
    }
    run.state = 'done';
    run.outcome = s.outcome;
    run.detail = s.detail.slice(0, 2000);
    run.durationMs = Math.max(0, Math.round(s.durationMs));
    if (s.orderId) run.orderId = s.orderId.slice(0, 200);
    const at = new Date(this.now()).toISOString();
    if (s.outcome === 'approved') {
      e.failuresInARow = 0;
      e.lastSuccessAt = at;
    } else {
      e.failuresInARow += 1;
      if (s.pause) e.paused = { at, reason: s.pause.slice(0, 2000) };
      else if (e.failuresInARow >= pauseAfter && !e.paused)
        e.paused = { at, reason: `${e.failuresInARow} runs in a row did not end approved (the last: ${s.outcome})` };
    }
    await this.save();
    return e;
  }

  async pause(name: string, day: string, reason: string): Promise<void> {
    this.mutable(name, day).paused = { at: new Date(this.now()).toISOString(), reason: reason.slice(0, 2000) };
    await this.save();
  }

  /** Lifts the pause and the failure count. */
  async resume(name: string, day: string): Promise<void> {
    const e = this.mutable(name, day);
    delete e.paused;
    e.failuresInARow = 0;
    await this.save();
  }

  private mutable(name: string, day: string): CanaryEntry {
    const e = Object.hasOwn(this.data.canaries, name) ? this.data.canaries[name] : undefined;
    if (!e) {
      const fresh: CanaryEntry = { day, spent: 0, failuresInARow: 0, runs: [] };
      this.data.canaries[name] = fresh;
      return fresh;
    }
    if (e.day < day) {
      e.day = day;
      e.spent = 0;
    }
    return e;
  }

  /** Writes the ledger durably, one write at a time (each writes the whole current state). */
  save(): Promise<void> {
    const next = this.writing.then(
      () => this.write(),
      () => this.write(),
    );
    this.writing = next.catch(() => undefined);
    return next;
  }

  private writing: Promise<void> = Promise.resolve();

  /** tmp -> fdatasync -> rename -> fsync dir. */
  private async write(): Promise<void> {
    const dir = path.dirname(this.file);
    const tmp = path.join(dir, `.${LEDGER_FILE}.${process.pid}.tmp`);
    await diskOps.unlink(tmp).catch(() => undefined);
    const fd = await diskOps.openNew(tmp);
    try {
      await diskOps.write(fd, Buffer.from(JSON.stringify(this.data, null, 1) + '\n'));
      await diskOps.datasync(fd);
    } catch (err) {
      await diskOps.close(fd).catch(() => undefined);
      await diskOps.unlink(tmp).catch(() => undefined);
      throw err;
    }
    await diskOps.close(fd);
    await diskOps.rename(tmp, this.file);
    await diskOps.fsyncDir(dir);
  }
}
