/**
 * The CLI two ways. cli(): in-process, main(argv, io) with stdout and stderr captured and the exit code read from
 * process.exitCode; it clears process.exitCode before the run and restores it to undefined after, so one run's code
 * never leaks into the next run or into vitest's own exit; `extra` overrides any part of the Io (ports, input) and may
 * put a device behind --simulate (withSimulateDevice).
 * compiledCli(): bin/pulsa-bridge as a child process to its end (needs dist/), bounded by `timeoutMs`.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { main, type Io } from '../../src/cli.js';
import { SIMULATE_PORT } from '../../src/serial/port-kind.js';
import { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';
import {
  builtVirtualModems,
  provideVirtualModem,
  SAMPLE_SMS,
  stopVirtualModems,
} from '../../src/virtual-modem/virtual-ports.js';

/** An Io, and the device behind --simulate for this run (built and started at `path`; stopped after the run). */
export interface TestIo extends Io {
  virtualModem?: (path: string) => VirtualModem;
}

/** --simulate's default device, started at `path`: a SIM800-like modem holding the two sample SMS. */
export function sampleModem(path: string): VirtualModem {
  const vm = new VirtualModem({ path, profile: 'simcom', bootStepMs: 0 });
  vm.start();
  for (const sms of SAMPLE_SMS) vm.injectSms(sms);
  return vm;
}

/**
 * Runs `fn` with `io.virtualModem` building the device behind --simulate's port when the run opens it (a scripted or
 * stalled modem); afterwards every virtual modem the run built is powered off (the daemon's of this process stay).
 */
export async function withSimulateDevice<T>(io: Partial<TestIo>, fn: () => Promise<T>): Promise<T> {
  const keep = new Set(builtVirtualModems());
  const withdraw = io.virtualModem ? provideVirtualModem(SIMULATE_PORT, io.virtualModem) : undefined;
  try {
    return await fn();
  } finally {
    withdraw?.();
    stopVirtualModems(keep);
  }
}

export interface CliRun {
  out: string;
  err: string;
  code: number;
}

/** An Io that collects what the CLI writes; result() reads it with the current process.exitCode. */
export function captureIo(extra: Partial<TestIo> = {}): { io: Io; result: () => CliRun } {
  let out = '';
  let err = '';
  const { virtualModem: _device, ...rest } = extra; // the device is built by withSimulateDevice, not by the CLI
  const io: Io = { out: (t) => void (out += t), err: (t) => void (err += t), ...rest };
  return { io, result: () => ({ out, err, code: Number(process.exitCode ?? 0) }) };
}

/** `pulsa-bridge ...args` in this process. */
export async function cli(args: string[], extra: Partial<TestIo> = {}): Promise<CliRun> {
  const { io, result } = captureIo(extra);
  process.exitCode = undefined;
  try {
    await withSimulateDevice(extra, () => main(['node', 'pulsa-bridge', ...args], io));
    return result();
  } finally {
    process.exitCode = undefined;
  }
}

/** bin/pulsa-bridge of this checkout (every command from dist/src). */
export const BIN = fileURLToPath(new URL('../../bin/pulsa-bridge', import.meta.url));

/** `bin/pulsa-bridge ...args` run to its end; `env` replaces the environment when given. */
export function compiledCli(
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: 'utf8',
    timeout: opts.timeoutMs ?? 30_000,
    ...(opts.env ? { env: opts.env } : {}),
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}
