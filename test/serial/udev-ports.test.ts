/**
 * What udev says of the serial ports: the parser on captured `udevadm info` outputs of real modems (test/fixtures/udev,
 * each naming its source) and against serialport's own Linux parser (@serialport/bindings-cpp's linuxList, fed the
 * same text) as its oracle; the one udevadm call on a fake udevadm: only candidate ttys asked, a vanished one, a
 * failure, a hang.
 */
import { EventEmitter } from 'node:events';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listPorts } from '../../src/serial/ports.js';
import { listFromUdev, parseUdevInfo } from '../../src/serial/udev-ports.js';

const fixture = (name: string) => readFile(new URL(`../fixtures/udev/${name}`, import.meta.url), 'utf8');

interface OraclePort {
  path: string;
  manufacturer?: string | undefined;
  serialNumber?: string | undefined;
  vendorId?: string | undefined;
  productId?: string | undefined;
}
const require = createRequire(import.meta.url);
const { linuxList } = require('@serialport/bindings-cpp/dist/linux-list.js') as {
  linuxList: (spawn: () => unknown) => Promise<OraclePort[]>;
};

/** serialport's Linux list() on this text, as if `udevadm info -e` had printed it. */
function oracle(text: string): Promise<OraclePort[]> {
  return linuxList(() => {
    const child = Object.assign(new EventEmitter(), { stdout: Readable.from([text]) });
    child.stdout.on('end', () => setImmediate(() => child.emit('close', 0)));
    return child;
  });
}

/** The fields both give, in one form (ids lower-case, an empty value as none). */
function common(ports: OraclePort[]): OraclePort[] {
  const v = (s: string | undefined) => (s ? s : undefined);
  return ports.map((p) => ({
    path: p.path,
    manufacturer: v(p.manufacturer),
    serialNumber: v(p.serialNumber),
    vendorId: v(p.vendorId?.toLowerCase()),
    productId: v(p.productId?.toLowerCase()),
  }));
}

