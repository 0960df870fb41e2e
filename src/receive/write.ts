/**
 * The receive path's spool writes of a whole message and of a quarantine record. Each resolves once the record is
 * durable (the spool's promise) and returns what it wrote and the counters that moves; nothing here sends a command.
 */
import { createHash } from 'node:crypto';
import type { Logger } from '../log.js';
import type { StoredPdu } from '../sms/types.js';
import { SPOOL_RECORD_VERSION, type QuarantineRecord, type SmsRecord } from '../spool/types.js';
import type { ReceiveSpool, Written } from './types.js';

/** A message: pending when its sender is accepted, else archived in ignored (policy archive). */
export async function writeMessage(
  spool: Pick<ReceiveSpool, 'putPending' | 'putIgnored'>,
  log: Logger,
  rec: SmsRecord,
  accepted: boolean,
): Promise<Written> {
  if (accepted) {
    const r = await spool.putPending(rec);
    if (r.created)
      log.info(
        { id: rec.id, sender: rec.sender, chars: rec.text.length, parts: rec.multipart?.total },
        'SMS received and spooled',
      );
    else log.info({ id: rec.id, area: r.area }, 'SMS already in the spool (read twice): not spooled again');
    return {
      handled: { spooled: 'pending', id: rec.id, created: r.created },
      counts: r.created ? { spooled: 1 } : { duplicates: 1 },
    };
  }
  rec.ignoredReason = 'sender not accepted';
  const r = await spool.putIgnored(rec);
  log.info({ id: rec.id, sender: rec.sender }, 'SMS from a sender not accepted: archived (policy archive)');
  return { handled: { spooled: 'ignored', id: rec.id, created: r.created }, counts: r.created ? { ignored: 1 } : {} };
}

/** A message the specifications do not give to a person (data download, a discard-group indication): archived. */
export async function writeArchived(
  spool: Pick<ReceiveSpool, 'putIgnored'>,
  log: Logger,
  rec: SmsRecord,
  reason: string,
  fields: Record<string, unknown>,
): Promise<Written> {
  rec.ignoredReason = reason;
  const r = await spool.putIgnored(rec);
  log.info({ ...fields, id: rec.id }, `${reason}: archived (ignored area), not forwarded`);
  const counts = r.created ? { ignored: 1 } : { duplicates: 1 };
  return { handled: { spooled: 'ignored', id: rec.id, created: r.created }, counts };
}

/** A PDU kept raw with its modem and index (undecodable, or reads that never agreed); counted whether new or not. */
export async function writeQuarantine(
  spool: Pick<ReceiveSpool, 'putQuarantine'>,
  log: Logger,
  q: { modem: string; stored: StoredPdu; reason: string; raw?: string; what?: string; nowMs: number },
): Promise<Written> {
  const raw = q.raw ?? q.stored.pdu;
  const what = q.what ?? 'undecodable PDU';
  const id = 'q-' + createHash('sha256').update(`${q.modem}\n${raw}`).digest('hex').slice(0, 32);
  const rec: QuarantineRecord = {
    v: SPOOL_RECORD_VERSION,
    kind: 'quarantine',
    id,
    modem: q.modem,
    raw,
    reason: `${what}: ${q.reason}`,
    receivedAt: new Date(q.nowMs).toISOString(),
  };
  if (q.stored.index !== undefined) rec.index = q.stored.index;
  const r = await spool.putQuarantine(rec);
  log.error(
    { id, index: q.stored.index, reason: q.reason, pdu: raw.slice(0, 400) },
    `${what} quarantined: ${q.reason}`,
  );
  return { handled: { spooled: 'quarantine', id, created: r.created }, counts: { quarantined: 1 } };
}
