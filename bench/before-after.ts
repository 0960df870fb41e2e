/**
 * This checkout against another build of the bridge (an older commit built in a scratch checkout), interleaved in one
 * run: each round runs the process bench of both (`dist/bench/process/run.js --only daemon,fleet --fleet-runs single --json`,
 * each checkout its own bench, daemon and unit flags), the order alternating from round to round, so the machine's
 * load falls on both alike. Prints burst times, CPU, latency, idle CPU and peak RSS per round and their medians, then
 * every single-SMS latency of every run in the order injected (when that checkout's bench reports them). Figures only.
 *
 *   node dist/bench/before-after.js --old /tmp/old-checkout [--rounds 3] [--idle-sec 30] [--trickle 10]
 *                                   [--node-arg FLAG]... [--after-node-arg FLAG]...
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { summarize, table } from './stats.js';

const HERE = fileURLToPath(new URL('../..', import.meta.url));

interface Figures {
  burst30Ms?: number;
  burst30CpuS?: number;
  burst100Ms?: number;
  vmHwmMiB?: number;
  idleCpuSPerMin?: number;
  idleAtPerMin?: number;
  trickleP50Ms?: number;
  trickleP95Ms?: number;
  /** The first single SMS after the daemon's start (after its warm-up SMS), and the p95 of the others. */
  trickleFirstMs?: number;
  trickleP95RestMs?: number;
  trickleSamples?: number[];
  /** /proc/loadavg's 1-minute figure when the run started and when it ended (the machine is shared). */
  load?: string;
}

const fields = (trickle: number): Array<[Exclude<keyof Figures, 'trickleSamples'>, string, number]> => [
  ['burst30Ms', 'burst of 30, first injection -> last POST, ms', 0],
  ['burst30CpuS', 'burst of 30, daemon CPU s', 2],
  ['burst100Ms', 'burst of 100, ms', 0],
  ['vmHwmMiB', 'peak RSS through the 100-SMS burst, MiB', 1],
  ['trickleP50Ms', `latency, single SMS (trickle of ${trickle}), p50 ms`, 1],
  ['trickleP95Ms', `latency, single SMS (trickle of ${trickle}), p95 ms`, 1],
  ['trickleFirstMs', 'latency, the first of the trickle, ms', 1],
  ['trickleP95RestMs', 'latency, p95 of the trickle without its first, ms', 1],
  ['idleCpuSPerMin', 'idle CPU s per minute', 3],
  ['idleAtPerMin', 'idle AT commands per minute', 1],
];

