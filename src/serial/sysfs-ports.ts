/**
 * The serial ports as sysfs shows them, for when udevadm is missing (minimal images, containers) or fails: ttyUSB,
 * ttyACM, ttyAMA and USB-backed ttyS, each with the USB ids, strings and interface number found by walking up its
 * device.
 */
import { readdir, readFile, realpath } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { PortInfo } from './port-info.js';

async function readText(path: string): Promise<string | undefined> {
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch {
    return undefined; // absent attribute: normal for non-USB ttys
  }
}

/**
 * Reads ttyUSB, ttyACM, ttyAMA and USB-backed ttyS entries from sysfs, walking up from the tty's device to the USB
 * interface (bInterfaceNumber) and the USB device (idVendor). /sys/class/tty/<name> is itself a symlink into
 * /sys/devices and `device` is relative to where it really lives, so both are resolved with realpath.
 */
export async function listFromSysfs(root: string): Promise<PortInfo[]> {
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
