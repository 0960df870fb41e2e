/**
 * The modem's scheduler, line by line of its header contract: one task at a time, priorities, an SMS waits for at most
 * one operator task, no starvation, exclusive mode, cancellation, fail fast when disconnected or stopped, reconnects.
 * No timers at all: tasks are held by promise gates and released by the test.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AtScheduler, ModemUnavailableError, type TaskContext, type TaskPriority } from '../../src/modem/scheduler.js';

/** Lets every promise continuation that is ready run. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

interface Gate {
  release(): void;
  wait: Promise<void>;
}
function gate(): Gate {
  let release!: () => void;
  const wait = new Promise<void>((resolve) => (release = resolve));
  return { release, wait };
}

/** A scheduler attached to 'modem-1' and a log of task starts and ends. */
function setup(fairness?: number) {
  const s = new AtScheduler<string>({ name: 'm1', ...(fairness !== undefined ? { fairness } : {}) });
  s.attach('modem-1');
  const log: string[] = [];
  let running = 0;
  let maxRunning = 0;
  /** Queues a task that logs its start, waits for `hold` (when given), logs its end. */
  const task = (
    priority: TaskPriority,
    label: string,
    hold?: Gate,
    signal?: AbortSignal,
    body?: (ctx: TaskContext<string>) => Promise<void>,
  ) =>
    s.schedule({ priority, label, ...(signal ? { signal } : {}) }, async (ctx) => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      log.push(label);
      if (hold) await hold.wait;
      if (body) await body(ctx);
      running--;
      return label;
    });
  return { s, log, task, maxRunning: () => maxRunning };
}

describe('AtScheduler: order', () => {
  it('runs one task at a time: urgent, then receive, then operator, then maintenance; FIFO within a priority', async () => {
    const { s, log, task, maxRunning } = setup(5); // fairness above the queue length: pure priority order
    const first = gate();
    const done = [task('maintenance', 'sweep', first)];
    done.push(
      task('maintenance', 'probe'),
      task('operator', 'op1'),
      task('receive', 'read 1'),
      task('operator', 'op2'),
    );
    done.push(task('receive', 'read 2'), task('urgent', 'cnma 1'), task('urgent', 'cnma 2'));
    await turn();
    expect(log).toEqual(['sweep']);
    expect(s.status()).toMatchObject({
      running: 'sweep',
      queued: 7,
      queuedBy: { urgent: 2, receive: 2, operator: 2, maintenance: 1, exclusive: 0 },
    });
    first.release();
    expect(await Promise.all(done)).toEqual(['sweep', 'probe', 'op1', 'read 1', 'op2', 'read 2', 'cnma 1', 'cnma 2']);
    expect(log).toEqual(['sweep', 'cnma 1', 'cnma 2', 'read 1', 'read 2', 'op1', 'op2', 'probe']);
    expect(maxRunning()).toBe(1);
    expect(s.status()).toMatchObject({ running: undefined, queued: 0, attached: true, stopped: false });
  });

  it('a receive task queued while an operator task runs waits for that one only, even with more operators and old maintenance queued', async () => {
    const { log, task } = setup(2);
    const op1 = gate();
    const x = gate();
    const done = [task('receive', 'x', x)];
    done.push(
      task('maintenance', 'sweep'),
      task('receive', 'r1'),
      task('operator', 'op1', op1),
      task('operator', 'op2'),
    );
    x.release();
    await turn();
    expect(log).toEqual(['x', 'r1', 'op1']);
    done.push(task('receive', 'sms'));
    op1.release();
    await Promise.all(done);
    // The sweep has waited for r1 and op1: it is due (fairness 2), yet the SMS that arrived during op1 goes first.
    expect(log).toEqual(['x', 'r1', 'op1', 'sms', 'sweep', 'op2']);
  });

  it('a stream of receive work does not starve an operator task: it starts after at most `fairness` receive tasks', async () => {
    const { log, task } = setup(3);
    const hold = gate();
    let left = 20;
    const feed = (): Promise<unknown> =>
      task('receive', `r${left}`, undefined, undefined, async () => {
        if (--left > 0) void feed(); // every receive task brings the next one: the queue is never empty
      });
    const done = [task('receive', 'first', hold), feed(), task('operator', 'op'), task('maintenance', 'probe')];
    hold.release();
    await Promise.all(done);
    await turn();
    const receivesBefore = (label: string) => log.slice(1, log.indexOf(label)).filter((l) => l.startsWith('r')).length;
    expect(receivesBefore('op')).toBe(3);
    expect(receivesBefore('probe')).toBe(3); // after 3 receive tasks, while receive work was still arriving
    expect(log.filter((l) => l.startsWith('r'))).toHaveLength(20);
  });
});

