import { describe, expect, it } from 'vitest';
import { checkAtLine, splitAtLine } from '../../src/ops/at-guard.js';

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
  it.each([
    'AT+CSQ',
    'AT+CSQ;+CREG?',
    'ATI',
    'AT+CNMI?',
    'AT+CNMI=?',
    'AT+CFUN?',
    'AT+CPMS?',
    'AT+CMGL=4',
    'AT+CMGR=3',
    'ATE0',
    'AT+CUSD=1,"*888#",15',
    'ATD*888#;',
    'AT+CSCS?',
  ])('%s is allowed', (line) => {
    const v = checkAtLine(line);
    expect(v.refused).toEqual([]);
    expect(v.notAt).toBeUndefined();
  });

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

  it('asks for a re-check after operator changes, without refusing', () => {
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

describe('the guard refuses SIM locks, power-off, framing breaks and deregistration without --force', () => {
  it.each([
    ['AT+CPWD="SC","1234","4321"', /password or PIN/],
    ['AT+CLCK="SC",1,"4321"', /wrong ones lock the SIM/],
    ['AT+CLCK="SC",0,"1234"', /wrong ones lock the SIM/],
    ['AT+CPIN="1234"', /bypassing the daemon's memory of rejected PINs/],
    ['AT+CPIN="12345678","1234"', /PIN or PUK/],
    ['at+cpin=1234', /PIN or PUK/],
    ['AT+CPIN2="1234"', /PIN or PUK/],
    ['ATD**04*1234*4321*4321#;', /changes or unblocks a PIN/],
    ['ATD**05*12345678*1234*1234#;', /changes or unblocks a PIN/],
    ['AT+CSIM=10,"0020000104"', /raw commands to the SIM/],
    ['AT+CPOWD=1', /powers off/],
    ['AT+CFUN=4', /power state/],
    ['AT+QRST=1,0', /vendor command/],
    ['AT#REBOOT', /vendor command/],
    ['AT!RESET', /vendor command/],
    ['AT^SMSO', /vendor command/],
    ['ATS3=10', /line-ending/],
    ['ATS4=13', /line-ending/],
    ['ATS5=0', /line-ending/],
    ['AT+COPS=2', /deregisters/],
    // every segment, not only the first
    ['AT+CSQ;+CPIN="1234"', /PIN or PUK/],
    ['AT+CSQ;+CPOWD=1', /powers off/],
    ['ATD*888#;+COPS=2', /deregisters/],
    ['ATE0S3=10', /line-ending/],
  ])('%s', (line, reason) => {
    const v = checkAtLine(line);
    expect(v.refused.join('\n')).toMatch(reason);
    expect(v.recheck).toBe(true);
  });

  it.each([
    'AT+CPIN?',
    'AT+CPIN=?',
    'AT+CLCK="SC",2',
    'AT+CLCK=?',
    'AT+CPWD=?',
    'AT+COPS=0',
    'AT+COPS?',
    'ATS3?',
    'AT+CSIM=?',
  ])('%s (a query, a test or harmless) is allowed', (line) => {
    expect(checkAtLine(line).refused).toEqual([]);
  });

  it('names what can move credit or change the SIM, for the log', () => {
    expect(checkAtLine('ATD*858*081234567890*5000#;').moves).toEqual(['dials *858*081234567890*5000#']);
    expect(checkAtLine('AT+CSQ;+CUSD=1,"*858#",15').moves).toEqual(['USSD AT+CUSD=1,"*858#",15']);
    expect(checkAtLine('AT+CMGS=23').moves).toEqual(['sends or stores an SMS (AT+CMGS=23)']);
    expect(checkAtLine('AT+CSQ;+CREG?').moves).toEqual([]);
    expect(checkAtLine('AT+CUSD=?').moves).toEqual([]);
  });
});

describe('the guard reads numbers and dial strings as a modem does (leading zeros, a missing value, dial modifiers)', () => {
  it.each([
    ['ATV', /numeric result codes/], // V.250: a missing value is 0
    ['ATV00', /numeric result codes/],
    ['ATE0V', /numeric result codes/],
    ['ATQ01', /suppresses result codes/],
    ['ATE01', /echo on/],
    ['ATS03=10', /line-ending/],
    ['ATS004=13', /line-ending/],
    ['ATS3=', /line-ending/],
    ['AT+COPS=02', /deregisters/],
    ['AT+COPS=002,0', /deregisters/],
    ['ATDT**04*1234*4321*4321#;', /changes or unblocks a PIN/],
    ['ATDP**04*1234*4321*4321#;', /changes or unblocks a PIN/],
    ['ATDW**042*1234*4321*4321#', /changes or unblocks a PIN/],
    ['ATD,**05*12345678*1234*1234#;', /changes or unblocks a PIN/],
    ['ATDT,P**052*12345678*1234*1234#;', /changes or unblocks a PIN/],
    ['ATD*T*04*1234*4321*4321#;', /changes or unblocks a PIN/],
    ['AT^CPIN="12345678","1234"', /PIN or PUK/],
    ['AT^CPIN="1234"', /PIN or PUK/],
    ['AT+CSQ;^CPIN2="1234"', /PIN or PUK/],
    ['AT+CFUN=04', /power state/],
    ['AT+CFUN=00', /power state/],
    ['AT+CLCK="SC",02,"1234"', /wrong ones lock the SIM/],
  ])('%s is refused', (line, reason) => {
    const v = checkAtLine(line);
    expect(v.refused.join('\n')).toMatch(reason);
    expect(v.recheck).toBe(true);
  });

  it.each([
    'ATV1',
    'ATV01',
    'ATE0',
    'ATE00',
    'ATE',
    'ATQ0',
    'ATQ',
    'AT+COPS?',
    'AT+COPS=0',
    'AT+COPS=00',
    'AT+COPS=?',
    'ATS3?',
    'ATS03?',
    'ATS3=?',
    'ATS0=0',
    'ATS7=60',
    'AT^CPIN?',
    'AT^CPIN=?',
    'AT+CLCK="SC",02',
    'ATDT*888#;',
    'ATD*858*0812345678*5000#;',
  ])('%s stays allowed', (line) => expect(checkAtLine(line).refused).toEqual([]));

  it('names the Huawei PIN entry as a SIM change, for the log', () => {
    expect(checkAtLine('AT^CPIN="1234"').moves).toEqual(['changes the SIM\'s PIN or locks (AT^CPIN="1234")']);
  });
});
