import { describe, expect, it } from 'vitest';
import {
  continueCusd,
  dcsAlphabet,
  decodeUssdPayload,
  isUndecodedUssd,
  parseCusdLine,
  ussdLanguage,
  unpackGsm7Hex,
} from '../../src/modem/ussd-codec.js';
import { packGsm7 } from '../../src/sms/gsm7.js';

describe('packGsm7 for USSD strings', () => {
  it.each([
    // Published in the field notes and Huawei USSD guides.
    ['*100#', 'AA180C3602'],
    ['*888#', '2A1C0E3702'],
    // 7 septets leave 7 spare bits: a CR (0x0D) is packed into them.
    ['*858*1#', '2A5C0DA78A8D1A'],
  ])('%s -> %s', (code, hex) => {
    expect(packGsm7(code)).toBe(hex);
  });

  it('refuses characters outside the GSM 7-bit alphabet', () => {
    expect(() => packGsm7('*100#✓')).toThrow(RangeError);
  });

  it('round-trips text with extension characters', () => {
    const text = 'Saldo [Rp] 5000 {bonus} €1';
    expect(unpackGsm7Hex(packGsm7(text))).toBe(text);
  });
});

describe('unpackGsm7Hex', () => {
  it('reads a Huawei packed reply and drops the zero padding bits instead of adding "@"', () => {
    // Packed independently of this codec (39 septets in 35 octets).
    const hex = 'D3F43C0C82D7D9F330480A77C9683059CD155CD3D366D09C0C92E15E30DC4B068BD900';
    expect(unpackGsm7Hex(hex)).toBe('Sisa pulsa Rp.24025.Aktif sd 28/08/2016');
  });

  it('drops the CR pad of a 7-septet code', () => {
    expect(unpackGsm7Hex('2A5C0DA78A8D1A')).toBe('*858*1#');
  });
});

describe('dcsAlphabet', () => {
  it.each([
    [15, 'gsm7'],
    [0, 'gsm7'],
    [72, 'ucs2'],
    [0x11, 'ucs2'],
    [0x44, '8bit'],
    [0xf4, '8bit'],
    [0x60, 'compressed'],
    [0xe0, '8bit'],
    [0xa0, 'gsm7'],
  ] as const)('dcs %i -> %s', (dcs, alphabet) => {
    expect(dcsAlphabet(dcs)).toBe(alphabet);
  });
});

