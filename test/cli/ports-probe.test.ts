/**
 * `pulsa-bridge ports --probe` end to end, in-process: on this machine as it is (no USB modem, maybe no udevadm), and
 * on a fake listing (Io.ports) whose ports are virtual modems on the mock binding: a Huawei stick with an AT port
 * and a silent port, a SIM800 behind a CH340 without a by-id link, a listed port whose device is gone, and a plain
 * ttyS that is not probed. What the operator reads (table, notes, the recommendation) and the exit code are the contract.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Io } from '../../src/cli.js';
import type { PortInfo } from '../../src/serial/ports.js';
import { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';
import { cli } from '../support/cli.js';

const HW_BY_ID = '/dev/serial/by-id/usb-HUAWEI_Technology_HUAWEI_Mobile-if0';

const started: VirtualModem[] = [];
afterEach(() => {
  for (const vm of started.splice(0)) vm.stop();
  process.exitCode = undefined;
});
beforeEach(() => {
  process.exitCode = undefined;
});

/** Fake listing: the paths are mock-binding devices (only tests register them). */
function fakePorts(): Io['ports'] {
  const huawei = new VirtualModem({ path: 'virtual:ttyUSB0', profile: 'huawei', bootStepMs: 0, noise: false });
  const diag = new VirtualModem({ path: 'virtual:ttyUSB1', profile: 'huawei', bootStepMs: 0, noise: false });
  const sim800 = new VirtualModem({ path: 'virtual:ttyUSB2', profile: 'simcom', bootStepMs: 0, noise: false });
  for (const vm of [huawei, diag, sim800]) {
    vm.start();
    started.push(vm);
  }
  diag.stall('forever'); // a diagnostics interface: reads, never answers
  const ports: PortInfo[] = [
    { path: '/dev/ttyS-none' },
    {
      path: 'virtual:ttyUSB0',
      vendorId: '12d1',
      productId: '1001',
      byIdPath: `${HW_BY_ID}0-port0`,
      looksLike: { profile: 'huawei', description: 'Huawei E173' },
    },
    {
      path: 'virtual:ttyUSB1',
      vendorId: '12d1',
      productId: '1001',
      byIdPath: `${HW_BY_ID}1-port0`,
      looksLike: { profile: 'huawei', description: 'Huawei E173' },
    },
    { path: 'virtual:ttyUSB2', vendorId: '1a86', productId: '7523' },
    { path: '/dev/ttyUSB3', vendorId: '1a86', productId: '7523' }, // listed, but the device is gone
  ];
  return { list: () => Promise.resolve({ ports, source: 'sysfs' as const }) };
}

describe('ports --probe on this machine', () => {
  it('does not crash with no USB ports and maybe no udevadm (JSON and table)', async () => {
    const j = await cli(['ports', '--probe', '--json']);
    expect(j.code).toBe(0);
    const parsed = JSON.parse(j.out) as { ports: unknown[]; source: string; recommended: unknown[] };
    expect(Array.isArray(parsed.ports)).toBe(true);
    expect(Array.isArray(parsed.recommended)).toBe(true);
    expect(['udev', 'sysfs']).toContain(parsed.source);
    const t = await cli(['ports', '--probe', '--timeout', '200']);
    expect(t.code).toBe(0);
    expect(t.out).toMatch(/^(PORT|no serial ports found)/);
  });
});

