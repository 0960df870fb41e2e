/**
 * Modem behaviour replayed from captured-style transcripts (test/fixtures/transcripts/<family>/*.txt): every command
 * the modem sends must be the next one in the transcript, and the whole transcript must be used.
 */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { Modem, type ModemOptions } from '../../src/modem/modem.js';
import { FakeChannel, nextTurn } from './fake-channel.js';
import { isOutgoing } from '../../src/modem/sim-memory.js';
import { decodeDeliver } from '../../src/sms/pdu.js';
import { MemorySpool, receiverOn } from '../receive/fakes.js';
import { until } from '../support/until.js';

const fixture = (path: string) => new URL(`../fixtures/transcripts/${path}`, import.meta.url);

function modemFor(path: string, options: Partial<ModemOptions> = {}): { modem: Modem; fake: FakeChannel } {
  const fake = FakeChannel.fromFile(fixture(path));
  const modem = new Modem({ channel: fake, name: 'm1', logger: silentLogger(), pollIntervalMs: 5, ...options });
  return { modem, fake };
}

describe('init from transcripts', () => {
  it.each([
    [
      'simcom/sim800l-boot-init.txt',
      {
        profile: 'simcom',
        manufacturer: 'SIMCOM_Ltd',
        model: 'SIMCOM_SIM800L',
        revision: '1418B04SIM800L24',
        imei: '866782034567890',
        imsi: '510101234567890',
        iccid: '89621012345678901234',
        msisdn: undefined,
      },
    ],
    [
      'simcom/sim7600-init.txt',
      {
        profile: 'simcom',
        model: 'SIMCOM_SIM7600E-H',
        revision: 'LE20B04SIM7600M22',
        iccid: '89621055512345678901',
        msisdn: '+6281234567890',
      },
    ],
    [
      'huawei/e173-init.txt',
      {
        profile: 'huawei',
        manufacturer: 'huawei',
        model: 'E173',
        imei: '353142041234567',
        iccid: '89621098765432109876',
      },
    ],
    ['quectel/ec25-boot-init.txt', { profile: 'quectel', model: 'EC25', iccid: '8962011234567890123F' }],
    [
      'wavecom/fastrack-init.txt',
      { profile: 'wavecom', manufacturer: 'WAVECOM MODEM', imsi: '510211234567890', iccid: '89622101234567890123' },
    ],
    ['zte/mf190-init.txt', { profile: 'zte', model: 'MF190', iccid: undefined }],
    [
      'quectel/m95-multiline-cgmi.txt',
      {
        profile: 'quectel',
        manufacturer: 'Quectel_Ltd Quectel_M95 MTK 0828',
        model: 'Quectel_M95',
        iccid: '89620000000000000002',
      },
    ],
  ])('%s', async (path, expected) => {
    const { modem, fake } = modemFor(path);
    const identity = await modem.init();
    fake.expectDone();
    expect(identity).toMatchObject(expected);
    expect(modem.cnmi).toBe('2,1,0,0,0');
    expect(modem.storage).toBe('SM');
  });

  it('SIM800: waits for SMS Ready before PDU mode and records the storage capacity', async () => {
    const { modem, fake } = modemFor('simcom/sim800l-boot-init.txt', { pollIntervalMs: 60_000 });
    const urcs: string[] = [];
    modem.on('urc', (u) => urcs.push(u.name));
    await modem.init();
    fake.expectDone();
    // The retry of AT+CMGF=0 came from the SMS Ready banner, not from the (one minute) poll interval.
    expect(fake.sent.filter((c) => c === 'AT+CMGF=0')).toHaveLength(2);
    expect(urcs).toEqual(['rdy', 'cfun', 'cpin', 'call-ready', 'sms-ready']);
    expect(modem.storageCapacity).toEqual({ used: 2, total: 30 });
  });

  it('Huawei: status noise during identification is recognised before the profile is known', async () => {
    const { modem, fake } = modemFor('huawei/e173-init.txt');
    const urcs: string[] = [];
    const unexpected: string[] = [];
    modem.on('urc', (u) => urcs.push(u.name));
    fake.on('unexpected', (l) => unexpected.push(l));
    const identity = await modem.init();
    await nextTurn();
    expect(identity.manufacturer).toBe('huawei');
    expect(urcs).toEqual(['rssi', 'hw-boot', 'mode']);
    expect(unexpected).toEqual([]);
    expect(fake.sent).toContain('AT^CURC=0');
  });

  it('SIMCom A7670E: *ATREADY / +CPIN banners before init are boot noise; *ATREADY after init is a reset', async () => {
    const { modem, fake } = modemFor('simcom/a7670e-atready-boot.txt');
    const urcs: string[] = [];
    const reboots: string[] = [];
    modem.on('urc', (u) => urcs.push(u.name));
    modem.on('reboot', (r) => reboots.push(r.urc));
    expect(await modem.init()).toMatchObject({
      profile: 'simcom',
      model: 'A7670E-LNXY-UBL',
      iccid: '89620000000000000001',
    });
    fake.expectDone();
    await nextTurn();
    expect(reboots).toEqual([]);
    fake.emitLines('*ATREADY: 1', '+CPIN: READY');
    expect(reboots).toEqual(['atready']);
    expect(urcs).toContain('atready');
  });

  it('SIM7600 restarting mid-session: RDY / +CPIN / SMS DONE / PB DONE say "reset" once; init runs again and sets CNMI', async () => {
    const { modem, fake } = modemFor('simcom/sim7600-reset-mid-session.txt');
    const reboots: string[] = [];
    modem.on('reboot', (r) => reboots.push(r.urc));
    await modem.init();
    await nextTurn();
    expect(reboots).toEqual(['rdy']);
    expect(await modem.init()).toMatchObject({
      profile: 'simcom',
      model: 'SIMCOM_SIM7600E-H',
      iccid: '89621055512345678901',
    });
    fake.expectDone();
    expect(fake.sent.filter((c) => c === 'AT+CNMI=2,1,0,0,0')).toHaveLength(2);
    expect(modem.cnmi).toBe('2,1,0,0,0');
    expect(reboots).toEqual(['rdy']);
  });

  it('a modem that rebooted after init says so once', async () => {
    const { modem, fake } = modemFor('quectel/ec25-boot-init.txt');
    const reboots: string[] = [];
    modem.on('reboot', (r) => reboots.push(r.urc));
    await modem.init();
    await nextTurn();
    expect(reboots).toEqual([]); // the boot banners before init are not a reboot
    fake.emitLines('RDY', '+CFUN: 1', '+CPIN: READY', '+QUSIM: 1');
    fake.emitLines('RDY');
    expect(reboots).toEqual(['rdy']);
  });
});

