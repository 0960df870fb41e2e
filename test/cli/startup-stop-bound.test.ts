/**
 * The bound on a stop signal received during start-up (src/cli/lifecycle.ts startupStopBound): it ends a start-up
 * stuck in the kernel, and is disarmed once start-up has finished, so it never cuts the daemon's own stop short.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startupStopBound } from '../../src/cli/lifecycle.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('startupStopBound', () => {
  it('a start-up that never finishes: the first signal expires the bound once', () => {
    const requested: string[] = [];
    const expired: string[] = [];
    const g = startupStopBound(
      20_000,
      (s) => requested.push(s),
      (s) => expired.push(s),
    );
    g.request('SIGTERM');
    g.request('SIGINT');
    vi.advanceTimersByTime(19_999);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect({ requested, expired, first: g.requested() }).toEqual({
      requested: ['SIGTERM'],
      expired: ['SIGTERM'],
      first: 'SIGTERM',
    });
  });

  it('the timer armed during start-up is cleared when the daemon has started', () => {
    const expired: string[] = [];
    const g = startupStopBound(
      20_000,
      () => undefined,
      (s) => expired.push(s),
    );
    g.request('SIGTERM');
    vi.advanceTimersByTime(5_000);
    g.started();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(60_000);
    expect(expired).toEqual([]);
    expect(g.requested()).toBe('SIGTERM');
  });

  it('a signal after start-up arms nothing', () => {
    const expired: string[] = [];
    const g = startupStopBound(
      20_000,
      () => undefined,
      (s) => expired.push(s),
    );
    g.started();
    g.request('SIGINT');
    expect(vi.getTimerCount()).toBe(0);
    expect(g.requested()).toBe('SIGINT');
  });
});
