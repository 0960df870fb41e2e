import { afterEach, describe, expect, it } from 'vitest';
import { SerialAtChannel } from '../../src/at/channel.js';
import { responsePrefixesOf, runRawAt } from '../../src/at/raw.js';
import type { Urc, UrcEntry } from '../../src/at/types.js';
import { AtCommandError } from '../../src/errors.js';
import { silentLogger } from '../../src/log.js';
import { openVirtualLink, registerVirtualDevice } from '../../src/virtual-modem/virtual-link.js';
import { ScriptedDevice, answer, type Handler } from './scripted-device.js';

/** The URCs the raw line must not swallow or steal: +CREG and +CSQ-like rows a profile might have. */
const URCS: UrcEntry[] = [
  { name: 'cmti', pattern: /^\+CMTI:/ },
  { name: 'creg', pattern: /^\+CREG:/, responseTo: ['AT+CREG'] },
  { name: 'rssi', pattern: /^\^RSSI:/ },
  { name: 'cusd', pattern: /^\+CUSD:\s*\d/, responseTo: ['AT+CUSD?'] },
];

let counter = 0;
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

async function setup(handler: Handler) {
  const path = `virtual:mock-raw-${process.pid}-${++counter}`;
  const device = new ScriptedDevice(handler);
  const unregister = registerVirtualDevice(path, device);
  const link = await openVirtualLink(path);
  const channel = new SerialAtChannel({
    link,
    logger: silentLogger(),
    defaultTimeoutMs: 2000,
    urcs: URCS,
    quietGapMs: 50,
    maxDrainMs: 200,
  });
  const urcs: Urc[] = [];
  channel.on('urc', (u) => urcs.push(u));
  cleanups.push(async () => {
    await channel.close().catch(() => undefined);
    unregister();
  });
  return { channel, device, urcs };
}

describe('responsePrefixesOf', () => {
  it.each([
    ['AT+CSQ;+CREG?', ['+CSQ', '+CREG']],
    ['at+csq', ['+CSQ']],
    ['AT^SYSINFO', ['^SYSINFO']],
    ['AT+CPMS="SM","SM";+CMGL=4', ['+CPMS', '+CMGL']],
    ['AT+CSCA="+62;816"', ['+CSCA']],
    ['ATE0+CSQ', ['+CSQ']],
    ['ATI', []],
    ['ATD*888#;', []],
    ['CSQ', []],
  ])('%s -> %j', (line, prefixes) => {
    expect(responsePrefixesOf(line)).toEqual(prefixes);
  });
});

describe('runRawAt', () => {
  it('sends the line as typed and nothing else, and returns every response line of a multi-command line', async () => {
    const { channel, device, urcs } = await setup((input) => {
      if (input.kind === 'command' && input.text === 'AT+CSQ;+CREG?')
        return answer('+CSQ: 21,99', '+CMTI: "SM",4', '+CREG: 0,1', 'OK');
      return answer('ERROR');
    });
    const out = await runRawAt(channel, 'AT+CSQ;+CREG?');
    expect(out).toEqual({
      command: 'AT+CSQ;+CREG?',
      lines: ['+CSQ: 21,99', '+CREG: 0,1'],
      final: 'OK',
      ok: true,
      urcs: ['+CMTI: "SM",4'],
    });
    expect(device.received).toEqual([{ kind: 'command', text: 'AT+CSQ;+CREG?' }]);
    // The URC that arrived meanwhile still reached the other listeners (the daemon's receiver); +CREG did not.
    expect(urcs.map((u) => u.name)).toEqual(['cmti']);
  });

  it('a +CREG line is still a URC for a line that does not name +CREG', async () => {
    const { channel, urcs } = await setup(() => answer('+CSQ: 21,99', '+CREG: 1', 'OK'));
    const out = await runRawAt(channel, 'AT+CSQ');
    expect(out.lines).toEqual(['+CSQ: 21,99']);
    expect(out.urcs).toEqual(['+CREG: 1']);
    expect(urcs.map((u) => u.name)).toEqual(['creg']);
  });

  it('a modem error is an outcome with the modem words and the explanation of its code', async () => {
    const { channel } = await setup(() => answer('+CME ERROR: 10'));
    const out = await runRawAt(channel, 'AT+CIMI');
    expect(out).toEqual({
      command: 'AT+CIMI',
      lines: [],
      final: '+CME ERROR: 10',
      ok: false,
      error: 'AT+CIMI failed: +CME ERROR: 10 (SIM not inserted)',
      urcs: [],
    });
  });

  it('answers a > prompt with the body and Ctrl-Z', async () => {
    const { channel, device } = await setup((input) => {
      if (input.kind === 'command') return '\r\n> ';
      if (input.kind === 'text') return answer('+CMGS: 12', 'OK');
      return undefined;
    });
    const out = await runRawAt(channel, 'AT+CMGS=18', { body: '0011000B916281', timeoutMs: 1500 });
    expect(out).toMatchObject({ lines: ['+CMGS: 12'], final: 'OK', ok: true });
    expect(device.received).toEqual([
      { kind: 'command', text: 'AT+CMGS=18' },
      { kind: 'text', text: '0011000B916281' },
    ]);
  });

  it('cancelPrompt leaves the prompt with Esc and returns what the modem answers then', async () => {
    const { channel, device } = await setup((input) => {
      if (input.kind === 'command') return '\r\n> ';
      if (input.kind === 'cancel') return answer('OK');
      return undefined;
    });
    const out = await runRawAt(channel, 'AT+CMGS=18', { cancelPrompt: true, body: 'ignored' });
    expect(out).toMatchObject({ final: 'OK', ok: true });
    expect(device.received).toEqual([
      { kind: 'command', text: 'AT+CMGS=18' },
      { kind: 'cancel', text: '' },
    ]);
  });

  it('no answer in time throws a timeout naming the command', async () => {
    const { channel } = await setup(() => undefined);
    const err = await runRawAt(channel, 'AT+COPS=?', { timeoutMs: 300 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AtCommandError);
    expect((err as AtCommandError).code).toBe('AT_TIMEOUT');
    expect((err as AtCommandError).message).toContain('AT+COPS=?');
  });
});
