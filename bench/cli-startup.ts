/**
 * How fast the CLI starts, against node's own start-up in the same run: `node -e ''`, `--version`, `--help`, `status`,
 * `queue ls`, `config check`, `ports`, every other command's `--help`, and beside a running daemon `status`, `info`
 * and `at AT`. Each a fresh process: wall time spawn -> exit, peak RSS (GNU time), median of interleaved rounds.
 * `info` and `at AT` wait for the daemon; the bench sends the same requests with its own client in the same rounds,
 * and judges the start (wall time minus that round trip's median). Figures only.
 *
 *   node dist/bench/cli-startup.js [--rounds 10] [--json] [--old <another built checkout>]
 *
 * --old adds --version, --help, status, queue ls, ports --json, simulate --help, info and at AT from that checkout.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { table } from './stats.js';
import { COMMANDS } from '../src/cli/command-list.js';
import { ControlClient } from '../src/control/client/client.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'bin/pulsa-bridge');
/** What each command may take beyond node's own start-up here. */
export const CLI_BUDGET_MS = 120;

export interface CliRow {
  command: string;
  medianMs: number;
  maxMs: number;
  rssMiB: number;
  /** user + system CPU, median (ms): steadier than wall time on a shared machine */
  cpuMs: number;
  exitCode: number | null;
  /**
   * A command answered through the daemon: the median round trip of its control requests sent by the bench's own
   * client (connect, hello, the op, close) in the same rounds; the command's start is medianMs minus this.
   */
  roundTripMs?: number;
}

/** The control requests a command sends to the daemon after `hello` (as RemoteOps sends them). */
type ControlOp = Parameters<ControlClient['request']>[0];

