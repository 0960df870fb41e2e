/**
 * The CLI two ways. cli(): in-process, main(argv, io) with stdout and stderr captured and the exit code read from
 * process.exitCode; it clears process.exitCode before the run and restores it to undefined after, so one run's code
 * never leaks into the next run or into vitest's own exit; `extra` overrides any part of the Io (ports, input, modems).
 * compiledCli(): bin/pulsa-bridge as a child process to its end (needs dist/), bounded by `timeoutMs`.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { main, type Io } from '../../src/cli.js';

export interface CliRun {
  out: string;
  err: string;
  code: number;
}

/** An Io that collects what the CLI writes; result() reads it with the current process.exitCode. */
export function captureIo(extra: Partial<Io> = {}): { io: Io; result: () => CliRun } {
  let out = '';
  let err = '';
  const io: Io = { out: (t) => void (out += t), err: (t) => void (err += t), ...extra };
  return { io, result: () => ({ out, err, code: Number(process.exitCode ?? 0) }) };
}

/** `pulsa-bridge ...args` in this process. */
export async function cli(args: string[], extra: Partial<Io> = {}): Promise<CliRun> {
  const { io, result } = captureIo(extra);
  process.exitCode = undefined;
  try {
    await main(['node', 'pulsa-bridge', ...args], io);
    return result();
  } finally {
    process.exitCode = undefined;
  }
}

/** bin/pulsa-bridge of this checkout (every command from dist/src). */
export const BIN = fileURLToPath(new URL('../../bin/pulsa-bridge', import.meta.url));

/** `bin/pulsa-bridge ...args` run to its end; `env` replaces the environment when given. */
export function compiledCli(args: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: opts.timeoutMs ?? 30_000, ...(opts.env ? { env: opts.env } : {}) });
  return { code: r.status, out: r.stdout, err: r.stderr };
}
