/**
 * Raw AT, USSD sessions, balance checks and test transfers as operations use them: the compiled
 * `bin/pulsa-bridge run --config F` in its own process, its modem on `pulsa-bridge simulate --link P` (socat pty,
 * native binding; SIMCom-like and Huawei-like), and the CLI as separate processes talking to the daemon's socket.
 * The transfers run on the daemon's own virtual network (simulated modems with numbers and operators) against the
 * convert-pulsa stand-in over real HTTP (webhook and reseller API).
 */
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startDemoReceiver, type DemoReceiver } from '../../src/demo/receiver.js';
import { reply, startServer, type TestServer } from '../forward/server.js';
import { testWebhook, writeConfig } from '../support/config.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';
import { hasSocat } from '../support/pty.js';
import { CliProcess, DaemonProcess, killAll, runCli, SimProcess } from '../support/daemon.js';
import { defaultActiveUntil } from '../../src/virtual-modem/ussd-script.js';

let dir: string;
let cleanup: () => Promise<void>;
let server: TestServer;

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('control-ussd'));
  server = await startServer([reply(200, '{"success":true}')]);
});

afterEach(async () => {
  await killAll();
  await server.close();
  await cleanup();
});

const daemonConfig = (modem: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<string> =>
  writeConfig(dir, {
    webhook: testWebhook(server.url),
    modems: [{ name: 'tsel-1', senders: ['858'], sweepIntervalSec: 3600, operator: 'telkomsel', ...modem }],
    ...extra,
  });

const texts = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => `Anda mendapatkan penambahan pulsa Rp ${1000 + i} ${tag}`);
const webhookTexts = () =>
  server.requests.map((r) => (JSON.parse(r.body.toString('utf8')) as { message: string }).message);
const MENU = `[status 1: more input expected]\nSisa pulsa Rp.24025.Aktif sd ${defaultActiveUntil()}.\n1.Beli Paket\n2.Info Kartu\n`;

async function stop(daemon: DaemonProcess): Promise<void> {
  daemon.child.kill('SIGTERM');
  expect((await daemon.exit).code).toBe(0);
}

