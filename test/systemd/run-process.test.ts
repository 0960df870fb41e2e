/**
 * The process the unit starts, as the unit starts it: `node <ExecStart's flags> bin/pulsa-bridge run` on this Node
 * (CI runs the suite on 20, 22 and 24: .ci/node-versions). The flags are accepted (stderr holds V8's one lite-mode note
 * on 20 and 22, nothing on 24), the daemon starts and stops cleanly
 * (exit 0), and it loads only what its config uses (issue 13, memory): no simulator (nor its virtual link) for a real
 * modem, no prom-client without `metrics.listen`, not the `serialport` package's parsers and mock (the link stands on
 * @serialport/stream), no node:https nor node:zlib before an https webhook or a compressed body needs them. Which
 * modules loaded is recorded by a module resolve hook (module.register) that appends every resolved URL to a file, and
 * which built-ins by the process's own module list, written at exit. The flags are read from the unit by the same
 * function the lean benchmark uses.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { unitNodeFlags } from '../../bench/lean/unit-flags.js';
import { bin, distBuilt, until } from '../faults/processes.js';
import { tempDir } from '../spool/helpers.js';

let dir: string;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  expect(distBuilt(), 'dist/ is missing: run `npm run build` (npm test does)').toBe(true);
  ({ dir, cleanup } = await tempDir('run-process'));
});

afterEach(async () => {
  await cleanup();
});

interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Every module URL the process resolved (node: built-ins left out). */
  modules: string[];
  /** The built-in modules the process loaded (process.moduleLoadList), e.g. 'https'. */
  builtins: string[];
}

/** Starts the daemon with the unit's node flags, waits for its "started" line, stops it with SIGTERM. */
async function runDaemon(extraConfig: Record<string, unknown>): Promise<RunResult> {
  const loaded = path.join(dir, 'loaded.txt');
  const hooks = path.join(dir, 'hooks.mjs');
  await writeFile(
    hooks,
    `import { appendFileSync } from 'node:fs';\n` +
      `export async function resolve(spec, ctx, next) { const r = await next(spec, ctx); if (!r.url.startsWith('node:')) appendFileSync(${JSON.stringify(loaded)}, r.url + '\\n'); return r; }\n`,
  );
  const register = path.join(dir, 'register.mjs');
  const builtins = path.join(dir, 'builtins.txt');
  await writeFile(
    register,
    `import { register } from 'node:module';\nimport { writeFileSync } from 'node:fs';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n` +
      `process.on('exit', () => writeFileSync(${JSON.stringify(builtins)}, process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice(13)).join('\\n')));\n`,
  );
  await writeFile(loaded, '');
  const config = path.join(dir, 'config.json');
  await writeFile(
    config,
    JSON.stringify({
      webhook: { url: 'http://127.0.0.1:9/hook' },
      spool: { dir: path.join(dir, 'spool') },
      // A real modem whose port is missing: the supervisor retries it; the daemon runs meanwhile.
      modems: [{ name: 'tsel-1', port: path.join(dir, 'no-such-port'), senders: ['858'] }],
      log: { level: 'info', pretty: false },
      shutdownGraceSec: 1,
      ...extraConfig,
    }),
  );
  const child = spawn(process.execPath, [...unitNodeFlags(), '--import', pathToFileURL(register).href, bin, 'run', '--config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
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
  const code = await exit;
  return { code, stdout, stderr, modules: readFileSync(loaded, 'utf8').split('\n').filter(Boolean), builtins: readFileSync(builtins, 'utf8').split('\n') };
}

const V8_LITE_MODE_NOTE = 'Warning: disabling flag --expose_wasm due to conflicting flags\n';

const loads = (modules: string[], suffix: string) => modules.some((u) => u.endsWith(suffix));

describe("the daemon under the unit's node flags", () => {
  it('starts with no warning but V8\'s lite-mode note, stops with exit 0, and loads neither the simulator nor prom-client for a real modem without metrics', async () => {
    const r = await runDaemon({});
    expect(r.stdout).toMatch(/ started"/);
    // Node 20 and 22 note once that lite mode has no WebAssembly (the unit's comments); Node 24 says nothing.
    const major = Number(process.versions.node.split('.')[0]);
    expect(r.stderr).toBe(major < 24 ? V8_LITE_MODE_NOTE : '');
    expect(r.code).toBe(0);
    expect(loads(r.modules, '/dist/src/daemon.js')).toBe(true);
    for (const m of ['/dist/src/sim/virtual-modem.js', '/dist/src/sim/operator-network.js', '/dist/src/metrics/registry.js', '/dist/src/metrics/server.js', '/prom-client/index.js']) {
      expect(loads(r.modules, m), m).toBe(false);
    }
    // Nor what a real modem and an http webhook never use: the virtual link, serialport's parsers and mock, https, zlib.
    expect(loads(r.modules, '/dist/src/serial/serial-link.js')).toBe(true);
    for (const m of ['/dist/src/sim/virtual-link.js', '/serialport/dist/index.js', '/zod/index.js', '/commander/index.js']) expect(loads(r.modules, m), m).toBe(false);
    expect(r.builtins).toContain('http');
    for (const b of ['https', 'tls', 'zlib']) expect(r.builtins, b).not.toContain(b);
    // Nor undici (fetch, WebSocket): on Node 22 an ES import of node:http starts it, and under lite mode it dies.
    expect(r.builtins.filter((b) => b.includes('undici'))).toEqual([]);
  }, 60_000);

  it('loads prom-client and serves metrics when metrics.listen is set', async () => {
    const r = await runDaemon({ metrics: { listen: '127.0.0.1:0' } });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/serving \/metrics and \/healthz on http:\/\/127\.0\.0\.1:\d+/);
    expect(loads(r.modules, '/dist/src/metrics/registry.js')).toBe(true);
    expect(loads(r.modules, '/prom-client/index.js')).toBe(true);
    expect(loads(r.modules, '/dist/src/sim/virtual-modem.js')).toBe(false);
  }, 60_000);
});
