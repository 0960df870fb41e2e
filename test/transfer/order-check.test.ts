/**
 * A reseller order's answer is checked against the request before anything is dialled (transfer/order-check.ts): the
 * foreign-order attack (a code for another number and amount), a centre or amount that differs, a missing centre, a
 * USSD code for a flow of SMS; number forms and amount notations that mean the same pass.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_FLOWS } from '../../src/transfer/flows.js';
import { checkOrderAnswer, matchTemplate, rupiah } from '../../src/transfer/order-check.js';

const telkomsel = DEFAULT_FLOWS.telkomsel!;
const indosat = DEFAULT_FLOWS.indosat!;

describe('an order checked against the request', () => {
  it('the attack: Rp 5000 asked, the API returns a code for another number and Rp 99000: refused, both named', () => {
    const r = checkOrderAnswer(
      telkomsel,
      { amount: 5000 },
      { code: '*858*081299999999*99000#', centreNumber: '081200000001' },
    );
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems).toEqual([
      "the order's code *858*081299999999*99000# sends Rp 99000, Rp 5000 was asked",
      "the order's code *858*081299999999*99000# sends to 081299999999, the order's centre number is 081200000001",
    ]);
  });

  it('a matching order: what is dialled is the flow rendered from the checked values, any number form', () => {
    for (const code of ['*858*081200000001*5000#', '*858*6281200000001*5000#', '*858*+6281200000001*5000#']) {
      const r = checkOrderAnswer(
        telkomsel,
        { amount: 5000 },
        { code, centreNumber: '+62 812-0000-0001'.replace(/[ -]/g, ''), amount: '5.000' },
      );
      expect(r).toEqual({
        ok: true,
        centre: '081200000001',
        steps: [{ kind: 'ussd', code: '*858*081200000001*5000#', replies: ['1'] }],
      });
    }
  });

  it('refuses an order with no centre number, a centre that is no number, another amount, a code that fits no flow', () => {
    const problems = (answer: Parameters<typeof checkOrderAnswer>[2], flow = telkomsel) => {
      const r = checkOrderAnswer(flow, { amount: 5000 }, answer);
      return r.ok ? [] : r.problems;
    };
    expect(problems({ code: '*858*081200000001*5000#' })).toEqual([
      'the order names no centre number: where the credit would go cannot be checked',
    ]);
    expect(problems({ code: '*858*081200000001*5000#', centreNumber: 'CENTRE-1' })[0]).toMatch(
      /is not an Indonesian mobile number/,
    );
    expect(problems({ code: '*858*081200000001*5000#', centreNumber: '081200000001', amount: '50000' })).toEqual([
      'the order\'s amount is "50000", Rp 5000 was asked',
    ]);
    expect(problems({ code: '*123*081200000001*5000#', centreNumber: '081200000001' })).toEqual([
      'the order\'s code "*123*081200000001*5000#" does not fit the Telkomsel flow (*858*{to}*{amount}#)',
    ]);
    expect(problems({ code: '*858*081200000001*5000#*1#', centreNumber: '081200000001' })[0]).toMatch(/does not fit/);
    expect(problems({ code: '*858*081200000001*5000#', centreNumber: '081200000001' }, indosat)).toEqual([
      "the order's code *858*081200000001*5000# is a USSD code, and the Indosat flow sends SMS",
    ]);
    expect(problems({ code: 'TRANSFERPULSA 085600000009 5000', centreNumber: '085600000001' }, indosat)).toEqual([
      "the order's code names 085600000009, the order's centre number is 085600000001",
    ]);
  });

  it('a flow of SMS: the SMS are rendered to the checked centre', () => {
    const r = checkOrderAnswer(
      indosat,
      { amount: 5000 },
      { code: 'TRANSFERPULSA 085600000001 5000', centreNumber: '6285600000001' },
    );
    expect(r.ok && r.steps[0]).toEqual({
      kind: 'sms',
      to: '151',
      text: 'TRANSFERPULSA 085600000001 5000',
      usesToken: false,
    });
  });

  it('helpers: rupiah notations, template matching', () => {
    expect([
      rupiah('10000'),
      rupiah('10.000'),
      rupiah('Rp 10,000'),
      rupiah('Rp10.000'),
      rupiah('10000.00'),
      rupiah('10.5'),
      rupiah('ten'),
    ]).toEqual([10000, 10000, 10000, 10000, 10000, undefined, undefined]);
    expect(matchTemplate('*858*{to}*{amount}#', '*858*081200000001*5000#')).toEqual({
      to: '081200000001',
      amount: '5000',
    });
    expect(matchTemplate('*858*{to}*{amount}#', '*858*0812*5000#')).toBeUndefined();
    expect(matchTemplate('*858*{to}*{amount}#', ' *858*081200000001*5000# ')).toEqual({
      to: '081200000001',
      amount: '5000',
    });
  });
});
