import { describe, expect, it } from 'vitest';
import { partRecordId, smsRecordId } from '../../src/sms/identity.js';

describe('record ids', () => {
  const base = ['sim1', '858', '2018-01-08T09:30:12+07:00', 'Anda mendapatkan penambahan pulsa Rp 5000'] as const;

  it('the same SMS read twice gets the same id, filename-safe', () => {
    const id = smsRecordId(...base);
    expect(smsRecordId(...base)).toBe(id);
    expect(id).toMatch(/^sms-[0-9a-f]{32}$/);
  });

  it.each([
    ['SIM', ['sim2', base[1], base[2], base[3]]],
    ['originator', [base[0], '168', base[2], base[3]]],
    ['timestamp', [base[0], base[1], '2018-01-08T09:30:13+07:00', base[3]]],
    ['text', [base[0], base[1], base[2], base[3] + '0']],
    ['component boundary', ['sim1', '85', '8' + base[2], base[3]]],
  ] as const)('a different %s gives a different id', (_what, args) => {
    expect(smsRecordId(args[0], args[1], args[2], args[3])).not.toBe(smsRecordId(...base));
  });

  it('part ids are stable per group and sequence', () => {
    expect(partRecordId('g', 1)).toBe(partRecordId('g', 1));
    expect(partRecordId('g', 1, 'variant')).toMatch(/^part-[0-9a-f]{32}$/);
    expect(partRecordId('g', 1, 'A')).not.toBe(partRecordId('g', 1, 'B'));
    expect(partRecordId('g', 1, 'A')).not.toBe(partRecordId('g', 1));
    expect(partRecordId('g', 1)).toMatch(/^part-[0-9a-f]{32}$/);
    expect(partRecordId('g', 1)).not.toBe(partRecordId('g', 2));
    expect(partRecordId('g', 1)).not.toBe(partRecordId('h', 1));
  });
});
