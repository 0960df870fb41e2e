import { describe, expect, it } from 'vitest';
import {
  chooseCnmi,
  chooseStorage,
  parseCmgl,
  parseCmgr,
  parseCmgs,
  parseCnmiRanges,
  parseCopsName,
  parseCpmsQuery,
  parseCpmsSet,
  parseCpmsSupported,
  parseCsca,
  parseCsq,
  parseRegistrationQuery,
  plainAnswer,
} from '../../src/modem/parse.js';
import { describeCme, describeCms } from '../../src/at/results.js';
import { describeFinal } from '../../src/modem/error-codes.js';

describe('signal: +CSQ', () => {
  it.each([
    ['+CSQ: 20,99', { rssi: 20, dbm: -73, bars: 4, ber: undefined }],
    ['+CSQ: 31,0', { rssi: 31, dbm: -51, bars: 5, ber: 0 }],
    ['+CSQ: 0,99', { rssi: 0, dbm: -113, bars: 0, ber: undefined }],
    ['+CSQ: 9,99', { rssi: 9, dbm: -95, bars: 2, ber: undefined }],
    ['+CSQ: 99,99', { rssi: 99, dbm: undefined, bars: 0, ber: undefined }],
  ])('%s', (line, expected) => {
    expect(parseCsq([line])).toEqual(expected);
  });

  it('is undefined when the answer has no +CSQ line', () => {
    expect(parseCsq(['ERROR'])).toBeUndefined();
  });
});

describe('registration: +CREG? / +CEREG?', () => {
  it.each([
    ['+CREG: 0,1', 'CREG', { stat: 1, text: 'registered home', registered: true, source: 'CREG' }],
    ['+CREG: 0,5', 'CREG', { stat: 5, text: 'roaming', registered: true, source: 'CREG' }],
    ['+CREG: 0,2', 'CREG', { stat: 2, text: 'searching', registered: false, source: 'CREG' }],
    ['+CREG: 0,3', 'CREG', { stat: 3, text: 'denied', registered: false, source: 'CREG' }],
    [
      '+CREG: 2,1,"1A2B","00C3D4E5",7',
      'CREG',
      { stat: 1, text: 'registered home', registered: true, lac: '1A2B', ci: '00C3D4E5', act: 7, source: 'CREG' },
    ],
    ['+CEREG: 0,4', 'CEREG', { stat: 4, text: 'unknown', registered: false, source: 'CEREG' }],
  ] as const)('%s', (line, source, expected) => {
    expect(parseRegistrationQuery([line], source)).toEqual(expected);
  });
});

describe('operator, SMSC, identity answers', () => {
  it('reads the operator name', () => {
    expect(parseCopsName(['+COPS: 0,0,"TELKOMSEL",7'])).toBe('TELKOMSEL');
    expect(parseCopsName(['+COPS: 0'])).toBeUndefined();
  });
  it('reads the SMSC', () => {
    expect(parseCsca(['+CSCA: "+6281100000",145'])).toBe('+6281100000');
  });
  it('strips answer prefixes of identification commands', () => {
    expect(plainAnswer(['Revision:1418B04SIM800L24'])).toBe('1418B04SIM800L24');
    expect(plainAnswer(['+CGMR: LE20B04SIM7600M22'])).toBe('LE20B04SIM7600M22');
    expect(plainAnswer(['MULTIBAND  900E  1800'])).toBe('MULTIBAND  900E  1800');
  });
});

describe('storage: +CPMS', () => {
  it('reads usage per memory', () => {
    expect(parseCpmsQuery(['+CPMS: "SM",3,30,"SM",3,30,"MT",3,280'])).toEqual([
      { memory: 'SM', used: 3, total: 30 },
      { memory: 'SM', used: 3, total: 30 },
      { memory: 'MT', used: 3, total: 280 },
    ]);
  });
  it('reads the answer to a selection', () => {
    expect(parseCpmsSet(['+CPMS: 2,30,2,30,2,30'])).toEqual([
      { used: 2, total: 30 },
      { used: 2, total: 30 },
      { used: 2, total: 30 },
    ]);
  });
  it.each([
    [
      '+CPMS: ("SM","ME","SM_P","ME_P","MT"),("SM","ME","SM_P","ME_P","MT"),("SM","ME","SM_P","ME_P","MT")',
      ['SM', 'ME'],
      'SM',
    ],
    ['+CPMS: (("SM","ME"),("SM","ME"),("SM","ME"))', ['SM'], 'SM'],
    ['+CPMS: ("ME","MT","SR"),("ME","MT"),("ME","MT")', ['SM', 'ME', 'MT'], 'ME'],
    ['+CPMS: ("SM","ME"),("SM","ME"),("ME")', ['SM', 'ME'], 'ME'],
  ])('%s with preference %j -> %s', (line, pref, chosen) => {
    expect(chooseStorage(parseCpmsSupported([line]), pref)).toBe(chosen);
  });
});

