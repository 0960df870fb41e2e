/**
 * The spool's record codec (PURE; node:crypto only). serializeRecord() gives the exact bytes of a record file (sorted
 * keys, `checksum` = sha256 of the canonical JSON, `mac` = HMAC-SHA256 with the spool key over the area and that
 * JSON); parseRecordFile() accepts exactly the files that prove their completeness this way and never throws.
 * A file also needs its kind to fit its area and its id to equal its name. Ids match SPOOL_ID_PATTERN (safe file
 * names; assertId throws SpoolError 'invalid-id'). An id in two SMS areas: the later copy wins (isLaterCopy).
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { errorMessage, SpoolError } from '../errors.js';
import { SPOOL_RECORD_VERSION, type AnyRecord, type QuarantineRecord, type SpoolArea } from './types.js';

const SPOOL_ID_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;
/** Every record area, in the order a scan reads them. */
export const AREAS: readonly SpoolArea[] = ['pending', 'sent', 'dead', 'ignored', 'quarantine', 'parts'];
export const SMS_AREAS = ['pending', 'sent', 'dead', 'ignored'] as const;
export type SmsArea = (typeof SMS_AREAS)[number];
/** Tie-break when an id is found in two SMS areas with the same revision: the later state of a move wins. */
const AREA_RANK: Record<SmsArea, number> = { ignored: 1, pending: 2, dead: 3, sent: 4 };

export function isSmsArea(area: string): area is SmsArea {
  return (SMS_AREAS as readonly string[]).includes(area);
}

/** Whether a copy of an SMS record (its area and rev) is a later state than another copy of the same id. */
export function isLaterCopy(a: { area: SmsArea; rev: number }, b: { area: SmsArea; rev: number }): boolean {
  return a.rev > b.rev || (a.rev === b.rev && AREA_RANK[a.area] > AREA_RANK[b.area]);
}

/** Recursively key-sorted, whitespace-free JSON: the form the checksum is computed over. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = sortKeys(v);
    }
    return out;
  }
  return value;
}

export function recordChecksum(record: object): string {
  const { checksum: _ignored, mac: _mac, ...rest } = record as Record<string, unknown>;
  return createHash('sha256').update(canonicalJson(rest)).digest('hex');
}

const MAC_DOMAIN = 'pulsa-bridge-spool-record-v1';

/** The record's mac (see the header) from its canonical JSON. */
function macOf(key: Buffer, area: SpoolArea, canonical: string): string {
  return createHmac('sha256', key).update(`${MAC_DOMAIN}\n${area}\n${canonical}`, 'utf8').digest('hex');
}

/** The exact text written to disk for a record; signed (`mac`) for `area` when a key is given. */
export function serializeRecord(record: AnyRecord, sign?: { area: SpoolArea; key: Buffer }): string {
  const body = sortKeys(record) as Record<string, unknown>;
  delete body.checksum;
  delete body.mac;
  // body is key-sorted already: its JSON is the canonical form recordChecksum() would build again.
  const canonical = JSON.stringify(body);
  body.checksum = createHash('sha256').update(canonical).digest('hex');
  if (sign) body.mac = macOf(sign.key, sign.area, canonical);
  return `${JSON.stringify(body, null, 2)}\n`;
}

/** `mac`: 'valid' (checked with the key), 'absent' (no mac in the file), 'unchecked' (a mac, but no key to check it). */
export type ParsedRecord =
  { ok: true; record: AnyRecord; mac: 'valid' | 'absent' | 'unchecked' } | { ok: false; reason: string };

/**
 * Validate the text of `<area>/<file>`: JSON, version, checksum, kind for the area, id = file name, and with `key`
 * the mac (see the header).
 */
