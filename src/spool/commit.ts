/**
 * Group commit of the spool's directory fsyncs (it only sequences the fsync function it is given).
 * sync(dir) resolves only after an fsync of `dir` that started after the call succeeded, and rejects every caller of a
 * failed one: nothing is reported durable that an fsync did not cover. Per directory at most one fsync is in flight;
 * calls arriving meanwhile share the next one; a lone call starts at once. Directories never wait for each other.
 */

export type DirFsync = (dir: string) => Promise<void>;

interface Waiters {
  promise: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
  members: number;
}

interface DirState {
  inFlight: boolean;
  /** The group forming while an fsync is in flight; covered by the next fsync. */
  next: Waiters | undefined;
}

function waiters(): Waiters {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject, members: 0 };
}

export interface CommitStats {
  /** Directory fsyncs started. */
  fsyncs: number;
  /** sync() calls (each covered by exactly one fsync). */
  calls: number;
  /** The largest number of calls one fsync covered. */
  largestGroup: number;
}

export class DirCommitter {
  private readonly dirs = new Map<string, DirState>();
  private readonly counts: CommitStats = { fsyncs: 0, calls: 0, largestGroup: 0 };

  constructor(private readonly fsyncDir: DirFsync) {}

  /** Resolves after an fsync of `dir` that started after this call (see the header). */
  sync(dir: string): Promise<void> {
    let st = this.dirs.get(dir);
    if (st === undefined) {
      st = { inFlight: false, next: undefined };
      this.dirs.set(dir, st);
    }
    st.next ??= waiters();
    st.next.members += 1;
    this.counts.calls += 1;
    const { promise } = st.next;
    if (!st.inFlight) this.start(dir, st);
    return promise;
  }

  stats(): CommitStats {
    return { ...this.counts };
  }

  private start(dir: string, st: DirState): void {
    const group = st.next!;
    st.next = undefined;
    st.inFlight = true;
    this.counts.fsyncs += 1;
    this.counts.largestGroup = Math.max(this.counts.largestGroup, group.members);
    let run: Promise<void>;
    try {
      run = this.fsyncDir(dir);
    } catch (err) {
      run = Promise.reject(err); // a synchronous throw fails the group like a rejection
    }
    run.then(group.resolve, group.reject).finally(() => {
      st.inFlight = false;
      if (st.next !== undefined) this.start(dir, st);
      else if (this.dirs.get(dir) === st) this.dirs.delete(dir);
    });
  }
}
