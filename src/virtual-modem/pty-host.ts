/**
 * Hosts a VirtualModem on a real pseudo-terminal pair (socat), so a bridge opens `linkPath` with the NATIVE serial
 * binding as it opens a USB modem. Bytes pass in order both ways; `paceBaud` delays them like a UART.
 * The bridge end may be reopened while the host runs; unplug/stop/close end the host for good (the path disappears,
 * as a USB modem's does). socat missing or failing -> BridgeError naming the path; stale symlinks are replaced, any
 * other file at the paths is refused.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { lstat, unlink } from 'node:fs/promises';
import { BridgeError, errorMessage } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import type { DeviceSide } from './virtual-link.js';
import type { SerialLink } from '../serial/link.js';
import { openSerialLink } from '../serial/serial-link.js';
import type { VirtualModem } from './virtual-modem.js';

export interface PtyHostOptions {
  /** Path the bridge opens (a symlink to the bridge end's /dev/pts/N). The modem end is `<linkPath>.modem`. */
  linkPath: string;
  logger?: Logger;
  /** Baud rate the host opens the `.modem` end with (a pty ignores it). Default 115200. */
  baudRate?: number;
  /** Deliver bytes no faster than a UART at this rate would, both directions. Default: no pacing. */
  paceBaud?: number;
  /** Longest wait for socat to create both links. Default 5000 ms. */
  startTimeoutMs?: number;
}

export interface PtyHost {
  /** The path to open with the native binding (= linkPath). */
  devicePath: string;
  /** Detaches the modem, closes the `.modem` end, stops socat (the bridge end vanishes). Idempotent. */
  close(): Promise<void>;
}

const SOCAT_HINT = 'apt-get install socat';
const STDERR_KEEP = 10;

/** Replaces a stale symlink left by a killed run; refuses to touch anything else. */
async function clearStaleLink(path: string): Promise<void> {
  let st;
  try {
    st = await lstat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new BridgeError('PORT_IO', `cannot check ${path}: ${errorMessage(err)}`, { cause: err });
  }
  if (!st.isSymbolicLink()) {
    throw new BridgeError(
      'PORT_IO',
      `${path} exists and is not a symlink: refusing to replace it with a pseudo-terminal link`,
      {
        hint: 'choose another linkPath (e.g. in a fresh temporary directory)',
      },
    );
  }
  await unlink(path);
}

async function linkExists(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isSymbolicLink();
  } catch {
    return false;
  }
}

/** The clock a lane paces by (tests inject a fake one). */
export interface LaneClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realClock: LaneClock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/**
 * One direction of the line: delivers chunks in order, immediately or at the pace of a UART (10 bits per byte:
 * start, 8 data, stop), so a chunk of n bytes arrives n * 10 / baud seconds after the line was last free.
 */
export function uartLane(
  deliver: (chunk: Buffer) => void,
  baud: number | undefined,
  clock: LaneClock = realClock,
): { push(chunk: Buffer): void; stop(): void } {
  if (baud === undefined) return { push: deliver, stop: () => undefined };
  const msPerByte = 10_000 / baud;
  const queue: Array<{ chunk: Buffer; due: number }> = [];
  let freeAt = 0;
  let timer: unknown;
  const flush = (): void => {
    timer = undefined;
    const now = clock.now();
    while (queue.length > 0 && queue[0]!.due <= now + 0.5) deliver(queue.shift()!.chunk);
    arm();
  };
  const arm = (): void => {
    const next = queue[0];
    if (timer !== undefined || !next) return;
    timer = clock.setTimeout(flush, Math.max(0, next.due - clock.now()));
  };
  return {
    push: (chunk) => {
      const start = Math.max(clock.now(), freeAt);
      freeAt = start + chunk.length * msPerByte;
      queue.push({ chunk, due: freeAt });
      arm();
    },
    stop: () => {
      if (timer !== undefined) clock.clearTimeout(timer);
      timer = undefined;
      queue.length = 0;
    },
  };
}

function startSocat(
  linkPath: string,
  modemPath: string,
  log: Logger,
  timeoutMs: number,
): Promise<{ socat: ChildProcess; stderr: string[] }> {
  const stderr: string[] = [];
  const socat = spawn('socat', ['-d', '-d', `pty,raw,echo=0,link=${linkPath}`, `pty,raw,echo=0,link=${modemPath}`], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  socat.stderr?.setEncoding('utf8');
  socat.stderr?.on('data', (text: string) => {
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      stderr.push(line.trim());
      if (stderr.length > STDERR_KEEP) stderr.shift();
      log.debug({ socat: line.trim() }, 'pty host: socat');
    }
  });
  return new Promise((resolve, reject) => {
    let done = false;
    const fail = (err: BridgeError): void => {
      if (done) return;
      done = true;
      clearInterval(poll);
      clearTimeout(timer);
      if (socat.exitCode === null && socat.signalCode === null) socat.kill('SIGKILL');
      reject(err);
    };
    socat.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') {
        fail(
          new BridgeError(
            'PORT_IO',
            'socat is not installed: cannot create the pseudo-terminal pair for the virtual modem',
            { cause: err, hint: SOCAT_HINT },
          ),
        );
      } else fail(new BridgeError('PORT_IO', `cannot start socat: ${err.message}`, { cause: err, hint: SOCAT_HINT }));
    });
    socat.once('exit', (code, signal) => {
      fail(
        new BridgeError(
          'PORT_IO',
          `socat exited (${signal ?? `code ${code}`}) before creating ${linkPath}: ${stderr.slice(-3).join(' | ') || 'no output'}`,
          { hint: 'check that the directory of linkPath exists and is writable' },
        ),
      );
    });
    const timer = setTimeout(() => {
      fail(
        new BridgeError(
          'PORT_IO',
          `socat did not create ${linkPath} and ${modemPath} within ${timeoutMs} ms: ${stderr.slice(-3).join(' | ') || 'no output'}`,
        ),
      );
    }, timeoutMs);
    const poll = setInterval(() => {
      void Promise.all([linkExists(linkPath), linkExists(modemPath)]).then(([a, b]) => {
        if (!a || !b || done) return;
        done = true;
        clearInterval(poll);
        clearTimeout(timer);
        socat.removeAllListeners('exit');
        socat.removeAllListeners('error');
        resolve({ socat, stderr });
      });
    }, 10);
  });
}

