/**
 * `pulsa-bridge ussd` as an operator uses it, in-process on the virtual modem (--simulate): answers in turn, an open
 * menu never left behind, extra words refused, interactive menus on a terminal, packed replies of a Huawei stick.
 */
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Io } from '../../src/cli.js';
import { runSessionCli } from './session-ops.js';
import { formatUssd } from '../../src/cli/ussd.js';
import { VirtualModem, type VirtualModemOptions } from '../../src/virtual-modem/virtual-modem.js';
import type { UssdScript } from '../../src/virtual-modem/ussd-script.js';
import { withSimulateDevice, type TestIo } from '../support/cli.js';
import { defaultActiveUntil } from '../../src/virtual-modem/ussd-script.js';

const PACKAGES: UssdScript = [
  {
    code: '*123#',
    menu: {
      status: 1,
      text: '1.Paket\n2.Info',
      replies: {
        '1': { status: 1, text: '1.Harian\n2.Mingguan', replies: { '2': { status: 0, text: 'Paket mingguan aktif' } } },
        '2': { status: 0, text: 'Info' },
      },
    },
  },
];

function capture(extra: Partial<Io> = {}, vmOptions: Partial<VirtualModemOptions> = {}) {
  let out = '';
  let err = '';
  let vm: VirtualModem | undefined;
  const io: TestIo = {
    out: (t) => void (out += t),
    err: (t) => void (err += t),
    virtualModem: (path) => {
      vm = new VirtualModem({ path, profile: 'simcom', bootStepMs: 0, noise: false, ...vmOptions });
      vm.start();
      return vm;
    },
    ...extra,
  };
  return { io, result: () => ({ out, err, code: Number(process.exitCode ?? 0) }), vm: () => vm! };
}

const run = (c: ReturnType<typeof capture>, args: string[]) => runSessionCli(['ussd', '--simulate', ...args], c.io);

beforeEach(() => {
  process.exitCode = undefined;
});
afterEach(() => {
  process.exitCode = undefined;
});

describe('ussd', () => {
  it('--reply 1 --reply 2 answers the menus in turn', async () => {
    const c = capture({}, { ussdMenus: PACKAGES });
    await run(c, ['*123#', '--reply', '1', '--reply', '2']);
    expect(c.result()).toEqual({
      out: '[status 1: more input expected]\n1.Paket\n2.Info\n[status 1: more input expected]\n1.Harian\n2.Mingguan\n[status 0: done]\nPaket mingguan aktif\n',
      err: '',
      code: 0,
    });
  });

  it('a menu still open when the command ends is cancelled (AT+CUSD=2): the next dial is not taken as its answer', async () => {
    const c = capture({}, { ussdMenus: PACKAGES });
    await run(c, ['*123#', '--reply', '1']);
    expect(c.result().out).toContain('1.Harian');
    expect(c.result().err).toBe('note: the menu was still open: session cancelled\n');
    expect(c.result().code).toBe(0);
    expect(c.vm().commandLog().at(-1)).toBe('AT+CUSD=2');
  });

  it('extra words after the code are a usage error, not dropped', async () => {
    const c = capture();
    await run(c, ['*888#', '1']);
    expect(c.result().err).toMatch(/^error: too many arguments for 'ussd'/);
    expect(c.result().code).toBe(2);
  });

  it('on a terminal without --reply, shows each menu and reads the next choice until the network ends the session', async () => {
    const input = Object.assign(new PassThrough(), { isTTY: true });
    const c = capture({ input }, { ussdMenus: PACKAGES });
    const done = run(c, ['*123#']);
    await vi.waitFor(() => expect(c.result().out).toContain('reply (empty line ends)> '));
    input.write('1\r');
    await vi.waitFor(() => expect(c.result().out).toContain('2.Mingguan'));
    await vi.waitFor(() => expect(c.result().out.split('reply (empty line ends)> ').length).toBe(3));
    input.write('2\r');
    await done;
    expect(c.result().out).toContain('[status 0: done]\nPaket mingguan aktif\n');
    expect(c.result().code).toBe(0);
    expect(c.vm().commandLog()).not.toContain('AT+CUSD=2');
  });

  it('an empty answer on the terminal ends the session (cancelled)', async () => {
    const input = Object.assign(new PassThrough(), { isTTY: true });
    const c = capture({ input }, { ussdMenus: PACKAGES });
    const done = run(c, ['*123#']);
    await vi.waitFor(() => expect(c.result().out).toContain('reply (empty line ends)> '));
    input.write('\r');
    await done;
    expect(c.vm().commandLog().at(-1)).toBe('AT+CUSD=2');
  });

  it('a Huawei stick: the code goes out as packed GSM 7-bit and the packed reply is decoded', async () => {
    const c = capture({}, { profile: 'huawei' });
    await run(c, ['*888#', '--reply', '2']);
    expect(c.result().out).toBe(
      `[status 1: more input expected]\nSisa pulsa Rp.24025.Aktif sd ${defaultActiveUntil()}.\n1.Beli Paket\n2.Info Kartu\n[status 0: done]\nNomor Anda 6281234567890\n`,
    );
    const sent = c
      .vm()
      .commandLog()
      .filter((l) => l.startsWith('AT+CUSD=1'));
    expect(sent).toHaveLength(2);
    for (const l of sent) expect(l).toMatch(/^AT\+CUSD=1,"[0-9A-F]+",15$/);
  });
});

