/**
 * The `canaries` section: off unless configured, a canary without a daily cap refused, and every canary planned at
 * load as `test-transfer` would plan it, so one that could never run fails there (each problem named with its path).
 */
import { describe, expect, it } from 'vitest';
import { canarySchedules } from '../src/cli/config-check.js';
import { parseConfig } from '../src/config.js';
import { ConfigError } from '../src/errors.js';

const modems = [
  { name: 'tsel', port: '/dev/ttyUSB0', senders: ['858'], operator: 'telkomsel', number: '081200000001' },
  { name: 'centre', port: '/dev/ttyUSB1', senders: ['858'], operator: 'telkomsel', number: '081200000002' },
];
const base = {
  webhook: { baseUrl: 'https://convert.example.id/api/v1' },
  modems,
  reseller: {
    apiKey: 'k'.repeat(20),
    order: { operatorId: 1, payoutMethod: 'BCA', payoutAccountNumber: '123', payoutAccountName: 'Ops' },
  },
};
const canary = { from: 'tsel', amount: 5000, intervalSec: 21_600, maxRupiahPerDay: 20_000, order: true };

function problems(canaries: unknown[], over: Record<string, unknown> = {}): string[] {
  try {
    parseConfig({ ...base, ...over, canaries }, {});
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
}

describe('config: canaries', () => {
  it('are off unless configured, and take their defaults', () => {
    expect(parseConfig(base, {}).canaries).toEqual([]);
    const [c] = parseConfig({ ...base, canaries: [canary] }, {}).canaries;
    expect(c).toEqual({ ...canary, pauseAfterFailures: 3, timeZone: 'Asia/Jakarta' });
  });

  it('a canary without a cap is refused, saying why', () => {
    const { maxRupiahPerDay: _cap, ...uncapped } = canary;
    expect(problems([uncapped])).toEqual([
      'canaries[0].maxRupiahPerDay: required: the most this canary may spend in a day, in rupiah (no cap, no canary)',
    ]);
    expect(problems([{ ...canary, maxRupiahPerDay: 4999 }])).toEqual([
      "canaries[0].maxRupiahPerDay: the daily cap 4999 is below one run's amount 5000: it would never run",
    ]);
  });

  it('names what a canary that could not run lacks', () => {
    expect(problems([{ ...canary, from: 'nope' }])).toEqual([
      'canaries[0].from: no modem named "nope" in the config (one of: tsel, centre)',
    ]);
    expect(problems([{ ...canary, order: false }])).toEqual([
      'canaries[0].to: required when "order" is false: the centre modem or number',
    ]);
    expect(problems([{ ...canary, to: 'centre' }])).toEqual([
      'canaries[0].to: not used with "order": true (the order names the centre number)',
    ]);
    expect(problems([{ ...canary, order: false, to: 'tsel' }])).toEqual([
      'canaries[0].to: the centre is the sending modem "tsel" itself',
    ]);
    expect(problems([{ ...canary, operator: 'acme' }])[0]).toMatch(
      /^canaries\[0\]\.operator: no transfer flow for operator "acme"/,
    );
    expect(problems([canary], { reseller: { apiKey: 'k'.repeat(20) } })).toEqual([
      'canaries[0].order: the order needs an operator id (set reseller.order.operatorId in the config)',
    ]);
    expect(problems([canary], { reseller: { order: base.reseller.order } })).toEqual([
      'canaries[0].order: an order canary needs reseller.apiKey',
    ]);
    expect(problems([canary, canary])).toEqual(['canaries[1].name: duplicate canary name "tsel-5000" (set "name")']);
    expect(problems([{ ...canary, timeZone: 'Mars/Olympus' }])).toEqual([
      'canaries[0].timeZone: expected an IANA time zone, e.g. "Asia/Jakarta"',
    ]);
    expect(problems([{ ...canary, intervalSec: 0 }])[0]).toMatch(/^canaries\[0\]\.intervalSec: /);
    // zone names (the list) and what only ICU's formatter knows (aliases, any case) are both taken
    for (const timeZone of ['Asia/Makassar', 'Asia/Jayapura', 'UTC', 'Etc/UTC', 'asia/jakarta'])
      expect(problems([{ ...canary, timeZone }]), timeZone).toEqual([]);
  });

  it('a plain canary needs the sending SIM number (its confirmation is told from customers transfers by it)', () => {
    const withoutNumber = { ...base, modems: [{ ...modems[0]!, number: undefined }, modems[1]!] };
    expect(problems([{ ...canary, order: false, to: 'centre' }], withoutNumber)).toEqual([
      'canaries[0].from: modem "tsel" has no "number": a canary\'s confirmation is told from customers\' transfers by the sending number',
    ]);
  });

  it('a plain canary to a centre modem of this bridge, by name or number', () => {
    expect(problems([{ ...canary, order: false, to: 'centre' }])).toEqual([]);
    expect(problems([{ ...canary, order: false, to: '+6281200000002' }])).toEqual([]);
    expect(problems([{ ...canary, order: false, to: '081299999999' }])).toEqual([
      'canaries[0].to: the centre 081299999999 is not a modem of this bridge: a canary proves the transfer by its confirmation SMS there (name a modem, or use "order": true)',
    ]);
  });

  it('config check shows each schedule and what it may spend a day (the cap or the clock binds)', () => {
    const c = parseConfig(
      {
        ...base,
        canaries: [
          { ...canary, name: 'six-hourly' },
          { ...canary, name: 'hourly', intervalSec: 3600, maxRupiahPerDay: 10_000, order: false, to: 'centre' },
        ],
      },
      {},
    );
    expect(canarySchedules(c.canaries)).toBe(
      'canaries (each run moves real credit; `pulsa-bridge canary pause NAME` stops one):\n' +
        '  six-hourly: Rp 5000 from tsel through a reseller order, every 6 h (the first 6 h after start); cap Rp 20000 a day (Asia/Jakarta): at most 4 run(s), Rp 20000 a day\n' +
        '  hourly: Rp 5000 from tsel to centre, every 1 h (the first 1 h after start); cap Rp 10000 a day (Asia/Jakarta): at most 2 run(s), Rp 10000 a day (the cap binds)\n',
    );
  });
});