describe('parseUdevInfo', () => {
  it('reads a Huawei stick’s ttyUSB as udev described it (ids, strings, interface)', async () => {
    expect(parseUdevInfo(await fixture('huawei-e1xx-ttyUSB0.txt'))).toEqual([
      {
        path: '/dev/ttyUSB0',
        vendorId: '12d1',
        productId: '141e',
        manufacturer: 'HUAWEI Technology',
        product: 'HUAWEI Mobile',
        interfaceNumber: '02',
      },
    ]);
  });

  it('reads a cdc_acm module and the Pi’s own UART (no USB ids) from one answer', async () => {
    expect(parseUdevInfo(await fixture('rpi4-alt1250-ttyACM1-ttyS0.txt'))).toEqual([
      {
        path: '/dev/ttyACM1',
        vendorId: '1199',
        productId: 'c001',
        manufacturer: 'Altair Semiconductor',
        product: 'ALT1250 IoT',
        serialNumber: 'V1.00',
        interfaceNumber: '02',
      },
      { path: '/dev/ttyS0' },
    ]);
  });

  it('lists what serialport’s own parser lists from the captures, with the same ids', async () => {
    for (const name of ['huawei-e1xx-ttyUSB0.txt', 'rpi4-alt1250-ttyACM1-ttyS0.txt']) {
      const text = await fixture(name);
      expect(common(parseUdevInfo(text))).toEqual(common(await oracle(text)));
    }
  });

  it('takes usb_id’s ID_USB_* over a plain ID_* a later rule set (serialport took the last), and ID_USB_* alone', async () => {
    // Some udev builds set only ID_USB_* (serialport/bindings-cpp issue 115); where both are set and differ, a later
    // rule (hwdb, a PCI parent's ids) wrote the plain one, and serialport's last-line-wins reported that instead.
    const text = [
      'P: /devices/x/ttyUSB3',
      'N: ttyUSB3',
      'E: DEVNAME=/dev/ttyUSB3',
      'E: ID_USB_VENDOR_ID=0x2C7C',
      'E: ID_VENDOR_ID=1d6b',
      'E: ID_USB_MODEL_ID=0125',
      'E: ID_USB_VENDOR_ENC=Quectel\\x20Wireless\\x20Solutions',
      'E: ID_USB_SERIAL_SHORT=a=b',
      '',
    ].join('\n');
    expect(parseUdevInfo(text)).toEqual([
      {
        path: '/dev/ttyUSB3',
        vendorId: '2c7c',
        productId: '0125',
        manufacturer: 'Quectel Wireless Solutions',
        serialNumber: 'a=b',
      },
    ]);
    expect((await oracle(text))[0]?.vendorId).toBe('1d6b'); // what serialport said of it
  });

  it('decodes escaped UTF-8 as text and skips what is not a serial tty, noise and half records', () => {
    const text = [
      'garbage before any record',
      'P: /devices/virtual/tty/console',
      'N: console',
      'E: DEVNAME=/dev/console',
      'P: /devices/x/ttyACM0',
      'N: ttyACM0',
      'E: ID_VENDOR_ENC=Fran\\xc3\\xa7ois\\x20GSM',
      'E: ID_MODEL_ENC=📶\\x20Stick',
      'E: =no key',
      'E: NOEQUALS',
      'X: something else',
      'P: /devices/x/no-node',
      'E: DEVNAME=/dev/ttyUSB9',
      'P: /devices/video0',
      'N: video0',
    ].join('\n');
    expect(parseUdevInfo(text)).toEqual([{ path: '/dev/ttyACM0', manufacturer: 'François GSM', product: '📶 Stick' }]);
    expect(parseUdevInfo('')).toEqual([]);
  });

  it('agrees with serialport’s parser on any udev answer of serial and other devices', async () => {
    const hex = fc.stringMatching(/^[0-9a-fA-F]{4}$/);
    const text = fc.stringMatching(/^[A-Za-z0-9_.,-]{1,12}( [A-Za-z0-9_.-]{1,8})?$/);
    const device = fc.record({
      name: fc.constantFrom('ttyUSB0', 'ttyUSB7', 'ttyACM2', 'ttyS0', 'ttyAMA0', 'rfcomm0', 'tty5', 'console', 'sda'),
      usb: fc.boolean(), // ID_USB_* (newer usb_id) or ID_*
      vendorId: fc.option(
        fc.tuple(fc.boolean(), hex).map(([x, h]) => (x ? `0x${h}` : h)),
        { nil: undefined },
      ),
      productId: fc.option(hex, { nil: undefined }),
      manufacturer: fc.option(text, { nil: undefined }),
      serial: fc.option(fc.stringMatching(/^[A-Z1-9][A-Za-z0-9]{0,15}$/), { nil: undefined }),
      noise: fc.array(fc.constantFrom('S: serial/by-id/x', 'L: 0', 'M: ttyX', 'E: TAGS=:systemd:', 'E: MAJOR=188')),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(device, { maxLength: 6 }), async (devices) => {
        const lines: string[] = [];
        for (const d of devices) {
          const k = (key: string) => (d.usb ? `E: ID_USB_${key}=` : `E: ID_${key}=`);
          lines.push(`P: /devices/test/${d.name}`, `N: ${d.name}`, `E: DEVNAME=/dev/${d.name}`, ...d.noise);
          if (d.vendorId) lines.push(k('VENDOR_ID') + d.vendorId);
          if (d.productId) lines.push(k('MODEL_ID') + d.productId);
          if (d.manufacturer) lines.push(k('VENDOR_ENC') + d.manufacturer.replace(/ /g, '\\x20'));
          if (d.serial) lines.push(k('SERIAL_SHORT') + d.serial);
          lines.push('');
        }
        const answer = lines.join('\n');
        expect(common(parseUdevInfo(answer))).toEqual(common(await oracle(answer)));
      }),
      { numRuns: 300 },
    );
  });
});

