/**
 * Modem behaviour from answer tables (one row per command), for the branches the transcripts do not walk.
 */
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AtCommandError, BridgeError, PortError } from '../../src/errors.js';
import { createLogger, silentLogger } from '../../src/log.js';
import { Modem, type ModemOptions, type UssdReply } from '../../src/modem/modem.js';
import { FakeChannel, nextTurn, type TableRow } from './fake-channel.js';

afterEach(() => {
  vi.useRealTimers();
});

/** A healthy modem up to the SIM; tests put their own rows first. */
function baseRows(maker = 'Generic', model = 'GSM MODEM'): TableRow[] {
  return [
    ['ATE0', ['OK']],
    ['AT+CMEE=1', ['OK']],
    ['AT+CGMI', [maker, 'OK']],
    ['AT+CGMM', [model, 'OK']],
    ['AT+CGMR', ['1.0', 'OK']],
    ['AT+CGSN', ['356938035643809', 'OK']],
    ['AT+CPIN?', ['+CPIN: READY', 'OK']],
    ['AT+CIMI', ['510101234567890', 'OK']],
    ['AT+CCID', ['89621012345678901234', 'OK']],
    ['AT+CNUM', ['OK']],
    ['AT+CMGF=0', ['OK']],
    ['AT+CPMS=?', ['+CPMS: ("SM","ME","MT"),("SM","ME","MT"),("SM","ME","MT")', 'OK']],
    [/^AT\+CPMS="SM"/, ['+CPMS: 0,30,0,30,0,30', 'OK']],
    ['AT+CNMI=?', ['+CNMI: (0-3),(0-3),(0,2),(0-2),(0,1)', 'OK']],
    [/^AT\+CNMI=/, ['OK']],
  ];
}

function setup(rows: TableRow[], options: Partial<ModemOptions> = {}): { modem: Modem; fake: FakeChannel } {
  const fake = FakeChannel.fromTable(rows);
  const modem = new Modem({ channel: fake, name: 'm1', logger: silentLogger(), pollIntervalMs: 1, ...options });
  return { modem, fake };
}

async function initError(modem: Modem): Promise<BridgeError> {
  const err = await modem.init().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(BridgeError);
  return err as BridgeError;
}

describe('init', () => {
  it('says the modem is silent when ATE0 gets no answer', async () => {
    const { modem } = setup([['ATE0', []]]);
    const err = await initError(modem);
    expect(err.code).toBe('MODEM_SILENT');
    expect(err.message).toBe('m1: no answer to ATE0');
  });

  it('applies the configured profile without detecting', async () => {
    const { modem, fake } = setup(baseRows('huawei', 'E173'), { profile: 'quectel' });
    expect((await modem.init()).profile).toBe('quectel');
    expect(fake.sent).not.toContain('AT^CURC=0');
  });

  it('logs and survives a failing profile init command', async () => {
    const { modem, fake } = setup([['AT^CURC=0', ['COMMAND NOT SUPPORT']], ...baseRows('huawei', 'E303')]);
    expect((await modem.init()).profile).toBe('huawei');
    expect(fake.sent).toContain('AT^CURC=0');
  });

  it('fails SMS readiness after the timeout instead of hanging', async () => {
    vi.useFakeTimers();
    const { modem } = setup([['AT+CMGF=0', ['ERROR']], ...baseRows('SIMCOM_Ltd', 'SIMCOM_SIM800C')], {
      pollIntervalMs: 1000,
      smsReadyTimeoutMs: 10_000,
    });
    const result = modem.init().catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(11_000);
    const err = (await result) as BridgeError;
    expect(err.code).toBe('SIM_NOT_READY');
    expect(err.message).toBe('m1: SMS service not ready after 10 s (AT+CMGF=0 answered ERROR)');
  });

  it('SIMCom SIM7600 / A76xx: the SMS DONE banner (not SMS Ready) ends the wait for the SMS service at once', async () => {
    let refusals = 1;
    const { modem, fake } = setup(
      [
        ['AT+CMGF=0', () => (refusals-- > 0 ? ['ERROR', '! SMS DONE'] : ['OK'])],
        ...baseRows('SIMCOM INCORPORATED', 'A7670E-LNXY-UBL'),
      ],
      { pollIntervalMs: 60_000 },
    );
    const started = Date.now();
    expect((await modem.init()).profile).toBe('simcom');
    expect(Date.now() - started).toBeLessThan(5000); // not the one-minute poll interval
    expect(fake.sent.filter((c) => c === 'AT+CMGF=0')).toHaveLength(2);
  });

  it('uses a named storage when configured and supported', async () => {
    const { modem, fake } = setup([[/^AT\+CPMS="ME"/, ['+CPMS: 0,255,0,255,0,255', 'OK']], ...baseRows()], {
      storage: 'ME',
    });
    await modem.init();
    expect(fake.sent).toContain('AT+CPMS="ME","ME","ME"');
    expect(modem.storage).toBe('ME');
    expect(modem.storageCapacity).toEqual({ used: 0, total: 255 });
  });
});

