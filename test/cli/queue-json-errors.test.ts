import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Command } from 'commander';
import { queueCommands } from '../../src/cli/queue.js';
import { SpoolError } from '../../src/errors.js';
import { silentLogger } from '../../src/log.js';
import { Spool } from '../../src/spool/store.js';
import { makeSms } from '../spool/helpers.js';
import { tempDir } from '../support/tmp.js';

let dir: string;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('cli-errors'));
  const owner = await Spool.open(dir, { logger: silentLogger(), fsync: false });
  await owner.putPending(makeSms('p1', { receivedAt: '2024-01-01T00:00:01Z' }));
  await owner.putPending(makeSms('d1', { receivedAt: '2024-01-01T00:00:02Z' }));
  await owner.markDead('d1', 'HTTP 422: unknown sender format', 422);
  await owner.putPending(makeSms('s1', { receivedAt: '2024-01-01T00:00:03Z' }));
  await owner.markDelivered('s1', { status: 200, at: new Date('2024-01-01T00:01:00Z') });
  await owner.close(); // no daemon: the commands below work on the directory alone
});
afterEach(async () => {
  await cleanup();
});

/** Run `pulsa-bridge queue <args> --spool DIR [--json]` in-process; the command must fail. */
async function fail(args: string[], json = true): Promise<{ err: unknown; out: string }> {
  const out: string[] = [];
  const io = { out: (t: string) => void out.push(t), err: (t: string) => void out.push(`ERR ${t}`) };
  const program = new Command().exitOverride().addCommand(queueCommands(io));
  const err = await program
    .parseAsync(['node', 'x', 'queue', ...args, '--spool', dir, ...(json ? ['--json'] : [])])
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(err, `queue ${args.join(' ')} should fail`).toBeInstanceOf(Error);
  return { err, out: out.join('') };
}

describe('queue --json: a failure says which one it is', () => {
  it.each([
    ['an id that is not a spool id', ['show', '../etc/passwd'], 'SPOOL_INVALID_ID', 'invalid-id'],
    ['an unknown id (show)', ['show', 'nope'], 'SPOOL_NOT_FOUND', 'not-found'],
    ['an unknown id (retry)', ['retry', 'nope'], 'SPOOL_NOT_FOUND', 'not-found'],
    ['an unknown id (drop)', ['drop', 'nope'], 'SPOOL_NOT_FOUND', 'not-found'],
    ['a record in another area (drop of a sent record)', ['drop', 's1'], 'SPOOL_WRONG_AREA', 'wrong-area'],
    ['a record in another area (retry of a sent record)', ['retry', 's1'], 'SPOOL_WRONG_AREA', 'wrong-area'],
  ] as const)('%s -> %s', async (_what, args, code, reason) => {
    const { err, out } = await fail([...args]);
    expect(err).toBeInstanceOf(SpoolError);
    expect(err).toMatchObject({ code, reason });
    const printed = JSON.parse(out) as { error: string; code: string; hint?: string };
    expect(printed).toMatchObject({ code, error: (err as Error).message });
  });

  it('an unreadable record file -> SPOOL_CORRUPT, with the hint', async () => {
    await writeFile(path.join(dir, 'dead', 'd1.json'), '{"v":1,"kind":"sms","id":"d1","checksum":"00"}\n');
    const { err, out } = await fail(['retry', 'd1']);
    expect(err).toMatchObject({ code: 'SPOOL_CORRUPT', reason: 'corrupt' });
    expect(JSON.parse(out)).toEqual({
      error: (err as Error).message,
      code: 'SPOOL_CORRUPT',
      hint: (err as SpoolError).hint,
    });
  });

  it('a disk failure (the record cannot be written) -> SPOOL_IO', async () => {
    await rm(path.join(dir, 'tmp'), { recursive: true });
    const { err, out } = await fail(['retry', 'd1']);
    expect(err).toMatchObject({ code: 'SPOOL_IO', reason: 'io' });
    expect(JSON.parse(out)).toMatchObject({ code: 'SPOOL_IO' });
    expect((JSON.parse(out) as { error: string }).error).toMatch(/^cannot write pending\/d1\.json: /);
  });

  it('a spool directory that does not exist -> SPOOL_NOT_FOUND', async () => {
    await cleanup();
    const { out } = await fail(['ls']);
    expect(JSON.parse(out)).toMatchObject({
      code: 'SPOOL_NOT_FOUND',
      hint: 'check --spool or spool.dir in the config',
    });
  });

  it('without --json nothing is printed on stdout: the error goes to the caller as before', async () => {
    const { err, out } = await fail(['show', 'nope'], false);
    expect(out).toBe('');
    expect(err).toMatchObject({ code: 'SPOOL_NOT_FOUND', message: 'no record nope in the spool' });
  });

  it('a second owner of a spool is refused with SPOOL_LOCKED', async () => {
    const first = await Spool.open(dir, { logger: silentLogger(), fsync: false });
    try {
      await expect(Spool.open(dir, { logger: silentLogger(), fsync: false })).rejects.toMatchObject({
        code: 'SPOOL_LOCKED',
        reason: 'locked',
      });
    } finally {
      await first.close();
    }
  });
});
