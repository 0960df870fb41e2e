import { describe, it, expect, beforeEach, afterEach, vi } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, promises as fsp, readFileSync } from 'node:fs';
import { copyFile, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Spool } from '../../src/spool/store.js';
import { SpoolError } from '../../src/errors.js';
import { serializeRecord } from '../../src/spool/codec.js';
import { parseProcStartTime, readLockOwner } from '../../src/spool/lock.js';
import type { SmsRecord } from '../../src/spool/types.js';
import { silentLogger } from '../../src/log.js';
import { makeSms } from './helpers.js';
import { captureLogger } from '../support/logger.js';
import { tempDir } from '../support/tmp.js';

let dir: string;
let cleanup: () => Promise<void>;
const toClose: Spool[] = [];

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('lock'));
});
afterEach(async () => {
  vi.restoreAllMocks();
  for (const s of toClose.splice(0)) await s.close();
  await cleanup();
});

type Opts = Partial<Parameters<typeof Spool.open>[1]>;
async function owner(opts: Opts = {}): Promise<Spool> {
  const s = await Spool.open(dir, { logger: silentLogger(), fsync: false, ...opts });
  toClose.push(s);
  return s;
}
/** A `queue` client whose SIGHUPs are recorded instead of sent. */
async function client(opts: Opts = {}): Promise<{ spool: Spool; signals: Array<[number, string]> }> {
  const signals: Array<[number, string]> = [];
  const spool = await Spool.open(dir, {
    logger: silentLogger(),
    role: 'client',
    signal: (pid, sig) => void signals.push([pid, sig]),
    ...opts,
  });
  return { spool, signals };
}
const lockFile = () => path.join(dir, 'spool.lock');
const files = async (area: string) => (await readdir(path.join(dir, area))).sort();
const bootId = async () => (await readFile('/proc/sys/kernel/random/boot_id', 'utf8').catch(() => '')).trim();