describe('SIM states', () => {
  function pinRows(pinAnswer: string[]): TableRow[] {
    let unlocked = false;
    return [
      ['AT+CPIN?', () => (unlocked ? ['+CPIN: READY', 'OK'] : ['+CPIN: SIM PIN', 'OK'])],
      [
        /^AT\+CPIN="/,
        () => {
          if (pinAnswer[0] === 'OK') unlocked = true;
          return pinAnswer;
        },
      ],
      ...baseRows(),
    ];
  }

  it('enters the configured PIN and never logs it', async () => {
    const logged: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        logged.push(chunk.toString());
        cb();
      },
    });
    const fake = FakeChannel.fromTable(pinRows(['OK']));
    const modem = new Modem({
      channel: fake,
      name: 'm1',
      logger: createLogger({ level: 'trace', pretty: false, destination: sink }),
      pin: '4821',
      pollIntervalMs: 1,
    });
    await modem.init();
    expect(fake.sent.filter((c) => c.startsWith('AT+CPIN='))).toEqual(['AT+CPIN="4821"']);
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.join('')).not.toContain('4821');
  });

  it('asks for a PIN when none is configured, without guessing one', async () => {
    const { modem, fake } = setup(pinRows(['OK']));
    const err = await initError(modem);
    expect(err.code).toBe('SIM_NOT_READY');
    expect(err.message).toBe('m1: SIM needs a PIN: set modems[].pin');
    expect(fake.sent.some((c) => c.startsWith('AT+CPIN='))).toBe(false);
  });

  it('does not retry a rejected PIN on the next init', async () => {
    const { modem, fake } = setup(pinRows(['+CME ERROR: 16']), { pin: '0000' });
    const first = await initError(modem);
    expect(first.message).toMatch(/rejected the configured PIN/);
    expect(first.message).not.toContain('0000');
    const second = await initError(modem);
    expect(second.code).toBe('SIM_NOT_READY');
    expect(fake.sent.filter((c) => c.startsWith('AT+CPIN='))).toHaveLength(1);
  });

  it.each([
    [['+CME ERROR: 10'], /no SIM card/],
    [['+CPIN: SIM PUK', 'OK'], /PUK-locked/],
    [['+CME ERROR: 13'], /SIM failure: AT\+CPIN\? answered \+CME ERROR: 13 \(SIM failure\)/],
    [['+CPIN: PH-NET PIN', 'OK'], /SIM not ready: \+CPIN: PH-NET PIN/],
  ])('%j -> SIM_NOT_READY %s', async (answer, message) => {
    const { modem } = setup([['AT+CPIN?', answer], ...baseRows()], { pin: '1234' });
    const err = await initError(modem);
    expect(err.code).toBe('SIM_NOT_READY');
    expect(err.message).toMatch(message);
    expect(err.hint ?? '').not.toContain('1234');
  });
});

