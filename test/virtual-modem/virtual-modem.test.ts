import { afterEach, describe, expect, it } from 'vitest';
import { parse, type Deliver } from 'node-pdu';
import { buildDeliverPdus } from '../../src/virtual-modem/pdu-builder.js';
import { packUssdHex, unpackUssdHex } from '../../src/virtual-modem/septets.js';
import { boot, shutdownBooted } from './wire.js';
import { defaultActiveUntil } from '../../src/virtual-modem/ussd-script.js';

const TS = new Date(Date.UTC(2024, 0, 8, 5, 34, 56));

afterEach(async () => {
  expect(await shutdownBooted()).toEqual([]);
});

describe('echo and basic commands', () => {
  it('echoes each command (ATE0 included) until ATE0 takes effect', async () => {
    const { wire } = await boot();
    expect(await wire.cmd('AT')).toEqual({ lines: ['AT'], final: 'OK' });
    expect(await wire.cmd('ATE0')).toEqual({ lines: ['ATE0'], final: 'OK' });
    expect(await wire.cmd('AT')).toEqual({ lines: [], final: 'OK' });
    expect(wire.raw).toBe('AT\r\r\nOK\r\nATE0\r\r\nOK\r\n\r\nOK\r\n');
  });

  it('is case-insensitive and answers identity commands', async () => {
    const { wire } = await boot({ identity: { imei: '111111111111111' } });
    await wire.cmd('ATE0');
    expect((await wire.cmd('at+cgmi')).lines).toEqual(['Virtual']);
    expect((await wire.cmd('AT+CGSN')).lines).toEqual(['111111111111111']);
    expect((await wire.cmd('AT+CIMI')).lines).toEqual(['510101234567890']);
    expect((await wire.cmd('AT+CCID')).lines).toEqual(['+CCID: 89621012345678901234']);
    expect((await wire.cmd('AT+CNUM')).lines).toEqual(['+CNUM: "","+6281234567890",145']);
    expect((await wire.cmd('AT+CSQ')).lines).toEqual(['+CSQ: 20,99']);
    expect((await wire.cmd('AT+CREG?')).lines).toEqual(['+CREG: 0,1']);
    expect((await wire.cmd('AT+COPS?')).lines).toEqual(['+COPS: 0,0,"TELKOMSEL",2']);
  });

  it('unknown commands: ERROR, or COMMAND NOT SUPPORT on the huawei profile', async () => {
    const generic = await boot();
    expect((await generic.wire.cmd('AT+FOO')).final).toBe('ERROR');
    const huawei = await boot({ profile: 'huawei' });
    expect((await huawei.wire.cmd('AT+FOO')).final).toBe('COMMAND NOT SUPPORT');
    expect((await huawei.wire.cmd('AT^ICCID?')).lines).toContain('^ICCID: 89621012345678901234');
  });

  it('AT+CMEE selects plain, numeric or verbose errors', async () => {
    const { wire } = await boot({ simState: 'absent' });
    await wire.cmd('ATE0');
    expect((await wire.cmd('AT+CPIN?')).final).toBe('ERROR');
    await wire.cmd('AT+CMEE=1');
    expect((await wire.cmd('AT+CPIN?')).final).toBe('+CME ERROR: 10');
    await wire.cmd('AT+CMEE=2');
    expect((await wire.cmd('AT+CPIN?')).final).toBe('+CME ERROR: SIM not inserted');
  });

  it('runs ;-concatenated commands and stops at the first error', async () => {
    const { modem, wire } = await boot();
    await wire.cmd('ATE0');
    expect(await wire.cmd('AT+CMEE=1;+CMGF=0;+CNMI=2,1,0,0,0')).toEqual({ lines: [], final: 'OK' });
    expect(modem.cnmi()).toEqual({ mode: 2, mt: 1, bm: 0, ds: 0, bfr: 0 });
    expect(await wire.cmd('AT+CMGF?;+BOGUS;+CMEE=0')).toEqual({ lines: ['+CMGF: 0'], final: 'ERROR' });
    expect((await wire.cmd('AT+CMEE?')).lines).toEqual(['+CMEE: 1']);
    expect(modem.commandLog()).toEqual([
      'ATE0',
      'AT+CMEE=1;+CMGF=0;+CNMI=2,1,0,0,0',
      'AT+CMGF?;+BOGUS;+CMEE=0',
      'AT+CMEE?',
    ]);
  });
});

