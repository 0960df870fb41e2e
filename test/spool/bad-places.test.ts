/**
 * "Bad places": the compiled daemon (`bin/pulsa-bridge run`, npm test builds dist/ first) with a
 * spool where it cannot be, and the permissions of a spool it can create. A spool under /proc ends with the reason and exit
 * code 1 (Node's recursive mkdir would spin there for ever, print nothing and ignore SIGTERM).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { chmod, mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { silentLogger } from '../../src/log.js';
import { Spool } from '../../src/spool/store.js';
import { makeDirs } from '../../src/spool/files.js';
import { tempDir } from '../support/tmp.js';
import { writeConfig } from '../support/config.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const bin = path.join(root, 'bin/pulsa-bridge');

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/**
 * Runs the daemon on `spoolDir`; SIGKILLs it after `killAfterMs` (then `signal` is SIGKILL: the test fails on it).
 * `termWhen`: send SIGTERM once the output contains this text.
 */
async function runDaemon(
  spoolDir: string,
  killAfterMs: number,
  termWhen?: string,
): Promise<{ code: number | null; signal: string | null; output: string }> {
  const { dir, cleanup } = await tempDir('bad-place');
  cleanups.push(cleanup);
  const file = await writeConfig(
    dir,
    {
      webhook: { url: 'http://127.0.0.1:9/webhook' },
      spool: { dir: spoolDir, fsync: false },
      modems: [{ name: 'tsel-1', port: 'virtual:tsel-1', senders: ['858'] }],
      log: { level: 'info', pretty: false },
      shutdownGraceSec: 0,
    },
    { defaults: false },
  );
  const child = spawn(process.execPath, [bin, 'run', '-c', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let termed = false;
  child.stdout.on('data', (c: Buffer) => {
    output += c.toString('utf8');
    if (termWhen && !termed && output.includes(termWhen)) {
      termed = true;
      child.kill('SIGTERM');
    }
  });
  child.stderr.on('data', (c: Buffer) => (output += c.toString('utf8')));
  const killer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
  const { code, signal } = await new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.on('exit', (c, s) => resolve({ code: c, signal: s })),
  );
  clearTimeout(killer);
  return { code, signal, output };
}

describe('a spool where the daemon cannot create it', () => {
  it.each(['/proc/pulsa-bridge-test/spool', '/proc/self/pulsa-spool'])(
    '%s: exit 1 with the reason and a hint, no spinning',
    async (spoolDir) => {
      const r = await runDaemon(spoolDir, 20_000);
      expect(r.signal).toBeNull(); // not killed by the test: it ended by itself
      expect(r.code).toBe(1);
      expect(r.output).toContain(`cannot create the spool directory`);
      expect(r.output).toMatch(/hint: spool\.dir must be on a normal writable filesystem/);
    },
    30_000,
  );

  it('under a regular file: exit 1, naming the problem', async () => {
    const { dir, cleanup } = await tempDir('bad-place-file');
    cleanups.push(cleanup);
    await writeFile(path.join(dir, 'plain'), 'not a directory');
    const r = await runDaemon(path.join(dir, 'plain', 'spool'), 20_000);
    expect(r.signal).toBeNull();
    expect(r.code).toBe(1);
    expect(r.output).toMatch(/cannot create the spool directory .*plain\/spool: .*not a directory/i);
  }, 30_000);
});

describe('odd files in the spool', () => {
  it('a FIFO among the records is moved aside unread: start-up completes and SIGTERM stops it (exit 0)', async () => {
    const { dir, cleanup } = await tempDir('bad-place-fifo');
    cleanups.push(cleanup);
    const spoolDir = path.join(dir, 'spool');
    await mkdir(path.join(spoolDir, 'pending'), { recursive: true });
    expect(spawnSync('mkfifo', [path.join(spoolDir, 'pending', 'x.json')]).status).toBe(0);
    const r = await runDaemon(spoolDir, 20_000, 'pulsa-bridge 0');
    expect(r.output).toContain(
      'spool: pending/x.json is not a regular file; moved aside unread to foreign/pending.x.json',
    );
    expect(r.signal).toBeNull();
    expect(r.code).toBe(0);
  }, 30_000);

  it('a start-up that never finishes (spool.lock is a FIFO): SIGTERM still ends the process, saying why', async () => {
    const { dir, cleanup } = await tempDir('bad-place-lockfifo');
    cleanups.push(cleanup);
    const spoolDir = path.join(dir, 'spool');
    await mkdir(spoolDir, { recursive: true });
    expect(spawnSync('mkfifo', [path.join(spoolDir, 'spool.lock')]).status).toBe(0);
    const r = await runDaemon(spoolDir, 25_000, 'permissions for others removed');
    expect(r.output).toContain('SIGTERM during start-up');
    expect(r.output).toContain('SIGTERM: start-up did not finish within 10 s');
    expect(r.signal).toBe('SIGTERM'); // ended by the signal's default action, not by the test's SIGKILL
  }, 35_000);
});

describe('makeDirs', () => {
  it('creates every missing level and accepts existing directories', async () => {
    const { dir, cleanup } = await tempDir('makedirs');
    cleanups.push(cleanup);
    const created = await makeDirs(path.join(dir, 'a', 'b', 'c'));
    expect(created).toEqual([path.join(dir, 'a'), path.join(dir, 'a', 'b'), path.join(dir, 'a', 'b', 'c')]);
    expect(await makeDirs(path.join(dir, 'a', 'b'))).toEqual([]);
  });

  it('fails at once under /proc instead of looping', async () => {
    await expect(makeDirs('/proc/pulsa-bridge-test/x/y')).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('spool permissions: nothing for other users, whatever spool.dir is', () => {
  it('a new spool (umask 0) and an existing world-readable one end up closed to others; a world-writable one is refused, untouched', async () => {
    const { dir, cleanup } = await tempDir('spool-perms');
    cleanups.push(cleanup);
    const fresh = path.join(dir, 'fresh', 'spool');
    const old = process.umask(0);
    let spool: Spool;
    try {
      spool = await Spool.open(fresh, { logger: silentLogger(), fsync: false });
    } finally {
      process.umask(old);
    }
    await spool.close();
    for (const d of [fresh, path.join(fresh, 'pending'), path.join(fresh, 'sent'), path.join(fresh, 'tmp')]) {
      expect(((await stat(d)).mode & 0o007).toString(8), d).toBe('0');
    }

    const open = path.join(dir, 'open');
    await mkdir(path.join(open, 'pending'), { recursive: true });
    await chmod(open, 0o755);
    await chmod(path.join(open, 'pending'), 0o755);
    const s2 = await Spool.open(open, { logger: silentLogger(), fsync: false });
    const lockMode = (await stat(path.join(open, 'spool.lock'))).mode;
    await s2.close();
    expect(((await stat(open)).mode & 0o777).toString(8)).toBe('750');
    expect(((await stat(path.join(open, 'pending'))).mode & 0o007).toString(8)).toBe('0');
    expect((lockMode & 0o007).toString(8)).toBe('0');

    // Writable by others: someone else may be using it (a shared directory given by mistake): refused, not chmodded.
    const shared = path.join(dir, 'shared');
    await mkdir(shared);
    await chmod(shared, 0o1777);
    await writeFile(path.join(shared, 'someone-elses.txt'), 'x');
    // ... and the hint never tells anyone to change a shared (sticky) directory: it names a private one instead.
    const refused = await Spool.open(shared, { logger: silentLogger(), fsync: false }).then(
      () => undefined,
      (e: unknown) => e as { code: string; hint: string },
    );
    expect(refused).toMatchObject({
      code: 'UNSAFE_PATH',
      hint: expect.stringContaining('set spool.dir to a private directory of the service user'),
    });
    expect(refused!.hint).not.toContain('chmod');
    expect(((await stat(shared)).mode & 0o7777).toString(8)).toBe('1777');
    expect(await readdir(shared)).toEqual(['someone-elses.txt']);
  });
});