describe('CNMI negotiation', () => {
  it('falls back to the profile settings when the negotiated one is refused', async () => {
    const { modem, fake } = setup([
      ['AT+CNMI=?', ['+CNMI: (0-2),(0-3),(0-2),(0-2),(0-1)', 'OK']],
      ['AT+CNMI=2,1,0,0,0', ['+CME ERROR: 3']],
      ['AT+CNMI=2,1,2,1,0', ['+CME ERROR: 3']],
      ['AT+CNMI=2,1,2,2,0', ['OK']],
      ...baseRows('QUALCOMM INCORPORATED', '0'),
    ]);
    await modem.init();
    expect(modem.cnmi).toBe('2,1,2,2,0');
    expect(fake.sent.filter((c) => c.startsWith('AT+CNMI='))).toEqual([
      'AT+CNMI=?',
      'AT+CNMI=2,1,0,0,0',
      'AT+CNMI=2,1,2,1,0',
      'AT+CNMI=2,1,2,2,0',
    ]);
  });

  it('uses generic fallbacks when AT+CNMI=? is not answered', async () => {
    const { modem, fake } = setup([
      ['AT+CNMI=?', ['ERROR']],
      ['AT+CNMI=2,1,0,0,0', ['ERROR']],
      ['AT+CNMI=1,1,0,0,0', ['OK']],
      ...baseRows(),
    ]);
    await modem.init();
    expect(modem.cnmi).toBe('1,1,0,0,0');
    expect(fake.sent.filter((c) => c.startsWith('AT+CNMI=')).slice(1)).toEqual([
      'AT+CNMI=2,1,0,0,0',
      'AT+CNMI=1,1,0,0,0',
    ]);
  });

  it('finishes init for polling when no setting is accepted', async () => {
    const { modem } = setup([[/^AT\+CNMI=\d/, ['ERROR']], ...baseRows()]);
    await modem.init();
    expect(modem.cnmi).toBeUndefined();
  });

  it('asks for direct delivery with mt 2 once the modem holds +CMT for our AT+CNMA (AT+CSMS=1)', async () => {
    const { modem, fake } = setup([['AT+CSMS=1', ['+CSMS: 1,1,1', 'OK']], ...baseRows()], { delivery: 'direct' });
    await modem.init();
    expect(modem.cnmi).toBe('2,2,0,0,0');
    expect(fake.sent).toContain('AT+CSMS=1');
  });

  it('falls back to store mode (+CMTI) when the modem refuses AT+CSMS=1: it would acknowledge +CMT itself', async () => {
    for (const answer of [['ERROR'], ['+CSMS: 0,1,1', 'OK']]) {
      const { modem } = setup([['AT+CSMS=1', answer], ...baseRows()], { delivery: 'direct' });
      await modem.init();
      expect(modem.cnmi).toBe('2,1,0,0,0');
    }
  });
});

describe('SIM identity', () => {
  it('retries AT+CIMI while the SIM is busy after boot', async () => {
    let calls = 0;
    const rows: TableRow[] = [
      ['AT+CIMI', () => (++calls < 3 ? ['+CME ERROR: 14'] : ['510101234567890', 'OK'])],
      ...baseRows(),
    ];
    const { modem } = setup(rows);
    const id = await modem.init();
    expect(id.imsi).toBe('510101234567890');
    expect(calls).toBe(3);
  });

  it('an IMSI that cannot be read is SIM_NOT_READY, not a silent change of the SIM identity used in record ids', async () => {
    const { modem } = setup([['AT+CIMI', ['ERROR']], ...baseRows()]);
    const err = await initError(modem);
    expect(err.code).toBe('SIM_NOT_READY');
    expect(err.message).toContain('IMSI');
  });
});

describe('status', () => {
  const statusRows: TableRow[] = [
    ['AT+CPIN?', ['+CPIN: READY', 'OK']],
    ['AT+CSQ', ['+CSQ: 14,99', 'OK']],
    ['AT+CREG?', ['+CREG: 0,1', 'OK']],
    ['AT+COPS?', ['ERROR']],
    ['AT+CPMS?', ['+CPMS: "SM",3,30,"SM",3,30,"SM",3,30', 'OK']],
    ['AT+CSCA?', ['+CSCA: "+6281100000",145', 'OK']],
  ];

  it('collects every item and notes the ones that failed', async () => {
    const { modem } = setup(statusRows);
    const info = await modem.info();
    expect(info).toMatchObject({
      name: 'm1',
      profile: 'generic',
      simState: 'READY',
      signal: { rssi: 14, dbm: -85, bars: 3 },
      registration: { stat: 1, text: 'registered home', registered: true },
      operator: undefined,
      storage: [
        { memory: 'SM', used: 3, total: 30 },
        { memory: 'SM', used: 3, total: 30 },
        { memory: 'SM', used: 3, total: 30 },
      ],
      smsc: '+6281100000',
    });
    expect(info.errors).toEqual(['operator: ERROR']);
  });

  it('throws only when the port is gone', async () => {
    const { modem, fake } = setup(statusRows);
    fake.disconnect();
    await expect(modem.info()).rejects.toBeInstanceOf(PortError);
  });

  it('reports LTE registration when CS is not registered', async () => {
    const { modem } = setup([
      ['AT+CREG?', ['+CREG: 0,0', 'OK']],
      ['AT+CEREG?', ['+CEREG: 0,1', 'OK']],
    ]);
    expect(await modem.registration()).toMatchObject({ source: 'CEREG', registered: true });
  });
});

