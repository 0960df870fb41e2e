/**
 * The one scheduler of AT work of one configured modem: every task that talks to the modem goes through it; it knows
 * no AT syntax, port or timer. One task at a time, by priority (urgent > receive > operator > maintenance, FIFO
 * within one), and nothing starves: operator and maintenance work get a turn within `fairness` receive tasks.
 * exclusive() (init) runs alone once the running task ends. A queued task is cancelled by its AbortSignal; tasks fail
 * fast with ModemUnavailableError when no target is attached or the scheduler is stopped. It outlives reconnects: a
 * task sees the target attached when it starts (ctx.target), never a stale one. test/modem/scheduler.test.ts checks each rule.
 */
import { BridgeError } from '../errors.js';

export type TaskPriority = 'urgent' | 'receive' | 'operator' | 'maintenance';

export interface TaskContext<T> {
  /** What the scheduler was attached to when the task started (the modem and its channel). */
  readonly target: T;
  /**
   * Aborted when the caller's signal aborts, when the target is detached (the port closed) or when the scheduler
   * stops. Passed on for the task to use; the scheduler never interrupts a running task by itself.
   */
  readonly signal: AbortSignal;
  /** True while an exclusive task waits for this one, or the scheduler is detached or stopping: end at a safe point. */
  readonly interrupted: boolean;
  /** Runs the queued urgent tasks now, within this task's turn (a long task calls it between its items). */
  runUrgent(): Promise<void>;
}

export interface ScheduleOptions {
  priority: TaskPriority;
  /** Shown by status() while the task runs, and named in errors (e.g. 'read index 3', 'operator: AT+CSQ'). */
  label: string;
  /** Cancels the task while it is queued (the client went away). */
  signal?: AbortSignal;
}

export interface SchedulerStatus {
  attached: boolean;
  stopped: boolean;
  /** Label of the task running now (an urgent task run from within a long task shows instead of it). */
  running: string | undefined;
  /** Tasks waiting, exclusive ones included. */
  queued: number;
  queuedBy: Record<TaskPriority | 'exclusive', number>;
  /** An exclusive task is running or waiting. */
  exclusive: boolean;
}

export interface SchedulerOptions {
  /** The configured modem's name, for error messages. */
  name: string;
  /** Anti-starvation bound (see the header); default 3, at least 1. */
  fairness?: number;
}

/** The modem cannot take work: disconnected (nothing attached) or the scheduler is stopped. */
export class ModemUnavailableError extends BridgeError {
  override name = 'ModemUnavailableError';
  readonly modem: string;
  readonly task: string;
  constructor(modem: string, task: string, why: string) {
    super('PORT_CLOSED', `modem ${modem} ${why}: "${task}" not run`, {
      hint: 'see `pulsa-bridge status` for the modem state; the task can be retried once the modem is running',
    });
    this.modem = modem;
    this.task = task;
  }
}

type Kind = TaskPriority | 'exclusive';

interface Entry<T> {
  kind: Kind;
  label: string;
  fn: (ctx: TaskContext<T>) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

interface Running {
  kind: Kind;
  label: string;
  abort: AbortController;
}

export class AtScheduler<T> {
  private readonly name: string;
  private readonly fairness: number;
  private readonly queues: Record<Kind, Entry<T>[]> = {
    exclusive: [],
    urgent: [],
    receive: [],
    operator: [],
    maintenance: [],
  };
  private target: T | undefined;
  /** Why nothing is attached, for the fail-fast error. */
  private unavailable = 'is not connected (not opened yet)';
  private stopped = false;
  private pumping = false;
  /** The running task and the urgent tasks it runs via ctx.runUrgent(), innermost last. */
  private readonly running: Running[] = [];
  private lastStarted: Kind | undefined;
  /** Receive tasks started while the oldest operator task waited. */
  private operatorPassed = 0;
  /** Receive and operator tasks started while the oldest maintenance task waited. */
  private maintenancePassed = 0;
  private idleWaiters: Array<() => void> = [];

  constructor(options: SchedulerOptions) {
    this.name = options.name;
    this.fairness = Math.max(1, Math.floor(options.fairness ?? 3));
  }

  /** The target attached now (undefined while disconnected). */
  get current(): T | undefined {
    return this.target;
  }

  /** The supervisor attaches the modem of a new connection; queued and later tasks run against it. */
  attach(target: T): void {
    if (this.stopped) throw new Error(`the scheduler of modem ${this.name} is stopped: cannot attach`);
    this.target = target;
    this.pump();
  }

  /**
   * The connection ended: queued tasks fail at once (ModemUnavailableError naming `reason`), new ones fail fast until
   * the next attach(), the running task's signal is aborted (its commands fail on the closed channel anyway).
   * Does not wait for the running task: `idle()` does.
   */
  detach(reason = 'disconnected'): void {
    this.target = undefined;
    this.unavailable = `is not connected (${reason})`;
    this.failAll();
  }

  /** For good: queued tasks fail, new ones fail fast; resolves when the running task has finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.target = undefined;
    this.unavailable = 'is stopped (the bridge is shutting down)';
    this.failAll();
    await this.idle();
  }

  /** Queues `fn` at `priority`; resolves or rejects with its outcome (see the header for when it fails unrun). */
  schedule<R>(options: ScheduleOptions, fn: (ctx: TaskContext<T>) => Promise<R>): Promise<R> {
    return this.enqueue(options.priority, options.label, options.signal, fn);
  }

  /** Runs `fn` alone: after the task in progress, before anything queued, holding back everything until it ends. */
  exclusive<R>(
    label: string,
    fn: (ctx: TaskContext<T>) => Promise<R>,
    options: { signal?: AbortSignal } = {},
  ): Promise<R> {
    return this.enqueue('exclusive', label, options.signal, fn);
  }

