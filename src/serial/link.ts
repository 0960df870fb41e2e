/**
 * SerialLink: the small interface every other module uses to talk to a serial device. Only src/serial/ imports
 * 'serialport'. Contract:
 * - `write` rejects at once with PortError(PORT_CLOSED) when the port is not open (serialport itself would queue the
 *   write forever); it resolves when the bytes were handed to the OS (drain).
 * - 'data' delivers raw chunks, split anywhere.
 * - 'close' fires once per open, with `disconnected: true` when the device vanished (USB unplug/reset).
 */
import type { EventEmitter } from 'node:events';

export interface SerialCloseInfo {
  /** true when the device vanished (unplugged, USB reset), false for a close we asked for. */
  disconnected: boolean;
  error?: Error;
}

export interface SerialLinkEvents {
  data: [chunk: Buffer];
  close: [info: SerialCloseInfo];
  error: [err: Error];
}

export interface SerialLink extends EventEmitter<SerialLinkEvents> {
  readonly path: string;
  readonly isOpen: boolean;
  open(): Promise<void>;
  write(data: string | Buffer): Promise<void>;
  close(): Promise<void>;
}

export interface SerialOpenOptions {
  path: string;
  baudRate: number;
  /** Use hardware flow control (RTS/CTS). Default false. */
  rtscts?: boolean;
}
