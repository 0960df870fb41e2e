/**
 * The dedupe memory is not shorter than an SMS can come back. Records that prove an SMS was received
 * (sent, ignored, a joined part's tombstone) are kept at least DEDUPE_MIN_DAYS, whatever the retention settings, so
 * the same SMS read again (left on the SIM, redelivered by the SMS centre) is one record, not a second POST.
 */
import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import type { ReceiveModem } from '../../src/receive/receiver.js';
import { receiverOn } from '../receive/fakes.js';
import { Spool } from '../../src/spool/store.js';
import { DEDUPE_MIN_DAYS, SPOOL_RECORD_VERSION, type PartRecord } from '../../src/spool/types.js';
import { makeSms } from './helpers.js';
import { tempDir } from '../support/tmp.js';

const DAY = 86_400_000;
const NOW = new Date('2026-06-30T00:00:00Z');
let dir: string;
let cleanup: () => Promise<void>;
let spool: Spool;
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('dedupe-window'));
  spool = await Spool.open(dir, { logger: silentLogger(), fsync: false, clock: () => NOW });
});
afterEach(async () => {
  await spool.close();
  await cleanup();
});

describe('dedupe memory', () => {
  it('prune with retention 0 keeps records younger than DEDUPE_MIN_DAYS: the SMS read again is a duplicate', async () => {
    expect(DEDUPE_MIN_DAYS).toBeGreaterThanOrEqual(7);
    for (const [id, daysAgo] of [
      ['recent', 2],
      ['old', DEDUPE_MIN_DAYS + 1],
    ] as const) {
      await spool.putPending(makeSms(id));
      await spool.markDelivered(id, { status: 200, at: new Date(NOW.getTime() - daysAgo * DAY) });
    }
    expect(await spool.prune('sent', 0)).toBe(1);
    expect(await spool.putPending(makeSms('recent'))).toEqual({ created: false, area: 'sent' });
    expect(await spool.putPending(makeSms('old'))).toEqual({ created: true, area: 'pending' });
  });

  it('config: a retention below the dedupe memory is allowed, with a warning', () => {
    const cfg = parseConfig({
      webhook: { url: 'http://127.0.0.1:1/x' },
      spool: { sentRetentionDays: 0 },
      modems: [{ name: 'm', port: 'virtual:m', senders: ['858'] }],
    });
    expect(cfg.warnings.join('\n')).toContain(
      `spool.sentRetentionDays 0 is below the dedupe memory: records are kept ${DEDUPE_MIN_DAYS} days`,
    );
  });

  it("a joined part's tombstone outlives twice the multipart timeout until the dedupe memory ends", async () => {
    const tombstone = (id: string, consumedAgoMs: number): PartRecord => ({
      v: SPOOL_RECORD_VERSION,
      kind: 'part',
      groupKey: `k-${id}`,
      id,
      sim: { modem: 'm1' },
      sender: '858',
      sequence: 1,
      total: 2,
      reference: 7,
      referenceBits: 8,
      text: 'first half',
      scTimestamp: '2026-06-29T07:00:00+07:00',
      receivedAt: new Date(NOW.getTime() - consumedAgoMs).toISOString(),
      pdu: '00',
      consumedBy: 'sms-joined',
      consumedAt: new Date(NOW.getTime() - consumedAgoMs).toISOString(),
    });
    await spool.putPart(tombstone('hour-old', 3_600_000)); // > 2 x 600 s, < the dedupe memory
    await spool.putPart(tombstone('too-old', (DEDUPE_MIN_DAYS + 1) * DAY));
    const modem = Object.assign(new EventEmitter(), {
      listSms: async () => [],
      readSms: async () => undefined,
      deleteSms: async () => undefined,
      acknowledgeDirect: async () => undefined,
    }) as ReceiveModem;
    const receiver = receiverOn(modem, spool, { now: () => NOW.getTime() });
    receiver.start();
    await receiver.drained();
    await receiver.stop();
    expect((await spool.listParts()).map((p) => p.id)).toEqual(['hour-old']);
  });
});