describe('SIM PIN', () => {
  it('locks SIM commands until the right PIN; wrong PIN -> +CME ERROR: 16; three wrong -> PUK', async () => {
    const { modem, wire } = await boot({ pin: '1234' });
    await wire.cmd('ATE0;+CMEE=1');
    expect((await wire.cmd('AT+CPIN?')).lines).toEqual(['+CPIN: SIM PIN']);
    expect((await wire.cmd('AT+CIMI')).final).toBe('+CME ERROR: 11');
    expect((await wire.cmd('AT+CPMS?')).final).toBe('+CMS ERROR: 311');
    expect((await wire.cmd('AT+CPIN="0000"')).final).toBe('+CME ERROR: 16');
    expect((await wire.cmd('AT+CPIN="1234"')).final).toBe('OK');
    expect((await wire.cmd('AT+CPIN?')).lines).toEqual(['+CPIN: READY']);
    expect((await wire.cmd('AT+CIMI')).final).toBe('OK');

    modem.reboot(); // the SIM asks for its PIN again after a power cycle
    await wire.cmd('ATE0;+CMEE=1');
    for (let i = 0; i < 3; i++) expect((await wire.cmd('AT+CPIN="9999"')).final).toBe('+CME ERROR: 16');
    expect((await wire.cmd('AT+CPIN?')).lines).toEqual(['+CPIN: SIM PUK']);
    expect((await wire.cmd('AT+CPIN="1234"')).final).toBe('+CME ERROR: 12');
    expect((await wire.cmd('AT+CPIN="12345678","4321"')).final).toBe('OK');
    expect(modem.sim).toBe('ready');
  });

  it('holds incoming SMS at the SMSC while the SIM is locked, delivers after unlock', async () => {
    const { modem, wire } = await boot({ pin: '1234' });
    await wire.cmd('ATE0');
    expect(modem.injectSms({ from: '858', text: 'held', timestamp: TS })).toMatchObject({ indexes: [], held: 1 });
    await wire.cmd('AT+CPIN="1234"');
    expect(modem.storedMessages()).toHaveLength(1);
  });
});

