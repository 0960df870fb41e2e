/**
 * TP-Protocol-Identifier of 3GPP TS 23.040 §9.2.3.9, and what the bridge does with an SMS-DELIVER carrying it. PURE.
 * Every value of the octet maps to one action: 'forward' (text for a person: forwarded like any SMS, telematic
 * interworking and replace types included), 'discard' (Short Message Type 0: acknowledged, contents never stored or
 * forwarded, as §9.2.3.9 requires), or 'archive' (data for the ME or the (U)SIM that only they can act on: kept in the
 * spool's ignored area, not forwarded, released from the modem). Reserved values are forwarded as a plain SMS.
 */

export type PidAction = 'forward' | 'discard' | 'archive';

export interface ProtocolId {
  action: PidAction;
  /** The specification's name of the value, e.g. 'Replace Short Message Type 3'. */
  name: string;
  /** 1-7 for Replace Short Message Type n, 'return call' for the Return Call Message (replaced like them). */
  replace?: number | 'return call';
}

/** §9.2.3.9 bits 4-0 with bit 5 set (telematic interworking). */
const TELEMATIC: Readonly<Record<number, string>> = {
  0x00: 'implicit (device type specific to this SC)',
  0x01: 'telex',
  0x02: 'group 3 telefax',
  0x03: 'group 4 telefax',
  0x04: 'voice telephone (conversion to speech)',
  0x05: 'ERMES',
  0x06: 'national paging system',
  0x07: 'Videotex',
  0x08: 'teletex, carrier unspecified',
  0x09: 'teletex, in PSPDN',
  0x0a: 'teletex, in CSPDN',
  0x0b: 'teletex, in analog PSTN',
  0x0c: 'teletex, in digital ISDN',
  0x0d: 'UCI',
  0x10: 'a message handling facility',
  0x11: 'X.400 message handling system',
  0x12: 'Internet Electronic Mail',
  0x1f: 'a GSM/UMTS mobile station',
};

function telematicName(device: number): string {
  const known = TELEMATIC[device];
  if (known !== undefined) return `telematic interworking: ${known}`;
  if (device >= 0x18) return 'telematic interworking: a device type specific to this SC';
  return 'telematic interworking: reserved device type';
}

/** The meaning of a TP-PID octet and the bridge's action for it. */
export function protocolId(pid: number): ProtocolId {
  const top = pid >> 6;
  const low = pid & 0x3f;
  if (top === 0) {
    if (pid & 0x20) return { action: 'forward', name: telematicName(pid & 0x1f) };
    return { action: 'forward', name: pid === 0 ? 'plain SME-to-SME' : `SME-to-SME protocol ${pid & 0x1f}` };
  }
  if (top === 2) return { action: 'forward', name: 'reserved (bits 7-6 = 10)' };
  if (top === 3) return { action: 'forward', name: 'SC specific use' };
  if (low === 0x00) return { action: 'discard', name: 'Short Message Type 0' };
  if (low <= 0x07) return { action: 'forward', name: `Replace Short Message Type ${low}`, replace: low };
  if (low === 0x08) return { action: 'archive', name: 'Device Triggering Short Message' };
  if (low === 0x1e) return { action: 'forward', name: 'Enhanced Message Service (obsolete)' };
  if (low === 0x1f) return { action: 'forward', name: 'Return Call Message', replace: 'return call' };
  if (low === 0x3c) return { action: 'archive', name: 'ANSI-136 R-DATA' };
  if (low === 0x3d) return { action: 'archive', name: 'ME Data download' };
  if (low === 0x3e) return { action: 'archive', name: 'ME De-personalization Short Message' };
  if (low === 0x3f) return { action: 'archive', name: '(U)SIM Data download' };
  return { action: 'forward', name: 'reserved (bits 7-6 = 01)' };
}