describe('decodeUssdPayload', () => {
  const ucs2 = '0053006900730061002000700075006C00730061002000520070002E0031003000300030';
  it.each([
    ['plain text stays as is', 'Sisa pulsa Rp.24025', 15, false, 'Sisa pulsa Rp.24025', 'text'],
    ['UCS2 hex with dcs 72', ucs2, 72, false, 'Sisa pulsa Rp.1000', 'ucs2-hex'],
    ['UCS2 hex with dcs 0x11', ucs2, 0x11, false, 'Sisa pulsa Rp.1000', 'ucs2-hex'],
    ['UCS2-looking hex with dcs 15', ucs2, 15, false, 'Sisa pulsa Rp.1000', 'ucs2-hex'],
    [
      'ASCII hex with dcs 0 keeps CR/LF',
      '4D656E753A0D0A312E43656B2050756C73610D0A322E50616B6574',
      0,
      false,
      'Menu:\r\n1.Cek Pulsa\r\n2.Paket',
      'ascii-hex',
    ],
    [
      'packed hex from a packed-hex modem',
      'D03A7B1E0605DDE430480A07D5603018',
      15,
      true,
      'Pulsa Anda Rp 5000',
      'packed-gsm7-hex',
    ],
    ['digits are not mistaken for hex with dcs 15', '1234', 15, false, '1234', 'text'],
    ['digits are not mistaken for ASCII hex with dcs 0', '3132', 0, false, '3132', 'text'],
  ] as const)('%s', (_label, payload, dcs, packed, text, form) => {
    expect(decodeUssdPayload(payload, dcs, { packed })).toEqual({ text, form });
  });

  describe('TS 23.038 §5 language indications, headers, compression', () => {
    // 'Sisa pulsa Rp.1000' as UCS2; the language 'id' packed in two octets:
    // i=69, d=64 -> 69|(64&1)<<7 = 69, 64>>1 = 32.
    const hello = '0053006900730061002000700075006C00730061002000520070002E0031003000300030';
    it.each([
      [
        'dcs 0x11, packed GSM 7-bit language (spec form)',
        '6932' + hello,
        0x11,
        false,
        { text: 'Sisa pulsa Rp.1000', form: 'ucs2-hex', language: 'id' },
      ],
      [
        'dcs 0x11, language "EN" in capitals: e=45, n=4E -> 45, 27',
        '4527' + hello,
        0x11,
        false,
        { text: 'Sisa pulsa Rp.1000', form: 'ucs2-hex', language: 'en' },
      ],
      [
        'dcs 0x11, language as two 8-bit letters',
        '6964' + hello,
        0x11,
        false,
        { text: 'Sisa pulsa Rp.1000', form: 'ucs2-hex', language: 'id' },
      ],
      [
        'dcs 0x11, language as two characters before the hex',
        'id' + hello,
        0x11,
        false,
        { text: 'Sisa pulsa Rp.1000', form: 'ucs2-hex', language: 'id' },
      ],
      [
        'dcs 0x11, language and a space before the hex',
        'id ' + hello,
        0x11,
        false,
        { text: 'Sisa pulsa Rp.1000', form: 'ucs2-hex', language: 'id' },
      ],
      // 'id' and CR packed as DCS 0x10 writes it: 69|(64&1)<<7 = 69, 64>>1|(0D&3)<<6 = 72, 0D>>2 = 03
      [
        'dcs 0x11, language and CR packed in three octets',
        '697203' + hello,
        0x11,
        false,
        { text: 'Sisa pulsa Rp.1000', form: 'ucs2-hex', language: 'id' },
      ],
      [
        'dcs 0x11, no language at all (read whole)',
        hello,
        0x11,
        false,
        { text: 'Sisa pulsa Rp.1000', form: 'ucs2-hex' },
      ],
      [
        'dcs 0x10, text mode: language, CR, text',
        'id\rSisa pulsa',
        0x10,
        false,
        { text: 'Sisa pulsa', form: 'text', language: 'id' },
      ],
      [
        'dcs 0x10, lines joined with LF',
        'en\nBalance 5000',
        0x10,
        false,
        { text: 'Balance 5000', form: 'text', language: 'en' },
      ],
      [
        'dcs 0x10: only the one CR goes with the language (found by test/fuzz, ussd/decode-round-trip)',
        'id\r\nSisa',
        0x10,
        false,
        { text: '\nSisa', form: 'text', language: 'id' },
      ],
      ['dcs 0x10 without a CR keeps the text', 'Sisa pulsa', 0x10, false, { text: 'Sisa pulsa', form: 'text' }],
      // 'en\rHi' packed by hand, septets 65 6E 0D 48 69 written LSB first: 65|(6E<<7) = 65, 6E>>1|0D<<6 = 77,
      // 0D>>2|48<<5 = 03, 48>>3|69<<4 = 99, 69>>4 = 06
      [
        'dcs 0x10, packed by a packed-hex modem',
        '6577039906',
        0x10,
        true,
        { text: 'Hi', form: 'packed-gsm7-hex', language: 'en' },
      ],
      [
        'dcs 0x01 (English, group 0000): GSM 7-bit text',
        'Balance 5000',
        0x01,
        false,
        { text: 'Balance 5000', form: 'text' },
      ],
      // Group 1001 with a UDH: UDHL 05, IE 00 03 ref 01 total 01 seq 01.
      [
        'dcs 0x98 (UCS2 with a UDH): header skipped',
        '050003010101' + '00480069',
        0x98,
        false,
        { text: 'Hi', form: 'ucs2-hex' },
      ],
      // Packed after a 6-octet header (48 bits, so 1 fill bit to a septet boundary): (48<<1)&FF = 90, 48>>7|69<<0 = 69
      [
        'dcs 0x90 (GSM 7-bit with a UDH), packed',
        '050003010101' + '9069',
        0x90,
        true,
        { text: 'Hi', form: 'packed-gsm7-hex' },
      ],
      ['dcs 0x94 (8-bit with a UDH)', '050003010101' + '4869', 0x94, false, { text: 'Hi', form: '8bit-hex' }],
    ] as const)('%s', (_label, payload, dcs, packed, want) => {
      expect(decodeUssdPayload(payload, dcs, { packed })).toEqual(want);
    });

    it.each([0x60, 0x64, 0x68, 0x7c])('compressed (dcs %i) is never decoded: left as it came, undecoded', (dcs) => {
      const payload = 'D03A7B1E0605DDE430480A07D5603018';
      expect(decodeUssdPayload(payload, dcs, { packed: true })).toEqual({ text: payload, form: 'text' });
      expect(isUndecodedUssd(payload, dcs, payload)).toBe(true);
    });

    it('reserved values read as GSM 7-bit (dcs 0x80, 0xA5, 0x3F)', () => {
      for (const dcs of [0x80, 0xa5, 0x3f]) {
        expect(decodeUssdPayload('D03A7B1E0605DDE430480A07D5603018', dcs, { packed: true }).text).toBe(
          'Pulsa Anda Rp 5000',
        );
      }
    });
  });

  it('leaves packed-looking hex alone for a text-mode modem', () => {
    expect(decodeUssdPayload('D03A7B1E0605DDE430480A07D5603018', 15).form).toBe('text');
  });
});