describe('indications', () => {
  it('Neoway: the duplicate +CMTI is collapsed, a new slot is not, and the window expires', async () => {
    vi.useFakeTimers();
    const { modem, fake } = setup([], { profile: 'neoway', duplicateWindowMs: 5000 });
    const seen: number[] = [];
    modem.on('sms', (s) => seen.push(s.index));
    fake.emitLines('+CMTI: "SM",1', '+CMTI: "SM",1', '+CMTI: "SM",2', '+CMTI: "SM",2');
    expect(seen).toEqual([1, 2]);
    vi.advanceTimersByTime(6000);
    fake.emitLines('+CMTI: "SM",1');
    expect(seen).toEqual([1, 2, 1]);
  });

  it('Neoway: deleting a slot forgets it, so a new SMS in the same slot is reported', async () => {
    const { modem, fake } = setup([['AT+CMGD=1', ['OK']]], { profile: 'neoway' });
    const seen: number[] = [];
    modem.on('sms', (s) => seen.push(s.index));
    fake.emitLines('+CMTI: "SM",1', '+CMTI: "SM",1');
    await modem.deleteSms(1);
    fake.emitLines('+CMTI: "SM",1');
    expect(seen).toEqual([1, 1]);
  });

  it('other profiles report every +CMTI', () => {
    const { modem, fake } = setup([]);
    const seen: number[] = [];
    modem.on('sms', (s) => seen.push(s.index));
    fake.emitLines('+CMTI: "SM",0', '+CMTI: "SM",0');
    expect(seen).toEqual([0, 0]);
  });

  it('direct delivery, status reports and storage-full become events', () => {
    const { modem, fake } = setup([], { profile: 'huawei' });
    const events: unknown[] = [];
    modem.on('sms-direct', (e) => events.push(['sms-direct', e]));
    modem.on('status-report', (e) => events.push(['status-report', e]));
    modem.on('storage-full', (e) => events.push(['storage-full', e]));
    fake.emitLines(
      '+CMT: ,23',
      '0791261801000004038158f80000811080015100820c',
      '+CDS: 25',
      '07912618010000060C',
      '+CDSI: "SR",4',
      '^SMMEMFULL: "SM"',
    );
    expect(events).toEqual([
      ['sms-direct', { pdu: '0791261801000004038158F80000811080015100820C', length: 23 }],
      ['status-report', { pdu: '07912618010000060C', length: 25 }],
      ['status-report', { storage: 'SR', index: 4 }],
      ['storage-full', { urc: 'smmemfull', storage: 'SM' }],
    ]);
  });

  it('SIM800: SMS Ready after init is a reboot', async () => {
    const { modem, fake } = setup(baseRows('SIMCOM_Ltd', 'SIMCOM_SIM800L'));
    const reboots: string[] = [];
    modem.on('reboot', (r) => reboots.push(r.urc));
    fake.emitLines('SMS Ready'); // before init: a boot banner
    await modem.init();
    fake.emitLines('Call Ready');
    expect(reboots).toEqual([]);
    fake.emitLines('SMS Ready');
    expect(reboots).toEqual(['sms-ready']);
  });
});

