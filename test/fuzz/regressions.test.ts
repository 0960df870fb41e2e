/**
 * Plain example tests for the bugs the fuzz targets found, one per bug, so each stays fixed even if the random
 * generators never hit that input again. Each names the target that found it.
 */
import { describe, expect, it } from 'vitest';
import { parseCmgl } from '../../src/modem/parse.js';
import { GENERIC_URCS } from '../../src/modem/urcs.js';
import { continueCusd, parseCusdLine } from '../../src/modem/ussd-codec.js';

describe('found by ussd/cusd-line-round-trip', () => {
  it('a +CUSD reply whose text holds U+2028 (LINE SEPARATOR) is read, not dropped as unreadable', () => {
    expect(parseCusdLine('+CUSD: 1,"Sisa pulsa\u2028Rp 5000",15')).toEqual({
      status: 1,
      payload: 'Sisa pulsa\u2028Rp 5000',
      dcs: 15,
      complete: true,
    });
    expect(parseCusdLine('+CUSD: 0,Info\u2029CS,15')).toEqual({
      status: 0,
      payload: 'Info\u2029CS',
      dcs: 15,
      complete: true,
    });
  });

  it('the closing line of a multi-line +CUSD text that holds U+2028 closes it (no quote or dcs left in the text)', () => {
    const first = parseCusdLine('+CUSD: 1,"Menu');
    expect(first).toMatchObject({ complete: false });
    expect(continueCusd(first!, '1.Paket\u2028Promo",15')).toEqual({
      status: 1,
      payload: 'Menu\n1.Paket\u2028Promo',
      dcs: 15,
      complete: true,
    });
  });

  it('a Unicode space ending the first line of a multi-line +CUSD text is kept', () => {
    expect(parseCusdLine('+CUSD: 1,"Pilih:\u00a0')).toEqual({
      status: 1,
      payload: 'Pilih:\u00a0',
      dcs: undefined,
      complete: false,
    });
    expect(parseCusdLine('+CUSD: 1,"Pilih:\u3000')?.payload).toBe('Pilih:\u3000');
  });
});

describe('found by parse/response-round-trip', () => {
  it('a +CMGL header whose <alpha> holds U+2028 is listed, not skipped (the SMS would never be read)', () => {
    const pdu = '0004038158F80000811080900321820141';
    expect(parseCmgl(['+CMGL: 3,0,"Ibu\u2028Ani",17', pdu])).toEqual({
      messages: [{ index: 3, stat: 0, length: 17, pdu }],
      skipped: [],
    });
  });
});

describe('found by urc/well-formed-round-trip', () => {
  it('+CMT whose quoted <alpha> holds a comma is the +CMT URC (its PDU line is not lost)', () => {
    const line = '+CMT: "Doe, John",24';
    const row = GENERIC_URCS.find((r) => r.pattern.test(line));
    expect(row?.name).toBe('cmt');
    expect(row?.parse?.([line, '0004038158F8'])).toEqual({ alpha: 'Doe, John', length: 24, pdu: '0004038158F8' });
  });
});