/**
 * socat outlives a parent killed with SIGKILL (it has no reason to notice). A tiny guard shell holds a pipe from
 * this process and kills socat when the pipe closes, i.e. when this process dies by any means. Neither the guard
 * nor its pipe keeps the event loop alive.
 */
function guardSocat(socat: ChildProcess, log: Logger): ChildProcess | undefined {
  if (socat.pid === undefined) return undefined;
  const guard = spawn('sh', ['-c', `read _ ; kill ${socat.pid} 2>/dev/null`], { stdio: ['pipe', 'ignore', 'ignore'] });
  guard.on('error', (err) => log.debug({ err }, 'pty host: no guard shell for socat (it may outlive a killed parent)'));
  guard.unref();
  (guard.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  return guard;
}

async function stopSocat(socat: ChildProcess, log: Logger, guard?: ChildProcess): Promise<void> {
  // The guard goes first, so it can never signal a pid that socat no longer owns.
  if (guard && guard.exitCode === null && guard.signalCode === null) guard.kill('SIGKILL');
  if (socat.exitCode !== null || socat.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => socat.once('exit', () => resolve()));
  socat.kill('SIGTERM');
  const forced = setTimeout(() => {
    log.warn({ pid: socat.pid }, 'pty host: socat did not stop on SIGTERM within 2 s; killing it');
    socat.kill('SIGKILL');
  }, 2000);
  await exited;
  clearTimeout(forced);
}

/**
 * Creates `<linkPath>` / `<linkPath>.modem` with socat, opens the `.modem` end with the native binding and attaches
 * the virtual modem to it. Resolves once the bridge can open `<linkPath>`.
 */
export async function hostVirtualModemOnPty(vm: VirtualModem, opts: PtyHostOptions): Promise<PtyHost> {
  const log = (opts.logger ?? silentLogger()).child({ ptyHost: opts.linkPath });
  const linkPath = opts.linkPath;
  const modemPath = `${linkPath}.modem`;
  await clearStaleLink(linkPath);
  await clearStaleLink(modemPath);
  const { socat, stderr } = await startSocat(linkPath, modemPath, log, opts.startTimeoutMs ?? 5000);
  const guard = guardSocat(socat, log);

  let link: SerialLink;
  try {
    link = await openSerialLink({ path: modemPath, baudRate: opts.baudRate ?? 115200 });
  } catch (err) {
    await stopSocat(socat, log, guard);
    throw err;
  }

  let closing: Promise<void> | undefined;
  let attached = true;
  const toBridge = uartLane((chunk) => {
    link.write(chunk).catch((err: unknown) => {
      // The bridge end is gone or stuck (nobody reads and the pty buffer is full): the bytes are lost, like on a wire.
      log.warn({ err: errorMessage(err), bytes: chunk.length }, 'pty host: write to the modem end failed');
    });
  }, opts.paceBaud);
  const toModem = uartLane((chunk) => {
    if (!attached) return;
    try {
      vm.onWrite(chunk);
    } catch (err) {
      log.error({ err }, `pty host: the virtual modem failed on input: ${errorMessage(err)}`);
    }
  }, opts.paceBaud);

  const detach = (): void => {
    if (!attached) return;
    attached = false;
    toBridge.stop();
    toModem.stop();
    vm.onDetach();
  };

  const close = (): Promise<void> => {
    closing ??= (async () => {
      detach();
      await link
        .close()
        .catch((err: unknown) =>
          log.debug({ err: errorMessage(err) }, 'pty host: closing the modem end failed (already gone)'),
        );
      await stopSocat(socat, log, guard);
      // socat removes its links on a clean exit; after SIGKILL they may remain.
      for (const p of [linkPath, modemPath])
        await clearStaleLink(p).catch((err: unknown) =>
          log.warn({ err: errorMessage(err), path: p }, 'pty host: could not remove link'),
        );
      log.debug('pty host: closed');
    })();
    return closing;
  };

  link.on('data', (chunk) => toModem.push(chunk));
  link.on('error', (err) => log.warn({ err: errorMessage(err) }, 'pty host: modem end reported an error'));
  link.on('close', (info) => {
    if (closing) return;
    log.warn(
      { disconnected: info.disconnected, socat: stderr.slice(-3) },
      'pty host: the modem end closed unexpectedly (socat gone?); the virtual modem is detached',
    );
    void close();
  });
  socat.once('exit', (code, signal) => {
    if (closing) return;
    log.warn(
      { code, signal, socat: stderr.slice(-3) },
      'pty host: socat exited unexpectedly; the virtual modem is detached',
    );
    void close();
  });

  const side: DeviceSide = {
    emit: (data) => {
      if (!attached || closing) return false;
      toBridge.push(Buffer.isBuffer(data) ? data : Buffer.from(data, 'latin1'));
      return true;
    },
    unplug: () => {
      log.debug('pty host: virtual modem unplugged; closing the pseudo-terminal pair');
      void close();
    },
  };
  vm.onAttach(side);
  vm.start();
  log.debug({ linkPath, modemPath }, 'pty host: virtual modem attached');
  return { devicePath: linkPath, close };
}
