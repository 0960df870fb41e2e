/**
 * `npm run fuzz`: the long fuzz run. Runs every target of test/fuzz/targets.ts (the same list `npm test` runs briefly)
 * for N seconds or M inputs each, whichever comes first, and prints inputs per second per target as a table.
 * Each target runs in a worker thread watched from here, so an input that hangs a parser is reported (with the
 * seed that reproduces it) instead of stalling the run. Exit code 1 when any target failed or hung.
 *
 *   node dist/bench/fuzz.js [--seconds 10] [--runs 1000000000] [--targets framer/,pdu/mutated] [--seed 42] [--json]
 *
 * The same settings from the environment: FUZZ_SECONDS, FUZZ_RUNS, FUZZ_TARGETS (comma-separated name prefixes),
 * FUZZ_SEED. Flags win over the environment. A failure prints fast-check's report: the seed, the path and the shrunk
 * counterexample; `FUZZ_SEED=<seed> npx vitest run test/fuzz` replays the quick run with that seed.
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import fc from 'fast-check';
import { FUZZ_TARGETS, type FuzzTarget } from '../test/fuzz/targets.js';
import { table } from './stats.js';

interface Settings {
  seconds: number;
  runs: number;
  prefixes: string[];
  seed: number | undefined;
  json: boolean;
}

interface WorkerJob {
  name: string;
  seconds: number;
  runs: number;
  seed: number;
}

interface TargetResult {
  name: string;
  outcome: 'ok' | 'failed' | 'hung' | 'crashed';
  inputs: number;
  seconds: number;
  perSecond: number;
  seed: number;
  report?: string;
}

class UsageError extends Error {}

function positive(name: string, value: string, integer: boolean): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n)))
    throw new UsageError(`${name} expects a positive ${integer ? 'integer' : 'number'}, got ${JSON.stringify(value)}`);
  return n;
}

function parseSettings(argv: readonly string[], env: NodeJS.ProcessEnv): Settings {
  const s: Settings = {
    seconds: env.FUZZ_SECONDS ? positive('FUZZ_SECONDS', env.FUZZ_SECONDS, false) : 10,
    runs: env.FUZZ_RUNS ? positive('FUZZ_RUNS', env.FUZZ_RUNS, true) : 1_000_000_000,
    prefixes: env.FUZZ_TARGETS
      ? env.FUZZ_TARGETS.split(',')
          .map((p) => p.trim())
          .filter((p) => p !== '')
      : [],
    seed: env.FUZZ_SEED ? Math.trunc(Number(env.FUZZ_SEED)) : undefined,
    json: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new UsageError(`${a} needs a value`);
      return v;
    };
    if (a === '--seconds') s.seconds = positive(a, value(), false);
    else if (a === '--runs') s.runs = positive(a, value(), true);
    else if (a === '--targets')
      s.prefixes = value()
        .split(',')
        .map((p) => p.trim())
        .filter((p) => p !== '');
    else if (a === '--seed') s.seed = Math.trunc(Number(value()));
    else if (a === '--json') s.json = true;
    else throw new UsageError(`unknown option ${a}`);
  }
  if (s.seed !== undefined && !Number.isFinite(s.seed)) throw new UsageError('the seed must be an integer');
  return s;
}

/** Worker side: runs one target and posts its result. */
function runInWorker(job: WorkerJob): void {
  const t = FUZZ_TARGETS.find((x) => x.name === job.name) as FuzzTarget;
  const start = performance.now();
  const details = fc.check(t.property(), {
    numRuns: job.runs,
    seed: job.seed,
    plugins: [fc.interruptAfterTimeLimit(job.seconds * 1000)],
  });
  const seconds = (performance.now() - start) / 1000;
  const result: TargetResult = {
    name: t.name,
    outcome: details.failed ? 'failed' : 'ok',
    inputs: details.numRuns,
    seconds,
    perSecond: details.numRuns / seconds,
    seed: job.seed,
  };
  if (details.failed) result.report = fc.defaultReportMessage(details) ?? 'failed (no report)';
  parentPort?.postMessage(result);
}

