/**
 * The CLI's direct path (session.ts, under DirectOps and `balance`/`test-transfer`) goes through the memory of
 * rejected PINs in the state directory, so CLI runs while the daemon is stopped do not send a rejected PIN again.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSession } from '../../src/cli/session.js';
import { silentLogger } from '../../src/log.js';
import { PIN_MEMORY_FILE } from '../../src/state/pin-memory.js';
import { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';
import { tempDir } from '../support/tmp.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('session-pin'));
});
afterEach(() => cleanup());

/** One CLI run: a session on a PIN-locked virtual SIM (the same SIM each run), init, close. */
async function cliRun(pin: string): Promise<{ error: string | undefined; pinEntries: number }> {
  const vm = new VirtualModem({
    path: 'virtual:pin-locked',
    profile: 'generic',
    pin: '1234',
    bootStepMs: 0,
    noise: false,
  });
  vm.start();
  const session = await openSession({
    port: 'virtual:pin-locked',
    baud: 115200,
    pin,
    stateDir: dir,
    timeoutMs: 2000,
    logger: silentLogger(),
  });
  try {
    const error = await session.modem.init().then(
      () => undefined,
      (e: Error) => e.message,
    );
    return { error, pinEntries: vm.commandLog().filter((l) => /^AT\+CPIN="/i.test(l)).length };
  } finally {
    await session.close();
    vm.stop();
  }
}

describe('CLI sessions share the memory of rejected PINs in the state directory', () => {
  it('a PIN rejected by one run is not sent by the next', async () => {
    const first = await cliRun('0000');
    expect(first.pinEntries).toBe(1);
    expect(first.error).toMatch(/rejected the configured PIN \(/);
    expect(await readFile(path.join(dir, PIN_MEMORY_FILE), 'utf8')).toMatch(/iccid:/);
    const second = await cliRun('0000');
    expect(second.pinEntries).toBe(0);
    expect(second.error).toMatch(/rejected the configured PIN at .*not sent again/);
    const right = await cliRun('1234');
    expect(right).toEqual({ error: undefined, pinEntries: 1 });
  });
});
