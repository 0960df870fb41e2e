/**
 * ModemOps when no daemon holds the modem: the CLI has opened the port itself (src/cli/session.ts, built on the modem
 * factory) and hands the open modem and channel here; each call talks to the modem directly, with the same actions
 * (actions.ts) the daemon's dispatcher runs on its scheduler, so output, `--json` and exit codes match the daemon path.
 *
 * Contract
 * - The modem is initialised (PDU mode, storage, SIM) once, before the first call that needs it; `at` sends the line
 *   as typed, without init, as a terminal would.
 * - Errors are the modem layer's own (BridgeError / AtCommandError): the CLI prints them the same way on both paths.
 * - `close()` cancels an open USSD session (best effort) and then runs the opener's close (the port is released).
 * - Events: URCs only (there is no spool or forwarder on this path).
 */
import type { AtChannel } from '../at/types.js';
import { AtCommandError, BridgeError } from '../errors.js';
import type { Modem } from '../modem/modem.js';
import { ussdStatusLabel } from '../modem/ussd-session.js';
import { deleteSlot, encodeForSend, listSlots, modemInfo, readSlot } from './actions.js';
import type { AtOutcome, ModemOps, StoredSmsView, UssdOutcome } from './ops.js';
import type { EventMessage } from './protocol.js';

export interface DirectTarget {
  modem: Modem;
  channel: AtChannel;
  /** Releases the port (and the virtual modem behind --simulate). */
  close(): Promise<void>;
}

export class DirectOps implements ModemOps {
  readonly path = 'direct' as const;
  private initialised: Promise<unknown> | undefined;
  private ussdOpenNow = false;

  constructor(
    private readonly target: DirectTarget,
    /** The modem's config name, or the port path when none. */
    readonly name: string,
  ) {}

  private ready(): Promise<unknown> {
    this.initialised ??= this.target.modem.init();
    return this.initialised;
  }

  async info(): Promise<Record<string, unknown>> {
    await this.ready();
    return modemInfo(this.target.modem);
  }

  async at(command: string, o: { force?: boolean; timeoutMs?: number; body?: string; cancelPrompt?: boolean } = {}): Promise<AtOutcome> {
    const urcs: string[] = [];
    const onUrc = (u: { lines: string[] }) => urcs.push(...u.lines);
    this.target.channel.on('urc', onUrc);
    const runOptions = o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {};
    try {
      const r = o.body !== undefined ? await this.target.channel.runWithPrompt(command, o.body, runOptions) : await this.target.channel.run(command, runOptions);
      return { command, lines: [...r.lines], final: r.final, ok: true, urcs };
    } catch (err) {
      if (err instanceof AtCommandError && err.final !== undefined) {
        return { command, lines: [...err.lines], final: err.final, ok: false, error: err.message, urcs };
      }
      throw err;
    } finally {
      this.target.channel.off('urc', onUrc);
    }
  }

  async ussdOpen(code: string, o: { timeoutMs?: number } = {}): Promise<UssdOutcome> {
    await this.ready();
    const r = await this.target.modem.ussd(code, o);
    this.ussdOpenNow = r.status === 1;
    return { status: r.status, statusText: ussdStatusLabel(r.status), text: r.text, ...(r.dcs !== undefined ? { dcs: r.dcs } : {}), raw: r.raw };
  }

  async ussdReply(text: string, o: { timeoutMs?: number } = {}): Promise<UssdOutcome> {
    if (!this.ussdOpenNow) throw new BridgeError('AT_ERROR', 'no USSD session is open', { hint: 'open one first: pulsa-bridge ussd CODE' });
    const r = await this.target.modem.ussdReply(text, o);
    this.ussdOpenNow = r.status === 1;
    return { status: r.status, statusText: ussdStatusLabel(r.status), text: r.text, ...(r.dcs !== undefined ? { dcs: r.dcs } : {}), raw: r.raw };
  }

  async ussdCancel(): Promise<void> {
    if (!this.ussdOpenNow) return;
    this.ussdOpenNow = false;
    await this.target.modem.ussdCancel();
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
