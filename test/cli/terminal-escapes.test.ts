/**
 * Text from an SMS sender, a modem or a network never reaches the operator's terminal raw: an OSC title, a screen
 * clear, a one-byte C1 CSI, a CR and a bidi override in an SMS print as visible escapes in every view (queue ls/show,
 * sms list/read, at, ussd, balance), and --json carries them as \u escapes.
 */
import { Command } from 'commander';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { formatBalance } from '../../src/cli/balance-format.js';
import { queueCommands } from '../../src/cli/queue.js';
import { formatOutcome } from '../../src/cli/terminal.js';
import { formatUssd } from '../../src/cli/ussd.js';
import { silentLogger } from '../../src/log.js';
import { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';
import { Spool } from '../../src/spool/store.js';
import { makeSms } from '../spool/helpers.js';
import { tempDir } from '../support/tmp.js';
import { cli } from '../support/cli.js';

const NASTY = 'Rp 5000\x1b]0;pwned\x07\x1b[2J\x1b[H\u009b31m\rBONUS \u202e0987\u202c';
/** What a terminal would act on (newlines are the CLI's own). */
const ACTIVE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('esc'));
  process.exitCode = undefined;
});
afterEach(async () => {
  process.exitCode = undefined;
  await cleanup();
});

async function queue(args: string[]): Promise<string> {
  let out = '';
  const io = { out: (t: string) => void (out += t), err: (t: string) => void (out += t) };
  await new Command()
    .exitOverride()
    .addCommand(queueCommands(io))
    .parseAsync(['node', 'x', 'queue', ...args, '--spool', dir]);
  return out;
}

describe('control characters from SMS and modems are shown as escapes', () => {
  it('queue ls and queue show (an ignored SMS from an unknown sender)', async () => {
    const spool = await Spool.open(dir, { logger: silentLogger(), fsync: false });
    await spool.putIgnored(
      makeSms('i1', { sender: '+62811\x1b[8m', text: NASTY, ignoredReason: 'sender not accepted' }),
    );
    await spool.close();
    const ls = await queue(['ls', '--area', 'ignored']);
    expect(ls).not.toMatch(ACTIVE);
    expect(ls).toContain('\\x1b]0;pwned\\x07');
    const show = await queue(['show', 'i1']);
    expect(show).not.toMatch(ACTIVE);
    expect(show).toContain('Rp 5000\\x1b]0;pwned\\x07\\x1b[2J\\x1b[H\\u{9b}31m\\rBONUS \\u{202e}0987\\u{202c}');
    expect(show).toContain('sender: +62811\\x1b[8m');
    const json = await queue(['show', 'i1', '--json']);
    expect(json).not.toMatch(ACTIVE);
    expect((JSON.parse(json) as { record: { text: string } }).record.text).toBe(NASTY);
  });

  it('sms list and sms read on the modem', async () => {
    let index = -1;
    const virtualModem = (path: string) => {
      const vm = new VirtualModem({ path, profile: 'simcom', bootStepMs: 0, noise: false });
      vm.start();
      index = vm.injectSms({ from: '858', text: NASTY }).indexes[0]!;
      return vm;
    };
    const run = async (args: string[]) => {
      const r = await cli(args, { virtualModem });
      return r.out + r.err;
    };
    const list = await run(['sms', 'list', '--simulate']);
    expect(list).toContain('Rp 5000\\x1b]0;pwned');
    expect(list).not.toMatch(ACTIVE);
    const read = await run(['sms', 'read', '--simulate', String(index)]);
    expect(read).toContain('Rp 5000\\x1b]0;pwned');
    expect(read).not.toMatch(ACTIVE);
    const json = await run(['sms', 'list', '--simulate', '--json']);
    expect(json).not.toMatch(ACTIVE);
    expect((JSON.parse(json) as Array<{ text?: string }>).some((m) => m.text === NASTY)).toBe(true);
  });

  it('at replies, USSD replies and balance replies', () => {
    const at = formatOutcome({
      command: 'ATI',
      lines: ['SIM800 \x1b]0;x\x07'],
      final: 'OK',
      ok: true,
      urcs: [],
    } as never);
    expect(at).toBe('SIM800 \\x1b]0;x\\x07\nOK\n');
    const ussd = formatUssd({ status: 0, statusText: 'done', text: `Sisa pulsa ${NASTY}`, raw: '' });
    expect(ussd).not.toMatch(ACTIVE);
    const balance = formatBalance({
      modem: 'm',
      code: '*888#',
      reply: NASTY,
      balance: 5000,
      activeUntil: null,
      state: 'ok',
      reasons: [],
      checkedAt: '2024-01-01T00:00:00Z',
    } as never);
    expect(balance).not.toMatch(ACTIVE);
    expect(balance).toContain('\\x1b]0;pwned');
  });
});
