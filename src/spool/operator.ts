/**
 * The spool's operator commands (retry, retryAllDead, drop) and the owner's prune. Each runs in the id's chain and
 * reads the disk first (an index may be stale). retry requeues a dead or pending record as due now, stamping
 * `requeuedAt`; drop removes a record from any area but sent, by id or an unambiguous prefix (>= MIN_ID_PREFIX).
 * After a change the live owner is told to rescan. prune never deletes records younger than DEDUPE_MIN_DAYS (the
 * dedupe memory).
 */
import { errorMessage, SpoolError } from '../errors.js';
import type { Logger } from '../log.js';
import { isoTimeMs, isSmsArea, parseRecordFile, type SmsArea } from './codec.js';
import type { RecordFiles } from './files.js';
import type { SpoolIndex } from './scan.js';
import { DEDUPE_MIN_DAYS, type AnyRecord, type QuarantineRecord, type SmsRecord, type SpoolArea } from './types.js';

const DAY_MS = 86_400_000;

/** The shortest id prefix resolveId takes (a whole id of any length always works): `s` must not drop a record. */
export const MIN_ID_PREFIX = 8;

/** What these commands use of the spool (built by Spool; see store.ts for each primitive). */
export interface SpoolPort {
  readonly files: RecordFiles;
  readonly logger: Logger;
  /** The current index (rescan() replaces it). */
  index(): SpoolIndex;
  now(): Date;
  withLock<T>(id: string, fn: () => Promise<T>, nested?: boolean): Promise<T>;
  locate(id: string): Promise<SmsArea | undefined>;
  readRecord(area: SpoolArea, id: string): Promise<AnyRecord>;
  moveSms(from: SmsArea, to: SmsArea, rec: SmsRecord): Promise<void>;
  notFound(id: string, expected: string): SpoolError;
  forget(area: SpoolArea, id: string): void;
  /** Emit 'pending' for id. */
  woke(id: string): void;
  notifyOwner(): Promise<void>;
  /** Owner: rewrite the sent index after sent records were removed (no-op for a client). */
  saveSentIndex(): Promise<void>;
}

/**
 * dead -> pending with attempts reset; for a pending record: make it due now; a record quarantined for its integrity
 * check: released (releaseQuarantined). A client then signals the owner. Returns where the record is now.
 */
export async function retry(s: SpoolPort, id: string): Promise<{ id: string; area: SmsArea }> {
  const done = (await retryOne(s, id)) ?? { id, area: 'pending' as const };
  await s.notifyOwner();
  return done;
}

function retryOne(s: SpoolPort, id: string): Promise<{ id: string; area: SmsArea } | undefined> {
  return s.withLock(id, async () => {
    const area = await s.locate(id);
    if (area === undefined && s.index().quarantine.has(id)) return releaseQuarantined(s, id);
    if (area !== 'dead' && area !== 'pending') throw s.notFound(id, 'dead or pending');
    const rec = (await s.readRecord(area, id)) as SmsRecord;
    rec.attempts = 0;
    rec.requeuedAt = s.now().toISOString(); // maxAge counts from here: the operator asked for another chance
    delete rec.nextAttemptAt;
    delete rec.deadReason;
    rec.rev = (rec.rev ?? 0) + 1;
    await s.moveSms(area, 'pending', rec);
    s.logger.info({ id, from: area }, `spool: record ${id} queued for delivery again`);
    s.woke(id);
    return undefined;
  });
}

/**
 * The operator vouches for a record quarantined because its integrity check failed (a spool moved without its key, a
 * record restored from a backup by hand): its original text must still be a whole SMS record (version, sha256, kind,
 * id); it is signed with this spool's key and put back where it was found, a dead one into pending (as retry does).
 * Anything else in quarantine (undecodable PDUs, corrupt files) cannot be released: SpoolError 'wrong-area'.
 */