describe('AtScheduler: contract under random arrivals (property)', () => {
  const kinds: TaskPriority[] = ['urgent', 'receive', 'operator', 'maintenance'];
  // Each arrival is queued when task number `at` starts (-1: before anything runs), so work arrives mid-task.
  const arrivals = fc.array(fc.record({ kind: fc.constantFrom(...kinds), at: fc.integer({ min: -1, max: 12 }) }), {
    minLength: 1,
    maxLength: 40,
  });

  it('one at a time, all run, urgent first, FIFO per priority, an SMS waits for one operator task at most, no starvation', async () => {
    await fc.assert(
      fc.asyncProperty(arrivals, fc.integer({ min: 1, max: 4 }), async (plan, fairness) => {
        const s = new AtScheduler<string>({ name: 'p', fairness });
        s.attach('t');
        type Ev = { id: number; kind: TaskPriority; queuedAt: number; queuedDuring: number | undefined };
        const tasks: Ev[] = [];
        const starts: number[] = []; // task ids in start order
        let running: number | undefined;
        let overlap = false;
        const promises: Promise<unknown>[] = [];
        const queue = (kind: TaskPriority) => {
          const id = tasks.length;
          tasks.push({ id, kind, queuedAt: starts.length, queuedDuring: running });
          promises.push(
            s.schedule({ priority: kind, label: `${kind} ${id}` }, async () => {
              if (running !== undefined) overlap = true;
              running = id;
              starts.push(id);
              for (const a of plan) if (a.at === starts.length - 1) queue(a.kind);
              await Promise.resolve();
              running = undefined;
            }),
          );
        };
        const hold = gate();
        promises.push(s.schedule({ priority: 'receive', label: 'hold' }, () => hold.wait));
        for (const a of plan) if (a.at === -1) queue(a.kind);
        hold.release();
        await Promise.all(promises);
        await s.idle();

        expect(overlap).toBe(false);
        expect(starts.length).toBe(tasks.length);
        const startIndex = new Map(starts.map((id, i) => [id, i]));
        const waitingAt = (i: number, kind: TaskPriority) =>
          tasks.filter((t) => t.kind === kind && t.queuedAt <= i && startIndex.get(t.id)! > i);
        starts.forEach((id, i) => {
          const t = tasks[id]!;
          // Urgent first: nothing else starts while an urgent task waits.
          if (t.kind !== 'urgent') expect(waitingAt(i, 'urgent')).toEqual([]);
          // FIFO within a priority.
          for (const other of tasks)
            if (other.kind === t.kind && other.id < id) expect(startIndex.get(other.id)!).toBeLessThan(i);
        });
        // A receive task queued while an operator task ran: right after that operator task (urgent ones aside) receive
        // work runs, and no other operator task starts before it unless the receive work ahead of it (an SMS burst
        // queued earlier) let `fairness` receive tasks start first: the operators' fair share, never two in a row.
        for (const t of tasks) {
          if (t.kind !== 'receive' || t.queuedDuring === undefined || tasks[t.queuedDuring]!.kind !== 'operator')
            continue;
          const between = starts
            .slice(startIndex.get(t.queuedDuring)! + 1, startIndex.get(t.id)!)
            .map((id) => tasks[id]!.kind);
          expect(between.filter((k) => k !== 'urgent')[0] ?? 'receive').toBe('receive');
          let receives = 0;
          for (const k of between) {
            if (k === 'receive') receives++;
            if (k === 'operator') {
              expect(receives).toBeGreaterThanOrEqual(fairness);
              receives = 0;
            }
          }
        }
        // No starvation: the oldest waiting operator (maintenance) task sees at most `fairness` receive (receive or
        // operator) tasks start from the moment it is the oldest.
        const starvation = (kind: TaskPriority, overtaking: TaskPriority[], bound: number) => {
          let since = 0;
          starts.forEach((id, i) => {
            const k = tasks[id]!.kind;
            if (k === kind || waitingAt(i, kind).length === 0) since = 0;
            else if (overtaking.includes(k)) since++;
            // (A task queued during start i has queuedAt i + 1: it did not wait for that start.)
            expect(since).toBeLessThanOrEqual(bound);
          });
        };
        starvation('operator', ['receive'], fairness);
        starvation('maintenance', ['receive', 'operator'], fairness + 1);
      }),
      { numRuns: 300 },
    );
  });
});

