/**
 * Which modems `balance` checks and which way (src/cli/balance.ts planChecks), decided before anything is dialled: the
 * daemon's `hello` decides for the modems it runs (a daemon too old to say: the whole config), the whole config for
 * the others, loaded only then; a named modem without a check, or none at all, is a usage error.
 */
import { describe, expect, it } from 'vitest';
import { planChecks, type PortSettings } from '../../src/cli/balance.js';
import type { BalanceCheckSettings } from '../../src/balance/watch.js';
import type { Config } from '../../src/config.js';
import { UsageError } from '../../src/cli/usage.js';

const view = { modems: ['a', 'b', 'c'].map((name) => ({ name, port: `/dev/tty-${name}` })) };
const settings = (code: string) => ({ code }) as BalanceCheckSettings;
const config = {} as Config;

/** The whole config as a loader that counts its loads: every modem has a check there unless listed in `without`. */
function whole(without: string[] = []) {
  const loader = {
    loads: 0,
    load: async (): Promise<PortSettings> => {
      loader.loads++;
      return { config, settingsFor: (name) => (without.includes(name) ? undefined : settings(`*${name}#`)) };
    },
  };
  return loader;
}

const usage = async (p: Promise<unknown>) => {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UsageError);
  return (err as UsageError).message;
};

describe('balance: which modems, which way', () => {
  it("the daemon's word decides for its modems, even where the file differs; the file is not loaded for them", async () => {
    const w = whole();
    const daemon = [
      { name: 'a', port: '/dev/tty-a', state: 'running', balanceCheck: true },
      { name: 'b', port: '/dev/tty-b', state: 'running', balanceCheck: false },
      { name: 'c', port: '/dev/tty-c', state: 'running', balanceCheck: true },
    ];
    expect(await planChecks(view, daemon, w.load, {})).toEqual([
      { name: 'a', via: 'daemon' },
      { name: 'c', via: 'daemon' },
    ]);
    expect(await usage(planChecks(view, daemon, w.load, { modem: ['a', 'b'] }))).toBe('modem b has no balance check');
    expect(await planChecks(view, daemon, w.load, { modem: ['b'], code: '*888#' })).toEqual([
      { name: 'b', via: 'daemon' },
    ]);
    expect(w.loads).toBe(0);
  });

  it('a modem the daemon does not run is judged on the whole config and checked on its port', async () => {
    const w = whole(['b']);
    const daemon = [{ name: 'a', port: '/dev/tty-a', state: 'running', balanceCheck: true }];
    expect(await planChecks(view, daemon, w.load, {})).toEqual([
      { name: 'a', via: 'daemon' },
      { name: 'c', via: 'port', config, settings: settings('*c#') },
    ]);
    expect(w.loads).toBe(1); // once, for b and c together
    expect(await usage(planChecks(view, undefined, w.load, { modem: ['b'] }))).toBe('modem b has no balance check');
  });

  it('a daemon too old to say which modems have a check: the whole config says, the daemon checks', async () => {
    const w = whole(['b']);
    const old = view.modems.map((m) => ({ ...m, state: 'running' }));
    expect(await planChecks(view, old, w.load, {})).toEqual([
      { name: 'a', via: 'daemon' },
      { name: 'c', via: 'daemon' },
    ]);
    expect(await usage(planChecks(view, old, w.load, { modem: ['b'] }))).toBe('modem b has no balance check');
    expect(w.loads).toBe(2);
    // a code given: any modem it runs is checkable through it, the whole config not needed
    const coded = whole(['a', 'b', 'c']);
    expect(await planChecks(view, old, coded.load, { modem: ['b'], code: '*888#' })).toEqual([
      { name: 'b', via: 'daemon' },
    ]);
    expect(coded.loads).toBe(0);
  });

  it('a name given twice is checked once', async () => {
    const daemon = [{ name: 'a', port: '/dev/tty-a', state: 'running', balanceCheck: true }];
    expect(await planChecks(view, daemon, whole().load, { modem: ['a', 'c', 'a'] })).toEqual([
      { name: 'a', via: 'daemon' },
      { name: 'c', via: 'port', config, settings: settings('*c#') },
    ]);
  });

  it('an unknown name, or no modem with a check: usage errors, before the whole config is read', async () => {
    const w = whole(['a', 'b', 'c']);
    expect(await usage(planChecks(view, undefined, w.load, { modem: ['nope'] }))).toBe(
      'no modem named "nope" in the config',
    );
    expect(w.loads).toBe(0);
    expect(await usage(planChecks(view, undefined, w.load, {}))).toBe('no modem has a balance check');
  });
});
