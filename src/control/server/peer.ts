/**
 * Who is on the other end of an accepted control connection: pid, uid, gid and supplementary groups as the kernel
 * recorded them at connect(), read in process (SO_PEERCRED, SO_PEERGROUPS) through ./peer-getsockopt.ts where it
 * loads. Elsewhere (e.g. an armv6 Pi) a short-lived /usr/bin/perl is given the socket as fd 3 for SO_PEERCRED (the
 * option's numbers asked of perl's Socket module once); there, and on a kernel without SO_PEERGROUPS, the groups come
 * from /proc/<pid>/status while it still shows the same uid. Never throws: without credentials it says why, and the
 * caller fails closed. At most MAX_LOOKUPS perl lookups run at once.
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { loadSockopt, type SockoptLoad } from './peer-getsockopt.js';

export interface PeerCredentials {
  pid: number;
  uid: number;
  gid: number;
  /** The primary gid and the supplementary groups (from SO_PEERGROUPS, or /proc when it could be read). */
  groups: readonly number[];
}

export type PeerLookup = { ok: true; peer: PeerCredentials } | { ok: false; error: string };

/** Where Debian installs perl (an absolute path: the unit's PATH is not searched). */
export const PERL = '/usr/bin/perl';
const LOOKUP_TIMEOUT_MS = 3000;
const MAX_LOOKUPS = 4;

/** Asked once per perl: the numbers of SOL_SOCKET and SO_PEERCRED on this machine (they differ between architectures). */
const CONSTANTS_SCRIPT = 'use Socket qw(SOL_SOCKET SO_PEERCRED); print SOL_SOCKET, " ", SO_PEERCRED, "\\n";';

/**
 * The lookup itself, with those numbers written in: loading perl's Socket module takes about two thirds of a lookup
 * (30 against 10 ms here), paid by every control connection; the numbers are all it was loaded for.
 */
function lookupScript(c: { level: number; option: number }): string {
  return [
    'open(my $s, "+<&=3") or die "fd 3: $!\\n";',
    `my $c = getsockopt($s, ${c.level}, ${c.option}) or die "SO_PEERCRED: $!\\n";`,
    'my ($p, $u, $g) = unpack("lLL", $c);',
    'print "$p $u $g\\n";',
  ].join(' ');
}

const constants = new Map<string, Promise<{ level: number; option: number }>>();

/** SOL_SOCKET and SO_PEERCRED as this perl's Socket module gives them (kept once known; a failure is asked again). */
function socketConstants(perl: string): Promise<{ level: number; option: number }> {
  let known = constants.get(perl);
  if (!known) {
    known = runPerl(perl, CONSTANTS_SCRIPT).then((text) => {
      const m = /^(\d+) (\d+)\s*$/.exec(text);
      if (!m) throw new Error(`SOL_SOCKET, SO_PEERCRED: unexpected answer ${JSON.stringify(text.slice(0, 80))}`);
      return { level: Number(m[1]), option: Number(m[2]) };
    });
    known.catch(() => constants.delete(perl));
    constants.set(perl, known);
  }
  return known;
}

let running = 0;
const waiting: Array<() => void> = [];

async function turn<T>(fn: () => Promise<T>): Promise<T> {
  if (running >= MAX_LOOKUPS) await new Promise<void>((r) => waiting.push(r));
  running++;
  try {
    return await fn();
  } finally {
    running--;
    waiting.shift()?.();
  }
}

/** `Uid:` (effective, the second field) and `Groups:` of a /proc/<pid>/status text. PURE. */
export function parseProcStatus(text: string): { euid?: number; groups: number[] } {
  const field = (name: string) =>
    new RegExp(`^${name}:[ \\t]*(.*)$`, 'm').exec(text)?.[1]?.trim().split(/\s+/).filter(Boolean).map(Number) ?? [];
  const uids = field('Uid');
  return {
    ...(uids[1] !== undefined ? { euid: uids[1] } : {}),
    groups: field('Groups').filter((n) => Number.isInteger(n)),
  };
}

