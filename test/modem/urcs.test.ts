import { describe, expect, it } from 'vitest';
import type { UrcEntry } from '../../src/at/types.js';
import { huawei, neoway, quectel, simcom, wavecom, zte } from '../../src/modem/profiles/index.js';
import { buildUrcTable, GENERIC_URCS } from '../../src/modem/urcs.js';

/** What the channel does with a table: the first row whose pattern matches the line. */
function classify(
  table: readonly UrcEntry[],
  lines: string[],
): { name: string; data: Record<string, unknown> } | undefined {
  const row = table.find((e) => e.pattern.test(lines[0]!));
  if (!row) return undefined;
  return { name: row.name, data: row.parse ? row.parse(lines) : {} };
}

describe('generic URC rows on captured lines', () => {
  it.each([
    [['+CMTI: "SM",3'], 'cmti', { storage: 'SM', index: 3 }],
    [['+CMTI: "ME",0'], 'cmti', { storage: 'ME', index: 0 }],
    [
      ['+CMT: ,23', '0791261801000004038158F80000811080015100820C'],
      'cmt',
      { alpha: undefined, length: 23, pdu: '0791261801000004038158F80000811080015100820C' },
    ],
    [['+CMT: "",23', '07912618'], 'cmt', { alpha: undefined, length: 23, pdu: '07912618' }],
    [['+CDS: 25', '07912618010000060C'], 'cds', { length: 25, pdu: '07912618010000060C' }],
    [['+CDSI: "SR",1'], 'cdsi', { storage: 'SR', index: 1 }],
    [
      ['+CUSD: 0,"Sisa pulsa Rp.24025",15'],
      'cusd',
      { status: 0, payload: 'Sisa pulsa Rp.24025', dcs: 15, complete: true, raw: '+CUSD: 0,"Sisa pulsa Rp.24025",15' },
    ],
    [['+CUSD: 4'], 'cusd', { status: 4, payload: undefined, dcs: undefined, complete: true, raw: '+CUSD: 4' }],
    [
      ['+CUSD: 1,"Menu:'],
      'cusd',
      { status: 1, payload: 'Menu:', dcs: undefined, complete: false, raw: '+CUSD: 1,"Menu:' },
    ],
    [['RING'], 'ring', {}],
    [['+CLIP: "+6281234567890",145,"",0,"",0'], 'clip', { number: '+6281234567890', type: 145 }],
    [['RDY'], 'rdy', {}],
    [['SMS Ready'], 'sms-ready', {}],
    [['Call Ready'], 'call-ready', {}],
    [['SMS DONE'], 'sms-done', {}],
    [['PB DONE'], 'pb-done', {}],
    [['+CFUN: 1'], 'cfun', { fun: 1 }],
    [['+CPIN: READY'], 'cpin', { state: 'READY' }],
    [['+CREG: 1'], 'creg', { stat: 1 }],
    [['+CREG: 5,"1A2B","00C3D4E5",7'], 'creg', { stat: 5, lac: '1A2B', ci: '00C3D4E5', act: 7 }],
    [['+CEREG: 2'], 'cereg', { stat: 2 }],
  ])('%j -> %s', (lines, name, data) => {
    expect(classify(GENERIC_URCS, lines)).toEqual({ name, data });
  });

  it('does not take final results or text-mode lines for URCs', () => {
    for (const line of ['OK', 'ERROR', 'NO CARRIER', '+CMS ERROR: 321', '+CMT: "+6281234","","24/01/08,10:15:00+28"']) {
      expect(classify(GENERIC_URCS, [line])).toBeUndefined();
    }
  });

  it('PDU rows take the PDU line with them', () => {
    expect(GENERIC_URCS.find((e) => e.name === 'cmt')?.extraLines).toBe(1);
    expect(GENERIC_URCS.find((e) => e.name === 'cds')?.extraLines).toBe(1);
  });

  it('lines that also answer a query name that query, and only it, in responseTo', () => {
    const responseTo = (name: string) => GENERIC_URCS.find((e) => e.name === name)?.responseTo;
    expect(responseTo('cpin')).toEqual(['AT+CPIN']);
    expect(responseTo('cfun')).toEqual(['AT+CFUN']);
    expect(responseTo('creg')).toEqual(['AT+CREG']);
    // The reply to AT+CUSD=1,... is unsolicited: only the query form is a response.
    expect(responseTo('cusd')).toEqual(['AT+CUSD?']);
    expect(responseTo('cmti')).toBeUndefined();
  });
});

describe('profile URC rows', () => {
  it.each([
    [huawei, ['^RSSI:17'], 'rssi', { rssi: 17 }],
    [huawei, ['^HCSQ:"LTE",45,38,120,20'], 'hcsq', { sysmode: 'LTE', values: [45, 38, 120, 20] }],
    [huawei, ['^SMMEMFULL: "SM"'], 'smmemfull', { storage: 'SM' }],
    [huawei, ['^BOOT:20841397,0,0,0,75'], 'hw-boot', {}],
    [
      huawei,
      ['^DSFLOWRPT:0000013A,00000000,00000000,0000000000001A2B,0000000000002C3D,0003E800,0003E800'],
      'dsflowrpt',
      {},
    ],
    [huawei, ['^MODE:5,4'], 'mode', {}],
    [huawei, ['^SRVST:2'], 'srvst', {}],
    [huawei, ['^SIMST:1'], 'simst', {}],
    [huawei, ['^NWTIME:24/01/08,10:15:00+28,00'], 'nwtime', {}],
    [quectel, ['+QUSIM: 1'], 'qusim', { usim: 1 }],
    [quectel, ['+QIND: SMS DONE'], 'qind', { event: 'SMS DONE' }],
    [wavecom, ['+WIND: 4'], 'wind', { event: 4, args: [] }],
    [zte, ['+ZPASR: "UMTS"'], 'zpasr', {}],
    [neoway, ['MODEM:STARTUP'], 'modem-startup', {}],
    [neoway, ['+PBREADY'], 'pbready', {}],
    [simcom, ['SMS Ready'], 'sms-ready', {}],
  ] as const)('%s %j -> %s', (profile, lines, name, data) => {
    expect(classify(buildUrcTable(profile), [...lines])).toEqual({ name, data });
  });

  it('profile rows come before the generic ones', () => {
    const table = buildUrcTable(huawei);
    expect(table.slice(0, huawei.urcs.length)).toEqual(huawei.urcs);
    expect(table.slice(huawei.urcs.length)).toEqual([...GENERIC_URCS]);
  });

  it('every reboot, storage-full and SMS-ready name exists in the profile table', () => {
    for (const p of [huawei, neoway, quectel, simcom, wavecom, zte]) {
      const names = new Set(buildUrcTable(p).map((e) => e.name));
      for (const n of [...p.rebootUrcs, ...p.storageFullUrcs, ...(p.smsReady ? [p.smsReady.urc] : [])]) {
        expect(names.has(n), `${p.id}: ${n}`).toBe(true);
      }
    }
  });
});
