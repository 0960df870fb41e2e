/**
 * The serial ports udev knows, with the USB identity its rules gave them: one `udevadm info --query=all` naming only
 * the candidate ttys of /sys/class/tty (the families serialport lists: ttyS, ttyUSB, ttyACM, ttyAMA, ...), instead of
 * exporting the whole udev database as serialport's list() does (`udevadm info -e`: every device of the machine, the
 * larger part of `ports`' time). parseUdevInfo is PURE; serialport's own parser is its test oracle.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import type { PortInfo } from './port-info.js';

/** The tty names serialport's Linux list() keeps (bindings-cpp's rule), anchored at the name's start. */
const SERIAL_TTY = /^(tty(S|WCH|ACM|USB|AMA|MFD|O|XRUSB)|rfcomm)/;
const MAX_OUTPUT = 16 * 1024 * 1024;

/** udev's `\xHH` escapes (in *_ENC values) as the UTF-8 text they spell. */
function unescapeUdev(value: string): string {
  if (!value.includes('\\x')) return value;
  const bytes: number[] = [];
  for (const [piece, hex] of value.matchAll(/\\x([0-9a-fA-F]{2})|[\s\S]/gu))
    bytes.push(...(hex ? [parseInt(hex, 16)] : Buffer.from(piece, 'utf8')));
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

/** One udevadm run: what it printed and, when it exited non-zero, why (ENOENT, a timeout or too much output reject). */
function runUdevadm(udevadm: string, paths: string[], timeoutMs: number): Promise<{ stdout: string; failed?: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      udevadm,
      ['info', '--query=all', ...paths],
      { timeout: timeoutMs, maxBuffer: MAX_OUTPUT, encoding: 'utf8' },
      (err, stdout, stderr) => {
        if (!err) return resolve({ stdout });
        const said = stderr.trim().split('\n')[0];
        const why =
          err.code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER'
            ? `printed more than ${MAX_OUTPUT / 1024 / 1024} MiB`
            : err.killed
              ? `took over ${timeoutMs} ms`
              : err.code === 'ENOENT'
                ? 'is not installed'
                : typeof err.code === 'number'
                  ? `exited with ${err.code}`
                  : `failed (${err.message})`;
        const failed = `udevadm ${why}${said ? `: ${said}` : ''}`;
        if (typeof err.code === 'number') resolve({ stdout, failed });
        else reject(new Error(failed));
      },
    );
  });
}

/**
 * Asks udevadm about the candidate ttys in one call. A tty that vanished between the listing and the call makes
 * udevadm exit 1: current udevadm still describes the others, older ones (systemd < 250) stop at the vanished one, so
 * the ttys still present that it did not describe are asked again (at most 3 calls in all). Rejects when udevadm
 * cannot run, times out, or leaves a present tty undescribed (the caller reads sysfs instead, with this reason).
 */
export async function listFromUdev(options: UdevListOptions): Promise<PortInfo[]> {
  const names = (await readdir(options.sysClassTty).catch(() => [] as string[])).filter((n) => SERIAL_TTY.test(n));
  const timeoutMs = options.timeoutMs ?? 10_000;
  const described = new Map<string, PortInfo>();
  let asking = names.sort();
  for (let call = 1; asking.length > 0; call++) {
    const paths = asking.map((n) => `${options.sysClassTty}/${n}`);
    const { stdout, failed } = await runUdevadm(options.udevadm ?? 'udevadm', paths, timeoutMs);
    for (const port of parseUdevInfo(stdout)) described.set(port.path, port);
    if (!failed) break;
    const left = asking.filter((n) => !described.has(`/dev/${n}`) && existsSync(`${options.sysClassTty}/${n}`));
    if (left.length === 0) break; // what it did not describe is gone
    if (left.length === asking.length || call === 3) throw new Error(failed);
    asking = left;
  }
  return [...described.values()];
}