describe('formatUssd', () => {
  it('a reply in an unknown encoding is shown raw with its DCS', () => {
    expect(
      formatUssd({
        status: 0,
        statusText: 'USSD done',
        text: 'C8329BFD06',
        undecoded: true,
        dcs: 68,
        raw: '+CUSD: 0,"C8329BFD06",68',
      }),
    ).toBe('[status 0: done] undecoded, dcs 68 (0x44: 8-bit data): shown as it came\nC8329BFD06\n');
  });
});

describe('ussd: every reply form of the field notes, end to end', () => {
  const MENU = `Sisa pulsa Rp.24025.Aktif sd ${defaultActiveUntil()}.\n1.Beli Paket\n2.Info Kartu`;
  const FORMS = ['ucs2', 'ucs2-dcs15', 'ascii-hex', 'ucs2-language', 'gsm7-language'] as const;
  it.each(FORMS)('%s: decoded', async (form) => {
    const c = capture({}, { ussdReplyForm: form });
    await run(c, ['*888#']);
    expect(c.result().out).toBe(`[status 1: more input expected]\n${MENU}\n`);
  });

  it('TS 23.038 §5: a UCS2 reply with a language indication (dcs 17) is read without it, not shown as hex', async () => {
    const c = capture({}, { ussdReplyForm: 'ucs2-language' });
    await run(c, ['*888#', '--json']);
    type Reply = { text: string; dcs: number; language?: string; raw: string; undecoded?: boolean };
    const [reply] = JSON.parse(c.result().out) as Reply[];
    expect(reply).toMatchObject({ text: MENU, dcs: 17, language: 'id' });
    expect(reply!.undecoded).toBeUndefined();
    // The raw line: packed 'id' (69 32), then UCS2 'S' (0053) ...
    expect(reply!.raw).toMatch(/^\+CUSD: 1,"69320053/);
  });

  it('--json names the language of a dcs 16 reply; other replies have none', async () => {
    const c = capture({}, { ussdReplyForm: 'gsm7-language' });
    await run(c, ['*888#', '--json']);
    expect(JSON.parse(c.result().out)).toMatchObject([{ text: MENU, dcs: 16, language: 'id' }]);
    const plain = capture({});
    await run(plain, ['*888#', '--json']);
    expect((JSON.parse(plain.result().out) as Array<Record<string, unknown>>)[0]).not.toHaveProperty('language');
  });

  it('a packed-hex modem (Huawei): dcs 16 with its language prefix decodes without it', async () => {
    const c = capture({}, { profile: 'huawei', ussdReplyForm: 'gsm7-language' });
    await run(c, ['*888#', '--reply', '2']);
    const out = `[status 1: more input expected]\n${MENU}\n[status 0: done]\nNomor Anda 6281234567890\n`;
    expect(c.result().out).toBe(out);
  });

  it('compressed data (dcs 96) is refused by name, shown as it came', async () => {
    const menus = [{ code: '*555#', menu: { status: 0 as const, text: 'hellohello' } }];
    const c = capture({}, { ussdMenus: menus, ussdReplyForm: 'compressed' });
    await run(c, ['*555#']);
    const head = '[status 0: done] undecoded, dcs 96 (0x60: compressed GSM 7-bit (not decodable)): shown as it came';
    expect(c.result().out).toBe(`${head}\nE8329BFD4697D9EC37\n`);
  });

  it('a reply no rule can read is shown raw with its DCS', async () => {
    // Packed GSM 7-bit labelled 8-bit: as 8-bit data it holds C1 control characters (0x9B), so nothing reads it.
    const c = capture(
      {},
      { ussdMenus: [{ code: '*555#', menu: { status: 0, text: 'hellohello' } }], ussdReplyForm: 'mislabelled' },
    );
    await run(c, ['*555#', '--json']);
    expect(JSON.parse(c.result().out)).toEqual([
      {
        status: 0,
        statusText: 'USSD done',
        text: 'E8329BFD4697D9EC37',
        undecoded: true,
        dcs: 68,
        raw: '+CUSD: 0,"E8329BFD4697D9EC37",68',
      },
    ]);
    const t = capture(
      {},
      { ussdMenus: [{ code: '*555#', menu: { status: 0, text: 'hellohello' } }], ussdReplyForm: 'mislabelled' },
    );
    await run(t, ['*555#']);
    expect(t.result().out).toBe(
      '[status 0: done] undecoded, dcs 68 (0x44: 8-bit data): shown as it came\nE8329BFD4697D9EC37\n',
    );
  });
});

describe('ussd through the program main() runs (target.ts: the port here, no daemon)', () => {
  it('--reply 1 --reply 2 answers in turn, and extra words are refused', async () => {
    const { main } = await import('../../src/cli.js');
    const c = capture({}, { ussdMenus: PACKAGES });
    await withSimulateDevice(c.io, () =>
      main(['node', 'pulsa-bridge', 'ussd', '--simulate', '*123#', '--reply', '1', '--reply', '2'], c.io),
    );
    expect(c.result().out).toBe(
      '[status 1: more input expected]\n1.Paket\n2.Info\n[status 1: more input expected]\n1.Harian\n2.Mingguan\n[status 0: done]\nPaket mingguan aktif\n',
    );
    expect(c.result().code).toBe(0);
    const d = capture();
    await withSimulateDevice(d.io, () => main(['node', 'pulsa-bridge', 'ussd', '--simulate', '*888#', '1'], d.io));
    expect(d.result().err).toMatch(/^error: too many arguments for 'ussd'/);
    expect(d.result().code).toBe(2);
  });
});
