/**
 * How fast the CLI starts, against node's own start-up in the same run: `node -e ''`, every top-level command's
 * `--help`, and real one-shot runs: `status`, `queue ls`, `config check`, `ports`, `test-transfer --dry-run`, `rates`
 * and `calculate` (against a stand-in of the reseller API on loopback), and beside a running daemon `status`, `info`,
 * `at AT`, `sms list`, `ussd`, `balance`, `canary ls`. Fresh processes: wall time, peak RSS (GNU time); each run paired
 * with a `node -e ''` right before it, judged on the median of the differences less, through the daemon, its ops' own
 * service time (replayed on an open, greeted connection): connect, peer lookup and hello stay in. Figures only.
 *
 *   node dist/bench/cli-startup.js [--rounds 10] [--json] [--old <a built checkout>: some of its rows beside ours]
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
   * A command answered through the daemon: its control requests replayed by the bench's own client right after it, in
   * the same rounds. roundTripMs: median of connect, hello, the ops, close (what the command waits for in all);
   * opMs: median of the ops alone on that open, greeted connection (the daemon's and the modem's answer). The command
   * is judged on overNodeMs - opMs: the daemon's per-connection costs (peer lookup, hello) count, as the operator pays them.
   */
  roundTripMs?: number;
  opMs?: number;
  /**
   * Median of (this run - a `node -e ''` run right before it), over the rounds: the start-up over node's own, paired so
   * that a slow minute of a shared machine weighs on both halves of a pair alike.
   */
  overNodeMs?: number;
}

/** The control requests a command sends to the daemon after `hello` (as RemoteOps sends them). */
type ControlOp = Parameters<ControlClient['request']>[0];

/**
 * `hello` and the command's ops on a fresh connection, as the CLI sends them: ms from connect to closed, and ms of the
 * ops alone (from sending the first to the last one's reply, on the already-open, already-greeted connection).
 */
async function roundTrip(socket: string, ops: readonly ControlOp[]): Promise<{ all: number; ops: number }> {
  const t0 = performance.now();
  const client = await ControlClient.connect(socket);
  let opsMs: number;
  try {
    await client.request({ op: 'hello', client: `cli-startup bench (pid ${process.pid})` }, 10_000);
    const t1 = performance.now();
    for (const op of ops) await client.request(op, 90_000);
    opsMs = performance.now() - t1;
  } finally {
    await client.close();
  }
  return { all: performance.now() - t0, ops: opsMs };
}

/**
 * A local stand-in of the reseller API (src/demo/receiver.ts, the demo's and the tests' own) in a child process, so it
 * answers while this process waits in spawnSync; closing its stdin stops it.
 */
