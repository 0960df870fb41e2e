import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Help } from 'commander';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { COMMANDS, createProgram, type Io } from '../../src/cli.js';
import { writeConfig } from '../support/config.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * Which modules a command loads (behaviour, not timing: bench/cli-startup.ts prints the times), by bin/pulsa-bridge
 * (`via: 'bin'`: a one-shot command starts from its bundle in dist/cli) or by dist/src/cli.js's main() itself (`via:
 * 'modules'`: what a command without a bundle loads, `run` among them). A loader hook records every module loaded (its
 * path under the checkout); returns them and the exit code. The hook appends to a file synchronously: hooks
 * registered with register() run on their own thread, and what that thread writes to stderr can be lost when the
 * command ends with process.exit() (`--version` does; seen in CI runs on Node 22 and 24).
 */
function loadedModules(args: string[], via: 'bin' | 'modules' = 'bin'): { modules: string[]; code: number | null; stdout: string; stderr: string } {
  const list = path.join(dir, `loaded-${++runs}.txt`);
  writeFileSync(list, '');
  const prefix = pathToFileURL(root).href + '/';
  const hook = `data:text/javascript,${encodeURIComponent(
    `import { appendFileSync } from 'node:fs'; export async function load(url, ctx, next) { appendFileSync(${JSON.stringify(list)}, (url.startsWith(${JSON.stringify(prefix)}) ? url.slice(${prefix.length}) : url) + '\\n'); return next(url, ctx); }`,
  )}`;
  const register = `data:text/javascript,${encodeURIComponent(`import { register } from 'node:module'; register(${JSON.stringify(hook)});`)}`;
  const start =
    via === 'bin'
      ? [path.join(root, 'bin/pulsa-bridge'), ...args]
      : ['--input-type=module', '-e', `const m = await import(${JSON.stringify(pathToFileURL(path.join(root, 'dist/src/cli.js')).href)}); await m.main(['node', 'pulsa-bridge', ...${JSON.stringify(args)}]);`];
  const r = spawnSync(process.execPath, ['--import', register, ...start], { encoding: 'utf8', timeout: 30_000 });
  const modules = readFileSync(list, 'utf8').split('\n').filter(Boolean);
  return { modules, code: r.status, stdout: r.stdout, stderr: r.stderr };
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
const packageLoaded = (r: { modules: string[] }, pkg: string) => r.modules.some((m) => m.startsWith(`node_modules/${pkg}/`) || m.includes(`/node_modules/${pkg}/`));

/** packaging/bundle-cli.mjs's list: each file of dist/cli -> the modules of dist/src in it (paths under the checkout). */
const bundleInputs = (): Record<string, string[]> => JSON.parse(readFileSync(path.join(root, 'dist/cli/inputs.json'), 'utf8')) as Record<string, string[]>;

/** Our modules a run loaded, as paths under dist/src: those loaded as files, and those inside each bundle file it loaded. */
function sources(r: { modules: string[] }): string[] {
  const inputs = bundleInputs();
  const out = new Set<string>();
  for (const m of r.modules) {
    if (m.startsWith('dist/src/')) out.add(m.slice('dist/src/'.length));
    if (m.startsWith('dist/cli/')) for (const f of inputs[m] ?? [`(no inputs listed for ${m})`]) out.add(f.replace(/^dist\/src\//, ''));
  }
  return [...out];
}

const VIAS = ['bin', 'modules'] as const;
const LONG_RUNNING = ['run', 'simulate'];

describe('each command loads what it needs', () => {
  it('--version, --help and an unknown command load no command module', () => {
    for (const via of VIAS) {
      for (const [args, code] of [[['--version'], 0], [['--help'], 0], [['help'], 0], [['bogus'], 2]] as const) {
        const r = loadedModules([...args], via);
        const what = `${via}: ${args.join(' ')}`;
        expect(r.code, `${what}: ${r.stderr}`).toBe(code);
        expect(sources(r), what).toContain('cli.js');
        expect(sources(r).filter((m) => m.startsWith('cli/') && m !== 'cli/io.js' && m !== 'cli/lifecycle.js' && m !== 'cli/usage-error.js'), what).toEqual([]);
        expect(sources(r), what).not.toContain('daemon.js');
      }
    }
  });

  it('status, queue and config check load neither the daemon nor the serial addon', async () => {
    const config = await writeConfig(dir, { webhook: { url: 'http://127.0.0.1:9/hook' }, spool: { dir: path.join(dir, 'spool') }, modems: [{ name: 'm', port: '/dev/null', senders: ['858'] }] }, { defaults: false });
    await mkdir(path.join(dir, 'spool'));
    for (const via of VIAS) {
      for (const args of [['status', '--config', config], ['queue', 'ls', '--config', config], ['config', 'check', config]]) {
        const r = loadedModules(args, via);
        const what = `${via}: ${args.join(' ')}`;
        expect(r.code === 0 || r.code === 3, `${what}: exit ${r.code} ${r.stderr}`).toBe(true);
        expect(sources(r), what).toContain(`cli/${args[0] === 'config' ? 'config-check' : args[0]}.js`);
        expect(sources(r), what).not.toContain('daemon.js');
        if (via === 'bin') expect(r.modules.filter((m) => m.startsWith('dist/src/')), `${what}: the bundle alone`).toEqual([]);
        for (const pkg of ['@serialport/bindings-cpp', '@serialport/stream', 'serialport']) expect(packageLoaded(r, pkg), `${what} loads ${pkg}`).toBe(false);
        // status and queue read the spool section alone: not the config schema (nor its library), nor the balance command
        if (args[0] !== 'config') {
          for (const m of ['config.js', 'cli/balance.js', 'balance/watch.js']) expect(sources(r), `${what} loads ${m}`).not.toContain(m);
          expect(packageLoaded(r, 'valibot'), `${what} loads the schema library`).toBe(false);
        }
      }
    }
    // the check sees the addon where it is loaded: `ports` lists ports through it
    expect(packageLoaded(loadedModules(['ports', '--json']), '@serialport/bindings-cpp')).toBe(true);
  });

  // 40 processes (a command and its help, each two ways): a longer bound than one test's default
  it('bin starts every one-shot command from its bundle, run and simulate from the modules', { timeout: 90_000 }, () => {
    for (const [word] of COMMANDS.flatMap((e) => e.commands)) {
      for (const args of [[word, '--help'], ['help', word]]) {
        const r = loadedModules(args);
        const what = args.join(' ');
        expect(r.code, `${what}: ${r.stderr}`).toBe(0);
        if (LONG_RUNNING.includes(word)) {
          expect(r.modules, what).toContain('dist/src/cli.js');
          expect(r.modules.filter((m) => m.startsWith('dist/cli/')), what).toEqual([]);
        } else {
          expect(r.modules, what).toContain(`dist/cli/${word}.js`);
          expect(r.modules.filter((m) => m.startsWith('dist/src/')), `${what}: one file, no module of dist/src`).toEqual([]);
          // the bundle (commander inside) prints what the modules print
          if (args[0] === word) expect(r.stdout, what).toBe(loadedModules(args, 'modules').stdout);
        }
      }
    }
  });

  it('a bundle holds our modules and commander only, none that finds files next to itself but two that find the same from dist/cli', () => {
    // A bundle lives in dist/cli/; a path relative to a bundled module's import.meta.url would move. Two are written
    // for both places: version.js's ../../package.json and cli.js's ../src/cli/<module>.js (dist/src/ is as deep as
    // dist/cli/). The other packages stay in node_modules (a copy of one inside a bundle would go unseen by the checks).
    const inputs = bundleInputs();
    const words = COMMANDS.flatMap((e) => e.commands.map(([w]) => w));
    for (const w of ['top', ...words.filter((w) => !LONG_RUNNING.includes(w))]) expect(Object.keys(inputs), w).toContain(`dist/cli/${w}.js`);
    for (const w of LONG_RUNNING) expect(Object.keys(inputs).filter((f) => f.startsWith(`dist/cli/${w}`)), w).toEqual([]);
    for (const [bundle, files] of Object.entries(inputs)) {
      for (const f of files) {
        if (f.startsWith('node_modules/commander/')) continue;
        expect(f, `${bundle}: ${f}`).toMatch(/^dist\/src\//);
        if (f === 'dist/src/version.js' || f === 'dist/src/cli.js') continue;
        expect(readFileSync(path.join(root, f), 'utf8').includes('import.meta'), `${bundle}: ${f} uses import.meta`).toBe(false);
      }
    }
  });

  it('the bundles: the same files from the same build; where esbuild cannot run, none, and the commands still start', async () => {
    // A copy of what packaging/bundle-cli.mjs reads (its own dist/ is shared by every test): bin, dist/src, packages.
    const copy = path.join(dir, 'checkout');
    for (const d of ['bin', 'packaging', 'dist/src']) cpSync(path.join(root, d), path.join(copy, d), { recursive: true });
    cpSync(path.join(root, 'package.json'), path.join(copy, 'package.json'));
    symlinkSync(path.join(root, 'node_modules'), path.join(copy, 'node_modules'));
    const bundleCli = (env: NodeJS.ProcessEnv = process.env) => spawnSync(process.execPath, [path.join(copy, 'packaging/bundle-cli.mjs')], { encoding: 'utf8', env, timeout: 60_000 });
    const files = () => Object.fromEntries(readdirSync(path.join(copy, 'dist/cli')).map((f) => [f, readFileSync(path.join(copy, 'dist/cli', f), 'utf8')]));
    expect(bundleCli().status).toBe(0);
    const first = files();
    expect(Object.keys(first)).toContain('status.js');
    expect(bundleCli().status).toBe(0);
    expect(files()).toEqual(first);
    expect(existsSync(path.join(copy, 'dist/cli-entries'))).toBe(false);

    const fake = path.join(dir, 'esbuild-that-cannot-run');
    writeFileSync(fake, '#!/bin/sh\necho "this CPU cannot run this binary" >&2\nexit 132\n', { mode: 0o755 });
    const r = bundleCli({ ...process.env, ESBUILD_BINARY_PATH: fake });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^bundle-cli: esbuild cannot run here \(.+\): no bundles; the commands start from dist\/src$/m);
    expect(existsSync(path.join(copy, 'dist/cli'))).toBe(false);
    const v = spawnSync(process.execPath, [path.join(copy, 'bin/pulsa-bridge'), '--version'], { encoding: 'utf8' });
    expect(v.stdout.trim()).toBe(JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).version);
  });

  it('run loads the daemon, and with an invalid config exits 78 with every problem on stderr', async () => {
    const config = path.join(dir, 'config.json');
    await writeFile(config, JSON.stringify({ webhook: { baseUrl: 'not a url' }, modems: [] }));
    const r = loadedModules(['run', '--config', config]);
    expect(r.code, r.stderr).toBe(78);
    expect(sources(r)).toContain('cli/run.js');
    expect(r.stderr).toMatch(/error: invalid config/);
    expect(r.stderr).toMatch(/webhook/);
  });

  it('a usage error of a command reads as before: exit 2, the option named', () => {
    for (const word of ['run', 'status']) {
      const bad = loadedModules([word, '--bogus']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/unknown option '--bogus'/);
    }
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