describe('stored SMS from a transcript', () => {
  it('lists with 0-based indexes, reads, treats empty slots as undefined and re-deletes quietly', async () => {
    const { modem, fake } = modemFor('generic/list-read-delete.txt');
    const indications: Array<{ storage: string; index: number }> = [];
    modem.on('sms', (s) => indications.push(s));

    const list = await modem.listSms();
    expect(list.map((m) => [m.index, m.stat, m.length])).toEqual([
      [0, 1, 87],
      [1, 0, 63],
    ]);
    expect(list[0]!.pdu).toMatch(/^0791261801000004038158F8/);
    // The +CMTI that arrived inside the listing was an indication, not part of the list.
    expect(indications).toEqual([{ storage: 'SM', index: 2 }]);

    expect(await modem.readSms(1)).toMatchObject({ index: 1, stat: 0, length: 63 });
    expect(await modem.readSms(5)).toBeUndefined();
    expect(await modem.readSms(40)).toBeUndefined();
    await modem.deleteSms(0);
    await expect(modem.deleteSms(0)).resolves.toBeUndefined();
    fake.expectDone();
  });
});

describe('indications from transcripts', () => {
  it('u-blox SARA-R410M: +CMTI: "ME",0 names ME and a 0-based index', async () => {
    const { modem, fake } = modemFor('ublox/sara-r410m-cmti-me.txt');
    const indications: Array<{ storage: string; index: number }> = [];
    modem.on('sms', (s) => indications.push(s));
    await nextTurn();
    expect(indications).toEqual([{ storage: 'ME', index: 0 }]);
    expect((await fake.run('AT+CNMI?')).lines).toEqual(['+CNMI: 1,1,0,0,0']);
    fake.expectDone();
  });
});