describe('parseCusdLine', () => {
  it.each([
    ['+CUSD: 0,"Sisa pulsa Rp.24025",15', { status: 0, payload: 'Sisa pulsa Rp.24025', dcs: 15, complete: true }],
    ['+CUSD: 4', { status: 4, payload: undefined, dcs: undefined, complete: true }],
    [
      '+CUSD: 2,"Maaf, operasi gagal karena format pesan yang tidak valid.",15',
      { status: 2, payload: 'Maaf, operasi gagal karena format pesan yang tidak valid.', dcs: 15, complete: true },
    ],
    ['+CUSD: 1,"Pilih: \\"1\\" ya",0', { status: 1, payload: 'Pilih: \\"1\\" ya', dcs: 0, complete: true }],
    ['+CUSD: 1,"Menu:', { status: 1, payload: 'Menu:', dcs: undefined, complete: false }],
    ['+CUSD: 0,"ABC"', { status: 0, payload: 'ABC', dcs: undefined, complete: true }],
  ])('%s', (line, parsed) => {
    expect(parseCusdLine(line)).toEqual(parsed);
  });

  it('joins continuation lines until the quote closes', () => {
    let c = parseCusdLine('+CUSD: 1,"Menu:')!;
    c = continueCusd(c, '1.Cek Pulsa');
    expect(c.complete).toBe(false);
    c = continueCusd(c, '2.Paket",15');
    expect(c).toEqual({ status: 1, payload: 'Menu:\n1.Cek Pulsa\n2.Paket', dcs: 15, complete: true });
  });

  it('is undefined for other lines', () => {
    expect(parseCusdLine('+CMTI: "SM",1')).toBeUndefined();
  });
});

describe('ussdLanguage', () => {
  it('names the language a decoding took off, for the packed and the text forms', () => {
    expect(ussdLanguage('6577039906', 0x10, 'Hi')).toBe('en');
    expect(ussdLanguage('id\rSisa', 0x10, 'Sisa')).toBe('id');
    expect(ussdLanguage('69320048', 0x11, 'H')).toBe('id');
  });
  it('is undefined for a DCS without a language prefix, or a text that kept it', () => {
    expect(ussdLanguage('Sisa', 15, 'Sisa')).toBeUndefined();
    expect(ussdLanguage('id\rSisa', 0x10, 'id\rSisa')).toBeUndefined();
  });
});

describe('isUndecodedUssd', () => {
  it.each([
    ['C8329BFD06', 68, 'C8329BFD06', true], // 8-bit data nothing could read
    ['D83DDE00D83D', 72, 'D83DDE00D83D', true], // UCS2 dcs, hex that is not printable UCS2
    ['A1B2C3D4E5', 15, 'A1B2C3D4E5', true], // hex in a GSM dcs no rule could read
    ['Sisa pulsa Rp.24025', 15, 'Sisa pulsa Rp.24025', false],
    ['12345678', 15, '12345678', false], // a number alone is a menu, not undecoded hex
    ['00480061006C006F', 72, 'Halo', false], // decoded
    ['', 15, '', false],
  ])('%s (dcs %s) -> %s', (payload, dcs, text, undecoded) => {
    expect(isUndecodedUssd(payload, dcs, text)).toBe(undecoded);
  });
});
