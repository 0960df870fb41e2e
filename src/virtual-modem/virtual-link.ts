/**
 * The virtual modem as a SerialLink: an in-process device registered at a path, and the link that opens it; it keeps
 * the native link's contract so the layers above cannot tell them apart. open() fails with PORT_NOT_FOUND (nothing
 * there, or unplugged) or PORT_BUSY (already open). Bytes travel in order, asynchronously via process.nextTick (fake
 * timers do not hold them), chunk boundaries kept; write() rejects at once with PORT_CLOSED when not open.
 * 'close' fires once per open, disconnected=true when the device went away.
 */
import { EventEmitter } from 'node:events';
import { PortError } from '../errors.js';
import type { SerialCloseInfo, SerialLink, SerialLinkEvents } from '../serial/link.js';
import { explainOpenError } from '../serial/serial-link.js';

export interface DeviceSide {
  /** Bytes from the modem to the bridge. Ignored (returns false) when no link is attached. */
  emit(data: Buffer | string): boolean;
  /** The device vanishes: the open link closes with disconnected=true. */
  unplug(): void;
}

export interface VirtualDevice {
  /** Called when a link opens the path; `side` is valid until `onDetach`. */
  onAttach(side: DeviceSide): void;
  /** Every chunk the bridge writes. */
  onWrite(chunk: Buffer): void;
  /** The link closed (by the bridge, or by unplug). */
  onDetach(): void;
  /** false while unplugged: open fails with PORT_NOT_FOUND. */
  readonly present: boolean;
}

const devices = new Map<string, VirtualDevice>();
/** Paths with an open link: a second open is refused as busy. */
const openPaths = new Set<string>();

/** Registers a device at `path`; returns the function that removes it. */
export function registerVirtualDevice(path: string, device: VirtualDevice): () => void {
  devices.set(path, device);
  return () => {
    if (devices.get(path) === device) devices.delete(path);
  };
}

export function getVirtualDevice(path: string): VirtualDevice | undefined {
  return devices.get(path);
}

class VirtualLink extends EventEmitter<SerialLinkEvents> implements SerialLink {
  readonly path: string;
  /** The attachment of the current open; a new object per open, so late callbacks of an old one do nothing. */
  private current: { device: VirtualDevice } | undefined;

  constructor(path: string) {
    super();
    this.path = path;
  }

  get isOpen(): boolean {
    return this.current !== undefined;
  }

  async open(): Promise<void> {
    if (this.current) return;
    const device = devices.get(this.path);
    // The native binding's words, so an operator (and the layers above) see the same errors as with hardware.
    if (!device || !device.present) throw explainOpenError(this.path, new Error('No such file or directory'));
    if (openPaths.has(this.path))
      throw explainOpenError(this.path, new Error('Error Resource temporarily unavailable Cannot lock port'));
    openPaths.add(this.path);
    await new Promise<void>((resolve) => process.nextTick(resolve));
    const attachment = { device };
    this.current = attachment;
    const side: DeviceSide = {
      emit: (data) => {
        if (this.current !== attachment) return false;
        const chunk = Buffer.isBuffer(data) ? Buffer.from(data) : Buffer.from(data, 'latin1');
        process.nextTick(() => {
          if (this.current === attachment) this.emit('data', chunk);
        });
        return true;
      },
      unplug: () => {
        // Bytes already on their way arrive first, as they would from a real device's buffer.
        process.nextTick(() => this.finish(attachment, { disconnected: true, error: new Error('device unplugged') }));
      },
    };
    device.onAttach(side);
  }

  async write(data: string | Buffer): Promise<void> {
    const attachment = this.current;
    if (!attachment) throw new PortError('PORT_CLOSED', `cannot write to ${this.path}: the port is not open`);
    const chunk = typeof data === 'string' ? Buffer.from(data, 'latin1') : Buffer.from(data);
    await new Promise<void>((resolve) => process.nextTick(resolve));
    if (this.current !== attachment)
      throw new PortError('PORT_CLOSED', `cannot write to ${this.path}: the port closed during the write`);
    attachment.device.onWrite(chunk);
  }

  async close(): Promise<void> {
    const attachment = this.current;
    if (!attachment) return;
    this.finish(attachment, { disconnected: false });
  }

  private finish(attachment: { device: VirtualDevice }, info: SerialCloseInfo): void {
    if (this.current !== attachment) return; // already finished for this open
    this.current = undefined;
    openPaths.delete(this.path);
    attachment.device.onDetach();
    this.emit('close', info);
  }
}

/** Creates a link to the virtual device at `path` (not yet open). */
export function createVirtualLink(path: string): SerialLink {
  return new VirtualLink(path);
}

/** Creates and opens a link to the virtual device at `path`; rejects with PortError (code + hint). */
export async function openVirtualLink(path: string): Promise<SerialLink> {
  const link = new VirtualLink(path);
  await link.open();
  return link;
}
