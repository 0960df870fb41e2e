/**
 * The liveness probe's judgement (src/modem/liveness.ts) and the Modem around it: a setting read back, a fallback when
 * the firmware refuses the query, and the signs of a restart that become 'reset-suspected'.
 */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { isSimResetError, judgeCmee, judgeCnmi } from '../../src/modem/liveness.js';
import { Modem } from '../../src/modem/modem.js';
import { FakeChannel, type TableRow } from './fake-channel.js';

describe('judgeCnmi / judgeCmee', () => {
  it.each<[string[], string, string]>([
    [['+CNMI: 2,1,0,0,0'], '2,1,0,0,0', 'intact'],
    [['+CNMI: 2,1,0,0,0'], '2,1,0,0', 'intact'],
    [['+CNMI: 2,1,0,1,0'], '2,1,,,', 'intact'],
    [['+CNMI: 0,0,0,0,0'], '2,1,0,0,0', 'lost'],
    [['+CNMI: 1,1,0,0,0'], '2,1,0,0,0', 'lost'],
    [['+CNMI: 2'], '2,1,0,0,0', 'unknown'],
    [['OK'], '2,1,0,0,0', 'unknown'],
    [['+CNMI: (0-3),(0-3)'], '2,1', 'unknown'],
  ])('%j against %s -> %s', (lines, applied, verdict) => {
    expect(judgeCnmi(lines, applied)).toBe(verdict);
  });

  it('CMEE read back', () => {
    expect(judgeCmee(['+CMEE: 1'], 1)).toBe('intact');
    expect(judgeCmee(['+CMEE: 0'], 1)).toBe('lost');
    expect(judgeCmee([], 1)).toBe('unknown');
  });

  it('SIM errors of an SMS command: +CMS ERROR 310-316 only', () => {
    expect(isSimResetError('+CMS ERROR: 311', 311)).toBe(true);
    expect(isSimResetError('+CMS ERROR: 316', 316)).toBe(true);
    expect(isSimResetError('+CMS ERROR: 321', 321)).toBe(false);
    expect(isSimResetError('+CME ERROR: 311', 311)).toBe(false);
    expect(isSimResetError('ERROR', undefined)).toBe(false);
  });
});

function initRows(cnmiQuery: TableRow[1], cmeeQuery: TableRow[1] = ['+CMEE: 1', 'OK']): TableRow[] {
  return [
    ['ATE0', ['OK']],
    ['AT+CMEE=1', ['OK']],
    ['AT+CMEE?', cmeeQuery],
    ['AT+CGMI', ['Generic', 'OK']],
    ['AT+CGMM', ['GSM MODEM', 'OK']],
    ['AT+CGMR', ['1.0', 'OK']],
    ['AT+CGSN', ['356938035643809', 'OK']],
    ['AT+CPIN?', ['+CPIN: READY', 'OK']],
    ['AT+CIMI', ['510101234567890', 'OK']],
    ['AT+CCID', ['89621012345678901234', 'OK']],
    ['AT+CNUM', ['OK']],
    ['AT+CMGF=0', ['OK']],
    ['AT+CPMS=?', ['+CPMS: ("SM"),("SM"),("SM")', 'OK']],
    [/^AT\+CPMS="SM"/, ['+CPMS: 0,30,0,30,0,30', 'OK']],
    ['AT+CNMI=?', ['+CNMI: (0-3),(0-3),(0,2),(0-2),(0,1)', 'OK']],
    ['AT+CNMI?', cnmiQuery],
    [/^AT\+CNMI=/, ['OK']],
    ['AT+CMGL=4', ['+CMS ERROR: 311']],
    ['AT', ['OK']],
  ];
}

async function ready(rows: TableRow[]): Promise<{ modem: Modem; fake: FakeChannel }> {
  const fake = FakeChannel.fromTable(rows);
  const modem = new Modem({ channel: fake, name: 'm1', logger: silentLogger(), pollIntervalMs: 1 });
  await modem.init();
  return { modem, fake };
}