/**
 * The socket's file descriptor: passed to the child as a number (inherited as is), not as a stream, because Node stops
 * reading a stream it hands to a child as stdio.
 */
function fdOf(socket: Socket): number | undefined {
  const fd = (socket as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : undefined;
}

/** Runs a perl one-liner, with the socket (if any) as its fd 3; its standard output. */
function runPerl(perl: string, script: string, socket?: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    const fd = socket ? fdOf(socket) : undefined;
    if (socket && fd === undefined) return reject(new Error('the socket has no file descriptor'));
    let child;
    try {
      child = spawn(perl, ['-e', script], {
        stdio: ['ignore', 'pipe', 'pipe', ...(fd === undefined ? [] : [fd])],
        env: {},
        timeout: LOOKUP_TIMEOUT_MS,
      });
    } catch (err) {
      return reject(err instanceof Error ? err : new Error(String(err)));
    }
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) resolve(out);
      else reject(new Error(signal ? `perl ended by ${signal}` : `perl exited ${code}: ${err.trim().slice(0, 200)}`));
    });
  });
}

export interface PeerLookupOptions {
  /** The perl of the fallback (default /usr/bin/perl). */
  perl?: string;
  /** The in-process reader (default: ./peer-getsockopt.ts's); a failed load means perl per connection. */
  sockopt?: () => Promise<SockoptLoad>;
}

/** How this process reads its peers' credentials, for the daemon's start line. */
export async function peerLookupMethod(o: PeerLookupOptions = {}): Promise<{ inProcess: boolean; text: string }> {
  const l = await (o.sockopt ?? loadSockopt)();
  return l.ok
    ? { inProcess: true, text: `peer credentials read in process (${l.reader.via})` }
    : { inProcess: false, text: `peer credentials read by ${o.perl ?? PERL}, one run per connection (${l.error})` };
}

/** pid, uid and gid of the socket's peer, in process or through perl; its groups when the kernel gave them. */
async function credentials(
  socket: Socket,
  o: PeerLookupOptions,
): Promise<{ pid: number; uid: number; gid: number; groups?: number[] }> {
  const l = await (o.sockopt ?? loadSockopt)();
  if (l.ok) {
    const fd = fdOf(socket);
    if (fd === undefined) throw new Error('the socket has no file descriptor');
    return l.reader.read(fd);
  }
  const perl = o.perl ?? PERL;
  const text = await turn(async () => {
    if (socket.destroyed) throw new Error('the client went away');
    try {
      return await runPerl(perl, lookupScript(await socketConstants(perl)), socket);
    } catch (err) {
      throw new Error(`SO_PEERCRED through ${perl} failed: ${(err as Error).message}`);
    }
  });
  const m = /^(-?\d+) (\d+) (\d+)\s*$/.exec(text);
  if (!m) throw new Error(`SO_PEERCRED: unexpected answer ${JSON.stringify(text.slice(0, 80))}`);
  return { pid: Number(m[1]), uid: Number(m[2]), gid: Number(m[3]) };
}

/** The peer of an accepted Unix socket (see the header). */
export async function peerCredentials(socket: Socket, o: PeerLookupOptions = {}): Promise<PeerLookup> {
  if (socket.destroyed) return { ok: false, error: 'the client went away' };
  let peer: Awaited<ReturnType<typeof credentials>>;
  try {
    peer = await credentials(socket, o);
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
  const { pid, uid, gid } = peer;
  if (peer.groups) return { ok: true, peer: { pid, uid, gid, groups: [...new Set([gid, ...peer.groups])] } };
  let groups: number[] = [gid];
  try {
    const st = parseProcStatus(await readFile(`/proc/${pid}/status`, 'utf8'));
    if (st.euid === uid) groups = [...new Set([gid, ...st.groups])];
  } catch {
    // The peer is gone or /proc is hidden (hidepid): its primary gid alone counts (fails closed for other groups).
  }
  return { ok: true, peer: { pid, uid, gid, groups } };
}