describe.skipIf(!hasSocat)('USSD, raw AT and balance through the running daemon (real processes)', () => {
  it.each(['simcom', 'huawei'] as const)(
    '%s-like modem: USSD menus through the daemon while SMS keep arriving (none lost); balance --json through the daemon and without one',
    async (profile) => {
      const link = path.join(dir, 'modem');
      const sim = await SimProcess.start(link, ['--profile', profile], 15_000);
      const config = await daemonConfig({ port: link });
      const daemon = await DaemonProcess.start(config, ['modem tsel-1 ready:', 'control socket listening']);
      expect(daemon.logged(`(profile ${profile})`)).toBe(true);
      const sent = texts(6, `during USSD on ${profile}`);
      const feeding = (async () => {
        for (const t of sent) {
          sim.child.stdin!.write(`sms 858 ${t}\n`);
          await new Promise((r) => setTimeout(r, 200));
        }
      })();
      const sessions = [];
      for (let i = 0; i < 3; i++)
        sessions.push(await runCli(['ussd', '*888#', '--reply', '2', '--config', config, '--verbose']));
      await feeding;
      for (const s of sessions) {
        expect(s.code, s.err).toBe(0);
        expect(s.out).toMatch(
          new RegExp(`^${MENU.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\[status 0: done\\]\\nNomor Anda \\d+\\n$`),
        );
        expect(s.err).toContain('path: the running daemon');
      }
      await until(() => server.requests.length >= sent.length, `all ${sent.length} SMS at the webhook`, 30_000);
      expect([...webhookTexts()].sort()).toEqual([...sent].sort());

      const viaDaemon = await runCli(['balance', '--config', config, '--json']);
      expect(viaDaemon.code, viaDaemon.err).toBe(0);
      expect(
        daemon.out.some((l) => /operator \(uid \d+ pid \d+\): balance check on tsel-1 \(the configured code\)/.test(l)),
      ).toBe(true);
      const a = JSON.parse(viaDaemon.out) as Record<string, unknown>;
      expect(a).toMatchObject({
        modem: 'tsel-1',
        code: '*888#',
        balance: 24025,
        activeUntil: defaultActiveUntil().split('/').reverse().join('-'),
      });
      await stop(daemon);
      const direct = await runCli(['balance', '--config', config, '--json']);
      expect(direct.code, direct.err).toBe(0);
      const b = JSON.parse(direct.out) as Record<string, unknown>;
      expect({ ...b, checkedAt: undefined }).toEqual({ ...a, checkedAt: undefined }); // the same answer on both paths
    },
    120_000,
  );

  it('one session per modem: a second client is told who holds it; a client killed mid-session releases it', async () => {
    const link = path.join(dir, 'modem');
    const sim = await SimProcess.start(link, ['--profile', 'simcom'], 15_000);
    const config = await daemonConfig({ port: link });
    const daemon = await DaemonProcess.start(config, ['modem tsel-1 ready:', 'control socket listening']);
    const socket = path.join(dir, 'spool', 'control.sock');
    // A client process that opens a session, shows the menu and stays (a menu left open), until it is killed.
    const holder = new CliProcess(
      [
        '-e',
        `const s = require('node:net').connect(${JSON.stringify(socket)});
         s.write(JSON.stringify({ v: 1, id: 1, op: 'hello', client: 'ussd-holder' }) + '\\n');
         s.write(JSON.stringify({ v: 1, id: 2, op: 'ussd.open', code: '*888#' }) + '\\n');
         let buf = ''; s.on('data', (c) => { buf += c; for (const l of buf.split('\\n').slice(0, -1)) console.log(l); buf = buf.slice(buf.lastIndexOf('\\n') + 1); });`,
      ],
      'ignore',
      { node: true },
    );
    await until(() => holder.out.some((l) => l.includes('"id":2')), 'the holder to open its session', 15_000);
    const opened = JSON.parse(holder.out.find((l) => l.includes('"id":2'))!) as {
      ok: boolean;
      result: { status: number; text: string };
    };
    expect(opened).toMatchObject({
      ok: true,
      result: { status: 1, text: expect.stringContaining('Sisa pulsa Rp.24025') },
    });

    const second = await runCli(['ussd', '*888#', '--config', config, '--no-interactive']);
    expect(second.code).toBe(1);
    expect(second.err).toMatch(
      /^error: busy, session opened by ussd-holder \(uid \d+, connection \d+\) at \d{4}-\d\d-\d\dT[\d:.]+Z\nhint: one USSD session per modem: wait until it ends \(it times out when left alone\)\n$/,
    );
    const balance = await runCli(['balance', '--config', config, '--json']);
    expect(balance.code).toBe(1);
    expect(balance.err).toMatch(/^error: busy, session opened by ussd-holder/);

    holder.child.kill('SIGKILL');
    await holder.exit;
    await until(
      () => daemon.logged('USSD session cancelled: its owner went away'),
      'the daemon to release the session',
      10_000,
    );
    const next = await runCli(['ussd', '*888#', '--reply', '2', '--config', config]);
    expect(next.code, next.err).toBe(0);
    expect(next.out).toMatch(/^\[status 1: more input expected\]\nSisa pulsa[^]*\[status 0: done\]\nNomor Anda \d+\n$/);
    // SMS still flow.
    sim.child.stdin!.write(`sms 858 ${texts(1, 'after the sessions')[0]}\n`);
    await until(() => server.requests.length === 1, 'the SMS at the webhook', 20_000);
    expect(daemon.out.filter((l) => /"level":(50|60)/.test(l))).toEqual([]);
    await stop(daemon);
  }, 90_000);

  it('raw AT: both answers of AT+CSQ;+CREG?, a refused ATZ, a forced one followed by re-initialisation (SMS still arrive)', async () => {
    const link = path.join(dir, 'modem');
    const sim = await SimProcess.start(link, ['--profile', 'simcom'], 15_000);
    const config = await daemonConfig({ port: link });
    const daemon = await DaemonProcess.start(config, ['modem tsel-1 ready:', 'control socket listening']);
    const both = await runCli(['at', 'AT+CSQ;+CREG?', '--config', config]);
    expect(both.code, both.err).toBe(0);
    expect(both.out).toMatch(/^\+CSQ: \d+,\d+\n\+CREG: \d,\d\nOK\n$/);

    const refused = await runCli(['at', 'ATZ', '--config', config]);
    expect(refused.code).toBe(1);
    expect(refused.err).toBe(
      'error: refused through the running daemon: ATZ resets the modem to its stored profile (echo, PDU mode and indications are lost)\n' +
        'hint: add --force if you mean it (the daemon then re-checks its settings and re-initialises the modem)\n',
    );
    const readyBefore = daemon.count('"msg":"modem ready"');
    const echoOffBefore = daemon.count('"command":"ATE0","lines"');
    const forced = await runCli(['at', 'ATZ', '--force', '--config', config]);
    expect(forced.code, forced.err).toBe(0);
    expect(forced.out).toBe('OK\n');
    await until(
      () => daemon.count('"msg":"modem ready"') > readyBefore,
      'the daemon to re-initialise the modem',
      20_000,
    );
    expect(
      daemon.out.some((l) =>
        /operator \(uid \d+ pid \d+\): ATZ may have changed what the daemon relies on: re-initialising tsel-1/.test(l),
      ),
    ).toBe(true);
    // ATZ turned echo back on (the virtual modem's stored profile): the re-initialisation turned it off again.
    expect(daemon.count('"command":"ATE0","lines"')).toBeGreaterThan(echoOffBefore);
    // The sweep runs hourly here: the SMS arrive by their indications, on the re-initialised modem.
    const after = texts(2, 'after the forced ATZ');
    for (const t of after) sim.child.stdin!.write(`sms 858 ${t}\n`);
    await until(() => server.requests.length >= after.length, 'the SMS at the webhook', 20_000);
    expect([...webhookTexts()].sort()).toEqual([...after].sort());
    await stop(daemon);
  }, 90_000);
});

