/**
 * The open() failures an operator meets, as @serialport/bindings-cpp words them (serialport_unix.cpp:
 * "Error: <strerror>, cannot open <path>" and "Error <strerror> Cannot lock port"), mapped to one clear line and a
 * hint. Permission denied cannot be produced here (tests run as root), so the binding's own wording is used.
 */
import { describe, expect, it } from 'vitest';
import { explainOpenError } from '../../src/serial/serial-link.js';

describe('explainOpenError', () => {
  it.each([
    ['Error: No such file or directory, cannot open /dev/ttyUSB9', 'PORT_NOT_FOUND', 'serial port /dev/ttyUSB9 does not exist', /by-id/],
    ['Error: Permission denied, cannot open /dev/ttyUSB9', 'PORT_PERMISSION', 'permission denied opening /dev/ttyUSB9', /dialout/],
    ['Error Resource temporarily unavailable Cannot lock port', 'PORT_BUSY', 'serial port /dev/ttyUSB9 is busy (held by another process)', /ModemManager/],
    ['Error: Device or resource busy, cannot open /dev/ttyUSB9', 'PORT_BUSY', 'serial port /dev/ttyUSB9 is busy (held by another process)', /fuser/],
    ['Error: Input/output error, cannot open /dev/ttyUSB9', 'PORT_IO', 'cannot open /dev/ttyUSB9: Error: Input/output error, cannot open /dev/ttyUSB9', undefined],
  ])('%s', (message, code, text, hint) => {
    const e = explainOpenError('/dev/ttyUSB9', new Error(message));
    expect(e.code).toBe(code);
    expect(e.message).toBe(text);
    if (hint) expect(e.hint).toMatch(hint);
    expect(e.cause).toBeInstanceOf(Error);
  });
});

describe('mock binding', () => {
  it('a second open of a mock path is refused as busy, and the first link keeps working', async () => {
    const { registerMockDevice } = await import('../../src/serial/mock-device.js');
    const { openSerialLink } = await import('../../src/serial/serial-link.js');
    const written: string[] = [];
    let side: { emit(d: string): boolean } | undefined;
    const unregister = registerMockDevice('/virtual/busy-test', {
      present: true,
      onAttach: (s) => (side = s),
      onWrite: (c) => written.push(c.toString('latin1')),
      onDetach: () => (side = undefined),
    });
    try {
      const first = await openSerialLink({ path: '/virtual/busy-test', baudRate: 115200, binding: 'mock' });
      const err = await openSerialLink({ path: '/virtual/busy-test', baudRate: 115200, binding: 'mock' }).then(() => undefined, (e: unknown) => e);
      expect((err as { code?: string }).code).toBe('PORT_BUSY');
      const got = new Promise<string>((resolve) => first.once('data', (c: Buffer) => resolve(c.toString('latin1'))));
      await first.write('AT\r');
      expect(written).toEqual(['AT\r']);
      side!.emit('OK\r\n');
      expect(await got).toBe('OK\r\n');
      await first.close();
      const again = await openSerialLink({ path: '/virtual/busy-test', baudRate: 115200, binding: 'mock' });
      await again.close();
    } finally {
      unregister();
    }
  });
});

describe('a close that fails', () => {
  it('still ends with a close event and a link that can be opened again', async () => {
    const { registerMockDevice } = await import('../../src/serial/mock-device.js');
    const { openSerialLink } = await import('../../src/serial/serial-link.js');
    const { SerialPortMock } = await import('serialport');
    const unregister = registerMockDevice('/virtual/close-fails', { present: true, onAttach: () => undefined, onWrite: () => undefined, onDetach: () => undefined });
    try {
      const link = await openSerialLink({ path: '/virtual/close-fails', baudRate: 115200, binding: 'mock' });
      const errors: Error[] = [];
      link.on('error', (e) => errors.push(e));
      const closed = new Promise((resolve) => link.once('close', resolve));
      // Make the binding's close fail the way a vanished USB device can.
      const binding = (link as unknown as { port: InstanceType<typeof SerialPortMock> }).port.port!;
      binding.close = async () => {
        throw new Error('EIO: close failed');
      };
      await link.close();
      await closed;
      expect(link.isOpen).toBe(false);
      expect(errors.map((e) => e.message)).toEqual(['EIO: close failed']);
      const again = await openSerialLink({ path: '/virtual/close-fails', baudRate: 115200, binding: 'mock' });
      await again.close();
    } finally {
      unregister();
    }
  });
});
