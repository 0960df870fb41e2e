/**
 * Lists serial ports with their USB identity. Uses the native binding's list() (@serialport/bindings-cpp, what
 * serialport's SerialPort.list() is; on Linux one `udevadm info -e`) and falls back to reading sysfs directly when
 * udevadm is missing (minimal images, containers). Adds the stable /dev/serial/by-id path and, from a
 * fingerprints table passed in (the modem profiles own it), which ports look like known modems.
 */
import { readdir, readFile, readlink, realpath } from 'node:fs/promises';
import { join, resolve as resolvePath, dirname } from 'node:path';
import { autoDetect } from '@serialport/bindings-cpp';
import { matchFingerprint } from './fingerprint.js';

export interface PortInfo {
  path: string;
  byIdPath?: string;
  vendorId?: string;
  productId?: string;
  manufacturer?: string;
  product?: string;
  serialNumber?: string;
  /** USB interface number, when known: multi-port modems expose several ttys per device. */
  interfaceNumber?: string;
  /** The fingerprint that matched, if any. */
  looksLike?: { profile: string; description: string };
}

export interface FingerprintRow {
  vendorId: string;
  productId?: string;
  profile: string;
  description: string;
}

export interface ListPortsOptions {
  fingerprints: readonly FingerprintRow[];
  /** Roots, overridable for tests. */
  sysClassTty?: string;
  serialById?: string;
  /** Skip the binding's list() (tests of the sysfs path). */
  sysfsOnly?: boolean;
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch {
    return undefined; // absent attribute: normal for non-USB ttys
  }
}

/**
 * Map of device path -> /dev/serial/by-id symlink. A link whose target cannot be resolved on disk (device node not
 * there, e.g. a container with /dev/serial bind-mounted) is mapped by its literal target.
 */
async function byIdMap(dir: string): Promise<Map<string, string>> {
  const map = new Map<string, string>();
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return map; // no USB serial devices at all, or no udev
  }
  for (const name of names) {
    const link = join(dir, name);
    try {
      map.set(await realpath(link), link);
      continue;
    } catch {
      // the target is not there: fall back to its literal path below
    }
    try {
      map.set(resolvePath(dir, await readlink(link)), link);
    } catch {
      // not a symlink at all (or vanished meanwhile): nothing to map
    }
  }
  return map;
}

/**
 * Reads ttyUSB, ttyACM, ttyAMA and USB-backed ttyS entries from sysfs, walking up from the tty's device to the USB
 * interface (bInterfaceNumber) and the USB device (idVendor). /sys/class/tty/<name> is itself a symlink into
 * /sys/devices and `device` is relative to where it really lives, so both are resolved with realpath.
 */
async function listFromSysfs(root: string): Promise<PortInfo[]> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch {
    return [];
  }
  const out: PortInfo[] = [];
  for (const name of names.filter((n) => /^tty(USB|ACM|AMA|S)\d+$/.test(n)).sort()) {
    const info: PortInfo = { path: `/dev/${name}` };
    let dev: string;
    try {
      dev = await realpath(join(root, name, 'device'));
    } catch {
      if (!/^tty(USB|ACM)/.test(name)) continue; // a bare ttyS without a device is a legacy UART placeholder
      out.push(info);
      continue;
    }
    // Walk up until a directory with idVendor (the USB device). The interface (bInterfaceNumber) is the device itself
    // for cdc-acm (ttyACM) and its parent for usb-serial drivers (ttyUSB: .../1-1:1.2/ttyUSB2).
    let dir = dev;
    for (let i = 0; i < 6; i++) {
      if (info.interfaceNumber === undefined) {
        const iface = await readText(join(dir, 'bInterfaceNumber'));
        if (iface) info.interfaceNumber = iface;
      }
      const vid = await readText(join(dir, 'idVendor'));
      if (vid) {
        info.vendorId = vid.toLowerCase();
        const pid = await readText(join(dir, 'idProduct'));
        if (pid) info.productId = pid.toLowerCase();
        const man = await readText(join(dir, 'manufacturer'));
        if (man) info.manufacturer = man;
        const prod = await readText(join(dir, 'product'));
        if (prod) info.product = prod;
        const serial = await readText(join(dir, 'serial'));
        if (serial) info.serialNumber = serial;
        break;
      }
      dir = dirname(dir);
    }
    if (name.startsWith('ttyS') && !info.vendorId) continue;
    out.push(info);
  }
  return out;
}

export { matchFingerprint };

export async function listPorts(
  options: ListPortsOptions,
): Promise<{ ports: PortInfo[]; source: 'udev' | 'sysfs'; warning?: string }> {
  let ports: PortInfo[] | undefined;
  let source: 'udev' | 'sysfs' = 'udev';
  let warning: string | undefined;
  if (!options.sysfsOnly) {
    try {
      const listed = await autoDetect().list();
      ports = listed.map((p) => {
        const info: PortInfo = { path: p.path };
        if (p.vendorId) info.vendorId = p.vendorId.toLowerCase();
        if (p.productId) info.productId = p.productId.toLowerCase();
        if (p.manufacturer) info.manufacturer = p.manufacturer;
        if (p.serialNumber) info.serialNumber = p.serialNumber;
        return info;
      });
    } catch (err) {
      warning = `udev listing failed (${err instanceof Error ? err.message : String(err)}); read sysfs instead`;
    }
  }
  if (!ports) {
    source = 'sysfs';
    ports = await listFromSysfs(options.sysClassTty ?? '/sys/class/tty');
  }
  const byId = await byIdMap(options.serialById ?? '/dev/serial/by-id');
  for (const p of ports) {
    const real = await realpath(p.path).catch(() => p.path);
    const link = byId.get(real);
    if (link) p.byIdPath = link;
    const fp = matchFingerprint(p, options.fingerprints);
    if (fp) p.looksLike = { profile: fp.profile, description: fp.description };
  }
  ports.sort((a, b) => a.path.localeCompare(b.path, 'en', { numeric: true }));
  const result: { ports: PortInfo[]; source: 'udev' | 'sysfs'; warning?: string } = { ports, source };
  if (warning) result.warning = warning;
  return result;
}
