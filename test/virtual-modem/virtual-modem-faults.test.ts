import { afterEach, describe, expect, it, vi } from 'vitest';
import { openVirtualLink } from '../../src/virtual-modem/virtual-link.js';
import type { SerialCloseInfo } from '../../src/serial/link.js';
import { Wire, boot, running, settle, shutdownBooted } from './wire.js';

const TS = new Date(Date.UTC(2024, 0, 8, 5, 34, 56));

/** Fake only the timers the simulator uses; the virtual link's nextTick stays real. */
function fakeTimers(): void {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
}

afterEach(async () => {
  vi.useRealTimers();
  expect(await shutdownBooted()).toEqual([]);
});

describe('simcom boot', () => {
  it('sends its banners spaced in time and answers SMS commands with ERROR until SMS Ready', async () => {
    fakeTimers();
    const { wire } = await boot({ profile: 'simcom', bootStepMs: 100 });
    expect((await wire.cmd('AT+CMGF=0')).final).toBe('ERROR');
    expect((await wire.cmd('AT+CPMS?')).final).toBe('ERROR');
    expect((await wire.cmd('AT')).final).toBe('OK'); // the modem itself answers
    vi.advanceTimersByTime(450);
    expect(await wire.until((l) => l === 'Call Ready')).toEqual(['RDY', '+CFUN: 1', '+CPIN: READY', 'Call Ready']);
    expect((await wire.cmd('AT+CMGL=4')).final).toBe('ERROR');
    vi.advanceTimersByTime(100);
    expect(await wire.next()).toBe('SMS Ready');
    expect((await wire.cmd('AT+CMGF=0')).final).toBe('OK');
  });

  it('with a locked SIM stops at +CPIN: SIM PIN and sends the rest after the PIN', async () => {
    const { wire } = await boot({ profile: 'simcom', pin: '1111' });
    await wire.cmd('ATE0');
    expect((await wire.cmd('AT+CPIN="1111"')).final).toBe('OK');
    expect(await wire.until((l) => l === 'SMS Ready')).toEqual(['+CPIN: READY', 'Call Ready', 'SMS Ready']);
    expect((await wire.cmd('AT+CMGF=0')).final).toBe('OK');
  });
});

describe('reboot', () => {
  it('brings echo back, loses CNMI/CMGF/CMEE, keeps the SIM storage', async () => {
    const { modem, wire } = await boot();
    await wire.cmd('ATE0;+CMEE=1;+CMGF=1;+CNMI=2,1,0,0,0');
    modem.injectSms({ from: '858', text: 'kept', timestamp: TS });
    await wire.until((l) => l.startsWith('+CMTI'));
    modem.reboot();
    expect(await wire.cmd('AT')).toEqual({ lines: ['AT'], final: 'OK' });
    expect((await wire.cmd('AT+CNMI?;+CMGF?;+CMEE?')).lines).toEqual([
      'AT+CNMI?;+CMGF?;+CMEE?',
      '+CNMI: 0,0,0,0,0',
      '+CMGF: 0',
      '+CMEE: 0',
    ]);
    expect(modem.storedMessages()).toHaveLength(1);
  });

  it('AT+CFUN=1,1 answers OK, then reboots (simcom banners again)', async () => {
    const { modem, wire } = await boot({ profile: 'simcom' });
    await wire.cmd('ATE0;+CNMI=2,1,0,0,0');
    expect((await wire.cmd('AT+CFUN=1,1')).final).toBe('OK');
    expect(await wire.until((l) => l === 'SMS Ready')).toEqual([
      'RDY',
      '+CFUN: 1',
      '+CPIN: READY',
      'Call Ready',
      'SMS Ready',
    ]);
    expect(modem.cnmi().mt).toBe(0);
    expect(modem.echoEnabled).toBe(true);
  });

  it('an unacknowledged +CMT is redelivered into storage after a reboot', async () => {
    const { modem, wire } = await boot();
    await wire.cmd('ATE0;+CSMS=1;+CNMI=2,2,0,0,0');
    modem.injectSms({ from: '858', text: 'unacked', timestamp: TS });
    await wire.until((l) => l.startsWith('+CMT:'));
    modem.reboot();
    expect(modem.storedMessages()).toHaveLength(1);
  });
});

describe('+CMT acknowledgement timeout', () => {
  it('without AT+CNMA in time the SMSC redelivers: stored and announced with +CMTI', async () => {
    fakeTimers();
    const { modem, wire } = await boot({ cnmaTimeoutMs: 5000 });
    await wire.cmd('ATE0;+CSMS=1;+CNMI=2,2,0,0,0');
    modem.injectSms({ from: '858', text: 'a' });
    modem.injectSms({ from: '858', text: 'b' }); // waits behind the first +CMT
    await wire.until((l) => l.startsWith('+CMT:'));
    await wire.next();
    vi.advanceTimersByTime(4999);
    expect(modem.storedMessages()).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(await wire.next()).toBe('+CMTI: "SM",1');
    expect(await wire.next()).toMatch(/^\+CMT: ,\d+$/); // the queued one now
    await wire.next();
    expect((await wire.cmd('AT+CNMA')).final).toBe('OK');
    expect(modem.storedMessages()).toHaveLength(1);
  });
});

