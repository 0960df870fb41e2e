import { describe, expect, it } from 'vitest';
import {
  bytesToHex,
  decodeGsm7,
  GSM7_DEFAULT_CHARS,
  GSM7_EXTENSION_CHARS,
  gsm7SeptetLength,
  hexToBytes,
  packGsm7,
  packSeptets,
  septetsToText,
  textToSeptets,
  udhFillBits,
  unpackGsm7,
  unpackSeptets,
} from '../../src/sms/gsm7.js';

// 3GPP TS 23.038 §6.2.1, typed from the standard's table (column = high 3 bits, row = low 4 bits).
const DEFAULT: Array<[number, string]> = [
  [0x00, '@'],
  [0x01, '£'],
  [0x02, '$'],
  [0x03, '¥'],
  [0x04, 'è'],
  [0x05, 'é'],
  [0x06, 'ù'],
  [0x07, 'ì'],
  [0x08, 'ò'],
  [0x09, 'Ç'],
  [0x0a, '\n'],
  [0x0b, 'Ø'],
  [0x0c, 'ø'],
  [0x0d, '\r'],
  [0x0e, 'Å'],
  [0x0f, 'å'],
  [0x10, 'Δ'],
  [0x11, '_'],
  [0x12, 'Φ'],
  [0x13, 'Γ'],
  [0x14, 'Λ'],
  [0x15, 'Ω'],
  [0x16, 'Π'],
  [0x17, 'Ψ'],
  [0x18, 'Σ'],
  [0x19, 'Θ'],
  [0x1a, 'Ξ'],
  [0x1c, 'Æ'],
  [0x1d, 'æ'],
  [0x1e, 'ß'],
  [0x1f, 'É'],
  [0x20, ' '],
  [0x21, '!'],
  [0x22, '"'],
  [0x23, '#'],
  [0x24, '¤'],
  [0x25, '%'],
  [0x26, '&'],
  [0x27, "'"],
  [0x28, '('],
  [0x29, ')'],
  [0x2a, '*'],
  [0x2b, '+'],
  [0x2c, ','],
  [0x2d, '-'],
  [0x2e, '.'],
  [0x2f, '/'],
  [0x30, '0'],
  [0x31, '1'],
  [0x32, '2'],
  [0x33, '3'],
  [0x34, '4'],
  [0x35, '5'],
  [0x36, '6'],
  [0x37, '7'],
  [0x38, '8'],
  [0x39, '9'],
  [0x3a, ':'],
  [0x3b, ';'],
  [0x3c, '<'],
  [0x3d, '='],
  [0x3e, '>'],
  [0x3f, '?'],
  [0x40, '¡'],
  [0x41, 'A'],
  [0x42, 'B'],
  [0x43, 'C'],
  [0x44, 'D'],
  [0x45, 'E'],
  [0x46, 'F'],
  [0x47, 'G'],
  [0x48, 'H'],
  [0x49, 'I'],
  [0x4a, 'J'],
  [0x4b, 'K'],
  [0x4c, 'L'],
  [0x4d, 'M'],
  [0x4e, 'N'],
  [0x4f, 'O'],
  [0x50, 'P'],
  [0x51, 'Q'],
  [0x52, 'R'],
  [0x53, 'S'],
  [0x54, 'T'],
  [0x55, 'U'],
  [0x56, 'V'],
  [0x57, 'W'],
  [0x58, 'X'],
  [0x59, 'Y'],
  [0x5a, 'Z'],
  [0x5b, 'Ä'],
  [0x5c, 'Ö'],
  [0x5d, 'Ñ'],
  [0x5e, 'Ü'],
  [0x5f, '§'],
  [0x60, '¿'],
  [0x61, 'a'],
  [0x62, 'b'],
  [0x63, 'c'],
  [0x64, 'd'],
  [0x65, 'e'],
  [0x66, 'f'],
  [0x67, 'g'],
  [0x68, 'h'],
  [0x69, 'i'],
  [0x6a, 'j'],
  [0x6b, 'k'],
  [0x6c, 'l'],
  [0x6d, 'm'],
  [0x6e, 'n'],
  [0x6f, 'o'],
  [0x70, 'p'],
  [0x71, 'q'],
  [0x72, 'r'],
  [0x73, 's'],
  [0x74, 't'],
  [0x75, 'u'],
  [0x76, 'v'],
  [0x77, 'w'],
  [0x78, 'x'],
  [0x79, 'y'],
  [0x7a, 'z'],
  [0x7b, 'ä'],
  [0x7c, 'ö'],
  [0x7d, 'ñ'],
  [0x7e, 'ü'],
  [0x7f, 'à'],
];
// §6.2.1.1 extension table: ESC (1B) followed by these codes.
const EXTENSION: Array<[number, string]> = [
  [0x0a, '\f'],
  [0x14, '^'],
  [0x28, '{'],
  [0x29, '}'],
  [0x2f, '\\'],
  [0x3c, '['],
  [0x3d, '~'],
  [0x3e, ']'],
  [0x40, '|'],
  [0x65, '€'],
];

