/**
 * `queue --spool DIR` when the daemon keeps the spool key in a stateDir elsewhere: the client finds no key beside the
 * spool; with signed records there it refuses to write (an unsigned record would be quarantined, the SMS never
 * delivered) and names --config; given the config too, it takes stateDir from it and signs. Real files.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { SpoolError } from '../../src/errors.js';
import { silentLogger } from '../../src/log.js';
import { spoolFrom } from '../../src/cli/spool-access.js';
import { serializeRecord } from '../../src/spool/codec.js';
import { Spool } from '../../src/spool/store.js';
import { makeSms } from './helpers.js';
import { tempDir } from '../support/tmp.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe('client without the key beside a signed spool', () => {
  it('refuses writes naming --config, and signs when the config (stateDir) is given with --spool', async () => {
    const { dir, cleanup } = await tempDir('key-elsewhere');
    cleanups.push(cleanup);
    const spoolDir = path.join(dir, 'spool');
    const stateDir = path.join(dir, 'state');
    await mkdir(stateDir, { mode: 0o700 });
    const owner = await Spool.open(spoolDir, { logger: silentLogger(), fsync: false, keyDir: stateDir });
    await owner.putPending(makeSms('d1'));
    await owner.markDead('d1', 'gave up');
    await owner.close();

    const blind = await spoolFrom({ spool: spoolDir });
    expect((await blind.list('dead')).map((r) => r.id)).toEqual(['d1']); // reading still works
    const err = await blind.retry('d1').catch((e: unknown) => e);
    await blind.close();
    expect(err).toBeInstanceOf(SpoolError);
    expect((err as SpoolError).message).toMatch(/no integrity key at .*spool\.key, but the spool holds signed records/);
    expect((err as SpoolError).hint).toMatch(/--config/);
    expect((err as SpoolError).hint).toMatch(/stateDir/);

    const config = path.join(dir, 'config.json');
    await writeFile(config, JSON.stringify({ spool: { dir: path.join(dir, 'elsewhere') }, stateDir }));
    const client = await spoolFrom({ spool: spoolDir, config });
    expect(client.dir).toBe(spoolDir); // --spool wins for the directory; the key comes from the config's stateDir
    await client.retry('d1');
    await client.close();

    const again = await Spool.open(spoolDir, { logger: silentLogger(), fsync: false, keyDir: stateDir });
    expect((await again.list('pending')).map((r) => r.id)).toEqual(['d1']);
    expect(await again.list('quarantine')).toEqual([]);
    await again.close();
  });

  it('a spool never signed (no key, no mac anywhere) is still written unsigned, for the daemon to adopt', async () => {
    const { dir, cleanup } = await tempDir('key-none');
    cleanups.push(cleanup);
    const spoolDir = path.join(dir, 'spool');
    for (const a of ['tmp', 'pending', 'sent', 'dead', 'ignored', 'quarantine', 'parts'])
      await mkdir(path.join(spoolDir, a), { recursive: true, mode: 0o700 });
    await writeFile(path.join(spoolDir, 'dead', 'u1.json'), serializeRecord(makeSms('u1')));
    const client = await spoolFrom({ spool: spoolDir });
    await client.retry('u1'); // no refusal: nothing signed yet
    expect((await client.list('pending')).map((r) => r.id)).toEqual(['u1']);
    await client.close();
  });
});
