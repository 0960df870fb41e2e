/**
 * The virtual modem on a real pseudo-terminal pair: the bridge end is opened with the native binding, as the daemon
 * opens a USB modem, and the AT channel talks to the simulator through the kernel's pty and socat.
 * Skipped only when socat is not installed (CI installs it); the missing-socat error is tested everywhere.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { existsSync, lstatSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SerialAtChannel } from '../../src/at/channel.js';
import type { Urc } from '../../src/at/types.js';
import { BridgeError } from '../../src/errors.js';
import { silentLogger } from '../../src/log.js';
import type { SerialCloseInfo, SerialLink } from '../../src/serial/link.js';
import { openSerialLink } from '../../src/serial/serial-link.js';
import { hostVirtualModemOnPty, uartLane, type PtyHost } from '../../src/virtual-modem/pty-host.js';
import { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';
import { until } from '../support/until.js';
import { hasSocat } from '../support/pty.js';

if (!hasSocat)
  console.warn('pty-host.test: socat is not installed; skipping the pseudo-terminal tests (apt-get install socat)');

const CMTI = {
  name: 'cmti',
  pattern: /^\+CMTI:/,
  parse: (l: string[]) => ({ index: Number(/,(\d+)/.exec(l[0] ?? '')?.[1]) }),
};

let cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.reverse()) await c();
  cleanups = [];
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'pulsa-ptyhost-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function modem(): VirtualModem {
  const vm = new VirtualModem({
    path: `virtual:pty-host-${process.pid}-${Math.random()}`,
    profile: 'simcom',
    bootStepMs: 0,
    noise: false,
  });
  cleanups.push(() => vm.stop());
  return vm;
}

async function host(vm: VirtualModem, linkPath: string): Promise<PtyHost> {
  const h = await hostVirtualModemOnPty(vm, { linkPath, logger: silentLogger() });
  cleanups.push(() => h.close());
  return h;
}

async function bridge(
  path: string,
): Promise<{ link: SerialLink; channel: SerialAtChannel; urcs: Urc[]; closes: SerialCloseInfo[] }> {
  const link = await openSerialLink({ path, baudRate: 115200 });
  cleanups.push(() => link.close());
  const closes: SerialCloseInfo[] = [];
  link.on('close', (info) => closes.push(info));
  const channel = new SerialAtChannel({ link, logger: silentLogger(), defaultTimeoutMs: 5000, urcs: [CMTI] });
  const urcs: Urc[] = [];
  channel.on('urc', (u) => urcs.push(u));
  return { link, channel, urcs, closes };
}

describe('hostVirtualModemOnPty', () => {
  it('names socat in a BridgeError with an install hint when socat is missing', async () => {
    const dir = tempDir();
    const savedPath = process.env.PATH;
    process.env.PATH = join(dir, 'empty-bin');
    try {
      const err = await hostVirtualModemOnPty(modem(), { linkPath: join(dir, 'ttyV0') }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(BridgeError);
      expect((err as BridgeError).message).toMatch(/socat is not installed/);
      expect((err as BridgeError).hint).toBe('apt-get install socat');
    } finally {
      process.env.PATH = savedPath;
    }
    expect(existsSync(join(dir, 'ttyV0'))).toBe(false);
  });

  it('refuses to replace a file that is not a symlink at linkPath', async () => {
    const dir = tempDir();
    const linkPath = join(dir, 'ttyV0');
    writeFileSync(linkPath, 'precious');
    await expect(hostVirtualModemOnPty(modem(), { linkPath })).rejects.toThrow(/not a symlink/);
  });

  describe.skipIf(!hasSocat)('over socat', () => {
    it('answers AT and AT+CSQ on the native binding and reports +CMTI after injectSms', async () => {
      const dir = tempDir();
      const vm = modem();
      const h = await host(vm, join(dir, 'ttyV0'));
      expect(h.devicePath).toBe(join(dir, 'ttyV0'));
      expect(lstatSync(h.devicePath).isSymbolicLink()).toBe(true);

      const { channel, urcs } = await bridge(h.devicePath);
      await channel.run('ATE0');
      await expect(channel.run('AT')).resolves.toEqual({ command: 'AT', lines: [], final: 'OK' });
      await expect(channel.run('AT+CSQ')).resolves.toMatchObject({
        lines: [expect.stringMatching(/^\+CSQ: \d+,\d+$/)],
        final: 'OK',
      });
      await channel.run('AT+CNMI=2,1,0,0,0');

      const injected = vm.injectSms({ from: '858', text: 'Anda mendapatkan penambahan pulsa Rp 5000. SN: PTY1' });
      expect(injected.indexes).toHaveLength(1);
      await until(() => urcs.some((u) => u.name === 'cmti'), '+CMTI at the bridge end');
      expect(urcs.filter((u) => u.name === 'cmti')).toEqual([
        { name: 'cmti', lines: [`+CMTI: "SM",${injected.indexes[0]}`], data: { index: injected.indexes[0] } },
      ]);

      const read = await channel.run(`AT+CMGR=${injected.indexes[0]}`);
      expect(read.lines[1]).toBe(injected.pdus[0]?.pdu);
      expect(vm.commandLog()).toContain('AT+CSQ');
    });

    it('lets the bridge close and reopen the port while the host keeps running', async () => {
      const dir = tempDir();
      const h = await host(modem(), join(dir, 'ttyV0'));
      const first = await bridge(h.devicePath);
      await first.channel.run('ATE0');
      await first.channel.close();
      const second = await bridge(h.devicePath);
      await expect(second.channel.run('AT')).resolves.toMatchObject({ final: 'OK' });
    });

    it('unplug makes the bridge end vanish (disconnected) and removes both links', async () => {
      const dir = tempDir();
      const vm = modem();
      const h = await host(vm, join(dir, 'ttyV0'));
      const { channel, closes } = await bridge(h.devicePath);
      await channel.run('ATE0');
      vm.unplug();
      await until(() => closes.length > 0, 'the bridge end to close');
      expect(closes[0]?.disconnected).toBe(true);
      await h.close();
      expect(existsSync(h.devicePath)).toBe(false);
      expect(existsSync(`${h.devicePath}.modem`)).toBe(false);
      await expect(openSerialLink({ path: h.devicePath, baudRate: 115200 })).rejects.toMatchObject({
        code: 'PORT_NOT_FOUND',
      });
    });

    it('delivers every paced byte over the pty when paceBaud is set (the pacing itself: uartLane tests)', async () => {
      const dir = tempDir();
      const vm = modem();
      const h = await hostVirtualModemOnPty(vm, { linkPath: join(dir, 'ttyV0'), paceBaud: 9600 });
      cleanups.push(() => h.close());
      const { link } = await bridge(h.devicePath);
      let xs = 0;
      link.on('data', (c) => (xs += c.toString('latin1').split('X').length - 1));
      vm.injectUrc('X'.repeat(596)); // 600 bytes with the CR LF around it
      await until(() => xs >= 596, 'the paced bytes', 5000);
      expect(xs).toBe(596);
    });
  });

  describe('uartLane (pacing on an injected clock)', () => {
    function fakeClock() {
      let t = 0;
      const timers: Array<{ at: number; fn: () => void; id: number }> = [];
      let ids = 0;
      return {
        now: () => t,
        setTimeout: (fn: () => void, ms: number) => {
          timers.push({ at: t + ms, fn, id: ++ids });
          return ids;
        },
        clearTimeout: (id: unknown) => {
          const i = timers.findIndex((x) => x.id === id);
          if (i >= 0) timers.splice(i, 1);
        },
        advance(ms: number) {
          const end = t + ms;
          for (;;) {
            timers.sort((a, b) => a.at - b.at);
            const next = timers[0];
            if (!next || next.at > end) break;
            timers.shift();
            t = next.at;
            next.fn();
          }
          t = end;
        },
      };
    }

    it('600 bytes at 9600 baud arrive after 625 ms, not before', () => {
      const clock = fakeClock();
      const got: number[] = [];
      const lane = uartLane((c) => got.push(c.length), 9600, clock);
      lane.push(Buffer.alloc(600));
      clock.advance(624);
      expect(got).toEqual([]);
      clock.advance(1);
      expect(got).toEqual([600]);
    });

    it('queues chunks behind each other in order, and stop() drops what waits', () => {
      const clock = fakeClock();
      const got: string[] = [];
      const lane = uartLane((c) => got.push(c.toString()), 10_000, clock); // 1 ms per byte
      lane.push(Buffer.from('aaaa'));
      lane.push(Buffer.from('bb'));
      clock.advance(4);
      expect(got).toEqual(['aaaa']);
      clock.advance(2);
      expect(got).toEqual(['aaaa', 'bb']);
      lane.push(Buffer.from('cc'));
      lane.stop();
      clock.advance(10);
      expect(got).toEqual(['aaaa', 'bb']);
    });

    it('without a baud rate delivers at once', () => {
      const got: number[] = [];
      uartLane((c) => got.push(c.length), undefined).push(Buffer.alloc(3));
      expect(got).toEqual([3]);
    });
  });
});