describe('GSM 7-bit default alphabet', () => {
  it('the table covers all 127 codes except ESC', () => {
    expect(DEFAULT).toHaveLength(127);
    expect(GSM7_DEFAULT_CHARS).toEqual(DEFAULT.map(([, ch]) => ch));
    expect(GSM7_EXTENSION_CHARS.slice().sort()).toEqual(EXTENSION.map(([, ch]) => ch).sort());
  });

  it.each(DEFAULT.map(([code, ch]) => [`0x${code.toString(16).padStart(2, '0')}`, code, ch] as const))(
    'septet %s <-> %j',
    (_label, code, ch) => {
      expect(septetsToText([code])).toBe(ch);
      expect(textToSeptets(ch)).toEqual([code]);
    },
  );

  it.each(EXTENSION.map(([code, ch]) => [`0x${code.toString(16)}`, code, ch] as const))(
    'extension ESC %s <-> %j (two septets)',
    (_label, code, ch) => {
      expect(septetsToText([0x1b, code])).toBe(ch);
      expect(textToSeptets(ch)).toEqual([0x1b, code]);
      expect(gsm7SeptetLength(ch)).toBe(2);
    },
  );

  it("0x5F is '§', not a backtick", () => {
    expect(septetsToText([0x5f])).toBe('§');
    expect(textToSeptets('`')).toBeUndefined();
  });

  it('ESC + a code without an extension symbol shows the default symbol; ESC ESC and a trailing ESC show a space', () => {
    expect(septetsToText([0x1b, 0x41])).toBe('A');
    expect(septetsToText([0x41, 0x1b, 0x1b, 0x42])).toBe('A B');
    expect(septetsToText([0x41, 0x1b])).toBe('A ');
  });

  it('characters outside the alphabet make the text non-encodable', () => {
    expect(textToSeptets('Rp 5.000 ✓')).toBeUndefined();
    expect(textToSeptets('😀')).toBeUndefined();
    expect(gsm7SeptetLength('a€')).toBe(3);
  });

  it('round trip of the whole default and extension tables through pack/unpack, at every fill-bit alignment', () => {
    const text = GSM7_DEFAULT_CHARS.join('') + GSM7_EXTENSION_CHARS.join('');
    const septets = textToSeptets(text);
    expect(septets).toBeDefined();
    expect(septets).toHaveLength(127 + 2 * 10);
    for (let fill = 0; fill < 7; fill++) {
      const packed = packSeptets(septets!, fill);
      expect(decodeGsm7(packed, septets!.length, fill)).toBe(text);
    }
  });
});