  /** Resolves when nothing is queued or running. */
  idle(): Promise<void> {
    if (!this.pumping && this.depth() === 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  status(): SchedulerStatus {
    const queuedBy = {
      exclusive: this.queues.exclusive.length,
      urgent: this.queues.urgent.length,
      receive: this.queues.receive.length,
      operator: this.queues.operator.length,
      maintenance: this.queues.maintenance.length,
    };
    return {
      attached: this.target !== undefined,
      stopped: this.stopped,
      running: this.running[this.running.length - 1]?.label,
      queued: this.depth(),
      queuedBy,
      exclusive: queuedBy.exclusive > 0 || this.running[0]?.kind === 'exclusive',
    };
  }

  private depth(): number {
    let n = 0;
    for (const q of Object.values(this.queues)) n += q.length;
    return n;
  }

  private enqueue<R>(
    kind: Kind,
    label: string,
    signal: AbortSignal | undefined,
    fn: (ctx: TaskContext<T>) => Promise<R>,
  ): Promise<R> {
    if (this.target === undefined) return Promise.reject(new ModemUnavailableError(this.name, label, this.unavailable));
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<R>((resolve, reject) => {
      const entry: Entry<T> = {
        kind,
        label,
        fn,
        resolve: resolve as (value: unknown) => void,
        reject,
        signal,
        onAbort: undefined,
      };
      const q = this.queues[kind];
      if (signal) {
        entry.onAbort = () => {
          const at = q.indexOf(entry);
          if (at < 0) return; // already started (the task sees ctx.signal) or already failed
          q.splice(at, 1);
          reject(signal.reason);
          this.settleIdle();
        };
        signal.addEventListener('abort', entry.onAbort, { once: true });
      }
      if (q.length === 0 && kind === 'operator') this.operatorPassed = 0;
      if (q.length === 0 && kind === 'maintenance') this.maintenancePassed = 0;
      q.push(entry);
      this.pump();
    });
  }

  private failAll(): void {
    for (const q of Object.values(this.queues)) {
      for (const entry of q.splice(0)) {
        this.forget(entry);
        entry.reject(new ModemUnavailableError(this.name, entry.label, this.unavailable));
      }
    }
    for (const r of this.running) r.abort.abort(new ModemUnavailableError(this.name, r.label, this.unavailable));
    this.settleIdle();
  }

  private forget(entry: Entry<T>): void {
    if (entry.signal && entry.onAbort) entry.signal.removeEventListener('abort', entry.onAbort);
  }

  /** The selection rule of the header, in order. */
  private pick(): Entry<T> | undefined {
    const q = this.queues;
    if (q.exclusive.length > 0) return q.exclusive.shift();
    if (q.urgent.length > 0) return q.urgent.shift();
    if (this.lastStarted === 'operator' && q.receive.length > 0) return q.receive.shift();
    if (q.maintenance.length > 0 && this.maintenancePassed >= this.fairness) return q.maintenance.shift();
    if (q.operator.length > 0 && (q.receive.length === 0 || this.operatorPassed >= this.fairness))
      return q.operator.shift();
    return q.receive.shift() ?? q.operator.shift() ?? q.maintenance.shift();
  }

  private countStart(kind: Kind): void {
    if (kind === 'urgent' || kind === 'exclusive') return;
    this.lastStarted = kind;
    if (kind === 'receive' && this.queues.operator.length > 0) this.operatorPassed++;
    if (kind === 'operator') this.operatorPassed = 0;
    if ((kind === 'receive' || kind === 'operator') && this.queues.maintenance.length > 0) this.maintenancePassed++;
    if (kind === 'maintenance') this.maintenancePassed = 0;
  }

  /** Runs queued tasks one at a time until none is left. The first task starts synchronously. */
  private pump(): void {
    if (this.pumping || this.target === undefined) return;
    const first = this.pick();
    if (!first) return;
    this.pumping = true;
    void (async () => {
      try {
        // Nothing is queued while detached (failAll() empties the queues, enqueue() refuses), so every entry picked
        // has a target to run against.
        for (
          let entry: Entry<T> | undefined = first, target = this.target;
          entry && target !== undefined;
          target = this.target, entry = target === undefined ? undefined : this.pick()
        ) {
          await this.execute(entry, target);
        }
      } finally {
        this.pumping = false;
        this.settleIdle();
      }
    })();
  }

  private async execute(entry: Entry<T>, target: T): Promise<void> {
    this.forget(entry);
    this.countStart(entry.kind);
    const abort = new AbortController();
    const onCallerAbort = () => abort.abort(entry.signal?.reason);
    entry.signal?.addEventListener('abort', onCallerAbort, { once: true });
    const running: Running = { kind: entry.kind, label: entry.label, abort };
    this.running.push(running);
    const interrupted = () => this.queues.exclusive.length > 0 || this.target === undefined;
    const ctx: TaskContext<T> = {
      target,
      signal: abort.signal,
      get interrupted() {
        return interrupted();
      },
      runUrgent: () => this.runUrgent(target),
    };
    try {
      entry.resolve(await entry.fn(ctx));
    } catch (err) {
      entry.reject(err);
    } finally {
      entry.signal?.removeEventListener('abort', onCallerAbort);
      this.running.splice(this.running.indexOf(running), 1);
    }
  }

  /** ctx.runUrgent(): the urgent queue, in order, inside the caller's turn (only while its target is still attached). */
  private async runUrgent(target: T): Promise<void> {
    while (this.target === target && this.queues.urgent.length > 0) {
      await this.execute(this.queues.urgent.shift()!, target);
    }
  }

  private settleIdle(): void {
    if (this.pumping || this.depth() > 0 || this.idleWaiters.length === 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