describe('SMS storage and indications', () => {
  it('CPMS reports used/total; only SM exists', async () => {
    const { modem, wire } = await boot({ storageCapacity: 20 });
    await wire.cmd('ATE0');
    modem.injectSms({ from: '858', text: 'one', timestamp: TS });
    modem.injectSms({ from: '858', text: 'two', timestamp: TS });
    expect((await wire.cmd('AT+CPMS=?')).lines).toEqual(['+CPMS: ("SM"),("SM"),("SM")']);
    expect((await wire.cmd('AT+CPMS?')).lines).toEqual(['+CPMS: "SM",2,20,"SM",2,20,"SM",2,20']);
    expect((await wire.cmd('AT+CPMS="SM","SM","SM"')).lines).toEqual(['+CPMS: 2,20,2,20,2,20']);
    expect((await wire.cmd('AT+CPMS="ME","ME","ME"')).final).toBe('+CMS ERROR: 302');
  });

  it('CNMI=? advertises ranges like a real modem and CNMI= is validated against them', async () => {
    const { modem, wire } = await boot();
    await wire.cmd('ATE0');
    expect((await wire.cmd('AT+CNMI=?')).lines).toEqual(['+CNMI: (0-2),(0-3),(0,2),(0-2),(0,1)']);
    expect((await wire.cmd('AT+CNMI=2,1,1,0,0')).final).toBe('+CMS ERROR: 303');
    expect((await wire.cmd('AT+CNMI=2,1,0,2,0')).final).toBe('OK');
    expect((await wire.cmd('AT+CNMI?')).lines).toEqual(['+CNMI: 2,1,0,2,0']);
    expect(modem.cnmi().ds).toBe(2);
    const simcom = await boot({ profile: 'simcom' });
    expect((await simcom.wire.cmd('AT+CNMI=?')).lines).toContain('+CNMI: (0-3),(0-3),(0,2),(0,1),(0,1)');
    expect((await simcom.wire.cmd('AT+CNMI=2,1,0,2')).final).toBe('+CMS ERROR: 303');
  });

  it('injectSms -> +CMTI -> AT+CMGR returns the DELIVER PDU, which decodes; the message becomes read', async () => {
    const { modem, wire } = await boot();
    await wire.cmd('ATE0;+CNMI=2,1,0,0,0');
    const text = 'Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774';
    const { indexes } = modem.injectSms({ from: '858', text, timestamp: TS, tzQuarterHours: 28, smsc: '+6281100000' });
    expect(indexes).toEqual([1]);
    expect(await wire.next()).toBe('+CMTI: "SM",1');
    const [expected] = buildDeliverPdus({
      originator: '858',
      text,
      timestamp: TS,
      tzQuarterHours: 28,
      smsc: '+6281100000',
    });
    const read = await wire.cmd('AT+CMGR=1');
    expect(read).toEqual({ lines: [`+CMGR: 0,,${expected?.tpduLength}`, expected?.pdu], final: 'OK' });
    const decoded = parse(read.lines[1] ?? '') as Deliver;
    expect([decoded.address.phone, decoded.data.getText()]).toEqual(['858', text]);
    expect((await wire.cmd('AT+CMGR=1')).lines[0]).toBe(`+CMGR: 1,,${expected?.tpduLength}`);
    expect(modem.storedMessages()).toEqual([
      { index: 1, stat: 1, pdu: expected?.pdu, tpduLength: expected?.tpduLength },
    ]);
  });

  it('no indication without CNMI (power-up default 0,0,0,0,0), but the message is stored', async () => {
    const { modem, wire } = await boot();
    await wire.cmd('ATE0');
    modem.injectSms({ from: '858', text: 'quiet', timestamp: TS });
    expect((await wire.cmd('AT')).lines).toEqual([]);
    expect(modem.storedMessages()).toHaveLength(1);
  });

  it('multipart: one +CMTI per part, each part with the same UDH reference and total', async () => {
    const { modem, wire } = await boot();
    await wire.cmd('ATE0;+CNMI=2,1,0,0,0');
    const { indexes, pdus } = modem.injectSms({
      from: '858',
      text: 'x'.repeat(400),
      timestamp: TS,
      concatRef: 0x99,
      order: [2, 0, 1],
    });
    expect(indexes).toEqual([1, 2, 3]);
    expect(await wire.until((l) => l === '+CMTI: "SM",3')).toEqual(['+CMTI: "SM",1', '+CMTI: "SM",2', '+CMTI: "SM",3']);
    const udhs = pdus.map((p) => /050003([0-9A-F]{6})/.exec(p.pdu)?.[1]);
    expect(udhs).toEqual(['990303', '990301', '990302']);
    expect(modem.storedMessages().map((m) => m.pdu)).toEqual(pdus.map((p) => p.pdu));
  });

  it('duplicateParts and reportTwice imitate SMSC retransmissions and double indications', async () => {
    const { modem, wire } = await boot({ reportTwice: true });
    await wire.cmd('ATE0;+CNMI=2,1,0,0,0');
    expect(
      modem.injectSms({ from: '858', text: 'y'.repeat(200), timestamp: TS, duplicateParts: true }).indexes,
    ).toEqual([1, 2, 3, 4]);
    const lines = await wire.until((l) => l === '+CMTI: "SM",4');
    expect(lines.filter((l) => l === '+CMTI: "SM",4')).toHaveLength(1);
    expect(await wire.next()).toBe('+CMTI: "SM",4');
    expect(lines).toHaveLength(7);
  });

  it('CMGL lists in PDU mode (stat 4 all, 0 unread), CMGD deletes one or all, CMGR errors', async () => {
    const { modem, wire } = await boot();
    await wire.cmd('ATE0;+CMEE=1');
    const a = modem.injectSms({ from: '858', text: 'first', timestamp: TS }).pdus[0];
    const b = modem.injectSms({ from: '168', text: 'second', timestamp: TS }).pdus[0];
    await wire.cmd('AT+CMGR=1');
    expect((await wire.cmd('AT+CMGL=0')).lines).toEqual([`+CMGL: 2,0,,${b?.tpduLength}`, b?.pdu]);
    expect((await wire.cmd('AT+CMGL=4')).lines).toEqual([
      `+CMGL: 1,1,,${a?.tpduLength}`,
      a?.pdu,
      `+CMGL: 2,1,,${b?.tpduLength}`,
      b?.pdu,
    ]);
    expect((await wire.cmd('AT+CMGL="ALL"')).final).toBe('+CMS ERROR: 304');
    expect((await wire.cmd('AT+CMGD=1')).final).toBe('OK');
    expect((await wire.cmd('AT+CMGR=1')).lines).toEqual([]); // empty slot: OK alone
    expect((await wire.cmd('AT+CMGR=31')).final).toBe('+CMS ERROR: 321');
    expect((await wire.cmd('AT+CMGR=0')).final).toBe('+CMS ERROR: 321');
    modem.injectSms({ from: '858', text: 'third', timestamp: TS });
    expect((await wire.cmd('AT+CMGD=1,4')).final).toBe('OK');
    expect(modem.storedMessages()).toEqual([]);
    expect((await wire.cmd('AT+CMGF=1')).final).toBe('OK');
    expect((await wire.cmd('AT+CMGL=4')).final).toBe('+CMS ERROR: 302'); // text mode is not simulated on purpose
  });

  it('indexBase 0 numbers storage from 0', async () => {
    const { modem, wire } = await boot({ profile: 'huawei', indexBase: 0 });
    await wire.cmd('ATE0;+CNMI=2,1,0,0,0');
    expect(modem.injectSms({ from: '858', text: 'zero', timestamp: TS }).indexes).toEqual([0]);
    expect(await wire.next()).toBe('+CMTI: "SM",0');
    expect((await wire.cmd('AT+CMGR=0')).lines[0]).toMatch(/^\+CMGR: 0,,\d+$/);
  });

  it('+CMT in message service 0 (the default) is acknowledged by the modem itself: AT+CNMA answers 340', async () => {
    const { modem, wire } = await boot();
    await wire.cmd('ATE0;+CNMI=2,2,0,0,0');
    const { pdus } = modem.injectSms({ from: '858', text: 'direct', timestamp: TS });
    expect(await wire.next()).toBe(`+CMT: ,${pdus[0]?.tpduLength}`);
    expect(await wire.next()).toBe(pdus[0]?.pdu);
    expect((await wire.cmd('AT+CNMA')).final).toBe('+CMS ERROR: 340');
    expect((await wire.cmd('AT+CSMS?')).lines).toEqual(['+CSMS: 0,1,1,1']);
  });

  it('+CMT routing (mt=2) needs AT+CNMA; a second CNMA answers +CMS ERROR: 340', async () => {
    const { modem, wire } = await boot();
    await wire.cmd('ATE0;+CSMS=1;+CNMI=2,2,0,0,0');
    const { indexes, pdus } = modem.injectSms({ from: '858', text: 'direct', timestamp: TS });
    expect(indexes).toEqual([]);
    expect(await wire.next()).toBe(`+CMT: ,${pdus[0]?.tpduLength}`);
    expect(await wire.next()).toBe(pdus[0]?.pdu);
    expect((await wire.cmd('AT+CNMA')).final).toBe('OK');
    expect((await wire.cmd('AT+CNMA')).final).toBe('+CMS ERROR: 340');
    expect(modem.storedMessages()).toEqual([]);
    // delivery 'store' behaves like a class-2 message: stored and announced even with mt=2
    expect(modem.injectSms({ from: '858', text: 'class 2', timestamp: TS, delivery: 'store' }).indexes).toEqual([1]);
    expect(await wire.next()).toBe('+CMTI: "SM",1');
  });

  it('full storage: the SMS is not stored and counted; huawei reports ^SMMEMFULL', async () => {
    const { modem, wire } = await boot({ profile: 'huawei', storageCapacity: 3 });
    await wire.cmd('ATE0;+CNMI=2,1,0,0,0');
    modem.fillStorage();
    expect((await wire.cmd('AT+CPMS?')).lines).toEqual(['+CPMS: "SM",3,3,"SM",3,3,"SM",3,3']);
    expect(modem.injectSms({ from: '858', text: 'lost?', timestamp: TS }).indexes).toEqual([]);
    expect(modem.droppedForFullStorage).toBe(1);
    expect(await wire.next()).toBe('^SMMEMFULL: "SM"');
    const generic = await boot({ storageCapacity: 1 });
    await generic.wire.cmd('ATE0;+CNMI=2,1,0,0,0');
    generic.modem.fillStorage();
    generic.modem.injectSms({ from: '858', text: 'lost?', timestamp: TS });
    expect(await generic.wire.cmd('AT')).toEqual({ lines: [], final: 'OK' });
    expect(generic.modem.droppedForFullStorage).toBe(1);
  });

  it('full storage: the SMSC keeps the rejected SMS and delivers it once AT+CMGD frees a slot', async () => {
    const { modem, wire } = await boot({ storageCapacity: 1 });
    await wire.cmd('ATE0;+CNMI=2,1,0,0,0');
    modem.injectSms({ from: '858', text: 'first', timestamp: TS });
    expect(await wire.next()).toBe('+CMTI: "SM",1');
    expect(modem.injectSms({ from: '858', text: 'second', timestamp: TS }).indexes).toEqual([]);
    expect(modem.storedMessages()).toHaveLength(1);
    expect((await wire.cmd('AT+CMGD=1')).final).toBe('OK');
    expect(await wire.next()).toBe('+CMTI: "SM",1');
    expect(modem.storedMessages()).toHaveLength(1);
    expect(modem.storedMessages()[0]!.pdu).not.toBe('');
  });
});

