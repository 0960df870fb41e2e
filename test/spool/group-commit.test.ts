/**
 * Group commit (src/spool/commit.ts through files.ts): overlapping put* and mark* calls share directory fsyncs, and each
 * promise resolves only after an fsync of its directory that followed its own rename/unlink. The system calls are
 * observed (and failed) through files.ts' `diskOps`.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { spawn } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { silentLogger } from '../../src/log.js';
import { parseRecordFile } from '../../src/spool/codec.js';
import { diskOps } from '../../src/spool/files.js';
import { compareReceived } from '../../src/spool/pending-index.js';
import { Spool } from '../../src/spool/store.js';
import type { PartRecord } from '../../src/spool/types.js';
import { makeSms } from './helpers.js';
import { tempDir } from '../support/tmp.js';

let dir: string;
let cleanup: () => Promise<void>;
const opened: Spool[] = [];

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('group'));
});
afterEach(async () => {
  vi.restoreAllMocks();
  for (const s of opened.splice(0)) await s.close();
  await cleanup();
});

const open = async (opts: Partial<Parameters<typeof Spool.open>[1]> = {}) => {
  for (const s of opened.splice(0)) await s.close();
  const spool = await Spool.open(dir, { logger: silentLogger(), ...opts });
  opened.push(spool);
  return spool;
};
const files = async (area: string) => (await readdir(path.join(dir, area))).sort();
const idOf = (file: string) => path.basename(file).replace(/\.json$/, '');

/**
 * Records every rename, unlink and directory fsync (start and end) in one ordered log. The first fsync of `gateDir`
 * (if given) is held until `gateRenames` renames into that directory have happened: everyone else then arrives while
 * it is in flight, so the test does not depend on the machine's speed.
 */
