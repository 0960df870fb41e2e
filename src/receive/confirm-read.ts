/**
 * The confirming read of a stored SMS (a PDU has no checksum): AT+CMGR again until two reads give the same PDU,
 * MAX_READS at most. 'agreed' carries the last read, made just now, so it is also the re-check before the caller's
 * AT+CMGD in the same scheduler task; 'gone' when a re-read finds the slot empty; 'disagree' with every read.
 */
import type { Logger } from '../log.js';
import type { StoredPdu } from '../sms/types.js';

/** Two reads of a slot agree: the same length and PDU (hex, either case). */
export const samePdu = (a: StoredPdu, b: StoredPdu): boolean =>
  a.length === b.length && a.pdu.trim().toUpperCase() === b.pdu.trim().toUpperCase();

/** Reads of one SIM index at most while waiting for two that agree. */
export const MAX_READS = 4;

export type ConfirmedRead =
  { kind: 'agreed'; stored: StoredPdu; reads: number } | { kind: 'gone' } | { kind: 'disagree'; reads: StoredPdu[] };

/** `first`: the read already made (its index is set). */
export async function confirmRead(
  modem: { readSms(index: number): Promise<StoredPdu | undefined> },
  first: StoredPdu,
  log: Logger,
): Promise<ConfirmedRead> {
  const index = first.index!;
  const reads = [first];
  while (reads.length < MAX_READS) {
    const again = await modem.readSms(index);
    if (!again) return { kind: 'gone' };
    if (reads.some((r) => samePdu(r, again))) {
      if (reads.length > 1)
        log.warn(
          { index, reads: reads.length + 1 },
          `SMS at index ${index}: reads disagreed (noisy line?); ${reads.length + 1} reads, two agree`,
        );
      return { kind: 'agreed', stored: { ...again, index, stat: again.stat ?? first.stat }, reads: reads.length + 1 };
    }
    reads.push(again);
  }
  return { kind: 'disagree', reads };
}
