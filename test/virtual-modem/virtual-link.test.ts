/**
 * The virtual link: the SerialLink the virtual modem (and any in-process device) is reached through. It must behave
 * like the native link where the layers above can tell: open errors, busy, write/data in order, close events.
 */
import { describe, expect, it } from 'vitest';
import { openVirtualLink, registerVirtualDevice, type DeviceSide } from '../../src/virtual-modem/virtual-link.js';

function recorder(path: string) {
  const written: string[] = [];
  const state: { side: DeviceSide | undefined; present: boolean; detached: number } = {
    side: undefined,
    present: true,
    detached: 0,
  };
  const unregister = registerVirtualDevice(path, {
    get present() {
      return state.present;
    },
    onAttach: (s) => (state.side = s),
    onWrite: (c) => written.push(c.toString('latin1')),
    onDetach: () => {
      state.side = undefined;
      state.detached++;
    },
  });
  return { written, state, unregister };
}

describe('virtual link', () => {
  it('a second open of the path is refused as busy, and the first link keeps working', async () => {
    const { written, state, unregister } = recorder('virtual:busy-test');
    try {
      const first = await openVirtualLink('virtual:busy-test');
      const err = await openVirtualLink('virtual:busy-test').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((err as { code?: string }).code).toBe('PORT_BUSY');
      expect((err as { message?: string }).message).toBe(
        'serial port virtual:busy-test is busy (held by another process)',
      );
      const got = new Promise<string>((resolve) => first.once('data', (c: Buffer) => resolve(c.toString('latin1'))));
      await first.write('AT\r');
      expect(written).toEqual(['AT\r']);
      state.side!.emit('OK\r\n');
      expect(await got).toBe('OK\r\n');
      await first.close();
      const again = await openVirtualLink('virtual:busy-test');
      await again.close();
    } finally {
      unregister();
    }
  });

  it('a missing or unplugged device is PORT_NOT_FOUND with the native wording', async () => {
    await expect(openVirtualLink('virtual:nothing-here')).rejects.toMatchObject({
      code: 'PORT_NOT_FOUND',
      message: 'serial port virtual:nothing-here does not exist',
    });
    const { state, unregister } = recorder('virtual:unplugged');
    state.present = false;
    try {
      await expect(openVirtualLink('virtual:unplugged')).rejects.toMatchObject({ code: 'PORT_NOT_FOUND' });
    } finally {
      unregister();
    }
  });

  it('unplug closes once with disconnected=true after the bytes already sent; writes then fail as closed', async () => {
    const { state, unregister } = recorder('virtual:unplug');
    try {
      const link = await openVirtualLink('virtual:unplug');
      const events: string[] = [];
      link.on('data', (c: Buffer) => events.push(`data ${c.toString('latin1').trim()}`));
      const closed = new Promise<void>((resolve) =>
        link.on('close', (info) => (events.push(`close ${info.disconnected}`), resolve())),
      );
      state.side!.emit('RING\r\n');
      state.side!.unplug();
      state.side?.unplug(); // a second unplug of the same open changes nothing
      await closed;
      await new Promise((r) => setImmediate(r));
      expect(events).toEqual(['data RING', 'close true']);
      expect(link.isOpen).toBe(false);
      expect(state.detached).toBe(1);
      await expect(link.write('AT\r')).rejects.toMatchObject({ code: 'PORT_CLOSED' });
    } finally {
      unregister();
    }
  });

  it('close() emits close with disconnected=false, and what the device sends afterwards is dropped', async () => {
    const { state, unregister } = recorder('virtual:close');
    try {
      const link = await openVirtualLink('virtual:close');
      const side = state.side!;
      const infos: boolean[] = [];
      link.on('close', (info) => infos.push(info.disconnected));
      const data: Buffer[] = [];
      link.on('data', (c: Buffer) => data.push(c));
      await link.close();
      expect(side.emit('OK\r\n')).toBe(false);
      await new Promise((r) => setImmediate(r));
      expect(infos).toEqual([false]);
      expect(data).toEqual([]);
    } finally {
      unregister();
    }
  });
});
