/**
 * Repeated warnings of one cause are summarised: the first at once, then one line per interval with the count, for
 * as long as they go on; causes are counted apart; flush() writes what is counted.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RepeatedWarnings } from '../../src/log/repeated.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('RepeatedWarnings', () => {
  it('a flood of one cause: the first line, then one summary a minute with the count', () => {
    vi.useFakeTimers();
    const lines: string[] = [];
    const w = new RepeatedWarnings((l) => lines.push(l), 60_000);
    for (let i = 0; i < 10_000; i++) w.note('refused', `refused client ${i}`);
    expect(lines).toEqual(['refused client 0']);
    vi.advanceTimersByTime(60_000);
    expect(lines).toEqual(['refused client 0', 'refused client 9999 (9999 more like it in the last 60 s)']);
    for (let i = 0; i < 5; i++) w.note('refused', `refused again ${i}`);
    vi.advanceTimersByTime(60_000);
    expect(lines.at(-1)).toBe('refused again 4 (5 more like it in the last 60 s)');
    vi.advanceTimersByTime(60_000); // quiet: the cause is forgotten, the next one is written at once
    w.note('refused', 'later');
    expect(lines.at(-1)).toBe('later');
  });

  it('causes apart; flush writes what is counted', () => {
    vi.useFakeTimers();
    const lines: string[] = [];
    const w = new RepeatedWarnings((l) => lines.push(l), 60_000);
    w.note('a', 'a1');
    w.note('b', 'b1');
    w.note('a', 'a2');
    w.flush();
    expect(lines).toEqual(['a1', 'b1', 'a2 (1 more like it in the last 60 s)']);
  });
});