describe('septet packing, hand-packed (TS 23.038 §6.1.2.1)', () => {
  it.each([
    // "hellohello": h=68 e=65 l=6C l=6C o=6F h=68 e=65 l=6C l=6C o=6F
    // E8 = 68|(65&1)<<7, 32 = 65>>1|(6C&3)<<6, 9B = 6C>>2|(6C&7)<<5, FD = 6C>>3|(6F&F)<<4,
    // 46 = 6F>>4|(68&1F)<<3, 97 = 68>>5|(65&3F)<<2, D9 = 65>>6|6C<<1, EC = 6C|(6F&1)<<7, 37 = 6F>>1
    ['hellohello', 0, 'E8329BFD4697D9EC37'],
    // "hello" after 1 fill bit (behind a 6-octet UDH): D0 = 68<<1, 65, 36 = 6C>>1, FB = 6C>>2|(6F&7)<<5, 0D = 6F>>3
    ['hello', 1, 'D06536FB0D'],
    // "€" = 1B 65: 9B = 1B|(65&1)<<7, 32 = 65>>1
    ['€', 0, '9B32'],
    // "§" = 5F alone
    ['§', 0, '5F'],
    // "[]" = 1B 3C 1B 3E: 1B = 1B|(3C&1)<<7, DE = 3C>>1|(1B&3)<<6 = 1E|C0, C6 = 1B>>2|(3E&7)<<5 = 06|C0, 07 = 3E>>3
    ['[]', 0, '1BDEC607'],
  ])('%j with %i fill bits -> %s', (text, fill, hex) => {
    expect(bytesToHex(packSeptets(textToSeptets(text)!, fill))).toBe(hex);
    const septets = textToSeptets(text)!;
    expect(decodeGsm7(hexToBytes(hex)!, septets.length, fill)).toBe(text);
  });

  it('unpackSeptets refuses to read past the octets', () => {
    expect(unpackSeptets([0xe8, 0x32], 3)).toBeUndefined();
    expect(unpackSeptets([0xe8, 0x32], 2)).toEqual([0x68, 0x65]);
  });

  it.each([
    [6, 1],
    [7, 0],
    [8, 6],
    [0, 0],
  ])('UDH of %i octets -> %i fill bits', (octets, fill) => {
    expect(udhFillBits(octets)).toBe(fill);
  });
});

describe('packed USSD strings (Huawei), TS 23.038 §6.1.2.3.1', () => {
  it('*100# <-> AA180C3602', () => {
    // '*'=2A '1'=31 '0'=30 '0'=30 '#'=23: AA = 2A|(31&1)<<7, 18 = 31>>1|(30&3)<<6, 0C = 30>>2|(30&7)<<5,
    // 36 = 30>>3|(23&F)<<4, 02 = 23>>4
    expect(packGsm7('*100#')).toBe('AA180C3602');
    expect(unpackGsm7('AA180C3602')).toBe('*100#');
    expect(unpackGsm7('aa180c3602')).toBe('*100#');
  });

  it('7 characters (8n-1 septets) are padded with CR in the spare 7 bits, and the CR is dropped on decode', () => {
    // '1'..'7' = 31..37, CR = 0D: 31, D9 = 32>>1|(33&3)<<6, 8C = 33>>2|(34&7)<<5, 56 = 34>>3|(35&F)<<4,
    // B3 = 35>>4|(36&1F)<<3, DD = 36>>5|(37&3F)<<2, 1A = 37>>6|0D<<1
    expect(packGsm7('1234567')).toBe('31D98C56B3DD1A');
    expect(unpackGsm7('31D98C56B3DD1A')).toBe('1234567');
  });

  it('zero padding (a non-conforming sender) shows as a trailing @, as the standard implies', () => {
    expect(unpackGsm7('31D98C56B3DD00')).toBe('1234567@');
  });

  it('8 characters fill 7 octets exactly: no padding, nothing dropped', () => {
    // last octet 70 = 37>>6|38<<1
    expect(packGsm7('12345678')).toBe('31D98C56B3DD70');
    expect(unpackGsm7('31D98C56B3DD70')).toBe('12345678');
  });

  it('a text of 8 septets ending in CR gets a second CR so the wanted one survives', () => {
    const hex = packGsm7('1234567\r');
    expect(hex).toBe('31D98C56B3DD1A0D');
    expect(unpackGsm7(hex)).toBe('1234567\r\r'); // the receiver performs CR twice (§6.1.2.3.1)
  });

  it('15 characters (8n-1 with n=2) are padded too', () => {
    const text = '*123*0812345678';
    expect(text).toHaveLength(15);
    const hex = packGsm7(text);
    expect(hex.length / 2).toBe(14);
    expect(unpackGsm7(hex)).toBe(text);
  });

  it('malformed hex -> undefined; a non-GSM character cannot be packed', () => {
    expect(unpackGsm7('AA1')).toBeUndefined();
    expect(unpackGsm7('ZZ')).toBeUndefined();
    expect(() => packGsm7('😀')).toThrow(RangeError);
  });
});
