/**
 * Test helper: the compiled `bin/pulsa-bridge` as separate processes (the daemon, the simulator on a pseudo-terminal,
 * CLI commands), each tracked so that afterEach kills what is left. Lines of stdout are kept as they arrive (the
 * daemon logs JSON at debug level there), stderr as chunks.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { until } from '../support/until.js';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const bin = path.join(root, 'bin/pulsa-bridge');
export const hasSocat = spawnSync('sh', ['-c', 'command -v socat']).status === 0;

export interface Proc {
  child: ChildProcess;
  out: string[];
  err: string[];
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface CliResult {
  out: string;
  err: string;
  code: number | null;
}

export class Processes {
  private readonly procs: Proc[] = [];

  /** A process of `node <argv>` (default: the bin with `args`). */
  spawn(args: string[], o: { stdin?: 'ignore' | 'pipe'; node?: boolean } = {}): Proc {
    const argv = o.node ? args : [bin, ...args];
    const child = spawn(process.execPath, argv, { env: { ...process.env, LOG_LEVEL: 'debug' }, stdio: [o.stdin ?? 'ignore', 'pipe', 'pipe'] });
    const out: string[] = [];
    const err: string[] = [];
    let buf = '';
    child.stdout!.on('data', (c: Buffer) => {
      buf += c.toString('utf8');
      const parts = buf.split('\n');
      buf = parts.pop()!;
      out.push(...parts);
    });
    child.stderr!.on('data', (c: Buffer) => err.push(c.toString('utf8')));
    child.stdin?.on('error', () => undefined);
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    const p = { child, out, err, exit };
    this.procs.push(p);
    return p;
  }

  /** A CLI command to its end: stdout (whole), stderr, exit code. */
  async cli(args: string[]): Promise<CliResult> {
    const p = this.spawn(args);
    const { code } = await p.exit;
    await new Promise((r) => setImmediate(r));
    return { out: p.out.map((l) => `${l}\n`).join(''), err: p.err.join(''), code };
  }

  /** `simulate --link` on a pseudo-terminal (needs socat). */
  async modem(link: string, profile: 'simcom' | 'huawei' | 'generic' = 'simcom'): Promise<Proc> {
    const sim = this.spawn(['simulate', '--link', link, '--profile', profile], { stdin: 'pipe' });
    await until(() => logged(sim, `virtual ${profile} modem on`), 'the simulator', 15_000);
    return sim;
  }

  /** `run --config F`, once every modem named is ready and the control socket listens. */
  async daemon(config: string, modems: readonly string[]): Promise<Proc> {
    const d = this.spawn(['run', '--config', config]);
    await until(() => modems.every((m) => logged(d, `modem ${m} ready:`)) && logged(d, 'control socket listening'), 'the daemon to initialise its modems and listen', 30_000);
    return d;
  }

  /** Kills what is still running. */
  killAll(): void {
    for (const p of this.procs.splice(0)) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  }
}

export const logged = (p: Proc, text: string): boolean => p.out.some((l) => l.includes(text));
export const countLogged = (p: Proc, text: string): number => p.out.filter((l) => l.includes(text)).length;
