/**
 * The data coding scheme tables of 3GPP TS 23.038, row by row: §4 (SMS) and §5 (CBS / USSD). Expectations are the
 * specification's rows written out here; node-pdu, an independent decoder, is a second opinion on the §4 groups it
 * reads as the specification does (0000-0011, 1100, 1111).
 */
import { parse } from 'node-pdu';
import { describe, expect, it } from 'vitest';
import { cbsDcs, describeCbsDcs, smsDcs } from '../../src/sms/dcs.js';

const ALL = Array.from({ length: 256 }, (_, i) => i);
const inGroup = (g: number) => ALL.filter((v) => v >> 4 === g);

describe('TS 23.038 §4 (SMS TP-DCS): every value', () => {
  it.each([
    // [dcs, what the specification's row says]
    [0x00, { alphabet: 'gsm7' }],
    [0x04, { alphabet: '8bit' }],
    [0x08, { alphabet: 'ucs2' }],
    [0x10, { alphabet: 'gsm7', messageClass: 0 }],
    [0x11, { alphabet: 'gsm7', messageClass: 1 }],
    [0x16, { alphabet: '8bit', messageClass: 2 }],
    [0x1b, { alphabet: 'ucs2', messageClass: 3 }],
    [0x20, { alphabet: 'compressed', compressedAlphabet: 'gsm7' }],
    [0x3a, { alphabet: 'compressed', compressedAlphabet: 'ucs2', messageClass: 2 }],
    [0x40, { alphabet: 'gsm7', autoDelete: true }],
    [0x48, { alphabet: 'ucs2', autoDelete: true }],
    [0x55, { alphabet: '8bit', autoDelete: true, messageClass: 1 }],
    [0x60, { alphabet: 'compressed', compressedAlphabet: 'gsm7', autoDelete: true }],
    [0xc0, { alphabet: 'gsm7', waiting: { kind: 'voicemail', active: false, store: false } }],
    [0xc8, { alphabet: 'gsm7', waiting: { kind: 'voicemail', active: true, store: false } }],
    [0xcb, { alphabet: 'gsm7', waiting: { kind: 'other', active: true, store: false } }],
    [0xd1, { alphabet: 'gsm7', waiting: { kind: 'fax', active: false, store: true } }],
    [0xda, { alphabet: 'gsm7', waiting: { kind: 'email', active: true, store: true } }],
    [0xe8, { alphabet: 'ucs2', waiting: { kind: 'voicemail', active: true, store: true } }],
    [0xf0, { alphabet: 'gsm7', messageClass: 0 }],
    [0xf1, { alphabet: 'gsm7', messageClass: 1 }],
    [0xf6, { alphabet: '8bit', messageClass: 2 }],
    [0xf7, { alphabet: '8bit', messageClass: 3 }],
  ] as const)('dcs %i', (dcs, want) => {
    expect(smsDcs(dcs)).toEqual(want);
  });

  it('reserved alphabet (bits 3-2 = 11) of the general groups is read as GSM 7-bit and named', () => {
    for (const v of ALL.filter((x) => x < 0x80 && ((x >> 2) & 3) === 3)) {
      expect(smsDcs(v)).toMatchObject({ reserved: expect.stringContaining('reserved alphabet') });
      expect([smsDcs(v).alphabet, smsDcs(v).compressedAlphabet]).toContain('gsm7');
    }
  });

  it('groups 1000-1011 are reserved: all 64 values read as GSM 7-bit, each with a warning', () => {
    for (const v of [...inGroup(8), ...inGroup(9), ...inGroup(0xa), ...inGroup(0xb)]) {
      expect(smsDcs(v)).toEqual({ alphabet: 'gsm7', reserved: expect.stringContaining('reserved coding group') });
    }
  });

  it('reserved bits (bit 2 of 1100-1110, bit 3 of 1111) are named and change nothing else', () => {
    const voicemail = { kind: 'voicemail', active: true, store: false };
    expect(smsDcs(0xcc)).toMatchObject({ alphabet: 'gsm7', waiting: voicemail, reserved: expect.any(String) });
    expect(smsDcs(0xf8)).toMatchObject({ alphabet: 'gsm7', messageClass: 0, reserved: expect.any(String) });
  });

  it('every one of the 256 values has an answer and compressed is exactly bit 5 of groups 00xx/01xx', () => {
    for (const v of ALL) {
      const d = smsDcs(v);
      expect(['gsm7', '8bit', 'ucs2', 'compressed']).toContain(d.alphabet);
      expect(d.alphabet === 'compressed').toBe(v < 0x80 && (v & 0x20) !== 0);
      expect(d.waiting !== undefined).toBe(v >= 0xc0 && v < 0xf0);
    }
  });

  it('node-pdu, a second decoder, agrees on class, compression, alphabet and the discard group', () => {
    // node-pdu throws on the reserved alphabet (bits 3-2 = 11), which the specification reads as GSM 7-bit.
    const checked = ALL.filter((v) => (v < 0x40 && ((v >> 2) & 3) !== 3) || (v >> 4 === 0xc && v & 0x08) || v >= 0xf0);
    for (const v of checked) {
      const pdu = `0004038158F800${v.toString(16).padStart(2, '0').toUpperCase()}8110809003218200`;
      const n = (parse(pdu) as unknown as { dataCodingScheme: Record<string, unknown> }).dataCodingScheme;
      const d = smsDcs(v);
      const at = `DCS 0x${v.toString(16)}`;
      if (v < 0x40) {
        expect(n['compressedText'], at).toBe(d.alphabet === 'compressed');
        expect(n['useMessageClass'], at).toBe(d.messageClass !== undefined);
        if (d.messageClass !== undefined) expect(n['classMessage'], at).toBe(d.messageClass);
        expect(['gsm7', '8bit', 'ucs2'][n['textAlphabet'] as number], at).toBe(d.compressedAlphabet ?? d.alphabet);
      } else if (v < 0xf0) {
        const type = ['voicemail', 'fax', 'email', 'other'].indexOf(d.waiting!.kind);
        expect([n['discardMessage'], n['messageIndication'], n['messageIndicationType']], at).toEqual([true, 1, type]);
      } else {
        const alphabet = n['textAlphabet'] === 1 ? '8bit' : 'gsm7';
        expect([alphabet, n['classMessage']], at).toEqual([d.alphabet, d.messageClass]);
      }
    }
  });
});