function observe(gate?: { dir: string; renames: number }) {
  const log: string[] = [];
  let fsyncs = 0;
  let renamedIntoGate = 0;
  let releaseGate: () => void = () => undefined;
  const gateOpen = new Promise<void>((r) => (releaseGate = r));
  let gated = false;
  const realRename = diskOps.rename;
  const realUnlink = diskOps.unlink;
  const realFsyncDir = diskOps.fsyncDir;
  vi.spyOn(diskOps, 'rename').mockImplementation(async (from, to) => {
    await realRename(from, to);
    log.push(`rename ${path.basename(path.dirname(to))}/${idOf(to)}`);
    if (gate && path.dirname(to) === gate.dir && ++renamedIntoGate >= gate.renames) releaseGate();
  });
  vi.spyOn(diskOps, 'unlink').mockImplementation(async (file) => {
    await realUnlink(file);
    log.push(`unlink ${path.basename(path.dirname(file))}/${idOf(file)}`);
  });
  vi.spyOn(diskOps, 'fsyncDir').mockImplementation(async (d) => {
    const k = ++fsyncs;
    log.push(`fsync-start ${path.basename(d)} #${k}`);
    if (gate && d === gate.dir && !gated) {
      gated = true;
      await gateOpen;
    }
    await realFsyncDir(d);
    log.push(`fsync-end ${path.basename(d)} #${k}`);
  });
  return {
    log,
    fsyncsOf: (area: string) => log.filter((l) => l.startsWith(`fsync-start ${area} `)).length,
    /** Whether an fsync of `area` started after log[after] and ended before log[before]. */
    covered(area: string, after: number, before: number): boolean {
      for (let i = after + 1; i < before; i++) {
        const m = /^fsync-start (\S+) (#\d+)$/.exec(log[i]!);
        if (m && m[1] === area) {
          const end = log.indexOf(`fsync-end ${area} ${m[2]}`);
          if (end > i && end < before) return true;
        }
      }
      return false;
    },
  };
}

describe('group commit: concurrent writes share directory fsyncs', () => {
  it('N concurrent putPending: all durable, fewer than N fsyncs of pending/, each resolved after an fsync that followed its rename', async () => {
    const spool = await open({ fsync: true });
    const N = 12;
    const ids = Array.from({ length: N }, (_, i) => `g${i}`);
    const obs = observe({ dir: path.join(dir, 'pending'), renames: N });
    const results = await Promise.all(
      ids.map((id) =>
        spool.putPending(makeSms(id)).then((r) => {
          obs.log.push(`resolved ${id}`);
          return r;
        }),
      ),
    );
    expect(results.every((r) => r.created)).toBe(true);
    expect(obs.fsyncsOf('pending')).toBeLessThan(N);
    expect(obs.fsyncsOf('pending')).toBe(2); // the held first one, then one for the 11 that arrived meanwhile
    for (const id of ids) {
      const renamed = obs.log.indexOf(`rename pending/${id}`);
      const resolved = obs.log.indexOf(`resolved ${id}`);
      expect(renamed).toBeGreaterThanOrEqual(0);
      expect(
        obs.covered('pending', renamed, resolved),
        `${id} resolved after an fsync of pending/ that followed its rename`,
      ).toBe(true);
    }
    expect(await files('pending')).toEqual(ids.map((id) => `${id}.json`).sort());
    expect(await files('tmp')).toEqual([]);
    const reopened = await open({ fsync: true });
    for (const id of ids) expect((await reopened.get(id))?.area).toBe('pending');
  });

  it('a lone put is not held back: its fsync starts at once and covers just it', async () => {
    const spool = await open({ fsync: true });
    const obs = observe();
    await spool.putPending(makeSms('alone'));
    expect(obs.log).toEqual(['rename pending/alone', 'fsync-start pending #1', 'fsync-end pending #1']);
  });

  it('concurrent markDelivered: each new file durable (sent/ fsynced) before the old one is unlinked, pending/ fsynced before it resolves', async () => {
    const spool = await open({ fsync: true });
    const N = 8;
    const ids = Array.from({ length: N }, (_, i) => `m${i}`);
    for (const id of ids) await spool.putPending(makeSms(id));
    const obs = observe({ dir: path.join(dir, 'sent'), renames: N });
    await Promise.all(
      ids.map((id) =>
        spool
          .markDelivered(id, { status: 200, at: new Date('2024-01-01T00:00:00Z') })
          .then(() => obs.log.push(`resolved ${id}`)),
      ),
    );
    expect(obs.fsyncsOf('sent')).toBeLessThan(N);
    expect(obs.fsyncsOf('pending')).toBeLessThan(N);
    for (const id of ids) {
      const renamed = obs.log.indexOf(`rename sent/${id}`);
      const unlinked = obs.log.indexOf(`unlink pending/${id}`);
      const resolved = obs.log.indexOf(`resolved ${id}`);
      expect(renamed).toBeLessThan(unlinked);
      expect(obs.covered('sent', renamed, unlinked), `${id}: sent/ fsynced before the pending file is unlinked`).toBe(
        true,
      );
      expect(
        obs.covered('pending', unlinked, resolved),
        `${id}: pending/ fsynced after the unlink, before it resolved`,
      ).toBe(true);
    }
    expect(await files('pending')).toEqual([]);
    expect(await files('sent')).toEqual(ids.map((id) => `${id}.json`).sort());
  });

  it('the same id twice in one group: created once, the second is created:false', async () => {
    const spool = await open({ fsync: true });
    const results = await Promise.all(['d1', 'd2', 'd1', 'd3', 'd2'].map((id) => spool.putPending(makeSms(id))));
    expect(results.map((r) => r.created)).toEqual([true, true, false, true, false]);
    expect(await files('pending')).toEqual(['d1.json', 'd2.json', 'd3.json']);
  });
});

describe('group commit: failures', () => {
  it('one member whose tmp write fails (ENOSPC) fails alone; the others are durable', async () => {
    const spool = await open({ fsync: true });
    const fdOf = new Map<number, string>();
    const realOpen = diskOps.openNew;
    const realWrite = diskOps.write;
    vi.spyOn(diskOps, 'openNew').mockImplementation(async (file) => {
      const fd = await realOpen(file);
      fdOf.set(fd, path.basename(file));
      return fd;
    });
    vi.spyOn(diskOps, 'write').mockImplementation(async (fd, buf) => {
      if (fdOf.get(fd)?.startsWith('bad.'))
        throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      return realWrite(fd, buf);
    });
    const ids = ['ok1', 'ok2', 'bad', 'ok3', 'ok4'];
    const settled = await Promise.allSettled(ids.map((id) => spool.putPending(makeSms(id))));
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect((settled[2] as PromiseRejectedResult).reason).toMatchObject({
      reason: 'io',
      message: expect.stringContaining('pending/bad.json'),
    });
    expect((settled[2] as PromiseRejectedResult).reason.message).toContain('ENOSPC');
    expect(await files('pending')).toEqual(['ok1.json', 'ok2.json', 'ok3.json', 'ok4.json']);
    expect(await files('tmp')).toEqual([]); // the failed member's tmp file is removed
    expect(spool.isPending('bad')).toBe(false);
    vi.restoreAllMocks();
    expect(await spool.putPending(makeSms('bad'))).toEqual({ created: true, area: 'pending' });
  });

  it('a failed directory fsync fails every member it was to cover, each naming its record; none is indexed as durable', async () => {
    const spool = await open({ fsync: true });
    const obs = observe({ dir: path.join(dir, 'pending'), renames: 5 });
    const realFsync = vi.mocked(diskOps.fsyncDir).getMockImplementation()!;
    let n = 0;
    vi.mocked(diskOps.fsyncDir).mockImplementation(async (d) => {
      if (d === path.join(dir, 'pending') && ++n === 2) {
        obs.log.push('fsync-start pending #fail');
        throw Object.assign(new Error(`EIO: i/o error, fsync`), { code: 'EIO' });
      }
      return realFsync(d);
    });
    const ids = ['f0', 'f1', 'f2', 'f3', 'f4'];
    const settled = await Promise.allSettled(ids.map((id) => spool.putPending(makeSms(id))));
    const failed = settled.flatMap((s, i) => (s.status === 'rejected' ? [[ids[i]!, s.reason as Error] as const] : []));
    expect(failed).toHaveLength(4); // the first was covered by the held fsync; the other four by the one that failed
    for (const [id, err] of failed) {
      expect(err).toMatchObject({ reason: 'io' });
      expect(err.message).toContain(`pending/${id}.json`);
      expect(err.message).toContain('EIO');
      expect(spool.isPending(id)).toBe(false);
    }
    // written again (the forwarder's or receiver's retry): each is created and durable this time
    vi.restoreAllMocks();
    for (const [id] of failed) expect(await spool.putPending(makeSms(id))).toEqual({ created: true, area: 'pending' });
  });
});

describe('listParts from memory', () => {
  function part(id: string, receivedAt: string, seq = 1): PartRecord {
    return {
      v: 1,
      kind: 'part',
      groupKey: `k-${id}`,
      id,
      sim: { modem: 'tsel-1' },
      sender: '858',
      sequence: seq,
      total: 2,
      reference: 7,
      referenceBits: 8,
      text: `t-${id}`,
      scTimestamp: '2024-01-01T00:00:00+07:00',
      receivedAt,
      pdu: '00',
    };
  }
  /** The parts as the directory holds them, in listParts' order. */
  async function partsOnDisk(): Promise<PartRecord[]> {
    const out: PartRecord[] = [];
    for (const name of await files('parts')) {
      const parsed = parseRecordFile(await readFile(path.join(dir, 'parts', name), 'utf8'), 'parts', name);
      if (!parsed.ok) throw new Error(`unreadable ${name}`);
      out.push(parsed.record as PartRecord);
    }
    return out.sort(compareReceived);
  }

  it('equals the directory after puts, deletes and a reopen, and hands out copies', async () => {
    let spool = await open();
    const times = [
      '2024-01-01T00:00:05Z',
      '2024-01-01T00:00:01Z',
      'not a time',
      '2024-01-01T00:00:01Z',
      '2024-01-01T00:00:03Z',
      '2024-01-01T00:00:02Z',
    ];
    await Promise.all(times.map((t, i) => spool.putPart(part(`p${5 - i}`, t, i + 1))));
    expect(await spool.listParts()).toEqual(await partsOnDisk());
    expect((await spool.listParts()).map((p) => p.id)).toEqual(['p3', 'p2', 'p4', 'p0', 'p1', 'p5']);
    await spool.deleteParts(['p1', 'p4', 'never']);
    expect(await spool.listParts()).toEqual(await partsOnDisk());
    await spool.putPart(part('p9', '2024-01-01T00:00:00Z'));
    const listed = await spool.listParts();
    expect(listed).toEqual(await partsOnDisk());
    listed[0]!.sim.modem = 'changed';
    listed[0]!.text = 'changed';
    expect((await spool.listParts())[0]).toMatchObject({ sim: { modem: 'tsel-1' }, text: 't-p3' });
    expect(await spool.list('parts')).toEqual(await partsOnDisk());
    spool = await open();
    expect(await spool.listParts()).toEqual(await partsOnDisk());
    expect((await spool.listParts()).map((p) => p.id)).toEqual(['p3', 'p9', 'p2', 'p0', 'p5']);
    expect((await spool.stats()).parts).toBe(5);
  });
});

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** A child that writes groups of 8 records concurrently and marks the previous group delivered, until killed. */
const CHILD = `
const [storeUrl, logUrl, dir, prefix] = process.argv.slice(2);
const { Spool } = await import(storeUrl);
const { silentLogger } = await import(logUrl);
const spool = await Spool.open(dir, { logger: silentLogger() });
const rec = (id) => ({ v: 1, kind: 'sms', id, sim: { modem: 'tsel-1' }, sender: '858', text: 'x'.repeat(200) + id,
  scTimestamp: '2024-01-01T00:00:00+07:00', receivedAt: '2024-01-01T00:00:00.000Z', pdus: ['00'.repeat(140)], attempts: 0 });
const say = (s) => process.stdout.write(s + '\\n');
let prev = [];
for (let g = 0; ; g++) {
  const ids = Array.from({ length: 8 }, (_, i) => prefix + g + '-' + i);
  await Promise.all([
    ...ids.map((id) => spool.putPending(rec(id)).then(() => say('put ' + id))),
    ...prev.map((id) => spool.markDelivered(id, { status: 200, at: new Date() }).then(() => say('sent ' + id))),
  ]);
  prev = ids;
}
`;

describe('group commit: a crash in the middle of a group', () => {
  it('SIGKILL while groups are in flight: every record whole or absent, every resolved put present, every resolved mark in sent', async () => {
    const script = path.join(dir, 'child.mjs');
    await writeFile(script, CHILD);
    const spoolDir = path.join(dir, 'spool');
    const storeUrl = pathToFileURL(path.join(root, 'dist/src/spool/store.js')).href;
    const logUrl = pathToFileURL(path.join(root, 'dist/src/log.js')).href;
    for (const [round, killAfter] of [13, 57, 101].entries()) {
      const put = new Set<string>();
      const sent = new Set<string>();
      const child = spawn(process.execPath, [script, storeUrl, logUrl, spoolDir, `r${round}c`], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
      let buf = '';
      const exited = new Promise<string | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
      child.stdout.on('data', (c: Buffer) => {
        buf += c.toString('utf8');
        const lines = buf.split('\n');
        buf = lines.pop()!;
        for (const l of lines) {
          const [what, id] = l.split(' ');
          (what === 'put' ? put : sent).add(id!);
        }
        if (put.size + sent.size >= killAfter) child.kill('SIGKILL'); // mid-group: other members are in flight
      });
      const signal = await exited;
      expect(signal, stderr).toBe('SIGKILL');
      for (const area of ['pending', 'sent']) {
        for (const name of await readdir(path.join(spoolDir, area))) {
          const parsed = parseRecordFile(
            await readFile(path.join(spoolDir, area, name), 'utf8'),
            area as 'pending',
            name,
          );
          expect(parsed.ok, `${area}/${name} is whole`).toBe(true);
        }
      }
      const pendingNow = new Set((await readdir(path.join(spoolDir, 'pending'))).map(idOf));
      const sentNow = new Set((await readdir(path.join(spoolDir, 'sent'))).map(idOf));
      for (const id of put) expect(pendingNow.has(id) || sentNow.has(id), `resolved put ${id} is present`).toBe(true);
      for (const id of sent) expect(sentNow.has(id), `resolved mark ${id} is in sent`).toBe(true);
      // the owner's recovery at the next start accepts the state: tmp cleared, every resolved record readable
      const spool = await Spool.open(spoolDir, { logger: silentLogger() });
      expect(await readdir(path.join(spoolDir, 'tmp'))).toEqual([]);
      for (const id of put) expect((await spool.get(id))?.area).toMatch(/^(pending|sent)$/);
      for (const id of sent) expect((await spool.get(id))?.area).toBe('sent');
      expect((await spool.stats()).quarantine).toBe(0);
      await spool.close();
    }
  });
});
