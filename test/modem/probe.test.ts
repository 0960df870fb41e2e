/**
 * probePort / probePorts: which ports answer AT and what modem is behind them. Virtual modems on virtual links
 * (simcom, huawei with noise URCs), a stalled modem and a stuck open under fake timers, a device that only makes
 * sense at 9600 baud, a fake /proc naming the process that holds a port, and the native binding over a socat
 * pseudo-terminal (a silent end, a busy end, an end that answers). The pty part is skipped only when socat is missing.
 */
import { hasSocat, ptyPair, type PtyPair } from '../support/pty.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { atVerdict, isProbeCandidate, recommendAtPorts } from '../../src/cli/ports-format.js';
import { openLink, type LinkTarget } from '../../src/modem/factory.js';
import { probePort, probePorts } from '../../src/modem/probe.js';
import { findHolders } from '../../src/serial/holders.js';
import type { SerialLink } from '../../src/serial/link.js';
import { openSerialLink } from '../../src/serial/serial-link.js';
import { registerVirtualDevice, type DeviceSide, type VirtualDevice } from '../../src/virtual-modem/virtual-link.js';
import { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';
import { until } from '../support/until.js';

if (!hasSocat)
  console.warn(
    'probe.test: socat is not installed; skipping the native pseudo-terminal probes (apt-get install socat)',
  );

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));
let counter = 0;
const mockPath = () => `virtual:probe-test-${process.pid}-${++counter}`;

const started: Array<{ stop(): void }> = [];
function modem(
  profile: 'simcom' | 'huawei' | 'generic',
  extra: Partial<ConstructorParameters<typeof VirtualModem>[0]> = {},
): VirtualModem {
  const vm = new VirtualModem({ path: mockPath(), profile, bootStepMs: 0, ...extra });
  vm.start();
  started.push(vm);
  return vm;
}

afterEach(() => {
  vi.useRealTimers();
  for (const vm of started.splice(0)) vm.stop();
});

