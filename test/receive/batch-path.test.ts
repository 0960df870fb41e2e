/**
 * Batched reads over the virtual modem and a real spool directory (the production wiring): SMS that arrive while the
 * receiver is busy are read with one AT+CMGL pair and deleted one by one once durable.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { captureLogger } from '../support/logger.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';
import { pendingRecords, settle, startStack, virtualModem, type Stack } from './harness.js';
import type { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';

const LONG =
  'Terima kasih. Anda mendapatkan penambahan pulsa Rp 25.000 dari nomor 6281311112222 tgl 2026-11-22 pukul 10:15 WIB. ' +
  'Pulsa dapat digunakan untuk telepon, SMS dan paket data. Cek pulsa melalui *888#. Info CS 188.';

let dir: string;
let cleanup: () => Promise<void>;
let vm: VirtualModem;
let stack: Stack | undefined;
const { logger } = captureLogger();

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('batch'));
  vm = virtualModem('virtual:batch-1');
});

afterEach(async () => {
  await stack?.stop();
  stack = undefined;
  vm.stop();
  await cleanup();
});

describe('batched reads over the virtual modem', () => {
  it('a burst waiting behind a busy receiver: two AT+CMGL, one AT+CMGD per part, no AT+CMGR; texts byte-exact, multipart joined once', async () => {
    stack = await startStack(dir, vm, logger);
    const receiver = stack.supervisor.currentReceiver()!;
    await receiver.drained();
    await receiver.pause();
    const before = vm.commandLog().length;
    const sent = new Map<string, string>();
    let parts = 0;
    for (let i = 0; i < 12; i++) {
      const text =
        i % 6 === 2
          ? `${LONG} #${i}`
          : i % 6 === 4
            ? `Pulsa Rp${i}.000 diterima 😀 — ${i}`
            : `Anda mendapatkan pulsa Rp ${i}000 dari 62821122357${String(i).padStart(2, '0')} {~}€`;
      sent.set(text, '858');
      parts += vm.injectSms({ from: '858', text, timestamp: new Date(Date.UTC(2026, 10, 22, 3, 0, i)) }).indexes.length;
    }
    expect(parts).toBe(14);
    // Every +CMTI has crossed the line and queued its read before the receiver goes on.
    await until(() => stack!.supervisor.status().scheduler.queuedBy.receive === parts, 'every read queued');
    receiver.resume();
    await settle(stack, vm);
    const cmds = vm
      .commandLog()
      .slice(before)
      .filter((c) => /^AT\+CMG[LRD]/i.test(c));
    expect(cmds.filter((c) => /^AT\+CMGL/i.test(c))).toHaveLength(2);
    expect(cmds.filter((c) => /^AT\+CMGR/i.test(c))).toHaveLength(0);
    expect(cmds.filter((c) => /^AT\+CMGD/i.test(c))).toHaveLength(parts);
    const recs = await pendingRecords(stack.spool);
    expect(recs.map((r) => r.text).sort()).toEqual([...sent.keys()].sort());
    expect(recs.filter((r) => r.multipart).map((r) => r.multipart!.complete)).toEqual([true, true]);
    expect((await stack.spool.listParts()).filter((p) => p.consumedBy === undefined)).toEqual([]);
    expect(vm.storedMessages()).toHaveLength(0);
  });
});
