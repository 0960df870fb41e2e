/**
 * Opens a modem for one diagnostic command: a real port (native binding) or, with --simulate, the virtual modem.
 * Probes with `AT` first, so a silent modem or wrong baud rate is one clear error with a hint; always closes the port.
 * A PIN goes through the daemon's memory of rejected PINs (in stateDir, or the default spool dir), so a wrong PIN is
 * tried once, ever, also by CLI runs; when that memory cannot be read or written, no PIN is sent. A --simulate SIM is
 * fresh each run.
 */
import type { SerialAtChannel } from '../at/channel.js';
import { BridgeError } from '../errors.js';
import type { Logger } from '../log.js';
import { createModem, openChannel } from '../modem/factory.js';
import type { Modem } from '../modem/modem.js';
import type { ProfileId } from '../modem/types.js';
import { PinMemoryFile } from '../state/pin-memory.js';
import { VirtualModem } from '../virtual-modem/virtual-modem.js';
import { UsageError } from './usage.js';

interface SessionOptions {
  port?: string;
  baud: number;
  simulate: boolean;
  profile?: string;
  pin?: string;
  /** Where the memory of rejected PINs is kept (config stateDir ?? spool.dir); default DEFAULT_STATE_DIR for a real
   *  port, this process only for the virtual modem. */
  stateDir?: string;
  timeoutMs: number;
  logger: Logger;
  /** The modem's name in logs and `info` (its config name; default the port path). */
  name?: string;
  /**
   * Builds and starts the device behind --simulate at `path` (tests: a stalled or scripted modem).
   * Default: a SIM800-like virtual modem with two operator SMS on the SIM.
   */
  virtualModem?: (path: string) => VirtualModem;
}

/** config.ts's default spool.dir: the state directory of a daemon with default settings. */
export const DEFAULT_STATE_DIR = '/var/lib/pulsa-bridge/spool';

export interface Session {
  channel: SerialAtChannel;
  modem: Modem;
  close(): Promise<void>;
}

/** The --simulate device, started: a SIM800-like modem with two operator SMS on the SIM, so `sms list` shows something. */
export function createSimulatedModem(path: string): VirtualModem {
  const vm = new VirtualModem({ path, profile: 'simcom', bootStepMs: 0 });
  vm.start();
  vm.injectSms({ from: '858', text: 'Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774 tgl 2018-01-08. Cek pulsa melalui *888#. Info CS: 188' });
  vm.injectSms({ from: '168', text: 'Nikmati Xtra Combo! Anda menerima Pulsa dari 6285941020493 sebesar Rp7000.' });
  return vm;
}

export async function openSession(o: SessionOptions): Promise<Session> {
  let virtual: VirtualModem | undefined;
  let path = o.port;
  if (o.simulate) {
    path = path ?? '/virtual/cli';
    virtual = (o.virtualModem ?? createSimulatedModem)(path);
  }
  if (!path) throw new UsageError('no port given', { hint: 'pass --port /dev/serial/by-id/... (see `pulsa-bridge ports`), or --simulate to use the virtual modem' });
  let channel: SerialAtChannel;
  try {
    channel = await openChannel({ path, baudRate: o.baud, link: o.simulate ? 'virtual' : 'native' }, { logger: o.logger, defaultTimeoutMs: o.timeoutMs, name: path });
  } catch (err) {
    virtual?.stop();
    throw err;
  }
  let garbage = 0;
  channel.on('garbage', () => garbage++);
  let modem: Modem | undefined;
  const close = async () => {
    modem?.detach();
    await channel.close().catch((err: unknown) => o.logger.debug({ err }, 'close failed (port already gone): nothing left to do'));
    virtual?.stop();
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
    ...(o.pin && (o.stateDir !== undefined || !o.simulate) ? { rejectedPins: new PinMemoryFile(o.stateDir ?? DEFAULT_STATE_DIR, o.logger) } : {}),
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
