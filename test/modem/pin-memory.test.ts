/**
 * A wrong PIN is tried once, ever. Each init here is a new Modem on a new channel to the same
 * virtual SIM (as the supervisor builds one per connection, and the daemon one per start); the memory of rejected
 * PINs is the real file in a real directory, so a fresh PinMemoryFile on the same directory is a restart.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BridgeError } from '../../src/errors.js';
import { silentLogger } from '../../src/log.js';
import { openChannel } from '../../src/modem/factory.js';
import { Modem } from '../../src/modem/modem.js';
import { parsePinTries } from '../../src/modem/pin-tries.js';
import { PIN_MEMORY_FILE, PinMemoryFile } from '../../src/state/pin-memory.js';
import { VirtualModem, type SimProfileId } from '../../src/virtual-modem/virtual-modem.js';
import { tempDir } from '../support/tmp.js';
import { uniquePath } from '../virtual-modem/wire.js';

let dir: string;
let cleanup: () => Promise<void>;
const vms: VirtualModem[] = [];

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('pin-memory'));
});

afterEach(async () => {
  for (const vm of vms.splice(0)) vm.stop();
  await cleanup();
});

function sim(profile: SimProfileId, pin = '1234', iccid?: string): VirtualModem {
  const vm = new VirtualModem({
    path: uniquePath(),
    profile,
    pin,
    bootStepMs: 0,
    noise: false,
    ...(iccid ? { identity: { iccid } } : {}),
  });
  vm.start();
  vms.push(vm);
  return vm;
}

/** One connection: channel + Modem + init; returns the init error (undefined when the SIM came up). */
async function initOnce(vm: VirtualModem, pin: string, memory: PinMemoryFile): Promise<BridgeError | undefined> {
  const channel = await openChannel(
    { path: vm.path, baudRate: 115200 },
    { logger: silentLogger(), defaultTimeoutMs: 2000 },
  );
  const modem = new Modem({
    channel,
    name: 'm1',
    logger: silentLogger(),
    pin,
    rejectedPins: memory,
    pollIntervalMs: 1,
  });
  try {
    await modem.init();
    return undefined;
  } catch (err) {
    if (err instanceof BridgeError) return err;
    throw err;
  } finally {
    modem.detach();
    await channel.close();
  }
}

const pinEntries = (vm: VirtualModem) => vm.commandLog().filter((l) => /^AT\+CPIN="/i.test(l)).length;

describe('a rejected PIN is sent once, ever', () => {
  it.each<SimProfileId>(['generic', 'simcom', 'huawei'])(
    '%s: across reconnects and restarts, until the configured PIN changes',
    async (profile) => {
      const vm = sim(profile);
      const first = await initOnce(vm, '0000', new PinMemoryFile(dir, silentLogger()));
      expect(first?.code).toBe('SIM_NOT_READY');
      expect(first?.message).toMatch(/rejected the configured PIN .*2 tries left/);
      expect(first?.hint).toMatch(/modems\[\]\.pin/);
      expect(pinEntries(vm)).toBe(1);

      // Reconnects with the same memory, then "restarts" (a new memory object on the same directory).
      const memory = new PinMemoryFile(dir, silentLogger());
      for (let i = 0; i < 3; i++) {
        const again = await initOnce(vm, '0000', i === 0 ? memory : new PinMemoryFile(dir, silentLogger()));
        expect(again?.message).toMatch(/rejected the configured PIN at .*not sent again until modems\[\]\.pin changes/);
      }
      expect(pinEntries(vm)).toBe(1);
      expect(vm.sim).toBe('pin');

      // The file holds a hash, never the PIN.
      const body = await readFile(path.join(dir, PIN_MEMORY_FILE), 'utf8');
      expect(body).not.toMatch(/"0000"|:\s*"?0000/);
      expect(body).toMatch(/iccid:89621012345678901234/);

      // A changed PIN is tried (once); the right one unlocks and clears the memory.
      expect(await initOnce(vm, '1234', memory)).toBeUndefined();
      expect(pinEntries(vm)).toBe(2);
      expect(vm.sim).toBe('ready');
      expect(await readFile(path.join(dir, PIN_MEMORY_FILE), 'utf8')).not.toMatch(/iccid:/);
    },
  );

  it('never spends the last try: with one left, no PIN is sent and the state says why', async () => {
    const vm = sim('simcom');
    vm.restore({ ...vm.snapshot(), pinTriesLeft: 1 });
    const err = await initOnce(vm, '0000', new PinMemoryFile(dir, silentLogger()));
    expect(err?.code).toBe('SIM_NOT_READY');
    expect(err?.message).toMatch(/1 PIN try left: the configured PIN is not sent/);
    expect(err?.hint).toMatch(/a wrong one locks the SIM/);
    expect(pinEntries(vm)).toBe(0);
    expect(vm.sim).toBe('pin');
  });

  it('keys the memory per SIM: another SIM in the same modem gets its one try', async () => {
    const memory = new PinMemoryFile(dir, silentLogger());
    const a = sim('generic', '1234', '89620000000000000001');
    expect((await initOnce(a, '0000', memory))?.message).toMatch(/rejected/);
    const b = sim('generic', '1234', '89620000000000000002');
    expect((await initOnce(b, '0000', memory))?.message).toMatch(/rejected the configured PIN \(/);
    expect(pinEntries(b)).toBe(1);
  });

  it('a memory file it cannot read counts as "every PIN rejected": nothing is sent and the file is left alone', async () => {
    const { writeFile } = await import('node:fs/promises');
    await writeFile(path.join(dir, PIN_MEMORY_FILE), '{ not json');
    const vm = sim('generic');
    const err = await initOnce(vm, '1234', new PinMemoryFile(dir, silentLogger()));
    expect(err?.code).toBe('SIM_NOT_READY');
    expect(err?.message).toMatch(/memory of rejected PINs cannot be read .*not valid JSON.*not sent/);
    expect(err?.hint).toMatch(/check that file/);
    expect(pinEntries(vm)).toBe(0);
    expect(await readFile(path.join(dir, PIN_MEMORY_FILE), 'utf8')).toBe('{ not json');
  });
});

describe('parsePinTries', () => {
  it.each<[string[], number | undefined]>([
    [['+CPINR: SIM PIN,3,3', '+CPINR: SIM PUK,10,10'], 3],
    [['+CPINR: SIM PUK,10,10', '+CPINR: SIM PIN,1,3'], 1],
    [['+SPIC: 2,10,3,10'], 2],
    [['^CPIN: SIM PIN,3,10,3,10,3'], 3],
    [['^CPIN: READY,,10,1,10,3'], 1],
    [['+QPINC: "SC",2,10', '+QPINC: "P2",3,10'], 2],
    [['+QPINC: "P2",3,10'], undefined],
    [['OK'], undefined],
    [['+SPIC: x,10'], undefined],
  ])('%j -> %s', (lines, tries) => {
    expect(parsePinTries(lines)).toBe(tries);
  });
});
