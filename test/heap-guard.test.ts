/**
 * HeapGuard (src/heap-guard.ts): when it forces a full collection (the rule, with a scripted heap and gc), and that it
 * does so for real in a node started with --expose-gc (a child process that promotes garbage the way a burst does).
 * What that saves is measured in bench/ (lean bench, VmHWM), not asserted.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { constants } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { HeapGuard } from '../src/heap-guard.js';

const MiB = 1024 * 1024;
const minor = [{ detail: { kind: constants.NODE_PERFORMANCE_GC_MINOR } }] as never;
const major = [{ detail: { kind: constants.NODE_PERFORMANCE_GC_MAJOR } }] as never;

function scripted(start: number) {
  let used = start;
  const calls: number[] = [];
  const guard = new HeapGuard({
    heapUsed: () => used,
    gc: () => {
      calls.push(used);
      used = Math.round(used * 0.8); // what a full collection leaves
    },
  });
  return { guard, calls, set: (n: number) => (used = n), get: () => used };
}

describe('HeapGuard', () => {
  it('forces a full collection once a young collection leaves the heap more than the slack above the last full one', () => {
    const h = scripted(8 * MiB);
    expect(h.guard.start()).toBe(true);
    h.set(9.9 * MiB);
    h.guard.onEntries(minor);
    expect(h.calls).toEqual([]); // +1.9 MiB: within the 2 MiB slack (a quarter of 8 MiB is 2 MiB too)
    h.set(10.2 * MiB);
    h.guard.onEntries(minor);
    expect(h.calls).toEqual([10.2 * MiB]);
    expect(h.guard.stats.forced).toBe(1);
    // The new base is what the collection left (8.16 MiB): the next one only after another slack of growth.
    h.set(10.1 * MiB);
    h.guard.onEntries(minor);
    expect(h.calls).toHaveLength(1);
    h.set(10.3 * MiB);
    h.guard.onEntries(minor);
    expect(h.calls).toHaveLength(2);
    h.guard.stop();
  });

  it('ignores entries that are not a collection\'s result (incremental marking steps, weak callbacks)', () => {
    const h = scripted(8 * MiB);
    h.guard.start();
    h.set(20 * MiB);
    h.guard.onEntries([{ detail: { kind: constants.NODE_PERFORMANCE_GC_INCREMENTAL } }, { detail: { kind: constants.NODE_PERFORMANCE_GC_WEAKCB } }] as never);
    expect(h.calls).toEqual([]);
    h.guard.onEntries(minor);
    expect(h.calls).toEqual([20 * MiB]);
    h.guard.stop();
  });

  it("takes V8's own full collections as the new base", () => {
    const h = scripted(8 * MiB);
    h.guard.start();
    h.set(12 * MiB);
    h.guard.onEntries(major); // V8 collected by itself and left 12 MiB live (a backlog)
    h.set(13 * MiB);
    h.guard.onEntries(minor);
    expect(h.calls).toEqual([]);
    h.guard.stop();
  });

  it('allows a growth proportional to a large live heap (a long outage backlog is not collected over and over)', () => {
    const h = scripted(100 * MiB);
    h.guard.start();
    h.set(124 * MiB);
    h.guard.onEntries(minor);
    expect(h.calls).toEqual([]); // a quarter of 100 MiB allowed
    h.set(126 * MiB);
    h.guard.onEntries(minor);
    expect(h.calls).toEqual([126 * MiB]);
    h.guard.stop();
  });

  it('does nothing without a gc function (node without --expose-gc), and stops for good when gc() throws', () => {
    const off = new HeapGuard({ gc: undefined, heapUsed: () => 50 * MiB });
    expect(off.start()).toBe(false);
    off.onEntries(minor);
    expect(off.stats.forced).toBe(0);

    let used = 8 * MiB;
    let calls = 0;
    const errors: unknown[] = [];
    const failing = new HeapGuard({ heapUsed: () => used, gc: () => { calls++; throw new Error('no'); }, onError: (e) => errors.push(e) });
    expect(failing.start()).toBe(true);
    used = 20 * MiB;
    expect(() => failing.onEntries(minor)).not.toThrow();
    expect(failing.stats.forced).toBe(0);
    expect(errors).toHaveLength(1);
    used = 40 * MiB;
    failing.onEntries(minor); // stopped for good: gc() is not tried again
    expect(calls).toBe(1);
  });
});

describe('HeapGuard in a real node process', () => {
  const src = pathToFileURL(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../dist/src/heap-guard.js')).href;
  // Objects that live across a few young collections and then die (what a burst's records and listings do): they are
  // promoted and become old-generation garbage. Prints the guard's count and the heap's peak.
  const script = `
    import { HeapGuard } from ${JSON.stringify(src)};
    import { getHeapStatistics } from 'node:v8';
    const guard = new HeapGuard();
    const on = guard.start();
    let peak = 0;
    const keep = [];
    for (let round = 0; round < 400; round++) {
      keep.push(Array.from({ length: 200 }, (_, i) => ({ round, i, text: 'x'.repeat(100) + round + ':' + i })));
      if (keep.length > 8) keep.shift();
      await new Promise((r) => setImmediate(r));
      peak = Math.max(peak, getHeapStatistics().used_heap_size);
    }
    guard.stop();
    console.log(JSON.stringify({ on, forced: guard.stats.forced, peakMiB: peak / 1048576 }));
  `;
  const run = (flags: string[]) => {
    const r = spawnSync(process.execPath, [...flags, '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    return JSON.parse(r.stdout.trim().split('\n').pop()!) as { on: boolean; forced: number; peakMiB: number };
  };

  it('forces full collections under --expose-gc, and is off without it', () => {
    const flags = ['--max-semi-space-size=1', '--single-threaded-gc'];
    const guarded = run([...flags, '--expose-gc']);
    const unguarded = run(flags);
    expect(guarded.on).toBe(true);
    expect(guarded.forced).toBeGreaterThan(0);
    expect(unguarded.on).toBe(false);
    expect(unguarded.forced).toBe(0);
    // How much lower the peak stays is a figure for bench/ (the lean bench's VmHWM), not an assertion here.
  });
});
