import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseActiveDate, parseBalanceReply } from '../../src/balance/parse.js';

interface Fixture {
  operator: string;
  source: string;
  text: string;
  balance: number | null;
  activeUntil: string | null;
}
const fixtures = (
  JSON.parse(readFileSync(new URL('../fixtures/balance/replies.json', import.meta.url), 'utf8')) as {
    replies: Fixture[];
  }
).replies;

describe('operator balance replies (test/fixtures/balance/replies.json)', () => {
  it.each(fixtures.map((f) => [`${f.operator}: ${f.text}`, f] as const))('%s', (_name, f) => {
    expect(parseBalanceReply(f.text)).toEqual({ balance: f.balance, activeUntil: f.activeUntil });
  });
});

const MONTH_NAMES: readonly (readonly string[])[] = [
  ['jan', 'januari', 'january'],
  ['feb', 'februari', 'february'],
  ['mar', 'maret', 'march'],
  ['apr', 'april'],
  ['mei', 'may'],
  ['jun', 'juni', 'june'],
  ['jul', 'juli', 'july'],
  ['agu', 'agustus', 'aug', 'august'],
  ['sep', 'september'],
  ['okt', 'oktober', 'oct', 'october'],
  ['nov', 'november', 'nopember'],
  ['des', 'desember', 'dec', 'december'],
];
const realDate = fc
  .record({
    y: fc.integer({ min: 2000, max: 2099 }),
    mo: fc.integer({ min: 1, max: 12 }),
    d: fc.integer({ min: 1, max: 31 }),
  })
  .filter(({ y, mo, d }) => d <= new Date(Date.UTC(y, mo, 0)).getUTCDate());
const iso = ({ y, mo, d }: { y: number; mo: number; d: number }): string =>
  `${y}-${String(mo).padStart(2, '0')}-${String(d).padStart(2, '0')}`;
const casing = fc.constantFrom(
  (s: string) => s,
  (s: string) => s.toUpperCase(),
  (s: string) => s[0]!.toUpperCase() + s.slice(1),
);

const ENGLISH = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const SEPARATORS = fc.constantFrom(' ', '-', '', '.');

describe('date forms (property)', () => {
  it('reads a named month in any case, any separator, 2- or 4-digit year, compact or spaced', () => {
    fc.assert(
      fc.property(realDate, fc.nat(), casing, SEPARATORS, fc.boolean(), (dt, n, c, sep, short) => {
        const names = MONTH_NAMES[dt.mo - 1]!;
        const name = c(names[n % names.length]!);
        const yr = short ? String(dt.y % 100).padStart(2, '0') : String(dt.y);
        expect(parseActiveDate(`${dt.d}${sep}${name}${sep}${yr}`)).toBe(iso(dt));
      }),
    );
  });

  it('reads an English month-first date', () => {
    fc.assert(
      fc.property(realDate, casing, (dt, c) => {
        const name = c(ENGLISH[dt.mo - 1]!);
        expect(parseActiveDate(`${name} ${dt.d}, ${dt.y}`)).toBe(iso(dt));
      }),
    );
  });

  it('reads numeric dates day first, month first only where the day cannot be a month', () => {
    fc.assert(
      fc.property(realDate, fc.constantFrom('/', '-', '.'), (dt, sep) => {
        const dd = String(dt.d).padStart(2, '0');
        const mm = String(dt.mo).padStart(2, '0');
        expect(parseActiveDate(`${dd}${sep}${mm}${sep}${dt.y}`)).toBe(iso(dt));
        expect(parseActiveDate(`${dt.y}${sep}${mm}${sep}${dd}`)).toBe(iso(dt));
        const monthFirst = parseActiveDate(`${mm}${sep}${dd}${sep}${dt.y}`);
        if (dt.d > 12) expect(monthFirst).toBe(iso(dt));
        else if (dt.d !== dt.mo) expect(monthFirst).not.toBe(iso(dt)); // read day first, as the operators write
      }),
    );
  });

  it('never returns a date that does not exist', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 16 }), (s) => {
        const out = parseActiveDate(s);
        if (out !== null) expect(new Date(`${out}T00:00:00Z`).toISOString().slice(0, 10)).toBe(out);
      }),
    );
    expect(parseActiveDate('31-FEB-16')).toBeNull();
    expect(parseActiveDate('5 Foo 2016')).toBeNull();
    expect(parseActiveDate('13/13/2016')).toBeNull();
  });
});
