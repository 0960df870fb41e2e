/**
 * Opens a modem for one diagnostic command on its port (a device, or a virtual modem's `virtual:` port: the factory
 * opens either). Probes with `AT` first, so a silent modem or wrong baud rate is one clear error with a hint; always
 * closes the port. A PIN goes through the daemon's memory of rejected PINs (in stateDir, or the default spool dir), so
 * a wrong PIN is tried once, ever, also by CLI runs; when that memory cannot be read or written, no PIN is sent.
 */
import type { SerialAtChannel } from '../at/channel.js';
import { BridgeError } from '../errors.js';
import type { Logger } from '../log.js';
import { createModem, openChannel } from '../modem/factory.js';
import type { Modem } from '../modem/modem.js';
import type { ProfileId } from '../modem/types.js';
import { PinMemoryFile } from '../state/pin-memory.js';
import { UsageError } from './usage.js';

interface SessionOptions {
  port?: string;
  baud: number;
  profile?: string;
  pin?: string;
  /** Where the memory of rejected PINs is kept (config stateDir ?? spool.dir); default DEFAULT_STATE_DIR. */
  stateDir?: string;
  timeoutMs: number;
  logger: Logger;
  /** The modem's name in logs and `info` (its config name; default the port path). */
  name?: string;
}

/** config.ts's default spool.dir: the state directory of a daemon with default settings. */
export const DEFAULT_STATE_DIR = '/var/lib/pulsa-bridge/spool';

export interface Session {
  channel: SerialAtChannel;
  modem: Modem;
  close(): Promise<void>;
}

export async function openSession(o: SessionOptions): Promise<Session> {
  const path = o.port;
  if (!path)
    throw new UsageError('no port given', {
      hint: 'pass --port /dev/serial/by-id/... (see `pulsa-bridge ports`), or --simulate to use the virtual modem',
    });
  const channel: SerialAtChannel = await openChannel(
    { path, baudRate: o.baud },
    { logger: o.logger, defaultTimeoutMs: o.timeoutMs, name: path },
  );
  let garbage = 0;
  channel.on('garbage', () => garbage++);
  let modem: Modem | undefined;
  const close = async () => {
    modem?.detach();
    await channel
      .close()
      .catch((err: unknown) => o.logger.debug({ err }, 'close failed (port already gone): nothing left to do'));
  };
  try {
    await probe(channel, path, o.baud, () => garbage);
  } catch (err) {
    await close();
    throw err;
  }
  modem = createModem(channel, {
    name: o.name ?? path,
    logger: o.logger,
    ...(o.pin ? { pin: o.pin } : {}),
    ...(o.pin ? { rejectedPins: new PinMemoryFile(o.stateDir ?? DEFAULT_STATE_DIR, o.logger) } : {}),
    profile: (o.profile ?? 'auto') as ProfileId | 'auto',
  });
  return { channel, modem, close };
}

async function probe(channel: SerialAtChannel, path: string, baud: number, garbage: () => number): Promise<void> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await channel.run('AT', { timeoutMs: 1500 });
      return;
    } catch (err) {
      if (err instanceof BridgeError && err.code !== 'AT_TIMEOUT' && err.code !== 'AT_ERROR') throw err;
      if (err instanceof BridgeError && err.code === 'AT_ERROR') return; // it answered: alive
    }
  }
  if (garbage() > 0) {
    throw new BridgeError('MODEM_SILENT', `${path} answers with unreadable bytes at ${baud} baud`, {
      hint: 'wrong baud rate: try --baud 115200, 9600 (Wavecom) or 57600',
    });
  }
  throw new BridgeError('MODEM_SILENT', `no answer to AT on ${path} at ${baud} baud`, {
    hint: 'is this the AT port? Huawei/Quectel/ZTE expose several ttys: try the others (`pulsa-bridge ports`); check the baud rate (--baud) and that ModemManager does not hold the modem',
  });
}