describe('CNMI negotiation', () => {
  it.each([
    ['+CNMI: (0-3),(0-3),(0,2),(0,1),(0,1)', 'store', '2,1,0,0,0'],
    ['+CNMI: (0,1,2),(0,1,2,3),(0,2),(0,1,2),(0,1)', 'direct', '2,2,0,0,0'],
    ['+CNMI: (1),(0-3),(0,2),(0-2),(0,1)', 'store', '1,1,0,0,0'],
    ['+CNMI: (0-2),(0-3),(2),(1,2),(0)', 'store', '2,1,2,2,0'],
    ['+CNMI: (0-2),(0-3),(0,2),(0-2)', 'store', '2,1,0,0'],
  ] as const)('%s (%s) -> %s', (line, delivery, setting) => {
    const ranges = parseCnmiRanges([line]);
    expect(ranges).toBeDefined();
    expect(chooseCnmi(ranges!, delivery)).toBe(setting);
  });

  it('gives up when mt cannot be met', () => {
    expect(chooseCnmi(parseCnmiRanges(['+CNMI: (0-2),(0,2,3),(0,2),(0-2),(0,1)'])!, 'store')).toBeUndefined();
  });

  it('rejects an unreadable range answer', () => {
    expect(parseCnmiRanges(['+CNMI: 2,1,0,0,0 garbage', 'OK'])).toBeUndefined();
  });
});

describe('SMS listing', () => {
  const pduA = '0791261801000004038158F80000811080015100820C';
  const pduB = '0791261801000004038161F80000811080015100820C';

  it('pairs headers with PDU lines and keeps 0-based indexes', () => {
    const { messages, skipped } = parseCmgl(['+CMGL: 0,1,,23', pduA, '+CMGL: 1,0,"",23', pduB.toLowerCase()]);
    expect(skipped).toEqual([]);
    expect(messages).toEqual([
      { index: 0, stat: 1, length: 23, pdu: pduA },
      { index: 1, stat: 0, length: 23, pdu: pduB },
    ]);
  });

  it('skips and reports a header without a PDU line, keeping the rest', () => {
    const { messages, skipped } = parseCmgl(['+CMGL: 4,1,,23', '+CMGL: 5,1,,23', pduA]);
    expect(messages.map((m) => m.index)).toEqual([5]);
    expect(skipped).toEqual(['+CMGL: 4,1,,23']);
  });

  it('reads +CMGR and treats empty slots as undefined', () => {
    expect(parseCmgr(['+CMGR: 1,,23', pduA], 7)).toEqual({ index: 7, stat: 1, length: 23, pdu: pduA });
    expect(parseCmgr([], 7)).toBeUndefined();
    expect(parseCmgr(['+CMGR: 0,,0', ''], 7)).toBeUndefined();
  });

  it('reads the +CMGS reference', () => {
    expect(parseCmgs(['+CMGS: 12'])).toBe(12);
  });
});

describe('error texts', () => {
  it.each([
    [10, 'SIM not inserted'],
    [16, 'incorrect password'],
    [132, 'service option not supported'],
  ])('CME %i', (code, text) => expect(describeCme(code)).toBe(text));

  it('an unknown CME code still shows its number', () => {
    expect(describeFinal('+CME ERROR: 999')).toBe('+CME ERROR: 999');
  });

  it.each([
    [321, 'invalid memory index'],
    [340, 'no +CNMA acknowledgement expected'],
  ])('CMS %i', (code, text) => expect(describeCms(code)).toBe(text));

  it.each([
    ['+CMS ERROR: 42', '+CMS ERROR: 42 (network rejected the message (RP cause 42))'],
    ['+CMS ERROR: 197', '+CMS ERROR: 197 (SMS transfer failed (TP cause 197))'],
    ['+CMS ERROR: 513', '+CMS ERROR: 513 (manufacturer-specific error)'],
  ])('%s', (line, text) => expect(describeFinal(line)).toBe(text));

  it('describes a final result line', () => {
    expect(describeFinal('+CMS ERROR: 321')).toBe('+CMS ERROR: 321 (invalid memory index)');
    expect(describeFinal('COMMAND NOT SUPPORT')).toBe('COMMAND NOT SUPPORT');
    expect(describeFinal(undefined)).toBe('no final result');
  });
});
