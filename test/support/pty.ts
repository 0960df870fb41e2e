/**
 * A pseudo-terminal pair made by socat, as a USB modem's tty stands in tests. hasSocat: whether socat is installed
 * (tests that need it are skipped otherwise; CI installs it). ptyPair(a, b): `socat pty,raw,echo=0,link=A
 * pty,raw,echo=0,link=B`, resolved once both links exist (throws naming the wait after `timeoutMs`); close() sends
 * SIGTERM to that socat only and waits for its exit.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { until } from './until.js';

export const hasSocat = spawnSync('socat', ['-V'], { stdio: 'ignore' }).status === 0;

export interface PtyPair {
  a: string;
  b: string;
  close: () => Promise<void>;
}

export async function ptyPair(a: string, b: string, timeoutMs = 5000): Promise<PtyPair> {
  const socat = spawn('socat', [`pty,raw,echo=0,link=${a}`, `pty,raw,echo=0,link=${b}`], { stdio: 'ignore' });
  let failed: Error | undefined; // socat could not be started (spawn error): no 'exit' follows
  const exited = new Promise<void>((r) => {
    socat.once('exit', () => r());
    socat.once('error', (err) => {
      failed = err;
      r();
    });
  });
  const close = async (): Promise<void> => {
    if (!failed && socat.exitCode === null && socat.signalCode === null) socat.kill('SIGTERM');
    await exited;
  };
  try {
    await until(
      () => {
        if (failed) throw new Error(`socat could not be started: ${failed.message}`);
        return existsSync(a) && existsSync(b);
      },
      'socat to create the pseudo-terminals',
      timeoutMs,
      { everyMs: 50 },
    );
  } catch (err) {
    await close();
    throw err;
  }
  return { a, b, close };
}
