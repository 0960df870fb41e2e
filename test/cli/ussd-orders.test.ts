/**
 * `pulsa-bridge ussd` against networks that answer in other orders (python-gsmmodem test_modem.py): OK, then a
 * release notice, then the reply; or the release notice and no reply. The virtual modem plays them with its quirks.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Io } from '../../src/cli.js';
import { VirtualModem, type VirtualModemOptions } from '../../src/virtual-modem/virtual-modem.js';
import type { UssdScript } from '../../src/virtual-modem/ussd-script.js';
import { runSessionCli } from './session-ops.js';
import type { TestIo } from '../support/cli.js';

const BALANCE: UssdScript = [{ code: '*100#', menu: { status: 0, text: 'Sisa pulsa Rp.24025' } }];

function capture(vmOptions: Partial<VirtualModemOptions>) {
  let out = '';
  let err = '';
  const io: TestIo = {
    out: (t) => void (out += t),
    err: (t) => void (err += t),
    virtualModem: (path) => {
      const vm = new VirtualModem({
        path,
        profile: 'simcom',
        bootStepMs: 0,
        noise: false,
        ussdMenus: BALANCE,
        ...vmOptions,
      });
      vm.start();
      return vm;
    },
  };
  return { io, result: () => ({ out, err, code: Number(process.exitCode ?? 0) }) };
}

beforeEach(() => {
  process.exitCode = undefined;
});
afterEach(() => {
  process.exitCode = undefined;
});

describe('USSD replies in the orders networks use', () => {
  it('OK, the release notice, then the reply: the reply is shown as the answer, status 0, exit 0', async () => {
    const c = capture({ quirks: ['ussd-release-first'] });
    await runSessionCli(['ussd', '--simulate', '*100#'], c.io);
    const r = c.result();
    expect(r.out).toContain('(release notice first: +CUSD: 2,"Initiating Release",15)');
    expect(r.out).toContain('[status 0: done]\nSisa pulsa Rp.24025');
    expect(r.code).toBe(0);
  });

  it('the release notice and no reply: a bounded wait, the true end state, exit 1', async () => {
    const c = capture({ quirks: ['ussd-release-only'] });
    await runSessionCli(['ussd', '--simulate', '*100#'], c.io);
    const r = c.result();
    expect(r.out).toContain('[status 2: ended by the network, no reply]');
    expect(r.err).toContain('ended the session for *100# without a reply');
    expect(r.code).toBe(1);
  }, 20_000);
});
