/**
 * The wait helper: first match wins, the listener is removed exactly once, a timeout names what was awaited, a
 * cancelled or timed-out waiter nobody awaits is no unhandled rejection. Fake timers only.
 */
import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { listen, orTimeout, waitFor, WaitCancelledError, WaitTimeoutError, withDeadline } from '../../src/at/wait.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('waitFor', () => {
  it('resolves with the first value that matches and stops listening', async () => {
    vi.useFakeTimers();
    const source = new EventEmitter();
    const w = waitFor(listen<{ name: string }>(source, 'urc'), (u) => u.name === 'sms-ready', {
      timeoutMs: 1000,
      what: 'the SMS Ready banner',
    });
    expect(source.listenerCount('urc')).toBe(1);
    source.emit('urc', { name: 'rdy' });
    source.emit('urc', { name: 'sms-ready', n: 1 });
    source.emit('urc', { name: 'sms-ready', n: 2 });
    await expect(w.promise).resolves.toEqual({ name: 'sms-ready', n: 1 });
    expect(source.listenerCount('urc')).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('times out with an error that names what it waited for and for how long', async () => {
    vi.useFakeTimers();
    const source = new EventEmitter();
    const w = waitFor(listen<string>(source, 'line'), () => true, {
      timeoutMs: 20_000,
      what: 'the +CUSD reply to *888#',
    });
    const outcome = w.promise.catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(19_999);
    source.emit('nothing');
    await vi.advanceTimersByTimeAsync(1);
    const err = (await outcome) as WaitTimeoutError;
    expect(err).toBeInstanceOf(WaitTimeoutError);
    expect(err.code).toBe('AT_TIMEOUT');
    expect(err.message).toBe('timed out after 20000 ms waiting for the +CUSD reply to *888#');
    expect(err.what).toBe('the +CUSD reply to *888#');
    expect(source.listenerCount('line')).toBe(0);
    source.emit('line', 'late'); // nobody listens any more: nothing happens
  });

  it('cancel() rejects with WaitCancelledError, removes the listener, and is no unhandled rejection', async () => {
    vi.useFakeTimers();
    const source = new EventEmitter();
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const awaited = waitFor(listen<string>(source, 'line'), () => true, { timeoutMs: 1000, what: 'a line' });
      const ignored = waitFor(listen<string>(source, 'line'), () => true, { timeoutMs: 1000, what: 'another line' });
      awaited.cancel();
      ignored.cancel();
      ignored.cancel();
      await expect(awaited.promise).rejects.toBeInstanceOf(WaitCancelledError);
      expect(source.listenerCount('line')).toBe(0);
      expect(vi.getTimerCount()).toBe(0);
      const timedOut = waitFor(listen<string>(source, 'line'), () => true, { timeoutMs: 10, what: 'a third line' });
      void timedOut;
      await vi.advanceTimersByTimeAsync(10);
      vi.useRealTimers();
      await new Promise((r) => setImmediate(r));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('a value delivered while subscribing counts', async () => {
    let unsubscribed = 0;
    const w = waitFor<number>(
      (listener) => {
        listener(7);
        return () => void unsubscribed++;
      },
      (n) => n === 7,
      { timeoutMs: 1000, what: 'seven' },
    );
    await expect(w.promise).resolves.toBe(7);
    expect(unsubscribed).toBe(1);
  });
});

describe('withDeadline and orTimeout', () => {
  it('withDeadline passes the work through when it is in time, and names the work when it is not', async () => {
    vi.useFakeTimers();
    await expect(
      withDeadline(Promise.resolve('done'), { timeoutMs: 100, what: 'the probe of /dev/ttyUSB2' }),
    ).resolves.toBe('done');
    expect(vi.getTimerCount()).toBe(0);
    const stuck = withDeadline(new Promise<string>(() => undefined), {
      timeoutMs: 100,
      what: 'the probe of /dev/ttyUSB2',
    }).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(100);
    expect(((await stuck) as Error).message).toBe('timed out after 100 ms waiting for the probe of /dev/ttyUSB2');
  });

  it('orTimeout turns a timeout into undefined and lets other errors through', async () => {
    vi.useFakeTimers();
    const source = new EventEmitter();
    const paused = orTimeout(
      waitFor(listen<string>(source, 'urc'), () => true, { timeoutMs: 50, what: 'a URC' }).promise,
    );
    await vi.advanceTimersByTimeAsync(50);
    await expect(paused).resolves.toBeUndefined();
    await expect(orTimeout(Promise.reject(new Error('port closed')))).rejects.toThrow('port closed');
  });
});