describe('unplug and replug', () => {
  it('the link closes with disconnected=true; opening fails until replug; SMS sent meanwhile arrive later', async () => {
    const { modem, wire } = await boot();
    const closed = new Promise<SerialCloseInfo>((resolve) => wire.link.once('close', resolve));
    modem.unplug();
    expect((await closed).disconnected).toBe(true);
    expect(modem.present).toBe(false);
    await expect(openVirtualLink(modem.path)).rejects.toMatchObject({ code: 'PORT_NOT_FOUND' });
    expect(modem.injectSms({ from: '858', text: 'while away', timestamp: TS }).held).toBe(1);
    modem.replug();
    const again = await Wire.open(modem.path);
    running.push({ modem, wire: again });
    expect(await again.cmd('AT')).toEqual({ lines: ['AT'], final: 'OK' });
    expect(modem.storedMessages()).toHaveLength(1);
  });
});

describe('line faults', () => {
  it('injectGarbage sends raw bytes; the modem keeps answering', async () => {
    const { modem, wire } = await boot();
    await wire.cmd('ATE0');
    modem.injectGarbage(Buffer.from([0x00, 0xff, 0x0d, 0x0a]));
    expect(await wire.cmd('AT')).toEqual({ lines: ['\u0000\u00ff'], final: 'OK' });
  });

  it('stall drops input and output until the stall ends', async () => {
    fakeTimers();
    const { modem, wire } = await boot();
    await wire.cmd('ATE0;+CNMI=2,1,0,0,0');
    modem.stall(1000);
    await wire.link.write('AT+CGMI\r');
    modem.injectSms({ from: '858', text: 'stored while stalled', timestamp: TS });
    await settle();
    expect(wire.drain()).toEqual([]);
    expect(modem.storedMessages()).toHaveLength(1);
    vi.advanceTimersByTime(1000);
    expect(await wire.cmd('AT+CGMM')).toEqual({ lines: ['VM-3GPP'], final: 'OK' });
    modem.stall('forever');
    await wire.link.write('AT\r');
    await settle();
    expect(wire.drain()).toEqual([]);
    modem.resume();
    expect((await wire.cmd('AT')).final).toBe('OK');
  });
});

describe('huawei noise', () => {
  it('emits noise URCs periodically (deterministic per seed) until AT^CURC=0', async () => {
    fakeTimers();
    const a = await boot({ profile: 'huawei', noise: { seed: 7, intervalMs: 1000, midResponseProbability: 0 } });
    const b = await boot({ profile: 'huawei', noise: { seed: 7, intervalMs: 1000, midResponseProbability: 0 } });
    await a.wire.cmd('ATE0');
    await b.wire.cmd('ATE0');
    vi.advanceTimersByTime(3000);
    const fromA = [await a.wire.next(), await a.wire.next(), await a.wire.next()];
    const fromB = [await b.wire.next(), await b.wire.next(), await b.wire.next()];
    expect(fromA).toEqual(fromB);
    for (const line of fromA) expect(line).toMatch(/^\^(RSSI|HCSQ|MODE|DSFLOWRPT|SRVST|SIMST|NWTIME|BOOT):/);
    await a.wire.cmd('AT^CURC=0');
    vi.advanceTimersByTime(5000);
    await settle();
    expect(a.wire.drain()).toEqual([]);
  });

  it('can slip a noise URC between a response and its OK', async () => {
    const { modem, wire } = await boot({
      profile: 'huawei',
      noise: { seed: 3, intervalMs: 0, midResponseProbability: 1 },
    });
    await wire.cmd('ATE0');
    modem.injectSms({ from: '858', text: 'n', timestamp: TS });
    const { lines } = await wire.cmd('AT+CMGL=4');
    expect(lines).toHaveLength(3);
    expect(lines[2]).toMatch(/^\^[A-Z]+:/);
  });
});

describe('raw PDUs, radio and latency', () => {
  it('injectRawPdu stores a malformed PDU verbatim for the bridge to reject', async () => {
    const { modem, wire } = await boot();
    await wire.cmd('ATE0;+CNMI=2,1,0,0,0');
    expect(modem.injectRawPdu('0004038158f80000FFFF', 9).indexes).toEqual([1]);
    await wire.next();
    expect((await wire.cmd('AT+CMGR=1')).lines).toEqual(['+CMGR: 0,,9', '0004038158F80000FFFF']);
  });

  it('AT+CFUN=0 deregisters (CREG/CEREG stat 0, USSD refused) and holds SMS until CFUN=1', async () => {
    const { modem, wire } = await boot();
    await wire.cmd('ATE0;+CMEE=1');
    expect((await wire.cmd('AT+CEREG?')).lines).toEqual(['+CEREG: 0,1']);
    await wire.cmd('AT+CFUN=0');
    expect((await wire.cmd('AT+CREG?;+CEREG?')).lines).toEqual(['+CREG: 0,0', '+CEREG: 0,0']);
    expect((await wire.cmd('AT+CUSD=1,"*888#",15')).final).toBe('+CME ERROR: 30');
    expect(modem.injectSms({ from: '858', text: 'later', timestamp: TS }).held).toBe(1);
    await wire.cmd('AT+CFUN=1');
    expect(modem.storedMessages()).toHaveLength(1);
  });

  it('latencyMs delays every answer', async () => {
    fakeTimers();
    const { wire } = await boot({ latencyMs: 200 });
    await wire.link.write('AT\r');
    await settle();
    expect(wire.drain()).toEqual([]);
    vi.advanceTimersByTime(200);
    expect(await wire.until((l) => l === 'OK')).toEqual(['AT', 'OK']);
  });
});
