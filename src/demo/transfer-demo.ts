/**
 * The demo's second act (`npm run demo`): with the daemon running two virtual Telkomsel modems, the operator's
 * `balance` and `test-transfer --order` commands, each run as its own `bin/pulsa-bridge` process, reach the modems
 * through the daemon's control socket, against the stand-in reseller API. Returns true when both went through the
 * daemon, the balance was read, the order ended `approved` and the confirmation reached the webhook exactly once.
 * Demo only.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { DemoReceiver } from './receiver.js';

/** The CLI as installed: dist/src/demo/ -> the package root's bin/. */
const BIN = fileURLToPath(new URL('../../../bin/pulsa-bridge', import.meta.url));

export interface TransferDemoOptions {
  /** The config file the daemon runs with (the commands read its control socket and modems from it). */
  configFile: string;
  receiver: DemoReceiver;
  centre: string;
  sender: string;
  out: (line: string) => void;
}

/** One CLI command in its own process: its stdout, stderr and exit code (the canary act uses it too). */
export function command(argv: string[]): Promise<{ out: string; err: string; code: number }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...argv],
      { timeout: 120_000, env: { ...process.env, LOG_LEVEL: 'warn' } },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
        resolve({ out: stdout, err: stderr || (err && typeof err.code !== 'number' ? err.message : ''), code });
      },
    );
  });
}

export async function runTransferDemo(o: TransferDemoOptions): Promise<boolean> {
  const { receiver, out } = o;
  const balanceArgs = ['balance', '-c', o.configFile, '--modem', o.centre, '--json'];
  out(`demo: $ pulsa-bridge ${balanceArgs.slice(0, 1).concat(balanceArgs.slice(3)).join(' ')}`);
  const b = await command(balanceArgs);
  if (b.code !== 0) {
    out(`demo: balance failed (exit ${b.code}): ${b.err.trim()}`);
    return false;
  }
  const balance = JSON.parse(b.out) as {
    modem: string;
    code: string;
    reply: string;
    balance: number | null;
    activeUntil: string | null;
    state: string;
  };
  out(
    `demo: balance of ${o.centre} over USSD ${balance.code}, through the running daemon: ${JSON.stringify({ modem: balance.modem, reply: balance.reply, balance: balance.balance, activeUntil: balance.activeUntil, state: balance.state })}`,
  );
  if (balance.balance === null) return false;

  const before = receiver.received.length;
  const transferArgs = [
    'test-transfer',
    '-c',
    o.configFile,
    '--order',
    '--from',
    o.sender,
    '--amount',
    '10000',
    '--yes',
    '--timeout',
    '30',
    '--poll-interval',
    '200',
  ];
  out(`demo: $ pulsa-bridge ${transferArgs.slice(0, 1).concat(transferArgs.slice(3)).join(' ')}`);
  const t = await command(transferArgs);
  for (const line of t.out.trimEnd().split('\n')) out(`demo:   ${line}`);
  if (t.err.trim()) out(`demo:   (stderr) ${t.err.trim()}`);
  const ended = /^result: order (\S+) ended (\S+)/m.exec(t.out);
  const viaDaemon = t.out.includes('via the running daemon');
  const trx = ended?.[1];
  const status = ended?.[2];
  const confirmations = receiver.received.slice(before).filter((s) => trx !== undefined && s.approved === trx);
  out(
    `demo: order ${trx ?? '?'} ended ${status ?? '?'} (${viaDaemon ? 'through the running daemon' : 'NOT through the daemon'}); ` +
      `the confirmation reached the webhook ${confirmations.length} time(s)${confirmations[0] ? `: ${confirmations[0].sender}: ${confirmations[0].message}` : ''}`,
  );
  return t.code === 0 && viaDaemon && status === 'approved' && confirmations.length === 1;
}
