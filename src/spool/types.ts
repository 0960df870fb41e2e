/**
 * The spool's record format. A record proves its own completeness: version + sha256 checksum over its canonical JSON.
 * Areas (directories): pending -> sent | dead; ignored (filtered-out, for audit); quarantine (undecodable, unreadable);
 * parts (multipart fragments waiting for their siblings).
 */

export const SPOOL_RECORD_VERSION = 1;

/**
 * The spool's dedupe memory, in days: a record that proves an SMS was received (sent, ignored, a joined part's
 * tombstone) is kept at least this long, whatever the retention settings, so the same SMS read again is recognised
 * for as long as it can still come back: left on the SIM while its delete keeps failing (sweeps retry it), or
 * redelivered by the SMS centre until its validity period ends (operators use hours to a few days; 7 is above that).
 */
export const DEDUPE_MIN_DAYS = 7;

export type SpoolArea = 'pending' | 'sent' | 'dead' | 'ignored' | 'quarantine' | 'parts';

export interface SimIdentity {
  /** Stable modem name from config (e.g. 'telkomsel-1'). */
  modem: string;
  imsi?: string;
  iccid?: string;
  imei?: string;
}

export interface MultipartFacts {
  reference: number;
  referenceBits: 8 | 16;
  total: number;
  /** Sequence numbers present (1-based). */
  received: number[];
  /** false when joined after the timeout with gaps. */
  complete: boolean;
}

export interface SmsRecord {
  v: typeof SPOOL_RECORD_VERSION;
  kind: 'sms';
  /** Derived from the SMS itself: SIM identity + originator + scTimestamp + content. */
  id: string;
  sim: SimIdentity;
  sender: string;
  text: string;
  /** ISO 8601 with the PDU's zone. */
  scTimestamp: string;
  /** ISO 8601 UTC, when the bridge read it. */
  receivedAt: string;
  pdus: string[];
  multipart?: MultipartFacts;
  /**
   * How many reads of the SIM index gave the same PDU before this record was written: 2 (AT+CMGR / sweep), 1 for a
   * +CMT (direct delivery has nothing to read again); for a joined multipart message the smallest over its parts.
   * Absent in records written before this field existed.
   */
  readsAgreed?: number;
  /** Octets that followed the user data its UDL declares (hex; for a multipart message, per part, comma-separated). */
  extraOctets?: string;
  /** Delivery bookkeeping. */
  attempts: number;
  /**
   * ISO UTC, when an operator last queued it again (`queue retry`, `queue retry --dead`); absent = never. The forwarder's
   * maxAge is measured from here when set, so a requeued old record gets a full new window.
   */
  requeuedAt?: string;
  /** ISO; absent = due now. */
  nextAttemptAt?: string;
  lastError?: string;
  /** HTTP status of the last attempt, when one came back. */
  lastStatus?: number;
  deliveredAt?: string;
  deadReason?: string;
  /** For ignored records: why (e.g. 'sender not accepted'). */
  ignoredReason?: string;
  /**
   * Spool revision, +1 on every rewrite or move (set by the spool, absent in old files = 0). After a crash between
   * the two halves of a move the same id is in two areas; the higher revision is the later state.
   */
  rev?: number;
}

/** A multipart fragment kept until its siblings arrive (area 'parts'). */
export interface PartRecord {
  v: typeof SPOOL_RECORD_VERSION;
  kind: 'part';
  /** Key of the message it belongs to: sim + originator + reference + total + referenceBits. */
  groupKey: string;
  id: string;
  sim: SimIdentity;
  sender: string;
  sequence: number;
  total: number;
  reference: number;
  referenceBits: 8 | 16;
  text: string;
  scTimestamp: string;
  receivedAt: string;
  pdu: string;
  /** TP-DCS alphabet of the part (absent in records from before the field): parts of one message share it. */
  encoding?: 'gsm7' | '8bit' | 'ucs2';
  /** As SmsRecord.readsAgreed, for this part. */
  readsAgreed?: number;
  /** As SmsRecord.extraOctets, for this part. */
  extraOctets?: string;
  /**
   * Set on a tombstone: the part was joined into the SMS record with this id. Tombstones let a retransmitted part
   * that arrives after its message was joined be recognised (and not forwarded again as a bogus incomplete message);
   * they are pruned after twice the multipart timeout.
   */
  consumedBy?: string;
  consumedAt?: string;
}

/** A PDU that could not be decoded, or a record file that could not be read. */
export interface QuarantineRecord {
  v: typeof SPOOL_RECORD_VERSION;
  kind: 'quarantine';
  id: string;
  modem: string;
  /** SIM index it was read from, when known. */
  index?: number;
  /** The raw material: PDU hex or the bytes of an unreadable record file (as text). */
  raw: string;
  reason: string;
  receivedAt: string;
  /** Original file name, for an unreadable record moved here at start-up. */
  originalFile?: string;
}

export type AnyRecord = SmsRecord | PartRecord | QuarantineRecord;
