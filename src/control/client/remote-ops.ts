/**
 * ModemOps through the running daemon: each call is one request on the control socket (protocol.ts), answered by
 * the daemon's dispatcher on the modem's scheduler. Errors the daemon answers with are RemoteErrors; the CLI turns
 * them into the same one-line error + hint and exit codes as the direct path.
 * The client is shared by the commands of one CLI invocation and closed by `close()`: closing it releases what this
 * client held in the daemon (its USSD session is cancelled there).
 */
import type { BalanceResult } from '../../balance/watch.js';
import type { ControlClient } from './client.js';
import type { AtOutcome, ModemOps, StoredSmsView, UssdOutcome } from '../../ops/modem-ops.js';
import type { EventMessage } from '../protocol.js';

export class RemoteOps implements ModemOps {
  readonly path = 'daemon' as const;
  private ussdOpenNow = false;

  constructor(
    private readonly client: ControlClient,
    readonly name: string,
  ) {}

  info(): Promise<Record<string, unknown>> {
    return this.client.request({ op: 'info', modem: this.name });
  }

  at(
    command: string,
    o: { force?: boolean; timeoutMs?: number; body?: string; cancelPrompt?: boolean } = {},
  ): Promise<AtOutcome> {
    const wait = (o.timeoutMs ?? 10_000) + 60_000; // the command may wait its turn behind a receive task
    return this.client.request(
      {
        op: 'at',
        modem: this.name,
        command,
        ...(o.force ? { force: true } : {}),
        ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
        ...(o.body !== undefined ? { body: o.body } : {}),
        ...(o.cancelPrompt ? { cancelPrompt: true } : {}),
      },
      wait,
    );
  }

  async ussdOpen(code: string, o: { timeoutMs?: number } = {}): Promise<UssdOutcome> {
    const r = await this.client.request<UssdOutcome>(
      { op: 'ussd.open', modem: this.name, code, ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}) },
      (o.timeoutMs ?? 30_000) + 60_000,
    );
    this.ussdOpenNow = r.status === 1;
    return r;
  }

  async ussdReply(text: string, o: { timeoutMs?: number } = {}): Promise<UssdOutcome> {
    const r = await this.client.request<UssdOutcome>(
      { op: 'ussd.reply', modem: this.name, text, ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}) },
      (o.timeoutMs ?? 30_000) + 60_000,
    );
    this.ussdOpenNow = r.status === 1;
    return r;
  }

  async ussdCancel(): Promise<void> {
    if (!this.ussdOpenNow) return;
    this.ussdOpenNow = false;
    await this.client.request({ op: 'ussd.cancel', modem: this.name });
  }

  /** A balance check by the daemon (kept in its status): the modem's configured check, or this code and replies. */
  balance(code?: string, replies?: readonly string[]): Promise<BalanceResult> {
    const wait = (1 + (replies?.length ?? 0)) * 30_000 + 60_000; // each USSD step may wait its turn and the network
    return this.client.request(
      {
        op: 'balance',
        modem: this.name,
        ...(code !== undefined ? { code } : {}),
        ...(replies !== undefined ? { replies: [...replies] } : {}),
      },
      wait,
    );
  }

  smsList(which: 'all' | 'unread' = 'all'): Promise<StoredSmsView[]> {
    return this.client.request({ op: 'sms.list', modem: this.name, which });
  }

  async smsRead(index: number): Promise<StoredSmsView | undefined> {
    const r = await this.client.request<StoredSmsView | null>({ op: 'sms.read', modem: this.name, index });
    return r ?? undefined;
  }

  smsDelete(index: number): Promise<{ deleted: boolean; summary?: string }> {
    return this.client.request({ op: 'sms.delete', modem: this.name, index });
  }

  smsSend(to: string, text: string): Promise<{ parts: number; references: number[] }> {
    return this.client.request({ op: 'sms.send', modem: this.name, to, text }, 300_000);
  }

  async onEvent(listener: (event: EventMessage) => void): Promise<() => void> {
    const off = this.client.onEvent((e) => {
      if (e.modem === undefined || e.modem === this.name) listener(e);
    });
    await this.client.request({ op: 'subscribe', modem: this.name, events: ['urc', 'sms', 'delivery', 'ussd'] });
    return off;
  }

  async close(): Promise<void> {
    await this.ussdCancel().catch(() => undefined); // best effort: the daemon cancels it anyway when we disconnect
    await this.client.close();
  }
}
