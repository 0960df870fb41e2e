/**
 * Stable identities derived from an SMS itself (CONVENTIONS: SIM + originator + service-centre timestamp + content),
 * so the same SMS read twice (after a crash, or a modem that reports it twice) gets the same record id and the same
 * webhook Idempotency-Key.
 *
 * Invariants (PURE; node:crypto only): ids are 'sms-' / 'part-' + 32 lower-case hex characters (128 bits of sha256),
 * safe as file names. Components are hashed as a JSON array, so ('ab','c') and ('a','bc') never collide.
 * For a joined multipart message pass the scTimestamp of its first part.
 */
import { createHash } from 'node:crypto';

function digest(components: ReadonlyArray<string | number>): string {
  return createHash('sha256').update(JSON.stringify(components), 'utf8').digest('hex').slice(0, 32);
}

export function smsRecordId(simKey: string, originator: string, scTimestamp: string, text: string): string {
  return `sms-${digest(['sms', simKey, originator, scTimestamp, text])}`;
}

/**
 * Id of a part record. `variant` tells apart parts of one group key and sequence that belong to different messages
 * (modem, service-centre time, text); without it the id is the one older versions gave.
 */
export function partRecordId(groupKey: string, sequence: number, variant?: string): string {
  return `part-${digest(variant === undefined ? ['part', groupKey, sequence] : ['part', groupKey, sequence, variant])}`;
}
