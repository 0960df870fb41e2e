import { describe, expect, it } from 'vitest';
import {
  DEFAULT_FLOWS,
  describeStep,
  extractToken,
  FlowError,
  nationalNumber,
  renderFlow,
} from '../../src/transfer/flows.js';

describe('nationalNumber', () => {
  it.each([
    ['081234567890', '081234567890'],
    ['+6281234567890', '081234567890'],
    ['6281234567890', '081234567890'],
    ['81234567890', '081234567890'],
    ['0812-3456-7890', '081234567890'],
  ])('%s -> %s', (raw, want) => expect(nationalNumber(raw)).toBe(want));
  it.each(['858', 'abc', '+1 555 0100', '0812345', ''])('%j is refused', (raw) =>
    expect(() => nationalNumber(raw)).toThrow(FlowError),
  );
});

describe('renderFlow with the default flows', () => {
  const vars = { to: '+6281234567890', amount: 5000 };
  it('Telkomsel: one USSD dial with the confirmation answer', () => {
    expect(renderFlow(DEFAULT_FLOWS.telkomsel!, vars)).toEqual([
      { kind: 'ussd', code: '*858*081234567890*5000#', replies: ['1'] },
    ]);
  });
  it('Indosat: SMS, wait for the token, answer with OK{token}', () => {
    const steps = renderFlow(DEFAULT_FLOWS.indosat!, vars);
    expect(steps.map((s) => s.kind)).toEqual(['sms', 'await-sms', 'sms']);
    expect(steps[0]).toEqual({ kind: 'sms', to: '151', text: 'TRANSFERPULSA 081234567890 5000', usesToken: false });
    expect(steps[2]).toEqual({ kind: 'sms', to: '151', text: 'OK{token}', usesToken: true });
  });
  it('XL and Smartfren', () => {
    expect(renderFlow(DEFAULT_FLOWS.xl!, vars)[0]).toMatchObject({ to: '168', text: 'BAGI 081234567890 5000' });
    expect(renderFlow(DEFAULT_FLOWS.xl!, vars)[2]).toMatchObject({ to: '168', text: 'Y' });
    expect(renderFlow(DEFAULT_FLOWS.smartfren!, vars)).toEqual([
      { kind: 'sms', to: '879', text: 'KIRIM.081234567890.5000', usesToken: false },
    ]);
  });
  it('describes each step for --dry-run', () => {
    const lines = renderFlow(DEFAULT_FLOWS.indosat!, vars).map((s) => describeStep(s, 'sender-1'));
    expect(lines).toEqual([
      'send SMS "TRANSFERPULSA 081234567890 5000" to 151 from sender-1',
      'wait up to 120 s for an SMS from 151 on sender-1 and read the token in it',
      'send SMS "OK{token}" to 151 from sender-1',
    ]);
  });
});

describe('renderFlow refuses bad templates before any credit moves', () => {
  const vars = { to: '081234567890', amount: 5000 };
  it('an unknown placeholder', () => {
    expect(() => renderFlow({ operator: 'X', steps: [{ kind: 'ussd', code: '*1*{nomor}#' }] }, vars)).toThrow(
      /step 1 \(ussd\): unknown placeholder \{nomor\}/,
    );
  });
  it('{token} before a step captures one', () => {
    expect(() => renderFlow({ operator: 'X', steps: [{ kind: 'sms', to: '1', text: 'OK{token}' }] }, vars)).toThrow(
      /used before any await-sms/,
    );
  });
  it('a token pattern without a group, or broken', () => {
    expect(() =>
      renderFlow({ operator: 'X', steps: [{ kind: 'await-sms', from: '1', token: 'OK\\w+' }] }, vars),
    ).toThrow(/capture group/);
    expect(() => renderFlow({ operator: 'X', steps: [{ kind: 'await-sms', from: '1', token: 'OK(' }] }, vars)).toThrow(
      /invalid token pattern/,
    );
  });
  it.each([0, -5, 1.5, Number.NaN])('amount %d', (amount) => {
    expect(() => renderFlow(DEFAULT_FLOWS.telkomsel!, { to: '081234567890', amount })).toThrow(/amount/);
  });
  it('an empty flow', () => expect(() => renderFlow({ operator: 'X', steps: [] }, vars)).toThrow(/no steps/));
});

describe('extractToken', () => {
  const pattern = (DEFAULT_FLOWS.indosat!.steps[1] as { token: string }).token;
  it('reads the token after OK', () => {
    expect(extractToken(pattern, 'Untuk konfirmasi transfer pulsa Rp5000 ke 0812..., balas OK A1B2C3 ke 151')).toBe(
      'A1B2C3',
    );
    expect(extractToken(pattern, 'Balas OKX7Y8Z9 dalam 5 menit')).toBe('X7Y8Z9');
  });
  it('is undefined when the SMS has none', () => {
    expect(extractToken(pattern, 'Transfer pulsa berhasil')).toBeUndefined();
    expect(extractToken(pattern, 'Balas OK untuk melanjutkan')).toBeUndefined();
  });
});
