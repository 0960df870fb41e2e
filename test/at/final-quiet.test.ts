import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { SerialAtChannel } from '../../src/at/channel.js';
import { escapeBytes } from '../../src/at/noise-report.js';
import { FINAL_RESULTS, looksLikeFinal, matchFinalResult } from '../../src/at/results.js';
import { AtCommandError } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { openVirtualLink, registerVirtualDevice } from '../../src/virtual-modem/virtual-link.js';
import { ScriptedDevice, answer, type Handler } from './scripted-device.js';

let counter = 0;
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

function captureLog(): { lines: () => Array<Record<string, unknown>>; logger: ReturnType<typeof createLogger> } {
  const chunks: string[] = [];
  const destination = new Writable({ write: (c: Buffer, _e, cb) => (chunks.push(c.toString()), cb()) });
  const logger = createLogger({ destination, level: 'debug', pretty: false });
  const lines = () =>
    chunks
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l.replace(/^<\d>/, '')) as Record<string, unknown>);
  return { lines, logger };
}

async function setup(handler: Handler, extra: { noiseReportMs?: number } = {}) {
  const path = `virtual:mock-final-${process.pid}-${++counter}`;
  const device = new ScriptedDevice(handler);
  const unregister = registerVirtualDevice(path, device);
  const link = await openVirtualLink(path);
  const log = captureLog();
  const channel = new SerialAtChannel({
    link,
    logger: log.logger,
    defaultTimeoutMs: 10_000,
    answerQuietMs: 150,
    quietGapMs: 50,
    maxDrainMs: 300,
    ...extra,
  });
  cleanups.push(async () => {
    await channel.close().catch(() => undefined);
    unregister();
  });
  return { device, channel, log };
}

describe('final results as data', () => {
  // [line, ok, code]: the vendor forms real devices send (see src/at/results.ts for the device and the source of each).
  it.each([
    ['MODEM ERROR: 5', false, 5],
    ['MODEM ERROR:', false, undefined],
    ['NA', false, undefined],
    ['ABORTED', false, undefined],
    ['CONNECT 115200', true, undefined],
    ['COMMAND NOT SUPPORT', false, undefined],
  ] as const)('%s ends the command (ok %s)', (line, ok, code) => {
    const m = matchFinalResult(line, FINAL_RESULTS);
    expect(m?.ok).toBe(ok);
    expect(m?.errorCode).toBe(code);
  });

  it('every row names the device that sends it and its source', () => {
    for (const row of FINAL_RESULTS) {
      expect(row.device, String(row.pattern)).toBeTruthy();
      expect(row.source, String(row.pattern)).toBeTruthy();
    }
  });

  it('final-looking lines and answers are told apart', () => {
    for (const line of ['SIM BUSY', 'CMD ERR: 3', 'FAIL', 'NOT READY']) expect(looksLikeFinal(line), line).toBe(true);
    for (const line of [
      '+CPIN: READY',
      '^SYSINFO: 2,3',
      '460011234567890',
      'SIMCOM_SIM800L',
      'huawei',
      '0123ABCD',
      'A',
      'Revision: 1',
    ])
      expect(looksLikeFinal(line), line).toBe(false);
  });

  it('MODEM ERROR: 5 fails the command at once, with its code, and the next command runs', async () => {
    const { channel } = await setup((input) => {
      if (input.kind !== 'command') return undefined;
      if (input.text === 'AT+WIND?') return answer('MODEM ERROR: 5');
      return answer('OK');
    });
    const started = Date.now();
    const err = await channel.run('AT+WIND?').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AtCommandError);
    expect((err as AtCommandError).final).toBe('MODEM ERROR: 5');
    expect((err as AtCommandError).errorCode).toBe(5);
    expect(Date.now() - started).toBeLessThan(5000); // far below the 10 s command timeout: not waited out
    await expect(channel.run('AT')).resolves.toMatchObject({ final: 'OK' });
  });

  it('a result code nobody listed ends the command after the quiet time, logged once per kind', async () => {
    const { channel, log } = await setup((input) => {
      if (input.kind !== 'command') return undefined;
      if (input.text.startsWith('AT+ODD')) return answer(`CMD ERR: ${input.text.length}`);
      return answer('OK');
    });
    for (const cmd of ['AT+ODD1', 'AT+ODD22', 'AT+ODD333']) {
      const err = (await channel.run(cmd).catch((e: unknown) => e)) as AtCommandError;
      expect(err).toBeInstanceOf(AtCommandError);
      expect(err.code).toBe('AT_ERROR');
      expect(err.final).toMatch(/^CMD ERR: \d+$/);
      expect(err.message).toContain('a result code the bridge does not know');
    }
    const warned = log.lines().filter((l) => String(l.msg).includes('does not know'));
    expect(warned).toHaveLength(1);
    await expect(channel.run('AT')).resolves.toMatchObject({ final: 'OK' });
  });

  it('a query answered without OK (+CPIN: READY, Wavecom/Sierra firmware) is accepted on any modem after the quiet time', async () => {
    const { channel, log } = await setup((input) => {
      if (input.kind !== 'command') return undefined;
      if (input.text === 'AT+CPIN?') return answer('+CPIN: READY');
      return answer('OK');
    });
    const first = await channel.run('AT+CPIN?');
    expect(first.lines).toEqual(['+CPIN: READY']);
    expect(first.final).toBe('');
    await channel.run('AT+CPIN?');
    expect(log.lines().filter((l) => String(l.msg).includes('without a final result'))).toHaveLength(1);
    await expect(channel.run('AT')).resolves.toMatchObject({ final: 'OK', lines: [] });
  });

  it('a command (not a query) answered without OK still times out: a listing cut short is never taken as complete', async () => {
    const { channel } = await setup((input) => {
      if (input.kind !== 'command') return undefined;
      if (input.text === 'AT+CMGL=4') return answer('+CMGL: 1,0,,5', '0011223344');
      return answer('OK');
    });
    const err = (await channel.run('AT+CMGL=4', { timeoutMs: 800 }).catch((e: unknown) => e)) as AtCommandError;
    expect(err.code).toBe('AT_TIMEOUT');
  });
});

describe('noise from the modem', () => {
  it('a modem spewing junk gives one warning at once and one summary line per interval, not one per chunk', async () => {
    const { device, channel, log } = await setup((input) => (input.kind === 'command' ? answer('OK') : undefined), {
      noiseReportMs: 400,
    });
    for (let i = 0; i < 300; i++) device.side?.emit(Buffer.from([0x00, 0xff, 0x13, 0x80 + (i % 16), 0x0d, 0x0a]));
    await channel.run('AT');
    await new Promise((r) => setTimeout(r, 600));
    const noise = log.lines().filter((l) => /garbage/.test(String(l.msg)));
    expect(noise).toHaveLength(2);
    expect(noise[1]).toMatchObject({ chunks: 299 });
    expect(String(noise[1]?.sample)).toMatch(/^\\x00\\xff\\x13\\x8/);
    expect(noise.every((l) => !/[\x00-\x08\x0e-\x1f\x7f-\xff]/.test(JSON.stringify(l)))).toBe(true);
  });

  it('escapeBytes keeps printable ASCII and escapes the rest', () => {
    expect(escapeBytes(Buffer.from('OK\r\n\x1b[31m\\'))).toBe('OK\\x0d\\x0a\\x1b[31m\\x5c');
    expect(escapeBytes(Buffer.alloc(100, 0x41), 4)).toBe('AAAA...');
  });
});
