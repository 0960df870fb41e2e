/**
 * The figures the systemd unit's MemoryMax, TasksMax and LimitNOFILE are sized from (bench/README.md, "Unit limits"),
 * printed, never asserted:
 *
 *   node dist/bench/unit-limits.js [--modems 16] [--backlog 20000,50000]
 *
 * - fleet: the compiled daemon (the unit's node flags, bin/pulsa-bridge's UV_THREADPOOL_SIZE logic) with --modems
 *   virtual modems on socat ptys through a burst of 30 SMS on every modem at once; sampled every 20 ms from /proc/<pid>:
 *   peak threads (`Threads:`), peak open fds (/proc/<pid>/fd), and VmHWM at the end; the thread pool size it chose.
 * - backlog: a spool holding N pending records (a webhook down for days), the daemon started on it with its webhook on
 *   a refused port: VmRSS once it has started (the pending index is in memory) and VmHWM.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { silentLogger } from '../src/log.js';
import { Spool } from '../src/spool/store.js';
import { SPOOL_RECORD_VERSION, type SmsRecord } from '../src/spool/types.js';
import { startHarness } from './process/harness.js';
import { unitNodeFlags } from './process/unit-flags.js';
import { singleText, tagFor } from './peer/workload.js';
import { statusFieldKiB } from './peer/procstat.js';

const BIN = fileURLToPath(new URL('../../bin/pulsa-bridge', import.meta.url));
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function procStatus(pid: number): string {
  return readFileSync(`/proc/${pid}/status`, 'utf8');
}

function sampleProc(pid: number): { threads: number; fds: number } | undefined {
  try {
    const threads = Number(/^Threads:\s+(\d+)/m.exec(procStatus(pid))?.[1] ?? 0);
    return { threads, fds: readdirSync(`/proc/${pid}/fd`).length };
  } catch {
    return undefined; // the process is gone
  }
}

async function fleet(modems: number): Promise<void> {
  const nodeArgs = unitNodeFlags();
  const h = await startHarness({ modems, nodeArgs, log: (l) => process.stderr.write(l) });
  try {
    const peak = { threads: 0, fds: 0 };
    const ready = sampleProc(h.pid);
    const sampler = setInterval(() => {
      const s = sampleProc(h.pid);
      if (s) {
        peak.threads = Math.max(peak.threads, s.threads);
        peak.fds = Math.max(peak.fds, s.fds);
      }
    }, 20);
    const tags: string[] = [];
    let n = 0;
    h.modems.forEach((_, k) => {
      for (let i = 0; i < 30; i++) {
        const tag = tagFor('B', ++n);
        h.inject(k, singleText(tag, n));
        tags.push(tag);
      }
    });
    await Promise.all(tags.map((t) => h.arrival(t, 300_000)));
    await h.simsEmpty(60_000);
    await sleep(500);
    clearInterval(sampler);
    const hwm = await h.peakRssMiB();
    process.stdout.write(
      `unit-limits: fleet of ${modems} modems, ${tags.length} SMS at once (node ${process.version}, flags ${nodeArgs.join(' ')})\n` +
        `  libuv pool (bin/pulsa-bridge: modems + 4, set in process.env before node starts the pool): ${modems + 4}\n` +
        `  threads: ready ${ready?.threads ?? '?'}, peak ${peak.threads}\n` +
        `  open fds: ready ${ready?.fds ?? '?'}, peak ${peak.fds}\n` +
        `  VmHWM: ${hwm?.toFixed(1) ?? '?'} MiB\n`,
    );
  } finally {
    await h.stop();
  }
}

async function refusedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

async function backlog(records: number): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'pulsa-limits-'));
  try {
    const spoolDir = join(dir, 'spool');
    const spool = await Spool.open(spoolDir, { logger: silentLogger(), fsync: false });
    const base = Date.parse('2026-11-20T00:00:00Z');
    for (let i = 0; i < records; i += 200) {
      const batch: Promise<unknown>[] = [];
      for (let j = i; j < Math.min(records, i + 200); j++) {
        const rec: SmsRecord = {
          v: SPOOL_RECORD_VERSION,
          kind: 'sms',
          id: `backlog-${String(j).padStart(7, '0')}`,
          sim: { modem: `m${j % 16}`, imsi: '510100000000001' },
          sender: '858',
          text: `Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774 tgl 2018-01-08. Cek pulsa melalui *888#. Info CS: 188 #${j}`,
          scTimestamp: '2026-11-20T07:00:00+07:00',
          receivedAt: new Date(base + j * 1000).toISOString(),
          pdus: ['07912618485400F9040381580000108110015103820A'.repeat(3)],
          attempts: 0,
        };
        batch.push(spool.putPending(rec));
      }
      await Promise.all(batch);
    }
    await spool.close();
    const port = await refusedPort();
    const config = join(dir, 'config.json');
    await writeFile(
      config,
      JSON.stringify({
        webhook: { url: `http://127.0.0.1:${port}/api/v1/convert-pulsa/webhook/sms-gateway` },
        spool: { dir: spoolDir, fsync: false },
        modems: [{ name: 'm0', port: 'virtual:m0', senders: ['858'] }],
        log: { level: 'info', pretty: false },
      }),
    );
    const child = spawn(process.execPath, [...unitNodeFlags(), BIN, 'run', '--config', config], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    const t0 = performance.now();
    while (!out.includes(' started"') && child.exitCode === null && performance.now() - t0 < 300_000) await sleep(50);
    await sleep(2000);
    const st = procStatus(child.pid!);
    const rss = (statusFieldKiB(st, 'VmRSS') ?? 0) / 1024;
    const hwm = (statusFieldKiB(st, 'VmHWM') ?? 0) / 1024;
    child.kill('SIGTERM');
    await new Promise((r) => child.on('exit', r));
    process.stdout.write(
      `unit-limits: backlog of ${records} pending records: started in ${((performance.now() - t0) / 1000).toFixed(1)} s, VmRSS ${rss.toFixed(1)} MiB, VmHWM ${hwm.toFixed(1)} MiB\n`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const args = process.argv.slice(2);
const opt = (name: string, dflt: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? args[i + 1]! : dflt;
};
await fleet(Number(opt('--modems', '16')));
for (const n of opt('--backlog', '20000,50000').split(',').map(Number)) if (n > 0) await backlog(n);
