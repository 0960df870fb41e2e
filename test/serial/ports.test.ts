/**
 * listPorts over a fake sysfs tree laid out as Linux lays it out: /sys/class/tty/<name> is a symlink into
 * /sys/devices, and `device` inside it is relative to where it really lives. usb-serial ttys (ttyUSB) sit one level
 * below their USB interface, cdc-acm ttys (ttyACM) hang off the interface itself; the USB device with idVendor is
 * the interface's parent. /dev/serial/by-id holds one symlink per port.
 */
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SerialPort } from 'serialport';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listPorts, matchFingerprint, type FingerprintRow, type PortInfo } from '../../src/serial/ports.js';

const FINGERPRINTS: FingerprintRow[] = [
  { vendorId: '12d1', productId: '1506', profile: 'huawei', description: 'Huawei E3372 (stick firmware)' },
  { vendorId: '12d1', profile: 'huawei', description: 'Huawei modem' },
  { vendorId: '1E0E', profile: 'simcom', description: 'SIMCom module' }, // upper case on purpose: ids are hex, any case
];

let root: string;
let sysClassTty: string;
let serialById: string;

async function files(dir: string, entries: Record<string, string>): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const [name, text] of Object.entries(entries)) await writeFile(join(dir, name), `${text}\n`);
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'pulsa-ports-'));
  sysClassTty = join(root, 'class/tty');
  serialById = join(root, 'serial/by-id');
  await mkdir(sysClassTty, { recursive: true });
  await mkdir(serialById, { recursive: true });
  const usb1 = join(root, 'devices/pci0000:00/0000:00:14.0/usb1');

  // Huawei E3372 on 1-1: ttyUSB0 on interface 0, ttyUSB2 on interface 2 (real layout: class entry is a symlink).
  await files(join(usb1, '1-1'), {
    idVendor: '12d1',
    idProduct: '1506',
    manufacturer: 'HUAWEI_MOBILE',
    product: 'HUAWEI_MOBILE',
    serial: '0123456789ABCDEF',
  });
  for (const n of [0, 2]) {
    const iface = join(usb1, `1-1/1-1:1.${n}`);
    await files(iface, { bInterfaceNumber: `0${n}` });
    const ttyDir = join(iface, `ttyUSB${n}/tty/ttyUSB${n}`);
    await mkdir(ttyDir, { recursive: true });
    await symlink(`../../../ttyUSB${n}`, join(ttyDir, 'device'));
    await symlink(
      `../../devices/pci0000:00/0000:00:14.0/usb1/1-1/1-1:1.${n}/ttyUSB${n}/tty/ttyUSB${n}`,
      join(sysClassTty, `ttyUSB${n}`),
    );
  }

  // A SIMCom module on cdc-acm: the tty's device is the interface itself.
  await files(join(usb1, '1-2'), { idVendor: '1e0e', idProduct: '9001', manufacturer: 'SimTech, Incorporated' });
  await files(join(usb1, '1-2/1-2:1.3'), { bInterfaceNumber: '03' });
  await mkdir(join(usb1, '1-2/1-2:1.3/tty/ttyACM0'), { recursive: true });
  await symlink('../../../1-2:1.3', join(usb1, '1-2/1-2:1.3/tty/ttyACM0/device'));
  await symlink('../../devices/pci0000:00/0000:00:14.0/usb1/1-2/1-2:1.3/tty/ttyACM0', join(sysClassTty, 'ttyACM0'));

  // An unknown USB-serial adapter whose class entry is a plain directory (device relative to it).
  await files(join(usb1, '1-3'), { idVendor: 'abcd', idProduct: '0001' });
  await files(join(usb1, '1-3/1-3:1.0'), { bInterfaceNumber: '00' });
  await mkdir(join(usb1, '1-3/1-3:1.0/ttyUSB1'), { recursive: true });
  await mkdir(join(sysClassTty, 'ttyUSB1'));
  await symlink(
    '../../../devices/pci0000:00/0000:00:14.0/usb1/1-3/1-3:1.0/ttyUSB1',
    join(sysClassTty, 'ttyUSB1/device'),
  );

  // Legacy UART placeholders: ttyS0 without a device, ttyS1 on a platform device (no USB ids). Both skipped.
  await mkdir(join(sysClassTty, 'ttyS0'));
  await mkdir(join(root, 'devices/platform/serial8250/tty/ttyS1'), { recursive: true });
  await symlink('../../../serial8250', join(root, 'devices/platform/serial8250/tty/ttyS1/device'));
  await symlink('../../devices/platform/serial8250/tty/ttyS1', join(sysClassTty, 'ttyS1'));
  // Not a serial port at all.
  await mkdir(join(root, 'devices/virtual/tty/console'), { recursive: true });
  await symlink('../../devices/virtual/tty/console', join(sysClassTty, 'console'));

  // by-id links point at /dev nodes, which do not exist here: mapped by their literal target.
  await symlink('/dev/ttyUSB2', join(serialById, 'usb-HUAWEI_MOBILE_HUAWEI_MOBILE_0123456789ABCDEF-if02-port0'));
  await symlink('/dev/ttyACM0', join(serialById, 'usb-SimTech__Incorporated_SimTech__Incorporated-if03'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function list(): Promise<Awaited<ReturnType<typeof listPorts>>> {
  return listPorts({ fingerprints: FINGERPRINTS, sysClassTty, serialById, sysfsOnly: true });
}

describe('listPorts over sysfs', () => {
  it('lists the USB ttys in natural order and skips UART placeholders and non-serial ttys', async () => {
    const result = await list();
    expect(result.source).toBe('sysfs');
    expect(result.ports.map((p) => p.path)).toEqual(['/dev/ttyACM0', '/dev/ttyUSB0', '/dev/ttyUSB1', '/dev/ttyUSB2']);
  });

  it('gives a ttyUSB its USB ids, manufacturer, interface, by-id path and the matching fingerprint', async () => {
    const port = (await list()).ports.find((p) => p.path === '/dev/ttyUSB2');
    expect(port).toEqual<PortInfo>({
      path: '/dev/ttyUSB2',
      vendorId: '12d1',
      productId: '1506',
      manufacturer: 'HUAWEI_MOBILE',
      product: 'HUAWEI_MOBILE',
      serialNumber: '0123456789ABCDEF',
      interfaceNumber: '02',
      byIdPath: join(serialById, 'usb-HUAWEI_MOBILE_HUAWEI_MOBILE_0123456789ABCDEF-if02-port0'),
      looksLike: { profile: 'huawei', description: 'Huawei E3372 (stick firmware)' },
    });
  });

  it('tells the ports of one multi-port modem apart by interface; a port without a by-id link has none', async () => {
    const port = (await list()).ports.find((p) => p.path === '/dev/ttyUSB0');
    expect(port?.interfaceNumber).toBe('00');
    expect(port?.vendorId).toBe('12d1');
    expect(port?.byIdPath).toBeUndefined();
  });

  it('reads a cdc-acm tty (interface is the device itself) and matches a vendor-only row in any case', async () => {
    const port = (await list()).ports.find((p) => p.path === '/dev/ttyACM0');
    expect(port).toMatchObject({
      vendorId: '1e0e',
      productId: '9001',
      manufacturer: 'SimTech, Incorporated',
      interfaceNumber: '03',
      byIdPath: join(serialById, 'usb-SimTech__Incorporated_SimTech__Incorporated-if03'),
      looksLike: { profile: 'simcom', description: 'SIMCom module' },
    });
  });

  it('lists an unknown adapter with its ids but no fingerprint', async () => {
    const port = (await list()).ports.find((p) => p.path === '/dev/ttyUSB1');
    expect(port).toMatchObject({ vendorId: 'abcd', productId: '0001', interfaceNumber: '00' });
    expect(port?.looksLike).toBeUndefined();
  });

  it('returns no ports (not an error) when the sysfs and by-id roots do not exist', async () => {
    const result = await listPorts({
      fingerprints: FINGERPRINTS,
      sysClassTty: join(root, 'nope'),
      serialById: join(root, 'nope2'),
      sysfsOnly: true,
    });
    expect(result.ports).toEqual([]);
  });
});

describe('listPorts through udev, on this machine', () => {
  it("lists what serialport's SerialPort.list() lists, with the same ids (or says why it read sysfs)", async () => {
    const result = await listPorts({ fingerprints: FINGERPRINTS, serialById: join(root, 'serial/by-id') });
    const listed = await SerialPort.list().catch((err: unknown) => err as Error);
    if (listed instanceof Error) {
      // no udevadm here: both fail, and listPorts falls back to sysfs, saying why
      expect(result).toMatchObject({
        source: 'sysfs',
        warning: expect.stringMatching(
          /^udev listing failed \(udevadm is not installed\); read sysfs instead$/,
        ) as unknown,
      });
      return;
    }
    expect(result.source).toBe('udev');
    expect(result.warning).toBeUndefined();
    interface Listed {
      path: string;
      manufacturer?: string | undefined;
      serialNumber?: string | undefined;
      vendorId?: string | undefined;
      productId?: string | undefined;
    }
    const same = (ps: Listed[]) =>
      ps
        .map((p) => ({
          path: p.path,
          manufacturer: p.manufacturer,
          serialNumber: p.serialNumber,
          vendorId: p.vendorId?.toLowerCase(),
          productId: p.productId?.toLowerCase(),
        }))
        .sort((x, y) => x.path.localeCompare(y.path, 'en', { numeric: true }));
    expect(same(result.ports)).toEqual(same(listed));
  });
});

describe('matchFingerprint', () => {
  it.each([
    [{ vendorId: '12d1', productId: '1506' }, 'Huawei E3372 (stick firmware)'],
    [{ vendorId: '12D1', productId: '1506' }, 'Huawei E3372 (stick firmware)'],
    [{ vendorId: '12d1', productId: '1001' }, 'Huawei modem'],
    [{ vendorId: '1e0e', productId: '9001' }, 'SIMCom module'],
    [{ vendorId: '0403', productId: '6001' }, undefined],
    [{}, undefined],
  ])('%o -> %s', (ids, description) => {
    expect(matchFingerprint(ids, FINGERPRINTS)?.description).toBe(description);
  });
});