describe('USSD', () => {
  it('generic: multi-step transfer session, +CUSD after OK; unknown code -> +CUSD: 4', async () => {
    const { wire } = await boot();
    await wire.cmd('ATE0');
    expect((await wire.cmd('AT+CUSD=1,"*858*08123456789*5000#",15')).lines).toEqual([]);
    expect(await wire.next()).toBe('+CUSD: 1,"Kirim pulsa Rp5000 ke 08123456789? 1.Ya 2.Tidak",15');
    await wire.cmd('AT+CUSD=1,"1",15');
    expect(await wire.next()).toMatch(/^\+CUSD: 0,"Transfer berhasil\. .*Sisa pulsa Rp19025\.",15$/);
    await wire.cmd('AT+CUSD=1,"*999#",15');
    expect(await wire.next()).toBe('+CUSD: 4');
  });

  it('AT+CUSD=2 ends the session; the reply then starts nothing', async () => {
    const { wire } = await boot();
    await wire.cmd('ATE0');
    await wire.cmd('AT+CUSD=1,"*888#",15');
    expect(await wire.until((l) => l.endsWith('2.Info Kartu",15'))).toEqual([
      `+CUSD: 1,"Sisa pulsa Rp.24025.Aktif sd ${defaultActiveUntil()}.`,
      '1.Beli Paket',
      '2.Info Kartu",15',
    ]);
    expect((await wire.cmd('AT+CUSD=2')).final).toBe('OK');
    await wire.cmd('AT+CUSD=1,"1",15');
    expect(await wire.next()).toBe('+CUSD: 4');
  });

  it('huawei: code and replies as packed GSM7 hex, +CUSD before OK', async () => {
    const { wire } = await boot({ profile: 'huawei' });
    await wire.cmd('ATE0');
    const first = await wire.cmd(`AT+CUSD=1,"${packUssdHex('*858*08123456789*5000#')}",15`);
    const m = /^\+CUSD: 1,"([0-9A-F]+)",15$/.exec(first.lines[0] ?? '');
    expect(unpackUssdHex(m?.[1] ?? '')).toBe('Kirim pulsa Rp5000 ke 08123456789? 1.Ya 2.Tidak');
    const second = await wire.cmd(`AT+CUSD=1,"${packUssdHex('2')}",15`);
    expect(unpackUssdHex(/"([0-9A-F]+)"/.exec(second.lines[0] ?? '')?.[1] ?? '')).toBe('Transfer pulsa dibatalkan.');
  });

  it('simcom: +CUSD before OK; CSCS="UCS2" makes replies UCS2 hex', async () => {
    const { wire } = await boot({ profile: 'simcom' });
    await wire.cmd('ATE0;+CSCS="UCS2"');
    const r = await wire.cmd('AT+CUSD=1,"002A0038003500380023",15'); // *858# in UCS2
    expect(r.lines[0]).toMatch(/^\+CUSD: 2,"004D006100610066.*",72$/); // "Maaf..."
  });
});

