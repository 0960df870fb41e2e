/**
 * Storage-aware receive on the production wiring over the virtual modem: a modem that stores received SMS in ME while
 * SM is selected (Quectel EC25 default, Huawei sticks: `+CMTI: "ME",n`, AT+CMGR of that index in SM answers a bare
 * OK), SMS left in ME before the bridge started, and a modem that refuses to select the memory it announces.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import type { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';
import { pendingRecords, startStack, virtualModem, type Stack } from './harness.js';

let n = 0;
let dir: string;
let cleanup: () => Promise<void>;
const modems: VirtualModem[] = [];
const stacks: Stack[] = [];

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('storages'));
});
afterEach(async () => {
  for (const s of stacks.splice(0)) await s.stop();
  for (const m of modems.splice(0)) m.stop();
  await cleanup();
});

function meModem(over: Parameters<typeof virtualModem>[1] = {}): VirtualModem {
  const vm = virtualModem(`virtual:mock-storages-${process.pid}-${++n}`, { quirks: ['store-in-me'], ...over });
  modems.push(vm);
  return vm;
}

const texts = [
  'Anda menerima Pulsa dari 6285941020001 sebesar Rp5000.',
  'Anda menerima Pulsa dari 6285941020002 sebesar Rp10000.',
  'Anda menerima Pulsa dari 6285941020003 sebesar Rp25000.',
];

describe('SMS stored in another memory than the selected one', () => {
  it('+CMTI: "ME" while SM is selected: every SMS delivered once, nothing left in SM or ME, SM selected again', async () => {
    const vm = meModem();
    const stack = await startStack(dir, vm, silentLogger());
    stacks.push(stack);
    for (const text of texts) vm.injectSms({ from: '858', text });
    await until(
      async () => (await pendingRecords(stack.spool)).length === 3 && vm.storedMessages().length === 0,
      'three records and empty memories',
      10_000,
    );
    await stack.supervisor.currentReceiver()?.drained();
    expect((await pendingRecords(stack.spool)).map((r) => r.text).sort()).toEqual([...texts].sort());
    expect(vm.storedMessages()).toEqual([]);
    const log = vm.commandLog();
    expect(log.filter((c) => /^AT\+CPMS="ME"$/i.test(c)).length).toBeGreaterThan(0);
    // Every switch to ME is followed, before the task ends, by the switch back to SM.
    expect(log.filter((c) => /^AT\+CPMS="ME"$/i.test(c)).length).toBe(
      log.filter((c) => /^AT\+CPMS="SM"$/i.test(c)).length,
    );
    expect(log[log.length - 1]).not.toBe('AT+CPMS="ME"');
  });

  it("SMS left in ME before the bridge started are found by the start-up sweep; the status shows each memory's fill", async () => {
    const vm = meModem();
    vm.start();
    for (const text of texts) vm.injectSms({ from: '858', text, delivery: 'store' });
    const stack = await startStack(dir, vm, silentLogger());
    stacks.push(stack);
    await until(
      async () => (await pendingRecords(stack.spool)).length === 3 && vm.storedMessages().length === 0,
      'three records',
      10_000,
    );
    await stack.supervisor.currentReceiver()?.drained();
    const receiver = stack.supervisor.status().receiver;
    expect(receiver?.storages?.map((s) => [s.storage, s.used])).toEqual(
      expect.arrayContaining([
        ['SM', 0],
        ['ME', 0],
      ]),
    );
    expect(receiver?.storages?.find((s) => s.storage === 'ME')?.total).toBe(30);
  });

  it('the periodic sweep looks into ME with two AT+CPMS when it is empty (no listing)', async () => {
    const vm = meModem();
    const stack = await startStack(dir, vm, silentLogger(), { modem: { sweepIntervalSec: 5 } });
    stacks.push(stack);
    await stack.supervisor.currentReceiver()?.drained();
    const before = vm.commandLog().length;
    stack.supervisor.currentReceiver()?.requestSweep('interval');
    await until(() => vm.commandLog().slice(before).includes('AT+CPMS="SM"'), 'the sweep', 5_000);
    await stack.supervisor.currentReceiver()?.drained();
    expect(
      vm
        .commandLog()
        .slice(before)
        .filter((c) => !/^AT\+CNMI\?|^AT\+CSQ|^AT\+CREG/.test(c)),
    ).toEqual(['AT+CMGL=4', 'AT+CPMS="ME"', 'AT+CPMS="SM"']);
  });
});
