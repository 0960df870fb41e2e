import { describe, expect, it } from 'vitest';
import { balanceSettingsFor, maskSecrets, parseConfig } from '../src/config.js';
import { ConfigError } from '../src/errors.js';

const base = (modem: Record<string, unknown> = {}, top: Record<string, unknown> = {}) => ({
  webhook: { baseUrl: 'https://x.example/api/v1/convert-pulsa' },
  modems: [{ name: 'm1', port: '/dev/ttyUSB0', senders: ['858'], ...modem }],
  ...top,
});

function problems(raw: unknown, env: Record<string, string> = {}): string[] {
  try {
    parseConfig(raw, env);
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
  return [];
}

describe('config: per-modem balance check', () => {
  it('takes the code from the operator and puts configured patterns before the built-in ones', () => {
    const c = parseConfig(
      base({ operator: 'telkomsel', balance: { minBalance: 10000, patterns: { balance: ['Saldo utama (\\d+)'] } } }),
      {},
    );
    const b = c.modems[0]!.balance!;
    expect(b).toMatchObject({ code: '*888#', replies: [], intervalHours: 24, minBalance: 10000, activeWarnDays: 7 });
    expect(b.patterns.balance[0]).toBe('Saldo utama (\\d+)');
    expect(b.patterns.balance.length).toBeGreaterThan(1);
    expect(parseConfig(base({ operator: 'xl', balance: {} }), {}).modems[0]!.balance!.code).toBe('*123#');
  });

  it('keeps a configured code and its replies over the operator default', () => {
    const c = parseConfig(
      base({
        operator: 'telkomsel',
        balance: { code: '*888*1#', replies: ['1'], intervalHours: 6, activeWarnDays: 14 },
      }),
      {},
    );
    expect(c.modems[0]!.balance).toMatchObject({
      code: '*888*1#',
      replies: ['1'],
      intervalHours: 6,
      activeWarnDays: 14,
    });
  });

  it('needs a code when no operator gives one, and names a broken pattern', () => {
    const p = problems(base({ balance: { patterns: { activeUntil: ['(unclosed'] } } }));
    expect(p.some((x) => x.startsWith('modems[0].balance.patterns.activeUntil[0]: invalid pattern "(unclosed"'))).toBe(
      true,
    );
    expect(problems(base({ balance: {} })).some((x) => x.startsWith('modems[0].balance.code: required'))).toBe(true);
    expect(
      problems(base({ operator: 'orange' })).some((x) =>
        x.startsWith('modems[0].operator: expected one of "telkomsel"'),
      ),
    ).toBe(true);
    expect(problems(base({ number: '12345' }))).toContain(
      'modems[0].number: expected an Indonesian mobile number (08..., 628... or +628...), got "12345"',
    );
  });

  it('has no periodic check without a balance section, but an on-demand one from the operator', () => {
    const c = parseConfig(base({ operator: 'indosat' }), {});
    expect(c.modems[0]!.balance).toBeUndefined();
    expect(balanceSettingsFor(c.modems[0]!)).toMatchObject({ code: '*555#', intervalHours: 0 });
    expect(balanceSettingsFor(parseConfig(base(), {}).modems[0]!)).toBeUndefined();
  });
});

describe('config: reseller section', () => {
  it('defaults the base URL to the webhook base URL and reads the key from the environment, masked when printed', () => {
    const c = parseConfig(base({}, { reseller: { apiKey: 'env:RESELLER_KEY' } }), { RESELLER_KEY: 'k-9f8e7d6c' });
    expect(c.reseller.baseUrl).toBe('https://x.example/api/v1/convert-pulsa');
    expect(c.reseller.apiKey).toBe('k-9f8e7d6c');
    expect(JSON.stringify(maskSecrets(c))).not.toContain('k-9f8e7d6c');
    expect(problems(base({}, { reseller: { apiKey: 'env:NOPE' } }))).toContain(
      'reseller.apiKey: environment variable NOPE is not set',
    );
  });

  it('derives the base URL from a full webhook URL', () => {
    const c = parseConfig(
      { ...base(), webhook: { url: 'https://y.example/api/v1/convert-pulsa/webhook/sms-gateway' } },
      {},
    );
    expect(c.reseller.baseUrl).toBe('https://y.example/api/v1/convert-pulsa');
  });

  it('checks flow overrides at load: unknown placeholders and a token used before it is captured', () => {
    const p = problems(
      base(
        {},
        {
          reseller: {
            flows: {
              telkomsel: { steps: [{ kind: 'ussd', code: '*858*{number}*{amount}#' }] },
              indosat: { steps: [{ kind: 'sms', to: '151', text: 'OK{token}' }] },
              xl: { steps: [] },
            },
          },
        },
      ),
    );
    expect(
      p.some((x) => x.startsWith('reseller.flows.telkomsel: ') && x.includes('unknown placeholder {number}')),
    ).toBe(true);
    expect(p.some((x) => x.startsWith('reseller.flows.indosat: ') && x.includes('{token} is used before'))).toBe(true);
    expect(p).toContain('reseller.flows.xl.steps: expected at least one step');
  });
});
