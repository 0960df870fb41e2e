/**
 * `npm run demo`: the whole path with no hardware and no network. A local stand-in for the convert-pulsa webhook, the
 * daemon on virtual modems with a throwaway spool, realistic operator SMS injected (a 3-part one, one from an unknown
 * sender that is archived, a failed POST to show a retry), each printed as it arrives with what the server would
 * parse; then the CLI's `balance` and `test-transfer --order` through the running daemon (demo/transfer-demo.ts), and
 * a canary run now with `canary run` (demo/canary-demo.ts).
 * Exits 0, or 1 if anything did not arrive in time or the order failed.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from './config.js';
import { Daemon } from './daemon.js';
import { startDemoReceiver, type ReceivedSms } from './demo/receiver.js';
import { createLogger } from './log.js';
import { runTransferDemo } from './demo/transfer-demo.js';
import { runCanaryDemo } from './demo/canary-demo.js';
import { stopVirtualModems, virtualModemAt } from './virtual-modem/virtual-ports.js';

const MULTIPART_TEXT =
  'Terima kasih telah menggunakan layanan kami. Anda mendapatkan penambahan pulsa Rp 25.000 dari nomor 6281311112222 ' +
  'tgl 2026-11-22 pukul 10:15 WIB. Pulsa dapat digunakan untuk telepon, SMS dan paket data. Cek pulsa melalui *888#. ' +
  'Nikmati juga promo paket internet harian mulai Rp 2.000 dengan menekan *363#. Info lebih lanjut hubungi CS 188. SN: TSEL2611221015';

export async function runDemo(): Promise<number> {
  const out = (s: string) => process.stdout.write(s + '\n');
  const receiver = await startDemoReceiver();
  const workDir = await mkdtemp(join(tmpdir(), 'pulsa-bridge-demo-'));
  const spoolDir = join(workDir, 'spool');
  const configFile = join(workDir, 'config.json');
  // The story is the demo's own lines; the daemon's log joins them with --verbose (or LOG_LEVEL), else warnings only.
  const logger = createLogger({
    level: process.env.LOG_LEVEL ?? (process.argv.includes('--verbose') ? 'info' : 'warn'),
  });
  const raw = {
    webhook: { baseUrl: receiver.baseUrl, retry: { baseDelayMs: 200, maxDelayMs: 2000 } },
    spool: { dir: spoolDir },
    // test-transfer --order: the stand-in's reseller API (base URL = the webhook's) and the order's defaults.
    reseller: {
      apiKey: receiver.apiKey,
      order: { operatorId: 1, payoutMethod: 'DANA', payoutAccountNumber: '089900001111', payoutAccountName: 'Demo' },
    },
    modems: [
      // The centre SIM: the stand-in's Telkomsel centre number; its balance is watched.
      // A virtual modem's port names its SIM (number, operator, starting balance): the virtual network joins them.
      {
        name: 'demo-telkomsel',
        port: 'virtual:demo-telkomsel?number=081200000001&operator=telkomsel&balance=24025',
        senders: ['858', 'TELKOMSEL'],
        sweepIntervalSec: 60,
        operator: 'telkomsel',
        number: '081200000001',
        balance: { minBalance: 10000 },
      },
      // A second virtual Telkomsel SIM that sends credit to the centre in the test transfer.
      {
        name: 'demo-sender',
        port: 'virtual:demo-sender?number=081211110001&operator=telkomsel&balance=75000',
        senders: ['858'],
        operator: 'telkomsel',
        number: '081211110001',
      },
    ],
    // A canary: the same order path on a schedule (hourly here; the demo runs it now with `canary run`), capped.
    canaries: [
      {
        name: 'demo-canary',
        from: 'demo-sender',
        amount: 5000,
        intervalSec: 3600,
        maxRupiahPerDay: 10000,
        order: true,
      },
    ],
    shutdownGraceSec: 2,
  };
  const config = parseConfig(raw, {});
  // The operator commands of the second act read the same config (its control socket and modems).
  await writeFile(configFile, JSON.stringify(raw, null, 2));
  out(`demo: receiver on ${receiver.baseUrl}/webhook/sms-gateway, spool in ${spoolDir}`);
  receiver.onSms((sms: ReceivedSms) => {
    const f = sms.facts;
    out(
      `demo: receiver got SMS from ${sms.sender}${sms.duplicate ? ' (duplicate, same Idempotency-Key)' : ''}: ` +
        `amount=${f.amount ?? '-'} senderNumber=${f.senderNumber ?? '-'} serial=${f.serial ?? '-'}${sms.headers['x-pulsa-bridge-incomplete'] ? ' [incomplete multipart]' : ''}`,
    );
  });

  const daemon = await Daemon.start({ config, logger });
  let code = 0;
  try {
    const vm = virtualModemAt('virtual:demo-telkomsel');
    if (!vm) throw new Error('the virtual modem did not start');
    await waitFor(
      () => daemon.supervisors.every((s) => s.status().state === 'running'),
      15_000,
      'the virtual modems to be ready',
    );

    receiver.failNext(1, 503);
    out('demo: the receiver will answer 503 once, to show a retry');
    vm.injectSms({
      from: '858',
      text: 'Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774 tgl 2018-01-08. Cek pulsa melalui *888#. Info CS: 188',
    });
    vm.injectSms({
      from: 'TELKOMSEL',
      text: 'Transfer pulsa Rp10.000 dari 081234567890 berhasil. SN: 2026112212345678',
    });
    vm.injectSms({ from: '858', text: MULTIPART_TEXT });
    vm.injectSms({ from: '+6281299998888', text: 'Halo, ini pesan pribadi: bukan dari operator.' });

    await waitFor(() => receiver.received.length >= 3, 20_000, 'three SMS at the receiver');
    await waitFor(async () => (await daemon.spool.stats()).pending === 0, 10_000, 'the spool to drain');
    const stats = await daemon.spool.stats();
    const left = vm.storedMessages().length;
    out(
      `demo: receiver has ${receiver.received.length} SMS; spool: ${stats.sent} sent, ${stats.pending} pending, ${stats.ignored} ignored (unknown sender archived), ${stats.dead} dead; SIM holds ${left} message(s)`,
    );
    if (receiver.received.length !== 3 || stats.ignored !== 1 || left !== 0) {
      out('demo: FAILED: unexpected counts');
      code = 1;
    } else if (
      !(await runTransferDemo({ configFile, receiver, centre: 'demo-telkomsel', sender: 'demo-sender', out }))
    ) {
      out('demo: FAILED: the balance check or the test transfer did not end as expected');
      code = 1;
    } else if (!(await runCanaryDemo({ configFile, receiver, canary: 'demo-canary', out }))) {
      out('demo: FAILED: the canary run did not end approved');
      code = 1;
    } else {
      out('demo: OK');
    }
  } catch (err) {
    out(`demo: FAILED: ${err instanceof Error ? err.message : String(err)}`);
    code = 1;
  } finally {
    await daemon.stop();
    stopVirtualModems();
    await receiver.close();
    await rm(workDir, { recursive: true, force: true });
  }
  return code;
}

async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const start = Date.now();
  while (!(await cond())) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runDemo().then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`demo failed: ${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    },
  );
}
