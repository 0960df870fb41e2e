/**
 * Repeated warnings of one cause, summarised, so no client can push the daemon's log past a line per cause per
 * interval: the first of a cause is written at once; the next ones within `intervalMs` are counted, and when the
 * interval ends one line says the last of them and how many there were (and a new interval starts while they go on).
 * flush() writes what is counted (at stop). Timers are unref'd; `timers` is injectable for tests. The fields given
 * with a line (peer uid, connection) travel with it to `write`; the summary carries the last one's.
 */

type Fields = Record<string, unknown>;

interface Window {
  last: string;
  fields: Fields | undefined;
  count: number;
  timer: ReturnType<typeof setTimeout>;
}

export class RepeatedWarnings {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly write: (line: string, fields?: Fields) => void,
    private readonly intervalMs = 60_000,
    private readonly timers: { set: typeof setTimeout; clear: typeof clearTimeout } = {
      set: setTimeout,
      clear: clearTimeout,
    },
  ) {}

  /** A warning of `cause` (a short fixed key, never client text), as `line` would say it. */
  note(cause: string, line: string, fields?: Fields): void {
    const w = this.windows.get(cause);
    if (w) {
      w.count++;
      w.last = line;
      w.fields = fields;
      return;
    }
    this.write(line, ...(fields ? [fields] : []));
    this.open(cause, line, fields);
  }

  /** Writes every count not yet written and ends the intervals. */
  flush(): void {
    for (const [cause, w] of this.windows) {
      this.timers.clear(w.timer);
      this.windows.delete(cause);
      if (w.count > 0) this.writeSummary(w);
    }
  }

  private open(cause: string, line: string, fields: Fields | undefined): void {
    const timer = this.timers.set(() => this.end(cause), this.intervalMs);
    (timer as { unref?: () => void }).unref?.();
    this.windows.set(cause, { last: line, fields, count: 0, timer });
  }

  private end(cause: string): void {
    const w = this.windows.get(cause);
    this.windows.delete(cause);
    if (!w || w.count === 0) return;
    this.writeSummary(w);
    this.open(cause, w.last, w.fields); // still going on: the next interval counts too
  }

  private writeSummary(w: Window): void {
    const line = `${w.last} (${w.count} more like it in the last ${Math.round(this.intervalMs / 1000)} s)`;
    this.write(line, { ...(w.fields ?? {}), repeated: w.count });
  }
}
