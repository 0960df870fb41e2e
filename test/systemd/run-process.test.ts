/**
 * The process the unit starts, as the unit starts it: `node <ExecStart's flags> bin/pulsa-bridge run` on this Node
 * (CI runs the suite on 20, 22 and 24: .ci/node-versions). The flags are accepted without a word on stderr, the daemon
 * starts, logs JSON and stops cleanly (exit 0); with `metrics.listen` it serves metrics. The flags are read from the
 * unit file (support/systemd-unit.ts).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { unitNodeFlags } from '../support/systemd-unit.js';
import { bin, distBuilt } from '../support/daemon.js';
import { until } from '../support/until.js';
import { writeConfig } from '../support/config.js';
import { tempDir } from '../support/tmp.js';

let dir: string;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  expect(distBuilt(), 'dist/ is missing: run `npm run build` (npm test does)').toBe(true);
  ({ dir, cleanup } = await tempDir('run-process'));
});

afterEach(async () => {
  await cleanup();
});

/** Starts the daemon with the unit's node flags, waits for its "started" line, stops it with SIGTERM. */
async function runDaemon(
  extraConfig: Record<string, unknown>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const config = await writeConfig(dir, {
    webhook: { url: 'http://127.0.0.1:9/hook' },
    spool: { dir: path.join(dir, 'spool') },
    // A real modem whose port is missing: the supervisor retries it; the daemon runs meanwhile.
    modems: [{ name: 'tsel-1', port: path.join(dir, 'no-such-port'), senders: ['858'] }],
    log: { level: 'info', pretty: false },
    ...extraConfig,
  });
  const child = spawn(process.execPath, [...unitNodeFlags(), bin, 'run', '--config', config], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    await until(() => / started"/.test(stdout) || child.exitCode !== null, 'the daemon to log "started"', 30_000);
  } finally {
    child.kill('SIGTERM');
  }
  return { code: await exit, stdout, stderr };
}

describe("the daemon under the unit's node flags", () => {
  it('starts without a word on stderr, logs JSON lines, stops with exit 0 on SIGTERM', async () => {
    const r = await runDaemon({});
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { msg?: string; name?: string });
    expect(lines.some((l) => / started$/.test(l.msg ?? ''))).toBe(true);
    expect(lines.some((l) => /SIGTERM: stopping/.test(l.msg ?? ''))).toBe(true);
    expect(lines.every((l) => l.name === 'pulsa-bridge')).toBe(true);
  }, 60_000);

  it('serves metrics when metrics.listen is set', async () => {
    const r = await runDaemon({ metrics: { listen: '127.0.0.1:0' } });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/serving \/metrics and \/healthz on http:\/\/127\.0\.0\.1:\d+/);
  }, 60_000);
});
