/**
 * ModemOps when no daemon holds the modem: the CLI opened the port itself (cli/session.ts) and each call talks to the
 * modem directly with the same actions (./actions.ts) and USSD broker the daemon runs, so output, `--json` and exit
 * codes match the daemon path. The modem is initialised once, before the first call that needs it (`at` sends the line
 * as typed, without init); close() cancels an open USSD session, then releases the port. Events: URCs only.
 */
import { runRawAt } from '../at/raw.js';
import type { AtChannel } from '../at/types.js';
import { silentLogger, type Logger } from '../log.js';
import type { Modem } from '../modem/modem.js';
import { deleteSlot, encodeForSend, listSlots, modemInfo, readSlot } from './actions.js';
import type { AtOutcome, ModemOps, StoredSmsView, UssdOutcome } from './modem-ops.js';
import type { EventMessage } from '../control/protocol.js';
import { UssdBroker, type UssdOwner } from './ussd-broker.js';

export interface DirectTarget {
  modem: Modem;
  channel: AtChannel;
  /** Releases the port. */
  close(): Promise<void>;
}

export class DirectOps implements ModemOps {
  readonly path = 'direct' as const;
  private initialised: Promise<unknown> | undefined;
  private readonly sessions: UssdBroker;
  private readonly owner: UssdOwner = { id: 'cli', label: `pulsa-bridge CLI (pid ${process.pid})` };

  constructor(
    private readonly target: DirectTarget,
    /** The modem's config name, or the port path when none. */
    readonly name: string,
    logger: Logger = silentLogger(),
  ) {
    this.sessions = new UssdBroker({ modem: name, logger, run: (_label, fn) => fn(this.target.modem) });
  }

  private ready(): Promise<unknown> {
    this.initialised ??= this.target.modem.init();
    return this.initialised;
  }

  async info(): Promise<Record<string, unknown>> {
    await this.ready();
    return modemInfo(this.target.modem);
  }

  at(
    command: string,
    o: { force?: boolean; timeoutMs?: number; body?: string; cancelPrompt?: boolean } = {},
  ): Promise<AtOutcome> {
    return runRawAt(this.target.channel, command, {
      ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
      ...(o.body !== undefined ? { body: o.body } : {}),
      ...(o.cancelPrompt ? { cancelPrompt: true } : {}),
    });
  }

  async ussdOpen(code: string, o: { timeoutMs?: number } = {}): Promise<UssdOutcome> {
    await this.ready();
    return this.sessions.open(this.owner, code, o);
  }

  ussdReply(text: string, o: { timeoutMs?: number } = {}): Promise<UssdOutcome> {
    return this.sessions.reply(this.owner, text, o);
  }

  ussdCancel(): Promise<void> {
    return this.sessions.cancel(this.owner);
  }

  async smsList(which: 'all' | 'unread' = 'all'): Promise<StoredSmsView[]> {
    await this.ready();
    return listSlots(this.target.modem, which);
  }

  async smsRead(index: number): Promise<StoredSmsView | undefined> {
    await this.ready();
    return readSlot(this.target.modem, index);
  }

  async smsDelete(index: number): Promise<{ deleted: boolean }> {
    await this.ready();
    return deleteSlot(this.target.modem, index);
  }

  async smsSend(to: string, text: string): Promise<{ parts: number; references: number[] }> {
    const pdus = encodeForSend(to, text);
    await this.ready();
    const references = await this.target.modem.sendSms(to, pdus);
    return { parts: pdus.length, references };
  }

  onEvent(listener: (event: EventMessage) => void): Promise<() => void> {
    const onUrc = (u: { name: string; lines: string[]; data: Record<string, unknown> }) =>
      listener({ v: 1, event: 'urc', modem: this.name, data: { name: u.name, lines: u.lines, data: u.data } });
    this.target.channel.on('urc', onUrc);
    return Promise.resolve(() => void this.target.channel.off('urc', onUrc));
  }

  async close(): Promise<void> {
    try {
      await this.ussdCancel();
    } catch {
      // Best effort: the port closes next, which ends the session on the modem's side anyway.
    }
    await this.target.close();
  }
}