describe('ports --probe on a fake listing backed by virtual modems', () => {
  it('adds AT and MODEM columns, notes the broken port, and recommends the by-id AT port', async () => {
    const r = await cli(['ports', '--probe', '--timeout', '100'], { ports: fakePorts() });
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const lines = r.out.split('\n');
    expect(lines[0]).toMatch(/^PORT\s+USB ID\s+LOOKS LIKE\s+AT\s+MODEM\s+BY-ID PATH$/);
    expect(r.out).toMatch(/^\/dev\/ttyS-none\s+-\s+-\s+-\s+-\s+-$/m);
    expect(r.out).toMatch(
      /^virtual:ttyUSB0\s+12d1:1001\s+Huawei E173 \[huawei\]\s+yes\s+huawei E173 \[huawei\]\s+\/dev\/serial\/by-id\/\S+-if00-port0$/m,
    );
    expect(r.out).toMatch(
      /^virtual:ttyUSB1\s+12d1:1001\s+Huawei E173 \[huawei\]\s+no\s+-\s+\/dev\/serial\/by-id\/\S+-if01-port0$/m,
    );
    expect(r.out).toMatch(/^virtual:ttyUSB2\s+1a86:7523\s+-\s+yes\s+SIMCOM_Ltd SIMCOM_SIM800L \[simcom\]\s+-$/m);
    expect(r.out).toMatch(/^\/dev\/ttyUSB3\s+1a86:7523\s+-\s+error\s+-\s+-$/m);
    expect(r.out).toContain('serial port /dev/ttyUSB3 does not exist\n  hint: check the cable');
    expect(r.out).toContain('not probed (no USB ids; --all probes them): /dev/ttyS-none\n');
    expect(lines.at(-2)).toBe(
      `use as "port" in the config (one per modem): ${HW_BY_ID}0-port0 (huawei E173 [huawei]), virtual:ttyUSB2 (SIMCOM_Ltd SIMCOM_SIM800L [simcom])` +
        ' [no /dev/serial/by-id link for some: ttyUSB numbers can change after a USB reset]',
    );
    expect(started[1]!.commandLog()).toEqual([]); // the stalled port dropped what it got
    expect(started[0]!.commandLog()).toEqual(['AT', 'AT+CGMI', 'AT+CGMM', 'AT+CGSN']);
  });

  it('--json carries each port with its probe result and the recommendation', async () => {
    const r = await cli(['ports', '--probe', '--json', '--timeout', '100'], { ports: fakePorts() });
    expect(r.code).toBe(0);
    const parsed = JSON.parse(r.out) as {
      ports: Array<PortInfo & { probe?: Record<string, unknown> }>;
      recommended: unknown[];
    };
    expect(parsed.ports.map((p) => [p.path, p.probe?.answers ?? null])).toEqual([
      ['/dev/ttyS-none', null],
      ['virtual:ttyUSB0', true],
      ['virtual:ttyUSB1', false],
      ['virtual:ttyUSB2', true],
      ['/dev/ttyUSB3', false],
    ]);
    expect(parsed.ports[1]!.probe).toEqual({
      path: 'virtual:ttyUSB0',
      answers: true,
      baudRate: 115200,
      manufacturer: 'huawei',
      model: 'E173',
      imei: '356938035643809',
      profile: 'huawei',
    });
    expect(parsed.ports[2]!.probe).toMatchObject({ answers: false, error: { code: 'MODEM_SILENT' } });
    expect(parsed.ports[4]!.probe).toMatchObject({ answers: false, error: { code: 'PORT_NOT_FOUND' } });
    expect(parsed.recommended).toEqual([
      { path: `${HW_BY_ID}0-port0`, stable: true, modem: 'huawei E173 [huawei]', alternatives: [] },
      { path: 'virtual:ttyUSB2', stable: false, modem: 'SIMCOM_Ltd SIMCOM_SIM800L [simcom]', alternatives: [] },
    ]);
  });

  it('--all probes the plain ttyS too; nothing answering says so', async () => {
    const ports: PortInfo[] = [{ path: '/dev/ttyS-none' }];
    const r = await cli(['ports', '--probe', '--all', '--timeout', '100'], {
      ports: { list: () => Promise.resolve({ ports, source: 'sysfs' as const }) },
    });
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^\/dev\/ttyS-none\s+-\s+-\s+error\s+-\s+-$/m);
    expect(r.out).not.toContain('not probed');
    expect(r.out.trimEnd().split('\n').at(-1)).toBe(
      'no port answered AT (tried 115200 baud; busy ports were left alone)',
    );
  });

  it('without --probe the listing is unchanged (no AT column, nothing opened)', async () => {
    const provider = fakePorts();
    const r = await cli(['ports'], { ports: provider });
    expect(r.code).toBe(0);
    expect(r.out.split('\n')[0]).toMatch(/^PORT\s+USB ID\s+MANUFACTURER\s+LOOKS LIKE\s+BY-ID PATH$/);
    expect(started.every((vm) => vm.commandLog().length === 0)).toBe(true);
  });

  it('a bad --baud list is a usage error (exit 2) before any port is opened', async () => {
    const r = await cli(['ports', '--probe', '--baud', '115200,fast'], { ports: fakePorts() });
    expect(r.code).toBe(2);
    expect(r.err).toContain('expected baud rates such as 115200,9600');
    expect(started.every((vm) => vm.commandLog().length === 0)).toBe(true);
  });
});
