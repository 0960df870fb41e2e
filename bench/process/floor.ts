/**
 * The memory floor under the one-modem target (peak RSS <= 50 MB): how much of the daemon's RSS is node and
 * what any daemon of this design must load, before one line of the bridge's own code. Figures only.
 *
 * Steps, each a fresh `node <the unit's flags>` process, RSS (VmRSS) after a full collection, per mapping group
 * (/proc/<pid>/smaps: the node binary's pages, anonymous memory, other files), median of `rounds`:
 *   1. node alone (a timer keeps it up);
 *   2. + every built-in module the running daemon has loaded (its process.moduleLoadList, read from a real daemon
 *      started by the harness; the list is printed), with one sha256 (the spool's checksums need OpenSSL's hash);
 *   3. + @serialport/bindings-cpp loaded (the serial port's native addon: dlopen resolves its symbols in node's 7 MB
 *      dynamic symbol table);
 *   4. + short-lived allocations that touch both of V8's semi-spaces (the young generation any running program uses);
 *   5. the daemon itself, one modem, ready (the harness), sampled 0.5 s after ready (no forced GC), for comparison.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { statusFieldKiB } from '../peer/procstat.js';
import { startHarness } from './harness.js';

export interface FloorRow {
  step: string;
  rssMiB: number;
  nodeFileMiB: number;
  anonMiB: number;
  otherMiB: number;
}

export interface FloorResult {
  builtins: string[];
  rows: FloorRow[];
}

interface Sample {
  rss: number;
  nodeFile: number;
  anon: number;
  other: number;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** VmRSS and the smaps groups of a process, in MiB. */
function sample(pid: number): Sample {
  const smaps = readFileSync(`/proc/${pid}/smaps`, 'utf8');
  const out: Sample = { rss: 0, nodeFile: 0, anon: 0, other: 0 };
  let name = '';
  for (const line of smaps.split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      name = head[1] ?? '';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (!rss) continue;
    const mib = Number(rss[1]) / 1024;
    if (name === process.execPath || name.endsWith('/bin/node')) out.nodeFile += mib;
    else if (name === '' || name.startsWith('[')) out.anon += mib;
    else out.other += mib;
  }
  out.rss = (statusFieldKiB(readFileSync(`/proc/${pid}/status`, 'utf8'), 'VmRSS') ?? 0) / 1024;
  return out;
}

/** Runs `script` (ES module text) in node with `flags` + --expose-gc; samples it once it printed 'ready'. */
async function measureScript(flags: string[], script: string): Promise<Sample> {
  const child = spawn(process.execPath, [...flags, '--expose-gc', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    await new Promise<void>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('ready')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`floor step exited (${code}) before it was ready`)));
    });
    await sleep(200);
    return sample(child.pid!);
  } finally {
    child.kill('SIGKILL');
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

function row(step: string, samples: Sample[]): FloorRow {
  return {
    step,
    rssMiB: median(samples.map((s) => s.rss)),
    nodeFileMiB: median(samples.map((s) => s.nodeFile)),
    anonMiB: median(samples.map((s) => s.anon)),
    otherMiB: median(samples.map((s) => s.other)),
  };
}

/** The built-in modules a running daemon (one modem, ready) has loaded, and its own smaps sample. */
async function daemonBuiltins(nodeArgs: string[]): Promise<{ builtins: string[]; sample: Sample }> {
  const dir = await mkdtemp(join(tmpdir(), 'pulsa-floor-'));
  try {
    const dump = join(dir, 'builtins.txt');
    const preload = join(dir, 'dump.cjs');
    writeFileSync(
      preload,
      `process.on('SIGUSR2', () => require('fs').writeFileSync(${JSON.stringify(dump)}, process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice(13)).join('\\n')));\n`,
    );
    const h = await startHarness({ modems: 1, nodeArgs: [...nodeArgs, '--require', preload] });
    try {
      await sleep(500);
      const s = sample(h.pid);
      process.kill(h.pid, 'SIGUSR2');
      await sleep(300);
      const all = readFileSync(dump, 'utf8').split('\n').filter(Boolean);
      return { builtins: all.filter((m) => !m.startsWith('internal/')), sample: s };
    } finally {
      await h.stop();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function measureFloor(o: {
  nodeArgs: string[];
  rounds?: number;
  log: (l: string) => void;
}): Promise<FloorResult> {
  const rounds = o.rounds ?? 3;
  o.log('process: memory floor (node, built-ins, native addon, daemon)\n');
  const daemonSamples: Sample[] = [];
  let builtins: string[] = [];
  for (let i = 0; i < rounds; i++) {
    const d = await daemonBuiltins(o.nodeArgs);
    builtins = d.builtins;
    daemonSamples.push(d.sample);
  }
  const addon = createRequire(import.meta.url).resolve('@serialport/bindings-cpp');
  const settle = `globalThis.gc(); await new Promise((r) => setTimeout(r, 100)); globalThis.gc(); console.log('ready'); setInterval(() => {}, 1000);`;
  const churn = `let keep; for (let i = 0; i < 300000; i++) keep = { i, text: 'x' + i };`;
  const loadBuiltins = `import { createRequire } from 'node:module'; const require = createRequire(import.meta.url); for (const m of ${JSON.stringify(builtins)}) require('node:' + m); require('node:crypto').createHash('sha256').update('x').digest('hex');`;
  const steps: Array<[string, string]> = [
    ['node alone', settle],
    ['+ the built-ins the daemon loads', `${loadBuiltins} ${settle}`],
    [
      '+ the serial addon (@serialport/bindings-cpp)',
      `${loadBuiltins} require(${JSON.stringify(addon)}).autoDetect(); ${settle}`,
    ],
    // Short-lived objects as a burst makes them: both semi-spaces are touched (the floor of any running JS program).
    [
      "+ V8's young generation in use",
      `${loadBuiltins} require(${JSON.stringify(addon)}).autoDetect(); ${churn} ${settle}`,
    ],
  ];
  const rows: FloorRow[] = [];
  for (const [name, script] of steps) {
    const samples: Sample[] = [];
    for (let i = 0; i < rounds; i++) samples.push(await measureScript(o.nodeArgs, script));
    rows.push(row(name, samples));
  }
  rows.push(row('the daemon, one modem, ready', daemonSamples));
  return { builtins, rows };
}
