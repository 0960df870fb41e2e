/**
 * The spool's record codec (PURE: no fs, no clock of its own; node:crypto only for sha256 and HMAC-SHA256).
 *
 * Contract and invariants
 * - A record file is `<area>/<id>.json`: the record's JSON (keys sorted recursively, 2-space indent, trailing newline)
 *   plus `checksum` = sha256 (hex) over the canonical JSON of the record without `checksum` (keys sorted recursively,
 *   no whitespace, undefined values left out). `v` must equal SPOOL_RECORD_VERSION. serializeRecord() gives exactly
 *   these bytes; parseRecordFile() accepts exactly the files that prove their own completeness this way.
 * - Integrity (who wrote it): with the spool's key, the file also carries `mac` = HMAC-SHA256 (hex, key = the spool
 *   key, integrity-key.ts) over `pulsa-bridge-spool-record-v1`, LF, the area, LF, the same canonical JSON (without
 *   `checksum` and `mac`). The checksum says the file is whole; the mac says the daemon's key wrote it, in this area: a
 *   file made by someone without the key, or a record copied into another area, does not verify. parseRecordFile()
 *   given a key rejects a wrong mac ('integrity check failed') and reports a missing one (`mac: 'absent'`: a record
 *   from before signing, or a forgery; the caller decides); without a key the mac is not checked (`'unchecked'`).
 * - A file is readable only if: it is a JSON object, `v` is the version, the checksum matches, its kind belongs in its
 *   area (sms in pending/sent/dead/ignored, part in parts, quarantine in quarantine), its id equals the file name and
 *   it has the fields of its kind. Anything else comes back as { ok: false, reason } (never a throw).
 * - Ids match SPOOL_ID_PATTERN (/^[A-Za-z0-9._-]{1,128}$/): safe as file names; assertId() refuses others with
 *   SpoolError 'invalid-id'.
 * - SMS ids live in one namespace over pending/sent/dead/ignored. When an interrupted move leaves an id in two of them,
 *   the later state is the truth: the higher `rev`, and on a tie sent > dead > pending > ignored (isLaterCopy).
 * - An unreadable file is set aside as a QuarantineRecord whose id is derived from its area, name and content
 *   (quarantineRecordFor): the same bytes found again map to the same quarantine id.
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
export type ParsedRecord = { ok: true; record: AnyRecord; mac: 'valid' | 'absent' | 'unchecked' } | { ok: false; reason: string };

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
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return { ok: false, reason: 'not a JSON object' };
  const obj = data as Record<string, unknown>;
  if (obj.v !== SPOOL_RECORD_VERSION) return { ok: false, reason: `unsupported record version ${JSON.stringify(obj.v)}` };
  if (typeof obj.checksum !== 'string') return { ok: false, reason: 'missing checksum' };
  if (obj.checksum !== recordChecksum(obj)) return { ok: false, reason: 'bad checksum' };
  if (obj.mac !== undefined && typeof obj.mac !== 'string') return { ok: false, reason: 'integrity check failed: mac is not a string' };
  let mac: 'valid' | 'absent' | 'unchecked' = obj.mac === undefined ? 'absent' : 'unchecked';
  if (key && typeof obj.mac === 'string') {
    const { checksum: _c, mac: _m, ...rest } = obj;
    const want = Buffer.from(macOf(key, area, canonicalJson(rest)), 'hex');
    const got = Buffer.from(obj.mac, 'hex');
    if (got.length !== want.length || !timingSafeEqual(got, want)) {
      return { ok: false, reason: `integrity check failed: the mac does not match this spool's key for ${area}/ (written without the key, with another spool's key, or copied from another area)` };
    }
    mac = 'valid';
  }
  const expectedKind = area === 'quarantine' ? 'quarantine' : area === 'parts' ? 'part' : 'sms';
  if (obj.kind !== expectedKind) return { ok: false, reason: `kind ${JSON.stringify(obj.kind)} does not belong in ${area}/` };
  if (typeof obj.id !== 'string' || `${obj.id}.json` !== fileName) return { ok: false, reason: 'id does not match file name' };
  const shapeProblem = checkShape(obj);
  if (shapeProblem) return { ok: false, reason: shapeProblem };
  const { checksum: _c, mac: _m, ...record } = obj;
  return { ok: true, record: record as unknown as AnyRecord, mac };
}

function checkShape(obj: Record<string, unknown>): string | undefined {
  const str = (k: string) => typeof obj[k] === 'string';
  if (obj.kind !== 'quarantine' && obj.simulated !== undefined && obj.simulated !== true) return 'simulated must be true when present';
  if (obj.kind === 'sms') {
    const sim = obj.sim as Record<string, unknown> | undefined;
    if (!str('sender') || !str('text') || !str('receivedAt') || !str('scTimestamp')) return 'sms record misses a text field';
    if (typeof obj.attempts !== 'number' || !sim || typeof sim.modem !== 'string') return 'sms record misses attempts or sim.modem';
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
    throw new SpoolError('invalid-id', `invalid spool id ${JSON.stringify(id)}: expected 1-128 characters of A-Z a-z 0-9 . _ -`);
  }
}

/** The quarantine record that keeps the raw text of the unreadable file `<area>/<name>`, found at `at`. */
export function quarantineRecordFor(area: SpoolArea, name: string, text: string, reason: string, at: Date): QuarantineRecord {
  const stem = name.slice(0, -'.json'.length).replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 80);
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
