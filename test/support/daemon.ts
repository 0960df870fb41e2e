/**
 * The compiled bin/pulsa-bridge as child processes, driven as an operator would: DaemonProcess (`run --config FILE`,
 * native serial binding), SimProcess (`simulate --link PATH`: the virtual modem on a socat pseudo-terminal, commands
 * on stdin), CliProcess (any command; runCli() to its end; `as` runs it as another user through runuser). Output is
 * kept line by line (LOG_LEVEL=debug). Every wait is bounded and names what it waited for; every process started here
 * is registered so `killAll()` can end it, by its own pid only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sleep, until } from './until.js';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** bin/pulsa-bridge runs dist/src/cli.js's main() (the module alone only exports it), as systemd does. */
export const bin = path.join(root, 'bin/pulsa-bridge');

export function distBuilt(): boolean {
  return existsSync(path.join(root, 'dist/src/cli.js'));
}

const live = new Set<ChildProcess>();

export class CliProcess {
  readonly child: ChildProcess;
  readonly out: string[] = [];
  readonly err: string[] = [];
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private buf = '';

  /** `node bin/pulsa-bridge ...args`; with `node`, `node ...args` (a script of the test's own); `env` is added. */
  constructor(
    args: string[],
    stdin: 'pipe' | 'ignore',
    opts: { as?: string; node?: boolean; env?: NodeJS.ProcessEnv } = {},
  ) {
    const argv = opts.node ? args : [bin, ...args];
    const [cmd, cmdArgs]: [string, string[]] = opts.as
      ? ['runuser', ['-u', opts.as, '--', process.execPath, ...argv]]
      : [process.execPath, argv];
    this.child = spawn(cmd, cmdArgs, {
      env: { ...process.env, LOG_LEVEL: 'debug', ...opts.env },
      stdio: [stdin, 'pipe', 'pipe'],
    });
    live.add(this.child);
    this.child.stdout!.setEncoding('utf8');
    this.child.stdout!.on('data', (c: string) => {
      this.buf += c;
      const lines = this.buf.split('\n');
      this.buf = lines.pop()!;
      this.out.push(...lines);
    });
    this.child.stderr!.setEncoding('utf8');
    this.child.stderr!.on('data', (c: string) => this.err.push(c));
    this.child.stdin?.on('error', () => undefined); // writing to a process that just died: its exit is reported instead
    this.exit = new Promise((resolve) =>
      this.child.on('exit', (code, signal) => {
        live.delete(this.child);
        resolve({ code, signal });
      }),
    );
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  logged(text: string, from = 0): boolean {
    for (let i = from; i < this.out.length; i++) if (this.out[i]!.includes(text)) return true;
    return false;
  }

  count(text: string): number {
    return this.out.filter((l) => l.includes(text)).length;
  }

  /** Ends the process: `signal` first, SIGKILL after `graceMs`. Resolves when it has exited. */
  async stop(
    signal: NodeJS.Signals = 'SIGTERM',
    graceMs = 5000,
  ): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.running) this.child.kill(signal);
    const forced = setTimeout(() => this.running && this.child.kill('SIGKILL'), graceMs);
    const r = await this.exit;
    clearTimeout(forced);
    return r;
  }
}

/** A CLI command to its end: stdout (whole), stderr, exit code. */
export async function runCli(
  args: string[],
  opts: { as?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ out: string; err: string; code: number | null }> {
  const p = new CliProcess(args, 'ignore', opts);
  const { code } = await p.exit;
  await new Promise((r) => setImmediate(r));
  return { out: p.out.map((l) => `${l}\n`).join(''), err: p.err.join(''), code };
}

/** SIGKILLs every process this module started that is still running (test teardown). */
export async function killAll(): Promise<void> {
  const waits: Promise<unknown>[] = [];
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) {
      waits.push(new Promise((r) => child.once('exit', r)));
      child.kill('SIGKILL');
    }
  }
  await Promise.race([Promise.all(waits), sleep(5000)]);
}

export interface SimState {
  sim: string;
  stored: number;
  held: number;
  dropped: number;
  pinEntries: number;
}

/** `pulsa-bridge simulate`: the virtual modem process. */
export class SimProcess extends CliProcess {
  constructor(
    readonly link: string,
    extra: string[] = [],
  ) {
    super(['simulate', '--link', link, ...extra], 'pipe');
  }

  static async start(link: string, extra: string[] = [], timeoutMs = 20_000): Promise<SimProcess> {
    const sim = new SimProcess(link, extra);
    await until(
      () => sim.logged('modem on') || !sim.running,
      'the simulator to create its pseudo-terminal',
      timeoutMs,
      { everyMs: 20 },
    );
    if (!sim.running) throw new Error(`simulate exited at start: ${sim.err.join('')}`);
    return sim;
  }

  send(line: string): void {
    if (!this.running) throw new Error(`simulator is not running (cannot send ${line.slice(0, 40)})`);
    this.child.stdin!.write(`${line}\n`);
  }

  /** Sends a command and waits for the first new output line starting with `reply`. */
  async ask(line: string, reply: string, timeoutMs = 10_000): Promise<string> {
    const from = this.out.length;
    const errFrom = this.err.length;
    this.send(line);
    let found: string | undefined;
    await until(
      () => {
        for (let i = from; i < this.out.length && !found; i++) if (this.out[i]!.startsWith(reply)) found = this.out[i];
        return found !== undefined || !this.running || this.err.length > errFrom;
      },
      `the simulator's answer to ${line.slice(0, 40)}`,
      timeoutMs,
      { everyMs: 20 },
    );
    if (found === undefined)
      throw new Error(`simulator did not answer ${line.slice(0, 60)}: ${this.err.join('').slice(-300) || 'it exited'}`);
    return found;
  }

  async state(): Promise<SimState> {
    return JSON.parse((await this.ask('state', 'state ')).slice('state '.length)) as SimState;
  }

  /** `quit`: the simulator saves its --state file and removes the link; SIGKILL if it does not end in time. */
  async quit(timeoutMs = 8000): Promise<void> {
    if (!this.running) return;
    this.child.stdin!.end('quit\n');
    const forced = setTimeout(() => this.running && this.child.kill('SIGKILL'), timeoutMs);
    await this.exit;
    clearTimeout(forced);
  }
}

/** `pulsa-bridge run --config FILE`: the daemon as systemd runs it. */
export class DaemonProcess extends CliProcess {
  constructor(config: string, env?: NodeJS.ProcessEnv) {
    super(['run', '--config', config], 'ignore', env ? { env } : {});
  }

  /** Resolves once every one of `readyText` is logged; throws if the daemon exits first. `env` is added to its own. */
  static async start(
    config: string,
    readyText: string | readonly string[] = 'started',
    timeoutMs = 30_000,
    env?: NodeJS.ProcessEnv,
  ): Promise<DaemonProcess> {
    const d = new DaemonProcess(config, env);
    const texts = typeof readyText === 'string' ? [readyText] : readyText;
    await until(
      () => texts.every((t) => d.logged(t)) || !d.running,
      `the daemon to start (${texts.join(', ')})`,
      timeoutMs,
      { everyMs: 20 },
    );
    if (!d.running) throw new Error(`daemon exited at start: ${d.err.join('').slice(-500)}`);
    return d;
  }
}