describe('AtScheduler: exclusive mode and long tasks', () => {
  it('exclusive waits for the running task, then runs alone; everything queued meanwhile (even urgent) waits; none is dropped', async () => {
    const { s, log, task } = setup();
    const sweep = gate();
    const seenInterrupted: boolean[] = [];
    const done = [
      task('maintenance', 'sweep', undefined, undefined, async (ctx) => {
        seenInterrupted.push(ctx.interrupted);
        await sweep.wait;
        seenInterrupted.push(ctx.interrupted);
      }),
    ];
    await turn();
    const init = gate();
    const reinit = s.exclusive('re-init', async (ctx) => {
      log.push(`re-init on ${ctx.target}`);
      await init.wait;
      return 'identity';
    });
    done.push(task('urgent', 'cnma'), task('receive', 'read 1'));
    sweep.release();
    await turn();
    expect(seenInterrupted).toEqual([false, true]); // the sweep could see that a re-init waited for it
    expect(log).toEqual(['sweep', 're-init on modem-1']);
    expect(s.status()).toMatchObject({ running: 're-init', exclusive: true, queued: 2 });
    init.release();
    expect(await reinit).toBe('identity');
    await Promise.all(done);
    expect(log).toEqual(['sweep', 're-init on modem-1', 'cnma', 'read 1']);
    expect(s.status().exclusive).toBe(false);
  });

  it('a long task lets queued urgent tasks run between its items (ctx.runUrgent), but no other work', async () => {
    const { s, log, task } = setup();
    const item = gate();
    let labelDuringUrgent: string | undefined;
    const done = [
      task('maintenance', 'sweep', undefined, undefined, async (ctx) => {
        await item.wait;
        await ctx.runUrgent();
        log.push('sweep item 2');
      }),
    ];
    await turn();
    done.push(task('receive', 'read 1'));
    done.push(
      task('urgent', 'cnma', undefined, undefined, async () => {
        labelDuringUrgent = s.status().running;
      }),
    );
    item.release();
    await Promise.all(done);
    expect(log).toEqual(['sweep', 'cnma', 'sweep item 2', 'read 1']);
    expect(labelDuringUrgent).toBe('cnma');
  });

  it('reports the label of the running task and the queue depth', async () => {
    const { s, task } = setup();
    const hold = gate();
    const done = [
      task('operator', 'operator: AT+CSQ', hold),
      task('receive', 'read 4'),
      task('maintenance', 'liveness probe'),
    ];
    await turn();
    expect(s.status()).toEqual({
      attached: true,
      stopped: false,
      running: 'operator: AT+CSQ',
      queued: 2,
      queuedBy: { exclusive: 0, urgent: 0, receive: 1, operator: 0, maintenance: 1 },
      exclusive: false,
    });
    hold.release();
    await Promise.all(done);
    await s.idle();
    expect(s.status()).toMatchObject({ running: undefined, queued: 0 });
  });
});

describe('AtScheduler: cancellation', () => {
  it('a queued task cancelled by its signal never runs and rejects with the signal reason; the queue moves on', async () => {
    const { s, log, task } = setup();
    const hold = gate();
    const first = task('receive', 'read 1', hold);
    const client = new AbortController();
    const op = task('operator', 'operator: AT+CUSD', undefined, client.signal);
    const probe = task('maintenance', 'probe');
    await turn();
    expect(s.status().queued).toBe(2);
    const reason = new Error('client disconnected');
    client.abort(reason);
    await expect(op).rejects.toBe(reason);
    expect(s.status().queued).toBe(1);
    hold.release();
    await Promise.all([first, probe]);
    expect(log).toEqual(['read 1', 'probe']);
  });

  it('an already aborted signal is refused at once; a signal aborted after the start is passed on, the task decides', async () => {
    const { log, task } = setup();
    const gone = new AbortController();
    gone.abort(new Error('gone'));
    await expect(task('operator', 'never', undefined, gone.signal)).rejects.toThrow('gone');
    const client = new AbortController();
    const hold = gate();
    let abortedInside: boolean | undefined;
    const running = task('operator', 'ussd step', hold, client.signal, async (ctx) => {
      abortedInside = ctx.signal.aborted;
    });
    await turn();
    client.abort();
    hold.release();
    await expect(running).resolves.toBe('ussd step');
    expect(abortedInside).toBe(true);
    expect(log).toEqual(['ussd step']);
  });
});

