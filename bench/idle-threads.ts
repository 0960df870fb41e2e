/**
 * What a daemon spends CPU on in the idle window right after a burst, thread by thread, for one or more built
 * checkouts interleaved in one run: each run starts that checkout's daemon (`node <its unit's flags> [--node-arg]...
 * <checkout>/bin/pulsa-bridge run`, one virtual modem, bench/process/harness.ts), delivers a burst of 30, waits 1 s, then
 * reads /proc/<pid>/task/<tid>/schedstat (ns on CPU, every thread) every `--slice-sec` through `--idle-sec`.
 * Printed per checkout (medians over rounds): CPU ms of the window on the main thread, on node's platform threads (the
 * six it starts with: V8's GC helpers and compile jobs, the delayed-task and signal threads) and on the threads started
 * later (libuv's pool: fs, fsync), the CPU per slice (when it runs), VmRSS at the start and end of the window; with
 * `--trace-gc` also the collections V8 ran in the window (kind, count, pause ms, heap MB before -> after), from the
 * daemon's log. Threads are told apart by their creation order (all are named "node"). Figures only.
 *
 *   node dist/bench/idle-threads.js --checkout DIR [--with FLAG]... [--checkout DIR [--with FLAG]...]... [--rounds 3]
 *                                   [--idle-sec 30] [--slice-sec 5] [--trace-gc] [--node-arg FLAG]...
 * `--with FLAG` adds a node flag to the checkout named before it (the same checkout may be named twice, e.g. once
 * with --single-threaded-gc); `--node-arg FLAG` adds it to every daemon.
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { execStartNodeFlags } from './process/unit-flags.js';
import { startHarness } from './process/harness.js';
import { burstPlan, tagFor } from './peer/workload.js';
import { statusFieldKiB } from './peer/procstat.js';
import { summarize, table } from './stats.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
/** Threads node runs before any JS: the main thread, then its platform's (4 workers, delayed tasks, signal watchdog). */
const PLATFORM_THREADS = 6;

/** ns on CPU per thread, keyed by tid; tids ascending = creation order. */
function threadCpu(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      out.set(Number(t), Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]));
    } catch {
      // the thread ended between readdir and read: its time is not counted
    }
  }
  return out;
}

function rssMiB(pid: number): number {
  return (statusFieldKiB(readFileSync(`/proc/${pid}/status`, 'utf8'), 'VmRSS') ?? Number.NaN) / 1024;
}

interface Gc {
  kind: string;
  pauseMs: number;
  beforeMB: number;
  afterMB: number;
}

/**
 * `--trace-gc` lines: `[pid:0x..]   1234 ms: Mark-Compact (reduce) 9.1 (12.3) -> 8.0 (10.2) MB, 4.1 / 0.0 ms ...`, the
 * time in ms since the isolate started, kept when within [fromMs, toMs]. V8 prints them through stdio, which a file
 * buffers: the log is read after the daemon has exited.
 */
function gcLines(log: string, fromMs: number, toMs: number): Gc[] {
  const out: Gc[] = [];
  for (const m of log.matchAll(
    /(\d+) ms: ([A-Za-z -]+?(?: \([a-z ]+\))?) ([\d.]+) \([\d.]+\) -> ([\d.]+) \([\d.]+\) MB, (?:pooled: [\d.]+ MB, )?([\d.]+) \/ [\d.]+ ms/g,
  )) {
    const at = Number(m[1]);
    if (at >= fromMs && at <= toMs)
      out.push({ kind: m[2]!.trim(), beforeMB: Number(m[3]), afterMB: Number(m[4]), pauseMs: Number(m[5]) });
  }
  return out;
}

/** ms since `pid` started (its start time in /proc is in clock ticks since boot: 10 ms resolution). */
function aliveMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const startTicks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  const uptime = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
  return uptime * 1000 - startTicks * 10; // CLK_TCK is 100 on Linux
}

interface Run {
  mainMs: number;
  platformMs: number;
  laterMs: number;
  sliceMs: number[];
  rssStart: number;
  rssEnd: number;
  gcs: Gc[];
}

interface Variant {
  dir: string;
  flags: string[];
  label: string;
}

