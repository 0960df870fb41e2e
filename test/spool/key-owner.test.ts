/**
 * Whose spool key a client trusts: the CLI (root under sudo, or the service user) reads a key owned by the spool
 * directory's owner; no error hint says to chown the key to root. Real files, real chown (the tests run as root).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { chown, readdir } from 'node:fs/promises';
import path from 'node:path';
import { UnsafePathError } from '../../src/errors.js';
import { silentLogger } from '../../src/log.js';
import { readKey, spoolDirOwner } from '../../src/spool/integrity-key.js';
import { Spool } from '../../src/spool/store.js';
import { makeSms } from './helpers.js';
import { tempDir } from '../support/tmp.js';

const SERVICE_UID = 65534;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function chownTree(p: string, uid: number): Promise<void> {
  await chown(p, uid, uid);
  for (const e of await readdir(p, { withFileTypes: true })) {
    const q = path.join(p, e.name);
    if (e.isDirectory()) await chownTree(q, uid);
    else await chown(q, uid, uid);
  }
}

describe.runIf(process.geteuid?.() === 0)('spool key owned by the service user, CLI run as root', () => {
  it("a client accepts the spool directory owner's key and writes signed records; the daemon expectation hints no chown to 0", async () => {
    const { dir, cleanup } = await tempDir('key-owner');
    cleanups.push(cleanup);
    const spoolDir = path.join(dir, 'spool');
    const owner = await Spool.open(spoolDir, { logger: silentLogger(), fsync: false });
    await owner.putPending(makeSms('a1'));
    await owner.markDead('a1', 'gave up');
    await owner.close();
    await chownTree(spoolDir, SERVICE_UID); // as a packaged install has it: the spool and its key are the service user's

    // The daemon's own check, run as root on the service user's key: refused, and the hint never chowns to root.
    const err = await readKey(spoolDir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsafePathError);
    expect(`${(err as UnsafePathError).message} ${(err as UnsafePathError).hint ?? ''}`).not.toMatch(/chown 0\b/);
    expect((err as UnsafePathError).hint).toMatch(/not root/);

    // The client path (sudo pulsa-bridge queue/status): the key is the spool directory owner's, so root reads it.
    expect((await spoolDirOwner(spoolDir)).uid).toBe(SERVICE_UID);
    expect(await readKey(spoolDir, await spoolDirOwner(spoolDir))).toBeInstanceOf(Buffer);
    const client = await Spool.open(spoolDir, { logger: silentLogger(), role: 'client', signal: () => undefined });
    expect((await client.list('dead')).map((r) => r.id)).toEqual(['a1']);
    await client.retry('a1'); // signed with the key: the daemon delivers it instead of quarantining it
    await client.close();
    await chownTree(spoolDir, 0);
    const again = await Spool.open(spoolDir, { logger: silentLogger(), fsync: false });
    expect((await again.list('pending')).map((r) => r.id)).toEqual(['a1']);
    expect(await again.list('quarantine')).toEqual([]);
    await again.close();
  });

  it("a key owned by someone other than the spool directory's owner is refused for a client too", async () => {
    const { dir, cleanup } = await tempDir('key-owner-bad');
    cleanups.push(cleanup);
    const spoolDir = path.join(dir, 'spool');
    const owner = await Spool.open(spoolDir, { logger: silentLogger(), fsync: false });
    await owner.close();
    await chownTree(spoolDir, SERVICE_UID);
    await chown(path.join(spoolDir, 'spool.key'), 65533, 65533);
    const err = await Spool.open(spoolDir, { logger: silentLogger(), role: 'client' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsafePathError);
    expect((err as UnsafePathError).hint).toBe(`chown ${SERVICE_UID} ${path.join(spoolDir, 'spool.key')}`);
  });
});
