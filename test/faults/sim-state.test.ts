/**
 * The simulator additions the fault suite relies on: a SIM snapshot survives a new VirtualModem (unplug/replug across
 * simulator processes) with indexes, held SMS, PIN state and concatenation counter; a silent reboot loses the modem's
 * settings without a banner.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';
import { boot, shutdownBooted, uniquePath } from '../virtual-modem/wire.js';

const TS = new Date(Date.UTC(2026, 0, 8, 5, 34, 56));

afterEach(async () => {
  expect(await shutdownBooted()).toEqual([]);
});

describe('VirtualModem snapshot / restore (simulate --state)', () => {
  it('carries stored SMS at their indexes, SMS held by the network, PIN state and tries, concatenation counter', async () => {
    const { modem, wire } = await boot({ storageCapacity: 3, pin: '1234', bootStepMs: 0 });
    expect((await wire.cmd('AT+CPIN="0000"')).final).toBe('ERROR'); // one wrong PIN: 2 tries left
    expect((await wire.cmd('AT+CPIN="1234"')).final).toBe('OK');
    for (const text of ['a', 'b', 'c', 'd', 'e'])
      modem.injectSms({ from: '858', text, timestamp: TS, delivery: 'store' });
    expect(modem.storedMessages().map((m) => m.index)).toEqual([1, 2, 3]);
    expect(modem.heldBySmscCount).toBe(2);
    await wire.cmd('AT+CMGD=2');
    await new Promise((r) => setTimeout(r, 10)); // the SMSC redelivers on a zero timer after the OK
    const snap = modem.snapshot();
    expect(snap.slots.map((s) => s.index)).toEqual([1, 2, 3]); // the freed slot was refilled by the SMSC at once
    expect(snap.held).toHaveLength(1);

    const again = new VirtualModem({ path: uniquePath(), storageCapacity: 3, pin: '1234', bootStepMs: 0 });
    again.restore(JSON.parse(JSON.stringify(snap)) as typeof snap);
    expect(again.storedMessages()).toEqual(modem.storedMessages());
    expect(again.heldBySmscCount).toBe(1);
    expect(again.sim).toBe('ready'); // restored as saved; a reboot locks it again (it has a PIN)
    expect(again.snapshot()).toEqual(snap);
  });

  it('refuses a snapshot that does not fit its storage', () => {
    const small = new VirtualModem({ path: uniquePath(), storageCapacity: 2 });
    expect(() =>
      small.restore({
        v: 1,
        slots: [{ index: 5, stat: 0, pdu: '00', tpduLength: 1 }],
        held: [],
        simState: 'ready',
        pinTriesLeft: 3,
        concatRef: 1,
      }),
    ).toThrow(/index 5/);
  });
});

describe('silent reboot', () => {
  it('resets echo and CNMI without any banner', async () => {
    const { modem, wire } = await boot({ profile: 'simcom', bootStepMs: 0 });
    await wire.cmd('ATE0;+CNMI=2,1,0,0,0');
    const before = wire.raw.length;
    modem.reboot({ silent: true });
    expect(await wire.cmd('AT')).toEqual({ lines: ['AT'], final: 'OK' }); // echo is back
    expect(wire.raw.slice(before)).not.toMatch(/RDY|SMS Ready|Call Ready/);
    expect(modem.cnmi().mt).toBe(0);
    expect((await wire.cmd('AT+CMGL=4')).final).toBe('OK'); // SMS ready at once
  });
});
