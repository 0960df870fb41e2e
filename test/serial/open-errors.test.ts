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