/** One round trip of `hello` and `op` on a fresh connection, as the CLI makes it: ms from connect to closed. */
async function roundTrip(socket: string, op: ControlOp): Promise<number> {
  const t0 = performance.now();
  const client = await ControlClient.connect(socket);
  try {
    await client.request({ op: 'hello', client: `cli-startup bench (pid ${process.pid})` }, 10_000);
    await client.request(op, 70_000);
  } finally {
    await client.close();
  }
  return performance.now() - t0;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/** One run: wall ms, and CPU ms and peak RSS (MiB) through GNU time when installed. */
function once(args: string[]): { ms: number; rssMiB: number; cpuMs: number; code: number | null } {
  const time = existsSync('/usr/bin/time');
  const t0 = performance.now();
  const r = time
    ? spawnSync('/usr/bin/time', ['-f', '%U %S %M', process.execPath, ...args], { encoding: 'utf8' })
    : spawnSync(process.execPath, args, { encoding: 'utf8' });
  const ms = performance.now() - t0;
  const m = time ? /([\d.]+) ([\d.]+) (\d+)\s*$/.exec(r.stderr) : null;
  return {
    ms,
    cpuMs: m ? (Number(m[1]) + Number(m[2])) * 1000 : NaN,
    rssMiB: m ? Number(m[3]) / 1024 : NaN,
    code: r.status,
  };
}

export async function measureCli(rounds: number, log: (l: string) => void = () => {}, old?: string): Promise<CliRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'pulsa-cli-bench-'));
  const config = join(dir, 'config.json');
  const spool = join(dir, 'spool');
  mkdirSync(spool);
  writeFileSync(
    config,
    JSON.stringify({
      webhook: { url: 'http://127.0.0.1:9/hook' },
      spool: { dir: spool },
      control: { socket: join(dir, 'control.sock') },
      modems: [{ name: 'sim-1', port: 'virtual:sim-1', senders: ['858'] }],
      log: { level: 'warn', pretty: false },
      shutdownGraceSec: 1,
    }),
  );
  const commands: Array<[string, string[]]> = [
    ["node -e ''", ['-e', '']],
    ['pulsa-bridge --version', [BIN, '--version']],
    ['pulsa-bridge --help', [BIN, '--help']],
    ['pulsa-bridge status (no daemon)', [BIN, 'status', '--config', config]],
    ['pulsa-bridge queue ls', [BIN, 'queue', 'ls', '--config', config]],
    ['pulsa-bridge config check', [BIN, 'config', 'check', '--config', config]],
    ['pulsa-bridge ports --json', [BIN, 'ports', '--json']],
    // Every other command's start: parsing, loading its module, its --help (what it does next talks to a modem or the API)
    ...COMMANDS.flatMap((e) => e.commands.map(([word]) => word))
      .filter((w) => !['status', 'queue', 'config', 'ports'].includes(w))
      .map((w): [string, string[]] => [`pulsa-bridge ${w} --help`, [BIN, w, '--help']]),
  ];
  if (old) {
    const oldBin = join(old, 'bin/pulsa-bridge');
    commands.push(
      ['old: --version', [oldBin, '--version']],
      ['old: --help', [oldBin, '--help']],
      ['old: status (no daemon)', [oldBin, 'status', '--config', config]],
      ['old: queue ls', [oldBin, 'queue', 'ls', '--config', config]],
      ['old: ports --json', [oldBin, 'ports', '--json']],
      ['old: simulate --help', [oldBin, 'simulate', '--help']],
    );
  }
  // Beside the daemon; with the control request the command sends after `hello` (the CLI's default --timeout).
  const info: ControlOp = { op: 'info', modem: 'sim-1' };
  const at: ControlOp = { op: 'at', modem: 'sim-1', command: 'AT', timeoutMs: 10_000 };
  const running: Array<[string, string[], ControlOp?]> = [
    ['pulsa-bridge status (daemon running)', [BIN, 'status', '--config', config]],
    ['pulsa-bridge info (daemon running)', [BIN, 'info', '--config', config, '--modem', 'sim-1', '--json'], info],
    ['pulsa-bridge at AT (daemon running)', [BIN, 'at', '--config', config, '--modem', 'sim-1', 'AT'], at],
  ];
  if (old) {
    const oldBin = join(old, 'bin/pulsa-bridge');
    running.push(
      ['old: info (daemon running)', [oldBin, 'info', '--config', config, '--modem', 'sim-1', '--json'], info],
      ['old: at AT (daemon running)', [oldBin, 'at', '--config', config, '--modem', 'sim-1', 'AT'], at],
    );
  }
  const samples = new Map<string, Array<ReturnType<typeof once>>>();
  const trips = new Map<string, number[]>();
  const take = (name: string, args: string[]) => samples.set(name, [...(samples.get(name) ?? []), once(args)]);
  try {
    log(`cli: ${rounds} rounds without a daemon\n`);
    for (let i = 0; i < rounds; i++) for (const [name, args] of commands) take(name, args);
    log('cli: starting a daemon (one simulated modem)\n');
    const daemon = spawn(process.execPath, [BIN, 'run', '--config', config], { stdio: 'ignore' });
    try {
      const t0 = Date.now();
      while (!existsSync(join(spool, 'status.json')) || readFileSync(join(spool, 'status.json'), 'utf8') === '') {
        if (Date.now() - t0 > 30_000 || daemon.exitCode !== null)
          throw new Error('the daemon did not write status.json within 30 s');
        await new Promise((r) => setTimeout(r, 100));
      }
      log(`cli: ${rounds} rounds with the daemon running\n`);
      // node -e '' again beside it: the daemon's own load counts for both
      for (let i = 0; i < rounds; i++) {
        take("node -e '' (daemon running)", ['-e', '']);
        for (const [name, args, op] of running) {
          take(name, args);
          // right after the command, the same requests from this already running process: the daemon's answer time
          if (op) trips.set(name, [...(trips.get(name) ?? []), await roundTrip(join(dir, 'control.sock'), op)]);
        }
      }
    } finally {
      daemon.kill('SIGTERM');
      await new Promise((r) => daemon.once('exit', r));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return [...samples].map(([command, s]) => ({
    command,
    medianMs: median(s.map((x) => x.ms)),
    maxMs: Math.max(...s.map((x) => x.ms)),
    rssMiB: median(s.map((x) => x.rssMiB)),
    cpuMs: median(s.map((x) => x.cpuMs)),
    exitCode: s[s.length - 1]!.code,
    ...(trips.has(command) ? { roundTripMs: median(trips.get(command)!) } : {}),
  }));
}

export function cliReport(rows: CliRow[], rounds: number): string {
  const base = (command: string) =>
    rows.find((r) => r.command === (command.includes('daemon running') ? "node -e '' (daemon running)" : "node -e ''"))
      ?.medianMs ?? NaN;
  return [
    `CLI start-up: fresh process per command, wall time spawn -> exit, median of ${rounds} interleaved rounds; budget: node's own start-up + ${CLI_BUDGET_MS} ms, judged on the start: the wall time, minus for a command answered through the daemon the round trip of its control requests (connect, hello, the op, close) sent by the bench's own client in the same rounds`,
    table(
      [
        'command',
        'exit',
        'median ms',
        'max ms',
        'round trip ms',
        'start ms',
        'over node -e',
        'CPU ms',
        'peak RSS MiB',
        'budget',
      ],
      rows.map((r) => {
        const start = r.medianMs - (r.roundTripMs ?? 0);
        const over = start - base(r.command);
        const isNode = r.command.startsWith('node -e') || r.command.startsWith('old:');
        return [
          r.command,
          String(r.exitCode),
          r.medianMs.toFixed(0),
          r.maxMs.toFixed(0),
          r.roundTripMs === undefined ? '-' : r.roundTripMs.toFixed(0),
          start.toFixed(0),
          r.command.startsWith('node -e') ? '-' : `${over < 0 ? '' : '+'}${over.toFixed(0)}`,
          Number.isNaN(r.cpuMs) ? '-' : r.cpuMs.toFixed(0),
          Number.isNaN(r.rssMiB) ? '-' : r.rssMiB.toFixed(1),
          isNode ? '-' : over <= CLI_BUDGET_MS ? 'within' : 'OVER',
        ];
      }),
    ),
  ].join('\n');
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const i = argv.indexOf('--rounds');
  const rounds = i >= 0 ? Number(argv[i + 1]) : 10;
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds expects a whole number >= 1');
  const o = argv.indexOf('--old');
  const rows = await measureCli(rounds, (l) => process.stderr.write(l), o >= 0 ? argv[o + 1] : undefined);
  process.stdout.write(
    argv.includes('--json')
      ? `${JSON.stringify(rows, null, 2)}\n`
      : `node ${process.version}\n${cliReport(rows, rounds)}\n`,
  );
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`cli-startup: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
