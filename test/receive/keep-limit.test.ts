/**
 * `otherSenders: keep` never fills the SIM. Kept messages may take at most half the SIM's slots (10
 * when the capacity is unknown); a warning comes first, and past the limit a message is archived (spool 'ignored',
 * then deleted from the SIM) instead of kept. Operator SMS keep flowing through.
 */
import { describe, expect, it } from 'vitest';
import { buildDeliverPdus } from '../../src/virtual-modem/pdu-builder.js';
import { captureLogger } from '../support/logger.js';
import { FakeModem, MemorySpool, receiverOn } from './fakes.js';

const TS = new Date('2026-11-22T03:00:00Z');

/** The shared fake modem, with slots put by sender and text. */
class KeepModem extends FakeModem {
  putText(index: number, from: string, text: string): void {
    this.put(index, buildDeliverPdus({ originator: from, text, timestamp: TS })[0]!);
  }
}

function setup(simTotal: number | undefined) {
  const modem = new KeepModem();
  const spool = new MemorySpool();
  const { logger, lines } = captureLogger();
  const receiver = receiverOn(modem, spool, {
    otherSenders: 'keep',
    logger,
    ...(simTotal ? { storageUsage: async () => ({ used: modem.slots.size, total: simTotal }) } : {}),
  });
  return { modem, spool, receiver, warnings: () => lines.filter((l) => l.level === 40).map((l) => l.msg) };
}

describe('policy keep is bounded', () => {
  it('a 10-slot SIM: 5 promos kept, the rest archived and deleted; operator SMS still spooled', async () => {
    const { modem, spool, receiver, warnings } = setup(10);
    for (let i = 1; i <= 8; i++) modem.putText(i, 'PROMO', `diskon ${i}`);
    modem.putText(9, '858', 'Anda mendapatkan penambahan pulsa Rp 5000');
    receiver.start();
    await receiver.drained();
    expect([...modem.slots.keys()]).toEqual([1, 2, 3, 4, 5]);
    expect(spool.ignored.size).toBe(3);
    expect(spool.pending.size).toBe(1);
    expect(warnings().some((m) => m.includes('policy keep: 4 SMS kept on the SIM (limit 5)'))).toBe(true);
    expect(warnings().some((m) => m.includes('this one is archived instead'))).toBe(true);
    // A later sweep leaves the kept ones alone and archives nothing more.
    receiver.requestSweep('test');
    await receiver.drained();
    expect(modem.slots.size).toBe(5);
    expect(spool.ignored.size).toBe(3);
    await receiver.stop();
  });

  it('capacity unknown: at most 10 kept', async () => {
    const { modem, spool, receiver } = setup(undefined);
    for (let i = 1; i <= 13; i++) modem.putText(i, 'PROMO', `promo ${i}`);
    receiver.start();
    await receiver.drained();
    expect(modem.slots.size).toBe(10);
    expect(spool.ignored.size).toBe(3);
    await receiver.stop();
  });
});
