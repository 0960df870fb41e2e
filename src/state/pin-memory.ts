/**
 * Rejected SIM PINs, remembered across restarts and reconnects (three wrong PINs lock a SIM): `pin-memory.json`, mode
 * 0600, per SIM key a SHA-256 of key and PIN with its state. The hash does not protect a short PIN; the file mode does.
 * Written atomically (tmp, fsync, rename, fsync dir). A missing file is empty; an unreadable or unknown one makes every
 * lookup reject (no PIN sent) and is never overwritten. What this process recorded is also kept in memory. Calls are
 * serialised; every modem may share one instance.
 */
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import { attemptEntries, findAttempt, type PinAttempt, type PinEntries } from '../modem/pin-records.js';
import type { RejectedPins } from '../modem/sim-unlock.js';

export { pinHash } from '../modem/pin-records.js';

export const PIN_MEMORY_FILE = 'pin-memory.json';

interface FileBody {
  v: 1;
  sims: PinEntries;
}

/** The memory file exists and cannot be used: no PIN may be sent on its word. */
export class PinMemoryUnreadableError extends Error {
  constructor(file: string, why: string) {
    super(`${file}: ${why}`);
    this.name = 'PinMemoryUnreadableError';
  }
}

export class PinMemoryFile implements RejectedPins {
  readonly file: string;
  private readonly dir: string;
  private readonly log: Logger;
  private queue: Promise<unknown> = Promise.resolve();
  /** What this process recorded, also when writing it failed (a full disk must not let a PIN be retried). */
  private readonly recent: PinEntries = {};

  constructor(stateDir: string, log: Logger) {
    this.dir = stateDir;
    this.file = join(stateDir, PIN_MEMORY_FILE);
    this.log = log;
  }

  attempt(keys: readonly string[], pin: string): Promise<PinAttempt | undefined> {
    return this.serial(
      async () => findAttempt(this.recent, keys, pin) ?? findAttempt((await this.read()).sims, keys, pin),
    );
  }

  sending(keys: readonly string[], pin: string): Promise<void> {
    return this.record(attemptEntries(keys, pin, 'sent', new Date().toISOString()));
  }

  remember(keys: readonly string[], pin: string): Promise<void> {
    return this.record(attemptEntries(keys, pin, 'rejected', new Date().toISOString()));
  }

  forget(keys: readonly string[]): Promise<void> {
    return this.serial(async () => {
      for (const key of keys) delete this.recent[key];
      const body = await this.read();
      if (!keys.some((key) => key in body.sims)) return;
      for (const key of keys) delete body.sims[key];
      await this.write(body);
    });
  }

  private record(entries: PinEntries): Promise<void> {
    return this.serial(async () => {
      Object.assign(this.recent, entries);
      const body = await this.read();
      Object.assign(body.sims, entries);
      await this.write(body);
    });
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** The file's memory; an empty one when there is no file. Throws PinMemoryUnreadableError for any other problem. */
  private async read(): Promise<FileBody> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { v: 1, sims: {} };
      throw this.unreadable(`cannot be read (${errorMessage(err)})`);
    }
    let body: Partial<FileBody>;
    try {
      body = JSON.parse(text) as Partial<FileBody>;
    } catch (err) {
      throw this.unreadable(`is not valid JSON (${errorMessage(err)})`);
    }
    if (body?.v !== 1 || !body.sims || typeof body.sims !== 'object' || Array.isArray(body.sims)) {
      throw this.unreadable('is not a PIN memory of version 1');
    }
    return { v: 1, sims: { ...body.sims } };
  }

  private unreadable(why: string): PinMemoryUnreadableError {
    const err = new PinMemoryUnreadableError(this.file, why);
    this.log.error({ file: this.file }, `${err.message}: every PIN counts as rejected until it is fixed or removed`);
    return err;
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
