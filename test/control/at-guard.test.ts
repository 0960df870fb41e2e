import { describe, expect, it } from 'vitest';
import { checkAtLine, splitAtLine } from '../../src/control/at-guard.js';

describe('splitAtLine', () => {
  it.each([
    ['AT+CSQ;+CREG?', ['+CSQ', '+CREG?']],
    ['at+csq', ['+CSQ']],
    ['ATE0V1', ['E0', 'V1']],
    ['ATZ', ['Z']],
    ['AT&F', ['&F']],
    ['AT&FE0', ['&F', 'E0']],
    ['ATI', ['I']],
    ['AT', []],
    ['ATD*888#;', ['D*888#;']],
    ['AT+CUSD=1,"*888#",15', ['+CUSD=1,"*888#",15']],
    ['AT+CPBW=1,"x;y"', ['+CPBW=1,"x;y"']],
    ['AT^CURC=0;+CSQ', ['^CURC=0', '+CSQ']],
    ['ATS0=0', ['S0=0']],
  ])('%s', (line, want) => expect(splitAtLine(line)).toEqual(want));
  it('keeps quoted text as typed', () => expect(splitAtLine('AT+CSCA="+6281100000"')).toEqual(['+CSCA="+6281100000"']));
  it('drops spaces outside quotes, as a modem does (V.250)', () => {
    expect(splitAtLine('AT+CMGD =1')).toEqual(['+CMGD=1']);
    expect(splitAtLine('AT+CPBW=1,"a b"')).toEqual(['+CPBW=1,"a b"']);
  });
  it('is undefined without AT', () => expect(splitAtLine('+CSQ')).toBeUndefined());
});

describe('checkAtLine', () => {
  it.each(['AT+CSQ', 'AT+CSQ;+CREG?', 'ATI', 'AT+CNMI?', 'AT+CNMI=?', 'AT+CFUN?', 'AT+CPMS?', 'AT+CMGL=4', 'AT+CMGR=3', 'ATE0', 'AT+CUSD=1,"*888#",15', 'ATD*888#;', 'AT+CSCS?'])(
    '%s is allowed',
    (line) => {
      const v = checkAtLine(line);
      expect(v.refused).toEqual([]);
      expect(v.notAt).toBeUndefined();
    },
  );

  it.each([
    ['ATZ', /resets the modem/],
    ['AT&F', /factory/],
    ['ATE1', /echo on/],
    ['ate1', /echo on/],
    ['AT+CFUN=1,1', /power state/],
    ['AT+CFUN=0', /power state/],
    ['AT+CNMI=2,1,0,0,0', /new SMS are announced/],
    ['AT+CMGF=1', /PDU mode/],
    ['AT+CPMS="SM","SM","SM"', /storage/],
    ['AT+CMGD=1', /deletes SMS/],
    ['AT+CMGD=1,4', /deletes SMS/],
    ['AT+CNMA', /acknowledges/],
    ['AT+IPR=9600', /baud/],
    ['AT+CSQ;+CMGF=1', /PDU mode/],
    ['ATE0V0', /numeric result codes/],
    ['AT^CURC=1', /unsolicited/],
    ['AT+CRESET', /resets or powers off/],
    ['AT+CMGDA="DEL ALL"', /in bulk/],
    ['AT+CMGDA=6', /in bulk/],
    ['AT+QMGDA="DEL ALL"', /in bulk/],
    ['AT+CMGD =1', /deletes SMS/],
    ['AT+CNMI =0,0,0,0,0', /new SMS are announced/],
    ['ATE 1', /echo on/],
    ['at + cmgf = 1', /PDU mode/],
  ])('%s is refused', (line, reason) => {
    const v = checkAtLine(line);
    expect(v.refused.join('\n')).toMatch(reason);
    expect(v.recheck).toBe(true);
  });

  it('asks for a re-check after PIN and operator changes, without refusing', () => {
    expect(checkAtLine('AT+CPIN="1234"')).toMatchObject({ refused: [], recheck: true });
    expect(checkAtLine('AT+COPS=0')).toMatchObject({ refused: [], recheck: true });
    expect(checkAtLine('AT+COPS?')).toMatchObject({ refused: [], recheck: false });
  });

  it('hints at the AT prefix', () => {
    expect(checkAtLine('+CSQ').notAt).toBe('"+CSQ" does not start with AT; did you mean "AT+CSQ"?');
    expect(checkAtLine('CSQ').notAt).toBe('"CSQ" does not start with AT; did you mean "AT+CSQ"?');
    expect(checkAtLine('I').notAt).toBe('"I" does not start with AT; did you mean "ATI"?');
    expect(checkAtLine('  ').notAt).toBe('empty command');
  });
});
