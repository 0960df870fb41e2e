/**
 * What the receive path needs of a modem and of the spool (src/modem/modem.ts and src/spool/store.ts satisfy them),
 * and the receive counters.
 */
import type { EventEmitter } from 'node:events';
import type { StorageFill } from '../modem/modem.js';
import type { StoredPdu } from '../sms/types.js';
import type { PartRecord, QuarantineRecord, SmsRecord, SpoolArea } from '../spool/types.js';

export interface ReceiveModem extends EventEmitter {
  listSms(which?: 'all' | 'unread'): Promise<StoredPdu[]>;
  readSms(index: number): Promise<StoredPdu | undefined>;
  deleteSms(index: number): Promise<void>;
  acknowledgeDirect(): Promise<void>;
  /** The memory init chose (indications without a memory name mean it); absent: one memory only. */
  readonly homeStorage?: string | undefined;
  /** Runs `work` with `storage` as the read/delete memory (src/modem/modem.ts inStorage). */
  inStorage?<T>(storage: string, work: (fill: { used: number; total: number } | undefined) => Promise<T>): Promise<T>;
  /** Memories to sweep, the chosen one first. */
  receiveStorages?(): string[];
  /** Each memory's fill as last seen. */
  storageFills?(): StorageFill[];
}

export interface ReceiveSpool {
  putPending(rec: SmsRecord): Promise<{ created: boolean; area: SpoolArea }>;
  putIgnored(rec: SmsRecord): Promise<{ created: boolean; area?: SpoolArea }>;
  putQuarantine(rec: QuarantineRecord): Promise<{ created: boolean; area?: SpoolArea }>;
  putPart(rec: PartRecord): Promise<{ created: boolean; area?: SpoolArea }>;
  listParts(): Promise<PartRecord[]>;
  deleteParts(ids: string[]): Promise<void>;
}

/** The counters a piece of receive work moves (the receiver adds them to its stats). */
export interface ReceiveCounts {
  /** Slots read and taken on (not empty). */
  received: number;
  /** Records written to the spool as pending (accepted senders). */
  spooled: number;
  ignored: number;
  quarantined: number;
  duplicates: number;
}

export const noCounts = (): ReceiveCounts => ({ received: 0, spooled: 0, ignored: 0, quarantined: 0, duplicates: 0 });

/** Adds `delta` to `into` (both hold the five counters). */
export function addCounts(into: ReceiveCounts, delta: Partial<ReceiveCounts>): void {
  for (const k of ['received', 'spooled', 'ignored', 'quarantined', 'duplicates'] as const) into[k] += delta[k] ?? 0;
}

/** What handling one SMS wrote to the spool, or why it wrote nothing. */
export type HandledAs =
  | { spooled: 'pending' | 'ignored' | 'quarantine'; id: string; created: boolean }
  | { spooled: 'part'; part: string; created: boolean }
  | { spooled: 'none'; reason: string };

/** One spool write (or a decision to write nothing): what it was and the counters it moves. */
export interface Written {
  handled: HandledAs;
  counts: Partial<ReceiveCounts>;
}
