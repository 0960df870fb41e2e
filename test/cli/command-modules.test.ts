import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Help } from 'commander';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { COMMANDS, createProgram, type Io } from '../../src/cli.js';
import { writeConfig } from '../support/config.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * Which modules a command loads (behaviour, not timing: bench/cli-startup.ts prints the times).
 * Runs bin/pulsa-bridge with a loader hook that records every module of dist/src it loads; returns them and the exit
 * code. The hook appends to a file synchronously: hooks registered with register() run on their own thread, and what
 * that thread writes to stderr can be lost when the command ends with process.exit() (`--version` does; seen in CI
 * runs on Node 22 and 24).
 */
function loadedModules(args: string[]): { modules: string[]; code: number | null; stderr: string } {
  const list = path.join(dir, `loaded-${++runs}.txt`);
  writeFileSync(list, '');
  const hook = `data:text/javascript,${encodeURIComponent(
    `import { appendFileSync } from 'node:fs'; export async function load(url, ctx, next) { appendFileSync(${JSON.stringify(list)}, (url.includes('/dist/src/') ? url.split('/dist/src/')[1] : url) + '\\n'); return next(url, ctx); }`,
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

/** A package's code loaded (its path under node_modules). */
const packageLoaded = (r: { modules: string[] }, pkg: string) => r.modules.some((m) => m.includes(`/node_modules/${pkg}/`));

describe('each command loads what it needs', () => {
  it('--version, --help and an unknown command load no command module', () => {
    for (const [args, code] of [[['--version'], 0], [['--help'], 0], [['help'], 0], [['bogus'], 2]] as const) {
      const r = loadedModules([...args]);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(code);
      expect(r.modules.filter((m) => m.startsWith('cli/') && m !== 'cli/io.js' && m !== 'cli/lifecycle.js' && m !== 'cli/usage-error.js'), args.join(' ')).toEqual([]);
      expect(r.modules, args.join(' ')).not.toContain('daemon.js');
    }
  });

  it('status, queue and config check load neither the daemon nor the serial addon', async () => {
    const config = await writeConfig(dir, { webhook: { url: 'http://127.0.0.1:9/hook' }, spool: { dir: path.join(dir, 'spool') }, modems: [{ name: 'm', port: '/dev/null', senders: ['858'] }] }, { defaults: false });
    await mkdir(path.join(dir, 'spool'));
    for (const args of [['status', '--config', config], ['queue', 'ls', '--config', config], ['config', 'check', config]]) {
      const r = loadedModules(args);
      expect(r.code === 0 || r.code === 3, `${args.join(' ')}: exit ${r.code} ${r.stderr}`).toBe(true);
      expect(r.modules, args.join(' ')).toContain(`cli/${args[0] === 'config' ? 'config-check' : args[0]}.js`);
      expect(r.modules, args.join(' ')).not.toContain('daemon.js');
      for (const pkg of ['@serialport/bindings-cpp', '@serialport/stream', 'serialport']) expect(packageLoaded(r, pkg), `${args.join(' ')} loads ${pkg}`).toBe(false);
      // status and queue read the spool section alone: not the config schema (nor its library), nor the balance command
      if (args[0] !== 'config') {
        for (const m of ['config.js', 'cli/balance.js', 'balance/watch.js']) expect(r.modules, `${args.join(' ')} loads ${m}`).not.toContain(m);
        expect(packageLoaded(r, 'valibot'), `${args.join(' ')} loads the schema library`).toBe(false);
      }
    }
    // the check sees the addon where it is loaded: `ports` lists ports through it
    expect(packageLoaded(loadedModules(['ports', '--json']), '@serialport/bindings-cpp')).toBe(true);
  });

  it('run loads the daemon, and with an invalid config exits 78 with every problem on stderr', async () => {
    const config = path.join(dir, 'config.json');
    await writeFile(config, JSON.stringify({ webhook: { baseUrl: 'not a url' }, modems: [] }));
    const r = loadedModules(['run', '--config', config]);
    expect(r.code, r.stderr).toBe(78);
    expect(r.modules).toContain('cli/run.js');
    expect(r.stderr).toMatch(/error: invalid config/);
    expect(r.stderr).toMatch(/webhook/);
  });

  it('a usage error of a command reads as before: exit 2, the option named', () => {
    const bad = loadedModules(['run', '--bogus']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/unknown option '--bogus'/);
    const missing = loadedModules(['run', '--config', path.join(dir, 'missing.json')]);
    expect(missing.code).toBe(78);
    expect(missing.stderr).toMatch(/cannot read \(ENOENT\)/);
  });
});

describe('the top-level list', () => {
  it('names, usage and descriptions in COMMANDS are those of the commands themselves, in order', async () => {
    const io = { out: () => {}, err: () => {} } as unknown as Io;
    const full = await createProgram(io);
    const help = new Help();
    const real = full.commands.map((c) => [c.name(), help.subcommandTerm(c).slice(c.name().length).trim(), c.description()]);
    expect(COMMANDS.flatMap((e) => e.commands)).toEqual(real);
  });

  it('--help lists every command as it did with every module loaded', async () => {
    const text = async (argv?: string[]) => {
      let out = '';
      const io = { out: (s: string) => (out += s), err: () => {} } as unknown as Io;
      (await createProgram(io, argv)).outputHelp();
      return out;
    };
    expect(await text(['node', 'pulsa-bridge', '--help'])).toBe(await text());
  });
});