/** A pid that belonged to a process that has exited (spawned and reaped here). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', '']);
  expect(r.pid).toBeGreaterThan(0);
  return r.pid!;
}

describe('owner lock (spool.lock)', () => {
  it('a second owner is refused with the pid of the first in the message; after close() the directory is free', async () => {
    const first = await owner();
    const lock = JSON.parse(await readFile(lockFile(), 'utf8')) as { pid: number; startedAt: string };
    expect(lock.pid).toBe(process.pid);
    expect(Number.isNaN(Date.parse(lock.startedAt))).toBe(false);

    const err = await Spool.open(dir, { logger: silentLogger() }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SpoolError);
    expect(err).toMatchObject({
      reason: 'locked',
      message: `spool ${dir} is in use by process ${process.pid} (is pulsa-bridge already running?)`,
    });
    expect((err as SpoolError).hint).toContain('spool.lock');

    await first.close();
    await expect(stat(lockFile())).rejects.toMatchObject({ code: 'ENOENT' });
    await first.close(); // idempotent
    await owner();
  });

  it('refuses while another live process (here: our parent) holds the lock', async () => {
    const boot = await bootId();
    await writeFile(
      lockFile(),
      JSON.stringify({ pid: process.ppid, startedAt: '2024-01-01T00:00:00.000Z', ...(boot ? { bootId: boot } : {}) }),
    );
    await expect(owner()).rejects.toThrow(`is in use by process ${process.ppid}`);
    expect(await readLockOwner(dir)).toEqual({ pid: process.ppid, startedAt: '2024-01-01T00:00:00.000Z' });
  });

  it.each<[string, () => Promise<string>, string]>([
    ['a dead pid', async () => JSON.stringify({ pid: deadPid(), startedAt: '2024-01-01T00:00:00Z' }), 'is not running'],
    ['garbage', async () => 'not json at all', 'unreadable lock file'],
    ['an empty file', async () => '', 'unreadable lock file'],
    [
      'pid 0 (would signal our own process group)',
      async () => JSON.stringify({ pid: 0, startedAt: 'x' }),
      'unreadable lock file',
    ],
    [
      'our own pid, from before a reboot (not held by this process)',
      async () => JSON.stringify({ pid: process.pid, startedAt: '2024-01-01T00:00:00Z' }),
      'earlier process with this pid',
    ],
  ])('replaces a stale lock holding %s, with a warning', async (_name, content, reason) => {
    await writeFile(lockFile(), await content());
    expect(await readLockOwner(dir)).toBeUndefined();
    const { logger, lines } = captureLogger();
    const spool = await owner({ logger });
    expect(JSON.parse(await readFile(lockFile(), 'utf8'))).toMatchObject({ pid: process.pid });
    const warn = lines.find((l) => l.level === 40 && l.msg.includes('stale lock'));
    expect(warn?.msg).toContain(reason);
    expect((await readLockOwner(dir))?.pid).toBe(process.pid);
    await spool.close();
    expect(await readLockOwner(dir)).toBeUndefined();
  });

  it('a lock written under another boot is stale even when its pid is alive now', async () => {
    if (!(await bootId())) return; // no boot id on this system: liveness alone decides (covered above)
    await writeFile(
      lockFile(),
      JSON.stringify({
        pid: process.ppid,
        startedAt: '2024-01-01T00:00:00Z',
        bootId: '00000000-0000-0000-0000-000000000000',
      }),
    );
    const { logger, lines } = captureLogger();
    await owner({ logger });
    expect(lines.some((l) => l.msg.includes('before the last reboot'))).toBe(true);
  });

  it('close() waits for writes in flight, then refuses new ones; reads still work', async () => {
    const spool = await owner();
    const write = spool.putPending(makeSms('w1'));
    await spool.close();
    expect(await write).toEqual({ created: true, area: 'pending' });
    await expect(spool.putPending(makeSms('w2'))).rejects.toThrow('is closed');
    expect((await spool.get('w1'))?.area).toBe('pending');
  });
});

describe('owner lock: pid reuse (process start time)', () => {
  it.each<[string, string, string | undefined]>([
    [
      'a plain comm',
      '4242 (node) S 1 4242 4242 0 -1 4194560 5190 0 0 0 12 3 0 0 20 0 11 0 987654 1089495040 12000 18446744073709551615',
      '987654',
    ],
    ['a comm with spaces and ")"', '77 (my) proc (x)) R 1 77 77 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 31337 0 0', '31337'],
    ['a truncated line', '77 (node) R 1 77', undefined],
    ['no comm at all', 'garbage', undefined],
  ])('parseProcStartTime: %s', (_name, line, expected) => {
    expect(parseProcStartTime(line)).toBe(expected);
  });

  const hasProc = existsSync('/proc/self/stat');
  const startOf = async (pid: number) => parseProcStartTime(await readFile(`/proc/${pid}/stat`, 'utf8'))!;

  it.skipIf(!hasProc)("the lock records the owner's start time", async () => {
    await owner();
    expect(JSON.parse(await readFile(lockFile(), 'utf8'))).toMatchObject({
      pid: process.pid,
      procStart: await startOf(process.pid),
    });
  });

  it.skipIf(!hasProc)(
    'a lock whose live pid belongs to a process started at another time is stale: replaced, and never signalled',
    async () => {
      const first = await owner();
      await first.putPending(makeSms('d1'));
      await first.markDead('d1', 'HTTP 400: x');
      await first.close(); // the daemon crashed, say; its pid now belongs to another process (here: our parent)
      const boot = await bootId();
      const reused = {
        pid: process.ppid,
        startedAt: '2024-01-01T00:00:00Z',
        ...(boot ? { bootId: boot } : {}),
        procStart: String(Number(await startOf(process.ppid)) + 1),
      };
      await writeFile(lockFile(), JSON.stringify(reused));

      expect(await readLockOwner(dir)).toBeUndefined();
      const { spool: c, signals } = await client();
      await c.retry('d1');
      expect(signals).toEqual([]); // `queue retry` run as root must not SIGHUP an unrelated process

      const { logger, lines } = captureLogger();
      await owner({ logger }); // under Restart=always the daemon starts instead of refusing forever
      expect(lines.find((l) => l.level === 40 && l.msg.includes('stale lock'))?.msg).toContain('pid reused');
      expect(JSON.parse(await readFile(lockFile(), 'utf8'))).toMatchObject({ pid: process.pid });
    },
  );

  it.skipIf(!hasProc)(
    'a lock whose pid is alive and started at the recorded time is live: refused, and signalled',
    async () => {
      const boot = await bootId();
      await writeFile(
        lockFile(),
        JSON.stringify({
          pid: process.ppid,
          startedAt: '2024-01-01T00:00:00Z',
          ...(boot ? { bootId: boot } : {}),
          procStart: await startOf(process.ppid),
        }),
      );
      await expect(owner()).rejects.toThrow(`is in use by process ${process.ppid}`);
      expect(await readLockOwner(dir)).toEqual({ pid: process.ppid, startedAt: '2024-01-01T00:00:00Z' });
    },
  );
});

describe('owner lock: two starters over the same stale lock', () => {
  it('exactly one of them owns the spool, even when the other acts between our judging and our taking over', async () => {
    const stale = JSON.stringify({ pid: deadPid(), startedAt: '2024-01-01T00:00:00Z' });
    await writeFile(lockFile(), stale);
    const realReadFile = fsp.readFile.bind(fsp) as (file: string, enc: string) => Promise<string>;
    const realUnlink = fsp.unlink.bind(fsp);
    const realRename = fsp.rename.bind(fsp);
    // Both starters read the stale lock before either acts on it...
    const readers: Array<() => void> = [];
    vi.spyOn(fsp, 'readFile').mockImplementation((async (file: string, enc: string) => {
      const text = await realReadFile(file, enc);
      if (file === lockFile() && readers.length < 2) {
        await new Promise<void>((resolve) => {
          readers.push(resolve);
          if (readers.length === 2) for (const r of readers) r();
        });
      }
      return text;
    }) as unknown as typeof fsp.readFile);
    // ...and the second one to remove or move `spool.lock` does it only after the first has put its own lock there.
    let removals = 0;
    const lockNow = () => (existsSync(lockFile()) ? readFileSync(lockFile(), 'utf8') : undefined);
    const worstOrder = async () => {
      removals += 1;
      if (removals !== 2) return;
      const started = performance.now();
      for (
        let now = lockNow();
        (now === undefined || now === stale) && performance.now() - started < 2000;
        now = lockNow()
      ) {
        await new Promise((r) => setTimeout(r, 1));
      }
    };
    vi.spyOn(fsp, 'unlink').mockImplementation(async (file) => {
      if (file === lockFile()) await worstOrder();
      return realUnlink(file);
    });
    vi.spyOn(fsp, 'rename').mockImplementation(async (from, to) => {
      if (from === lockFile()) await worstOrder();
      return realRename(from, to);
    });

    const { logger, lines } = captureLogger();
    const results = await Promise.allSettled([
      Spool.open(dir, { logger, fsync: false }),
      Spool.open(dir, { logger, fsync: false }),
    ]);
    for (const r of results) if (r.status === 'fulfilled') toClose.push(r.value);
    vi.restoreAllMocks();
    expect(removals).toBe(2); // both starters judged the lock stale and acted on it
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toMatchObject({
      reason: 'locked',
      message: expect.stringContaining(`in use by process ${process.pid}`),
    });
    expect(JSON.parse(await readFile(lockFile(), 'utf8'))).toMatchObject({ pid: process.pid });
    expect((await readdir(dir)).filter((f) => f.startsWith('spool.lock'))).toEqual(['spool.lock']); // nothing left aside
    expect(lines.filter((l) => l.msg.includes('stale lock'))).toHaveLength(1);
    expect(lines.some((l) => l.msg.includes('has been put back'))).toBe(true); // the loser moved the winner's lock and restored it
  });
});

describe('client role (the queue CLI while the daemon runs)', () => {
  it('takes no lock and repairs nothing: tmp files, duplicates and unreadable files stay as they are', async () => {
    const o = await owner();
    await o.putPending(makeSms('dup1'));
    await copyFile(path.join(dir, 'pending', 'dup1.json'), path.join(dir, 'saved.json'));
    await o.markDead('dup1', 'HTTP 400: x', 400);
    await copyFile(path.join(dir, 'saved.json'), path.join(dir, 'pending', 'dup1.json')); // a move "in progress"
    const halfWritten = path.join(dir, 'tmp', `m9.${process.pid}.7.abcd.tmp`);
    await writeFile(halfWritten, serializeRecord(makeSms('m9')).slice(0, 50)); // the daemon is writing this right now
    await writeFile(path.join(dir, 'dead', 'junk.json'), '{"v":1');

    const { spool } = await client();
    expect(await files('tmp')).toEqual([path.basename(halfWritten)]);
    expect(await files('pending')).toEqual(['dup1.json']);
    expect(await files('dead')).toEqual(['dup1.json', 'junk.json']);
    expect(await files('quarantine')).toEqual([]);
    expect((await spool.get('dup1'))?.area).toBe('dead'); // reported in its later state
    expect(await spool.stats()).toMatchObject({ pending: 0, dead: 1, quarantine: 0 });
    expect(JSON.parse(await readFile(lockFile(), 'utf8'))).toMatchObject({ pid: process.pid }); // still the owner's
  });

  it('opening a directory that does not exist fails clearly and creates nothing', async () => {
    const missing = path.join(dir, 'nope');
    await expect(Spool.open(missing, { logger: silentLogger(), role: 'client' })).rejects.toMatchObject({
      reason: 'not-found',
      message: `no spool directory at ${missing}`,
    });
    await expect(stat(missing)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('client retry of a dead record: SIGHUP to the owner; owner.rescan() picks it up and emits "pending"', async () => {
    const o = await owner();
    await o.putPending(makeSms('d1'));
    await o.markDead('d1', 'HTTP 422: rejected', 422);
    const woke: string[] = [];
    o.on('pending', (id: string) => woke.push(id));

    const { spool, signals } = await client();
    await spool.retry('d1');
    expect(signals).toEqual([[process.pid, 'SIGHUP']]);
    expect(await files('dead')).toEqual([]);
    expect((await o.stats()).pending).toBe(0); // the owner does not know yet

    expect(await o.rescan()).toEqual({ added: 1, removed: 1 }); // pending/d1 appeared, dead/d1 went
    expect(woke).toEqual(['d1']);
    expect(await o.get('d1')).toMatchObject({ area: 'pending', record: { attempts: 0 } });
    await o.markDelivered('d1', { status: 200, at: new Date('2024-01-01T00:00:00Z') });
    expect(await files('sent')).toEqual(['d1.json']);
    expect(await o.rescan()).toEqual({ added: 0, removed: 0 });
    expect(woke).toEqual(['d1']);
  });

  it.skipIf(typeof process.getuid !== 'function' || process.getuid() !== 0)(
    'a client run as root writes files owned like the spool directory, so the service user can still read them',
    async () => {
      const o = await owner();
      await o.putPending(makeSms('r1'));
      await o.markDead('r1', 'HTTP 422: rejected', 422);
      const { chown } = await import('node:fs/promises');
      // As an install has it: the spool and its key are the service user's.
      for (const d of [dir, path.join(dir, 'pending'), path.join(dir, 'tmp'), path.join(dir, 'spool.key')])
        await chown(d, 4321, 4321);
      const { spool } = await client();
      await spool.retry('r1');
      const st = await stat(path.join(dir, 'pending', 'r1.json'));
      expect([st.uid, st.gid]).toEqual([4321, 4321]);
    },
  );

  it('client retry of a waiting pending record makes it due now; the owner is woken for it and bases the next attempt on it', async () => {
    const o = await owner();
    await o.putPending(makeSms('w1'));
    await o.markRetry('w1', { error: 'HTTP 503: busy', status: 503, nextAttemptAt: new Date('2099-01-01T00:00:00Z') });
    const woke: string[] = [];
    o.on('pending', (id: string) => woke.push(id));
    const { spool } = await client();
    await spool.retry('w1');
    expect(await o.rescan()).toEqual({ added: 0, removed: 0 });
    expect(woke).toEqual(['w1']);
    const rec = (await o.get('w1'))!.record as SmsRecord;
    expect(rec.nextAttemptAt).toBeUndefined();
    await o.markRetry('w1', { error: 'HTTP 503: busy', nextAttemptAt: new Date('2099-01-01T00:00:00Z') });
    expect(((await o.get('w1'))!.record as SmsRecord).attempts).toBe(1); // 0 after the operator's retry, +1
  });

  it('a record the client dropped is not written back by the owner: mark* fail with not-found', async () => {
    const o = await owner();
    for (const id of ['p1', 'p2', 'p3']) await o.putPending(makeSms(id));
    const { spool, signals } = await client();
    for (const id of ['p1', 'p2', 'p3']) expect(await spool.drop(id)).toEqual({ area: 'pending', id });
    expect(signals).toHaveLength(3);

    await expect(o.markDelivered('p1', { status: 200, at: new Date() })).rejects.toMatchObject({ reason: 'not-found' });
    await expect(o.markRetry('p2', { error: 'x', nextAttemptAt: new Date() })).rejects.toMatchObject({
      reason: 'not-found',
    });
    await expect(o.markDead('p3', 'x')).rejects.toMatchObject({ reason: 'not-found' });
    for (const area of ['pending', 'sent', 'dead']) expect(await files(area)).toEqual([]);
    expect((await o.stats()).pending).toBe(0);
  });

  it('the owner forgets dropped records on rescan and counts them as removed', async () => {
    const o = await owner();
    await o.putPending(makeSms('p1'));
    await o.putIgnored(makeSms('i1'));
    const { spool } = await client();
    await spool.drop('p1');
    await spool.drop('i1');
    expect(await o.rescan()).toEqual({ added: 0, removed: 2 });
    expect(await o.list('pending')).toEqual([]);
    expect(await o.stats()).toMatchObject({ pending: 0, ignored: 0 });
  });

  it('retryAllDead signals the owner once, and only when something moved; no owner -> no signal', async () => {
    const o = await owner();
    for (const id of ['x1', 'x2']) {
      await o.putPending(makeSms(id));
      await o.markDead(id, 'HTTP 400: no');
    }
    const c1 = await client();
    expect(await c1.spool.retryAllDead()).toBe(2);
    expect(c1.signals).toEqual([[process.pid, 'SIGHUP']]);
    expect(await c1.spool.retryAllDead()).toBe(0);
    expect(c1.signals).toHaveLength(1);

    await o.close();
    const c2 = await client();
    await c2.spool.retry('x1');
    expect(c2.signals).toEqual([]);
  });

  it('an operator command on a record the daemon moved since the client opened sees the disk, not its stale index', async () => {
    const o = await owner();
    await o.putPending(makeSms('s1'));
    const { spool } = await client();
    await o.markDelivered('s1', { status: 200, at: new Date() }); // delivered after the CLI read the spool
    await expect(spool.drop('s1')).rejects.toMatchObject({ reason: 'wrong-area' });
    expect(await files('sent')).toEqual(['s1.json']);
  });

  it("with the default signaller, a client in the owner's own process without a SIGHUP handler does not kill it", async () => {
    const o = await owner();
    await o.putPending(makeSms('d1'));
    await o.markDead('d1', 'HTTP 400: x');
    expect(process.listenerCount('SIGHUP')).toBe(0);
    const c = await Spool.open(dir, { logger: silentLogger(), role: 'client' });
    await c.retry('d1');
    expect(await files('pending')).toEqual(['d1.json']);
  });

  it('writes issued while a rescan reads the disk wait for it: none of them is lost from the index', async () => {
    const o = await owner();
    for (let i = 0; i < 100; i += 1) await o.putIgnored(makeSms(`old${i}`)); // something for the scan to read
    const scan = o.rescan();
    await new Promise((r) => setImmediate(r)); // the scan is now reading the areas
    const ids = Array.from({ length: 20 }, (_, i) => `c${i}`);
    const writes = ids.map((id) => o.putPending(makeSms(id)));
    await Promise.all([scan, ...writes]);
    expect((await o.list('pending')).map((r) => r.id).sort()).toEqual([...ids].sort());
    expect(await o.rescan()).toEqual({ added: 0, removed: 0 });
  });
});
