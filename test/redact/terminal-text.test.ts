import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { safeJson, safeText } from '../../src/terminal-text.js';

/** What a terminal acts on: C0 (but newline where kept), DEL, C1, bidi controls, line/paragraph separators. */
const ACTIVE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

describe('safeText: control characters from modems and SMS senders shown as escapes', () => {
  it.each([
    ['an OSC title', '\x1b]0;pwned\x07hello', '\\x1b]0;pwned\\x07hello'],
    ['a screen clear (CSI)', '\x1b[2J\x1b[Hfake prompt$ ', '\\x1b[2J\\x1b[Hfake prompt$ '],
    ['a one-byte C1 CSI', '\u009b31mred', '\\u{9b}31mred'],
    ['C1 OSC and ST', '\u009d0;t\u009c', '\\u{9d}0;t\\u{9c}'],
    ['a carriage return overwriting the line', 'Rp 5000 OK\rRp 500000 OK', 'Rp 5000 OK\\rRp 500000 OK'],
    ['a bidi override reversing a number', 'ke \u202e0987654321\u202c', 'ke \\u{202e}0987654321\\u{202c}'],
    ['bidi isolates', '\u2066a\u2069 \u200f', '\\u{2066}a\\u{2069} \\u{200f}'],
    ['DEL and backspace', 'ab\b\bxy\x7f', 'ab\\x08\\x08xy\\x7f'],
    ['a newline in a one-line field', 'a\nhealth: ok', 'a\\nhealth: ok'],
    ['printable text of any script', 'Saldo Rp 10.000 ✓ 日本 ünïcödé 🙂', 'Saldo Rp 10.000 ✓ 日本 ünïcödé 🙂'],
  ])('%s', (_what, input, want) => expect(safeText(input)).toBe(want));

  it('keeps newlines of a multi-line text, escapes the rest', () => {
    expect(safeText('line 1\nline 2\r\n\x1b[31m', { multiline: true })).toBe('line 1\nline 2\\r\n\\x1b[31m');
  });

  it('leaves nothing a terminal acts on, whatever the input', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        expect(safeText(s)).not.toMatch(ACTIVE);
        expect(safeText(s)).not.toContain('\n');
        expect(safeText(s, { multiline: true })).not.toMatch(ACTIVE);
      }),
    );
  });

  it('safeJson: the same value back, with nothing raw a terminal acts on', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string({ unit: 'binary' }), (v, s) => {
        const value = { v, s };
        const text = safeJson(value, 2);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value)));
        expect(text.replace(/\n/g, '')).not.toMatch(ACTIVE);
      }),
    );
  });
});
