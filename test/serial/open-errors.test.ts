/**
 * The open() failures an operator meets, as @serialport/bindings-cpp words them (serialport_unix.cpp:
 * "Error: <strerror>, cannot open <path>" and "Error <strerror> Cannot lock port"), mapped to one clear line and a
 * hint. Permission denied cannot be produced here (tests run as root), so the binding's own wording is used.
 */
import { describe, expect, it } from 'vitest';
import { explainOpenError } from '../../src/serial/serial-link.js';

describe('explainOpenError', () => {
  it.each([
    [
      'Error: No such file or directory, cannot open /dev/ttyUSB9',
      'PORT_NOT_FOUND',
      'serial port /dev/ttyUSB9 does not exist',
      /by-id/,
    ],
    [
      'Error: Permission denied, cannot open /dev/ttyUSB9',
      'PORT_PERMISSION',
      'permission denied opening /dev/ttyUSB9',
      /pulsa-bridge-modems --modem/,
    ],
    [
      'Error Resource temporarily unavailable Cannot lock port',
      'PORT_BUSY',
      'serial port /dev/ttyUSB9 is busy (held by another process)',
      /ModemManager/,
    ],
    [
      'Error: Device or resource busy, cannot open /dev/ttyUSB9',
      'PORT_BUSY',
      'serial port /dev/ttyUSB9 is busy (held by another process)',
      /fuser/,
    ],
    [
      'Error: Input/output error, cannot open /dev/ttyUSB9',
      'PORT_IO',
      'cannot open /dev/ttyUSB9: Error: Input/output error, cannot open /dev/ttyUSB9',
      undefined,
    ],
  ])('%s', (message, code, text, hint) => {
    const e = explainOpenError('/dev/ttyUSB9', new Error(message));
    expect(e.code).toBe(code);
    expect(e.message).toBe(text);
    if (hint) expect(e.hint).toMatch(hint);
    expect(e.cause).toBeInstanceOf(Error);
  });
});

describe('a close that fails', () => {
  it('still ends with a close event and a link that can be opened again', async () => {
    const { openSerialLink } = await import('../../src/serial/serial-link.js');
    const { SerialPortMock } = await import('serialport');
    // serialport's mock binding stands in for the native one (the link's port factory swaps it).
    const path = 'virtual:close-fails';
    // A fresh mock port per open (the failed close left the old one locked, as a vanished device's fd would be).
    const mockPort = ({ path: p, baudRate }: { path: string; baudRate: number }) => {
      SerialPortMock.binding.createPort(p, { echo: false, record: false });
      return new SerialPortMock({ path: p, baudRate, autoOpen: false });
    };
    const link = await openSerialLink({ path, baudRate: 115200 }, mockPort);
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
    const again = await openSerialLink({ path, baudRate: 115200 }, mockPort);
    await again.close();
  });
});
