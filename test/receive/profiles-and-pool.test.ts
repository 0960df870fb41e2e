/**
 * The receive path on other modem families and on a pool: Huawei-like (URC noise slipped between response lines and
 * the final result, 0-based indexes, ^SMMEMFULL), generic, and two modems in one daemon sharing one spool.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { createModemSupervisor } from '../../src/daemon/modem-wiring.js';
import { Spool } from '../../src/spool/store.js';
import type { SmsRecord } from '../../src/spool/types.js';
import { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';
import { silentLogger } from '../../src/log.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';
import { pendingRecords, settle, startStack, virtualModem, type Stack } from './harness.js';

let n = 0;
let dir: string;
let cleanup: () => Promise<void>;
const modems: VirtualModem[] = [];
const stacks: Stack[] = [];

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('profiles'));
});
afterEach(async () => {
  for (const s of stacks.splice(0)) await s.stop();
  for (const m of modems.splice(0)) m.stop();
  await cleanup();
});

const texts = (count: number) =>
  Array.from({ length: count }, (_, i) =>
    i % 5 === 2
      ? `Anda mendapatkan penambahan pulsa Rp ${i}.000 dari nomor 62812000000${String(i).padStart(2, '0')}. `.repeat(
          3,
        ) + `SN: ${i}`
      : i % 5 === 4
        ? `Pulsa Rp${i}.000 diterima 😀 — ${i}`
        : `Anda menerima Pulsa dari 6285941020${String(i).padStart(3, '0')} sebesar Rp${i}000.`,
  );

describe.each([
  [
    'huawei',
    { profile: 'huawei' as const, indexBase: 0 as const, noise: { seed: 7, intervalMs: 5, probability: 0.5 } },
  ],
  ['generic', { profile: 'generic' as const }],
])('receive path on a %s-like modem', (_name, options) => {
  it('30 SMS (multipart, UCS2) arrive as 30 correct records; the SIM ends empty', async () => {
    const vm = virtualModem(`virtual:profile-${++n}`, options);
    modems.push(vm);
    const stack = await startStack(dir, vm, silentLogger());
    stacks.push(stack);
    const sent = texts(30);
    sent.forEach((text, i) =>
      vm.injectSms({ from: '858', text, timestamp: new Date(Date.UTC(2026, 10, 22, 5, 0, i)) }),
    );
    await until(async () => (await pendingRecords(stack.spool)).length === 30, '30 records', 30_000);
    await settle(stack, vm);
    expect(new Set((await pendingRecords(stack.spool)).map((r) => r.text))).toEqual(new Set(sent));
    expect(vm.internalErrors()).toEqual([]);
  }, 40_000);
});

describe('a pool of two modems in one daemon', () => {
  it('each modem receives into the shared spool, records tagged with their modem and SIM', async () => {
    const spool = await Spool.open(dir, { logger: silentLogger() });
    const cfg = parseConfig(
      {
        webhook: { url: 'http://127.0.0.1:9/unused' },
        modems: [
          { name: 'tsel-1', port: 'virtual:tsel-1', senders: ['858'] },
          { name: 'xl-1', port: 'virtual:xl-1', senders: ['168'] },
        ],
      },
      {},
    );
    const a = new VirtualModem({
      path: `virtual:pool-a-${++n}`,
      profile: 'simcom',
      bootStepMs: 0,
      identity: { imsi: '510100000000001' },
    });
    const b = new VirtualModem({
      path: `virtual:pool-b-${n}`,
      profile: 'huawei',
      bootStepMs: 0,
      identity: { imsi: '510110000000002' },
    });
    modems.push(a, b);
    const supervisors = [
      createModemSupervisor(cfg.modems[0]!, { spool, logger: silentLogger(), path: a.start() }),
      createModemSupervisor(cfg.modems[1]!, { spool, logger: silentLogger(), path: b.start() }),
    ];
    for (const s of supervisors) s.start();
    try {
      await until(() => supervisors.every((s) => s.status().state === 'running'), 'both modems running', 10_000);
      for (let i = 0; i < 10; i++) {
        a.injectSms({ from: '858', text: `Telkomsel ${i}`, timestamp: new Date(Date.UTC(2026, 10, 22, 6, 0, i)) });
        b.injectSms({ from: '168', text: `XL ${i}`, timestamp: new Date(Date.UTC(2026, 10, 22, 6, 0, i)) });
        b.injectSms({
          from: '858',
          text: `not an XL sender ${i}`,
          timestamp: new Date(Date.UTC(2026, 10, 22, 6, 1, i)),
        });
      }
      await until(
        async () => (await spool.stats()).pending === 20 && (await spool.stats()).ignored === 10,
        '20 pending + 10 ignored',
        20_000,
      );
      const recs = (await spool.list('pending')) as SmsRecord[];
      expect(
        recs
          .filter((r) => r.sim.modem === 'tsel-1')
          .every((r) => r.sender === '858' && r.sim.imsi === '510100000000001' && r.text.startsWith('Telkomsel')),
      ).toBe(true);
      expect(
        recs
          .filter((r) => r.sim.modem === 'xl-1')
          .every((r) => r.sender === '168' && r.sim.imsi === '510110000000002' && r.text.startsWith('XL')),
      ).toBe(true);
      expect(recs.filter((r) => r.sim.modem === 'xl-1')).toHaveLength(10);
      await until(() => a.storedMessages().length === 0 && b.storedMessages().length === 0, 'both SIMs empty');
    } finally {
      for (const s of supervisors) await s.stop();
      await spool.close();
    }
  }, 30_000);
});