describe('TS 23.038 §5 (CBS and USSD): every value', () => {
  it.each([
    [0x00, { alphabet: 'gsm7', language: 'de' }],
    [0x01, { alphabet: 'gsm7', language: 'en' }],
    [0x0e, { alphabet: 'gsm7', language: 'pl' }],
    [0x0f, { alphabet: 'gsm7' }], // language unspecified: the value most USSD replies carry
    [0x10, { alphabet: 'gsm7', languagePrefix: 'gsm7' }],
    [0x11, { alphabet: 'ucs2', languagePrefix: 'ucs2' }],
    [0x20, { alphabet: 'gsm7', language: 'cs' }],
    [0x24, { alphabet: 'gsm7', language: 'is' }],
    [0x44, { alphabet: '8bit' }],
    [0x48, { alphabet: 'ucs2' }],
    [0x52, { alphabet: 'gsm7', messageClass: 2 }],
    [0x60, { alphabet: 'compressed', compressedAlphabet: 'gsm7' }],
    [0x68, { alphabet: 'compressed', compressedAlphabet: 'ucs2' }],
    [0x91, { alphabet: 'gsm7', udh: true, messageClass: 1 }],
    [0x98, { alphabet: 'ucs2', udh: true, messageClass: 0 }],
    [0xe3, { alphabet: '8bit', wap: true }],
    [0xf0, { alphabet: 'gsm7' }],
    [0xf1, { alphabet: 'gsm7', messageClass: 1 }],
    [0xf4, { alphabet: '8bit' }],
    [0xf7, { alphabet: '8bit', messageClass: 3 }],
  ] as const)('dcs %i', (dcs, want) => {
    expect(cbsDcs(dcs)).toEqual(want);
  });

  it('reserved values read as GSM 7-bit with a warning: 0x12-0x1F, 0x25-0x2F, 0x30-0x3F, 0x80-0x8F, 0xA0-0xDF', () => {
    const between = (v: number, lo: number, hi: number) => v >= lo && v <= hi;
    const reserved = ALL.filter(
      (v) => between(v, 0x12, 0x1f) || between(v, 0x25, 0x3f) || between(v, 0x80, 0x8f) || between(v, 0xa0, 0xdf),
    );
    expect(reserved).toHaveLength(14 + 27 + 16 + 64);
    for (const v of reserved) expect(cbsDcs(v)).toEqual({ alphabet: 'gsm7', reserved: expect.any(String) });
  });

  it('every one of the 256 values has an answer; compressed is exactly bit 5 of groups 01xx', () => {
    for (const v of ALL) {
      const d = cbsDcs(v);
      expect(['gsm7', '8bit', 'ucs2', 'compressed']).toContain(d.alphabet);
      expect(d.alphabet === 'compressed').toBe(v >> 6 === 1 && (v & 0x20) !== 0);
    }
  });

  it('describes a value for an operator', () => {
    expect(describeCbsDcs(0x11)).toBe('UCS2 with a language indication');
    expect(describeCbsDcs(0x60)).toBe('compressed GSM 7-bit (not decodable)');
    expect(describeCbsDcs(0x01)).toBe('GSM 7-bit, language en');
    expect(describeCbsDcs(0xa5)).toBe('GSM 7-bit (reserved value)');
  });
});
