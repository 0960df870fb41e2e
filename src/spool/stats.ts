/**
 * The spool's counts from its in-memory index (PURE): records per area, the age of the oldest pending one, and the
 * last delivery failure this process saw. What `status`, /healthz, the metrics and the page show of the spool.
 */
import { isoTimeMs, type SmsArea } from './codec.js';
import type { SpoolIndex } from './scan.js';

export interface SpoolStats {
  pending: number;
  oldestPendingAgeMs?: number;
  sent: number;
  dead: number;
  ignored: number;
  quarantine: number;
  parts: number;
  /** Last delivery failure seen by this process (markRetry / markDead). */
  lastError?: { id: string; error: string; at: string };
}

export function spoolStats(ix: SpoolIndex, nowMs: number, lastError: SpoolStats['lastError']): SpoolStats {
  const count = (a: SmsArea) => [...ix.sms.values()].filter((x) => x === a).length;
  let oldest: number | undefined;
  for (const r of ix.pending.values()) {
    const t = isoTimeMs(r.receivedAt);
    if (t !== undefined && (oldest === undefined || t < oldest)) oldest = t;
  }
  const s: SpoolStats = {
    pending: ix.pending.size,
    sent: count('sent'),
    dead: count('dead'),
    ignored: count('ignored'),
    quarantine: ix.quarantine.size,
    parts: ix.parts.size,
  };
  if (oldest !== undefined) s.oldestPendingAgeMs = Math.max(0, nowMs - oldest);
  if (lastError) s.lastError = { ...lastError };
  return s;
}
