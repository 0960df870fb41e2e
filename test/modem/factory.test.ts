/**
 * The factory: a target names a native port or a virtual modem; a detection channel knows every profile's URCs;
 * the modem it builds runs init over the virtual link like the daemon's.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { createChannel, createModem, openChannel, openLink } from '../../src/modem/factory.js';
import { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';
import { stopVirtualModems, virtualModemAt } from '../../src/virtual-modem/virtual-ports.js';

const started: VirtualModem[] = [];
afterEach(() => {
  for (const vm of started.splice(0)) vm.stop();
});

function virtualModem(path: string, profile: 'simcom' | 'huawei'): VirtualModem {
  const vm = new VirtualModem({ path, profile, bootStepMs: 0, noise: false });
  vm.start();
  started.push(vm);
  return vm;
}

describe('modem factory', () => {
  it('a native target that does not exist is PORT_NOT_FOUND; a virtual port builds its modem; a malformed one names what is wrong', async () => {
    await expect(openLink({ path: '/dev/factory-test-nothing', baudRate: 115200 })).rejects.toMatchObject({
      code: 'PORT_NOT_FOUND',
    });
    const link = await openLink({
      path: 'virtual:factory-built?number=081200000009&operator=telkomsel',
      baudRate: 115200,
    });
    try {
      expect(link.isOpen).toBe(true);
      expect(virtualModemAt('virtual:factory-built')).toBeDefined();
    } finally {
      await link.close();
      stopVirtualModems();
    }
    await expect(openLink({ path: 'virtual:bad name', baudRate: 115200 })).rejects.toMatchObject({
      code: 'PORT_NOT_FOUND',
      message: expect.stringContaining('the name must be'),
    });
    await expect(openLink({ path: 'virtual:x?operator=nokia', baudRate: 115200 })).rejects.toMatchObject({
      code: 'PORT_NOT_FOUND',
      message: expect.stringContaining('operator nokia is not one of'),
    });
    await expect(openLink({ path: 'virtual:x?colour=red', baudRate: 115200 })).rejects.toMatchObject({
      code: 'PORT_NOT_FOUND',
      message: expect.stringContaining('unknown setting colour'),
    });
    // A balance without the SIM's line (number and operator) would be ignored: refused instead.
    await expect(openLink({ path: 'virtual:x?balance=2000', baudRate: 115200 })).rejects.toMatchObject({
      code: 'PORT_NOT_FOUND',
      message: expect.stringContaining('balance needs number and operator too'),
    });
  });

  it('a virtual modem powered off stays off: its port is then missing, as an unplugged stick', async () => {
    const link = await openLink({ path: 'virtual:factory-off', baudRate: 115200 });
    await link.close();
    virtualModemAt('virtual:factory-off')!.stop();
    await expect(openLink({ path: 'virtual:factory-off', baudRate: 115200 })).rejects.toMatchObject({
      code: 'PORT_NOT_FOUND',
    });
    stopVirtualModems();
  });

  it('link -> channel -> modem over the virtual link: init identifies the modem', async () => {
    virtualModem('virtual:factory-simcom', 'simcom');
    const channel = await openChannel(
      { path: 'virtual:factory-simcom', baudRate: 115200 },
      { logger: silentLogger(), name: 'f1' },
    );
    const modem = createModem(channel, { name: 'f1', logger: silentLogger(), profile: 'auto' });
    try {
      const identity = await modem.init();
      expect(identity.profile).toBe('simcom');
      expect(identity.imsi).toMatch(/^\d{15}$/);
    } finally {
      modem.detach();
      await channel.close();
    }
  });

  it('a detection channel recognises a vendor URC before the profile is known', async () => {
    const vm = virtualModem('virtual:factory-huawei', 'huawei');
    const link = await openLink({ path: 'virtual:factory-huawei', baudRate: 115200 });
    const channel = createChannel(link, { logger: silentLogger(), detection: true });
    try {
      const urc = new Promise<string>((resolve) => channel.once('urc', (u) => resolve(u.name)));
      vm.injectUrc('^RSSI: 17');
      expect(await urc).toBe('rssi');
    } finally {
      await channel.close();
    }
  });
});