describe('Modem.probeState', () => {
  it('reads CNMI back: intact, then lost after a reset', async () => {
    let cnmi = '+CNMI: 2,1,0,0,0';
    const { modem } = await ready(initRows(() => [cnmi, 'OK']));
    expect(modem.cnmi).toBe('2,1,0,0,0');
    expect((await modem.probeState()).settings).toBe('intact');
    cnmi = '+CNMI: 0,0,0,0,0';
    expect((await modem.probeState()).settings).toBe('lost');
  });

  it('an ERROR to a query that answered before means the settings are gone (SMS service restarting)', async () => {
    let ok = true;
    const { modem } = await ready(initRows(() => (ok ? ['+CNMI: 2,1,0,0,0', 'OK'] : ['ERROR'])));
    expect((await modem.probeState()).settings).toBe('intact');
    ok = false;
    expect((await modem.probeState()).settings).toBe('lost');
  });

  it('a firmware that refuses AT+CNMI? from the start is probed with AT+CMEE?, then plain AT', async () => {
    const a = await ready(initRows(['ERROR']));
    expect(await a.modem.probeState()).toMatchObject({
      settings: 'intact',
      detail: expect.stringContaining('AT+CMEE?'),
    });
    expect(a.fake.sent.filter((c) => c === 'AT+CNMI?')).toHaveLength(1); // not asked again
    await a.modem.probeState();
    expect(a.fake.sent.filter((c) => c === 'AT+CNMI?')).toHaveLength(1);
    const b = await ready(initRows(['ERROR'], ['ERROR']));
    expect(await b.modem.probeState()).toMatchObject({
      settings: 'unknown',
      detail: expect.stringContaining('AT -> OK'),
    });
  });

  it('a firmware that refuses the sample on the probe line (AT+CNMI?;+CSQ) is asked that once, then samples on its own line', async () => {
    const { modem, fake } = await ready([
      ...initRows(['+CNMI: 2,1,0,0,0', 'OK']),
      ['AT+CNMI?;+CSQ', ['ERROR']],
      ['AT+CSQ', ['+CSQ: 20,99', 'OK']],
    ]);
    for (let i = 0; i < 3; i++) {
      expect(await modem.probeState({ sample: 'signal' })).toMatchObject({ settings: 'intact', signal: { rssi: 20 } });
    }
    expect(fake.sent.filter((c) => c === 'AT+CNMI?;+CSQ')).toHaveLength(1);
    expect(fake.sent.filter((c) => c === 'AT+CNMI?')).toHaveLength(3);
    expect(fake.sent.filter((c) => c === 'AT+CSQ')).toHaveLength(3);
    // A probe without a sample stays one command.
    const before = fake.sent.length;
    await modem.probeState();
    expect(fake.sent.slice(before)).toEqual(['AT+CNMI?']);
  });

  it('+CMS ERROR 311 on an SMS command after init raises reset-suspected', async () => {
    const { modem } = await ready(initRows(['+CNMI: 2,1,0,0,0', 'OK']));
    const seen: string[] = [];
    modem.on('reset-suspected', (info) => seen.push(info.reason));
    await expect(modem.listSms()).rejects.toThrow();
    expect(seen).toEqual(['AT+CMGL=4 answered +CMS ERROR: 311 (SIM PIN required)']);
  });

  it("another family's boot banner after init raises reset-suspected; the profile's own raises reboot", async () => {
    const { modem, fake } = await ready(initRows(['+CNMI: 2,1,0,0,0', 'OK']));
    const events: string[] = [];
    modem.on('reset-suspected', (info) => events.push(`suspected ${info.reason}`));
    modem.on('reboot', (info) => events.push(`reboot ${info.urc}`));
    fake.emitLines('^SYSSTART');
    fake.emitLines('RDY');
    expect(events).toEqual(['suspected unsolicited ^SYSSTART', 'reboot rdy']);
  });
});