describe('one SMS announced twice (Neoway M590, constructed from 27.005 §3.4.1)', () => {
  it('two identical +CMTI give one indication; the slot is read and deleted once; after the delete the same index is a new SMS', async () => {
    const { modem, fake } = modemFor('neoway/m590-cmti-twice.txt', { profile: 'neoway' });
    const indications: Array<{ storage: string; index: number }> = [];
    modem.on('sms', (s) => indications.push(s));
    await nextTurn();
    expect(indications).toEqual([{ storage: 'SM', index: 3 }]);
    const pdu = '0791198948004544040C9119894882006200007050307040042206CF35689E9603';
    expect(await modem.readSms(3)).toEqual({ index: 3, stat: 1, length: 25, pdu });
    await modem.deleteSms(3);
    await nextTurn();
    expect(indications).toEqual([
      { storage: 'SM', index: 3 },
      { storage: 'SM', index: 3 },
    ]);
    expect(await modem.readSms(3)).toMatchObject({ index: 3, pdu });
    expect(fake.sent.filter((c) => c === 'AT+CMGR=3')).toHaveLength(2);
    fake.expectDone();
  });

  it('without the profile quirk (generic) both lines are indications (the receiver, not the modem, must then read the slot once)', async () => {
    const { modem } = modemFor('neoway/m590-cmti-twice.txt', { profile: 'generic' });
    const indications: Array<{ storage: string; index: number }> = [];
    modem.on('sms', (s) => indications.push(s));
    await nextTurn();
    expect(indications).toEqual([
      { storage: 'SM', index: 3 },
      { storage: 'SM', index: 3 },
    ]);
  });
});

describe('one SMS announced twice, receiver on the modem (constructed from 27.005 §3.4.1)', () => {
  it('generic profile (no modem-level drop): spooled once and deleted once; the second indication reads an empty slot', async () => {
    const { modem, fake } = modemFor('neoway/m590-cmti-twice-receiver.txt', { profile: 'generic' });
    const spool = new MemorySpool();
    const receiver = receiverOn(modem, spool, { accept: () => ({ accept: true }) });
    receiver.start();
    await until(() => fake.sent.length >= 1, 'start-up listing', 2000);
    await nextTurn();
    fake.emitLines('+CMTI: "SM",3', '+CMTI: "SM",3');
    await until(() => fake.remaining().length === 0, 'transcript used up', 2000);
    await receiver.drained();
    await receiver.stop();
    fake.expectDone();
    expect(fake.sent).toEqual(['AT+CMGL=4', 'AT+CMGR=3', 'AT+CMGR=3', 'AT+CMGD=3', 'AT+CMGR=3']);
    expect(spool.pending.size).toBe(1);
    expect(receiver.stats).toMatchObject({ received: 1, spooled: 1, quarantined: 0 });
  });
});

describe('+CMS ERROR: 321 to an announced index (constructed from 27.005 §3.2.5), receiver on the modem', () => {
  it('the slot is not called empty on the 321 alone: the memory is listed, two agreeing listings give the SMS, spooled once, then deleted', async () => {
    const { modem, fake } = modemFor('generic/cms321-announced-then-listed.txt', { profile: 'generic' });
    const spool = new MemorySpool();
    const receiver = receiverOn(modem, spool, { accept: () => ({ accept: true }) });
    receiver.start();
    await until(() => fake.sent.length >= 1, 'start-up listing', 2000);
    await nextTurn();
    fake.emitLines('+CMTI: "SM",4');
    await until(() => fake.remaining().length === 0, 'transcript used up', 2000);
    await receiver.drained();
    await receiver.stop();
    fake.expectDone();
    expect(fake.sent).toEqual(['AT+CMGL=4', 'AT+CMGR=4', 'AT+CMGL=4', 'AT+CMGL=4', 'AT+CMGD=4']);
    expect(spool.pending.size).toBe(1);
    expect(spool.quarantine.size + spool.ignored.size).toBe(0);
    expect([...spool.pending.values()][0]).toMatchObject({
      pdus: ['0791198948004544040C9119894882006200007050307040042206CF35689E9603'],
    });
  });
});

