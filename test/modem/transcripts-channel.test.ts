/**
 * Real devices' sessions (test/fixtures/transcripts/<family>/, each naming its public source) replayed against the
 * real AT channel and the modem: the transcript is a device behind the virtual serial link (transcript-device.ts), so
 * the framer, the final-result table, the quiet time for answers without OK, the URC split and the modem's storage
 * switching all run as in production. Every command must be the transcript's next one and the transcript used up.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SerialAtChannel } from '../../src/at/channel.js';
import { AtCommandError } from '../../src/errors.js';
import { silentLogger } from '../../src/log.js';
import { Modem, type ModemOptions } from '../../src/modem/modem.js';
import type { UssdReply } from '../../src/modem/ussd-session.js';
import { openVirtualLink, registerVirtualDevice } from '../../src/virtual-modem/virtual-link.js';
import { until } from '../support/until.js';
import { TranscriptDevice } from './transcript-device.js';
import { decodeDeliver, STATUS_REPORT_REASON } from '../../src/sms/pdu.js';

let n = 0;
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

async function replay(file: string, options: Partial<ModemOptions> = {}) {
  const device = new TranscriptDevice(new URL(`../fixtures/transcripts/${file}`, import.meta.url));
  const path = `virtual:mock-transcript-${process.pid}-${++n}`;
  const unregister = registerVirtualDevice(path, device);
  const link = await openVirtualLink(path);
  const channel = new SerialAtChannel({
    link,
    logger: silentLogger(),
    defaultTimeoutMs: 3000,
    quietGapMs: 50,
    maxDrainMs: 300,
  });
  const modem = new Modem({ channel, name: 'm1', logger: silentLogger(), pollIntervalMs: 5, ...options });
  cleanups.push(async () => {
    modem.detach();
    await channel.close().catch(() => undefined);
    unregister();
  });
  const done = () => {
    expect(device.problems).toEqual([]);
    expect(device.remaining()).toEqual([]);
  };
  return { device, channel, modem, done };
}

describe('init replayed on the AT channel', () => {
  it.each([
    // [file, identity, storage chosen, receiveStorages]
    [
      'wavecom/multiband-900e-cpin-no-ok.txt',
      { profile: 'wavecom', manufacturer: 'WAVECOM MODEM', imsi: '111111111111111' },
      'SM',
      ['SM'],
    ],
    [
      'huawei/e1752-command-not-support.txt',
      { profile: 'huawei', model: 'E1752', iccid: '89270000000000000001', msisdn: undefined },
      'SM',
      ['SM', 'ME'],
    ],
    ['wavecom/fastrack-init.txt', { profile: 'wavecom', imsi: '510211234567890' }, 'SM', ['SM', 'ME']],
    ['huawei/e173-init.txt', { profile: 'huawei', model: 'E173' }, 'SM', undefined],
    [
      'qualcomm/m6280-device-busy.txt',
      { profile: 'qualcomm', model: 'M6280', imsi: '111111111111111', iccid: undefined },
      'SM',
      ['SM', 'ME'],
    ],
    ['zte/k3565z-init.txt', { profile: 'zte', model: 'K3565-Z', iccid: undefined }, 'SM', ['SM', 'ME']],
  ] as const)('%s', async (file, identity, storage, storages) => {
    const { modem, done } = await replay(file);
    const started = Date.now();
    expect(await modem.init()).toMatchObject(identity);
    expect(modem.homeStorage).toBe(storage);
    if (storages) expect(modem.receiveStorages()).toEqual(storages);
    expect(Date.now() - started).toBeLessThan(8000); // no command waited out its timeout: every line ended it
    done();
  });
});

describe('power-up answers replayed on the AT channel', () => {
  it('Huawei E620 just plugged in: the first command answered `+CME ERROR: SIM busy` is tried again; the ^ burst is noise', async () => {
    const { modem, channel, done } = await replay('huawei/e620-plugin-sim-busy.txt');
    const urcs: string[] = [];
    const unexpected: string[] = [];
    modem.on('urc', (u) => urcs.push(u.name));
    channel.on('unexpected', (l: string) => unexpected.push(l));
    expect(await modem.init()).toMatchObject({
      profile: 'huawei',
      model: 'E620',
      imsi: '262031111111111',
      iccid: undefined,
    });
    expect(urcs).toEqual(['stin', 'hw-boot', 'srvst', 'mode', 'simst', 'srvst']);
    expect(unexpected).toEqual([]);
    done();
  });
});

describe('boot banners replayed on the AT channel', () => {
  it('Quectel power-up: `+CME ERROR: SIM busy` as text is waited out; RDY, +CFUN, +CPIN, Call Ready during init are no reset', async () => {
    const { modem, device, done } = await replay('quectel/boot-sim-busy-call-ready.txt');
    const urcs: string[] = [];
    const reboots: string[] = [];
    modem.on('urc', (u) => urcs.push(u.name));
    modem.on('reboot', (r) => reboots.push(r.urc));
    const suspected: string[] = [];
    modem.on('reset-suspected', (r) => suspected.push(r.reason));
    expect(await modem.init()).toMatchObject({
      profile: 'quectel',
      imsi: '510100000000003',
      iccid: '89620000000000000003',
    });
    expect(device.sent.filter((c) => c === 'AT+CPIN?')).toHaveLength(5);
    expect(urcs).toEqual(['rdy', 'cfun', 'cpin', 'call-ready']);
    expect(reboots).toEqual([]);
    expect(suspected).toEqual([]); // banners during init are neither a reset nor a reason to check the settings
    done();
  });
});

describe('Neoway banners replayed on the AT channel', () => {
  it('M590: MODEM:STARTUP / +PBREADY before init are boot banners; MODEM:STARTUP after init is one reset', async () => {
    const { modem, channel, done } = await replay('neoway/m590-startup-pbready.txt');
    const urcs: string[] = [];
    const reboots: string[] = [];
    const unexpected: string[] = [];
    modem.on('urc', (u) => urcs.push(u.name));
    modem.on('reboot', (r) => reboots.push(r.urc));
    channel.on('unexpected', (l: string) => unexpected.push(l));
    expect(await modem.init()).toMatchObject({ profile: 'neoway', model: 'M590', iccid: '89620000000000000590' });
    expect(reboots).toEqual([]);
    await channel.run('AT');
    await until(() => reboots.length === 1 && urcs.length === 4, 'the restart banners', 3000);
    expect(urcs).toEqual(['modem-startup', 'pbready', 'modem-startup', 'pbready']);
    expect(reboots).toEqual(['modem-startup']);
    expect(unexpected).toEqual([]);
    done();
  });
});

describe('storages replayed on the AT channel', () => {
  it('Quectel EC25: +CMTI "ME" while SM is selected; AT+CMGR in SM answers a bare OK; read in ME, SM selected again', async () => {
    const { modem, done } = await replay('quectel/ec25-store-in-me.txt', { profile: 'quectel' });
    const indications: Array<{ storage: string; index: number }> = [];
    modem.on('sms', (s) => indications.push(s));
    await modem.init();
    await until(() => indications.length === 1, 'the +CMTI', 3000);
    expect(indications).toEqual([{ storage: 'ME', index: 0 }]);
    expect(await modem.readSms(0)).toBeUndefined(); // the bare OK of the wrong memory: never taken for the SMS
    const stored = await modem.inStorage('ME', () => modem.readSms(0));
    expect(stored).toMatchObject({ index: 0, length: 63 });
    expect(modem.storageFills().find((f) => f.storage === 'ME')).toMatchObject({ used: 1, total: 255 });
    done();
  });
});

describe('indications inside answers replayed on the AT channel', () => {
  it('Huawei E303: +CMTI: "ME",0 arriving inside the AT+CPIN? answer is an indication naming ME; the answer is intact', async () => {
    const { modem, channel, done } = await replay('huawei/e303-cmti-me-during-cpin.txt', { profile: 'huawei' });
    const indications: Array<{ storage: string; index: number }> = [];
    modem.on('sms', (s) => indications.push(s));
    await expect(channel.run('AT+CPMS="SM","SM","SM"')).resolves.toMatchObject({ lines: ['+CPMS: 0,50,0,50,0,20'] });
    await expect(channel.run('AT+CPIN?')).resolves.toMatchObject({ lines: ['+CPIN: READY'], final: 'OK' });
    expect(indications).toEqual([{ storage: 'ME', index: 0 }]);
    done();
  });
});

describe('status lines inside answers replayed on the AT channel', () => {
  it('Huawei: ^HCSQ / ^MODE / ^SRVST inside a listing (one between header and PDU) and before +CSQ are split off', async () => {
    const { modem, channel, done } = await replay('huawei/urcs-inside-answers.txt', { profile: 'huawei' });
    const urcs: string[] = [];
    const unexpected: string[] = [];
    modem.on('urc', (u) => urcs.push(u.name));
    channel.on('unexpected', (l: string) => unexpected.push(l));
    const listed = await modem.listSms();
    expect(listed).toEqual([
      { index: 0, stat: 0, length: 23, pdu: '07913366003041F5040B913366304381F900005190828105918004D4F29C0E' },
    ]);
    const decoded = decodeDeliver(listed[0]!);
    expect(decoded.ok && decoded.sms.originator).toBe('+33660334189');
    expect(await modem.signal()).toMatchObject({ rssi: 13 });
    expect(urcs).toEqual(['hcsq', 'mode', 'srvst', 'hcsq', 'hcsq']);
    expect(unexpected).toEqual([]);
    done();
  });
});

describe('USSD encodings replayed on the AT channel', () => {
  it('plain text under dcs 15 after OK; a menu string spanning twelve lines is one reply, the session ended with AT+CUSD=2', async () => {
    const { modem, done } = await replay('generic/ussd-plain-text-multiline.txt', { profile: 'generic' });
    expect(await modem.ussd('*101#')).toMatchObject({ status: 0, dcs: 15, text: 'Available Balance: R 96.45 .' });
    const menu = await modem.ussd('#100#');
    expect(menu).toMatchObject({ status: 1, dcs: 15 });
    expect(menu.text.split(/\r?\n/)).toEqual([
      'Bal:$100.00 *',
      'Exp 01 Jan 2013',
      '1. Recharge',
      '2. Balance',
      '3. My Offer',
      '4. PlusPacks',
      '5. Tones&Extras',
      '6. History',
      '7. CredMe2U',
      '8. Hlp',
      '00. Home',
      '*charges can take 48hrs',
    ]);
    expect(modem.ussdWaitingForInput).toBe(true);
    await modem.ussdCancel();
    done();
  });

  it('UCS2 hex under dcs 15 (a modem left in AT+CSCS="UCS2"): decoded to the Hungarian text, status 2 kept', async () => {
    const { modem, done } = await replay('generic/ussd-ucs2-hex-dcs15.txt', { profile: 'generic' });
    const replies: UssdReply[] = [];
    modem.on('ussd', (r) => replies.push(r));
    await until(() => replies.length === 1, 'the +CUSD', 3000);
    const reply = replies[0]!;
    expect(reply).toMatchObject({
      status: 2,
      dcs: 15,
      text: 'Havi keret: 0Ft. Feltöltött egyenleg: 7777Ft,(ebböl vàsàrlàsra is fordìthatò: 7777Ft). Dìjcsomag: Bencsò A. Uj Telekom önkiszolgàlò: *111#',
    });
    expect(reply.undecoded).toBeUndefined();
    expect(reply.noReply).toBeUndefined();
    done();
  });
});

describe('status reports replayed on the AT channel', () => {
  it('ZTE: +CDSI: "SR",50 is read in SR (`+CMGR: ,,25`, a status report, not an SMS), deleted there, SM selected again', async () => {
    const { modem, done } = await replay('zte/cdsi-sr-status-report.txt');
    const reports: Array<{ storage?: string; index?: number }> = [];
    modem.on('status-report', (r) => reports.push(r as { storage?: string; index?: number }));
    await modem.init();
    expect(modem.homeStorage).toBe('SM');
    await until(() => reports.length === 1, 'the +CDSI', 3000);
    expect(reports).toEqual([{ storage: 'SR', index: 50 }]);
    const read = await modem.inStorage('SR', async (fill) => {
      expect(fill).toEqual({ used: 1, total: 100 });
      const stored = await modem.readSms(50);
      await modem.deleteSms(50);
      return stored;
    });
    expect(read).toMatchObject({ index: 50, stat: undefined, length: 25 });
    expect(decodeDeliver(read!)).toEqual({ ok: false, reason: STATUS_REPORT_REASON });
    expect(modem.storageFills().find((f) => f.storage === 'SM')).toMatchObject({ used: 1, total: 15 });
    done();
  });
});

describe('final results and USSD orders replayed on the AT channel', () => {
  it('Motorola MODEM ERROR: 5 ends the command at once; the next command is served', async () => {
    const { channel, done } = await replay('generic/motorola-modem-error.txt');
    const err = (await channel.run('AT+CSQ').catch((e: unknown) => e)) as AtCommandError;
    expect(err).toBeInstanceOf(AtCommandError);
    expect(err.final).toBe('MODEM ERROR: 5');
    expect(err.errorCode).toBe(5);
    await expect(channel.run('AT+CSQ')).resolves.toMatchObject({ lines: ['+CSQ: 17,99'] });
    done();
  });

  it('a release notice then the reply, before the OK and after it: the reply is the answer, status 0', async () => {
    const { modem, done } = await replay('generic/ussd-release-then-reply.txt', { profile: 'generic' });
    const first = await modem.ussd('*100#');
    expect(first).toMatchObject({
      status: 0,
      text: 'Wrong order test message',
      releaseNotice: '+CUSD: 2,"Initiating Release",15',
    });
    expect(first.noReply).toBeUndefined();
    const second = await modem.ussd('*101#');
    expect(second).toMatchObject({
      status: 0,
      text: 'Notifications test',
      releaseNotice: '+CUSD: 2,"Initiating Release",15',
    });
    done();
  });
});

describe('Telit #QSS SIM status lines replayed on the AT channel', () => {
  it('#QSS: 0..3 between commands, between +CSQ and OK and inside an AT+CMGR answer are noise: answers intact, the SMS read', async () => {
    const { modem, channel, done } = await replay('telit/qss-sim-status-urcs.txt', { profile: 'generic' });
    const urcs: string[] = [];
    const unexpected: string[] = [];
    modem.on('urc', (u) => urcs.push(u.name));
    channel.on('unexpected', (l: string) => unexpected.push(l));
    expect(await modem.signal()).toMatchObject({ rssi: 13 });
    const pdu = '0791198948004544040C9119894882006200007050307040042206CF35689E9603';
    expect(await modem.readSms(1)).toEqual({ index: 1, stat: 1, length: 25, pdu });
    expect(await modem.readSms(1)).toEqual({ index: 1, stat: 1, length: 25, pdu });
    const decoded = decodeDeliver({ index: 1, stat: 1, length: 25, pdu });
    expect(decoded.ok).toBe(true);
    await until(() => urcs.length >= 6, 'six #QSS lines', 2000);
    expect(urcs).toEqual(['qss', 'qss', 'qss', 'qss', 'qss', 'qss']);
    expect(unexpected).toEqual([]);
    done();
  });
});

describe('u-blox init replayed on the AT channel', () => {
  it('SARA-G450: +UUPSDD during init is noise (logged, not an answer); identity, +CCID ICCID and SM storage as the module says', async () => {
    const { modem, channel, done } = await replay('ublox/sara-g450-init.txt');
    const unexpected: string[] = [];
    channel.on('unexpected', (l: string) => unexpected.push(l));
    expect(await modem.init()).toMatchObject({
      profile: 'generic',
      manufacturer: 'u-blox',
      model: 'SARA-G450',
      revision: '00.00',
      imei: '350000000000001',
      imsi: '204080000000001',
      iccid: '89310000000000000001',
      msisdn: undefined,
    });
    expect(modem.homeStorage).toBe('SM');
    expect(modem.storageCapacity).toEqual({ used: 0, total: 50 });
    expect(modem.cnmi).toBe('2,1,0,0,0');
    expect(unexpected).toEqual(['+UUPSDD: 0']);
    done();
  });
});
