/**
 * The demo's second act (`npm run demo`): with the daemon running two virtual Telkomsel modems on its virtual network,
 * check the centre's balance over USSD on its scheduler, then a test transfer for an order: `POST /orders` at the
 * stand-in (sender_phone_number = the sending SIM), dial the code the order returned on the sending modem through the
 * daemon, let the centre modem receive the operator's confirmation (spooled and posted to the webhook by the daemon),
 * and poll `GET /orders/{trx_id}` until it leaves pending. Returns true when the order ended `approved` and the
 * confirmation reached the webhook exactly once. Demo only.
 */
import type { BalanceSettings } from '../config.js';
import type { Daemon } from '../daemon.js';
import type { ModemOps } from '../control/ops.js';
import { orderPaths, pick, ResellerClient } from '../reseller/client.js';
import { describeStep } from '../transfer/flows.js';
import { runTransfer } from '../transfer/runner.js';
import type { DemoReceiver } from './receiver.js';

export interface TransferDemoOptions {
  daemon: Daemon;
  receiver: DemoReceiver;
  centre: string;
  /** The centre's balance check (its config section). */
  centreBalance: BalanceSettings;
  sender: string;
  senderNumber: string;
  out: (line: string) => void;
}

/** The sending modem through the daemon: its USSD on the modem's scheduler (all the flow here needs). */
function ussdOnlyOps(daemon: Daemon, name: string): ModemOps {
  const ussd = daemon.ussdFor(name);
  const no = (what: string) => () => Promise.reject(new Error(`${what}: not used by the demo`));
  return {
    name,
    path: 'daemon',
    ussdOpen: (c, o) => ussd.ussdOpen(c, o).then((r) => ({ ...r, raw: '' })),
    ussdReply: (t, o) => ussd.ussdReply(t, o).then((r) => ({ ...r, raw: '' })),
    ussdCancel: () => ussd.ussdCancel(),
    info: no('info'), at: no('at'), smsList: no('sms list'), smsRead: no('sms read'), smsDelete: no('sms delete'), smsSend: no('sms send'),
    onEvent: async () => () => undefined,
    close: async () => undefined,
  };
}

export async function runTransferDemo(o: TransferDemoOptions): Promise<boolean> {
  const { daemon, receiver, out } = o;
  const balance = await daemon.balanceWatch!.checkNow(o.centre, o.centreBalance);
  out(`demo: balance of ${o.centre} over USSD ${balance.code}: ${JSON.stringify({ modem: balance.modem, code: balance.code, reply: balance.reply, balance: balance.balance, activeUntil: balance.activeUntil, state: balance.state })}`);
  if (balance.balance === null) return false;

  const client = new ResellerClient({ baseUrl: receiver.baseUrl, apiKey: receiver.apiKey, userAgent: 'pulsa-bridge-demo' });
  const created = await client.createOrder({ operator_id: 1, pulsa_amount: 10_000, payout_method: 'DANA', payout_account_number: '089900001111', payout_account_name: 'Demo', sender_phone_number: o.senderNumber });
  const paths = orderPaths();
  const trx = pick(created, paths.trxId);
  const code = pick(created, paths.ussdCode);
  if (!trx || !code) {
    out(`demo: the order response has no trx_id or code: ${JSON.stringify(created)}`);
    return false;
  }
  out(`demo: test-transfer --order: order ${trx} created (${pick(created, paths.status)}), dial ${code} on ${o.sender}, centre ${pick(created, paths.centerNumber)}`);
  const before = receiver.received.length;
  const report = await runTransfer({
    from: ussdOnlyOps(daemon, o.sender),
    steps: [{ kind: 'ussd', code, replies: ['1'] }],
    amount: 10_000,
    confirmTimeoutMs: 20_000,
    onStep: (s) => out(`demo:   ${s.step}. ${describeStep({ kind: 'ussd', code, replies: ['1'] }, o.sender)}: ${s.status} (${s.ms} ms): ${s.replies.join(' | ')}${s.error ? ` ${s.error}` : ''}`),
  });
  if (report.outcome !== 'sent') return false;
  const t0 = Date.now();
  let status = pick(created, paths.status);
  while (status === 'pending' && Date.now() - t0 < 20_000) {
    await new Promise((r) => setTimeout(r, 200));
    status = pick(await client.order(trx), paths.status);
  }
  const confirmations = receiver.received.slice(before).filter((s) => s.approved === trx);
  out(`demo: order ${trx} ended ${status} after ${Date.now() - t0} ms; the confirmation reached the webhook ${confirmations.length} time(s)${confirmations[0] ? `: ${confirmations[0].sender}: ${confirmations[0].message}` : ''}`);
  return status === 'approved' && confirmations.length === 1;
}
