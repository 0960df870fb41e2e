/**
 * Reading a spool directory into an index, and the owner's start-up recovery. Mode 'read' (a client, or a rescan)
 * changes nothing on disk; mode 'recover' (the owner at open) removes the earlier copy of an id found in two areas,
 * quarantines unreadable record files (their raw text kept) and moves non-record files into foreign/ unread.
 * A corrupt file never throws. Unsigned records are signed in place only while the key's adoption is unfinished and
 * no record carries a foreign mac. Sent records the sent index knows are listed, not read.
 * clearTmp() deletes only the daemon's own regular tmp files, never recursively or through a symlink.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { errorMessage, SpoolError } from '../errors.js';
import type { Logger } from '../log.js';
import {
  AREAS,
  isLaterCopy,
  isoTimeMs,
  isSmsArea,
  parseRecordFile,
  quarantineRecordFor,
  type SmsArea,
} from './codec.js';
import { errnoCode, MAX_QUARANTINE_RAW_BYTES, UNSIGNED_REASON, type RecordFiles } from './files.js';
import { PartsIndex } from './parts-index.js';
import { PendingIndex } from './pending-index.js';
import type { SentIndex, SentMeta } from './sent-index.js';
import type { AnyRecord, SmsRecord, SpoolArea } from './types.js';

/** The names files.write gives its tmp files: `<id>.<pid>.<n>.<8 hex>.tmp`. */
const OWN_TMP_NAME = /^[A-Za-z0-9._-]{1,128}\.\d+\.\d+\.[0-9a-f]{8}\.tmp$/;

export interface SpoolIndex {
  /** id -> area, for SMS records (pending/sent/dead/ignored). */
  sms: Map<string, SmsArea>;
  /** Pending records are kept in memory, in delivery order: the forwarder picks from them on every wake. */
  pending: PendingIndex;
  /** Parts in memory, in listParts() order (parts-index.ts): the owner serves listParts() from it. */
  parts: PartsIndex;
  quarantine: Set<string>;
  /** Sent records' rev and delivery time (sent-index.ts), so start-up and prune need not read their files. */
  sent: SentIndex;
  /** Some record read carries a mac (the spool has been signed), valid or not. */
  signed: boolean;
  /** Unsigned records an adopting scan could not sign (write errors): the adoption is not finished. */
  adoptFailed: number;
}

export const emptyIndex = (): SpoolIndex => ({
  sms: new Map(),
  pending: new PendingIndex(),
  parts: new PartsIndex(),
  quarantine: new Set(),
  sent: new Map(),
  signed: false,
  adoptFailed: 0,
});

/** What the sent index keeps of a sent record. */
export function sentMetaOf(rec: SmsRecord): SentMeta {
  return { rev: rec.rev ?? 0, at: isoTimeMs(rec.deliveredAt ?? rec.receivedAt) };
}

/** Every `<area>/<id>` an index holds (to count what a rescan added and removed). */
export function indexEntries(ix: SpoolIndex): Set<string> {
  const out = new Set<string>();
  for (const [id, area] of ix.sms) out.add(`${area}/${id}`);
  for (const id of ix.parts.keys()) out.add(`parts/${id}`);
  for (const id of ix.quarantine) out.add(`quarantine/${id}`);
  return out;
}

export interface ScanDeps {
  files: RecordFiles;
  logger: Logger;
  clock: () => Date;
}

/** Owner only, at open, before the recovering scan: delete our own tmp leftovers (see the header). */
export async function clearTmp({ files, logger }: ScanDeps): Promise<void> {
  const tmpDir = files.areaDir('tmp');
  for (const { name, regular } of await files.listEntries(tmpDir)) {
    if (!regular || !OWN_TMP_NAME.test(name)) {
      logger.warn(
        { file: `tmp/${name}` },
        `spool: tmp/${name} is not a tmp file of the daemon${regular ? '' : ' (not a regular file)'}; left in place`,
      );
      continue;
    }
    try {
      await fsp.unlink(path.join(tmpDir, name));
      logger.warn({ file: `tmp/${name}` }, 'spool: deleted half-written file left by a crash');
    } catch (err) {
      logger.error({ file: `tmp/${name}`, err: errorMessage(err) }, 'spool: cannot delete tmp leftover');
    }
  }
}