/** Main side: one worker per target, in turn (the machine is shared); a worker silent for too long has hung. */
function runTarget(t: FuzzTarget, settings: Settings): Promise<TargetResult> {
  const seed = settings.seed ?? (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;
  const job: WorkerJob = { name: t.name, seconds: settings.seconds, runs: settings.runs, seed };
  // Time limit is checked between inputs; shrinking a failure also takes time. Past this, an input is stuck.
  const graceMs = settings.seconds * 3000 + 60_000;
  return new Promise((resolve) => {
    const started = performance.now();
    const worker = new Worker(new URL(import.meta.url), { workerData: job });
    let settled = false;
    const finish = (r: TargetResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(watchdog);
      resolve(r);
    };
    const elapsed = () => (performance.now() - started) / 1000;
    const watchdog = setTimeout(() => {
      void worker.terminate();
      finish({
        name: t.name,
        outcome: 'hung',
        inputs: 0,
        seconds: elapsed(),
        perSecond: 0,
        seed,
        report: `no result after ${Math.round(elapsed())} s: an input hangs (replay with --seed ${seed})`,
      });
    }, graceMs);
    worker.once('message', (r: TargetResult) => {
      finish(r);
      void worker.terminate();
    });
    worker.once('error', (err) =>
      finish({
        name: t.name,
        outcome: 'crashed',
        inputs: 0,
        seconds: elapsed(),
        perSecond: 0,
        seed,
        report: String(err),
      }),
    );
    worker.once('exit', (code) =>
      finish({
        name: t.name,
        outcome: 'crashed',
        inputs: 0,
        seconds: elapsed(),
        perSecond: 0,
        seed,
        report: `worker exited with code ${code} before reporting`,
      }),
    );
  });
}

async function main(): Promise<number> {
  let settings: Settings;
  try {
    settings = parseSettings(process.argv.slice(2), process.env);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`fuzz: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const chosen = FUZZ_TARGETS.filter(
    (t) => settings.prefixes.length === 0 || settings.prefixes.some((p) => t.name.startsWith(p)),
  );
  if (chosen.length === 0) {
    process.stderr.write(
      `fuzz: no target matches ${settings.prefixes.join(',')} (targets: ${FUZZ_TARGETS.map((t) => t.name).join(', ')})\n`,
    );
    return 2;
  }
  if (!settings.json) {
    process.stdout.write(
      `fuzzing ${chosen.length} targets, up to ${settings.seconds} s or ${settings.runs} inputs each\n`,
    );
  }
  const results: TargetResult[] = [];
  for (const t of chosen) {
    const r = await runTarget(t, settings);
    results.push(r);
    if (!settings.json)
      process.stdout.write(
        `  ${r.outcome === 'ok' ? 'ok    ' : r.outcome.toUpperCase().padEnd(6)} ${t.name} (${r.inputs} inputs)\n`,
      );
  }
  if (settings.json) {
    process.stdout.write(`${JSON.stringify({ settings, results }, null, 2)}\n`);
  } else {
    process.stdout.write('\n');
    process.stdout.write(
      table(
        ['target', 'result', 'inputs', 'seconds', 'inputs/s', 'seed'],
        results.map((r) => [
          r.name,
          r.outcome,
          String(r.inputs),
          r.seconds.toFixed(1),
          r.perSecond.toFixed(0),
          String(r.seed),
        ]),
      ) + '\n',
    );
    for (const r of results.filter((x) => x.report !== undefined))
      process.stdout.write(`\n${r.name}: ${r.outcome}\n${r.report}\n`);
  }
  return results.every((r) => r.outcome === 'ok') ? 0 : 1;
}

if (isMainThread) {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`fuzz: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 1;
    },
  );
} else {
  runInWorker(workerData as WorkerJob);
}