describe('AT+CMGL header variants (ModemManager test-modem-helpers.c)', () => {
  it('with an empty alpha field and without one; a stored sent message is never taken for a received one', async () => {
    const { modem, fake } = modemFor('generic/mm-cmgl-header-variants.txt');
    const received = await modem.listSms();
    expect(received.map((m) => [m.index, m.stat, m.length])).toEqual([
      [0, 1, 147],
      [1, 1, 147],
      [2, 1, 147],
    ]);
    for (const m of received) {
      expect(isOutgoing(m)).toBe(false);
      const decoded = decodeDeliver(m);
      expect(decoded.ok && [decoded.sms.originator, decoded.sms.text.slice(0, 21)]).toEqual([
        '22167',
        'Bienvenido a Vodafone',
      ]);
    }
    const pantech = await modem.listSms();
    expect(pantech.map((m) => [m.index, m.stat, m.length])).toEqual([
      [17, 3, 35],
      [15, 3, 35],
      [13, 3, 35],
      [11, 3, 35],
    ]);
    expect(pantech.every(isOutgoing)).toBe(true); // the receiver leaves stored outgoing copies alone
    fake.expectDone();
  });
});

describe('AT+CMGR header variants of real phones (gammu at-sms dumps)', () => {
  it('with an empty alpha field and without one; stat read and unread; index 0 and 1', async () => {
    const { modem, fake } = modemFor('generic/gammu-cmgr-headers.txt');
    expect(await modem.readSms(1)).toMatchObject({
      index: 1,
      stat: 1,
      length: 25,
      pdu: '0791198948004544040C9119894882006200007050307040042206CF35689E9603',
    });
    expect(await modem.readSms(0)).toMatchObject({
      index: 0,
      stat: 0,
      length: 23,
      pdu: '07917283010010F5040BC87238880900F10000993092516195800AE8329BFD4697D9EC37',
    });
    expect(await modem.readSms(0)).toMatchObject({ index: 0, stat: 1, length: 30 });
    fake.expectDone();
  });
});

describe('USSD from transcripts', () => {
  it('Telkomsel menu: reply before OK, then a second step ended by the network', async () => {
    const { modem, fake } = modemFor('generic/ussd-telkomsel-menu.txt', { profile: 'generic' });
    const first = await modem.ussd('*888#');
    expect(first).toEqual({
      status: 1,
      text: 'Sisa pulsa Rp.24025.Aktif sd 28/08/2016. 1.Paket 2.Info Kartu',
      dcs: 0,
      raw: '+CUSD: 1,"Sisa pulsa Rp.24025.Aktif sd 28/08/2016. 1.Paket 2.Info Kartu",0',
    });
    const second = await modem.ussdReply('2');
    expect(second.status).toBe(2);
    expect(second.text).toBe('Maaf, operasi gagal karena format pesan yang tidak valid.');
    await expect(modem.ussdReply('1')).rejects.toMatchObject({ code: 'USSD' });
    fake.expectDone();
  });

  it('Huawei: packed hex out and back', async () => {
    const { modem, fake } = modemFor('huawei/e303-ussd-balance.txt', { profile: 'huawei' });
    const reply = await modem.ussd('*100#');
    expect(reply).toMatchObject({ status: 0, text: 'Sisa pulsa Rp.24025.Aktif sd 28/08/2016', dcs: 15 });
    fake.expectDone();
  });
});