/** What scan() does with records that have no mac (see the header). */
export interface ScanIntegrity {
  /** The start that created the key: sign unsigned records, unless some record carries a mac. */
  adoptUnsigned: boolean;
}

/**
 * Read every area into a fresh index. 'recover' (owner at open) repairs; 'read' only reads. `sentCache`: the sent
 * index (sent-index.ts); a sent file it has an entry for is not read, only listed.
 */
export async function scan(
  deps: ScanDeps,
  mode: 'recover' | 'read',
  sentCache: SentIndex = new Map(),
  integrity: ScanIntegrity = { adoptUnsigned: false },
): Promise<SpoolIndex> {
  const { files, logger } = deps;
  const ix = emptyIndex();
  const found = new Map<string, { area: SmsArea; rev: number; rec?: SmsRecord }[]>();
  const pending: SmsRecord[] = [];
  const key = files.signing;
  /** Valid records without a mac, found while a key is set: adopted or refused once the whole spool is seen. */
  const unsigned: { area: SpoolArea; name: string; text: string; rec: AnyRecord }[] = [];
  let sawMac = false;
  /** A mac that does not verify with this key: the spool was signed with another key (lost), nothing is adopted. */
  let sawForeignMac = false;
  const admit = (area: SpoolArea, rec: AnyRecord): void => {
    if (rec.kind === 'part') ix.parts.set(rec.id, rec);
    else if (rec.kind === 'quarantine') ix.quarantine.add(rec.id);
    else if (isSmsArea(area)) {
      if (area === 'sent') ix.sent.set(rec.id, sentMetaOf(rec));
      const list = found.get(rec.id) ?? [];
      list.push({ area, rev: rec.rev ?? 0, rec });
      found.set(rec.id, list);
    }
  };
  for (const area of AREAS) {
    for (const { name, regular } of await files.listEntries(files.areaDir(area))) {
      if (!regular || !name.endsWith('.json')) {
        const why = regular ? 'not a record (*.json)' : 'not a regular file';
        if (mode === 'recover') await moveAside(deps, area, name, why);
        else logger.warn({ file: `${area}/${name}` }, `spool: ignoring ${area}/${name}: ${why}`);
        continue;
      }
      const cached = area === 'sent' ? sentCache.get(name.slice(0, -'.json'.length)) : undefined;
      if (cached) {
        const id = name.slice(0, -'.json'.length);
        ix.sent.set(id, cached);
        found.set(id, [...(found.get(id) ?? []), { area: 'sent', rev: cached.rev }]);
        continue;
      }
      let text: string;
      try {
        text = await files.readText(area, name);
      } catch (err) {
        const code = errnoCode(err);
        // Vanished between readdir and read: another process moved or dropped it; nothing to index.
        if (code === 'ENOENT') {
          logger.debug({ file: `${area}/${name}` }, 'spool: record file vanished while scanning');
          continue;
        }
        if (code === 'EFBIG' || code === 'ENOTREG' || code === 'ELOOP') {
          const why =
            code === 'EFBIG' ? errorMessage(err) : code === 'ELOOP' ? 'a symbolic link' : 'not a regular file';
          if (mode === 'recover') await moveAside(deps, area, name, why);
          else logger.warn({ file: `${area}/${name}`, reason: why }, `spool: skipping ${area}/${name} unread (${why})`);
          continue;
        }
        logger.error(
          { file: `${area}/${name}`, err: errorMessage(err) },
          'spool: cannot read record file; left in place',
        );
        continue;
      }
      const parsed = parseRecordFile(text, area, name, key);
      if (parsed.ok && parsed.mac === 'absent' && key) {
        unsigned.push({ area, name, text, rec: parsed.record });
        continue;
      }
      if (!parsed.ok) {
        if (parsed.reason.startsWith('integrity')) sawMac = sawForeignMac = true;
        if (mode === 'recover') await setAside(deps, ix, area, name, text, parsed.reason);
        else
          logger.warn(
            { file: `${area}/${name}`, reason: parsed.reason },
            `spool: skipping unreadable record ${area}/${name} (${parsed.reason})`,
          );
        continue;
      }
      if (parsed.mac !== 'absent') sawMac = true;
      admit(area, parsed.record);
    }
  }
  if (unsigned.length > 0) {
    if (integrity.adoptUnsigned && !sawForeignMac && mode === 'recover') {
      const counts: Record<string, number> = {};
      for (const u of unsigned) {
        try {
          await files.write(u.area, u.rec); // the same record, now signed for its area
          counts[u.area] = (counts[u.area] ?? 0) + 1;
          admit(u.area, u.rec);
        } catch (err) {
          ix.adoptFailed++;
          logger.error(
            { file: `${u.area}/${u.name}`, err: errorMessage(err) },
            `spool: cannot sign ${u.area}/${u.name}; left unsigned (signing is tried again at the next start)`,
          );
        }
      }
      logger.warn(
        { signed: counts },
        `spool: integrity key created; ${Object.values(counts).reduce((a, b) => a + b, 0)} records written before record signing were signed (${Object.entries(
          counts,
        )
          .map(([a, n]) => `${a} ${n}`)
          .join(', ')})`,
      );
    } else {
      for (const u of unsigned) {
        if (mode === 'recover') await setAside(deps, ix, u.area, u.name, u.text, UNSIGNED_REASON);
        else
          logger.warn(
            { file: `${u.area}/${u.name}`, reason: UNSIGNED_REASON },
            `spool: skipping unsigned record ${u.area}/${u.name}`,
          );
      }
    }
  }
  for (const [id, copies] of found) {
    // Latest first (stable for equal copies, as the sort by rev then area rank always was).
    copies.sort((a, b) => (isLaterCopy(b, a) ? 1 : isLaterCopy(a, b) ? -1 : 0));
    const keep = copies[0]!;
    ix.sms.set(id, keep.area);
    if (keep.area === 'pending') pending.push(keep.rec!); // only sent entries come from the cache without a record
    for (const loser of copies.slice(1)) {
      if (mode === 'read') {
        logger.debug(
          { id, kept: keep.area, other: loser.area },
          `spool: record ${id} is in two areas; using ${keep.area}`,
        );
        continue;
      }
      try {
        await files.unlink(loser.area, id);
        if (loser.area === 'sent') ix.sent.delete(id);
        logger.warn(
          { id, kept: keep.area, removed: loser.area },
          `spool: record ${id} was in two areas (interrupted move); kept ${keep.area}, removed ${loser.area}`,
        );
      } catch (err) {
        logger.error({ id, area: loser.area, err: errorMessage(err) }, 'spool: cannot remove duplicate record');
      }
    }
  }
  ix.pending = PendingIndex.from(pending); // sorted once
  ix.signed = sawMac;
  return ix;
}