async function startReseller(): Promise<{ baseUrl: string; apiKey: string; stop: () => Promise<void> }> {
  const receiver = new URL('../src/demo/receiver.js', import.meta.url).href;
  const code = `const r = await (await import(${JSON.stringify(receiver)})).startDemoReceiver();
process.stdout.write(JSON.stringify({ baseUrl: r.baseUrl, apiKey: r.apiKey }) + '\\n');
process.stdin.on('data', () => {}).on('end', () => r.close().then(() => process.exit(0)));`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['pipe', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes('\n')) resolve(out.split('\n')[0]!);
    });
    child.once('exit', (c) => reject(new Error(`the reseller stand-in exited (${c}) before it listened`)));
  });
  const { baseUrl, apiKey } = JSON.parse(line) as { baseUrl: string; apiKey: string };
  return {
    baseUrl,
    apiKey,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.stdin.end();
      await exited;
    },
  };
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
  const reseller = await startReseller();
  // One virtual SIM with a number, an operator and a balance check (balance, ussd, test-transfer), the stand-in as
  // the reseller API (rates, calculate, an order's plan) and a canary that is not due during the bench (canary ls).
  const settings = {
    webhook: { url: 'http://127.0.0.1:9/hook' },
    spool: { dir: spool },
    control: { socket: join(dir, 'control.sock') },
    reseller: {
      baseUrl: reseller.baseUrl,
      apiKey: reseller.apiKey,
      order: { operatorId: 1, payoutMethod: 'DANA', payoutAccountNumber: '089900001111', payoutAccountName: 'Bench' },
    },
    modems: [
      {
        name: 'sim-1',
        port: 'virtual:sim-1?number=081211110001&operator=telkomsel&balance=75000',
        senders: ['858'],
        operator: 'telkomsel',
        number: '081211110001',
        balance: { minBalance: 10000 },
      },
    ],
    canaries: [
      { name: 'bench', from: 'sim-1', amount: 5000, intervalSec: 86_400, maxRupiahPerDay: 10000, order: true },
    ],
    log: { level: 'warn', pretty: false },
    shutdownGraceSec: 1,
  };
  // 0600: it holds the API key (a config readable by others gets a warning on every command)
  writeFileSync(config, JSON.stringify(settings), { mode: 0o600 });
  // The same without the canary, for the cost of a canaries section to every command that loads the whole config
  const noCanary = join(dir, 'config-no-canary.json');
  writeFileSync(noCanary, JSON.stringify({ ...settings, canaries: undefined }), { mode: 0o600 });
  const commands: Array<[string, string[]]> = [
    ["node -e ''", ['-e', '']],
    ['pulsa-bridge --version', [BIN, '--version']],
    ['pulsa-bridge --help', [BIN, '--help']],
    ['pulsa-bridge status (no daemon)', [BIN, 'status', '--config', config]],
    ['pulsa-bridge queue ls', [BIN, 'queue', 'ls', '--config', config]],
    ['pulsa-bridge config check', [BIN, 'config', 'check', '--config', config]],
    ['pulsa-bridge config check (no canary)', [BIN, 'config', 'check', '--config', noCanary]],
    ['pulsa-bridge ports --json', [BIN, 'ports', '--json']],
    [
      'pulsa-bridge test-transfer --order --dry-run',
      [BIN, 'test-transfer', '-c', config, '--order', '--amount', '5000', '--dry-run'],
    ],
    ['pulsa-bridge rates (stand-in)', [BIN, 'rates', '-c', config]],
    ['pulsa-bridge calculate (stand-in)', [BIN, 'calculate', '-c', config, '--operator-id', '1', '--amount', '10000']],
    // Every command's start alone: parsing, loading its module, its --help
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
  // Beside the daemon, each with the control requests it sends after `hello` (as the CLI sends them; the log of a
  // daemon at debug level lists them). `ussd` cancels the menu the balance code leaves open, as the CLI does.
  const modem = 'sim-1';
  const info: ControlOp[] = [{ op: 'info', modem }];
  const at: ControlOp[] = [{ op: 'at', modem, command: 'AT', timeoutMs: 10_000 }];
  const running: Array<[string, string[], ControlOp[]?]> = [
    ['pulsa-bridge status (daemon running)', [BIN, 'status', '--config', config]],
    ['pulsa-bridge info (daemon running)', [BIN, 'info', '--config', config, '--modem', modem, '--json'], info],
    ['pulsa-bridge at AT (daemon running)', [BIN, 'at', '--config', config, '--modem', modem, 'AT'], at],
    ['pulsa-bridge info (daemon running, no canary)', [BIN, 'info', '-c', noCanary, '--modem', modem, '--json'], info],
    [
      'pulsa-bridge sms list (daemon running)',
      [BIN, 'sms', 'list', '-c', config, '--modem', modem],
      [{ op: 'sms.list', modem, which: 'all' }],
    ],
    [
      'pulsa-bridge ussd *888# (daemon running)',
      [BIN, 'ussd', '-c', config, '--modem', modem, '*888#'],
      [
        { op: 'ussd.open', modem, code: '*888#' },
        { op: 'ussd.cancel', modem },
      ],
    ],
    ['pulsa-bridge balance (daemon running)', [BIN, 'balance', '-c', config], [{ op: 'balance', modem }]],
    ['pulsa-bridge canary ls (daemon running)', [BIN, 'canary', 'ls', '-c', config], [{ op: 'canary.ls' }]],
  ];
  if (old) {
    const oldBin = join(old, 'bin/pulsa-bridge');
    running.push(
      ['old: info (daemon running)', [oldBin, 'info', '--config', config, '--modem', modem, '--json'], info],
      ['old: at AT (daemon running)', [oldBin, 'at', '--config', config, '--modem', modem, 'AT'], at],
    );
  }
  const samples = new Map<string, Array<ReturnType<typeof once>>>();
  const trips = new Map<string, Array<{ all: number; ops: number }>>();
  const pairs = new Map<string, number[]>();
  const take = (name: string, args: string[]) => {
    if (name.startsWith('node -e')) {
      samples.set(name, [...(samples.get(name) ?? []), once(args)]);
      return;
    }
    const node = once(['-e', '']); // its pair: node's own start-up at this very moment
    const run = once(args);
    samples.set(name, [...(samples.get(name) ?? []), run]);
    pairs.set(name, [...(pairs.get(name) ?? []), run.ms - node.ms]);
  };
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
        for (const [name, args, ops] of running) {
          take(name, args);
          // right after the command, the same requests from this already running process: the daemon's answer time
          if (ops) trips.set(name, [...(trips.get(name) ?? []), await roundTrip(join(dir, 'control.sock'), ops)]);
        }
      }
    } finally {
      daemon.kill('SIGTERM');
      await new Promise((r) => daemon.once('exit', r));
    }
  } finally {
    await reseller.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return [...samples].map(([command, s]) => ({
    command,
    medianMs: median(s.map((x) => x.ms)),
    maxMs: Math.max(...s.map((x) => x.ms)),
    rssMiB: median(s.map((x) => x.rssMiB)),
    cpuMs: median(s.map((x) => x.cpuMs)),
    exitCode: s[s.length - 1]!.code,
    ...(pairs.has(command) ? { overNodeMs: median(pairs.get(command)!) } : {}),
    ...(trips.has(command)
      ? {
          roundTripMs: median(trips.get(command)!.map((t) => t.all)),
          opMs: median(trips.get(command)!.map((t) => t.ops)),
        }
      : {}),
  }));
}