describe('probing virtual modems (virtual links)', () => {
  it('finds manufacturer, model, IMEI and profile, sending only read-only commands', async () => {
    const simcom = modem('simcom', { noise: false });
    // Huawei noise URCs slipped into every response must not end up in the model name.
    const huawei = modem('huawei', {
      identity: { imei: '861234567890123' },
      noise: { midResponseProbability: 1, intervalMs: 0 },
    });
    const [a, b] = await probePorts([simcom.path, huawei.path], { timeoutMs: 500 });
    expect(a).toEqual({
      path: simcom.path,
      answers: true,
      baudRate: 115200,
      manufacturer: 'SIMCOM_Ltd',
      model: 'SIMCOM_SIM800L',
      imei: '356938035643809',
      profile: 'simcom',
    });
    expect(b).toEqual({
      path: huawei.path,
      answers: true,
      baudRate: 115200,
      manufacturer: 'huawei',
      model: 'E173',
      imei: '861234567890123',
      profile: 'huawei',
    });
    for (const vm of [simcom, huawei]) {
      expect(vm.commandLog()).toEqual(['AT', 'AT+CGMI', 'AT+CGMM', 'AT+CGSN']);
      expect(vm.echoEnabled).toBe(true); // state untouched: no ATE0
    }
    expect(atVerdict(a!)).toBe('yes');
  });

  it('a stalled modem: answers false after two ATs per baud rate, bounded by the timeouts (no hang)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const vm = modem('simcom', { noise: false });
    vm.stall('forever');
    // Opening a port is real I/O, not a timer: the factory imports the virtual port's module, a round trip to the test
    // runner's main process (slow under load). The fake clock moves only while no open is under way, so neither the
    // deadline nor this loop's 20 s run on while the probe waits on anything but its own timers.
    let opens = 0;
    let opening = 0;
    const open = async (target: LinkTarget): Promise<SerialLink> => {
      opens++;
      opening++;
      try {
        return await openLink(target);
      } finally {
        opening--;
      }
    };
    let done = false;
    const result = probePort(vm.path, { timeoutMs: 1000, baudRates: [115200, 9600], open }).finally(
      () => (done = true),
    );
    for (let i = 0; i < 200 && !done; i++) {
      await until(() => done || (opens > 0 && opening === 0), 'the probe to open the port', 10_000);
      await vi.advanceTimersByTimeAsync(100);
    }
    expect(done).toBe(true);
    expect(opens).toBe(2); // one open per baud rate
    const r = await result;
    expect(r.answers).toBe(false);
    // MODEM_SILENT (the per-command timeouts ended it), not the hard deadline's AT_TIMEOUT.
    expect(r.error?.code).toBe('MODEM_SILENT');
    expect(r.error?.message).toBe('no OK to AT at 115200 (silent), 9600 (silent)');
    expect(atVerdict(r)).toBe('no');
  });

  it('a missing path is PORT_NOT_FOUND, reported (not thrown), with the by-id hint', async () => {
    const r = await probePort('/dev/probe-test-nothing-here', {});
    expect(r).toMatchObject({
      path: '/dev/probe-test-nothing-here',
      answers: false,
      error: { code: 'PORT_NOT_FOUND' },
    });
    expect(r.error?.hint).toMatch(/by-id/);
    expect(atVerdict(r)).toBe('error');
  });

  it('garbage at the first baud rate moves on to the next, after a single AT', async () => {
    // A modem fixed at 9600: at any other rate the bridge reads line noise. The test learns the rate from the opener.
    const inner = modem('generic', { noise: false });
    const path = mockPath();
    let baud = 0;
    let side: DeviceSide | undefined;
    const writes: number[] = [];
    const device: VirtualDevice = {
      present: true,
      onAttach: (s) => {
        side = s;
        inner.onAttach(s);
      },
      onDetach: () => inner.onDetach(),
      onWrite: (chunk) => {
        writes.push(baud);
        if (baud === 9600) inner.onWrite(chunk);
        else side?.emit(Buffer.from([0xf0, 0x00, 0xfe, 0x87, 0xe6, 0x0d, 0x0a]));
      },
    };
    const unregister = registerVirtualDevice(path, device);
    try {
      const open = (o: LinkTarget): Promise<SerialLink> => {
        baud = o.baudRate;
        return openLink(o);
      };
      const r = await probePort(path, { baudRates: [115200, 9600], timeoutMs: 200, open });
      expect(r).toMatchObject({
        answers: true,
        baudRate: 9600,
        manufacturer: 'Virtual',
        model: 'VM-3GPP',
        profile: 'generic',
      });
      expect(writes.filter((b) => b === 115200)).toHaveLength(1);
    } finally {
      unregister();
    }
  });

  it('garbage at every rate: answers false, and the message says bytes came but no OK', async () => {
    const path = mockPath();
    let side: DeviceSide | undefined;
    const unregister = registerVirtualDevice(path, {
      present: true,
      onAttach: (s) => (side = s),
      onDetach: () => (side = undefined),
      onWrite: () => void side?.emit(Buffer.from([0xff, 0xfe, 0x01, 0x0d])),
    });
    try {
      const r = await probePort(path, { baudRates: [115200, 9600], timeoutMs: 100 });
      expect(r.answers).toBe(false);
      expect(r.error?.code).toBe('MODEM_SILENT');
      expect(r.error?.message).toBe(
        'no OK to AT at 115200 (4 bytes of garbage, no OK), 9600 (4 bytes of garbage, no OK)',
      );
      expect(r.error?.hint).toMatch(/baud/);
    } finally {
      unregister();
    }
  });

  it('an open that never completes is cut by the deadline', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let opening = false;
    const open = () => {
      opening = true;
      return new Promise<SerialLink>(() => undefined);
    };
    const result = probePort('/dev/stuck', { timeoutMs: 1000, deadlineMs: 5000, open });
    // The holder check (a real fs call) comes first: the deadline starts once the open is under way.
    while (!opening) await new Promise((r) => setImmediate(r));
    await vi.advanceTimersByTimeAsync(5000);
    const r = await result;
    expect(r).toMatchObject({
      answers: false,
      error: { code: 'AT_TIMEOUT', message: 'probe of /dev/stuck did not finish within 5000 ms' },
    });
  });

  it('probePorts keeps the order of the paths and runs at most `concurrency` probes at once', async () => {
    const vms = [
      modem('simcom', { noise: false }),
      modem('generic', { noise: false }),
      modem('simcom', { noise: false }),
    ];
    let open = 0;
    let most = 0;
    const opener = async (o: LinkTarget): Promise<SerialLink> => {
      const link = await openLink(o);
      open++;
      most = Math.max(most, open);
      link.once('close', () => open--);
      return link;
    };
    const paths = [vms[0]!.path, '/dev/probe-test-missing', vms[1]!.path, vms[2]!.path];
    const results = await probePorts(paths, { timeoutMs: 500, concurrency: 2, open: opener });
    expect(results.map((r) => [r.path, r.answers, r.profile ?? r.error?.code])).toEqual([
      [paths[0], true, 'simcom'],
      [paths[1], false, 'PORT_NOT_FOUND'],
      [paths[2], true, 'generic'],
      [paths[3], true, 'simcom'],
    ]);
    expect(most).toBeLessThanOrEqual(2);
    expect(open).toBe(0); // every port closed again
  });
});