/** Owner: a file that is not a record moved aside as it is (files.moveAside); left in place, logged, when that fails. */
async function moveAside({ files, logger }: ScanDeps, area: SpoolArea, name: string, why: string): Promise<void> {
  try {
    const to = await files.moveAside(area, name);
    logger.error(
      { file: `${area}/${name}`, movedTo: `foreign/${to}`, reason: why },
      `spool: ${area}/${name} is ${why}; moved aside unread to foreign/${to}`,
    );
  } catch (err) {
    logger.error(
      { file: `${area}/${name}`, reason: why, err: errorMessage(err) },
      `spool: ${area}/${name} is ${why} and could not be moved aside; left in place`,
    );
  }
}

/** An unreadable record file: into a quarantine record when small enough to keep in one, else moved aside as it is. */
async function setAside(
  deps: ScanDeps,
  ix: SpoolIndex,
  area: SpoolArea,
  name: string,
  text: string,
  reason: string,
): Promise<void> {
  if (Buffer.byteLength(text, 'utf8') > MAX_QUARANTINE_RAW_BYTES)
    await moveAside(deps, area, name, `unreadable (${reason}) and too big for a quarantine record`);
  else await quarantineUnreadable(deps, ix, area, name, text, reason);
}

/**
 * Move an unreadable record file into quarantine (raw text kept); on failure it stays where it is, logged.
 * Returns the quarantine id, or undefined when the file could not be moved.
 * `unlink`: remove the unreadable file (false when the caller rewrites it in place).
 */
