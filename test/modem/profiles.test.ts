import { describe, expect, it } from 'vitest';
import {
  detectProfile,
  getProfile,
  lookupUsb,
  PROFILE_IDS,
  PROFILES,
  USB_FINGERPRINTS,
} from '../../src/modem/profiles/index.js';

describe('detectProfile from AT+CGMI / AT+CGMM answers', () => {
  it.each([
    ['SIMCOM_Ltd', 'SIMCOM_SIM800L', 'simcom'],
    ['SIMCOM INCORPORATED', 'SIMCOM_SIM7600E-H', 'simcom'],
    ['huawei', 'E173', 'huawei'],
    ['Huawei Technologies Co., Ltd.', 'E3372', 'huawei'],
    ['Quectel', 'EC25', 'quectel'],
    ['WAVECOM MODEM', 'MULTIBAND  900E  1800', 'wavecom'],
    ['ZTE INCORPORATED', 'MF190', 'zte'],
    ['ZTE CORPORATION', 'MF667', 'zte'],
    ['QUALCOMM INCORPORATED', '0', 'qualcomm'],
    ['Neoway', 'M590', 'neoway'],
    // Model-only detection when the manufacturer answer is unhelpful.
    ['', 'M590', 'neoway'],
    ['', 'SIM800C', 'simcom'],
    ['Telit', 'GE910', 'generic'],
    ['', '', 'generic'],
  ])('%j / %j -> %s', (maker, model, id) => {
    expect(detectProfile(maker, model).id).toBe(id);
  });
});

describe('profiles as data', () => {
  it('every id resolves and is unique; unknown ids throw', () => {
    const ids = PROFILES.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(getProfile(id).id).toBe(id);
    expect(() => getProfile('nokia' as never)).toThrow(/unknown modem profile/);
  });

  it('the registry has exactly one profile per declared id', () => {
    expect([...PROFILES.map((p) => p.id)].sort()).toEqual([...PROFILE_IDS].sort());
  });

  it('profiles do not share mutable arrays', () => {
    const seen = new Set<unknown>();
    for (const p of PROFILES) {
      for (const arr of [
        p.urcs,
        p.finalResults,
        p.initCommands,
        p.rebootUrcs,
        p.cnmiFallbacks,
        p.storagePreference,
        p.iccidCommands,
      ]) {
        expect(seen.has(arr), p.id).toBe(false);
        seen.add(arr);
      }
    }
  });

  it('carries the known quirks', () => {
    expect(getProfile('simcom').smsReady?.urc).toBe('sms-ready');
    expect(getProfile('simcom').rebootUrcs).toEqual(expect.arrayContaining(['rdy', 'sms-ready', 'sms-done']));
    expect(getProfile('huawei').initCommands).toContain('AT^CURC=0');
    // Huawei: USSD goes out as packed GSM 7-bit hex and its replies are unpacked.
    expect(getProfile('huawei').steps?.ussdCommand?.('*888#')).toBe('AT+CUSD=1,"2A1C0E3702",15');
    expect(getProfile('huawei').steps?.ussdText?.('2A1C0E3702', 15)).toBe('*888#');
    expect(getProfile('huawei').finalResults.some((f) => f.pattern.test('COMMAND NOT SUPPORT') && !f.ok)).toBe(true);
    expect(getProfile('huawei').storageFullUrcs).toEqual(['smmemfull']);
    expect(getProfile('quectel').rebootUrcs).toContain('rdy');
    // Wavecom: `+CPIN: ...` ends AT+CPIN? at once (its firmware sends no OK after it); other modems wait the quiet time.
    expect(getProfile('wavecom').finalResults).toEqual([
      expect.objectContaining({ command: 'AT+CPIN?', isAnswer: true, ok: true }),
    ]);
    expect(getProfile('wavecom').ussd.charset).toBe('GSM');
    expect(getProfile('qualcomm').cnmiFallbacks).toEqual(['2,1,2,1,0', '2,1,2,2,0', '2,1,2,0,0']);
    expect(getProfile('neoway').duplicateIndications).toBe(true);
  });
});

describe('USB fingerprints', () => {
  it.each([
    ['12d1', '1506', 'huawei'],
    ['12D1', '9999', 'huawei'],
    ['1e0e', '9001', 'simcom'],
    ['2c7c', '0125', 'quectel'],
    ['19d2', '0031', 'zte'],
    ['05c6', 'f000', 'qualcomm'],
  ])('%s:%s -> %s', (vid, pid, profile) => {
    expect(lookupUsb(vid, pid)?.profile).toBe(profile);
  });

  it.each([
    ['1a86', '7523'],
    ['067b', '2303'],
    ['0403', '6001'],
    ['10c4', 'ea60'],
  ])('%s:%s is a USB-serial adapter with no profile of its own', (vid, pid) => {
    const row = lookupUsb(vid, pid);
    expect(row?.description).toMatch(/^USB-serial adapter \(SIM800 boards\)/);
    expect(row?.profile).toBeUndefined();
  });

  it('prefers the exact product row and knows nothing of other vendors', () => {
    expect(lookupUsb('2c7c', '0296')?.description).toMatch(/BG96/);
    expect(lookupUsb('046d', 'c52b')).toBeUndefined();
    expect(
      USB_FINGERPRINTS.every(
        (r) => /^[0-9a-f]{4}$/.test(r.vendorId) && (r.productId === undefined || /^[0-9a-f]{4}$/.test(r.productId)),
      ),
    ).toBe(true);
  });
});