describe('ports held by another process', () => {
  let dir = '';
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pulsa-probe-'));
    // A fake /proc: pid 4242 (ModemManager) holds the "device", pid 77 holds something else.
    await writeFile(join(dir, 'ttyUSB7'), '');
    await mkdir(join(dir, 'proc', '4242', 'fd'), { recursive: true });
    await writeFile(join(dir, 'proc', '4242', 'comm'), 'ModemManager\n');
    await symlink(join(dir, 'ttyUSB7'), join(dir, 'proc', '4242', 'fd', '9'));
    await symlink('/dev/null', join(dir, 'proc', '4242', 'fd', '0'));
    await mkdir(join(dir, 'proc', '77', 'fd'), { recursive: true });
    await writeFile(join(dir, 'proc', '77', 'comm'), 'bash\n');
    await symlink('/dev/null', join(dir, 'proc', '77', 'fd', '1'));
    await mkdir(join(dir, 'proc', 'self'), { recursive: true });
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('findHolders names the process that has the device open', async () => {
    const held = await findHolders([join(dir, 'ttyUSB7'), '/dev/ttyUSB0'], join(dir, 'proc'));
    expect([...held.entries()]).toEqual([[join(dir, 'ttyUSB7'), [{ pid: 4242, command: 'ModemManager' }]]]);
  });

  it('a held port is reported busy and never opened', async () => {
    const open = vi.fn(openLink);
    const r = await probePort(join(dir, 'ttyUSB7'), { procRoot: join(dir, 'proc'), open });
    expect(open).not.toHaveBeenCalled();
    expect(r.answers).toBe(false);
    expect(r.error?.code).toBe('PORT_BUSY');
    expect(r.error?.message).toBe(
      `${join(dir, 'ttyUSB7')}: busy (ModemManager or the pulsa-bridge daemon?): held by ModemManager (pid 4242)`,
    );
    expect(r.error?.hint).toMatch(/ID_MM_DEVICE_IGNORE/);
    expect(atVerdict(r)).toBe('busy');
  });
});

