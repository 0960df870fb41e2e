/**
 * SO_PEERCRED read in this process: glibc's getsockopt(2) called through koffi (a maintained FFI library with prebuilt
 * binaries; Node has no API for the option). Loaded once, on first use (the CLI never loads it). Only on Linux x64,
 * arm64 and arm (SOL_SOCKET 1 and SO_PEERCRED 17 there, struct ucred as three 32-bit little-endian words), and on arm
 * only on an ARMv7 or later CPU (koffi's arm binary is ARMv7 code: a Pi Zero or 1 would die of an illegal instruction,
 * not fail to load). Elsewhere, or when koffi or libc does not load, it says why and peer.ts asks perl per connection.
 */
import { constants, machine } from 'node:os';

export interface SockoptReader {
  /** How the credentials are read, for the daemon's start line. */
  via: string;
  /** The peer of a connected Unix socket, by its file descriptor; throws with the errno's name. */
  read(fd: number): { pid: number; uid: number; gid: number };
}

export type SockoptLoad = { ok: true; reader: SockoptReader } | { ok: false; error: string };

/** The numbers of asm-generic/socket.h, which x86-64, arm and arm64 share. */
const SOL_SOCKET = 1;
const SO_PEERCRED = 17;
const UCRED_BYTES = 12;

/** Why getsockopt is not called in process on this machine (undefined: it may be). PURE. */
export function unsupportedHere(platform: string, arch: string, cpu: string): string | undefined {
  if (platform !== 'linux') return `not Linux (${platform})`;
  if (!['x64', 'arm64', 'arm'].includes(arch)) return `no SO_PEERCRED layout known for ${arch}`;
  // uname's machine: armv6l on a Pi Zero or 1; armv7l or armv8l on later ones; aarch64 under a 64-bit kernel
  if (arch === 'arm' && !/^(armv[78]|aarch64)/.test(cpu)) return `koffi's arm binary needs ARMv7, this CPU is ${cpu}`;
  return undefined;
}

function errnoName(n: number): string {
  return Object.entries(constants.errno).find(([, v]) => v === n)?.[0] ?? `errno ${n}`;
}

async function load(): Promise<SockoptLoad> {
  const why = unsupportedHere(process.platform, process.arch, machine());
  if (why) return { ok: false, error: why };
  try {
    const koffi = (await import('koffi')).default;
    const getsockopt = koffi
      .load('libc.so.6')
      .func('int getsockopt(int fd, int level, int name, _Out_ uint8_t *value, _Inout_ uint32_t *length)');
    const read = (fd: number) => {
      const value = Buffer.alloc(UCRED_BYTES);
      const length = [UCRED_BYTES];
      if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, value, length) !== 0)
        throw new Error(`getsockopt(SO_PEERCRED): ${errnoName(koffi.errno())}`);
      if (length[0] !== UCRED_BYTES) throw new Error(`getsockopt(SO_PEERCRED): ${length[0]} bytes, not ${UCRED_BYTES}`);
      return { pid: value.readInt32LE(0), uid: value.readUInt32LE(4), gid: value.readUInt32LE(8) };
    };
    return { ok: true, reader: { via: `getsockopt through koffi ${koffi.version}`, read } };
  } catch (err) {
    return { ok: false, error: `koffi does not load: ${(err as Error).message.split('\n')[0]}` };
  }
}

let loading: Promise<SockoptLoad> | undefined;

/** The reader, loaded on the first call (the same answer afterwards). */
export function loadSockopt(): Promise<SockoptLoad> {
  return (loading ??= load());
}