describe('direct delivery acknowledgement', () => {
  it.each([
    [[['AT+CNMA', ['OK']]], ['AT+CNMA']],
    [[['AT+CNMA', ['+CMS ERROR: 340']]], ['AT+CNMA']],
    [
      [
        ['AT+CNMA', ['ERROR']],
        ['AT+CNMA=0', ['OK']],
      ],
      ['AT+CNMA', 'AT+CNMA=0'],
    ],
  ] as Array<[TableRow[], string[]]>)('%j', async (rows, sent) => {
    const { modem, fake } = setup(rows);
    await modem.acknowledgeDirect();
    expect(fake.sent).toEqual(sent);
  });

  it('fails when neither form is accepted', async () => {
    const { modem } = setup([['AT+CNMA=0', ['+CMS ERROR: 500']]]);
    await expect(modem.acknowledgeDirect()).rejects.toMatchObject({ final: '+CMS ERROR: 500' });
  });
});

describe('Huawei final results', () => {
  it('COMMAND NOT SUPPORT fails the command at once', async () => {
    const { modem } = setup([['AT+CMGR=3', ['COMMAND NOT SUPPORT']]], { profile: 'huawei' });
    await expect(modem.readSms(3)).rejects.toMatchObject({ code: 'AT_ERROR', final: 'COMMAND NOT SUPPORT' });
  });
});

describe('USSD', () => {
  it.each([
    [
      'UCS2 hex with dcs 72, after the OK',
      ['OK', '! +CUSD: 0,"0053006900730061002000700075006C00730061002000520070002E0031003000300030",72'],
      { status: 0, text: 'Sisa pulsa Rp.1000', dcs: 72 },
    ],
    [
      'ASCII hex with dcs 0 (menu with CR/LF)',
      ['+CUSD: 1,"4D656E753A0D0A312E43656B2050756C73610D0A322E50616B6574",0', 'OK'],
      { status: 1, text: 'Menu:\r\n1.Cek Pulsa\r\n2.Paket', dcs: 0 },
    ],
    [
      'not supported by the network',
      ['OK', '! +CUSD: 4'],
      { status: 4, text: 'USSD not supported by the network or the SIM (+CUSD: 4)' },
    ],
    [
      'not supported by the modem (+CME ERROR: 132)',
      ['+CME ERROR: 132'],
      {
        status: 4,
        text: 'USSD not supported by the network or the SIM: +CME ERROR: 132 (service option not supported)',
      },
    ],
    [
      'string with raw line breaks spilling into the response',
      ['+CUSD: 1,"Menu:', '1.Cek Pulsa', '2.Paket",15', 'OK'],
      { status: 1, text: 'Menu:\n1.Cek Pulsa\n2.Paket', dcs: 15 },
    ],
    [
      'string with raw line breaks after the OK',
      ['OK', '! +CUSD: 0,"Terima kasih.', '! Sisa pulsa Rp 5000",15'],
      { status: 0, text: 'Terima kasih.\nSisa pulsa Rp 5000', dcs: 15 },
    ],
  ] as Array<[string, string[], Partial<UssdReply>]>)('%s', async (_label, answer, expected) => {
    const { modem } = setup([
      [/^AT\+CUSD=1,/, answer],
      ['AT+CSCS="IRA"', ['OK']],
    ]);
    expect(await modem.ussd('*888#')).toMatchObject(expected);
  });

  it('Wavecom: switches to the GSM charset first', async () => {
    const { modem, fake } = setup(
      [
        ['AT+CSCS="GSM"', ['OK']],
        ['AT+CUSD=1,"*888#",15', ['OK', '! +CUSD: 0,"OK",15']],
      ],
      { profile: 'wavecom' },
    );
    await modem.ussd('*888#');
    expect(fake.sent).toEqual(['AT+CSCS="GSM"', 'AT+CUSD=1,"*888#",15']);
  });

  it('one request at a time, and an open session must be answered or cancelled', async () => {
    const { modem, fake } = setup([
      ['AT+CUSD=1,"*858#",15', ['+CUSD: 1,"1.Transfer pulsa 2.Minta pulsa",15', 'OK']],
      ['AT+CUSD=2', ['OK']],
      ['AT+CSCS="IRA"', ['OK']],
    ]);
    const first = modem.ussd('*858#');
    await expect(modem.ussd('*888#')).rejects.toThrow('m1: a USSD request is already in progress');
    expect((await first).status).toBe(1);
    await expect(modem.ussd('*888#')).rejects.toThrow('m1: a USSD session is waiting for input');
    await modem.ussdCancel();
    expect(fake.sent).toContain('AT+CUSD=2');
    await expect(modem.ussdReply('1')).rejects.toThrow('m1: no USSD session is waiting for input');
  });

  it('times out with a clear error and ends the session', async () => {
    vi.useFakeTimers();
    const { modem, fake } = setup([
      ['AT+CUSD=1,"*888#",15', ['OK']],
      ['AT+CUSD=2', ['OK']],
      ['AT+CSCS="IRA"', ['OK']],
    ]);
    const result = modem.ussd('*888#', { timeoutMs: 20_000 }).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(20_000);
    const err = (await result) as BridgeError;
    expect(err.code).toBe('USSD');
    expect(err.message).toBe('m1: no USSD reply to *888# within 20 s');
    expect(fake.sent).toContain('AT+CUSD=2');
  });

  it('a modem error other than "not supported" is a USSD error', async () => {
    const { modem } = setup([
      ['AT+CUSD=1,"*888#",15', ['+CME ERROR: 30']],
      ['AT+CSCS="IRA"', ['OK']],
    ]);
    await expect(modem.ussd('*888#')).rejects.toThrow('m1: USSD *888# failed: +CME ERROR: 30 (no network service)');
  });

  it('network-initiated USSD becomes an event', async () => {
    const { modem, fake } = setup([]);
    const got: UssdReply[] = [];
    modem.on('ussd', (r) => got.push(r));
    fake.emitLines('+CUSD: 0,"Bonus 1GB aktif",15');
    expect(got).toEqual([{ status: 0, text: 'Bonus 1GB aktif', dcs: 15, raw: '+CUSD: 0,"Bonus 1GB aktif",15' }]);
  });

  it('refuses strings that cannot be sent', async () => {
    const { modem, fake } = setup([], { profile: 'huawei' });
    await expect(modem.ussd('*100#✓')).rejects.toMatchObject({ code: 'USSD' });
    await expect(modem.ussd('*1"#')).rejects.toMatchObject({ code: 'USSD' });
    expect(fake.sent).toEqual([]);
  });
});