export function cliReport(rows: CliRow[], rounds: number): string {
  const base = (command: string) =>
    rows.find((r) => r.command === (command.includes('daemon running') ? "node -e '' (daemon running)" : "node -e ''"))
      ?.medianMs ?? NaN;
  return [
    `CLI start-up: fresh process per command, wall time spawn -> exit, median of ${rounds} interleaved rounds; budget: node's own start-up + ${CLI_BUDGET_MS} ms, judged on "over node -e": the median over the rounds of (the run - a node -e '' run right before it), minus, for a command answered through the daemon, its ops' own service time (op ms: the same ops sent by the bench's own client on an open, greeted connection, same rounds), so connecting, the daemon's peer lookup and hello count against the budget; round trip ms = connect, hello, ops, close, for reference`,
    table(
      [
        'command',
        'exit',
        'median ms',
        'max ms',
        'round trip ms',
        'op ms',
        'over node -e',
        'CPU ms',
        'peak RSS MiB',
        'budget',
      ],
      rows.map((r) => {
        const over = (r.overNodeMs ?? r.medianMs - base(r.command)) - (r.opMs ?? 0);
        const isNode = r.command.startsWith('node -e') || r.command.startsWith('old:');
        return [
          r.command,
          String(r.exitCode),
          r.medianMs.toFixed(0),
          r.maxMs.toFixed(0),
          r.roundTripMs === undefined ? '-' : r.roundTripMs.toFixed(0),
          r.opMs === undefined ? '-' : r.opMs.toFixed(0),
          r.command.startsWith('node -e') ? '-' : `${over < 0 ? '' : '+'}${over.toFixed(0)}`,
          Number.isNaN(r.cpuMs) ? '-' : r.cpuMs.toFixed(0),
          Number.isNaN(r.rssMiB) ? '-' : r.rssMiB.toFixed(1),
          isNode ? '-' : over <= CLI_BUDGET_MS ? 'within' : 'OVER',
        ];
      }),
    ),
    'rates, calculate: against the local stand-in of the reseller API (its answer on loopback is in the figure); ' +
      'test-transfer --order --dry-run sends nothing; run and simulate are long-running (their --help rows only); ' +
      'nothing that moves credit runs for real (test-transfer, canary run, sms send); the modem is the virtual one; ' +
      '(no canary): the same config without its canaries section',
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
