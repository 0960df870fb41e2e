/**
 * `balance`, `test-transfer`, `rates` and `calculate` in-process, on virtual modems of one virtual network reached
 * through ModemOps (the direct path: no daemon listens on the config's socket in the temp dir, and the opener stands in
 * for opening the port), against the convert-pulsa stand-in over real HTTP on loopback. Exit codes and output as runCli
 * gives them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { balanceCommand } from '../../src/cli/balance.js';
import type { OpenOps } from '../../src/cli/ops-target.js';
import type { Io } from '../../src/cli/io.js';
import { runCli } from '../../src/cli/lifecycle.js';
import { resellerCommands } from '../../src/cli/reseller.js';
import { transferCommand } from '../../src/cli/transfer.js';
import { startDemoReceiver, type DemoReceiver } from '../../src/demo/receiver.js';
import { OrderBook, STANDIN_OPERATORS } from '../../src/demo/orders.js';
import { TestNetwork } from '../transfer/vm-ops.js';
import { writeConfig } from '../support/config.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
  process.exitCode = undefined;
});

async function setup(
  modems: Array<Record<string, unknown>>,
  reseller: Record<string, unknown> = {},
  receiver?: DemoReceiver,
) {
  const dir = await mkdtemp(join(tmpdir(), 'pb-transfer-cli-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const file = await writeConfig(
    dir,
    {
      webhook: { baseUrl: receiver?.baseUrl ?? 'http://127.0.0.1:9/api/v1/convert-pulsa' },
      spool: { dir: join(dir, 'spool') },
      // its own socket path, where nothing listens: never a daemon running on this machine
      control: { socket: join(dir, 'control.sock') },
      modems: modems.map((m) => ({ port: `/dev/null-${String(m.name)}`, senders: ['*'], ...m })),
      reseller,
    },
    { defaults: false },
  );
  const net = new TestNetwork();
  cleanups.push(() => net.close());
  return { file, net };
}

async function run(argv: string[], open: OpenOps, input?: string): Promise<{ out: string; err: string; code: number }> {
  let out = '';
  let err = '';
  const io: Io = { out: (t) => void (out += t), err: (t) => void (err += t) };
  if (input !== undefined) {
    const { Readable } = await import('node:stream');
    io.input = Readable.from([input]);
  }
  const program = new Command().name('pulsa-bridge');
  for (const c of [balanceCommand(io, open), transferCommand(io, open), ...resellerCommands(io)]) program.addCommand(c);
  process.exitCode = undefined;
  await runCli(program, ['node', 'pulsa-bridge', ...argv], io);
  return { out, err, code: Number(process.exitCode ?? 0) };
}

function opener(_net: TestNetwork, lines: Map<string, Awaited<ReturnType<TestNetwork['add']>>>): OpenOps {
  return async (_config, name) => {
    const l = lines.get(name);
    if (!l) throw new Error(`no test line ${name}`);
    return l.ops;
  };
}

describe('balance command', () => {
  it('--json: an object for one modem, an array for several; an unparsed reply is shown verbatim', async () => {
    const { file, net } = await setup([
      { name: 'tsel', operator: 'telkomsel', balance: { minBalance: 10000 } },
      { name: 'isat', operator: 'indosat' },
      { name: 'odd', operator: 'xl' },
      { name: 'plain' },
    ]);
    const lines = new Map([
      [
        'tsel',
        await net.add('tsel', {
          number: '081211110001',
          operator: 'telkomsel',
          balance: 5000,
          activeUntil: '2030-01-31',
        }),
      ],
      [
        'isat',
        await net.add(
          'isat',
          { number: '085611110001', operator: 'indosat', balance: 125_000, activeUntil: '2030-02-28' },
          'huawei',
        ),
      ],
      [
        'odd',
        await net.add(
          'odd',
          { number: '081711110001', operator: 'xl', balanceText: () => 'Sisa kuota 2GB. Ketik 1 untuk beli' },
          'generic',
        ),
      ],
    ]);
    const one = await run(['balance', '-c', file, '--modem', 'isat', '--json'], opener(net, lines));
    expect(one.code).toBe(0);
    expect(JSON.parse(one.out)).toMatchObject({
      modem: 'isat',
      code: '*555#',
      balance: 125_000,
      activeUntil: '2030-02-28',
      state: 'ok',
    });
    expect(JSON.parse(one.out).reply).toMatch(/^Pulsa Anda Rp 125\.000,- Berlaku s\/d 28\.02\.2030/);

    const all = await run(['balance', '-c', file, '--json'], opener(net, lines));
    const arr = JSON.parse(all.out) as Array<Record<string, unknown>>;
    expect(arr.map((r) => [r.modem, r.balance, r.activeUntil, r.state])).toEqual([
      ['tsel', 5000, '2030-01-31', 'warning'],
      ['isat', 125_000, '2030-02-28', 'ok'],
      ['odd', null, null, 'unknown'],
    ]);
    expect(arr[2]!.reply).toBe('Sisa kuota 2GB. Ketik 1 untuk beli');

    const text = await run(['balance', '-c', file, '--modem', 'tsel'], opener(net, lines));
    expect(text.out).toContain('tsel: Rp 5.000, active until 2030-01-31');
    expect(text.out).toContain('warning: balance Rp 5000 is below Rp 10000');
    expect(text.out).toContain('hint: top up the SIM');
  });

  it('--json reads each operator reply of test/fixtures/balance/replies.json as the fixture says', async () => {
    type Fixture = { operator: string; code: string; text: string; balance: number | null; activeUntil: string | null };
    const fixtureFile = new URL('../fixtures/balance/replies.json', import.meta.url);
    const { replies } = JSON.parse(await readFile(fixtureFile, 'utf8')) as { replies: Fixture[] };
    const names = replies.map((_f, i) => `f${i}`);
    const { file, net } = await setup(replies.map((f, i) => ({ name: names[i], operator: f.operator })));
    const lines = new Map<string, Awaited<ReturnType<TestNetwork['add']>>>();
    for (const [i, f] of replies.entries()) {
      const number = `0812${String(2000000 + i)}`;
      const line = await net.add(names[i]!, { number, operator: f.operator as never, balanceText: () => f.text });
      lines.set(names[i]!, line);
    }
    const all = await run(['balance', '-c', file, '--json'], opener(net, lines));
    const got = JSON.parse(all.out) as Array<Record<string, unknown>>;
    expect(got.map((r) => [r.code, r.reply, r.balance, r.activeUntil])).toEqual(
      replies.map((f) => [f.code, f.text, f.balance, f.activeUntil]),
    );
    // A reply read in neither part is unknown, never ok.
    for (const [i, f] of replies.entries()) {
      if (f.balance === null && f.activeUntil === null) expect(got[i]!.state).toBe('unknown');
    }
  });

  it('--code and --reply override the config; a modem with no check is a usage error; a failed check exits 1', async () => {
    const { file, net } = await setup([{ name: 'plain' }, { name: 'tsel', operator: 'telkomsel' }]);
    const lines = new Map([
      ['plain', await net.add('plain', { number: '081211110009', operator: 'telkomsel', balance: 777 })],
    ]);
    expect((await run(['balance', '-c', file, '--modem', 'plain'], opener(net, lines))).code).toBe(2);
    const r = await run(
      ['balance', '-c', file, '--modem', 'plain', '--code', '*888#', '--reply', '2', '--json'],
      opener(net, lines),
    );
    expect(JSON.parse(r.out)).toMatchObject({
      code: '*888#',
      reply: 'Nomor Anda 6281211110009',
      balance: null,
      state: 'unknown',
    });
    const bad = await run(['balance', '-c', file, '--modem', 'plain', '--code', '*000#'], opener(net, lines));
    expect(bad.code).toBe(1);
    expect(bad.out).toMatch(/plain: balance check \*000# failed: .*not supported/);
  });
});

describe('test-transfer command', () => {
  const modems = [
    { name: 'sender', operator: 'telkomsel', number: '081211110001' },
    { name: 'centre', operator: 'telkomsel', number: '081200000001' },
  ];

  it('--dry-run prints every code and sends nothing', async () => {
    const { file, net } = await setup([
      { name: 'sender', operator: 'indosat', number: '085611110001' },
      { name: 'centre', operator: 'indosat', number: '085600000001' },
    ]);
    const r = await run(
      ['test-transfer', '-c', file, '--from', 'sender', '--to', 'centre', '--amount', '10000', '--dry-run'],
      async () => {
        throw new Error('must not open a modem');
      },
    );
    expect(r.code).toBe(0);
    expect(r.out).toContain('1. send SMS "TRANSFERPULSA 085600000001 10000" to 151 from sender');
    expect(r.out).toContain('2. wait up to 120 s for an SMS from 151 on sender and read the token in it');
    expect(r.out).toContain('3. send SMS "OK{token}" to 151 from sender');
    expect(r.out).toContain('4. wait up to 180 s for the confirmation SMS on centre');
    expect(net.network.line('085611110001')).toBeUndefined(); // no line was even joined: nothing could be sent
  });

  it.each(['toString', 'constructor', '__proto__'])(
    '--operator %s (an inherited name, no flow) is a usage error, nothing opened',
    async (op) => {
      const { file } = await setup([
        { name: 'sender', operator: 'indosat', number: '085611110001' },
        { name: 'centre', operator: 'indosat', number: '085600000001' },
      ]);
      const r = await run(
        [
          'test-transfer',
          '-c',
          file,
          '--from',
          'sender',
          '--to',
          'centre',
          '--amount',
          '10000',
          '--operator',
          op,
          '--dry-run',
        ],
        async () => {
          throw new Error('must not open a modem');
        },
      );
      expect(r.code).toBe(2);
      expect(r.err).toContain(`no transfer flow for operator "${op}"`);
    },
  );

  it('without --yes it asks, and refuses when it cannot', async () => {
    const { file, net } = await setup(modems);
    const lines = new Map([['sender', await net.add('sender', { number: '081211110001', operator: 'telkomsel' })]]);
    const no = await run(
      ['test-transfer', '-c', file, '--from', 'sender', '--to', '081200000001', '--amount', '5000'],
      opener(net, lines),
    );
    expect(no.code).toBe(2);
    expect(no.err).toMatch(/refusing to move real credit without a confirmation/);
    const declined = await run(
      ['test-transfer', '-c', file, '--from', 'sender', '--to', '081200000001', '--amount', '5000'],
      opener(net, lines),
      'n\n',
    );
    expect(declined.code).toBe(1);
    expect(net.network.line('081211110001')!.balance).toBe(50_000);
  });

  it('between two virtual modems: the confirmation SMS is shown with timings', async () => {
    const { file, net } = await setup(modems);
    const lines = new Map([
      ['sender', await net.add('sender', { number: '081211110001', operator: 'telkomsel' })],
      ['centre', await net.add('centre', { number: '081200000001', operator: 'telkomsel', balance: 0 })],
    ]);
    const r = await run(
      ['test-transfer', '-c', file, '--from', 'sender', '--to', 'centre', '--amount', '10000', '--yes'],
      opener(net, lines),
    );
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(
      /1\. dial USSD \*858\*081200000001\*10000# on sender, then answer "1": OK at \+\d+\.\d\d s \(\d+\.\d\d s\)/,
    );
    expect(r.out).toMatch(
      /confirmation on centre from 858: Anda mendapatkan penambahan pulsa Rp 10000 dari nomor 6281211110001 .* SN: /,
    );
    expect(r.out).toMatch(/result: confirmed after \d+\.\d s/);
    expect(net.network.line('081200000001')!.balance).toBe(10_000);
  });

  it('--order against the stand-in over HTTP: order created with the sender number, code dialed, order approved', async () => {
    const receiver = await startDemoReceiver({
      apiKey: 'k-test-123456',
      orders: new OrderBook(
        STANDIN_OPERATORS.map((o) => (o.operator_id === 1 ? { ...o, center_number: '081200000001' } : o)),
      ),
    });
    cleanups.push(() => receiver.close());
    const { file, net } = await setup(
      modems,
      {
        apiKey: 'env:PB_TEST_KEY',
        order: { operatorId: 1, payoutMethod: 'DANA', payoutAccountNumber: '08990000111', payoutAccountName: 'Tester' },
      },
      receiver,
    );
    process.env.PB_TEST_KEY = 'k-test-123456';
    cleanups.push(async () => void delete process.env.PB_TEST_KEY);
    const lines = new Map([
      ['sender', await net.add('sender', { number: '081211110001', operator: 'telkomsel' })],
      ['centre', await net.add('centre', { number: '081200000001', operator: 'telkomsel', balance: 0 })],
    ]);
    // Stands in for the daemon: the confirmation SMS the centre receives is posted to the webhook (once).
    const posted = new Set<number>();
    const forward = setInterval(async () => {
      for (const m of await lines.get('centre')!.ops.smsList('all')) {
        if (m.index !== undefined && m.text && !posted.has(m.index)) {
          posted.add(m.index);
          await fetch(`${receiver.baseUrl}/webhook/sms-gateway`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ sender: m.sender, message: m.text }),
          });
        }
      }
    }, 50);
    cleanups.push(async () => clearInterval(forward));
    const r = await run(
      [
        'test-transfer',
        '-c',
        file,
        '--from',
        'sender',
        '--order',
        '--amount',
        '10000',
        '--yes',
        '--poll-interval',
        '100',
        '--json',
      ],
      opener(net, lines),
    );
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.out) as {
      order: { trx_id: string; final: string; statuses: Array<{ status: string }> };
      outcome: string;
      confirmation: { sender: string };
    };
    expect(report.order.trx_id).toMatch(/^CVT-\d{8}-[A-Z0-9]+$/);
    expect(report.order.final).toBe('approved');
    expect(report.order.statuses.map((s) => s.status)).toEqual(['pending', 'approved']);
    expect(report.outcome).toBe('confirmed');
    const order = receiver.orders.orders.get(report.order.trx_id)!;
    expect(order).toMatchObject({ status: 'approved', sender_phone_number: '081211110001', pulsa_amount: 10_000 });
    expect(receiver.received.filter((s) => s.approved === report.order.trx_id)).toHaveLength(1);
  });

  it('--order: an API error is shown with status and body, the key masked, and nothing is sent', async () => {
    const receiver = await startDemoReceiver({ apiKey: 'the-right-key' });
    cleanups.push(() => receiver.close());
    const { file, net } = await setup(
      modems,
      {
        apiKey: 'wrong-key-1234',
        order: { operatorId: 1, payoutMethod: 'DANA', payoutAccountNumber: '1', payoutAccountName: 'T' },
      },
      receiver,
    );
    const lines = new Map([['sender', await net.add('sender', { number: '081211110001', operator: 'telkomsel' })]]);
    const r = await run(
      ['test-transfer', '-c', file, '--from', 'sender', '--order', '--amount', '10000', '--yes'],
      opener(net, lines),
    );
    expect(r.code).toBe(1);
    expect(r.err).toContain('POST /orders answered 401');
    expect(r.err).toContain('status: 401');
    expect(r.err).toContain('invalid or missing X-API-KEY');
    expect(r.err + r.out).not.toContain('wrong-key-1234');
    expect(net.network.line('081211110001')!.balance).toBe(50_000);
  });
});

/** A reseller API that answers what it likes: POST /orders -> `order`, GET /orders/{id} -> `status` (real HTTP). */
async function hostileReseller(
  order: Record<string, unknown>,
  status: string,
): Promise<{ url: string; close: () => Promise<void> }> {
  const { createServer } = await import('node:http');
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'POST' && req.url?.endsWith('/orders'))
        res.end(JSON.stringify({ success: true, data: order }));
      else res.end(JSON.stringify({ success: true, data: { ...order, status } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/api/v1/convert-pulsa`,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

describe('test-transfer --order against a reseller API that answers something else', () => {
  const order = {
    operatorId: 1,
    payoutMethod: 'DANA',
    payoutAccountNumber: '08990000111',
    payoutAccountName: 'Tester',
  };
  const modems = [
    { name: 'sender', operator: 'telkomsel', number: '081211110001' },
    { name: 'centre', operator: 'telkomsel', number: '081200000001' },
  ];

  it('Rp 5000 asked, a code for another number and Rp 99000 answered: nothing dialled, both printed, exit 1', async () => {
    const api = await hostileReseller(
      {
        trx_id: 'CVT-20261129-EVIL',
        ussd_code: '*858*081299999999*99000#',
        center_number: '081200000001',
        status: 'pending',
      },
      'approved',
    );
    cleanups.push(api.close);
    const { file, net } = await setup(modems, { baseUrl: api.url, apiKey: 'k', order });
    const sender = await net.add('sender', { number: '081211110001', operator: 'telkomsel' });
    const lines = new Map([
      ['sender', sender],
      ['centre', await net.add('centre', { number: '081200000001', operator: 'telkomsel', balance: 0 })],
    ]);
    const r = await run(
      ['test-transfer', '-c', file, '--from', 'sender', '--order', '--amount', '5000', '--yes'],
      opener(net, lines),
    );
    expect(r.code).toBe(1);
    expect(r.err).toContain('error: the order does not match what was asked; nothing was dialled');
    expect(r.err).toMatch(/asked: +Rp 5000 from 081211110001, Telkomsel flow \(\*858\*\{to\}\*\{amount\}#\)/);
    expect(r.err).toContain('answered: order CVT-20261129-EVIL: code *858*081299999999*99000#, centre 081200000001');
    expect(r.err).toContain("the order's code *858*081299999999*99000# sends Rp 99000, Rp 5000 was asked");
    expect(sender.vm.commandLog().filter((l) => /CUSD|ATD/i.test(l))).toEqual([]);
    expect(net.network.line('081211110001')!.balance).toBe(50_000);
  });

  it("the transfer's own USSD step fails while the order says approved: never a success, both said, exit 1", async () => {
    const api = await hostileReseller(
      {
        trx_id: 'CVT-20261129-LIE',
        ussd_code: '*858*081200000001*5000#',
        center_number: '081200000001',
        status: 'pending',
      },
      'approved',
    );
    cleanups.push(api.close);
    const { file, net } = await setup(modems, { baseUrl: api.url, apiKey: 'k', order });
    // The sending SIM has no credit: the operator refuses the transfer.
    const sender = await net.add('sender', { number: '081211110001', operator: 'telkomsel', balance: 0 });
    const lines = new Map([
      ['sender', sender],
      ['centre', await net.add('centre', { number: '081200000001', operator: 'telkomsel', balance: 0 })],
    ]);
    const r = await run(
      [
        'test-transfer',
        '-c',
        file,
        '--from',
        'sender',
        '--order',
        '--amount',
        '5000',
        '--yes',
        '--poll-interval',
        '100',
        '--timeout',
        '5',
      ],
      opener(net, lines),
    );
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/1\. dial USSD \*858\*081200000001\*5000# on sender, then answer "1": FAILED/);
    expect(r.out).toMatch(/^result: order CVT-20261129-LIE ended approved after [\d.]+ s \(the transfer: failed\)$/m);
    expect(r.err).toContain("WARNING: order CVT-20261129-LIE says approved, but this transfer's own step failed");
    expect(r.err).toContain('error: test transfer failed: the transfer failed (the order says approved): ');
  });
});

describe('rates and calculate', () => {
  it('print what the stand-in answers; a wrong key is a 401 with its body', async () => {
    const receiver = await startDemoReceiver({ apiKey: 'k-rates-9999' });
    cleanups.push(() => receiver.close());
    const { file } = await setup([{ name: 'm' }], { apiKey: 'k-rates-9999' }, receiver);
    const rates = await run(['rates', '-c', file, '--json'], async () => Promise.reject(new Error('unused')));
    expect(rates.code).toBe(0);
    expect((JSON.parse(rates.out) as { data: Array<{ name: string }> }).data.map((o) => o.name)).toEqual([
      'Telkomsel',
      'Indosat',
      'XL',
    ]);
    const calc = await run(['calculate', '-c', file, '--operator-id', '1', '--amount', '100000'], async () =>
      Promise.reject(new Error('unused')),
    );
    expect(calc.out).toContain('"receive_amount": 85000');
    const tooSmall = await run(['calculate', '-c', file, '--operator-id', '1', '--amount', '100', '--json'], async () =>
      Promise.reject(new Error('unused')),
    );
    expect(tooSmall.code).toBe(1);
    expect(JSON.parse(tooSmall.out)).toMatchObject({ status: 422 });
    const { file: noKey } = await setup([{ name: 'm' }], {}, receiver);
    expect((await run(['rates', '-c', noKey], async () => Promise.reject(new Error('unused')))).code).toBe(2);
  });
});
