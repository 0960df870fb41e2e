/**
 * The only module that opens serial ports: a serialport stream on the native binding behind SerialLink (built from
 * @serialport/stream and bindings-cpp, as `serialport` builds it, without that package's parsers), with the errors an
 * operator meets turned into PortError with a hint. The virtual modem is another SerialLink (src/virtual-modem/virtual-link.ts).
 * Invariants: write() on a closed port rejects at once (serialport would queue it forever); every write has its own
 * timeout; 'close' is emitted once per open with disconnected=true when the device vanished.
 */
import { EventEmitter } from 'node:events';
import { autoDetect } from '@serialport/bindings-cpp';
import { SerialPortStream } from '@serialport/stream';
import type { SerialPortMock } from 'serialport';
import { PortError } from '../errors.js';
import type { SerialCloseInfo, SerialLink, SerialLinkEvents, SerialOpenOptions } from './link.js';

const WRITE_TIMEOUT_MS = 5_000;

/** A serialport stream on the native binding, or (tests) a SerialPortMock standing in for it. */
export type PortStream = SerialPortStream | SerialPortMock;

/** Builds the (not yet open) port for a link; tests swap the binding here, as serialport's own mock does. */
export type CreatePort = (options: { path: string; baudRate: number; rtscts: boolean }) => PortStream;

/** The platform's binding, as serialport's SerialPort picks it. */
const nativeBinding = autoDetect();

const nativePort: CreatePort = ({ path, baudRate, rtscts }) =>
  new SerialPortStream({ binding: nativeBinding, path, baudRate, autoOpen: false, rtscts, lock: true });

/** Maps an open() failure to one clear line with a hint. */
export function explainOpenError(path: string, err: unknown): PortError {
  const msg = err instanceof Error ? err.message : String(err);
  const lower = msg.toLowerCase();
  if (lower.includes('no such file') || lower.includes('enoent') || lower.includes('does not exist')) {
    return new PortError('PORT_NOT_FOUND', `serial port ${path} does not exist`, {
      cause: err,
      hint: 'check the cable and `pulsa-bridge ports`; prefer /dev/serial/by-id/... paths, ttyUSB numbers change after a USB reset',
    });
  }
  if (lower.includes('permission denied') || lower.includes('eacces')) {
    return new PortError('PORT_PERMISSION', `permission denied opening ${path}`, {
      cause: err,
      hint: 'a modem named for the bridge (`sudo pulsa-bridge-modems --modem SERIAL`) has its port owned by the service user alone: run diagnostics through the daemon, or with sudo; do not add users to dialout (they could talk to the modem behind the daemon)',
    });
  }
  if (
    lower.includes('lock') ||
    lower.includes('busy') ||
    lower.includes('resource temporarily unavailable') ||
    lower.includes('ebusy')
  ) {
    return new PortError('PORT_BUSY', `serial port ${path} is busy (held by another process)`, {
      cause: err,
      hint:
        'if the pulsa-bridge service runs, it holds its modems: `systemctl stop pulsa-bridge` before diagnostics; ModemManager often grabs modems: stop it or install the udev rule (ID_MM_DEVICE_IGNORE=1); `fuser ' +
        path +
        '` shows who holds it',
    });
  }
  if (lower.includes('baud')) {
    return new PortError('PORT_IO', `cannot set the baud rate on ${path}: ${msg}`, {
      cause: err,
      hint: 'use a standard rate such as 115200 or 9600',
    });
  }
  return new PortError('PORT_IO', `cannot open ${path}: ${msg}`, { cause: err });
}

class PortLink extends EventEmitter<SerialLinkEvents> implements SerialLink {
  readonly path: string;
  private port: PortStream | undefined;
  private readonly options: SerialOpenOptions;
  private readonly createPort: CreatePort;
  private closing = false;
  /** Ends the current open exactly once (from serialport's 'close' event, or after a failed close()). */
  private finishClose: ((err: (Error & { disconnected?: boolean }) | null) => void) | undefined;

  constructor(options: SerialOpenOptions, createPort: CreatePort) {
    super();
    this.options = options;
    this.path = options.path;
    this.createPort = createPort;
  }

  get isOpen(): boolean {
    return this.port?.isOpen === true && !this.closing;
  }

  async open(): Promise<void> {
    if (this.isOpen) return;
    const { path, baudRate } = this.options;
    const port = this.createPort({ path, baudRate, rtscts: this.options.rtscts ?? false });
    await new Promise<void>((resolve, reject) => {
      port.open((err) => (err ? reject(explainOpenError(path, err)) : resolve()));
    });
    this.port = port;
    this.closing = false;
    port.on('data', (chunk: Buffer) => this.emit('data', chunk));
    port.on('error', (err: Error) => this.emit('error', err));
    this.finishClose = (err) => {
      if (this.port !== port) return; // already finished for this open
      const info: SerialCloseInfo = { disconnected: err?.disconnected === true };
      if (err) info.error = err;
      this.port = undefined;
      this.closing = false;
      this.emit('close', info);
    };
    port.once('close', (err: (Error & { disconnected?: boolean }) | null) => this.finishClose?.(err));
  }

  write(data: string | Buffer): Promise<void> {
    const port = this.port;
    if (!port || !this.isOpen) {
      return Promise.reject(new PortError('PORT_CLOSED', `cannot write to ${this.path}: the port is not open`));
    }
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(() => {
        settled = true;
        reject(
          new PortError('PORT_IO', `write to ${this.path} did not complete within ${WRITE_TIMEOUT_MS} ms`, {
            hint: 'the device may be stalled or flow control (RTS/CTS) blocks it',
          }),
        );
      }, WRITE_TIMEOUT_MS);
      const buf = typeof data === 'string' ? Buffer.from(data, 'latin1') : data;
      port.write(buf, (err) => {
        if (err) {
          if (!settled) {
            settled = true;
            clearTimeout(timer);
            reject(new PortError('PORT_IO', `write to ${this.path} failed: ${err.message}`, { cause: err }));
          }
          return;
        }
        port.drain((drainErr) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          if (drainErr)
            reject(new PortError('PORT_IO', `write to ${this.path} failed: ${drainErr.message}`, { cause: drainErr }));
          else resolve();
        });
      });
    });
  }

  async close(): Promise<void> {
    const port = this.port;
    if (!port || !port.isOpen) return;
    this.closing = true;
    await new Promise<void>((resolve) => {
      port.close((err) => {
        // A close error on a port that is going away anyway changes nothing for the caller: surface it, and finish the
        // close ourselves (serialport emits no 'close' then), or the link would stay 'closing' and never reconnect.
        if (err) {
          this.emit('error', err);
          this.finishClose?.(err);
        }
        resolve();
      });
    });
  }
}

/** Creates a link (not yet open). `createPort` swaps the port (tests); default: the native binding. */
export function createSerialLink(options: SerialOpenOptions, createPort: CreatePort = nativePort): SerialLink {
  return new PortLink(options, createPort);
}

/** Creates and opens a link; rejects with PortError (code + hint) when the port cannot be opened. */
export async function openSerialLink(
  options: SerialOpenOptions,
  createPort: CreatePort = nativePort,
): Promise<SerialLink> {
  const link = new PortLink(options, createPort);
  await link.open();
  return link;
}
