/**
 * Which SMS-DELIVERs are not forwarded because 3GPP TS 23.040 / 23.038 say they are not for a person, and why. PURE.
 * 'discard': acknowledged and dropped without a record (Short Message Type 0). 'archive': kept in the spool's ignored
 * area with the reason, never forwarded (data for the ME or the (U)SIM; a message waiting indication of the
 * "Discard Message" group 1100). Everything else (undefined) goes the normal way: sender filter, spool, webhook.
 */
import { protocolId } from './protocol-id.js';
import type { DecodedSms } from './types.js';

export interface Disposal {
  action: 'discard' | 'archive';
  /** Names the TP-PID or DCS value: the record's ignoredReason and the log line. */
  reason: string;
}

export function disposalOf(sms: Pick<DecodedSms, 'protocolId' | 'waiting'>): Disposal | undefined {
  const pid = protocolId(sms.protocolId);
  const named = `${pid.name} (TP-PID 0x${hex(sms.protocolId)})`;
  if (pid.action === 'discard') return { action: 'discard', reason: named };
  if (pid.action === 'archive') return { action: 'archive', reason: `${named}, meant for the modem or SIM` };
  const w = sms.waiting;
  if (w !== undefined && !w.store) {
    const state = w.active ? 'waiting' : 'cleared';
    return { action: 'archive', reason: `message waiting indication, discard group (${w.kind} ${state})` };
  }
  return undefined;
}

function hex(n: number): string {
  return n.toString(16).padStart(2, '0').toUpperCase();
}
