/**
 * `pulsa-bridge config init` in-process, on a fake port listing backed by virtual modems (as the `ports --probe`
 * tests): one modem per AT port with its by-id path and detected profile, a placeholder base URL, mode 0640, no
 * overwrite without --force, next steps printed; the file passes `config check`.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { type Io } from '../../src/cli.js';
import { PLACEHOLDER_BASE_URL } from '../../src/cli/config-init.js';
import { parseConfig } from '../../src/config.js';
import type { PortInfo } from '../../src/serial/ports.js';
import { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';
import { tempDir } from '../support/tmp.js';
import { cli } from '../support/cli.js';

const HW = '/dev/serial/by-id/usb-HUAWEI_Technology_HUAWEI_Mobile-if0';
const SIM = '/dev/serial/by-id/usb-SimTech__Incorporated_SimTech__Incorporated_0123-if0';
const started: VirtualModem[] = [];
let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('config-init'));
});
afterEach(async () => {
  for (const vm of started.splice(0)) vm.stop();
  process.exitCode = undefined;
  await cleanup();
});

/** A Huawei stick (AT on if00, silent diagnostics on if01) and a SIMCom modem (AT on if02). */
function fakePorts(): Io['ports'] {
  const mk = (p: string, profile: 'huawei' | 'simcom') => {
    const vm = new VirtualModem({ path: p, profile, bootStepMs: 0, noise: false });
    vm.start();
    started.push(vm);
    return vm;
  };
  mk('virtual:ttyUSB0', 'huawei');
  mk('virtual:ttyUSB1', 'huawei').stall('forever');
  mk('virtual:ttyUSB4', 'simcom');
  const ports: PortInfo[] = [
    { path: 'virtual:ttyUSB0', vendorId: '12d1', productId: '1001', byIdPath: `${HW}0-port0` },
    { path: 'virtual:ttyUSB1', vendorId: '12d1', productId: '1001', byIdPath: `${HW}1-port0` },
    { path: 'virtual:ttyUSB4', vendorId: '1e0e', productId: '9001', byIdPath: `${SIM}2-port0` },
  ];
  return { list: () => Promise.resolve({ ports, source: 'sysfs' as const }) };
}

describe('config init', () => {
  it('writes one modem per AT port (by-id path, detected profile), a placeholder URL, mode 0640, and the next steps', async () => {
    const file = path.join(dir, 'etc', 'config.json');
    const r = await cli(['config', 'init', file, '--timeout', '100', '--senders', '858,TELKOMSEL'], {
      ports: fakePorts(),
    });
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const written = JSON.parse(await readFile(file, 'utf8')) as { webhook: { baseUrl: string }; modems: unknown[] };
    expect(written.webhook.baseUrl).toBe(PLACEHOLDER_BASE_URL);
    expect(written.modems).toEqual([
      { name: 'huawei-1', port: `${HW}0-port0`, profile: 'huawei', senders: ['858', 'TELKOMSEL'] },
      { name: 'simcom-1', port: `${SIM}2-port0`, profile: 'simcom', senders: ['858', 'TELKOMSEL'] },
    ]);
    expect(((await stat(file)).mode & 0o777).toString(8)).toBe('640');
    expect(() => parseConfig(written, {})).not.toThrow();
    expect(r.out).toContain(`wrote ${file} (mode 0640) with 2 modem(s)`);
    expect(r.out).toMatch(/next steps:\n {2}1\. sudoedit .*webhook\.baseUrl[\s\S]*2\. pulsa-bridge config check /);
    const check = await cli(['config', 'check', file]);
    expect(check.code).toBe(0);
  });

  it('refuses to overwrite an existing file (before probing), and replaces it with --force', async () => {
    const file = path.join(dir, 'config.json');
    await writeFile(file, '{"mine": true}\n');
    const r = await cli(['config', 'init', file, '--simulate']);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`${file} already exists; not overwritten`);
    expect(await readFile(file, 'utf8')).toBe('{"mine": true}\n');
    const f = await cli(['config', 'init', file, '--simulate', '--force', '--json']);
    expect(f.code).toBe(0);
    expect(JSON.parse(f.out)).toEqual({
      file,
      modems: [{ name: 'virtual-1', port: 'virtual:virtual-1', senders: ['858'] }],
    });
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({
      modems: [{ name: 'virtual-1', port: 'virtual:virtual-1' }],
    });
    expect(((await stat(file)).mode & 0o777).toString(8)).toBe('640');
  });

  it('no port answers AT: nothing written, exit 1 with a hint', async () => {
    const file = path.join(dir, 'config.json');
    const ports: Io['ports'] = {
      list: () => Promise.resolve({ ports: [{ path: '/dev/ttyUSB9', vendorId: '1a86' }], source: 'sysfs' as const }),
    };
    const r = await cli(['config', 'init', file, '--timeout', '100'], { ports });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/no serial port answered AT .*nothing written\nhint: /);
    await expect(stat(file)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