describe('choosing ports and recommending the AT port', () => {
  it('probes USB serial ports and ports with a vendor id; plain UARTs only with all', () => {
    expect(isProbeCandidate({ path: '/dev/ttyUSB2' })).toBe(true);
    expect(isProbeCandidate({ path: '/dev/ttyACM0' })).toBe(true);
    expect(isProbeCandidate({ path: '/dev/ttyS4', vendorId: '1a86' })).toBe(true);
    expect(isProbeCandidate({ path: '/dev/ttyS0' })).toBe(false);
    expect(isProbeCandidate({ path: '/dev/ttyAMA0' })).toBe(false);
    expect(isProbeCandidate({ path: '/dev/ttyS0' }, true)).toBe(true);
  });

  it('one recommendation per USB device, by-id path first, other AT ports of it as alternatives', () => {
    const hw = '/dev/serial/by-id/usb-HUAWEI_Technology_HUAWEI_Mobile-if0';
    const answers = {
      answers: true,
      baudRate: 115200,
      manufacturer: 'huawei',
      model: 'E173',
      profile: 'huawei' as const,
    };
    const recs = recommendAtPorts([
      { port: { path: '/dev/ttyUSB0', byIdPath: `${hw}0-port0` }, probe: { path: '/dev/ttyUSB0', ...answers } },
      {
        port: { path: '/dev/ttyUSB1', byIdPath: `${hw}1-port0` },
        probe: { path: '/dev/ttyUSB1', answers: false, error: { code: 'MODEM_SILENT', message: 'x' } },
      },
      { port: { path: '/dev/ttyUSB2', byIdPath: `${hw}2-port0` }, probe: { path: '/dev/ttyUSB2', ...answers } },
      {
        port: { path: '/dev/ttyACM0' },
        probe: { path: '/dev/ttyACM0', answers: true, baudRate: 115200, profile: 'generic' },
      },
      { port: { path: '/dev/ttyS0' } },
    ]);
    expect(recs).toEqual([
      { path: `${hw}0-port0`, stable: true, modem: 'huawei E173 [huawei]', alternatives: [`${hw}2-port0`] },
      { path: '/dev/ttyACM0', stable: false, modem: '[generic]', alternatives: [] },
    ]);
  });
});

describe.skipIf(!hasSocat)('native binding over a socat pseudo-terminal', () => {
  let dir = '';
  let pair: PtyPair | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pulsa-probe-pty-'));
    pair = await ptyPair(join(dir, 'modem'), join(dir, 'bridge'));
  });

  afterAll(async () => {
    await pair?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a silent end: answers false within the timeouts, and the port is closed afterwards', async () => {
    const r = await probePort(join(dir, 'bridge'), { timeoutMs: 150 });
    expect(r).toMatchObject({
      path: join(dir, 'bridge'),
      answers: false,
      error: { code: 'MODEM_SILENT', message: 'no OK to AT at 115200 (silent)' },
    });
    // Closed and unlocked: the port opens again.
    const again = await openSerialLink({ path: join(dir, 'bridge'), baudRate: 115200 });
    await again.close();
  });

  it('an end held open by another link is busy and gets no bytes', async () => {
    const holder = await openSerialLink({ path: join(dir, 'bridge'), baudRate: 115200 });
    const modemEnd = await openSerialLink({ path: join(dir, 'modem'), baudRate: 115200 });
    let received = 0;
    modemEnd.on('data', (c) => void (received += c.length));
    try {
      const r = await probePort(join(dir, 'bridge'), { timeoutMs: 150 });
      expect(r.answers).toBe(false);
      expect(r.error?.code).toBe('PORT_BUSY');
      expect(r.error?.message).toBe(`${join(dir, 'bridge')}: busy (ModemManager or the pulsa-bridge daemon?)`);
      await delay(50);
      expect(received).toBe(0);
    } finally {
      await holder.close();
      await modemEnd.close();
    }
  });

  it('an end that answers like a modem is identified over the native binding', async () => {
    const modemEnd = await openSerialLink({ path: join(dir, 'modem'), baudRate: 115200 });
    const answers: Record<string, string> = {
      AT: '\r\nOK\r\n',
      'AT+CGMI': '\r\nQuectel\r\n\r\nOK\r\n',
      'AT+CGMM': '\r\nEC25\r\n\r\nOK\r\n',
      'AT+CGSN': '\r\n867962040000001\r\n\r\nOK\r\n',
    };
    let pending = '';
    modemEnd.on('data', (chunk) => {
      pending += chunk.toString('latin1');
      let cr: number;
      while ((cr = pending.indexOf('\r')) >= 0) {
        const cmd = pending.slice(0, cr).trim();
        pending = pending.slice(cr + 1);
        void modemEnd.write(answers[cmd] ?? '\r\nERROR\r\n');
      }
    });
    try {
      const r = await probePort(join(dir, 'bridge'), { timeoutMs: 2000 });
      expect(r).toEqual({
        path: join(dir, 'bridge'),
        answers: true,
        baudRate: 115200,
        manufacturer: 'Quectel',
        model: 'EC25',
        imei: '867962040000001',
        profile: 'quectel',
      });
    } finally {
      await modemEnd.close();
    }
  });
});