describe('AT+CMGS', () => {
  const submit = '0001000D91261832547698F00000185469D0393516A5D02A731A04C17031D90C5483C160'; // TRANSFERPULSA 08123 5000

  it('prompts "> ", takes the PDU and Ctrl-Z, answers +CMGS: <mr> and records the message', async () => {
    const { modem, wire } = await boot();
    await wire.cmd('ATE0');
    await wire.link.write(`AT+CMGS=${submit.length / 2 - 1}\r`);
    expect(await wire.next()).toBe('> ');
    await wire.link.write(`${submit}\x1a`);
    expect(await wire.until((l) => l === 'OK')).toEqual(['+CMGS: 1', 'OK']);
    expect(modem.sentMessages()).toEqual([
      {
        mr: 1,
        pdu: submit,
        tpduLength: submit.length / 2 - 1,
        destination: '+6281234567890',
        text: 'TRANSFERPULSA 08123 5000',
      },
    ]);
  });

  it('a wrong length answers +CMS ERROR: 304; ESC cancels', async () => {
    const { modem, wire } = await boot();
    await wire.cmd('ATE0');
    await wire.link.write(`AT+CMGS=${submit.length / 2}\r`);
    await wire.next();
    await wire.link.write(`${submit}\x1a`);
    expect(await wire.next()).toBe('+CMS ERROR: 304');
    await wire.link.write('AT+CMGS=20\r');
    await wire.next();
    await wire.link.write('0011\x1b');
    expect(await wire.next()).toBe('OK');
    expect(modem.sentMessages()).toEqual([]);
  });
});
