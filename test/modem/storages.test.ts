/**
 * The modem's memories: AT+CPMS=? answers as real modems send them, inStorage() (switch there and back, a refusal
 * named and remembered), and the receiver over a modem that refuses the memory it announces (nothing lost, the modem
 * still served).
 */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { Modem } from '../../src/modem/modem.js';
import { parseCpmsSupported } from '../../src/modem/parse.js';
import { FakeChannel, type TableRow } from './fake-channel.js';

describe('AT+CPMS=? as real modems answer it', () => {
  it.each([
    // ModemManager src/tests/test-modem-helpers.c
    [
      '+CPMS: ("ME","MT"),("ME","SM","MT"),("SM","MT")',
      [
        ['ME', 'MT'],
        ['ME', 'SM', 'MT'],
        ['SM', 'MT'],
      ],
    ], // Cinterion
    ['+CPMS: "ME","MT","SM"', [['ME'], ['MT'], ['SM']]], // Huawei MU609
    ['+CPMS: (),(),()', [[], [], []]], // Nokia C6
    ['+CPMS: ("ME","MT"),"ME",("SM")', [['ME', 'MT'], ['ME'], ['SM']]], // mixed
    ['+CPMS:     (  "ME"  ,  "MT"  )   ,  "ME" ,   (  "SM"  )', [['ME', 'MT'], ['ME'], ['SM']]], // mixed, spaces
    // python-gsmmodem test/fakemodems.py
    ['+CPMS: (("SM","BM","SR"),("SM"))', [['SM', 'BM', 'SR'], ['SM']]], // Wavecom Multiband 900E 1800
    [
      '+CPMS: ("ME","MT","SM","SR"),("ME","MT","SM","SR"),("ME","MT","SM","SR")',
      [
        ['ME', 'MT', 'SM', 'SR'],
        ['ME', 'MT', 'SM', 'SR'],
        ['ME', 'MT', 'SM', 'SR'],
      ],
    ], // Huawei E1752, K3715
  ])('%s', (line, expected) => {
    expect(parseCpmsSupported([line])).toEqual(expected);
  });
});

/** Init of a generic modem offering SM and ME, then the given rows. */
function initRows(extra: TableRow[] = []): TableRow[] {
  return [
    ['ATE0', ['OK']],
    ['AT+CMEE=1', ['OK']],
    ['AT+CGMI', ['Quectel', 'OK']],
    ['AT+CGMM', ['EC25', 'OK']],
    ['AT+CGMR', ['EC25EFAR06A06M4G', 'OK']],
    ['AT+CGSN', ['866123456789012', 'OK']],
    ['AT+CPIN?', ['+CPIN: READY', 'OK']],
    ['AT+CIMI', ['510101234567890', 'OK']],
    ['AT+QCCID', ['+QCCID: 89620000000000000001', 'OK']],
    ['AT+CNUM', ['OK']],
    ['AT+CMGF=0', ['OK']],
    ['AT+CPMS=?', ['+CPMS: ("SM","ME","MT"),("SM","ME","MT"),("SM","ME","MT")', 'OK']],
    ['AT+CPMS="SM","SM","SM"', ['+CPMS: 0,50,0,50,0,50', 'OK']],
    ['AT+CNMI=?', ['+CNMI: (0-2),(0-3),(0,2),(0-2),(0,1)', 'OK']],
    ['AT+CNMI=2,1,0,0,0', ['OK']],
    ...extra,
  ];
}

