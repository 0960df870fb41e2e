/**
 * The peer lookup on a real Unix socket: in process (koffi, getsockopt) and through the real perl, this process's pid,
 * uid and gid both ways; in process, perl never runs; where the in-process reader does not load, perl does, its
 * Socket module loaded once per perl (for the option's numbers); a perl that fails is reported, never guessed around.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, open, readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { loadSockopt, unsupportedHere, type SockoptLoad } from '../../src/control/server/peer-getsockopt.js';
import { PERL, peerCredentials, peerLookupMethod, type PeerLookup } from '../../src/control/server/peer.js';
import { tempDir } from '../support/tmp.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A machine where the in-process reader does not load (an armv6 Pi): perl per connection. */
const noSockopt = async (): Promise<SockoptLoad> => ({ ok: false, error: "koffi's arm binary needs ARMv7" });

/** Connects `n` times to a fresh server and looks each accepted socket's peer up with `perl` (or in process). */
async function lookups(
  dir: string,
  perl: string,
  n: number,
  sockopt: () => Promise<SockoptLoad> = noSockopt,
): Promise<PeerLookup[]> {
  const socketPath = path.join(dir, `s${Math.random().toString(36).slice(2)}.sock`);
  const results: PeerLookup[] = [];
  const server = net.createServer((sock) => {
    void peerCredentials(sock, { perl, sockopt }).then((r) => {
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

/** A perl that records each script it runs in DIR/scripts, then runs it. */
async function recordingPerl(dir: string): Promise<{ perl: string; scripts: () => Promise<string[]> }> {
  const log = path.join(dir, 'scripts');
  const perl = path.join(dir, 'perl');
  await writeFile(perl, `#!/bin/sh\nprintf '%s\\n' "$2" >> '${log}'\nexec ${PERL} "$@"\n`);
  await chmod(perl, 0o755);
  return {
    perl,
    scripts: async () => (await readFile(log, 'utf8').catch(() => '')).trim().split('\n').filter(Boolean),
  };
}

const me = () => ({ pid: process.pid, uid: process.getuid!(), gid: process.getgid!() });

/** A client that connects to the socket named by its environment and stays until killed. */
const CLIENT = `require('node:net').connect(process.env.PEER_SOCKET).on('error', () => process.exit(3)); setInterval(() => {}, 1000);`;

/** A server in DIR, one client process (cmd args) connected to it: the accepted socket and the client. */
async function acceptOne(
  dir: string,
  cmd: string,
  args: string[],
  o: { mode?: number },
): Promise<{ socket: net.Socket; client: ChildProcess }> {
  const socketPath = path.join(dir, 'one.sock');
  // not read from: the client's exit does not end and destroy the accepted socket
  const server = net.createServer({ pauseOnConnect: true });
  await new Promise<void>((r) => server.listen(socketPath, r));
  if (o.mode !== undefined) await chmod(socketPath, o.mode);
  const accepted = new Promise<net.Socket>((r) => server.once('connection', r));
  const client = spawn(cmd, args, { env: { PEER_SOCKET: socketPath }, stdio: 'ignore' });
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  cleanups.push(() => void client.kill('SIGKILL'));
  const socket = await accepted;
  cleanups.push(() => void socket.destroy());
  return { socket, client };
}

/**
 * As root: a client of uid 65534, gid 100 and these supplementary groups (setpriv) connected, then gone (its /proc
 * with it): what is read after that the kernel kept at connect. The accepted socket and the (exited) client.
 */
async function otherUserGone(groups: readonly number[]): Promise<{ socket: net.Socket; client: ChildProcess }> {
  const { dir, cleanup } = await tempDir('pulsa-peer-');
  cleanups.push(cleanup);
  await chmod(dir, 0o711);
  const { socket, client } = await acceptOne(
    dir,
    '/usr/bin/setpriv',
    ['--reuid', '65534', '--regid', '100', '--groups', groups.join(','), process.execPath, '-e', CLIENT],
    { mode: 0o777 },
  );
  client.kill();
  await new Promise((r) => client.once('exit', r));
  return { socket, client };
}

describe('peerCredentials in process (getsockopt through koffi)', () => {
  it('reads this process as the peer, perl never runs, and says so for the start line', async () => {
    const { dir, cleanup } = await tempDir('pulsa-peer-');
    cleanups.push(cleanup);
    const { perl, scripts } = await recordingPerl(dir);
    const results = await lookups(dir, perl, 3, loadSockopt);
    expect(results).toEqual(Array(3).fill({ ok: true, peer: expect.objectContaining(me()) as unknown }));
    expect(await scripts()).toEqual([]);
    expect(await peerLookupMethod()).toEqual({
      inProcess: true,
      text: expect.stringMatching(/^peer credentials read in process \(getsockopt through koffi \d+\.\d+\.\d+\)$/),
    });
  });

  it('reads on one accepted socket what perl reads on it', async () => {
    const { dir, cleanup } = await tempDir('pulsa-peer-');
    cleanups.push(cleanup);
    const { socket } = await acceptOne(dir, process.execPath, ['-e', CLIENT], {});
    const inProcess = await peerCredentials(socket, { sockopt: loadSockopt });
    const viaPerl = await peerCredentials(socket, { sockopt: noSockopt });
    expect(inProcess).toEqual(viaPerl);
    expect(inProcess.ok && inProcess.peer.pid).not.toBe(process.pid);
  });

  it.runIf(process.getuid?.() === 0)(
    'another user (setpriv): its uid, gid and groups as the kernel recorded them at connect, the peer gone since',
    async () => {
      // /proc gone with the client: the groups only the kernel kept (perl's path falls back to the gid)
      const { socket, client } = await otherUserGone([4, 20]);
      expect(await peerCredentials(socket, { sockopt: loadSockopt })).toEqual({
        ok: true,
        peer: { pid: client.pid, uid: 65534, gid: 100, groups: [100, 4, 20] },
      });
      expect(await peerCredentials(socket, { sockopt: noSockopt })).toEqual({
        ok: true,
        peer: { pid: client.pid, uid: 65534, gid: 100, groups: [100] },
      });
    },
  );

  it.runIf(process.getuid?.() === 0)(
    'a peer in more groups than first asked for: every one of them, the peer gone since',
    async () => {
      const many = Array.from({ length: 100 }, (_, i) => 5000 + i);
      // gone before the read: /proc cannot stand in for a read that failed
      const { socket, client } = await otherUserGone(many);
      expect(await peerCredentials(socket, { sockopt: loadSockopt })).toEqual({
        ok: true,
        peer: { pid: client.pid, uid: 65534, gid: 100, groups: [100, ...many] },
      });
    },
  );

  it('a reader that throws: no credentials, its words, and perl is not asked instead', async () => {
    const { dir, cleanup } = await tempDir('pulsa-peer-');
    cleanups.push(cleanup);
    const { perl, scripts } = await recordingPerl(dir);
    const failing = async (): Promise<SockoptLoad> => ({
      ok: true,
      reader: {
        via: 'a test reader',
        read: () => {
          throw new Error('getsockopt(SO_PEERCRED): EINVAL');
        },
      },
    });
    expect(await lookups(dir, perl, 1, failing)).toEqual([{ ok: false, error: 'getsockopt(SO_PEERCRED): EINVAL' }]);
    expect(await scripts()).toEqual([]);
  });

  it('a descriptor that is not a socket, or none: the errno by name, no answer made up', async () => {
    const l = await loadSockopt();
    if (!l.ok) throw new Error(l.error);
    const file = await open(fileURLToPath(import.meta.url), 'r');
    try {
      expect(() => l.reader.read(file.fd)).toThrow(/^getsockopt\(SO_PEERCRED\): ENOTSOCK$/);
    } finally {
      await file.close();
    }
    expect(() => l.reader.read(987_654)).toThrow(/^getsockopt\(SO_PEERCRED\): EBADF$/);
  });

  it("only where the layout is known and koffi's binary can run", () => {
    expect(unsupportedHere('linux', 'x64', 'x86_64')).toBeUndefined();
    expect(unsupportedHere('linux', 'arm64', 'aarch64')).toBeUndefined();
    expect(unsupportedHere('linux', 'arm', 'armv7l')).toBeUndefined();
    expect(unsupportedHere('linux', 'arm', 'armv8l')).toBeUndefined();
    expect(unsupportedHere('linux', 'arm', 'aarch64')).toBeUndefined(); // 32-bit Raspberry Pi OS, 64-bit kernel
    expect(unsupportedHere('linux', 'arm', 'armv6l')).toBe("koffi's arm binary needs ARMv7, this CPU is armv6l");
    expect(unsupportedHere('linux', 'ppc64', 'ppc64le')).toBe('no SO_PEERCRED layout known for ppc64');
    expect(unsupportedHere('darwin', 'arm64', 'arm64')).toBe('not Linux (darwin)');
    expect(unsupportedHere('linux', 'arm64', 'aarch64', 'BE')).toBe('a big-endian CPU');
  });
});

describe('peerCredentials through perl (where the in-process reader does not load)', () => {
  it('says so for the start line, with the reason', async () => {
    expect(await peerLookupMethod({ sockopt: noSockopt })).toEqual({
      inProcess: false,
      text: `peer credentials read by ${PERL}, one run per connection (koffi's arm binary needs ARMv7)`,
    });
  });

  it('reads this process as the peer; Socket is loaded once, each lookup uses the numbers it gave', async () => {
    const { dir, cleanup } = await tempDir('pulsa-peer-');
    cleanups.push(cleanup);
    const { perl, scripts: ran } = await recordingPerl(dir);
    const results = await lookups(dir, perl, 3);
    expect(results).toEqual(Array(3).fill({ ok: true, peer: expect.objectContaining(me()) as unknown }));
    const scripts = await ran();
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
