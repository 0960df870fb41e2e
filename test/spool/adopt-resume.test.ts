/**
 * The first-start adoption (signing records that predate the key) survives a crash: the marker
 * `<stateDir>/spool.key.adopting` is down before the key and removed only when every record is signed, so a start
 * that died part-way leaves a key, the marker and some unsigned records, and the next start signs them. Real files.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { access, chmod, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { silentLogger } from '../../src/log.js';
import { captureLogger } from '../support/logger.js';
import { serializeRecord } from '../../src/spool/codec.js';
import { adoptingFile, createKey, markAdopting, newKey } from '../../src/spool/integrity-key.js';
import { Spool } from '../../src/spool/store.js';
import { makeSms } from './helpers.js';
import { tempDir } from '../support/tmp.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

describe('adoption resumed after a crash', () => {
  it('signs the records a crashed first start left unsigned; none is quarantined; the marker goes', async () => {
    const { dir, cleanup } = await tempDir('adopt-resume');
    cleanups.push(cleanup);
    const spoolDir = path.join(dir, 'spool');
    for (const a of ['tmp', 'pending', 'sent', 'dead', 'ignored', 'quarantine', 'parts'])
      await mkdir(path.join(spoolDir, a), { recursive: true, mode: 0o700 });
    // The state a first start leaves when it dies part-way: marker, key, one record signed, the rest not.
    const fresh = newKey();
    await markAdopting(spoolDir, fresh, true);
    const key = await createKey(spoolDir, true, fresh);
    await writeFile(
      path.join(spoolDir, 'pending', 'p1.json'),
      serializeRecord(makeSms('p1'), { area: 'pending', key }),
    );
    await writeFile(path.join(spoolDir, 'pending', 'p2.json'), serializeRecord(makeSms('p2')));
    await writeFile(path.join(spoolDir, 'pending', 'p3.json'), serializeRecord(makeSms('p3')));
    await writeFile(path.join(spoolDir, 'sent', 's1.json'), serializeRecord(makeSms('s1')));

    const spool = await Spool.open(spoolDir, { logger: silentLogger(), fsync: false });
    expect((await spool.list('pending')).map((r) => r.id).sort()).toEqual(['p1', 'p2', 'p3']);
    expect((await spool.list('sent')).map((r) => r.id)).toEqual(['s1']);
    expect(await spool.list('quarantine')).toEqual([]);
    await spool.close();
    expect(await exists(adoptingFile(spoolDir))).toBe(false);

    // Finished: from now on an unsigned record is quarantined again.
    await writeFile(path.join(spoolDir, 'pending', 'x1.json'), serializeRecord(makeSms('x1')));
    const later = await Spool.open(spoolDir, { logger: silentLogger(), fsync: false });
    expect((await later.list('pending')).map((r) => r.id).sort()).toEqual(['p1', 'p2', 'p3']);
    expect((await later.list('quarantine')).map((r) => r.id)).toHaveLength(1);
    await later.close();
  });

  it('a first start leaves no marker once it has signed everything', async () => {
    const { dir, cleanup } = await tempDir('adopt-first');
    cleanups.push(cleanup);
    const spoolDir = path.join(dir, 'spool');
    await mkdir(path.join(spoolDir, 'pending'), { recursive: true, mode: 0o700 });
    await writeFile(path.join(spoolDir, 'pending', 'a1.json'), serializeRecord(makeSms('a1')));
    const spool = await Spool.open(spoolDir, { logger: silentLogger(), fsync: false });
    expect((await spool.list('pending')).map((r) => r.id)).toEqual(['a1']);
    await spool.close();
    expect(await exists(adoptingFile(spoolDir))).toBe(false);
  });

  it('a marker that is not the daemon\'s own is never obeyed: a forged "Rp 500000" record is quarantined, not signed', async () => {
    const { dir, cleanup } = await tempDir('adopt-forged');
    cleanups.push(cleanup);
    const spoolDir = path.join(dir, 'spool');
    const first = await Spool.open(spoolDir, { logger: silentLogger(), fsync: false }); // the key exists: adoption done
    await first.close();
    const forged = () =>
      serializeRecord(
        makeSms('forged', { text: 'Anda mendapatkan penambahan pulsa Rp 500000 dari nomor 6281299999999' }),
      );
    // Each way someone without the key might write the marker: just the name, the old text, a guessed MAC, mode 0666.
    for (const [content, mode] of [
      ['', 0o600],
      ['signing the records written before spool.key; removed when done\n', 0o600],
      [`adopting v1 ${'0'.repeat(64)}\n`, 0o600],
      [`adopting v1 ${'a'.repeat(64)}\n`, 0o666],
    ] as const) {
      await writeFile(path.join(spoolDir, 'pending', 'forged.json'), forged());
      await writeFile(adoptingFile(spoolDir), content, { mode });
      await chmod(adoptingFile(spoolDir), mode);
      const { logger, lines } = captureLogger();
      const spool = await Spool.open(spoolDir, { logger, fsync: false });
      expect(await spool.list('pending'), JSON.stringify(content)).toEqual([]);
      expect((await spool.list('quarantine')).map((r) => r.id)).toEqual([
        expect.stringMatching(/^corrupt\.pending\.forged\./),
      ]);
      await spool.close();
      expect(lines.map((l) => l.msg).join('\n')).toMatch(
        /ignoring the adoption marker: .*(not written by this spool's daemon|writable by others)/,
      );
      await rm(path.join(spoolDir, 'quarantine'), { recursive: true, force: true });
      await mkdir(path.join(spoolDir, 'quarantine'), { mode: 0o700 });
    }
  });

  it("the daemon's own marker in a link is refused (no symlink is followed)", async () => {
    const { dir, cleanup } = await tempDir('adopt-link');
    cleanups.push(cleanup);
    const spoolDir = path.join(dir, 'spool');
    const first = await Spool.open(spoolDir, { logger: silentLogger(), fsync: false });
    await first.close();
    await writeFile(path.join(dir, 'elsewhere'), 'x');
    await symlink(path.join(dir, 'elsewhere'), adoptingFile(spoolDir));
    await writeFile(path.join(spoolDir, 'pending', 'u1.json'), serializeRecord(makeSms('u1')));
    const spool = await Spool.open(spoolDir, { logger: silentLogger(), fsync: false });
    expect(await spool.list('pending')).toEqual([]);
    expect((await spool.list('quarantine')).map((r) => r.id)).toEqual([
      expect.stringMatching(/^corrupt\.pending\.u1\./),
    ]);
    await spool.close();
  });
});
