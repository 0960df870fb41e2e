/**
 * What `info` and `sms list|read|delete|send` do to one modem, written once for both paths (DirectOps and the
 * daemon's dispatcher), so an answer is the same whichever path produced it. deleteSlot reads first: an empty slot is
 * `{ deleted: false }`. encodeForSend refuses an unsendable destination or text (BridgeError PDU_INVALID) before
 * anything reaches the modem, with a fresh concatenation reference each call. Nothing here schedules, opens or closes:
 * the caller owns the modem and its turn on it.
 */
import { randomInt } from 'node:crypto';
import type { Modem } from '../modem/modem.js';
import { decodeDeliver } from '../sms/pdu.js';
import { disposalOf } from '../sms/disposal.js';
import { encodeSubmit, type SubmitPdu } from '../sms/submit.js';
import type { StoredPdu } from '../sms/types.js';
import type { StoredSmsView } from './modem-ops.js';

/** The part of a Modem these actions use. */
export type ActionModem = Pick<Modem, 'info' | 'listSms' | 'readSms' | 'deleteSms' | 'sendSms'>;

const STAT_TEXT = ['unread', 'read', 'unsent', 'sent'];

/** A stored PDU as the operator sees it: decoded, or the reason it is not. */
export function describeStored(p: StoredPdu): StoredSmsView {
  const d = decodeDeliver(p);
  const base: StoredSmsView = {
    index: p.index,
    status: p.stat === undefined ? '?' : (STAT_TEXT[p.stat] ?? String(p.stat)),
    pdu: p.pdu,
  };
  if (!d.ok) return { ...base, error: d.reason };
  const v: StoredSmsView = { ...base, sender: d.sms.originator, time: d.sms.scTimestamp, text: d.sms.text };
  if (d.sms.concat) v.part = `${d.sms.concat.sequence}/${d.sms.concat.total} ref ${d.sms.concat.reference}`;
  const disposal = disposalOf(d.sms);
  const what = disposal?.action === 'discard' ? 'discarded' : 'archived in ignored';
  if (disposal) v.notForwarded = `${disposal.reason}: ${what}`;
  return v;
}

/** The modem's own report (identity, SIM, signal, registration, operator, storage, SMSC), named by its config name. */
export async function modemInfo(modem: ActionModem): Promise<Record<string, unknown>> {
  return (await modem.info()) as unknown as Record<string, unknown>;
}

export async function listSlots(modem: ActionModem, which: 'all' | 'unread' = 'all'): Promise<StoredSmsView[]> {
  return (await modem.listSms(which)).map(describeStored);
}

/** undefined for an empty slot. */
export async function readSlot(modem: ActionModem, index: number): Promise<StoredSmsView | undefined> {
  const p = await modem.readSms(index);
  return p ? describeStored(p) : undefined;
}

export async function deleteSlot(modem: ActionModem, index: number): Promise<{ deleted: boolean }> {
  if ((await modem.readSms(index)) === undefined) return { deleted: false };
  await modem.deleteSms(index);
  return { deleted: true };
}

export function encodeForSend(to: string, text: string): SubmitPdu[] {
  return encodeSubmit(to, text, { reference: randomInt(0, 256) });
}
