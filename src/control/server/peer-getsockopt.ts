/**
 * SO_PEERCRED and SO_PEERGROUPS read in this process: glibc's getsockopt(2) called through koffi (a maintained FFI
 * library with prebuilt binaries; Node has no API for them). Loaded once, on first use (the CLI never loads it). Only
 * on little-endian Linux x64, arm64 and arm (SOL_SOCKET 1, SO_PEERCRED 17, SO_PEERGROUPS 59 there; struct ucred and
 * gid_t as 32-bit words), and on arm only on an ARMv7 or later CPU (koffi's arm binary is ARMv7 code: a Pi Zero or 1
 * would die of an illegal instruction, not fail to load). Elsewhere, or when koffi or libc does not load (its armv7
 * binary needs glibc 2.34), it says why and peer.ts asks perl per connection.
 */
import { constants, endianness, machine } from 'node:os';

export interface SockoptReader {
  /** How the credentials are read, for the daemon's start line. */
  via: string;
  /**
   * The peer of a connected Unix socket, by its file descriptor, as the kernel recorded it at connect(): groups are
   * the supplementary ones (undefined when SO_PEERGROUPS gives none: a kernel older than 4.13, an emulator). Throws
   * with the errno's name when SO_PEERCRED fails.
   */
  read(fd: number): { pid: number; uid: number; gid: number; groups?: number[] };
}

export type SockoptLoad = { ok: true; reader: SockoptReader } | { ok: false; error: string };

/** The numbers of asm-generic/socket.h, which x86-64, arm and arm64 share. */
const SOL_SOCKET = 1;
const SO_PEERCRED = 17;
const SO_PEERGROUPS = 59;
const UCRED_BYTES = 12;
/** Room for this many groups at first; a peer in more gets ERANGE and the size it needs (at most NGROUPS_MAX). */
const GROUPS_FIRST_ASKED = 64;
const GROUPS_MAX = 65536;

/** Why getsockopt is not called in process on this machine (undefined: it may be). PURE. */
export function unsupportedHere(platform: string, arch: string, cpu: string, order = 'LE'): string | undefined {
  if (platform !== 'linux') return `not Linux (${platform})`;
  if (order !== 'LE') return 'a big-endian CPU';
  if (!['x64', 'arm64', 'arm'].includes(arch)) return `no SO_PEERCRED layout known for ${arch}`;
  // uname's machine: armv6l on a Pi Zero or 1; armv7l or armv8l on later ones; aarch64 under a 64-bit kernel
  if (arch === 'arm' && !/^(armv[78]|aarch64)/.test(cpu)) return `koffi's arm binary needs ARMv7, this CPU is ${cpu}`;
  return undefined;
}

function errnoName(n: number): string {
  return Object.entries(constants.errno).find(([, v]) => v === n)?.[0] ?? `errno ${n}`;
}

async function load(): Promise<SockoptLoad> {
  const why = unsupportedHere(process.platform, process.arch, machine(), endianness());
  if (why) return { ok: false, error: why };
  try {
    const koffi = (await import('koffi')).default;
    const getsockopt = koffi
      .load('libc.so.6')
      .func('int getsockopt(int fd, int level, int name, _Out_ uint8_t *value, _Inout_ uint32_t *length)');
    const call = (fd: number, option: number, value: Buffer, length: number[]) =>
      getsockopt(fd, SOL_SOCKET, option, value, length) === 0 ? 0 : (koffi.errno() as number);
    const groups = (fd: number): number[] | undefined => {
      let bytes = GROUPS_FIRST_ASKED * 4;
      for (;;) {
        const value = Buffer.alloc(bytes);
        const length = [bytes];
        const errno = call(fd, SO_PEERGROUPS, value, length);
        if (errno === 0) return Array.from({ length: length[0]! / 4 }, (_, i) => value.readUInt32LE(i * 4));
        // ENOPROTOOPT (older than 4.13) or anything else: /proc then, not a refusal of credentials already read
        if (errno !== constants.errno.ERANGE || bytes === GROUPS_MAX * 4) return undefined;
        // the size it needs, written back; an emulator that writes none back (qemu-user) gets the most there can be
        bytes = length[0]! > bytes ? Math.min(length[0]!, GROUPS_MAX * 4) : GROUPS_MAX * 4;
      }
    };
    const read = (fd: number) => {
      const value = Buffer.alloc(UCRED_BYTES);
      const length = [UCRED_BYTES];
      const errno = call(fd, SO_PEERCRED, value, length);
      if (errno !== 0) throw new Error(`getsockopt(SO_PEERCRED): ${errnoName(errno)}`);
      if (length[0] !== UCRED_BYTES) throw new Error(`getsockopt(SO_PEERCRED): ${length[0]} bytes, not ${UCRED_BYTES}`);
      const peer = { pid: value.readInt32LE(0), uid: value.readUInt32LE(4), gid: value.readUInt32LE(8) };
      const supplementary = groups(fd);
      return supplementary ? { ...peer, groups: supplementary } : peer;
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
