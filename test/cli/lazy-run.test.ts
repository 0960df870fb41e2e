import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * Runs bin/pulsa-bridge with a loader hook that records every module of dist/src it loads; returns them and the exit
 * code. The hook appends to a file synchronously: hooks registered with register() run on their own thread, and what
 * that thread writes to stderr can be lost when the command ends with process.exit() (`--version` does; seen in CI
 * runs on Node 22 and 24).
 */
function loadedModules(args: string[]): { modules: string[]; code: number | null; stderr: string } {
  const list = path.join(dir, `loaded-${++runs}.txt`);
  writeFileSync(list, '');
  const hook = `data:text/javascript,${encodeURIComponent(
    `import { appendFileSync } from 'node:fs'; export async function load(url, ctx, next) { if (url.includes('/dist/src/')) appendFileSync(${JSON.stringify(list)}, url.split('/dist/src/')[1] + '\\n'); return next(url, ctx); }`,
  )}`;
  const register = `data:text/javascript,${encodeURIComponent(`import { register } from 'node:module'; register(${JSON.stringify(hook)});`)}`;
  const r = spawnSync(process.execPath, ['--import', register, path.join(root, 'bin/pulsa-bridge'), ...args], { encoding: 'utf8', timeout: 30_000 });
  const modules = readFileSync(list, 'utf8').split('\n').filter(Boolean);
  return { modules, code: r.status, stderr: r.stderr };
}
let runs = 0;

let dir: string;
beforeEach(async () => {
  expect(existsSync(path.join(root, 'dist/src/cli.js')), 'dist/ is missing: run `npm run build` (npm test does)').toBe(true);
  dir = await mkdtemp(path.join(tmpdir(), 'lazy-run-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('`run` loads only what the daemon needs', () => {
  it('a run process never loads the other commands (diagnostics, probe, spool tools, the pty host)', async () => {
    const config = path.join(dir, 'config.json');
    await writeFile(config, JSON.stringify({ webhook: { baseUrl: 'not a url' }, modems: [] })); // invalid: run exits 78 at once
    const r = loadedModules(['run', '--config', config]);
    expect(r.code, r.stderr).toBe(78);
    expect(r.modules).toContain('cli/run-entry.js');
    expect(r.modules).toContain('daemon.js');
    // Nor the command-line parser: run-entry.ts reads run's two options itself (commander only for help and usage errors).
    expect(r.modules).not.toContain('cli.js');
    expect(r.modules).not.toContain('cli/run.js');
    expect(r.modules).not.toContain('cli/usage.js');
    expect(r.stderr).toMatch(/webhook/); // the config error is printed as the full CLI prints it
    const others = ['cli/modem.js', 'cli/ports.js', 'cli/queue.js', 'cli/simulate.js', 'cli/status.js', 'cli/config-check.js', 'cli/session.js', 'cli/terminal.js', 'sim/pty-host.js', 'modem/probe.js'];
    expect(r.modules.filter((m) => others.includes(m))).toEqual([]);
  });

  it('`run --help` and a usage error of `run` go to the full CLI and read as before', () => {
    const help = loadedModules(['run', '--help']);
    expect(help.code).toBe(0);
    expect(help.modules).toContain('cli.js');
    const bad = loadedModules(['run', '--bogus']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/unknown option '--bogus'/);
  });

  it('any other command loads them all (the probe is there for `ports`)', () => {
    const r = loadedModules(['--version']);
    expect(r.code).toBe(0);
    for (const m of ['cli/modem.js', 'cli/ports.js', 'cli/queue.js', 'cli/simulate.js', 'cli/status.js', 'cli/config-check.js', 'modem/probe.js']) expect(r.modules).toContain(m);
  });
});
