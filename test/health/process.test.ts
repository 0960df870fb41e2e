/**
 * The daemon process and what its health rests on: the systemd watchdog ping (a stand-in `systemd-notify` on PATH
 * records every notification) stops while the spool cannot be written and resumes when it can; and libuv's thread
 * pool is sized so that a hung serial drain per modem cannot stall the spool (FIFO opens stand in for the drains).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { silentLogger } from '../../src/log.js';
import { Spool } from '../../src/spool/store.js';
import { bin, distBuilt, killAll } from '../support/daemon.js';
import { until } from '../support/until.js';
import { reply, startServer, type TestServer } from '../forward/server.js';
import { makeSms } from '../spool/helpers.js';
import { writeConfig } from '../support/config.js';
import { tempDir } from '../support/tmp.js';

const here = path.dirname(fileURLToPath(import.meta.url));

/** chattr +i works here (root on a file system with attributes): the only way to make a directory unwritable to root. */
function canMakeImmutable(): boolean {
  const probe = path.join(process.env.TMPDIR ?? '/tmp', `pulsa-chattr-${process.pid}`);
  try {
    execFileSync('mkdir', ['-p', probe]);
    execFileSync('chattr', ['+i', probe], { stdio: 'ignore' });
    execFileSync('chattr', ['-i', probe], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    spawnSync('rmdir', [probe]);
  }
}
const immutable = canMakeImmutable();

let dir: string;
let cleanup: () => Promise<void>;
let server: TestServer | undefined;
const unlocks: string[] = [];

beforeEach(async () => {
  expect(distBuilt(), 'dist/ is missing: run `npm run build` (npm test does)').toBe(true);
  ({ dir, cleanup } = await tempDir('health-process'));
});

afterEach(async () => {
  for (const d of unlocks.splice(0)) spawnSync('chattr', ['-i', d]);
  await killAll();
  await server?.close();
  server = undefined;
  await cleanup();
});

describe('the watchdog ping depends on progress', () => {
  it.skipIf(!immutable)(
    'is withheld while the spool cannot be written, and resumes once it can',
    async () => {
      server = await startServer([reply(200)]);
      const fakeBin = path.join(dir, 'bin');
      await mkdir(fakeBin);
      const pings = path.join(dir, 'notifications');
      await writeFile(pings, '');
      await writeFile(path.join(fakeBin, 'systemd-notify'), `#!/bin/sh\necho "$@" >> '${pings}'\n`);
      await chmod(path.join(fakeBin, 'systemd-notify'), 0o755);
      const config = await writeConfig(dir, {
        webhook: { url: server.url },
        modems: [{ name: 'tsel-1', port: 'virtual:tsel-1', senders: ['858'] }],
      });
      const child = spawn(process.execPath, [bin, 'run', '--config', config], {
        env: {
          ...process.env,
          NOTIFY_SOCKET: path.join(dir, 'notify.sock'),
          WATCHDOG_USEC: '2000000',
          PATH: `${fakeBin}:${process.env.PATH}`,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
      const exited = new Promise((r) => child.once('exit', r));
      try {
        const count = async () => (await readFile(pings, 'utf8')).split('\n').filter((l) => l === 'WATCHDOG=1').length;
        await until(async () => (await count()) >= 2, 'two watchdog pings', 20_000);

        const spoolDir = path.join(dir, 'spool');
        execFileSync('chattr', ['+i', spoolDir]);
        unlocks.push(spoolDir);
        await until(
          () => out.includes('not live, withholding the watchdog ping'),
          'the daemon to notice the unwritable spool',
          20_000,
        );
        expect(out).toMatch(/spool write probe failed: EPERM/);
        await new Promise((r) => setTimeout(r, 500)); // a systemd-notify spawned just before may still be writing
        const during = await count();
        await new Promise((r) => setTimeout(r, 3000)); // three ping periods
        expect(await count()).toBe(during);

        execFileSync('chattr', ['-i', spoolDir]);
        await until(() => out.includes('liveness restored'), 'liveness to come back', 20_000);
        await until(async () => (await count()) > during, 'the pings to resume', 20_000);
      } finally {
        child.kill('SIGTERM');
        await exited;
      }
    },
    90_000,
  );
});

describe('the thread pool', () => {
  it('one hung serial drain per modem cannot stall the spool: a pending record is still delivered', async () => {
    server = await startServer([reply(200)]);
    // Four modems (simulated), each holding a pool thread forever: with libuv's default of four threads nothing else
    // (spool, status file, forwarder) would ever get one.
    const modems = ['a', 'b', 'c', 'd'].map((n) => ({
      name: `tsel-${n}`,
      port: `virtual:tsel-${n}`,
      senders: ['858'],
    }));
    const fifos = modems.map((m) => path.join(dir, `${m.name}.fifo`));
    for (const f of fifos) execFileSync('mkfifo', [f]);
    const seed = await Spool.open(path.join(dir, 'spool'), { logger: silentLogger(), fsync: false });
    await seed.putPending(makeSms('sms-pool1'));
    await seed.close();
    const config = await writeConfig(dir, { webhook: { url: server.url }, modems });
    const env: NodeJS.ProcessEnv = { ...process.env, BLOCK_FIFOS: fifos.join(':') };
    delete env.UV_THREADPOOL_SIZE;
    const child = spawn(
      process.execPath,
      ['--require', path.join(here, 'fixtures/block-threads.cjs'), bin, 'run', '--config', config],
      { env, stdio: 'ignore' },
    );
    const exited = new Promise((r) => child.once('exit', r));
    try {
      await until(
        () => server!.requests.length === 1,
        'the pending record to be delivered with four pool threads held',
        30_000,
      );
    } finally {
      child.kill('SIGKILL'); // the blocked opens keep threads busy: no clean stop to wait for
      await exited;
    }
  }, 60_000);
});