async function releaseQuarantined(s: SpoolPort, qid: string): Promise<{ id: string; area: SmsArea }> {
  const q = (await s.readRecord('quarantine', qid)) as QuarantineRecord;
  const [from, name] = (q.originalFile ?? '').split('/');
  const refuse = (why: string) =>
    new SpoolError('wrong-area', `quarantined record ${qid} cannot be released: ${why}`, {
      hint: `pulsa-bridge queue show ${qid}`,
    });
  if (!q.reason.startsWith('unreadable record file: integrity check failed') || !from || !name || !isSmsArea(from)) {
    throw refuse(`only an SMS record quarantined for its integrity check can be (this one: ${q.reason})`);
  }
  const parsed = parseRecordFile(q.raw, from, name);
  if (!parsed.ok || parsed.record.kind !== 'sms') throw refuse(parsed.ok ? 'not an SMS record' : parsed.reason);
  const rec = parsed.record;
  const to: SmsArea = from === 'dead' ? 'pending' : from;
  await s.withLock(
    rec.id,
    async () => {
      const already = await s.locate(rec.id);
      if (already !== undefined) throw refuse(`record ${rec.id} is in ${already} already`);
      if (to === 'pending') {
        rec.attempts = 0;
        rec.requeuedAt = s.now().toISOString();
        delete rec.nextAttemptAt;
        delete rec.deadReason;
      }
      rec.rev = (rec.rev ?? 0) + 1;
      await s.moveSms(to, to, rec); // written afresh: signed with this spool's key
    },
    true,
  );
  await s.withLock(
    `q:${qid}`,
    async () => {
      await s.files.unlink('quarantine', qid, true);
      s.index().quarantine.delete(qid);
    },
    true,
  );
  s.logger.warn(
    { id: rec.id, quarantineId: qid, area: to },
    `spool: quarantined record ${qid} released by operator into ${to} as ${rec.id} (now signed with this spool's key)`,
  );
  if (to === 'pending') s.woke(rec.id);
  return { id: rec.id, area: to };
}

/** Every dead record back to pending; records another process moved meanwhile are skipped. Returns the count. */
export async function retryAllDead(s: SpoolPort): Promise<number> {
  let n = 0;
  try {
    for (const [id, area] of [...s.index().sms]) {
      if (area !== 'dead') continue;
      try {
        await retryOne(s, id);
        n += 1;
      } catch (err) {
        if (!(err instanceof SpoolError && (err.reason === 'not-found' || err.reason === 'wrong-area'))) throw err;
        s.logger.info({ id, err: err.message }, `spool: ${id} is no longer dead; skipped`);
      }
    }
  } finally {
    if (n > 0) await s.notifyOwner();
  }
  return n;
}

/**
 * The id an operator meant: itself when the spool knows it (in any area, parts included), else the one id that starts
 * with it. A prefix shorter than MIN_ID_PREFIX that starts some id, or several matches -> SpoolError 'invalid-id'
 * (the latter listing some); none -> the id as given (the caller reports it as not found).
 */
export function resolveId(s: SpoolPort, idOrPrefix: string): string {
  const ix = s.index();
  if (ix.sms.has(idOrPrefix) || ix.quarantine.has(idOrPrefix) || ix.parts.has(idOrPrefix)) return idOrPrefix;
  const all = [...ix.sms.keys(), ...ix.quarantine, ...ix.parts.keys()];
  if (idOrPrefix.length < MIN_ID_PREFIX && all.some((id) => id.startsWith(idOrPrefix))) {
    throw new SpoolError(
      'invalid-id',
      `id prefix ${JSON.stringify(idOrPrefix)} is too short: give at least ${MIN_ID_PREFIX} characters of the id, or the whole id`,
      {
        hint: 'the whole id is in `pulsa-bridge queue ls --area all`',
      },
    );
  }
  const matches = new Set<string>();
  for (const id of all) if (id.startsWith(idOrPrefix)) matches.add(id);
  if (matches.size === 1) return [...matches][0]!;
  if (matches.size > 1) {
    const some = [...matches].sort().slice(0, 5);
    throw new SpoolError(
      'invalid-id',
      `id prefix ${idOrPrefix} matches ${matches.size} records (${some.join(', ')}${matches.size > 5 ? ', ...' : ''})`,
      {
        hint: 'give more characters of the id, or the whole id from `pulsa-bridge queue ls --area all`',
      },
    );
  }
  return idOrPrefix;
}

