/**
 * The serial ports udev knows, with the USB identity its rules gave them: one `udevadm info --query=all` naming only
 * the candidate ttys of /sys/class/tty (the families serialport lists: ttyS, ttyUSB, ttyACM, ttyAMA, ...), instead of
 * exporting the whole udev database as serialport's list() does (`udevadm info -e`: every device of the machine, the
 * larger part of `ports`' time). parseUdevInfo is PURE; serialport's own parser is its test oracle.
 */
import { execFile } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import type { PortInfo } from './port-info.js';

/** The tty names serialport's Linux list() keeps (bindings-cpp's rule), anchored at the name's start. */
const SERIAL_TTY = /^(tty(S|WCH|ACM|USB|AMA|MFD|O|XRUSB)|rfcomm)/;

/** udev's `\xHH` escapes (in *_ENC values) as the UTF-8 text they spell. */
function unescapeUdev(value: string): string {
  if (!value.includes('\\x')) return value;
  const bytes: number[] = [];
  for (let i = 0; i < value.length;) {
    const hex = /^\\x([0-9a-fA-F]{2})/.exec(value.slice(i, i + 4));
    if (hex) {
      bytes.push(parseInt(hex[1]!, 16));
      i += 4;
    } else {
      bytes.push(...Buffer.from(value[i]!, 'utf8'));
      i += 1;
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/** A USB id as ports show it: lower-case hex without a `0x`. */
function usbId(value: string): string {
  return value.replace(/^0x/i, '').toLowerCase();
}

/** One device's record: its node name (`N:`) and properties (`E:`). */
function toPort(name: string | undefined, env: Map<string, string>): PortInfo | undefined {
  if (!name || !SERIAL_TTY.test(name)) return undefined;
  // usb_id's own ID_USB_* first: other rules (hwdb, a PCI parent) may set the plain ID_* ones.
  const prop = (key: string) => env.get(`ID_USB_${key}`) ?? env.get(`ID_${key}`);
  const info: PortInfo = { path: env.get('DEVNAME') ?? `/dev/${name}` };
  const vendorId = prop('VENDOR_ID');
  if (vendorId) info.vendorId = usbId(vendorId);
  const productId = prop('MODEL_ID');
  if (productId) info.productId = usbId(productId);
  const manufacturer = prop('VENDOR_ENC');
  if (manufacturer) info.manufacturer = unescapeUdev(manufacturer);
  const product = prop('MODEL_ENC');
  if (product) info.product = unescapeUdev(product);
  const serial = prop('SERIAL_SHORT');
  if (serial) info.serialNumber = serial;
  const iface = env.get('ID_USB_INTERFACE_NUM');
  if (iface) info.interfaceNumber = iface;
  return info;
}

/**
 * The serial ports in `udevadm info --query=all` (or `-e`) output: a record starts at each `P:` line; `N:` names its
 * device node, `E: KEY=value` its properties; any other line is ignored, and so is a record that is not a serial tty.
 */
export function parseUdevInfo(text: string): PortInfo[] {
  const ports: PortInfo[] = [];
  let name: string | undefined;
  let env = new Map<string, string>();
  let open = false;
  const close = () => {
    const port = open ? toPort(name, env) : undefined;
    if (port) ports.push(port);
  };
  for (const line of text.split('\n')) {
    const kind = line.slice(0, 3);
    if (kind === 'P: ') {
      close();
      open = true;
      name = undefined;
      env = new Map();
    } else if (kind === 'N: ') name = line.slice(3).trim();
    else if (kind === 'E: ') {
      const eq = line.indexOf('=', 3);
      if (eq > 3) env.set(line.slice(3, eq), line.slice(eq + 1));
    }
  }
  close();
  return ports;
}

export interface UdevListOptions {
  /** Where the ttys are listed (default /sys/class/tty). */
  sysClassTty: string;
  /** The udevadm to run (default `udevadm` on PATH; tests pass a script). */
  udevadm?: string;
  /** How long udevadm may take (default 10 s). */
  timeoutMs?: number;
}

/**
 * Asks udevadm about the candidate ttys in one call. A tty that vanished between the listing and the call makes
 * udevadm exit 1 while it still describes the others: what it printed is used. Rejects when udevadm cannot run,
 * times out, or fails without describing any port (the caller reads sysfs instead).
 */
export async function listFromUdev(options: UdevListOptions): Promise<PortInfo[]> {
  const names = (await readdir(options.sysClassTty).catch(() => [] as string[])).filter((n) => SERIAL_TTY.test(n));
  if (names.length === 0) return [];
  const args = ['info', '--query=all', ...names.sort().map((n) => `${options.sysClassTty}/${n}`)];
  const timeoutMs = options.timeoutMs ?? 10_000;
  const out = await new Promise<string>((resolve, reject) => {
    execFile(
      options.udevadm ?? 'udevadm',
      args,
      { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, encoding: 'utf8' },
      (err, stdout, stderr) => {
        if (!err || (typeof err.code === 'number' && parseUdevInfo(stdout).length > 0)) return resolve(stdout);
        const said = stderr.trim().split('\n')[0];
        const why = err.killed
          ? `took over ${timeoutMs} ms`
          : err.code === 'ENOENT'
            ? 'is not installed'
            : typeof err.code === 'number'
              ? `exited with ${err.code}`
              : `failed (${err.message})`;
        reject(new Error(`udevadm ${why}${said ? `: ${said}` : ''}`));
      },
    );
  });
  return parseUdevInfo(out);
}
