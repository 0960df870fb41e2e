/**
 * Log flood: the compiled daemon (`bin/pulsa-bridge run`, one virtual modem) while local clients hammer its control
 * socket; prints log lines a second, log bytes, the daemon's CPU share and RSS before and at the end of each loop.
 *   refused   `nobody` (the socket's group only: the reading level) opens 40 connections and keeps them (enough to
 *             fill the socket whatever the limits), then opens new ones as fast as it can, each refused (16 at once);
 *   busy      root opens connections that each write 200 `at` requests in one go (past `busy`), 4 at once.
 * Usage: node dist/bench/log-flood.js [--bin PATH/bin/pulsa-bridge] [--seconds 15]. Needs root (runuser) for `refused`.
 * Only prints figures: nothing here asserts them.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const args = process.argv.slice(2);
const opt = (name: string, dflt: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : dflt;
};
const bin = resolve(opt('--bin', join(import.meta.dirname, '..', '..', 'bin', 'pulsa-bridge')));
const seconds = Number(opt('--seconds', '15'));

const CLIENT = `
const net = require('node:net');
const [sock, mode, seconds] = process.argv.slice(1);
const end = Date.now() + Number(seconds) * 1000;
let opened = 0;
const line = (id) => JSON.stringify({ v: 1, id, op: 'at', command: 'AT+CSQ' }) + '\\n';
const hold = [];
const loop = () => {
  if (Date.now() > end) return;
  opened++;
  const s = net.connect(sock);
  s.on('error', () => {});
  s.resume();
  if (mode === 'busy') s.on('connect', () => s.write(Array.from({ length: 200 }, (_, i) => line(i + 1)).join('')));
  s.on('close', () => setImmediate(loop));
};
if (mode === 'refused') for (let i = 0; i < 40; i++) { const s = net.connect(sock); s.on('error', () => {}); s.resume(); hold.push(s); }
setTimeout(() => { for (let i = 0; i < (mode === 'busy' ? 4 : 16); i++) loop(); }, 1000);
setTimeout(() => { process.stdout.write(String(opened)); process.exit(0); }, Number(seconds) * 1000 + 1500);
`;

interface ProcSample {
  rssKiB: number;
  cpuTicks: number;
}

async function sample(pid: number): Promise<ProcSample> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const stat = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  return { rssKiB: Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN), cpuTicks: Number(stat[11]) + Number(stat[12]) };
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0)
    throw new Error('log-flood needs root: the reading client runs as nobody through runuser');
  const dir = await mkdtemp(join(tmpdir(), 'pulsa-bench-logflood-'));
  await chmod(dir, 0o755);
  const run = join(dir, 'run');
  await mkdir(run, { mode: 0o755 });
  const socket = join(run, 'control.sock');
  const config = join(dir, 'config.json');
  await writeFile(
    config,
    JSON.stringify({
      webhook: { url: 'http://127.0.0.1:9/hook', hmacSecret: 'x'.repeat(32) },
      spool: { dir: join(dir, 'spool'), fsync: false },
      modems: [
        {
          name: 'tsel-1',
          port: 'virtual:tsel-1?number=081200000001&operator=telkomsel&balance=50000',
          senders: ['858'],
          sweepIntervalSec: 3600,
          operator: 'telkomsel',
        },
      ],
      control: { socket, group: 'nogroup' },
    }),
    { mode: 0o600 },
  );
  const daemon: ChildProcess = spawn(process.execPath, [bin, 'run', '--config', config], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'info' },
  });
  let lines = 0;
  let bytes = 0;
  let errText = '';
  daemon.stdout!.on('data', (c: Buffer) => {
    bytes += c.length;
    for (const b of c) if (b === 0x0a) lines++;
  });
  daemon.stderr!.on('data', (c: Buffer) => (errText += c.toString('utf8')));
  try {
    const start = Date.now();
    while (!(spawnSync('test', ['-S', socket]).status === 0 && lines >= 5)) {
      if (Date.now() - start > 30_000) throw new Error(`the daemon did not start: ${errText.slice(-400)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, 2000));
    const hz = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
    console.log(`bin ${bin}, ${seconds} s a loop, node ${process.version}`);
    console.log(
      '| loop | connections opened | log lines | lines/s | log MB | daemon CPU | RSS before -> after (MiB) |',
    );
    console.log('|---|---|---|---|---|---|---|');
    for (const mode of ['refused', 'busy'] as const) {
      const before = await sample(daemon.pid!);
      const [l0, b0, t0] = [lines, bytes, Date.now()];
      const cmd =
        mode === 'refused'
          ? ([
              'runuser',
              ['-u', 'nobody', '--', process.execPath, '-e', CLIENT, socket, mode, String(seconds)],
            ] as const)
          : ([process.execPath, ['-e', CLIENT, socket, mode, String(seconds)]] as const);
      const out = spawnSync(cmd[0], [...cmd[1]], { encoding: 'utf8', timeout: (seconds + 30) * 1000 });
      await new Promise((r) => setTimeout(r, 500));
      const after = await sample(daemon.pid!);
      const secs = (Date.now() - t0) / 1000;
      const dl = lines - l0;
      const cpu = ((after.cpuTicks - before.cpuTicks) / hz / secs) * 100;
      console.log(
        `| ${mode} | ${out.stdout || '?'} | ${dl} | ${(dl / secs).toFixed(1)} | ${((bytes - b0) / 1e6).toFixed(2)} | ${cpu.toFixed(0)} % | ${(before.rssKiB / 1024).toFixed(0)} -> ${(after.rssKiB / 1024).toFixed(0)} |`,
      );
      await new Promise((r) => setTimeout(r, 3000)); // the idle connections time out before the next loop
    }
  } finally {
    daemon.kill('SIGTERM');
    await new Promise((r) => daemon.once('exit', r));
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(`log-flood: ${(err as Error).message}`);
  process.exitCode = 1;
});
