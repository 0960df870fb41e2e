/**
 * The daemon's speed and memory on the real process, printed, never asserted: `npm run bench` runs them after its own scenarios, or
 * alone:
 *
 *   node dist/bench/process/run.js [--json] [--only daemon,variants,fleet,commit,floor,alloc,budget] [--idle-sec 60] [--modems 16]
 *                               [--trickle 10] [--gap-ms 1000] [--no-trace] [--env K=V]... [--node-arg FLAG]...
 *                               [--fleet-runs single,multi,single-paced,multi-paced,multi-uv] [--no-unit-flags]
 *                               (--only takes daemon, variants, fleet, commit, floor, alloc, budget)
 *
 * Every daemon starts with the node flags of the systemd unit's ExecStart (unit-flags.ts; printed with the figures)
 * unless --no-unit-flags; `--node-arg` adds more after them. The variants set their own flags instead (plain node,
 * then each memory flag), to weigh each against the unit's choice.
 *
 * - daemon:   one modem, production defaults: 30-SMS burst (with the breakdown of where the time goes and, with
 *             strace, the fsync count), idle AT commands and CPU per minute, VmHWM through a 100-SMS burst.
 * - variants: the same without idle, from plain node (no flags) through the flags that cut memory, one by one and
 *             together, and with UV_THREADPOOL_SIZE=16, to weigh memory against speed.
 * - fleet:    `--modems` virtual modems in one daemon (a trickle on all at once, then 30 SMS on each at the same moment),
 *             against the same run with one modem; and with UV_THREADPOOL_SIZE=16.
 * - commit:   raw-file write patterns for designing group commit (commit-patterns.ts): one by one vs groups.
 * - floor:    the memory floor under the one-modem target (floor.ts): node alone, + the built-ins the daemon loads,
 *             + the serial addon, + the young generation in use, and the daemon at ready, each as RSS split into
 *             node's file pages / anon / other.
 * - alloc:    what the daemon allocates through a 100-SMS burst, garbage included, by frame (alloc.ts).
 * - budget:   the memory budget: VmHWM of node alone with the daemon's flags, of one modem through a 100-SMS burst and
 *             of `--modems` modems bursting 30 each at once, with the bridge's share above node alone (BUDGET_MIB).
 * `--env` / `--node-arg` apply to every daemon started (e.g. --node-arg --cpu-prof --node-arg --cpu-prof-dir=/tmp/p).
 */
import { cpus } from 'node:os';
import { ms, table } from '../stats.js';
import { commitPatterns, type CommitPatternRow } from './commit-patterns.js';
import { measureAlloc, type AllocResult } from './alloc.js';
import { measureFloor, type FloorResult } from './floor.js';
import { measureDaemon, measureFleet, type Breakdown, type DaemonResult, type FleetResult } from './scenarios.js';
import { unitNodeFlags } from './unit-flags.js';

export interface ProcessBenchArgs {
  json: boolean;
  only: string[];
  idleSec: number;
  modems: number;
  trickle: number;
  gapMs: number;
  trace: boolean;
  env: Record<string, string>;
  nodeArgs: string[];
  /** Which fleet runs: 'single' (one modem), 'multi' (--modems), 'single-paced' / 'multi-paced' (the same with every pty
   *  paced like a 115200-baud UART), 'multi-uv' (--modems with UV_THREADPOOL_SIZE=16). */
  fleetRuns: string[];
  /** Start the daemon with the systemd unit's node flags (before nodeArgs); off: plain node plus nodeArgs. */
  unitFlags: boolean;
}

export const PROCESS_PARTS = ['daemon', 'variants', 'fleet', 'commit', 'floor', 'alloc', 'budget'];
/** The memory budget (against regressions, not a target): one modem through a 100-SMS burst; 16 modems bursting at once. On Node 20. */
export const BUDGET_MIB = { oneModem: 72, sixteenModems: 112 };

export interface BudgetResult {
  node: string;
  flags: string[];
  /** VmHWM of `node <flags>` running nothing but a timer, 300 ms after it is up. */
  nodeAloneMiB: number;
  oneModemMiB: number | undefined;
  modems: number;
  manyModemsMiB: number | undefined;
  notes: string[];
}

