/**
 * The logger's cost: memory after import + first line, and CPU for 100,000 lines. Figures only.
 *
 *   node dist/bench/log.js [--runs 3] [--lines 100000]
 *
 * Each figure comes from a fresh child process with the systemd unit's node flags (read from the unit), stdout to
 * /dev/null. Variants: `none` (node alone, importing node:os), `new` (src/log.ts), and `pino` (pino with the options
 * the pino-based log.ts used) when pino is still installed (it is looked up at run time, so this file builds without it).
 * - mem: import, createLogger(), one info line, gc(), then RSS and VmHWM from /proc/self/status;
 * - cpu: 100,000 info lines `{a,b,c,d,e}` + message at level info, process.cpuUsage() from the first line until the
 *   logger has flushed (user + system ms).
 */
import { spawnSync } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { unitNodeFlags } from './lean/unit-flags.js';

// The unit's flags (one source of truth; they include --expose-gc, which the memory figure's gc() needs).
const FLAGS = unitNodeFlags();
const REDACT = ['apiKey', '*.apiKey', 'pin', '*.pin', 'hmacSecret', '*.hmacSecret', 'headers.authorization', 'headers.Authorization', '*.headers.authorization', '*.headers.Authorization', 'config.webhook.hmacSecret', 'config.webhook.headers'];

interface LoggerLike {
  info(obj: object, msg: string): void;
  flush(cb?: (err?: Error | null) => void): void;
}

async function make(variant: string): Promise<LoggerLike | undefined> {
  if (variant === 'none') {
    await import('node:os');
    return undefined;
  }
  if (variant === 'new') {
    const { createLogger } = await import('../src/log.js');
    return createLogger({ level: 'info', pretty: false });
  }
  const name = 'pino';
  const { pino } = (await import(name)) as { pino: (o: object) => LoggerLike };
  return pino({ name: 'pulsa-bridge', level: 'info', redact: { paths: REDACT, censor: '[redacted]' } });
}

function status(field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

async function child(mode: string, variant: string, lines: number): Promise<void> {
  const log = await make(variant);
  const gc = (globalThis as { gc?: () => void }).gc;
  if (mode === 'mem') {
    log?.info({ modem: 'tsel-1', id: 'abc' }, 'started');
    await new Promise<void>((r) => (log ? log.flush(() => r()) : r()));
    gc?.();
    process.stderr.write(JSON.stringify({ rss: process.memoryUsage().rss / 2 ** 20, hwm: status('VmHWM') }));
    return;
  }
  if (!log) return;
  const start = process.cpuUsage();
  for (let i = 0; i < lines; i++) log.info({ modem: 'tsel-1', id: `k${i}`, attempt: i % 7, ok: true, ms: 12.5 }, 'forwarded');
  await new Promise<void>((r) => log.flush(() => r()));
  const used = process.cpuUsage(start);
  process.stderr.write(JSON.stringify({ cpuMs: (used.user + used.system) / 1000 }));
}

function run(mode: string, variant: string, lines: number): Record<string, number> {
  const r = spawnSync(process.execPath, [...FLAGS, fileURLToPath(import.meta.url), '--child', mode, variant, String(lines)], {
    stdio: ['ignore', openSync('/dev/null', 'w'), 'pipe'],
    encoding: 'utf8',
    env: { ...process.env, JOURNAL_STREAM: '', INVOCATION_ID: '' },
  });
  if (r.status !== 0) throw new Error(`bench child ${mode} ${variant} failed: ${r.stderr}`);
  return JSON.parse(r.stderr) as Record<string, number>;
}

async function main(argv: string[]): Promise<void> {
  if (argv[0] === '--child') return child(argv[1]!, argv[2]!, Number(argv[3]));
  const opt = (name: string, def: number) => (argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : def);
  const runs = opt('--runs', 3);
  const lines = opt('--lines', 100_000);
  let variants = ['none', 'new', 'pino'];
  try {
    await import(['pino'][0]!);
  } catch {
    variants = ['none', 'new'];
  }
  const fmt = (xs: number[]) => xs.map((x) => x.toFixed(1)).join(' / ');
  console.log(`node ${process.version}, flags ${FLAGS.join(' ')}, ${runs} runs (interleaved)`);
  const mem: Record<string, Array<Record<string, number>>> = {};
  const cpu: Record<string, number[]> = {};
  for (let i = 0; i < runs; i++) {
    for (const v of variants) (mem[v] ??= []).push(run('mem', v, lines));
    for (const v of variants.filter((x) => x !== 'none')) (cpu[v] ??= []).push(run('cpu', v, lines).cpuMs!);
  }
  for (const v of variants) console.log(`mem ${v.padEnd(4)}  RSS MiB ${fmt(mem[v]!.map((m) => m.rss!))}   VmHWM MiB ${fmt(mem[v]!.map((m) => m.hwm!))}`);
  for (const v of Object.keys(cpu)) console.log(`cpu ${v.padEnd(4)}  ${lines} lines to /dev/null: ${fmt(cpu[v]!)} ms (user+system)`);
}

await main(process.argv.slice(2));
