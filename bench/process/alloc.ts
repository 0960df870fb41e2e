/**
 * What the daemon allocates through a 100-SMS burst on one modem, and where: V8's sampling heap profiler over the
 * inspector, with objects already collected by young and full GCs included (so garbage counts, which is what drives
 * promotion and the old generation's growth). Figures only.
 *
 *   node dist/bench/process/run.js --only alloc
 *
 * The daemon starts with the unit's flags plus a preload (`--require`) that starts sampling on the first SIGUSR2 and
 * writes the profile on the second. Between them: 100 SMS (a third of them two-part) injected at once, until the SIM
 * is empty and a second more. Printed: MB allocated in all, per part, and the top frames by bytes (self), with the
 * nearest frame of our own code for frames inside node or a package.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHarness } from './harness.js';

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

export interface AllocResult {
  totalMiB: number;
  parts: number;
  /** [frame, MiB] by own frame (the nearest frame in dist/src), largest first. */
  byOwnFrame: Array<[string, number]>;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const PRELOAD = `
const { Session } = require('node:inspector');
const { writeFileSync } = require('node:fs');
const s = new Session();
s.connect();
const post = (m, p) => new Promise((res, rej) => s.post(m, p, (e, r) => (e ? rej(e) : res(r))));
let n = 0;
process.on('SIGUSR2', async () => {
  if (n++ === 0) return void (await post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMinorGC: true, includeObjectsCollectedByMajorGC: true }));
  const { profile } = await post('HeapProfiler.stopSampling');
  writeFileSync(process.env.PULSA_ALLOC_OUT, JSON.stringify(profile));
});
`;

function frameName(n: ProfileNode): string {
  const url = n.callFrame.url.replace(/^.*\/dist\/src\//, 'src/').replace(/^.*node_modules\//, '');
  return `${n.callFrame.functionName || '(anonymous)'} ${url}:${n.callFrame.lineNumber + 1}`;
}

export async function measureAlloc(o: { nodeArgs: string[]; log: (l: string) => void }): Promise<AllocResult> {
  o.log('process: allocations through a 100-SMS burst (sampling heap profiler)\n');
  const dir = await mkdtemp(join(tmpdir(), 'pulsa-alloc-'));
  try {
    const preload = join(dir, 'sample.cjs');
    const out = join(dir, 'profile.json');
    writeFileSync(preload, PRELOAD);
    const h = await startHarness({
      modems: 1,
      nodeArgs: [...o.nodeArgs, '--require', preload],
      env: { PULSA_ALLOC_OUT: out },
    });
    let parts = 0;
    try {
      process.kill(h.pid, 'SIGUSR2');
      await sleep(300);
      for (let i = 0; i < 100; i++)
        parts += h.inject(
          0,
          `A${i} Anda mendapatkan penambahan pulsa Rp ${i}000.`.padEnd(i % 3 === 0 ? 200 : 120, '.'),
        );
      await h.simsEmpty(60_000);
      await sleep(1000);
      process.kill(h.pid, 'SIGUSR2');
      await sleep(1500);
    } finally {
      await h.stop();
    }
    const head = (JSON.parse(readFileSync(out, 'utf8')) as { head: ProfileNode }).head;
    const own = new Map<string, number>();
    let total = 0;
    const walk = (n: ProfileNode, nearestOwn: string | undefined) => {
      const here = n.callFrame.url.includes('/dist/src/') ? frameName(n) : nearestOwn;
      total += n.selfSize;
      const key = here ?? frameName(n);
      own.set(key, (own.get(key) ?? 0) + n.selfSize);
      for (const c of n.children) walk(c, here);
    };
    walk(head, undefined);
    const MiB = 1024 * 1024;
    return {
      totalMiB: total / MiB,
      parts,
      byOwnFrame: [...own]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 15)
        .map(([k, v]) => [k, v / MiB]),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
