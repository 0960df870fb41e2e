/**
 * What an operator command needs of one modem, whichever way it reaches it: through the running daemon's control
 * socket (RemoteOps, src/control/client/remote-ops.ts) or by opening the port itself when no daemon holds it (DirectOps,
 * src/cli/). Commands (`info`, `at`, `ussd`, `sms ...`, `balance`, `test-transfer`) are written against this
 * interface only, so their output, `--json` and exit codes are the same on both paths (`--verbose` says which).
 * Types only: no behaviour here.
 */
import type { RawAtOutcome } from '../at/raw.js';
import type { EventMessage } from '../control/protocol.js';

export type OpsPath = 'daemon' | 'direct';

/** A raw AT line's outcome: defined beside the code that produces it (src/at/raw.ts), the same on both paths. */
export type AtOutcome = RawAtOutcome;

export interface UssdOutcome {
  /** 0 done, 1 more input expected, 2 ended by the network, 3 answered by another client, 4 not supported, 5 timed out. */
  status: number;
  statusText: string;
  /** Decoded text; for a reply in an unknown encoding, the raw payload. */
  text: string;
  /** True when `text` is the raw payload because no encoding was recognised (shown with its DCS). */
  undecoded?: boolean;
  dcs?: number;
  /** ISO 639 language the reply named at its start (DCS 0x10, 0x11), taken off `text`. */
  language?: string;
  /** The +CUSD line(s) as the modem sent them. */
  raw: string;
  /** The release notice line that came before this reply (the reply followed it). */
  releaseNotice?: string;
  /** Status 2 and only a release notice: the network ended the session without a reply. */
  noReply?: boolean;
}

export interface StoredSmsView {
  index: number | undefined;
  status: string;
  sender?: string;
  time?: string;
  text?: string;
  part?: string;
  /** Why the receive path will not forward it (TP-PID or DCS: src/sms/disposal.ts), and what it does instead. */
  notForwarded?: string;
  error?: string;
  pdu: string;
}

export interface ModemOps {
  /** The modem's config name, or the port path when none. */
  readonly name: string;
  readonly path: OpsPath;
  info(): Promise<Record<string, unknown>>;
  at(
    command: string,
    options?: { force?: boolean; timeoutMs?: number; body?: string; cancelPrompt?: boolean },
  ): Promise<AtOutcome>;
  ussdOpen(code: string, options?: { timeoutMs?: number }): Promise<UssdOutcome>;
  ussdReply(text: string, options?: { timeoutMs?: number }): Promise<UssdOutcome>;
  /** Ends the session if one is open (AT+CUSD=2); a no-op otherwise. */
  ussdCancel(): Promise<void>;
  smsList(which?: 'all' | 'unread'): Promise<StoredSmsView[]>;
  /** undefined for an empty slot. */
  smsRead(index: number): Promise<StoredSmsView | undefined>;
  /**
   * `deleted: false` for a slot that was already empty. Through the daemon the SMS is handled (spooled, archived or
   * quarantined) before it is deleted, and `summary` says what was done.
   */
  smsDelete(index: number): Promise<{ deleted: boolean; summary?: string }>;
  smsSend(to: string, text: string): Promise<{ parts: number; references: number[] }>;
  /**
   * Events (URCs, SMS spooled, delivery results, USSD replies) of this modem; the direct path emits URCs only.
   * Resolves once the subscription is in place (no event after that is missed) with an unsubscribe function.
   */
  onEvent(listener: (event: EventMessage) => void): Promise<() => void>;
  /** Releases everything held (an open USSD session is cancelled first). */
  close(): Promise<void>;
}

/** What a test transfer uses of a modem (src/transfer/): the daemon's canaries give it this much and no more. */
export type TransferOps = Pick<
  ModemOps,
  'name' | 'path' | 'ussdOpen' | 'ussdReply' | 'ussdCancel' | 'smsSend' | 'smsList' | 'onEvent' | 'close'
>;