async function oneRun(v: Variant, o: { idleSec: number; sliceSec: number; nodeArgs: string[] }): Promise<Run> {
  const dir = v.dir;
  const flags = [
    ...execStartNodeFlags(readFileSync(join(dir, 'systemd/pulsa-bridge.service'), 'utf8')),
    ...v.flags,
    ...o.nodeArgs,
  ];
  const logCopy = join(tmpdir(), `idle-threads-${process.pid}-${Date.now()}.log`);
  const h = await startHarness({ modems: 1, nodeArgs: flags, bin: join(dir, 'bin/pulsa-bridge'), keepLog: logCopy });
  let window: [number, number] = [0, 0];
  let run: Omit<Run, 'gcs'>;
  try {
    const tags = burstPlan(30).map((sms, i) => {
      const tag = tagFor('B', i + 1);
      h.inject(0, tag + sms.text.slice(sms.tag.length));
      return tag;
    });
    await Promise.all(tags.map((t) => h.arrival(t, 120_000)));
    await h.simsEmpty(60_000);
    await sleep(1000);
    const from = aliveMs(h.pid);
    const rssStart = rssMiB(h.pid);
    const start = threadCpu(h.pid);
    const sliceMs: number[] = [];
    let prev = start;
    for (let s = 0; s < o.idleSec; s += o.sliceSec) {
      await sleep(Math.min(o.sliceSec, o.idleSec - s) * 1000);
      const cur = threadCpu(h.pid);
      sliceMs.push([...cur].reduce((sum, [tid, ns]) => sum + ns - (prev.get(tid) ?? 0), 0) / 1e6);
      prev = cur;
    }
    const tids = [...prev.keys()].sort((a, b) => a - b);
    const ms = (sel: number[]) => sel.reduce((sum, tid) => sum + prev.get(tid)! - (start.get(tid) ?? 0), 0) / 1e6;
    window = [from, aliveMs(h.pid)];
    run = {
      mainMs: ms(tids.filter((t) => t === h.pid)),
      platformMs: ms(tids.filter((t) => t !== h.pid).slice(0, PLATFORM_THREADS)),
      laterMs: ms(tids.filter((t) => t !== h.pid).slice(PLATFORM_THREADS)),
      sliceMs,
      rssStart,
      rssEnd: rssMiB(h.pid),
    };
  } finally {
    await h.stop();
  }
  const log = readFileSync(logCopy, 'utf8');
  rmSync(logCopy, { force: true });
  return { ...run, gcs: gcLines(log, ...window) };
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const opt = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const many = (name: string) =>
    argv.flatMap((a, i) => (a === name && argv[i + 1] !== undefined ? [argv[i + 1]!] : []));
  const dirs: Variant[] = [];
  argv.forEach((a, i) => {
    const next = argv[i + 1];
    if (next === undefined) return;
    if (a === '--checkout') dirs.push({ dir: resolve(next), flags: [], label: resolve(next) });
    else if (a === '--with') {
      const last = dirs[dirs.length - 1];
      if (!last) throw new Error('--with FLAG comes after the --checkout it is for');
      last.flags.push(next);
      last.label = `${last.dir} ${last.flags.join(' ')}`;
    }
  });
  if (dirs.length === 0) throw new Error('--checkout <built checkout> (repeatable)');
  const rounds = Number(opt('--rounds') ?? 3);
  const idleSec = Number(opt('--idle-sec') ?? 30);
  const sliceSec = Number(opt('--slice-sec') ?? 5);
  const nodeArgs = [...many('--node-arg'), ...(argv.includes('--trace-gc') ? ['--trace-gc'] : [])];
  const runs = new Map<Variant, Run[]>(dirs.map((d) => [d, []]));
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? dirs : [...dirs].reverse();
    for (const d of order) {
      process.stderr.write(`idle-threads: round ${r + 1}/${rounds}, ${d.label}\n`);
      runs.get(d)!.push(await oneRun(d, { idleSec, sliceSec, nodeArgs }));
    }
  }
  const f = (v: number, digits = 0) => (Number.isFinite(v) ? v.toFixed(digits) : '-');
  const each = (xs: number[], digits = 0) => xs.map((v) => f(v, digits)).join(' / ');
  process.stdout.write(
    `node ${process.version}; ${rounds} rounds interleaved; after a burst of 30, 1 s, then ${idleSec} s idle; each checkout's unit flags${nodeArgs.length ? ` + ${nodeArgs.join(' ')}` : ''}\n`,
  );
  const rows: string[][] = [];
  for (const d of dirs) {
    const rs = runs.get(d)!;
    const add = (what: string, xs: number[], digits = 0) =>
      rows.push([d.label, what, f(summarize(xs).median, digits), each(xs, digits)]);
    add(
      'CPU ms, all threads',
      rs.map((x) => x.mainMs + x.platformMs + x.laterMs),
    );
    add(
      '  main thread',
      rs.map((x) => x.mainMs),
    );
    add(
      '  node platform threads (V8 GC, compiler)',
      rs.map((x) => x.platformMs),
    );
    add(
      '  threads started later (libuv pool)',
      rs.map((x) => x.laterMs),
    );
    for (let s = 0; s < (rs[0]?.sliceMs.length ?? 0); s++)
      add(
        `  slice ${s + 1} (${s * sliceSec}-${Math.min(idleSec, (s + 1) * sliceSec)} s)`,
        rs.map((x) => x.sliceMs[s] ?? Number.NaN),
      );
    add(
      'VmRSS at the start, MiB',
      rs.map((x) => x.rssStart),
      1,
    );
    add(
      'VmRSS at the end, MiB',
      rs.map((x) => x.rssEnd),
      1,
    );
    if (nodeArgs.includes('--trace-gc')) {
      const kinds = [...new Set(rs.flatMap((x) => x.gcs.map((g) => g.kind)))].sort();
      for (const k of kinds) {
        const of = (x: Run) => x.gcs.filter((g) => g.kind === k);
        add(
          `GC ${k}: count`,
          rs.map((x) => of(x).length),
        );
        add(
          `GC ${k}: pause ms, summed`,
          rs.map((x) => of(x).reduce((s, g) => s + g.pauseMs, 0)),
          1,
        );
        add(
          `GC ${k}: heap MB freed, summed`,
          rs.map((x) => of(x).reduce((s, g) => s + g.beforeMB - g.afterMB, 0)),
          1,
        );
      }
      if (kinds.length === 0)
        add(
          'GC: none in the window',
          rs.map(() => 0),
        );
    }
  }
  process.stdout.write(`${table(['checkout', 'figure', 'median', 'each round'], rows)}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`idle-threads: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
