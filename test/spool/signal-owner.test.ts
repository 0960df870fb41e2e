/**
 * A client (`pulsa-bridge queue retry|drop`, often run as root) sends SIGHUP only to a pulsa-bridge
 * process of the spool's owner. A lock that names another live process (a copied spool, a hand-made lock, a pid the
 * lock's start time happens to match) must not get a signal whose default action would end it.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { makeSms } from './helpers.js';
import { captureLogger } from '../support/logger.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';
import { silentLogger } from '../../src/log.js';
import { notOurDaemon, parseProcStartTime } from '../../src/spool/lock.js';
import { Spool } from '../../src/spool/store.js';

const hasProc = existsSync('/proc/self/stat');
let dir: string;
let cleanup: () => Promise<void>;
const children: ChildProcess[] = [];

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('signal-owner'));
  const owner = await Spool.open(dir, { logger: silentLogger(), fsync: false });
  await owner.putPending(makeSms('d1'));
  await owner.markDead('d1', 'HTTP 400: x');
  await owner.close();
});
afterEach(async () => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  await cleanup();
});

async function startChild(args: string[]): Promise<ChildProcess> {
  const child = spawn(args[0]!, args.slice(1), { stdio: 'ignore' });
  children.push(child);
  await until(
    async () => (await readFile(`/proc/${child.pid}/cmdline`, 'utf8').catch(() => '')).includes(args[args.length - 1]!),
    'the child running',
    5000,
  );
  return child;
}

/** A lock naming `pid` as a live owner (right boot, right start time). */
async function lockFor(pid: number): Promise<void> {
  const bootId = (await readFile('/proc/sys/kernel/random/boot_id', 'utf8')).trim();
  const procStart = parseProcStartTime(await readFile(`/proc/${pid}/stat`, 'utf8'));
  await writeFile(
    path.join(dir, 'spool.lock'),
    JSON.stringify({ pid, startedAt: new Date().toISOString(), bootId, procStart }),
  );
}

async function retryAsClient(): Promise<{ signals: Array<[number, string]>; warnings: string[] }> {
  const signals: Array<[number, string]> = [];
  const { logger, lines } = captureLogger();
  const client = await Spool.open(dir, { logger, role: 'client', signal: (pid, sig) => void signals.push([pid, sig]) });
  await client.retry('d1');
  await client.close();
  return { signals, warnings: lines.filter((l) => l.level === 40).map((l) => l.msg) };
}

describe.skipIf(!hasProc)("the client signals only the spool's daemon", () => {
  it('a live process that is not pulsa-bridge is not signalled (warned instead)', async () => {
    const sleeper = await startChild(['sleep', '60']);
    await lockFor(sleeper.pid!);
    const r = await retryAsClient();
    expect(r.signals).toEqual([]);
    expect(r.warnings.join('\n')).toContain(`the lock names process ${sleeper.pid}, which is not the spool's daemon`);
    expect(await notOurDaemon(sleeper.pid!, path.join(dir, 'spool.lock'))).toMatch(/it runs "sleep 60"/);
  });

  it("a pulsa-bridge process of the lock's owner is signalled", async () => {
    const daemon = await startChild([
      process.execPath,
      '-e',
      'setInterval(() => {}, 1000)',
      '/opt/pulsa-bridge/bin/pulsa-bridge',
    ]);
    await lockFor(daemon.pid!);
    const r = await retryAsClient();
    expect(r.signals).toEqual([[daemon.pid, 'SIGHUP']]);
  });

  it.skipIf(process.getuid?.() !== 0)(
    "a pulsa-bridge process of another user than the lock's owner is not signalled",
    async () => {
      const daemon = await startChild([
        process.execPath,
        '-e',
        'setInterval(() => {}, 1000)',
        '/opt/pulsa-bridge/bin/pulsa-bridge',
      ]);
      await lockFor(daemon.pid!);
      await chown(path.join(dir, 'spool.lock'), 65534, 65534);
      const r = await retryAsClient();
      expect(r.signals).toEqual([]);
      expect(r.warnings.join('\n')).toContain('it runs as uid 0, the spool lock belongs to uid 65534');
    },
  );
});
