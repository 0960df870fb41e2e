import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { createSenderFilter, normalizeSender } from '../../src/filter/sender.js';

describe('normalizeSender', () => {
  it.each([
    ['+6281234567890', '6281234567890'],
    ['6281234567890', '6281234567890'],
    ['081234567890', '6281234567890'],
    ['  +62 812-3456-7890 ', '6281234567890'],
    ['858', '858'],
    [' 168 ', '168'],
    ['TELKOMSEL', 'telkomsel'],
    ['Telkomsel', 'telkomsel'],
    ['my XL', 'my xl'],
    ['+TELKOMSEL', 'telkomsel'],
    ['0062812', '0062812'], // '00' is not the Indonesian trunk prefix: left alone
    ['0812', '0812'], // too short to be a national number
  ])('%j -> %j', (input, out) => {
    expect(normalizeSender(input)).toBe(out);
  });
});

describe('createSenderFilter', () => {
  const filter = createSenderFilter(['858', 'TELKOMSEL', '+6281100000', '168']);
  it.each([
    ['858', true, '858'],
    ['+858', true, '858'],
    ['telkomsel', true, 'TELKOMSEL'],
    ['TelkomSel ', true, 'TELKOMSEL'],
    ['+6281100000', true, '+6281100000'],
    ['6281100000', true, '+6281100000'],
    ['081100000', true, '+6281100000'],
    ['168', true, '168'],
    ['8580', false, undefined],
    ['85', false, undefined],
    ['TELKOMSEL2', false, undefined],
    ['+6281100001', false, undefined],
    ['151', false, undefined],
    ['', false, undefined],
  ])('%j -> accept %s (rule %j)', (sender, accept, rule) => {
    expect(filter(sender)).toEqual(rule === undefined ? { accept } : { accept, rule });
  });

  it("'*' accepts every sender", () => {
    const all = createSenderFilter(['*']);
    expect(all('anything')).toEqual({ accept: true, rule: '*' });
    expect(all('+6281234')).toEqual({ accept: true, rule: '*' });
  });

  it('an empty list accepts nothing', () => {
    const none = createSenderFilter([]);
    expect(none('858')).toEqual({ accept: false });
    expect(none('TELKOMSEL')).toEqual({ accept: false });
  });

  it('a blank entry is a configuration error, not a silent no-match', () => {
    expect(() => createSenderFilter(['858', '  '])).toThrow(ConfigError);
    expect(() => createSenderFilter(['858', '  '])).toThrow(/accepted senders\[1\]/);
  });
});