describe('AtScheduler: disconnects, reconnects, stop', () => {
  it('fails fast while no modem is attached, naming the modem and the task', async () => {
    const s = new AtScheduler<string>({ name: 'tsel-1' });
    let ran = false;
    const p = s.schedule({ priority: 'operator', label: 'operator: AT+CSQ' }, async () => void (ran = true));
    await expect(p).rejects.toBeInstanceOf(ModemUnavailableError);
    await expect(p).rejects.toThrow('modem tsel-1 is not connected (not opened yet): "operator: AT+CSQ" not run');
    await expect(s.exclusive('init', async () => 'x')).rejects.toMatchObject({
      code: 'PORT_CLOSED',
      modem: 'tsel-1',
      task: 'init',
    });
    expect(ran).toBe(false);
  });

  it('detach fails the queued tasks at once, aborts the running task signal, and the scheduler serves the next connection', async () => {
    const { s, log, task } = setup();
    const hold = gate();
    let signal: AbortSignal | undefined;
    let interrupted: boolean | undefined;
    const running = task('receive', 'read 1', hold, undefined, async (ctx) => {
      signal = ctx.signal;
      interrupted = ctx.interrupted;
    });
    const queued = task('operator', 'operator: ATI');
    await turn();
    s.detach('port closed');
    await expect(queued).rejects.toThrow('modem m1 is not connected (port closed): "operator: ATI" not run');
    await expect(task('receive', 'read 2')).rejects.toBeInstanceOf(ModemUnavailableError);
    hold.release();
    await expect(running).resolves.toBe('read 1'); // the running task ends on its own
    expect(signal?.aborted).toBe(true);
    expect(interrupted).toBe(true);
    s.attach('modem-1 again');
    const target = await s.schedule({ priority: 'receive', label: 'read 3' }, async (ctx) => ctx.target);
    expect(target).toBe('modem-1 again');
    expect(log).toEqual(['read 1']);
  });

  it('a task running across a reconnect does not run the new connection urgent work from its turn', async () => {
    const { s, log, task } = setup();
    const hold = gate();
    const old = task('maintenance', 'old sweep', hold, undefined, async (ctx) => {
      await ctx.runUrgent();
      log.push(`old sweep ends on ${ctx.target}`);
    });
    await turn();
    s.detach('port closed');
    s.attach('modem-2');
    const cnma = s.schedule(
      { priority: 'urgent', label: 'cnma' },
      async (ctx) => void log.push(`cnma on ${ctx.target}`),
    );
    hold.release();
    await Promise.all([old, cnma]);
    expect(log).toEqual(['old sweep', 'old sweep ends on modem-1', 'cnma on modem-2']);
  });

  it('stop fails queued tasks, waits for the running one, and refuses work afterwards', async () => {
    const { s, task } = setup();
    const hold = gate();
    const running = task('receive', 'read 1', hold);
    const queued = task('maintenance', 'sweep');
    await turn();
    let stopped = false;
    const stopping = s.stop().then(() => (stopped = true));
    await expect(queued).rejects.toThrow('modem m1 is stopped');
    await turn();
    expect(stopped).toBe(false);
    hold.release();
    await stopping;
    await expect(running).resolves.toBe('read 1');
    await expect(task('urgent', 'cnma')).rejects.toThrow('is stopped');
    expect(s.status()).toMatchObject({ stopped: true, attached: false });
    expect(() => s.attach('modem-1')).toThrow('stopped');
  });

  it('idle() resolves when nothing is queued or running', async () => {
    const { s, task } = setup();
    await s.idle();
    const hold = gate();
    const done = [task('receive', 'a', hold), task('maintenance', 'b')];
    let idle = false;
    const waiting = s.idle().then(() => (idle = true));
    await turn();
    expect(idle).toBe(false);
    hold.release();
    await Promise.all(done);
    await waiting;
    expect(idle).toBe(true);
  });
});