describe('listFromUdev and listPorts with a udevadm', () => {
  let root: string;
  let sysClassTty: string;
  let argsFile: string;

  /** A udevadm that records its arguments, prints `out` and exits with `code` (or sleeps `sleep` seconds first). */
  async function udevadm(name: string, out: string, code: number, sleep = 0): Promise<string> {
    await writeFile(join(root, `${name}.out`), out);
    const path = join(root, name);
    await writeFile(
      path,
      `#!/bin/sh\nprintf '%s\\n' "$@" > '${argsFile}'\n${sleep ? `exec sleep ${sleep}\n` : ''}cat '${path}.out'\n` +
        `${code ? `echo 'Unknown device "/sys/class/tty/ttyUSB9": No such device' >&2\n` : ''}exit ${code}\n`,
    );
    await chmod(path, 0o755);
    return path;
  }

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'pulsa-udev-'));
    sysClassTty = join(root, 'class/tty');
    argsFile = join(root, 'args');
    for (const n of ['ttyUSB0', 'ttyUSB1', 'ttyUSB10', 'ttyACM1', 'ttyS0', 'tty0', 'tty63', 'console', 'ptmx'])
      await mkdir(join(sysClassTty, n), { recursive: true });
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  it('asks one udevadm about the serial ttys only, never the whole database', async () => {
    const bin = await udevadm('ok', await fixture('huawei-e1xx-ttyUSB0.txt'), 0);
    const ports = await listFromUdev({ sysClassTty, udevadm: bin });
    expect(ports.map((p) => p.path)).toEqual(['/dev/ttyUSB0']);
    const args = (await readFile(argsFile, 'utf8')).trim().split('\n');
    expect(args.slice(0, 2)).toEqual(['info', '--query=all']);
    expect(args.slice(2).sort()).toEqual(
      ['ttyACM1', 'ttyS0', 'ttyUSB0', 'ttyUSB1', 'ttyUSB10'].map((n) => `${sysClassTty}/${n}`).sort(),
    );
  });

  it('never lists part of the ports as the whole: a present tty left undescribed (exit 1) means sysfs, saying why', async () => {
    const bin = await udevadm('partial', await fixture('rpi4-alt1250-ttyACM1-ttyS0.txt'), 1);
    const result = await listPorts({ fingerprints: [], sysClassTty, udevadm: bin, serialById: join(root, 'none') });
    expect(result.source).toBe('sysfs');
    expect(result.warning).toBe(
      'udev listing failed (udevadm exited with 1: Unknown device "/sys/class/tty/ttyUSB9": No such device); read sysfs instead',
    );
    // asked twice: everything, then the present ttys it had not described
    expect((await readFile(argsFile, 'utf8')).trim().split('\n').slice(2).sort()).toEqual(
      ['ttyUSB0', 'ttyUSB1', 'ttyUSB10'].map((n) => `${sysClassTty}/${n}`).sort(),
    );
  });

  it('reads sysfs instead, saying why, when udevadm fails, is missing or hangs', async () => {
    const failing = await udevadm('failing', '', 1);
    const failed = await listPorts({ fingerprints: [], sysClassTty, udevadm: failing, serialById: join(root, 'n') });
    expect(failed.source).toBe('sysfs');
    expect(failed.warning).toBe(
      'udev listing failed (udevadm exited with 1: Unknown device "/sys/class/tty/ttyUSB9": No such device); read sysfs instead',
    );
    const missing = await listPorts({
      fingerprints: [],
      sysClassTty,
      udevadm: join(root, 'no-such-udevadm'),
      serialById: join(root, 'n'),
    });
    expect(missing.warning).toBe('udev listing failed (udevadm is not installed); read sysfs instead');
    const hanging = await udevadm('hanging', '', 0, 5);
    await expect(listFromUdev({ sysClassTty, udevadm: hanging, timeoutMs: 300 })).rejects.toThrow(
      'udevadm took over 300 ms',
    );
  });

  /**
   * A udevadm describing each existing tty it is asked about, but ttyUSB1 is unplugged as it starts (removed from the
   * fake sysfs); at a missing tty it fails and goes on (`new`, systemd >= 250) or stops there (`old`).
   */
  async function describingUdevadm(name: string, mode: 'new' | 'old'): Promise<string> {
    const path = join(root, name);
    await writeFile(
      path,
      [
        '#!/bin/sh',
        `echo "$@" >> '${argsFile}'`,
        'shift 2 # info --query=all',
        'rc=0',
        'for a in "$@"; do',
        '  n=$(basename "$a")',
        '  if [ "$n" = ttyUSB1 ]; then rmdir "$a"; fi',
        '  if [ -d "$a" ]; then printf "P: /devices/x/%s\\nN: %s\\nE: DEVNAME=/dev/%s\\n\\n" "$n" "$n" "$n"',
        `  else echo "Unknown device \\"$a\\": No such device" >&2; rc=1; ${mode === 'old' ? 'exit 1; ' : ''}fi`,
        'done',
        'exit $rc',
        '',
      ].join('\n'),
    );
    await chmod(path, 0o755);
    return path;
  }

  it('a tty that vanished: the rest described by any udevadm, older ones (stopping at it) asked again', async () => {
    const tty = join(root, 'vanishing/class/tty');
    for (const mode of ['new', 'old'] as const) {
      for (const n of ['ttyACM0', 'ttyS0', 'ttyUSB0', 'ttyUSB1', 'ttyUSB2', 'ttyUSB3'])
        await mkdir(join(tty, n), { recursive: true });
      await rm(argsFile, { force: true });
      const bin = await describingUdevadm(`udevadm-${mode}`, mode);
      const ports = await listFromUdev({ sysClassTty: tty, udevadm: bin });
      expect(ports.map((p) => p.path).sort(), mode).toEqual(
        ['/dev/ttyACM0', '/dev/ttyS0', '/dev/ttyUSB0', '/dev/ttyUSB2', '/dev/ttyUSB3'].sort(),
      );
      const calls = (await readFile(argsFile, 'utf8')).trim().split('\n');
      expect(calls.length, mode).toBe(mode === 'old' ? 2 : 1);
      if (mode === 'old') expect(calls[1]).toBe(`info --query=all ${tty}/ttyUSB2 ${tty}/ttyUSB3`);
    }
  });

  it('asks nothing when no serial tty exists', async () => {
    const bin = await udevadm('never', '', 3);
    expect(await listFromUdev({ sysClassTty: join(root, 'nothing'), udevadm: bin })).toEqual([]);
  });
});
