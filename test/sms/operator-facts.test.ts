import { describe, expect, it } from 'vitest';
import { parseOperatorSms } from '../../src/sms/operator-facts.js';

describe('parseOperatorSms', () => {
  it.each([
    [
      'Telkomsel 858',
      'Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774 tgl 2018-01-08. Cek pulsa melalui *888#. Info CS: 188',
      { amount: 5000, senderNumber: '6282112235774', serial: undefined },
    ],
    [
      'XL 168 with promo first',
      'Nikmati Xtra Combo 10GB! Anda menerima Pulsa dari 6285941020493 sebesar Rp7000.',
      { amount: 7000, senderNumber: '6285941020493', serial: undefined },
    ],
    [
      'API document wording',
      'Transfer pulsa Rp10.000 dari 081234567890 berhasil. SN: 2024010812345678',
      { amount: 10000, senderNumber: '6281234567890', serial: '2024010812345678' },
    ],
    [
      'thousands with comma and +62',
      'Anda menerima pulsa Rp 1,500,000 dari +6281399990000 SN:AB-77',
      { amount: 1500000, senderNumber: '6281399990000', serial: 'AB-77' },
    ],
    [
      'nothing to find',
      'Promo hari ini: diskon paket data!',
      { amount: undefined, senderNumber: undefined, serial: undefined },
    ],
  ])('%s', (_name, text, expected) => {
    expect(parseOperatorSms(text)).toEqual(expected);
  });
});
