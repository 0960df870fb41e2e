/**
 * Values produced by the pure SMS layer.
 */

export type SmsEncoding = 'gsm7' | '8bit' | 'ucs2';

/** Concatenation facts from the UDH (IEI 0x00 = 8-bit reference, 0x08 = 16-bit reference). */
export interface ConcatInfo {
  reference: number;
  referenceBits: 8 | 16;
  total: number;
  sequence: number; // 1-based
}

/** One decoded SMS-DELIVER PDU. */
export interface DecodedSms {
  /** Originator as sent: '+6281234...', '0812...', '858', 'TELKOMSEL'. */
  originator: string;
  originatorType: 'international' | 'national' | 'unknown' | 'alphanumeric' | 'other';
  /** Service-centre address, when present. */
  smsc: string | undefined;
  /** Service-centre timestamp in ISO 8601 with the PDU's own zone, e.g. '2024-01-08T10:15:00+07:00'. */
  scTimestamp: string;
  /** The same instant in epoch milliseconds. */
  scTimestampMs: number;
  encoding: SmsEncoding;
  /** Decoded text of this part (for 8-bit data: hex of the bytes). */
  text: string;
  concat: ConcatInfo | undefined;
  /** The raw PDU hex as read (upper case), SMSC included. */
  pdu: string;
  /** TP-PID octet (TS 23.040 §9.2.3.9; src/sms/protocol-id.ts says what it means). */
  protocolId: number;
  /** TP-DCS octet (TS 23.038 §4). */
  dataCoding: number;
  /** Message class from the DCS (0 flash ... 3 TE-specific), when it gives one. */
  messageClass?: 0 | 1 | 2 | 3;
  /**
   * Message waiting indication from DCS groups 1100-1110 (store false: group 1100, "Discard Message"), else from a
   * Special SMS Message Indication in the UDH (IEI 0x01; store false: bit 7 of its first octet clear).
   */
  waiting?: { kind: 'voicemail' | 'fax' | 'email' | 'other'; active: boolean; store: boolean };
  /** Octets after the user data its UDL declares (hex, upper case), left out of the text; absent when none. */
  extraOctets?: string;
}

/** A PDU as the modem listed/read it (+CMGL / +CMGR / +CMT). */
export interface StoredPdu {
  /** Storage index; undefined for +CMT direct delivery. */
  index: number | undefined;
  /** <stat>: 0 REC UNREAD, 1 REC READ, 2 STO UNSENT, 3 STO SENT. */
  stat: number | undefined;
  /** <length>: TPDU length in octets as the modem reported it (SMSC excluded). */
  length: number;
  pdu: string;
}
