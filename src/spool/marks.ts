/**
 * What a delivery result does to a pending record (PURE: the record in, the record to write out): delivered, a retry
 * later, or dead. Each bumps `rev`, so a mark written twice is told from two marks. A retry mark whose exact result is
 * already on disk (a write that failed after its rename; `baseRev` is the rev attempted) is written again as it is,
 * never counted twice; any other disk state (an operator's `queue retry` in between) is marked from the disk.
 */
import type { SmsRecord } from './types.js';

export function markedDelivered(rec: SmsRecord, info: { status: number; at: Date }): SmsRecord {
  rec.attempts += 1;
  rec.lastStatus = info.status;
  rec.deliveredAt = info.at.toISOString();
  delete rec.nextAttemptAt;
  rec.rev = (rec.rev ?? 0) + 1;
  return rec;
}

export function markedRetry(
  rec: SmsRecord,
  info: { error: string; status?: number; nextAttemptAt: Date; baseRev?: number },
): { record: SmsRecord; again: boolean } {
  const nextAttemptAt = info.nextAttemptAt.toISOString();
  if (
    info.baseRev !== undefined &&
    (rec.rev ?? 0) === info.baseRev + 1 &&
    rec.lastError === info.error &&
    rec.nextAttemptAt === nextAttemptAt &&
    rec.lastStatus === info.status
  ) {
    return { record: rec, again: true };
  }
  rec.attempts += 1;
  rec.lastError = info.error;
  if (info.status !== undefined) rec.lastStatus = info.status;
  else delete rec.lastStatus;
  rec.nextAttemptAt = nextAttemptAt;
  rec.rev = (rec.rev ?? 0) + 1;
  return { record: rec, again: false };
}

export function markedDead(rec: SmsRecord, reason: string, status?: number): SmsRecord {
  rec.deadReason = reason;
  rec.lastError = reason;
  if (status !== undefined) {
    rec.attempts += 1;
    rec.lastStatus = status;
  }
  delete rec.nextAttemptAt;
  rec.rev = (rec.rev ?? 0) + 1;
  return rec;
}