async function quarantineUnreadable(
  { files, logger, clock }: ScanDeps,
  ix: SpoolIndex,
  area: SpoolArea,
  name: string,
  text: string,
  reason: string,
  unlink = true,
): Promise<string | undefined> {
  const q = quarantineRecordFor(area, name, text, reason, clock());
  const id = q.id;
  try {
    if (!ix.quarantine.has(id)) await files.write('quarantine', q);
    ix.quarantine.add(id);
    if (unlink && !(area === 'quarantine' && `${id}.json` === name)) await files.unlinkName(area, name);
    // A failed integrity check is someone writing into the spool without the key: an error, not disk wear.
    logger[reason.startsWith('integrity') ? 'error' : 'warn'](
      { file: `${area}/${name}`, quarantineId: id, reason },
      `spool: unreadable record ${area}/${name} moved to quarantine (${reason})`,
    );
    return id;
  } catch (err) {
    logger.error(
      { file: `${area}/${name}`, reason, err: errorMessage(err) },
      'spool: unreadable record could not be quarantined; left in place',
    );
    return undefined;
  }
}

/**
 * Owner, inside the id's lock: the pending file went bad on disk (bit rot, a hand edit) while this process holds a
 * valid copy in memory. The SMS must not be lost to quarantine: the corrupt bytes are kept in quarantine for audit,
 * the pending file is rewritten from memory, and the caller's mark goes on with that copy.
 */
export async function restoreCorruptPending(
  deps: ScanDeps,
  ix: SpoolIndex,
  id: string,
  cached: Readonly<SmsRecord>,
): Promise<SmsRecord> {
  const name = `${id}.json`;
  const text = await deps.files.readText('pending', name).catch(() => undefined);
  const parsed = text === undefined ? undefined : deps.files.parse(text, 'pending', name);
  const qid =
    text !== undefined && parsed && !parsed.ok
      ? await quarantineUnreadable(deps, ix, 'pending', name, text, parsed.reason, false)
      : undefined;
  const rec = structuredClone(cached) as SmsRecord;
  await deps.files.write('pending', rec);
  deps.logger.error(
    { id, quarantineId: qid },
    `spool: pending record ${id} was corrupt on disk; rewritten from memory (the corrupt bytes are kept in quarantine)`,
  );
  return structuredClone(rec);
}

/**
 * Owner, inside the id's lock: a pending file that fails its checks (bad JSON, checksum, ...) is moved to quarantine
 * and leaves the index, so it cannot block delivery; the same as start-up recovery does. Returns the error to throw
 * (SpoolError 'corrupt'); when the move fails the record stays pending and the error says so.
 */
export async function quarantineCorruptPending(
  deps: ScanDeps,
  ix: SpoolIndex,
  id: string,
  err: SpoolError,
): Promise<SpoolError> {
  const name = `${id}.json`;
  let text: string;
  try {
    text = await deps.files.readText('pending', name);
  } catch (readErr) {
    deps.logger.error(
      { id, err: errorMessage(readErr) },
      `spool: cannot re-read the unreadable pending record ${id}; left in place`,
    );
    return err;
  }
  const parsed = deps.files.parse(text, 'pending', name);
  if (parsed.ok) return err; // rewritten by another process since: the caller's next try reads the new file
  const qid = await quarantineUnreadable(deps, ix, 'pending', name, text, parsed.reason);
  if (qid === undefined) return err;
  if (ix.sms.get(id) === 'pending') ix.sms.delete(id);
  ix.pending.delete(id);
  return new SpoolError(
    'corrupt',
    `record pending/${name} is unreadable (${parsed.reason}); moved to quarantine as ${qid}`,
    {
      cause: err,
      hint: `pulsa-bridge queue show ${qid}`,
    },
  );
}
