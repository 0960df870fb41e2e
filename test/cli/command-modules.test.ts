import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { COMMANDS, createProgram, type Io } from '../../src/cli.js';
import { writeConfig } from '../support/config.js';
import { DaemonProcess, killAll } from '../support/daemon.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * Which modules a command loads through bin/pulsa-bridge (behaviour, not timing: bench/cli-startup.ts prints the
 * times). A loader hook records every module loaded (its path under the checkout); returns them and the exit code. The hook appends to a file synchronously: hooks
 * registered with register() run on their own thread, and what that thread writes to stderr can be lost when the
 * command ends with process.exit() (`--version` does; seen in CI runs on Node 22 and 24).
 */
function loadedModules(args: string[]): { modules: string[]; code: number | null; stdout: string; stderr: string } {
  const list = path.join(dir, `loaded-${++runs}.txt`);
  writeFileSync(list, '');
  const prefix = pathToFileURL(root).href + '/';
  const hook = `data:text/javascript,${encodeURIComponent(
    `import { appendFileSync } from 'node:fs'; export async function load(url, ctx, next) { appendFileSync(${JSON.stringify(list)}, (url.startsWith(${JSON.stringify(prefix)}) ? url.slice(${prefix.length}) : url) + '\\n'); return next(url, ctx); }`,
  )}`;
  const register = `data:text/javascript,${encodeURIComponent(`import { register } from 'node:module'; register(${JSON.stringify(hook)});`)}`;
  const r = spawnSync(process.execPath, ['--import', register, path.join(root, 'bin/pulsa-bridge'), ...args], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  const modules = readFileSync(list, 'utf8').split('\n').filter(Boolean);
  return { modules, code: r.status, stdout: r.stdout, stderr: r.stderr };
}
let runs = 0;

let dir: string;
beforeEach(async () => {
  expect(existsSync(path.join(root, 'dist/src/cli.js')), 'dist/ is missing: run `npm run build` (npm test does)').toBe(
    true,
  );
  dir = await mkdtemp(path.join(tmpdir(), 'lazy-run-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A package's code loaded (its path under node_modules). */
const packageLoaded = (r: { modules: string[] }, pkg: string) =>
  r.modules.some((m) => m.startsWith(`node_modules/${pkg}/`) || m.includes(`/node_modules/${pkg}/`));

/** Our modules a run loaded, as paths under dist/src. */
const sources = (r: { modules: string[] }): string[] =>
  r.modules.filter((m) => m.startsWith('dist/src/')).map((m) => m.slice('dist/src/'.length));

describe('each command loads what it needs', () => {
  it('--version, --help and an unknown command load no command module', () => {
    {
      for (const [args, code] of [
        [['--version'], 0],
        [['--help'], 0],
        [['help'], 0],
        [['bogus'], 2],
      ] as const) {
        const r = loadedModules([...args]);
        const what = args.join(' ');
        expect(r.code, `${what}: ${r.stderr}`).toBe(code);
        expect(sources(r), what).toContain('cli.js');
        expect(
          sources(r).filter(
            (m) =>
              m.startsWith('cli/') &&
              m !== 'cli/io.js' &&
              m !== 'cli/lifecycle.js' &&
              m !== 'cli/usage-error.js' &&
              m !== 'cli/command-list.js',
          ),
          what,
        ).toEqual([]);
        expect(sources(r), what).not.toContain('daemon.js');
      }
    }
  });

  it('status, queue and config check load neither the daemon, the serial addon nor pino; status and queue not the full config', async () => {
    const config = await writeConfig(
      dir,
      {
        webhook: { url: 'http://127.0.0.1:9/hook' },
        spool: { dir: path.join(dir, 'spool') },
        modems: [{ name: 'm', port: '/dev/null', senders: ['858'] }],
      },
      { defaults: false },
    );
    await mkdir(path.join(dir, 'spool'));
    {
      for (const args of [
        ['status', '--config', config],
        ['queue', 'ls', '--config', config],
        ['config', 'check', '--config', config],
      ]) {
        const r = loadedModules(args);
        const what = args.join(' ');
        expect(r.code === 0 || r.code === 3, `${what}: exit ${r.code} ${r.stderr}`).toBe(true);
        expect(sources(r), what).toContain(`cli/${args[0] === 'config' ? 'config-check' : args[0]}.js`);
        expect(sources(r), what).not.toContain('daemon.js');
        // nor the logger: they print what they find (config init's port probe logs nowhere either)
        for (const pkg of ['@serialport/bindings-cpp', '@serialport/stream', 'serialport', 'pino'])
          expect(packageLoaded(r, pkg), `${what} loads ${pkg}`).toBe(false);
        // status and queue read the spool section alone (config-spool.js): not the whole config, nor the balance command
        if (args[0] !== 'config') {
          expect(sources(r), what).toContain('config-spool.js');
          for (const m of ['config.js', 'cli/balance.js', 'balance/watch.js'])
            expect(sources(r), `${what} loads ${m}`).not.toContain(m);
        }
      }
    }
    // the check sees the addon where it is loaded: `ports --probe` opens ports through it
    expect(packageLoaded(loadedModules(['ports', '--probe', '--json']), '@serialport/bindings-cpp')).toBe(true);
  });

  it('ports lists through udev alone: not the serial addon or serialport (its parsers), not the modem stack, not pino', () => {
    const r = loadedModules(['ports', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(sources(r)).toContain('serial/ports.js');
    expect(sources(r)).toContain('serial/udev-ports.js');
    for (const pkg of ['@serialport/bindings-cpp', 'serialport', '@serialport/stream', 'pino'])
      expect(packageLoaded(r, pkg), `ports --json loads ${pkg}`).toBe(false);
    expect(sources(r)).not.toContain('modem/probe.js');
  });

  it('simulate loads the simulator only when it runs: not for --help, nor for a usage error', () => {
    for (const [args, code, says] of [
      [['simulate', '--help'], 0, /store-in-me,\s+cpin-no-ok/], // the --quirk choices, listed without the simulator
      [['simulate'], 2, /required option '-l, --link <path>'/],
      [['simulate', '--link', path.join(dir, 'modem'), '--quirk', 'bogus'], 2, /--quirk.*one of store-in-me/],
    ] as const) {
      const r = loadedModules([...args]);
      const what = args.join(' ');
      expect(r.code, `${what}: ${r.stderr}`).toBe(code);
      expect(code === 0 ? r.stdout : r.stderr, what).toMatch(says);
      expect(sources(r), what).toContain('cli/simulate.js');
      // of the simulator's folder only the module holding the quirk names (its other exports are types)
      expect(
        sources(r).filter((m) => m.startsWith('virtual-modem/')),
        what,
      ).toEqual(['virtual-modem/virtual-modem-types.js']);
    }
  });

  it('the commands answered through the running daemon load neither the whole config, the modem stack, the SMS codec nor the AT terminal', async () => {
    // The daemon has the secret in its environment (as the unit's EnvironmentFile gives it); the operator's shell not.
    const config = await writeConfig(dir, {
      webhook: { url: 'http://127.0.0.1:9/hook', hmacSecret: 'env:PB_TEST_DAEMON_ONLY_SECRET' },
      control: { socket: path.join(dir, 'control.sock') },
      modems: [{ name: 'sim-1', port: 'virtual:sim-1', senders: ['858'], operator: 'telkomsel' }],
    });
    expect(process.env.PB_TEST_DAEMON_ONLY_SECRET).toBeUndefined();
    const daemon = await DaemonProcess.start(config, ['ready: SIMCOM'], 60_000, {
      PB_TEST_DAEMON_ONLY_SECRET: 'known-to-the-daemon-only',
    });
    try {
      for (const args of [
        ['info', '--config', config, '--json', '--verbose'],
        ['at', '--config', config, '--verbose', 'AT'],
        ['ussd', '--config', config, '--verbose', '*888#'],
        ['sms', 'list', '--config', config, '--verbose'],
        ['balance', '--config', config, '--json'],
        ['canary', 'ls', '--config', config],
      ]) {
        const r = loadedModules(args);
        const what = args.join(' ');
        expect(r.code, `${what}: ${r.stderr}`).toBe(0);
        if (args.includes('--verbose')) expect(r.stderr, what).toMatch(/^path: the running daemon/);
        if (args[0] === 'balance') expect(JSON.parse(r.stdout)).toMatchObject({ modem: 'sim-1', code: '*888#' });
        const ours = sources(r);
        for (const m of ['config.js', 'cli/direct-target.js', 'ops/actions.js', 'cli/terminal.js', 'daemon.js'])
          expect(ours, `${what} loads ${m}`).not.toContain(m);
        expect(
          // ussd prints status labels (modem/ussd-status.js) and the reply's DCS (sms/dcs.js): both PURE tables
          ours.filter(
            (m) =>
              (m.startsWith('sms/') && m !== 'sms/dcs.js') ||
              (m.startsWith('modem/') && !['modem/types.js', 'modem/ussd-status.js'].includes(m)),
          ),
          what,
        ).toEqual([]);
        expect(packageLoaded(r, '@serialport/bindings-cpp'), `${what} loads the serial addon`).toBe(false);
        // the daemon reads who connected; a client has no use for koffi
        expect(packageLoaded(r, 'koffi'), `${what} loads koffi`).toBe(false);
      }
    } finally {
      await killAll();
    }
    // No daemon: this process would open the port, so the whole config counts, the secret it lacks included.
    const direct = loadedModules(['info', '--config', config, '--json']);
    expect(direct.code).toBe(1);
    expect(direct.stderr).toMatch(/webhook\.hmacSecret: environment variable PB_TEST_DAEMON_ONLY_SECRET is not set/);
    expect(sources(direct)).toContain('config.js');
  }, 120_000);

  // a process per command and form: a longer bound than one test's default
  it('every command answers --help, both ways, loading its own module and not the daemon', { timeout: 90_000 }, () => {
    for (const entry of COMMANDS) {
      for (const [word] of entry.commands) {
        for (const args of [
          [word, '--help'],
          ['help', word],
        ]) {
          const r = loadedModules(args);
          const what = args.join(' ');
          expect(r.code, `${what}: ${r.stderr}`).toBe(0);
          expect(r.stdout, what).toMatch(new RegExp(`^Usage: pulsa-bridge ${word}`));
          expect(sources(r), what).toContain(`cli/${entry.module}.js`);
          if (word !== 'run') expect(sources(r), what).not.toContain('daemon.js');
        }
      }
    }
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
  it('the list names every command the modules build, in order, with the description each command shows', async () => {
    const io = { out: () => {}, err: () => {} } as unknown as Io;
    const full = await createProgram(io);
    const real = full.commands.map((c) => [c.name(), c.description()]);
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
