/**
 * The peer lookup on a real Unix socket through the real perl: this process's pid, uid and gid; perl's Socket module
 * is loaded once per perl (for the option's numbers), not by every lookup; a perl that fails is reported, never
 * guessed around.
 */
import { chmod, readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PERL, peerCredentials, type PeerLookup } from '../../src/control/server/peer.js';
import { tempDir } from '../support/tmp.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Connects `n` times to a fresh server and looks each accepted socket's peer up with `perl`. */
async function lookups(dir: string, perl: string, n: number): Promise<PeerLookup[]> {
  const socketPath = path.join(dir, `s${Math.random().toString(36).slice(2)}.sock`);
  const results: PeerLookup[] = [];
  const server = net.createServer((sock) => {
    void peerCredentials(sock, { perl }).then((r) => {
      results.push(r);
      sock.end();
    });
  });
  await new Promise<void>((r) => server.listen(socketPath, r));
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  for (let i = 0; i < n; i++)
    await new Promise<void>((r) => {
      const c = net.connect(socketPath);
      c.on('close', () => r());
      c.resume();
    });
  return results;
}

describe('peerCredentials', () => {
  it('reads this process as the peer; Socket is loaded once, each lookup uses the numbers it gave', async () => {
    const { dir, cleanup } = await tempDir('pulsa-peer-');
    cleanups.push(cleanup);
    const log = path.join(dir, 'scripts');
    const perl = path.join(dir, 'perl');
    // a perl that records each script it runs, then runs it
    await writeFile(perl, `#!/bin/sh\nprintf '%s\\n' "$2" >> '${log}'\nexec ${PERL} "$@"\n`);
    await chmod(perl, 0o755);
    const results = await lookups(dir, perl, 3);
    const me = { pid: process.pid, uid: process.getuid!(), gid: process.getgid!() };
    expect(results).toEqual(Array(3).fill({ ok: true, peer: expect.objectContaining(me) as unknown }));
    const scripts = (await readFile(log, 'utf8')).trim().split('\n');
    expect(scripts).toHaveLength(4);
    expect(scripts.filter((s) => s.includes('use Socket'))).toHaveLength(1);
    expect(scripts[0]).toContain('use Socket');
    for (const s of scripts.slice(1)) expect(s).toMatch(/getsockopt\(\$s, \d+, \d+\)/);
  });

  it('a perl that cannot say the numbers fails the lookup with its words, and is asked again next time', async () => {
    const { dir, cleanup } = await tempDir('pulsa-peer-');
    cleanups.push(cleanup);
    const perl = path.join(dir, 'perl');
    await writeFile(perl, `#!/bin/sh\necho run >> '${dir}/runs'\necho "Can't locate Socket.pm" >&2\nexit 2\n`);
    await chmod(perl, 0o755);
    const results = await lookups(dir, perl, 2);
    expect(results).toEqual(
      Array(2).fill({
        ok: false,
        error: `SO_PEERCRED through ${perl} failed: perl exited 2: Can't locate Socket.pm`,
      }),
    );
    expect((await readFile(path.join(dir, 'runs'), 'utf8')).trim().split('\n')).toHaveLength(2);
  });
});