/**
 * Remove a record from pending/dead/ignored/quarantine, or a multipart part (a stray part whose siblings never came:
 * it would otherwise wait in parts/ until its timeout). Sent records are pruned, not dropped. `idOrPrefix` may be an
 * unambiguous prefix of the id (resolveId); the result names the id dropped.
 */
export async function drop(s: SpoolPort, idOrPrefix: string): Promise<{ area: SpoolArea; id: string }> {
  const id = resolveId(s, idOrPrefix);
  const result = await s.withLock(id, async (): Promise<{ area: SpoolArea; id: string }> => {
    const area = await s.locate(id);
    if (area === 'pending' || area === 'dead' || area === 'ignored') {
      await s.files.unlink(area, id);
      s.index().sms.delete(id);
      s.index().pending.delete(id);
      s.logger.warn({ id, area }, `spool: record ${id} dropped from ${area} by operator`);
      return { area, id };
    }
    if (area === undefined && s.index().quarantine.has(id)) {
      await s.withLock(
        `q:${id}`,
        async () => {
          await s.files.unlink('quarantine', id);
          s.index().quarantine.delete(id);
        },
        true,
      );
      s.logger.warn({ id, area: 'quarantine' }, `spool: record ${id} dropped from quarantine by operator`);
      return { area: 'quarantine', id };
    }
    if (area === undefined && s.index().parts.has(id)) {
      await s.withLock(
        `p:${id}`,
        async () => {
          await s.files.unlink('parts', id, true);
          s.index().parts.delete(id);
        },
        true,
      );
      s.logger.warn({ id, area: 'parts' }, `spool: multipart part ${id} dropped by operator`);
      return { area: 'parts', id };
    }
    if (area === 'sent')
      throw new SpoolError('wrong-area', `record ${id} was delivered (sent); sent records are pruned, not dropped`);
    throw new SpoolError('not-found', `no record ${id} in pending, dead, ignored, quarantine or parts`, {
      hint: 'list records to find the id',
    });
  });
  await s.notifyOwner();
  return result;
}

/** Delete sent (by deliveredAt) or ignored (by receivedAt) records older than `olderThanDays`. Returns the count. */
export async function prune(s: SpoolPort, area: 'sent' | 'ignored', olderThanDays: number): Promise<number> {
  if (!(olderThanDays >= 0)) throw new SpoolError('io', `prune: olderThanDays must be >= 0, got ${olderThanDays}`);
  const days = Math.max(olderThanDays, DEDUPE_MIN_DAYS); // never shorter than the dedupe memory
  const cutoff = s.now().getTime() - days * DAY_MS;
  let removed = 0;
  for (const [id, a] of [...s.index().sms]) {
    if (a !== area) continue;
    await s.withLock(id, async () => {
      if (s.index().sms.get(id) !== area) return;
      const known = area === 'sent' ? s.index().sent.get(id)?.at : undefined; // the sent index: no file read
      if (known !== undefined) {
        if (known >= cutoff) return;
        await s.files.unlink(area, id, true);
        s.index().sms.delete(id);
        s.index().sent.delete(id);
        removed += 1;
        return;
      }
      let rec: SmsRecord;
      try {
        rec = (await s.readRecord(area, id)) as SmsRecord;
      } catch (err) {
        if (err instanceof SpoolError && err.reason === 'not-found') {
          s.forget(area, id);
          return;
        }
        s.logger.error({ id, area, err: errorMessage(err) }, 'spool: prune skips unreadable record');
        return;
      }
      const t = isoTimeMs(area === 'sent' ? (rec.deliveredAt ?? rec.receivedAt) : rec.receivedAt);
      if (t === undefined || t >= cutoff) return;
      await s.files.unlink(area, id, true);
      s.index().sms.delete(id);
      s.index().sent.delete(id);
      removed += 1;
    });
  }
  if (removed > 0 && area === 'sent') await s.saveSentIndex();
  if (removed > 0) s.logger.info({ area, removed, olderThanDays: days }, `spool: pruned ${removed} ${area} records`);
  return removed;
}
