/**
 * The daemon in-process with simulated modems on its virtual network: a balance check on the modem's scheduler is
 * kept in the daemon's status and shown by `status` (text and JSON); a transfer dialed on another line of the network
 * reaches the daemon's centre modem, is spooled and posted to the stand-in once, which approves the matching order.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseConfig } from '../../src/config.js';
import { statusFilePath } from '../../src/daemon/status-file.js';
import { OrderBook, STANDIN_OPERATORS } from '../../src/demo/orders.js';
import { startDemoReceiver } from '../../src/demo/receiver.js';
import { pick, ResellerClient } from '../../src/reseller/client.js';
import { runTransfer } from '../../src/transfer/runner.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';
import { TestNetwork } from '../transfer/vm-ops.js';
import { cli } from '../support/cli.js';
import { startInProcess } from '../support/in-process.js';
import { virtualNetwork } from '../../src/virtual-modem/virtual-ports.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
  process.exitCode = undefined;
});

describe('daemon: balance watch and the virtual network', () => {
  it('a balance check runs on the modem scheduler; status and status --json show the last result', async () => {
    const { dir, cleanup } = await tempDir('daemon-balance');
    cleanups.push(cleanup);
    const receiver = await startDemoReceiver();
    cleanups.push(() => receiver.close());
    const spoolDir = path.join(dir, 'spool');
    const config = parseConfig(
      {
        webhook: { baseUrl: receiver.baseUrl },
        spool: { dir: spoolDir, fsync: false },
        modems: [
          {
            name: 'centre',
            port: 'virtual:centre?number=081200000001&operator=telkomsel&balance=24025&activeUntil=2030-08-28',
            senders: ['858'],
            operator: 'telkomsel',
            number: '081200000001',
            balance: { minBalance: 100000 },
          },
        ],
        shutdownGraceSec: 1,
      },
      {},
    );
    const daemon = await startInProcess(config, cleanups, { virtualModem: { bootStepMs: 0 } });
    const r = await daemon.balanceWatch!.checkNow('centre', config.modems[0]!.balance!);
    expect(r).toMatchObject({
      modem: 'centre',
      code: '*888#',
      balance: 24025,
      activeUntil: '2030-08-28',
      state: 'warning',
    });
    expect(r.reply).toMatch(/^Sisa pulsa Rp\.24025\.Aktif sd 28\/08\/2030\./);
    expect(daemon.status().modems[0]!.balance).toEqual(r);

    await until(
      async () =>
        (
          JSON.parse(await readFile(statusFilePath(spoolDir), 'utf8').catch(() => '{}')) as {
            modems?: Array<{ balance?: unknown }>;
          }
        ).modems?.[0]?.balance !== undefined,
      'status.json with the balance',
      10_000,
    );
    const json = await cli(['status', '--spool', spoolDir, '--json']);
    expect(
      (JSON.parse(json.out) as { status: { modems: Array<{ balance: unknown }> } }).status.modems[0]!.balance,
    ).toMatchObject({ balance: 24025, activeUntil: '2030-08-28', state: 'warning' });
    const text = await cli(['status', '--spool', spoolDir]);
    expect(text.out).toMatch(
      / {2}balance \(checked [^)]+\): Rp 24\.025, active until 2030-08-28 \(\d+ days\) \[WARNING\]/,
    );
    expect(text.out).toContain('    warning: balance Rp 24025 is below Rp 100000');
  });

  it('a transfer for an order reaches the centre modem; its confirmation is posted once and approves the order', async () => {
    const { dir, cleanup } = await tempDir('daemon-transfer');
    cleanups.push(cleanup);
    const orders = new OrderBook(
      STANDIN_OPERATORS.map((o) => (o.operator_id === 1 ? { ...o, center_number: '081200000001' } : o)),
    );
    const receiver = await startDemoReceiver({ orders, apiKey: 'k-daemon-test' });
    cleanups.push(() => receiver.close());
    const config = parseConfig(
      {
        webhook: { baseUrl: receiver.baseUrl, retry: { baseDelayMs: 50, maxDelayMs: 200 } },
        spool: { dir: path.join(dir, 'spool'), fsync: false },
        modems: [
          {
            name: 'centre',
            port: 'virtual:centre?number=081200000001&operator=telkomsel&balance=0',
            senders: ['858'],
            operator: 'telkomsel',
            number: '081200000001',
          },
        ],
        shutdownGraceSec: 1,
      },
      {},
    );
    const daemon = await startInProcess(config, cleanups, { virtualModem: { bootStepMs: 0 } });
    const outside = new TestNetwork({}, virtualNetwork());
    cleanups.push(() => outside.close());
    const sender = await outside.add('sender', { number: '081211110001', operator: 'telkomsel' });

    const client = new ResellerClient({ baseUrl: receiver.baseUrl, apiKey: 'k-daemon-test', userAgent: 'test' });
    const created = await client.createOrder({
      operator_id: 1,
      pulsa_amount: 10_000,
      payout_method: 'DANA',
      payout_account_number: '0899',
      payout_account_name: 'T',
      sender_phone_number: '081211110001',
    });
    const code = pick(created, ['data.ussd_code'])!;
    expect(code).toBe('*858*081200000001*10000#');
    const report = await runTransfer({
      from: sender.ops,
      steps: [{ kind: 'ussd', code, replies: ['1'] }],
      amount: 10_000,
      confirmTimeoutMs: 5000,
    });
    expect(report.outcome).toBe('sent');
    const trx = pick(created, ['data.trx_id'])!;
    await until(
      async () => pick(await client.order(trx), ['data.status']) === 'approved',
      'the order approved',
      15_000,
    );
    expect(receiver.received.filter((s) => s.approved === trx)).toHaveLength(1);
    expect(receiver.received.filter((s) => s.sender === '858')).toHaveLength(1);
    expect(virtualNetwork().line('081200000001')!.balance).toBe(10_000);
  });
});