describe('balance and test-transfer through the running daemon, on its virtual network (real processes, real HTTP)', () => {
  let receiver: DemoReceiver;
  beforeEach(async () => {
    receiver = await startDemoReceiver();
  });
  afterEach(async () => {
    await receiver.close();
  });

  it('test-transfer without and with --order: confirmed on the centre, the order ends approved, the confirmation reached the webhook once', async () => {
    const file = await writeConfig(dir, {
      webhook: { baseUrl: receiver.baseUrl, retry: { baseDelayMs: 50, maxDelayMs: 200 } },
      spool: { dir: path.join(dir, 'spool') },
      reseller: {
        apiKey: receiver.apiKey,
        order: { operatorId: 1, payoutMethod: 'DANA', payoutAccountNumber: '089900001111', payoutAccountName: 'Test' },
      },
      modems: [
        // The stand-in's Telkomsel centre number.
        {
          name: 'centre',
          port: 'virtual:centre?number=081200000001&operator=telkomsel&balance=24025&activeUntil=2031-01-31',
          senders: ['858'],
          operator: 'telkomsel',
          number: '081200000001',
        },
        {
          name: 'sender',
          port: 'virtual:sender?number=081211110001&operator=telkomsel&balance=75000',
          senders: ['858'],
          operator: 'telkomsel',
          number: '081211110001',
        },
      ],
    });
    const daemon = await DaemonProcess.start(file, [
      'modem centre ready:',
      'modem sender ready:',
      'control socket listening',
    ]);

    const balance = await runCli(['balance', '-c', file, '--modem', 'centre', '--json']);
    expect(balance.code, balance.err).toBe(0);
    expect(JSON.parse(balance.out)).toMatchObject({
      modem: 'centre',
      code: '*888#',
      balance: 24025,
      activeUntil: '2031-01-31',
      state: 'ok',
    });
    expect(daemon.out.some((l) => /operator \(uid \d+ pid \d+\): balance check on centre/.test(l))).toBe(true);

    const plain = await runCli([
      'test-transfer',
      '-c',
      file,
      '--from',
      'sender',
      '--to',
      'centre',
      '--amount',
      '5000',
      '--yes',
      '--timeout',
      '30',
    ]);
    expect(plain.code, plain.err + plain.out).toBe(0);
    expect(plain.out).toContain('via the running daemon');
    expect(plain.out).toMatch(
      /confirmation on centre from 858, spool id sms-[0-9a-f]+: Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6281211110001/,
    );
    expect(plain.out).toMatch(/^result: confirmed after/m);
    const plainPosts = receiver.received.filter((s) =>
      /penambahan pulsa Rp 5000 dari nomor 6281211110001/.test(s.message),
    );
    expect(plainPosts).toHaveLength(1);

    const order = await runCli([
      'test-transfer',
      '-c',
      file,
      '--order',
      '--from',
      'sender',
      '--amount',
      '10000',
      '--yes',
      '--timeout',
      '30',
      '--poll-interval',
      '200',
    ]);
    expect(order.code, order.err + order.out).toBe(0);
    expect(order.out).toContain('via the running daemon');
    const trx = /^result: order (\S+) ended approved after/m.exec(order.out)?.[1];
    expect(trx, order.out).toBeDefined();
    expect(receiver.received.filter((s) => s.approved === trx)).toHaveLength(1);
    expect(
      receiver.received.filter((s) => /penambahan pulsa Rp 10000 dari nomor 6281211110001/.test(s.message)),
    ).toHaveLength(1);
    expect(daemon.out.filter((l) => /"level":(50|60)/.test(l))).toEqual([]);
    await stop(daemon);
  }, 120_000);
});
