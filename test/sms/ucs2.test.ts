import { describe, expect, it } from 'vitest';
import { decodeUcs2Hex, encodeUcs2Hex, hasLoneSurrogate, replaceLoneSurrogates } from '../../src/sms/ucs2.js';

describe('UCS2 / UTF-16BE', () => {
  it.each([
    ['0048006100690020D83DDE00', 'Hai 😀'], // U+1F600 = D83D DE00
    ['20AC', '€'],
    ['00410042', 'AB'],
    ['D83CDDEED83CDDE9', '🇮🇩'], // flag: two surrogate pairs
    ['', ''],
  ])('%s <-> %j', (hex, text) => {
    expect(decodeUcs2Hex(hex)).toBe(text);
    expect(encodeUcs2Hex(text)).toBe(hex);
  });

  it('an odd octet count or bad hex is rejected, not decoded to half a character', () => {
    expect(decodeUcs2Hex('004100')).toBeUndefined();
    expect(decodeUcs2Hex('00G1')).toBeUndefined();
  });

  it('lone surrogates are kept by the decoder and can be replaced with U+FFFD', () => {
    const half = decodeUcs2Hex('0041D83D')!;
    expect(hasLoneSurrogate(half)).toBe(true);
    expect(replaceLoneSurrogates(half)).toBe('A\uFFFD');
    expect(replaceLoneSurrogates('\uDE00B')).toBe('\uFFFDB');
    expect(hasLoneSurrogate('Hai 😀')).toBe(false);
    expect(replaceLoneSurrogates('Hai 😀')).toBe('Hai 😀');
  });
});
