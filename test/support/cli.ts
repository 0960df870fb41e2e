/**
 * The CLI in-process: main(argv, io) with stdout and stderr captured and the exit code read from process.exitCode.
 * Contract: cli() clears process.exitCode before the run and restores it to undefined after, so one run's code never
 * leaks into the next run or into vitest's own exit; `extra` overrides any part of the Io (ports, input, modems).
 */
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
