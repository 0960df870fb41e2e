/**
 * The one place that builds link -> AT channel -> modem, for the daemon, the CLI and the port probe. The path decides
 * the link: a virtual port (`virtual:...`, serial/port-kind.ts) opens the virtual modem it names, any other path the
 * native port; opening rejects with PortError (code + hint), never a raw error.
 * A detection channel knows every profile's URC rows and results, so noise is recognised before the modem is known.
 * Nothing here sends a byte. The virtual link's module is loaded only when a virtual link is opened.
 */
import { SerialAtChannel } from '../at/channel.js';
import type { Logger } from '../log.js';
import type { SerialLink } from '../serial/link.js';
import { isVirtualPort } from '../serial/port-kind.js';
import { openSerialLink } from '../serial/serial-link.js';
import { Modem, type ModemOptions } from './modem.js';
import { detectionFinalResults, detectionUrcTable } from './profiles/index.js';

export interface LinkTarget {
  path: string;
  baudRate: number;
  /** Hardware flow control (native ports). Default false. */
  rtscts?: boolean;
}

export interface ChannelSettings {
  logger: Logger;
  /** Name in logs and errors. Default: the link's path. */
  name?: string;
  defaultTimeoutMs?: number;
  /** Install every profile's URC rows and final results (before the profile is known). Default false. */
  detection?: boolean;
  quietGapMs?: number;
  maxDrainMs?: number;
}

/** Opens the link a target names. */
export function openLink(target: LinkTarget): Promise<SerialLink> {
  if (isVirtualPort(target.path))
    return import('../virtual-modem/virtual-ports.js').then((m) => m.openVirtualPort(target.path));
  return openSerialLink({ path: target.path, baudRate: target.baudRate, ...(target.rtscts ? { rtscts: true } : {}) });
}

/** An AT channel over an open link. */
export function createChannel(link: SerialLink, settings: ChannelSettings): SerialAtChannel {
  return new SerialAtChannel({
    link,
    logger: settings.logger,
    ...(settings.name !== undefined ? { name: settings.name } : {}),
    ...(settings.defaultTimeoutMs !== undefined ? { defaultTimeoutMs: settings.defaultTimeoutMs } : {}),
    ...(settings.detection ? { urcs: detectionUrcTable(), finalResults: detectionFinalResults() } : {}),
    ...(settings.quietGapMs !== undefined ? { quietGapMs: settings.quietGapMs } : {}),
    ...(settings.maxDrainMs !== undefined ? { maxDrainMs: settings.maxDrainMs } : {}),
  });
}

/** Opens the link and puts an AT channel on it. */
export async function openChannel(target: LinkTarget, settings: ChannelSettings): Promise<SerialAtChannel> {
  return createChannel(await openLink(target), settings);
}

/** The modem on a channel (no command sent: init() is the caller's). */
export function createModem(channel: ModemOptions['channel'], options: Omit<ModemOptions, 'channel'>): Modem {
  return new Modem({ ...options, channel });
}