describe('Modem.inStorage', () => {
  it('switches mem1 there and back; the chosen memory and the fill of each are known; MT is never swept beside SM and ME', async () => {
    const fake = FakeChannel.fromTable(
      initRows([
        ['AT+CPMS="ME"', ['+CPMS: 2,255,0,50,0,50', 'OK']],
        ['AT+CMGL=4', ['OK']],
        ['AT+CPMS="SM"', ['+CPMS: 0,50,0,50,0,50', 'OK']],
      ]),
    );
    const modem = new Modem({
      channel: fake,
      name: 'q1',
      logger: silentLogger(),
      pollIntervalMs: 5,
      profile: 'quectel',
    });
    await modem.init();
    expect(modem.receiveStorages()).toEqual(['SM', 'ME']);
    const seen = await modem.inStorage('ME', async (fill) => (await modem.listSms(), fill));
    expect(seen).toEqual({ used: 2, total: 255 });
    expect(fake.sent.slice(-3)).toEqual(['AT+CPMS="ME"', 'AT+CMGL=4', 'AT+CPMS="SM"']);
    expect(modem.storageFills().map((f) => [f.storage, f.used, f.total])).toEqual([
      ['SM', 0, 50],
      ['ME', 0, 255],
    ]);
  });

  it('a memory the modem refuses: a clear error naming it, not offered to sweeps for a while, the modem still answers SM commands', async () => {
    const fake = FakeChannel.fromTable(
      initRows([
        ['AT+CPMS="ME"', ['+CMS ERROR: 302']],
        ['AT+CMGR=1', ['+CMGR: 0,,5', '0011223344', 'OK']],
      ]),
    );
    const modem = new Modem({
      channel: fake,
      name: 'q1',
      logger: silentLogger(),
      pollIntervalMs: 5,
      profile: 'quectel',
    });
    await modem.init();
    await expect(modem.inStorage('ME', () => modem.readSms(67))).rejects.toThrow(
      /refuses SMS storage ME \(\+CMS ERROR: 302/,
    );
    expect(fake.sent.filter((c) => c === 'AT+CMGR=67')).toEqual([]); // never read in the wrong memory
    expect(modem.receiveStorages()).toEqual(['SM']);
    expect(await modem.readSms(1)).toMatchObject({ index: 1, length: 5 });
  });

  it('a switch back that fails is retried before the next SMS command', async () => {
    let refuseSm = true;
    const fake = FakeChannel.fromTable(
      initRows([
        ['AT+CPMS="ME"', ['+CPMS: 0,255,0,50,0,50', 'OK']],
        ['AT+CPMS="SM"', () => (refuseSm ? ((refuseSm = false), ['+CME ERROR: 14']) : ['+CPMS: 0,50,0,50,0,50', 'OK'])],
        ['AT+CMGL=4', ['OK']],
      ]),
    );
    const modem = new Modem({
      channel: fake,
      name: 'q1',
      logger: silentLogger(),
      pollIntervalMs: 5,
      profile: 'quectel',
    });
    await modem.init();
    await modem.inStorage('ME', async () => undefined);
    await modem.listSms();
    expect(fake.sent.slice(-4)).toEqual(['AT+CPMS="ME"', 'AT+CPMS="SM"', 'AT+CPMS="SM"', 'AT+CMGL=4']);
  });
});

describe('the receiver over a modem that refuses the memory it announces', () => {
  it('+CMTI: "ME",67 with ME refused: a clear error, nothing deleted, and an SMS in SM right after is still received', async () => {
    const { MemorySpool, receiverOn } = await import('../receive/fakes.js');
    const { until } = await import('../support/until.js');
    const { buildDeliverPdus } = await import('../../src/virtual-modem/pdu-builder.js');
    const [built] = buildDeliverPdus({
      originator: '858',
      text: 'Anda menerima Pulsa sebesar Rp5000.',
      timestamp: new Date(Date.UTC(2026, 0, 2)),
      tzQuarterHours: 28,
    });
    const pdu = built!.pdu;
    const read = { n: 0 };
    const fake = FakeChannel.fromTable(
      initRows([
        ['AT+CPMS="ME"', ['+CMS ERROR: 302']],
        ['AT+CMGR=1', () => (read.n++ < 2 ? ['+CMGR: 0,,' + built!.tpduLength, pdu, 'OK'] : ['OK'])],
        ['AT+CMGD=1', ['OK']],
        ['AT+CMGL=4', ['OK']],
        ['AT+CPMS?', ['+CPMS: "SM",0,50,"SM",0,50,"SM",0,50', 'OK']],
      ]),
    );
    const modem = new Modem({
      channel: fake,
      name: 'q1',
      logger: silentLogger(),
      pollIntervalMs: 5,
      profile: 'quectel',
    });
    await modem.init();
    const spool = new MemorySpool();
    const receiver = receiverOn(modem, spool, { accept: () => ({ accept: true }) });
    receiver.start();
    await receiver.drained();
    fake.emitLines('+CMTI: "ME",67');
    await receiver.drained();
    expect(receiver.stats.lastError).toMatch(/refuses SMS storage ME/);
    expect(fake.sent.filter((c) => /^AT\+CMG[RD]=67$/.test(c))).toEqual([]);
    fake.emitLines('+CMTI: "SM",1');
    await until(() => spool.pending.size === 1, 'the SM message spooled', 5000);
    await receiver.drained();
    expect(fake.sent).toContain('AT+CMGD=1');
    await receiver.stop();
  });
});