function runProcessBench(root: string, idleSec: number, trickle: number, nodeArgs: string[] = []): Figures {
  const r = spawnSync(
    process.execPath,
    [
      join(root, 'dist/bench/process/run.js'),
      '--only',
      'daemon,fleet',
      '--fleet-runs',
      'single',
      '--trickle',
      String(trickle),
      '--idle-sec',
      String(idleSec),
      '--no-trace',
      '--json',
      ...nodeArgs.flatMap((a) => ['--node-arg', a]),
    ],
    {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  if (r.status !== 0) throw new Error(`process bench in ${root} exited ${r.status}: ${r.stderr.slice(-2000)}`);
  const j = JSON.parse(r.stdout) as {
    daemon: Array<{
      burst30?: { allDeliveredMs: number; cpuS?: number };
      burst100?: { allDeliveredMs: number; peakRssMiB?: number };
      idle?: { cpuSPerMinute?: number; atPerMinute: number };
    }>;
    fleet: Array<{ trickle?: { latency: { median: number; p95: number }; samples?: number[] } }>;
  };
  const d = j.daemon[0];
  const f = j.fleet[0];
  const samples = f?.trickle?.samples;
  return {
    burst30Ms: d?.burst30?.allDeliveredMs,
    burst30CpuS: d?.burst30?.cpuS,
    burst100Ms: d?.burst100?.allDeliveredMs,
    vmHwmMiB: d?.burst100?.peakRssMiB,
    idleCpuSPerMin: d?.idle?.cpuSPerMinute,
    idleAtPerMin: d?.idle?.atPerMinute,
    trickleP50Ms: f?.trickle?.latency.median,
    trickleP95Ms: f?.trickle?.latency.p95,
    ...(samples && samples.length > 1
      ? { trickleFirstMs: samples[0], trickleP95RestMs: summarize(samples.slice(1)).p95, trickleSamples: samples }
      : {}),
  };
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const opt = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const old = opt('--old');
  if (!old || !existsSync(join(old, 'dist/bench/process/run.js')))
    throw new Error('--old <dir>: a built checkout (npm run build there first)');
  const rounds = Number(opt('--rounds') ?? 3);
  const idleSec = Number(opt('--idle-sec') ?? 30);
  const trickle = Number(opt('--trickle') ?? 10);
  // --after-node-arg FLAG (repeatable): the after daemon also gets FLAG, e.g. the old runtime's flags, to tell what the
  // runtime changed from what the code changed.
  const flags = (name: string) =>
    argv.flatMap((a, i) => (a === name && argv[i + 1] !== undefined ? [argv[i + 1]!] : []));
  // --node-arg FLAG (repeatable): both daemons get FLAG (e.g. --trace-gc); --after-node-arg: the after daemon only.
  const bothArgs = flags('--node-arg');
  const afterArgs = flags('--after-node-arg');
  const runs: Record<'before' | 'after', Figures[]> = { before: [], after: [] };
  for (let i = 0; i < rounds; i++) {
    const order: Array<['before' | 'after', string]> =
      i % 2 === 0
        ? [
            ['before', old],
            ['after', HERE],
          ]
        : [
            ['after', HERE],
            ['before', old],
          ];
    for (const [label, root] of order) {
      process.stderr.write(`before-after: round ${i + 1}/${rounds}, ${label}\n`);
      const load0 = loadavg()[0]!.toFixed(2);
      const figures = runProcessBench(
        root,
        idleSec,
        trickle,
        label === 'after' ? [...bothArgs, ...afterArgs] : bothArgs,
      );
      runs[label].push({ ...figures, load: `${load0}-${loadavg()[0]!.toFixed(2)}` });
    }
  }
  const fmt = (v: number | undefined, digits: number) => (v === undefined || Number.isNaN(v) ? '-' : v.toFixed(digits));
  const rows = fields(trickle).map(([key, label, digits]) => {
    const b = runs.before.map((x) => x[key]).filter((v): v is number => v !== undefined);
    const a = runs.after.map((x) => x[key]).filter((v): v is number => v !== undefined);
    return [
      label,
      fmt(summarize(b).median, digits),
      fmt(summarize(a).median, digits),
      b.map((v) => v.toFixed(digits)).join(' / '),
      a.map((v) => v.toFixed(digits)).join(' / '),
    ];
  });
  process.stdout.write(
    `node ${process.version}; before = ${old}, after = ${HERE}${afterArgs.length ? ` with ${afterArgs.join(' ')}` : ''}${bothArgs.length ? `; both with ${bothArgs.join(' ')}` : ''}; ${rounds} rounds interleaved, idle ${idleSec} s per run\n`,
  );
  process.stdout.write(
    `${table(['figure', 'before (median)', 'after (median)', 'before, each round', 'after, each round'], rows)}\n`,
  );
  process.stdout.write(
    "single-SMS latencies in the order injected, ms (the first is the first SMS after the warm-up), with the load average at the run's start and end:\n",
  );
  for (const label of ['before', 'after'] as const) {
    runs[label].forEach((f, i) =>
      process.stdout.write(
        `${label} ${i + 1} (load ${f.load}): ${f.trickleSamples ? f.trickleSamples.map((v) => v.toFixed(0)).join(' ') : "(not reported by that checkout's bench)"}\n`,
      ),
    );
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`before-after: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
