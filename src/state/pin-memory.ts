/**
 * Rejected SIM PINs, remembered across restarts and reconnects (issue 11, item 1): a SIM allows three wrong PINs, then
 * needs its PUK; a daemon that re-sent a rejected PIN at every start or SIM retry locked production SIMs.
 * Contract and invariants:
 * - One JSON file, `pin-memory.json`, in the state directory: per SIM key (ICCID, IMSI, or `modem:<name>` when
 *   neither is readable before unlock) a salted SHA-256 of the rejected PIN and when it was rejected. The PIN itself is
 *   never written (nor logged): a configured PIN that hashes differently is a new PIN and is tried once.
 * - Written tmp -> fsync -> rename -> fsync dir, so a crash leaves the old file or the new one, never half of one.
 * - A missing file is an empty memory; an unreadable or foreign one is logged and treated as empty only for reading:
 *   it is replaced at the next write (a rejected PIN is then remembered again).
 * - Calls are serialised (one read-modify-write at a time); every modem of the daemon may share one instance.
 */
import { createHash } from 'node:crypto';
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import type { RejectedPins } from '../modem/sim-unlock.js';

export const PIN_MEMORY_FILE = 'pin-memory.json';

interface Entry {
  /** sha256(key + NUL + pin), hex. */
  pinHash: string;
  rejectedAt: string;
}

interface FileBody {
  v: 1;
  sims: Record<string, Entry>;
}

/** The salted hash kept for a rejected PIN (the key is the salt: the same PIN on two SIMs hashes differently). */
export function pinHash(key: string, pin: string): string {
  return createHash('sha256').update(`${key}\u0000${pin}`).digest('hex');
}

export class PinMemoryFile implements RejectedPins {
  readonly file: string;
  private readonly dir: string;
  private readonly log: Logger;
  private queue: Promise<unknown> = Promise.resolve();
  /** Rejections of this process, also when writing them failed (a full disk must not let a PIN be retried). */
  private readonly recent = new Map<string, Entry>();

  constructor(stateDir: string, log: Logger) {
    this.dir = stateDir;
    this.file = join(stateDir, PIN_MEMORY_FILE);
    this.log = log;
  }

  rejectedAt(key: string, pin: string): Promise<string | undefined> {
    return this.serial(async () => {
      const e = this.recent.get(key) ?? (await this.read()).sims[key];
      return e && e.pinHash === pinHash(key, pin) ? e.rejectedAt : undefined;
    });
  }

  remember(key: string, pin: string): Promise<void> {
    return this.serial(async () => {
      const entry = { pinHash: pinHash(key, pin), rejectedAt: new Date().toISOString() };
      this.recent.set(key, entry);
      const body = await this.read();
      body.sims[key] = entry;
      await this.write(body);
    });
  }

  forget(key: string): Promise<void> {
    return this.serial(async () => {
      this.recent.delete(key);
      const body = await this.read();
      if (!(key in body.sims)) return;
      delete body.sims[key];
      await this.write(body);
    });
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async read(): Promise<FileBody> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { v: 1, sims: {} };
      throw err;
    }
    try {
      const body = JSON.parse(text) as Partial<FileBody>;
      if (body.v === 1 && body.sims && typeof body.sims === 'object') return { v: 1, sims: { ...body.sims } };
      this.log.error({ file: this.file }, `${this.file} is not a PIN memory of version 1: ignored, replaced at the next write`);
    } catch (err) {
      this.log.error({ file: this.file }, `${this.file} is not valid JSON (${errorMessage(err)}): ignored, replaced at the next write`);
    }
    return { v: 1, sims: {} };
  }

  private async write(body: FileBody): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const tmp = `${this.file}.tmp`;
    const fh = await open(tmp, 'w', 0o600);
    try {
      await fh.writeFile(JSON.stringify(body, null, 2));
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, this.file);
    const dirHandle = await open(this.dir, 'r');
    try {
      await dirHandle.sync();
    } catch (err) {
      // Some file systems refuse fsync on a directory; the rename itself is done.
      this.log.debug({ err }, 'fsync of the state directory failed (ignored)');
    } finally {
      await dirHandle.close();
    }
  }
}
