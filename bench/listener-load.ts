/**
 * The metrics listener under idle connections: the compiled daemon (its own process, a virtual modem) with
 * `metrics.listen` on loopback; one address opens `--idle` idle TCP connections (never a request) and keeps opening
 * them again as the daemon closes them, while /healthz is asked `--samples` times from another address (127.0.0.2)
 * and from the flooding one. Printed: /healthz answers and latency from each, the daemon's log lines during the load
 * and its RSS before and after. Figures only: nothing is asserted.
 *
 *   node dist/bench/listener-load.js [--idle 144] [--samples 50] [--json]
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { summarize, table, type Summary } from './stats.js';

const BIN = fileURLToPath(new URL('../../bin/pulsa-bridge', import.meta.url));
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Args {
  idle: number;
  samples: number;
  json: boolean;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { idle: 144, samples: 50, json: false };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--idle') a.idle = Number(argv[++i]);
    else if (argv[i] === '--samples') a.samples = Number(argv[++i]);
    else if (argv[i] === '--json') a.json = true;
  }
  return a;
}

/** One /healthz from `localAddress`: the status code (0: closed unanswered) and the wall time. */
function healthz(port: number, localAddress: string): Promise<{ status: number; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1', localAddress });
    let got = '';
    s.on('data', (c: Buffer) => (got += c.toString('latin1')));
    const done = () =>
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(got)?.[1] ?? 0), ms: performance.now() - t0 });
    s.on('error', done);
    s.on('close', done);
    s.on('connect', () => s.end('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'));
  });
}

async function rssMiB(pid: number): Promise<number> {
  const text = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(text)![1]) / 1024;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const dir = await mkdtemp(join(tmpdir(), 'pb-listener-load-'));
  const config = join(dir, 'config.json');
  await writeFile(
    config,
    JSON.stringify({
      webhook: { url: 'http://127.0.0.1:9/api/v1/convert-pulsa/webhook/sms-gateway' },
      spool: { dir: join(dir, 'spool'), fsync: false },
      control: { socket: join(dir, 'control.sock') },
      modems: [{ name: 'bench-1', port: 'virtual:bench-1', senders: ['858'] }],
      metrics: { listen: '127.0.0.1:0' },
      log: { level: 'info', pretty: false },
      shutdownGraceSec: 0,
    }),
  );
  const lines: string[] = [];
  const daemon = spawn(process.execPath, [BIN, 'run', '--config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  daemon.stdout.on('data', (c: Buffer) => lines.push(...c.toString().split('\n').filter(Boolean)));
  const sockets: net.Socket[] = [];
  let flooding = true;
  try {
    let port = 0;
    for (let i = 0; i < 300 && !port; i++) {
      const m = lines
        .map((l) => /serving \/metrics and \/healthz on http:\/\/127\.0\.0\.1:(\d+)/.exec(l))
        .find(Boolean);
      if (m) port = Number(m[1]);
      else await sleep(100);
    }
    if (!port) throw new Error('the daemon did not log its metrics address');
    await sleep(500);
    const rssBefore = await rssMiB(daemon.pid!);
    const linesBefore = lines.length;
    // The flood: `idle` connections from 127.0.0.1, each reopened when the daemon closes it.
    const openIdle = (): void => {
      if (!flooding) return;
      const s = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.1' });
      sockets.push(s);
      s.on('error', () => undefined);
      s.once('close', () => setTimeout(openIdle, 20));
    };
    for (let i = 0; i < args.idle; i++) openIdle();
    await sleep(1000);
    const other: Array<{ status: number; ms: number }> = [];
    const same: Array<{ status: number; ms: number }> = [];
    for (let i = 0; i < args.samples; i++) {
      other.push(await healthz(port, '127.0.0.2'));
      same.push(await healthz(port, '127.0.0.1'));
    }
    const rssDuring = await rssMiB(daemon.pid!);
    const logLines = lines.slice(linesBefore).length;
    flooding = false;
    for (const s of sockets) s.destroy();
    const row = (name: string, r: Array<{ status: number; ms: number }>): [string, number, number, Summary] => [
      name,
      r.filter((x) => x.status === 200 || x.status === 503).length,
      r.length,
      summarize(r.map((x) => x.ms)),
    ];
    const rows = [row('from 127.0.0.2 (another address)', other), row('from 127.0.0.1 (the flooding address)', same)];
    if (args.json) {
      process.stdout.write(`${JSON.stringify({ idle: args.idle, rows, logLines, rssBefore, rssDuring })}\n`);
      return;
    }
    process.stdout.write(
      `metrics listener, ${args.idle} idle connections from 127.0.0.1 kept open (reopened when closed), node ${process.version}\n`,
    );
    process.stdout.write(
      table(
        ['/healthz asked', 'answered', 'of', 'median ms', 'p95 ms', 'max ms'],
        rows.map(([name, ok, n, s]) => [
          name,
          String(ok),
          String(n),
          s.median.toFixed(1),
          s.p95.toFixed(1),
          s.max.toFixed(1),
        ]),
      ) + '\n',
    );
    process.stdout.write(
      `daemon log lines during the load: ${logLines}; RSS ${rssBefore.toFixed(1)} -> ${rssDuring.toFixed(1)} MiB\n`,
    );
  } finally {
    flooding = false;
    for (const s of sockets) s.destroy();
    daemon.kill('SIGTERM');
    await new Promise((r) => daemon.once('exit', r));
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