export function parseRecordFile(text: string, area: SpoolArea, fileName: string, key?: Buffer): ParsedRecord {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    return { ok: false, reason: `invalid JSON: ${errorMessage(err)}` };
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data))
    return { ok: false, reason: 'not a JSON object' };
  const obj = data as Record<string, unknown>;
  if (obj.v !== SPOOL_RECORD_VERSION)
    return { ok: false, reason: `unsupported record version ${JSON.stringify(obj.v)}` };
  if (typeof obj.checksum !== 'string') return { ok: false, reason: 'missing checksum' };
  if (obj.checksum !== recordChecksum(obj)) return { ok: false, reason: 'bad checksum' };
  if (obj.mac !== undefined && typeof obj.mac !== 'string')
    return { ok: false, reason: 'integrity check failed: mac is not a string' };
  let mac: 'valid' | 'absent' | 'unchecked' = obj.mac === undefined ? 'absent' : 'unchecked';
  if (key && typeof obj.mac === 'string') {
    const { checksum: _c, mac: _m, ...rest } = obj;
    const want = Buffer.from(macOf(key, area, canonicalJson(rest)), 'hex');
    const got = Buffer.from(obj.mac, 'hex');
    if (got.length !== want.length || !timingSafeEqual(got, want)) {
      return {
        ok: false,
        reason: `integrity check failed: the mac does not match this spool's key for ${area}/ (written without the key, with another spool's key, or copied from another area)`,
      };
    }
    mac = 'valid';
  }
  const expectedKind = area === 'quarantine' ? 'quarantine' : area === 'parts' ? 'part' : 'sms';
  if (obj.kind !== expectedKind)
    return { ok: false, reason: `kind ${JSON.stringify(obj.kind)} does not belong in ${area}/` };
  if (typeof obj.id !== 'string' || `${obj.id}.json` !== fileName)
    return { ok: false, reason: 'id does not match file name' };
  const shapeProblem = checkShape(obj);
  if (shapeProblem) return { ok: false, reason: shapeProblem };
  const { checksum: _c, mac: _m, ...record } = obj;
  return { ok: true, record: record as unknown as AnyRecord, mac };
}

function checkShape(obj: Record<string, unknown>): string | undefined {
  const str = (k: string) => typeof obj[k] === 'string';
  // An older version marked what a virtual modem made up and signed it with a public secret: never sent with the real one.
  if (obj.kind !== 'quarantine' && obj.simulated !== undefined)
    return 'made up by a virtual modem (so marked by an older release): never sent';
  if (obj.kind === 'sms') {
    const sim = obj.sim as Record<string, unknown> | undefined;
    if (!str('sender') || !str('text') || !str('receivedAt') || !str('scTimestamp'))
      return 'sms record misses a text field';
    if (typeof obj.attempts !== 'number' || !sim || typeof sim.modem !== 'string')
      return 'sms record misses attempts or sim.modem';
  } else if (obj.kind === 'part') {
    if (!str('groupKey') || !str('text') || typeof obj.sequence !== 'number' || typeof obj.total !== 'number') {
      return 'part record misses groupKey/text/sequence/total';
    }
  } else if (!str('raw') || !str('reason')) {
    return 'quarantine record misses raw or reason';
  }
  return undefined;
}

export function assertId(id: string): void {
  if (typeof id !== 'string' || !SPOOL_ID_PATTERN.test(id)) {
    throw new SpoolError(
      'invalid-id',
      `invalid spool id ${JSON.stringify(id)}: expected 1-128 characters of A-Z a-z 0-9 . _ -`,
    );
  }
}

/** The quarantine record that keeps the raw text of the unreadable file `<area>/<name>`, found at `at`. */
export function quarantineRecordFor(
  area: SpoolArea,
  name: string,
  text: string,
  reason: string,
  at: Date,
): QuarantineRecord {
  const stem = name
    .slice(0, -'.json'.length)
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .slice(0, 80);
  const hash = createHash('sha256').update(text).digest('hex').slice(0, 12);
  const id = `corrupt.${area}.${stem}.${hash}`.slice(0, 128);
  return {
    v: SPOOL_RECORD_VERSION,
    kind: 'quarantine',
    id,
    modem: 'unknown',
    raw: text,
    reason: `unreadable record file: ${reason}`,
    receivedAt: at.toISOString(),
    originalFile: `${area}/${name}`,
  };
}

/** An ISO time as epoch ms; undefined when absent or unparseable. */
export function isoTimeMs(iso: string | undefined): number | undefined {
  if (iso === undefined) return undefined;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? undefined : ms;
}
