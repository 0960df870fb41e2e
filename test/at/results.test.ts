import { describe, it, expect } from 'vitest';
import { FINAL_RESULTS, describeCme, describeCms, explainFinal, matchFinalResult } from '../../src/at/results.js';

describe('final result table', () => {
  const rows: Array<[line: string, ok: boolean, code: number | undefined]> = [
    ['OK', true, undefined],
    ['ERROR', false, undefined],
    ['+CME ERROR: 10', false, 10],
    ['+CME ERROR: SIM not inserted', false, 10],
    ['+CME ERROR: sim pin required', false, 11],
    ['+CME ERROR: incorrect password', false, 16],
    ['+CME ERROR: 134', false, 134],
    ['+CME ERROR: some vendor words', false, undefined],
    ['+CMS ERROR: 321', false, 321],
    ['+CMS ERROR: 500', false, 500],
    ['+CMS ERROR: Invalid memory index', false, 321],
    ['  +CMS ERROR: 340  ', false, 340],
    ['NO CARRIER', false, undefined],
    ['NO DIALTONE', false, undefined],
    ['BUSY', false, undefined],
    ['NO ANSWER', false, undefined],
    ['COMMAND NOT SUPPORT', false, undefined],
    ['TOO MANY PARAMETERS', false, undefined],
  ];
  for (const [line, ok, code] of rows) {
    it(`${line.trim()} -> ${ok ? 'success' : 'error'}${code === undefined ? '' : ` ${code}`}`, () => {
      const m = matchFinalResult(line, FINAL_RESULTS);
      expect(m).toBeDefined();
      expect(m?.ok).toBe(ok);
      expect(m?.errorCode).toBe(code);
    });
  }

  it('information lines and URCs are not final results', () => {
    for (const line of ['+CSQ: 21,99', '+CMTI: "SM",3', 'OKAY', 'RING', '+CUSD: 0,"OK",15', 'ERRORS', '> ']) {
      expect(matchFinalResult(line)).toBeUndefined();
    }
  });

  it('a profile row that throws in code() still ends the command', () => {
    const m = matchFinalResult('BAD', [
      {
        pattern: /^BAD$/,
        ok: false,
        code: () => {
          throw new Error('x');
        },
      },
    ]);
    expect(m).toMatchObject({ ok: false, errorCode: undefined });
  });
});

describe('CME / CMS texts', () => {
  it.each([
    [3, 'operation not allowed'],
    [4, 'operation not supported'],
    [10, 'SIM not inserted'],
    [11, 'SIM PIN required'],
    [12, 'SIM PUK required'],
    [13, 'SIM failure'],
    [14, 'SIM busy'],
    [15, 'SIM wrong'],
    [16, 'incorrect password'],
    [20, 'memory full'],
    [21, 'invalid index'],
    [22, 'not found'],
    [30, 'no network service'],
    [31, 'network timeout'],
    [100, 'unknown'],
    [132, 'service option not supported'],
    [133, 'requested service option not subscribed'],
    [134, 'service option temporarily out of order'],
  ])('CME %i = %s', (code, text) => {
    expect(describeCme(code)).toBe(text);
  });

  it.each([
    [300, 'ME failure'],
    [302, 'operation not allowed'],
    [304, 'invalid PDU mode parameter'],
    [310, 'SIM not inserted'],
    [316, 'SIM PUK required'],
    [318, 'SIM PUK2 required'],
    [320, 'memory failure'],
    [321, 'invalid memory index'],
    [322, 'memory full'],
    [330, 'SMSC address unknown'],
    [331, 'no network service'],
    [332, 'network timeout'],
    [340, 'no +CNMA acknowledgement expected'],
    [500, 'unknown error'],
    [512, 'manufacturer-specific error'],
    [600, 'manufacturer-specific error'],
  ])('CMS %i = %s', (code, text) => {
    expect(describeCms(code)).toBe(text);
  });

  it('unknown codes give undefined, not a made-up text', () => {
    expect(describeCme(9999)).toBeUndefined();
    expect(describeCms(499)).toBeUndefined();
  });

  it('explainFinal adds the meaning of numeric codes and leaves other lines as they are', () => {
    expect(explainFinal('+CMS ERROR: 321')).toBe('+CMS ERROR: 321 (invalid memory index)');
    expect(explainFinal('+CME ERROR: 133')).toBe('+CME ERROR: 133 (requested service option not subscribed)');
    expect(explainFinal('+CME ERROR: 777')).toBe('+CME ERROR: 777');
    expect(explainFinal('+CME ERROR: SIM busy')).toBe('+CME ERROR: SIM busy');
    expect(explainFinal('ERROR')).toBe('ERROR');
  });
});
