/** DirCommitter (src/spool/commit.ts): one directory fsync covers every call that arrived before it started. */
import { describe, expect, it } from 'vitest';
import { DirCommitter } from '../../src/spool/commit.js';

/** An fsync function whose calls the test finishes by hand. */
function manualFsync() {
  const calls: { dir: string; finish: (err?: Error) => void }[] = [];
  const fsync = (dir: string) =>
    new Promise<void>((resolve, reject) => {
      calls.push({ dir, finish: (err) => (err ? reject(err) : resolve()) });
    });
  return { calls, fsync };
}

const flush = () => new Promise((r) => setImmediate(r));

function track(p: Promise<void>) {
  const t = { state: 'waiting' as 'waiting' | 'done' | 'failed', err: undefined as unknown };
  p.then(
    () => (t.state = 'done'),
    (err: unknown) => {
      t.state = 'failed';
      t.err = err;
    },
  );
  return t;
}

describe('DirCommitter', () => {
  it('a lone call starts its fsync at once', async () => {
    const m = manualFsync();
    const c = new DirCommitter(m.fsync);
    const a = track(c.sync('/d'));
    expect(m.calls).toHaveLength(1);
    m.calls[0]!.finish();
    await flush();
    expect(a.state).toBe('done');
    expect(c.stats()).toEqual({ fsyncs: 1, calls: 1, largestGroup: 1 });
  });

  it('calls that arrive while an fsync is in flight wait for the next one, which covers them all', async () => {
    const m = manualFsync();
    const c = new DirCommitter(m.fsync);
    const first = track(c.sync('/d'));
    const later = [track(c.sync('/d')), track(c.sync('/d')), track(c.sync('/d'))];
    expect(m.calls).toHaveLength(1); // one in flight per directory
    m.calls[0]!.finish();
    await flush();
    expect(first.state).toBe('done');
    // the fsync in flight started before they called: it does not cover them
    expect(later.map((t) => t.state)).toEqual(['waiting', 'waiting', 'waiting']);
    expect(m.calls).toHaveLength(2);
    m.calls[1]!.finish();
    await flush();
    expect(later.map((t) => t.state)).toEqual(['done', 'done', 'done']);
    expect(c.stats()).toEqual({ fsyncs: 2, calls: 4, largestGroup: 3 });
  });

  it('directories do not wait for each other', async () => {
    const m = manualFsync();
    const c = new DirCommitter(m.fsync);
    track(c.sync('/a'));
    const b = track(c.sync('/b'));
    expect(m.calls.map((x) => x.dir)).toEqual(['/a', '/b']);
    m.calls[1]!.finish();
    await flush();
    expect(b.state).toBe('done');
  });

  it('a failed fsync fails exactly the calls it was to cover; the next group gets its own fsync', async () => {
    const m = manualFsync();
    const c = new DirCommitter(m.fsync);
    const first = track(c.sync('/d'));
    const group = [track(c.sync('/d')), track(c.sync('/d'))];
    m.calls[0]!.finish();
    await flush();
    const after = track(c.sync('/d')); // arrives while the group's fsync is in flight
    m.calls[1]!.finish(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' }));
    await flush();
    expect(first.state).toBe('done');
    expect(group.map((t) => t.state)).toEqual(['failed', 'failed']);
    expect(group[0]!.err).toMatchObject({ code: 'EIO' });
    expect(after.state).toBe('waiting');
    m.calls[2]!.finish();
    await flush();
    expect(after.state).toBe('done');
  });

  it('an fsync function that throws synchronously fails its group, not the committer', async () => {
    let n = 0;
    const c = new DirCommitter(() => {
      if (n++ === 0) throw new Error('boom');
      return Promise.resolve();
    });
    await expect(c.sync('/d')).rejects.toThrow('boom');
    await expect(c.sync('/d')).resolves.toBeUndefined();
  });
});
