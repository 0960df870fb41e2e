/**
 * The operator's `sms delete N` through the running daemon: "handle it, then remove it from the SIM". The SMS in slot N
 * is handled by the receiver's own code, exactly as a receive task would handle it, and only then deleted, so an
 * operator cleaning a SIM during a burst never deletes an SMS the daemon has not spooled yet.
 *
 * Contract
 * - Runs inside ONE task on the modem's scheduler (the caller's operator task): nothing else talks to the modem between
 *   the confirming read and the AT+CMGD.
 * - Slot N is read, then read again until two reads agree (the receiver's confirmRead). A slot empty on the first read
 *   (or on a confirming read) is `{ deleted: false }`: nothing is sent to AT+CMGD.
 * - The confirmed PDU is decided by the receiver's decide(): spooled as pending (accepted sender), as a part (multipart:
 *   joined later as usual), archived in ignored (policy archive, and policy keep: the operator asked to delete it),
 *   quarantined (undecodable), or deleted without a record (policy delete, a status report). Reads that never agree are
 *   quarantined together, every version read.
 * - The spool write is awaited before AT+CMGD. A write that fails deletes nothing and rejects with a SpoolError naming
 *   why. A record already there (same id) is not written twice (created false) and the slot is deleted.
 * - A +CMTI for N still waiting in the receiver's queue is left there: its task later finds the slot empty (or a new
 *   SMS in it, handled as usual).
 * - A stored outgoing message (<stat> 2/3: a draft or a sent copy, which the receiver's sweeps leave alone) is deleted
 *   without a record once two reads agree: nobody sent it to us, so there is nothing to forward.
 * - A part that completes its message is joined after its slot is deleted (as the receiver does). If that join's write
 *   fails, the part records are durable and the receiver joins them at its multipart timeout: the delete is reported
 *   done with a `warning` saying so (the slot is gone; an error would be untrue).
 * - The result says what was done, in one line (`summary`) for the reply and the log.
 */
import { errorMessage, SpoolError } from '../errors.js';
import { decodeDeliver } from '../sms/pdu.js';
import type { DecodedSms, StoredPdu } from '../sms/types.js';
import { isOutgoing, type SlotAction } from './batch.js';
import type { ConfirmedRead } from './confirm-read.js';

/** What handling one SMS wrote to the spool, or why it wrote nothing. */
export type HandledAs =
  | { spooled: 'pending' | 'ignored' | 'quarantine'; id: string; created: boolean }
  | { spooled: 'part'; part: string; created: boolean }
  | { spooled: 'none'; reason: string };

export interface OperatorDeleteResult {
  /** false: the slot was empty (nothing deleted). */
  deleted: boolean;
  index: number;
  sender?: string;
  handled?: HandledAs;
  /** What was done, in words (the reply and the daemon's log line). */
  summary: string;
  /** Something that went wrong after the delete (the join of a completed multipart message); the caller logs it. */
  warning?: string;
}

/** What the operator delete needs of its receiver. */
export interface OperatorDeleteHost {
  readSms(index: number): Promise<StoredPdu | undefined>;
  confirmRead(first: StoredPdu): Promise<ConfirmedRead>;
  /** The receiver's decide() with the keep policy taken as archive; `report` hears what the write (or no write) did. */
  decide(stored: StoredPdu, report: (h: HandledAs) => void): Promise<SlotAction>;
  /** Quarantines reads that never agreed (every version); reports the record. */
  quarantineDisagreeing(first: StoredPdu, reads: StoredPdu[], report: (h: HandledAs) => void): Promise<void>;
  /** AT+CMGD of the slot (and forgets it in `kept`). */
  release(stored: StoredPdu): Promise<void>;
  /** Joins the family of a new part, after its slot was released. */
  assemble(part: DecodedSms): Promise<void>;
  counted(): void;
}

/** Reads slot `index`, handles it as the receiver would, and deletes it once its record is durable. */
export async function deleteHandled(index: number, h: OperatorDeleteHost): Promise<OperatorDeleteResult> {
  const empty: OperatorDeleteResult = { deleted: false, index, summary: `no SMS at index ${index} (the slot was already empty: nothing deleted)` };
  const first = await h.readSms(index);
  if (!first) return empty;
  h.counted();
  const slot = { ...first, index };
  let handled: HandledAs | undefined;
  const report = (what: HandledAs) => (handled = what);
  const confirmed = await h.confirmRead(slot);
  if (confirmed.kind === 'gone') return empty;
  const stored = confirmed.kind === 'agreed' ? confirmed.stored : slot;
  if (confirmed.kind === 'agreed' && isOutgoing(stored)) {
    await h.release(stored);
    const handledOut: HandledAs = { spooled: 'none', reason: `a stored outgoing message (stat ${stored.stat}), nothing to forward` };
    return { deleted: true, index, handled: handledOut, summary: summarize(index, undefined, handledOut) };
  }
  const action = confirmed.kind === 'agreed' ? await h.decide(stored, report) : undefined;
  if (action?.kind === 'keep') throw new Error(`SMS at index ${index}: kept by policy although the operator deletes it`); // decide() never keeps here
  let part: DecodedSms | void = undefined;
  try {
    if (confirmed.kind === 'disagree') await h.quarantineDisagreeing(slot, confirmed.reads, report);
    else if (action?.write) part = await action.write();
  } catch (err) {
    throw new SpoolError('io', `SMS at index ${index} not deleted: its spool write failed: ${errorMessage(err)}`, {
      cause: err,
      hint: 'the SMS stays on the SIM (the next sweep retries it); fix the spool (disk full? permissions?) and try again',
    });
  }
  await h.release(stored);
  let warning: string | undefined;
  if (part) {
    await h.assemble(part).catch((err: unknown) => {
      warning = `joining its multipart message failed (${errorMessage(err)}); the parts are on disk and the receiver joins them at its multipart timeout`;
    });
  }
  const sender = confirmed.kind === 'agreed' ? senderOf(stored) : undefined;
  const summary = summarize(index, sender, handled) + (warning ? `; ${warning}` : '');
  return { deleted: true, index, ...(sender === undefined ? {} : { sender }), ...(handled ? { handled } : {}), summary, ...(warning ? { warning } : {}) };
}

/** The originator (undefined for an undecodable PDU). */
function senderOf(stored: StoredPdu): string | undefined {
  const d = decodeDeliver(stored);
  return d.ok ? d.sms.originator : undefined;
}

export function summarize(index: number, sender: string | undefined, h: HandledAs | undefined): string {
  const from = sender === undefined ? '' : `from ${sender}, `;
  const what = (() => {
    if (!h) return 'not spooled';
    switch (h.spooled) {
      case 'pending':
        return h.created ? `spooled as pending ${h.id} first` : `already spooled: ${h.id}`;
      case 'ignored':
        return h.created ? `archived in ignored: ${h.id}` : `already archived in ignored: ${h.id}`;
      case 'quarantine':
        return h.created ? `quarantined: ${h.id}` : `already quarantined: ${h.id}`;
      case 'part':
        return h.created ? `spooled as part ${h.part} first` : `part ${h.part} already spooled`;
      case 'none':
        return `not spooled: ${h.reason}`;
    }
  })();
  return `deleted SMS at index ${index} (${from}${what})`;
}