/** VmHWM (MiB) of node with `flags` and nothing to run but a timer, 300 ms after it said it was up; median of 3. */
async function nodeAloneMiB(flags: string[]): Promise<number> {
  const { spawn } = await import('node:child_process');
  const { readFileSync } = await import('node:fs');
  const samples: number[] = [];
  for (let i = 0; i < 3; i++) {
    const child = spawn(process.execPath, [...flags, '-e', "setInterval(() => {}, 1000); console.log('up')"], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    await new Promise((r) => child.stdout!.once('data', r));
    await new Promise((r) => setTimeout(r, 300));
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
    child.kill('SIGKILL');
    samples.push(m ? Number(m[1]) / 1024 : NaN);
  }
  return samples.sort((x, y) => x - y)[1]!;
}
export const FLEET_RUNS = ['single', 'multi', 'single-paced', 'multi-paced', 'multi-uv'];
export const PROCESS_DEFAULTS: ProcessBenchArgs = {
  json: false,
  only: PROCESS_PARTS,
  idleSec: 60,
  modems: 16,
  trickle: 10,
  gapMs: 1000,
  trace: true,
  env: {},
  nodeArgs: [],
  fleetRuns: ['single', 'multi', 'single-paced', 'multi-paced'],
  unitFlags: true,
};

export interface ProcessResults {
  /** The node flags every daemon but the variants started with (the unit's, then --node-arg). */
  nodeFlags: string[];
  daemon: DaemonResult[];
  fleet: FleetResult[];
  commit: CommitPatternRow[];
  floor?: FloorResult;
  alloc?: AllocResult;
  budget?: BudgetResult;
}

export async function runProcessBench(a: ProcessBenchArgs, log: (l: string) => void): Promise<ProcessResults> {
  const unit = a.unitFlags ? unitNodeFlags() : [];
  const out: ProcessResults = { nodeFlags: [...unit, ...a.nodeArgs], daemon: [], fleet: [], commit: [] };
  log(
    `process: daemon node flags: ${out.nodeFlags.join(' ') || '(none)'}${a.unitFlags ? " (the unit's ExecStart" + (a.nodeArgs.length ? ', then --node-arg)' : ')') : ''}\n`,
  );
  const base = { env: a.env, nodeArgs: a.nodeArgs };
  const withFlags = (flags: string[], env: Record<string, string> = {}) => ({
    nodeArgs: [...unit, ...flags, ...base.nodeArgs],
    env: { ...base.env, ...env },
  });
  /** A variant: its own flags instead of the unit's. */
  const variantFlags = (flags: string[], env: Record<string, string>) => ({
    nodeArgs: [...flags, ...base.nodeArgs],
    env: { ...base.env, ...env },
  });
  if (a.only.includes('daemon'))
    out.daemon.push(
      await measureDaemon({
        variant: a.unitFlags ? 'unit flags' : 'defaults',
        ...withFlags([]),
        idleSec: a.idleSec,
        trace: a.trace,
        log,
      }),
    );
  if (a.only.includes('variants')) {
    const variants: Array<[string, string[], Record<string, string>]> = [
      ['plain node', [], {}],
      ['--max-semi-space-size=1', ['--max-semi-space-size=1'], {}],
      ['unit flags, UV_THREADPOOL_SIZE=16', unit, { UV_THREADPOOL_SIZE: '16' }],
    ];
    for (const [name, flags, env] of variants)
      out.daemon.push(
        await measureDaemon({ variant: name, ...variantFlags(flags, env), idleSec: 0, trace: false, log }),
      );
  }
  if (a.only.includes('fleet')) {
    const f = { trickle: a.trickle, gapMs: a.gapMs, seed: 1, log };
    if (a.fleetRuns.includes('single'))
      out.fleet.push(await measureFleet({ variant: 'defaults', modems: 1, ...f, ...withFlags([]) }));
    if (a.fleetRuns.includes('multi'))
      out.fleet.push(await measureFleet({ variant: 'defaults', modems: a.modems, ...f, ...withFlags([]) }));
    // Paced: every pty moves bytes like a 115200-baud UART, as a real modem's line does (the wire, not the bridge,
    // then bounds one modem; what the aggregate shows is whether the modems serialise each other in the daemon).
    const paced = { paceBaud: 115200 };
    if (a.fleetRuns.includes('single-paced'))
      out.fleet.push(await measureFleet({ variant: 'paced 115200', modems: 1, ...f, ...paced, ...withFlags([]) }));
    if (a.fleetRuns.includes('multi-paced'))
      out.fleet.push(
        await measureFleet({ variant: 'paced 115200', modems: a.modems, ...f, ...paced, ...withFlags([]) }),
      );
    if (a.fleetRuns.includes('multi-uv'))
      out.fleet.push(
        await measureFleet({
          variant: 'UV_THREADPOOL_SIZE=16',
          modems: a.modems,
          ...f,
          ...withFlags([], { UV_THREADPOOL_SIZE: '16' }),
        }),
      );
  }
  if (a.only.includes('budget')) {
    // The memory budget, each figure beside node alone with the same flags, in the same run.
    const flags = [...unit, ...a.nodeArgs];
    const nodeAlone = await nodeAloneMiB(flags);
    const one = await measureDaemon({ variant: 'budget', ...withFlags([]), idleSec: 0, trace: false, log });
    const many = await measureFleet({
      variant: 'budget',
      modems: a.modems,
      trickle: 0,
      gapMs: a.gapMs,
      seed: 1,
      log,
      ...withFlags([]),
    });
    out.budget = {
      node: process.version,
      flags,
      nodeAloneMiB: nodeAlone,
      oneModemMiB: one.burst100?.peakRssMiB,
      modems: a.modems,
      manyModemsMiB: many.peakRssMiB,
      notes: [...one.notes, ...many.notes],
    };
  }
  if (a.only.includes('floor')) out.floor = await measureFloor({ nodeArgs: [...unit, ...a.nodeArgs], log });
  if (a.only.includes('alloc')) out.alloc = await measureAlloc({ nodeArgs: [...unit, ...a.nodeArgs], log });
  if (a.only.includes('commit')) {
    log('process: spool write patterns (group commit)\n');
    for (let round = 0; round < 3; round++) out.commit.push(...(await commitPatterns(60, [4, 16])));
  }
  return out;
}

const mib = (v: number | undefined) => (v === undefined ? '-' : v.toFixed(1));

function breakdownRows(label: string, b: Breakdown, parts: number): string[][] {
  const rows = Object.entries(b.stepsMs)
    .sort((x, y) => y[1] - x[1])
    .map(([step, total]) => [label, step, String(b.stepsN[step]), total.toFixed(0), (total / parts).toFixed(1)]);
  rows.push([
    label,
    `(serial bytes ${b.serialBytes}: wire time at 115200 baud, not in the pty figures)`,
    '',
    b.wireMsAt115200.toFixed(0),
    (b.wireMsAt115200 / parts).toFixed(1),
  ]);
  return rows;
}

export function processReport(r: ProcessResults, a: ProcessBenchArgs): string {
  const out: string[] = [];
  if (r.daemon.length > 0) {
    out.push(
      `Daemon node flags: ${r.nodeFlags.join(' ') || '(none)'}${a.unitFlags ? " (the systemd unit's ExecStart" + (a.nodeArgs.length ? ', then --node-arg)' : ')') : ''}; variants set their own.`,
    );
    out.push(
      'Process targets, one modem (real daemon process over a pty; times from the first injection to the last POST):',
    );
    out.push(
      table(
        [
          'variant',
          'ready RSS',
          'burst 30 ms',
          'ms/part',
          'burst CPU s',
          'burst 100 ms',
          'VmHWM MiB',
          'RSS after',
          'idle AT/min',
          'idle CPU s/min',
        ],
        r.daemon.map((d) => [
          d.variant,
          mib(d.readyRssMiB),
          ms(d.burst30?.allDeliveredMs),
          d.burst30 ? d.burst30.msPerPart.toFixed(1) : '-',
          d.burst30?.cpuS !== undefined ? d.burst30.cpuS.toFixed(2) : '-',
          ms(d.burst100?.allDeliveredMs),
          mib(d.burst100?.peakRssMiB),
          mib(d.burst100?.rssAfterMiB),
          d.idle ? d.idle.atPerMinute.toFixed(1) : '-',
          d.idle?.cpuSPerMinute !== undefined ? d.idle.cpuSPerMinute.toFixed(3) : '-',
        ]),
      ),
    );
    const d0 = r.daemon[0];
    if (d0?.burst30) {
      out.push(
        '',
        `Where the burst of 30 (${d0.burst30.parts} parts, ${ms(d0.burst30.allDeliveredMs)} ms; SIM empty after ${ms(d0.burst30.simEmptyMs)} ms) goes, stamped at the modem side of the line:`,
      );
      out.push(
        table(
          ['run', 'step', 'n', 'total ms', 'ms/part'],
          breakdownRows(d0.variant, d0.burst30.breakdown, d0.burst30.parts),
        ),
      );
    }
    if (d0?.burst30Traced?.fsyncs) {
      const f = d0.burst30Traced.fsyncs;
      out.push(
        `fsync+fdatasync during a second burst of 30: ${f.calls} calls, ${f.totalMs.toFixed(0)} ms summed (${(f.calls / (d0.burst30?.parts ?? 39)).toFixed(1)} per part); ${f.note}; traced burst ${ms(d0.burst30Traced.allDeliveredMs)} ms`,
      );
    }
    if (d0?.idle) out.push(`Idle command mix per minute: ${d0.idle.commands.map(([c, n]) => `${c} ${n}`).join(', ')}`);
  }
  if (r.fleet.length > 0) {
    out.push(
      '',
      `Modems in one daemon (trickle: ${a.trickle} SMS per modem, pauses U(0, ${2 * a.gapMs} ms), all modems at once; burst: 30 per modem at the same moment):`,
    );
    out.push(
      table(
        [
          'variant',
          'modems',
          'trickle p50',
          'trickle p95',
          'burst SMS',
          'parts',
          'all spooled ms',
          'all POSTed ms',
          'SMS/s',
          'burst CPU s',
          'VmHWM MiB',
        ],
        r.fleet.map((f) => [
          f.variant,
          String(f.modems),
          ms(f.trickle?.latency.median),
          ms(f.trickle?.latency.p95),
          String(f.burst?.messages ?? '-'),
          String(f.burst?.parts ?? '-'),
          ms(f.burst?.allSpooledMs),
          ms(f.burst?.allDeliveredMs),
          f.burst ? f.burst.smsPerSecond.toFixed(1) : '-',
          f.burst?.cpuS !== undefined ? f.burst.cpuS.toFixed(2) : '-',
          mib(f.peakRssMiB),
        ]),
      ),
    );
    for (const v of new Set(r.fleet.map((f) => f.variant))) {
      const one = r.fleet.find((f) => f.variant === v && f.modems === 1);
      const many = r.fleet.find((f) => f.variant === v && f.modems > 1);
      if (one?.burst && many?.burst) {
        const p95 =
          one.trickle && many.trickle
            ? `, trickle p95 ${(many.trickle.latency.p95 / one.trickle.latency.p95).toFixed(2)}x one modem's (target <= 1.5x)`
            : '';
        out.push(
          `${v}: ${many.modems} modems' aggregate ${(many.burst.smsPerSecond / one.burst.smsPerSecond).toFixed(2)}x one modem's SMS/s (target >= 3x)${p95}`,
        );
      }
    }
    const big = r.fleet.find((f) => f.modems > 1 && f.variant === 'defaults');
    if (big?.burst)
      out.push(
        '',
        `Where the ${big.modems}-modem burst goes (summed over all modems):`,
        table(
          ['run', 'step', 'n', 'total ms', 'ms/part'],
          breakdownRows(`${big.modems} modems`, big.burst.breakdown, big.burst.parts),
        ),
      );
  }
  if (r.commit.length > 0) {
    const by = new Map<string, CommitPatternRow[]>();
    for (const row of r.commit) by.set(row.pattern, [...(by.get(row.pattern) ?? []), row]);
    out.push(
      '',
      'Writing 60 small records durably (raw files, as the spool writes a record), three rounds each, ms per record:',
    );
    out.push(
      table(
        ['pattern', 'fsyncs', 'ms/record, each round'],
        [...by].map(([p, rows]) => [p, String(rows[0]!.fsyncs), rows.map((x) => x.msPerRecord.toFixed(2)).join(' / ')]),
      ),
    );
  }
  if (r.floor) {
    const f = r.floor;
    out.push(
      '',
      `The memory floor (steps 1-4 each a fresh node with the daemon's flags, RSS after a full GC; the daemon 0.5 s after ready; median of 3; MiB):`,
    );
    out.push(
      table(
        ['step', 'RSS', 'node binary pages', 'anon', 'other files'],
        f.rows.map((x) => [
          x.step,
          x.rssMiB.toFixed(1),
          x.nodeFileMiB.toFixed(1),
          x.anonMiB.toFixed(1),
          x.otherMiB.toFixed(1),
        ]),
      ),
    );
    out.push(`Built-ins the running daemon loaded: ${f.builtins.join(' ')}`);
  }
  if (r.alloc) {
    const x = r.alloc;
    out.push(
      '',
      `Allocated through a 100-SMS burst (${x.parts} parts), garbage included: ${x.totalMiB.toFixed(1)} MiB (${((x.totalMiB * 1024) / x.parts).toFixed(0)} KiB per part); by the nearest frame of our code:`,
    );
    out.push(
      table(
        ['frame', 'MiB'],
        x.byOwnFrame.map(([f, m]) => [f, m.toFixed(2)]),
      ),
    );
  }
  if (r.budget) {
    const b = r.budget;
    const share = (v: number | undefined) => (v === undefined ? '-' : (v - b.nodeAloneMiB).toFixed(1));
    const major = Number(b.node.slice(1).split('.')[0]);
    const verdict = (v: number | undefined, budget: number) =>
      v === undefined
        ? '-'
        : major !== 20
          ? `(budget on Node 20: ${budget})`
          : v <= budget
            ? `<= ${budget}: within`
            : `> ${budget}: OVER`;
    out.push(
      '',
      `Memory budget, node ${b.node}, flags ${b.flags.join(' ') || '(none)'}; peak RSS (VmHWM) MiB, node alone in the same run:`,
    );
    out.push(
      table(
        ['what', 'VmHWM MiB', 'bridge share above node alone', 'budget'],
        [
          ['node alone (same flags)', b.nodeAloneMiB.toFixed(1), '-', '-'],
          [
            'one modem, 100-SMS burst',
            mib(b.oneModemMiB),
            share(b.oneModemMiB),
            verdict(b.oneModemMiB, BUDGET_MIB.oneModem),
          ],
          [
            `${b.modems} modems, 30 SMS each at once`,
            mib(b.manyModemsMiB),
            share(b.manyModemsMiB),
            verdict(b.manyModemsMiB, BUDGET_MIB.sixteenModems),
          ],
        ],
      ),
    );
    for (const n of b.notes) out.push(`- ${n}`);
  }
  const notes = [
    ...r.daemon.flatMap((d) => d.notes.map((n) => `${d.variant}: ${n}`)),
    ...r.fleet.flatMap((f) => f.notes.map((n) => `${f.modems} modem(s) ${f.variant}: ${n}`)),
  ];
  if (notes.length > 0) out.push('', 'Notes:', ...notes.map((n) => `- ${n}`));
  return out.join('\n');
}

export function machine(): string {
  return `${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown CPU'}), Node ${process.version}, ${new Date().toISOString()}`;
}

class UsageError extends Error {}

export function parseLeanArgs(argv: string[]): ProcessBenchArgs {
  const a: ProcessBenchArgs = { ...PROCESS_DEFAULTS, env: {}, nodeArgs: [] };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new UsageError(`${k} needs a value`);
      return v;
    };
    const int = (min: number, max: number) => {
      const n = Number(value());
      if (!Number.isInteger(n) || n < min || n > max)
        throw new UsageError(`${k} expects an integer from ${min} to ${max}`);
      return n;
    };
    if (k === '--json') a.json = true;
    else if (k === '--only') {
      a.only = value()
        .split(',')
        .map((s) => s.trim());
      for (const p of a.only)
        if (!PROCESS_PARTS.includes(p)) throw new UsageError(`unknown part ${p} (${PROCESS_PARTS.join(', ')})`);
    } else if (k === '--idle-sec') a.idleSec = int(0, 3600);
    else if (k === '--modems') a.modems = int(2, 64);
    else if (k === '--trickle') a.trickle = int(0, 100);
    else if (k === '--gap-ms') a.gapMs = int(10, 60_000);
    else if (k === '--no-trace') a.trace = false;
    else if (k === '--env') {
      const [name, ...rest] = value().split('=');
      if (!name || rest.length === 0) throw new UsageError('--env expects NAME=VALUE');
      a.env[name] = rest.join('=');
    } else if (k === '--node-arg') a.nodeArgs.push(value());
    else if (k === '--fleet-runs') {
      a.fleetRuns = value()
        .split(',')
        .map((x) => x.trim());
      for (const r of a.fleetRuns)
        if (!FLEET_RUNS.includes(r)) throw new UsageError(`unknown fleet run ${r} (${FLEET_RUNS.join(', ')})`);
    } else if (k === '--no-unit-flags') a.unitFlags = false;
    else if (k === '--help' || k === '-h') {
      process.stdout.write(
        'usage: node dist/bench/process/run.js [--json] [--only daemon,variants,fleet,commit,floor,alloc,budget] [--idle-sec 60] [--modems 16] [--trickle 10] [--gap-ms 1000] [--no-trace] [--env K=V]... [--node-arg FLAG]... [--fleet-runs single,multi,single-paced,multi-paced,multi-uv] [--no-unit-flags]\n',
      );
      process.exit(0);
    } else throw new UsageError(`unknown argument ${k} (try --help)`);
  }
  return a;
}

async function main(): Promise<void> {
  const a = parseLeanArgs(process.argv.slice(2));
  const r = await runProcessBench(a, (l) => process.stderr.write(l));
  if (a.json) process.stdout.write(JSON.stringify({ machine: machine(), args: a, ...r }, null, 2) + '\n');
  else process.stdout.write(`${machine()}\n\n${processReport(r, a)}\n`);
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`bench process: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(err instanceof UsageError ? 2 : 1);
    },
  );
}