describe('sendSms', () => {
  const part1 = { pdu: '0041000B915628214304F70000A0050003A10201', tpduLength: 19 };
  const part2 = { pdu: '0041010B915628214304F70000A0050003A10202', tpduLength: 19 };

  it('sends each part after the prompt and returns the references', async () => {
    const { modem, fake } = setup([
      ['AT+CMGS=19', (_c, payload) => [`+CMGS: ${payload === part1.pdu ? 41 : 42}`, 'OK']],
    ]);
    expect(await modem.sendSms('+6282123440', [part1, part2])).toEqual([41, 42]);
    expect(fake.payloads).toEqual([part1.pdu, part2.pdu]);
  });

  it('names the failing part and the error', async () => {
    const { modem } = setup([
      ['AT+CMGS=19', (_c, payload) => (payload === part1.pdu ? ['+CMGS: 41', 'OK'] : ['+CMS ERROR: 38'])],
    ]);
    const err = await modem.sendSms('858', [part1, part2]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AtCommandError);
    expect((err as AtCommandError).message).toBe(
      'm1: sending SMS to 858 failed at part 2/2: +CMS ERROR: 38 (network rejected the message (RP cause 38))',
    );
    expect((err as AtCommandError).errorCode).toBe(38);
  });

  it('rejects a PDU that is not hex or shorter than its length', async () => {
    const { modem, fake } = setup([]);
    await expect(modem.sendSms('858', [{ pdu: 'XYZ', tpduLength: 1 }])).rejects.toMatchObject({ code: 'PDU_INVALID' });
    await expect(modem.sendSms('858', [{ pdu: '0011', tpduLength: 19 }])).rejects.toMatchObject({
      code: 'PDU_INVALID',
    });
    expect(fake.sent).toEqual([]);
  });
});

describe('fake channel self-check', () => {
  it('reports a transcript that was not followed', async () => {
    const fake = FakeChannel.fromTranscript('> AT+CSQ\n< +CSQ: 20,99\n< OK\n> AT+CREG?\n< +CREG: 0,1\n< OK\n');
    await fake.run('AT+CREG?').catch(() => undefined);
    await nextTurn();
    expect(() => fake.expectDone()).toThrow(/expected AT\+CSQ, got AT\+CREG\?/);
  });
});
