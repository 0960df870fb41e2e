/**
 * The spool trusts nobody: the compiled daemon refuses directories others can write, never follows a tmp/ symlink,
 * signs its records with a key of its own (an unsigned or foreign-signed record is quarantined, never POSTed), and
 * moves junk aside without reading it. Real processes, a real spool directory, a real HTTP server.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { chmod, lstat, mkdir, readdir, readFile, rm, stat, symlink, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { silentLogger } from '../../src/log.js';
import { serializeRecord } from '../../src/spool/codec.js';
import { readKey } from '../../src/spool/integrity-key.js';
import { Spool } from '../../src/spool/store.js';
import { DaemonProcess, killAll, runCli } from '../support/daemon.js';
import { reply, startServer, type TestServer } from '../forward/server.js';
import { makeSms } from './helpers.js';
import { captureLogger } from '../support/logger.js';
import { writeConfig } from '../support/config.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await killAll();
  while (cleanups.length) await cleanups.pop()!();
});

async function setup(
  name: string,
  webhookUrl = 'http://127.0.0.1:9/api/v1/convert-pulsa/webhook/sms-gateway',
): Promise<{ dir: string; spoolDir: string; config: string }> {
  const { dir, cleanup } = await tempDir(`trust-${name}`);
  cleanups.push(cleanup);
  const spoolDir = path.join(dir, 'spool');
  const config = await writeConfig(dir, {
    webhook: { url: webhookUrl, hmacSecret: 'production-secret' },
    spool: { dir: spoolDir, fsync: false },
    modems: [{ name: 'tsel-1', port: 'virtual:tsel-1', senders: ['858'] }],
    log: { level: 'info', pretty: false },
    shutdownGraceSec: 0,
  });
  return { dir, spoolDir, config };
}

const started = (config: string): Promise<DaemonProcess> => DaemonProcess.start(config, ' started"', 20_000);

async function stop(d: DaemonProcess): Promise<void> {
  d.child.kill('SIGTERM');
  expect((await d.exit).code).toBe(0);
}

async function server(): Promise<TestServer> {
  const s = await startServer([reply(200, 'ok')]);
  cleanups.push(() => s.close());
  return s;
}

describe('directories the daemon must trust', () => {
  it('a world-writable spool directory is refused at start (exit 78, the fix in one line) and left as it was', async () => {
    const { spoolDir, config } = await setup('world');
    await mkdir(spoolDir);
    await chmod(spoolDir, 0o777);
    await writeFile(path.join(spoolDir, 'someone-elses-file'), 'keep me');
    const r = await runCli(['run', '--config', config]);
    expect(r.code).toBe(78);
    expect(r.err).toContain(`spool.dir ${spoolDir} is writable by group and others (mode 0777)`);
    expect(r.err).toMatch(new RegExp(`\\nhint: chmod go-w ${spoolDir}`));
    expect((await stat(spoolDir)).mode & 0o7777).toBe(0o777); // never chmodded: it may not be ours alone
    expect(await readdir(spoolDir)).toEqual(['someone-elses-file']);
  }, 30_000);

  it('a spool directory of another user, or a symlink to one, is refused; so is a group-writable state directory', async () => {
    const { dir, spoolDir, config } = await setup('owner');
    await mkdir(spoolDir, { mode: 0o750 });
    await (await import('node:fs/promises')).chown(spoolDir, 4321, 4321);
    let r = await runCli(['run', '--config', config]);
    expect(r.code).toBe(78);
    expect(r.err).toContain(`is owned by uid 4321, not by the daemon's user`);

    const real = path.join(dir, 'real-spool');
    await mkdir(real, { mode: 0o750 });
    const linked = path.join(dir, 'linked-spool');
    await symlink(real, linked);
    const cfg = JSON.parse(await readFile(config, 'utf8')) as { spool: { dir: string }; stateDir?: string };
    cfg.spool.dir = linked;
    await writeFile(config, JSON.stringify(cfg));
    r = await runCli(['run', '--config', config]);
    expect(r.code).toBe(78);
    expect(r.err).toContain(`hint: set spool.dir to the real directory ${real}`);

    cfg.spool.dir = real;
    cfg.stateDir = path.join(dir, 'state');
    await mkdir(cfg.stateDir, { mode: 0o770 });
    await chmod(cfg.stateDir, 0o770);
    await writeFile(config, JSON.stringify(cfg));
    r = await runCli(['run', '--config', config]);
    expect(r.code).toBe(78);
    expect(r.err).toContain(`stateDir ${cfg.stateDir} is writable by its group`);
  }, 30_000);

  it('tmp -> elsewhere: the daemon refuses the spool and deletes nothing there', async () => {
    const { dir, spoolDir, config } = await setup('tmplink');
    const elsewhere = path.join(dir, 'elsewhere');
    await mkdir(elsewhere);
    await writeFile(path.join(elsewhere, 'precious.txt'), 'x');
    await writeFile(path.join(elsewhere, 'looks-like-ours.1.1.deadbeef.tmp'), 'x'); // even a name like the daemon's
    await mkdir(spoolDir, { mode: 0o750 });
    await symlink(elsewhere, path.join(spoolDir, 'tmp'));
    const r = await runCli(['run', '--config', config]);
    expect(r.code).toBe(78);
    expect(r.err).toContain('is a symbolic link');
    expect((await readdir(elsewhere)).sort()).toEqual(['looks-like-ours.1.1.deadbeef.tmp', 'precious.txt']);
  }, 30_000);

  it("in tmp/ only the daemon's own tmp files are removed: no recursion, no following a link", async () => {
    const { dir, cleanup } = await tempDir('trust-tmp');
    cleanups.push(cleanup);
    const spoolDir = path.join(dir, 'spool');
    await (await Spool.open(spoolDir, { logger: silentLogger(), fsync: false })).close();
    const elsewhere = path.join(dir, 'elsewhere');
    await mkdir(elsewhere);
    await writeFile(path.join(elsewhere, 'victim.1.1.deadbeef.tmp'), 'x');
    const tmp = path.join(spoolDir, 'tmp');
    await writeFile(path.join(tmp, 'a1.4242.1.deadbeef.tmp'), 'half'); // ours: removed
    await symlink(path.join(elsewhere, 'victim.1.1.deadbeef.tmp'), path.join(tmp, 'b1.4242.2.deadbeef.tmp')); // our name, a link
    await mkdir(path.join(tmp, 'c1.4242.3.deadbeef.tmp'));
    await writeFile(path.join(tmp, 'c1.4242.3.deadbeef.tmp', 'inside'), 'x'); // a directory with our name
    await writeFile(path.join(tmp, 'notes'), 'x'); // not our name
    const { logger, lines } = captureLogger();
    await (await Spool.open(spoolDir, { logger, fsync: false })).close();
    expect((await readdir(tmp)).sort()).toEqual(['b1.4242.2.deadbeef.tmp', 'c1.4242.3.deadbeef.tmp', 'notes']);
    expect(await readdir(path.join(tmp, 'c1.4242.3.deadbeef.tmp'))).toEqual(['inside']);
    expect(await readFile(path.join(elsewhere, 'victim.1.1.deadbeef.tmp'), 'utf8')).toBe('x');
    expect(lines.filter((l) => String(l.msg).includes('is not a tmp file of the daemon')).length).toBe(3);
  });
});

describe('records signed with the spool key', () => {
  it('upgrade: the first start signs the records already there and sends them; a record dropped in later is quarantined, not POSTed', async () => {
    const web = await server();
    const { spoolDir, config } = await setup('mac', web.url);
    // A spool from before record signing: records with a sha256 checksum only.
    await mkdir(path.join(spoolDir, 'pending'), { recursive: true, mode: 0o750 });
    await chmod(spoolDir, 0o750);
    await writeFile(path.join(spoolDir, 'pending', 'old1.json'), serializeRecord(makeSms('old1')));
    let d = await started(config);
    await until(() => web.requests.some((r) => r.headers['idempotency-key'] === 'old1'), 'old1 delivered');
    expect(d.logged('records written before record signing were signed (pending 1)')).toBe(true);
    const key = await readKey(spoolDir);
    expect(key).toHaveLength(32);
    expect((await lstat(path.join(spoolDir, 'spool.key'))).mode & 0o777).toBe(0o600);
    await stop(d);

    // Someone who can write pending/ but has no key: a record with a correct sha256, and one signed with another key.
    await writeFile(
      path.join(spoolDir, 'pending', 'forged1.json'),
      serializeRecord(makeSms('forged1', { text: 'Anda mendapatkan pulsa Rp 500000' })),
    );
    await writeFile(
      path.join(spoolDir, 'pending', 'forged2.json'),
      serializeRecord(makeSms('forged2'), { area: 'pending', key: Buffer.alloc(32, 1) }),
    );
    const before = web.requests.length;
    d = await started(config);
    const quarantined = d.out.filter((l) => l.includes('moved to quarantine (integrity check failed'));
    expect(quarantined.length).toBe(2);
    expect(quarantined.every((l) => (JSON.parse(l) as { level: number }).level === 50)).toBe(true);
    await new Promise((r) => setTimeout(r, 300));
    expect(web.requests.slice(before).map((r) => r.headers['idempotency-key'])).toEqual([]);
    await stop(d);

    // The operator sees them, with the reason, and can drop them.
    const ls = await runCli(['queue', 'ls', '--area', 'quarantine', '--json', '--config', config]);
    expect(ls.code).toBe(0);
    const listed = JSON.parse(ls.out) as {
      records: { area: string; record: { id: string; reason: string; originalFile: string } }[];
    };
    expect(listed.records.map((r) => r.record.originalFile).sort()).toEqual([
      'pending/forged1.json',
      'pending/forged2.json',
    ]);
    for (const r of listed.records)
      expect(r.record.reason).toMatch(/^unreadable record file: integrity check failed: /);
    const show = await runCli(['queue', 'show', listed.records[0]!.record.id, '--config', config]);
    expect(show.out).toContain('reason: unreadable record file: integrity check failed');
    const drop = await runCli(['queue', 'drop', listed.records[0]!.record.id, '--config', config]);
    expect(drop.code).toBe(0);
  }, 60_000);

  it('a forged "Rp 500000" record plus a spool.key.adopting file of any owner, then a restart: quarantined, never POSTed', async () => {
    const web = await server();
    const { spoolDir, config } = await setup('adopting', web.url);
    const d = await started(config); // first start: key created, adoption done
    await stop(d);
    await writeFile(
      path.join(spoolDir, 'pending', 'forged9.json'),
      serializeRecord(makeSms('forged9', { text: 'Anda mendapatkan penambahan pulsa Rp 500000' })),
    );
    for (const [content, uid] of [
      ['adopting\n', 0],
      [`adopting v1 ${'f'.repeat(64)}\n`, 4321],
    ] as const) {
      await writeFile(path.join(spoolDir, 'spool.key.adopting'), content, { mode: 0o600 });
      await (await import('node:fs/promises')).chown(path.join(spoolDir, 'spool.key.adopting'), uid, uid);
      const again = await started(config);
      expect(again.logged('ignoring the adoption marker')).toBe(true);
      await new Promise((r) => setTimeout(r, 300));
      await stop(again);
    }
    expect(web.requests.map((r) => r.headers['idempotency-key'])).toEqual([]);
    const ls = await runCli(['queue', 'ls', '--area', 'quarantine', '--json', '--config', config]);
    expect(
      (JSON.parse(ls.out) as { records: { record: { originalFile: string } }[] }).records.map(
        (r) => r.record.originalFile,
      ),
    ).toEqual(['pending/forged9.json']);
  }, 60_000);

  it('a 30 MB junk file in pending/ is moved aside as it is, never read', async () => {
    const { spoolDir, config } = await setup('junk');
    await mkdir(path.join(spoolDir, 'pending'), { recursive: true, mode: 0o750 });
    await chmod(spoolDir, 0o750);
    const junk = path.join(spoolDir, 'pending', 'junk.json');
    await writeFile(junk, '');
    await truncate(junk, 30 * 1024 * 1024);
    const inode = (await stat(junk)).ino;
    const d = await started(config);
    expect(d.logged('pending/junk.json is ')).toBe(true);
    // What the process read in all (its own code included) is far below the file's size: the junk was not read.
    const io = await readFile(`/proc/${d.child.pid}/io`, 'utf8');
    const rchar = Number(/rchar: (\d+)/.exec(io)![1]);
    expect(rchar).toBeLessThan(30 * 1024 * 1024);
    await stop(d);
    const moved = await stat(path.join(spoolDir, 'foreign', 'pending.junk.json'));
    expect(moved.ino).toBe(inode); // renamed, not copied
    expect(moved.size).toBe(30 * 1024 * 1024);
    expect(await readdir(path.join(spoolDir, 'quarantine'))).toEqual([]);
  }, 60_000);
});

describe('the queue CLI on a signed spool', () => {
  it('a client that can read the key checks records; a file dropped into pending is not listed as pending', async () => {
    const { dir, cleanup } = await tempDir('trust-client');
    cleanups.push(cleanup);
    const owner = await Spool.open(dir, { logger: silentLogger(), fsync: false });
    await owner.putPending(makeSms('real1'));
    await writeFile(path.join(dir, 'pending', 'forged.json'), serializeRecord(makeSms('forged')));
    const client = await Spool.open(dir, { logger: silentLogger(), fsync: false, role: 'client' });
    expect((await client.list('pending')).map((r) => r.id)).toEqual(['real1']);
    await client.retry('real1'); // a client write is signed: the owner takes it
    await owner.rescan();
    expect((await owner.list('pending')).map((r) => r.id)).toEqual(['real1']);
    await client.close();
    await owner.close();
  });

  it('a spool moved without its key: records are quarantined (unsigned ones not adopted); the operator releases one', async () => {
    const { dir, cleanup } = await tempDir('trust-moved');
    cleanups.push(cleanup);
    let owner = await Spool.open(dir, { logger: silentLogger(), fsync: false });
    await owner.putPending(makeSms('real1'));
    await owner.putPending(makeSms('real2', { receivedAt: '2018-01-08T03:16:00.000Z' }));
    await owner.close();
    await rm(path.join(dir, 'spool.key')); // the key stayed on the old Pi
    await writeFile(path.join(dir, 'pending', 'dropped.json'), serializeRecord(makeSms('dropped')));
    const { logger, lines } = captureLogger();
    owner = await Spool.open(dir, { logger, fsync: false });
    expect((await owner.list('pending')).map((r) => r.id)).toEqual([]);
    expect((await owner.stats()).quarantine).toBe(3);
    expect(lines.some((l) => String(l.msg).includes('were signed'))).toBe(false); // a signed record shows the key was lost: nothing adopted

    const q = (await owner.list('quarantine')).find(
      (r) => r.kind === 'quarantine' && r.originalFile === 'pending/real1.json',
    )!;
    const client = await Spool.open(dir, { logger: silentLogger(), fsync: false, role: 'client' });
    expect(await client.retry(q.id)).toEqual({ id: 'real1', area: 'pending' });
    await client.close();
    await owner.rescan();
    expect((await owner.list('pending')).map((r) => r.id)).toEqual(['real1']);
    await owner.close();
    owner = await Spool.open(dir, { logger: silentLogger(), fsync: false }); // signed with the new key: it stays
    expect((await owner.list('pending')).map((r) => r.id)).toEqual(['real1']);
    await owner.close();
  });
});
