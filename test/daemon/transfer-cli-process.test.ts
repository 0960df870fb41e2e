/**
 * `balance` and `test-transfer` as an operator runs them: the compiled `bin/pulsa-bridge` in its own process, without
 * a daemon, on simulated modems of each family (one virtual network per invocation). npm test builds dist/ first.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compiledCli } from '../support/cli.js';
import { writeConfig } from '../support/config.js';

let dir: string;
let config: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'pb-transfer-bin-'));
  const sim = (
    name: string,
    operator: string,
    number: string,
    virtualSim: { balance?: number; activeUntil?: string } = {},
  ) => ({
    name,
    port: `virtual:${name}?${new URLSearchParams({ number, operator, ...Object.fromEntries(Object.entries(virtualSim).map(([k, v]) => [k, String(v)])) })}`,
    senders: ['*'],
    operator,
    number,
  });
  config = await writeConfig(
    dir,
    {
      webhook: { baseUrl: 'http://127.0.0.1:9/api/v1/convert-pulsa' },
      spool: { dir: path.join(dir, 'spool') },
      modems: [
        sim('tsel-a', 'telkomsel', '081211110001', { balance: 75000, activeUntil: '2031-03-31' }),
        sim('tsel-b', 'telkomsel', '081200000001', { balance: 1000, activeUntil: '2031-04-30' }),
        sim('isat-a', 'indosat', '085611110001', { balance: 30000, activeUntil: '2031-05-31' }),
        sim('isat-b', 'indosat', '085600000001'),
        sim('xl-a', 'xl', '081711110001', { balance: 20000, activeUntil: '2031-06-30' }),
        sim('sf-a', 'smartfren', '088111110001', { balance: 1250000, activeUntil: '2031-07-31' }),
      ],
    },
    { defaults: false },
  );
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function cli(args: string[]): { out: string; err: string; code: number } {
  const r = compiledCli(args, { timeoutMs: 60_000 });
  return { out: r.out, err: r.err, code: r.code ?? -1 };
}

describe('balance and test-transfer from bin/pulsa-bridge, no daemon', () => {
  it('balance --json on virtual modems of each family', () => {
    const r = cli(['balance', '-c', config, '--json']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const rows = (
      JSON.parse(r.out) as Array<{ modem: string; code: string; balance: number; activeUntil: string; reply: string }>
    ).map((x) => [x.modem, x.code, x.balance, x.activeUntil]);
    expect(rows).toEqual([
      ['tsel-a', '*888#', 75000, '2031-03-31'],
      ['tsel-b', '*888#', 1000, '2031-04-30'],
      ['isat-a', '*555#', 30000, '2031-05-31'],
      ['isat-b', '*555#', 50000, expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/)],
      ['xl-a', '*123#', 20000, '2031-06-30'],
      ['sf-a', '*999#', 1250000, '2031-07-31'],
    ]);
  });

  it('test-transfer between two virtual modems (Indosat SMS flow with a token), confirmed on the centre; the report kept for the status page', async () => {
    await mkdir(path.join(dir, 'spool'), { recursive: true });
    // The spool's owner plants a symlink where the report's temporary file used to be written: it is never followed.
    const victim = path.join(dir, 'victim.txt');
    await writeFile(victim, 'untouched\n');
    await symlink(victim, path.join(dir, 'spool', 'transfer-last.json.tmp'));
    const r = cli(['test-transfer', '-c', config, '--from', 'isat-a', '--to', 'isat-b', '--amount', '10000', '--yes']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/1\. send SMS "TRANSFERPULSA 085600000001 10000" to 151 from isat-a: OK/);
    expect(r.out).toMatch(/3\. send SMS "OK[A-Z0-9]{6}" to 151 from isat-a: OK/);
    expect(r.out).toMatch(
      /confirmation on isat-b from 151: 6285611110001 mentransfer pulsa sebesar Rp 10\.000 tgl .* SN: /,
    );
    expect(r.out).toMatch(/result: confirmed after/);
    const kept = JSON.parse(await readFile(path.join(dir, 'spool', 'transfer-last.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(kept).toMatchObject({
      from: 'isat-a',
      to: '085600000001',
      amount: 10000,
      outcome: 'confirmed',
      confirmation: { sender: '151' },
    });
    expect(await readFile(victim, 'utf8')).toBe('untouched\n');
    expect((await readdir(path.join(dir, 'spool'))).filter((n) => n.startsWith('transfer-last.json.'))).toEqual([
      'transfer-last.json.tmp',
    ]);
  });

  it('a transfer larger than the balance fails at its step and says what was sent', () => {
    const r = cli(['test-transfer', '-c', config, '--from', 'tsel-b', '--to', 'tsel-a', '--amount', '5000', '--yes']);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/1\. dial USSD \*858\*081211110001\*5000# on tsel-b, then answer "1": FAILED/);
    expect(r.out).toContain('pulsa Anda tidak cukup');
    expect(r.err).toContain('already sent: USSD *858*081211110001*5000# on tsel-b; USSD answer "1" on tsel-b');
  });
});
