import { describe, expect, it } from 'vitest';
import {
  compilePatterns,
  DEFAULT_BALANCE_PATTERNS,
  judgeBalance,
  parseActiveDate,
  parseBalanceReply,
  parseRupiah,
} from '../../src/balance/parse.js';
import { daysUntil } from '../../src/time-format.js';

describe('parseRupiah', () => {
  it.each([
    ['24025', 24025],
    ['24025.', 24025],
    ['10.000', 10000],
    ['25.000,-', 25000],
    ['25.000,', 25000],
    ['25.000,00', 25000],
    ['5000,00', 5000],
    ['1,250,000', 1250000],
    ['1.250.000', 1250000],
    ['0', 0],
  ])('%s -> %d', (raw, want) => expect(parseRupiah(raw)).toBe(want));

  it.each(['1.23.4', '24.02', '10.000,50', '1.5', '12.3456', '1.000,000', '1,000.000.000'])(
    '%s is not a clean amount',
    (raw) => {
      expect(parseRupiah(raw)).toBeNull();
    },
  );
});

describe('parseActiveDate', () => {
  it.each([
    ['28/08/2026', '2026-08-28'],
    ['28-08-2026', '2026-08-28'],
    ['28.08.2026', '2026-08-28'],
    ['1/2/26', '2026-02-01'],
    ['2026-08-28', '2026-08-28'],
    ['28 Agu 2026', '2026-08-28'],
    ['5 Desember 2026', '2026-12-05'],
    ['29/02/2028', '2028-02-29'],
  ])('%s -> %s', (raw, want) => expect(parseActiveDate(raw)).toBe(want));

  it.each(['31/02/2026', '29/02/2027', '28/13/2026', '00/01/2026', '28/08-2026', '28 Foo 2026', '28/08/1999'])(
    '%s is not a date',
    (raw) => {
      expect(parseActiveDate(raw)).toBeNull();
    },
  );
});

describe('parseBalanceReply with the default patterns', () => {
  it.each([
    // field-notes.md: Telkomsel *888# menu, first line is the balance
    ['Sisa pulsa Rp.24025.Aktif sd 28/08/2026. 1.Paket Murah\n2.Info Kartu', 24025, '2026-08-28'],
    ['Pulsa Rp 10.000 aktif s/d 15-09-2026', 10000, '2026-09-15'],
    ['Sisa Pulsa Anda: Rp 25.000,- berlaku hingga 01.12.2026', 25000, '2026-12-01'],
    ['Saldo Rp5.000 Masa aktif: 7/1/27 Tenggang 6/2/27', 5000, '2027-01-07'],
    ['Pulsa utama Rp 1.250.000,00. Aktif sampai 28 Agu 2026', 1250000, '2026-08-28'],
    ['Balance: Rp 7500 active until 2026-10-31', 7500, '2026-10-31'],
    ['Rp 25.000,- s.d 30/11/2026', 25000, null], // no "aktif"/"berlaku" word before the date: not guessed
  ])('%j', (text, balance, activeUntil) => {
    expect(parseBalanceReply(text)).toEqual({ balance, activeUntil });
  });

  it('keeps nothing from a reply that matches no pattern', () => {
    expect(parseBalanceReply('Maaf, operasi gagal karena format pesan yang tidak valid.')).toEqual({
      balance: null,
      activeUntil: null,
    });
  });

  it('does not pick one of several prices from a menu', () => {
    const menu = '1.Paket 2GB Rp 10.000\n2.Paket 5GB Rp 25.000\n3.Info';
    expect(parseBalanceReply(menu).balance).toBeNull();
  });

  it('takes the same amount written twice', () => {
    expect(parseBalanceReply('Pulsa Rp 5.000. Info: pulsa Rp 5000').balance).toBe(5000);
  });

  it('uses patterns from config before giving up', () => {
    const text = 'Kredit tersisa 12.345 rupiah, habis 03-04-2027';
    expect(parseBalanceReply(text)).toEqual({ balance: null, activeUntil: null });
    const patterns = {
      balance: [String.raw`tersisa\s+(?<amount>[\d.]+)\s+rupiah`],
      activeUntil: [String.raw`habis\s+(\S+)`],
    };
    expect(parseBalanceReply(text, patterns)).toEqual({ balance: 12345, activeUntil: '2027-04-03' });
  });

  it('compilePatterns names a broken pattern', () => {
    expect(() => compilePatterns(['Rp(?<amount>\\d+'])).toThrow(/invalid pattern "Rp\(\?<amount>\\\\d\+"/);
    expect(compilePatterns(DEFAULT_BALANCE_PATTERNS.balance)).toHaveLength(DEFAULT_BALANCE_PATTERNS.balance.length);
  });
});

describe('judgeBalance', () => {
  const t = { minBalance: 10_000, activeWarnDays: 7 };
  it('is ok with money and time left', () => {
    expect(judgeBalance({ balance: 50_000, activeUntil: '2026-12-31' }, t, '2026-11-24')).toEqual({
      state: 'ok',
      reasons: [],
    });
  });
  it('warns on a low balance', () => {
    const v = judgeBalance({ balance: 5_000, activeUntil: '2026-12-31' }, t, '2026-11-24');
    expect(v.state).toBe('warning');
    expect(v.reasons).toEqual(['balance Rp 5000 is below Rp 10000']);
    expect(v.hint).toMatch(/top up/);
  });
  it('warns when the active period ends within the window, and when it has ended', () => {
    expect(judgeBalance({ balance: 50_000, activeUntil: '2026-11-30' }, t, '2026-11-24').reasons).toEqual([
      'active period ends on 2026-11-30 (6 days left)',
    ]);
    expect(judgeBalance({ balance: 50_000, activeUntil: '2026-12-02' }, t, '2026-11-24').state).toBe('ok');
    expect(judgeBalance({ balance: 50_000, activeUntil: '2026-11-20' }, t, '2026-11-24').reasons).toEqual([
      'active period ended on 2026-11-20',
    ]);
  });
  it('is unknown when nothing was parsed, never ok', () => {
    expect(judgeBalance({ balance: null, activeUntil: null }, t, '2026-11-24').state).toBe('unknown');
  });
  it('counts days across months and years', () => {
    expect(daysUntil('2027-01-01', '2026-12-31')).toBe(1);
    expect(daysUntil('2026-03-01', '2026-02-28')).toBe(1);
  });
});
