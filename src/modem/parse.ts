/**
 * Parsers for the information responses of 27.005 / 27.007 commands, and the CNMI negotiation.
 * PURE: strings in, values out; never throws on odd input (returns undefined / skips and reports what it skipped).
 */
import type { StoredPdu } from '../sms/types.js';
import { splitFields } from './urcs.js';

function unquote(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const t = text.trim();
  return t.startsWith('"') && t.endsWith('"') && t.length >= 2 ? t.slice(1, -1) : t;
}

function int(text: string | undefined): number | undefined {
  const t = text?.trim();
  return t !== undefined && /^-?\d+$/.test(t) ? Number(t) : undefined;
}

/** The value after `<prefix>:` in the first line that carries it, e.g. infoValue(lines, '+CSQ'). */
export function infoValue(lines: readonly string[], prefix: string): string | undefined {
  const p = prefix.toUpperCase();
  for (const line of lines) {
    const t = line.trim();
    if (t.toUpperCase().startsWith(`${p}:`)) return t.slice(p.length + 1).trim();
  }
  return undefined;
}

/** Plain answer of AT+CGMI / AT+CGMM / AT+CGMR: non-empty lines joined, an echoed `+CGMI:` style prefix removed. */
export function plainAnswer(lines: readonly string[]): string {
  return lines
    .map((l) =>
      l
        .trim()
        .replace(/^\+?[A-Z^]{3,8}:\s*/i, '')
        .replace(/^Revision:\s*/i, ''),
    )
    .filter((l) => l !== '')
    .join(' ')
    .trim();
}

/** First run of digits/hex of the given length range in the answer (IMEI, IMSI, ICCID may carry a prefix). */
export function extractId(lines: readonly string[], pattern: RegExp): string | undefined {
  for (const line of lines) {
    const m = pattern.exec(line.replace(/"/g, ''));
    if (m) return m[0];
  }
  return undefined;
}

// ---- signal ---------------------------------------------------------------------------------------------------

export interface SignalQuality {
  /** 0..31, or 99 when unknown. */
  rssi: number;
  /** -113 + 2*rssi; undefined when rssi is 99. */
  dbm: number | undefined;
  /** 0..5 for a status display; 0 when unknown. */
  bars: number;
  /** Bit error rate class 0..7; undefined when 99. */
  ber: number | undefined;
}

export function rssiToDbm(rssi: number): number | undefined {
  if (rssi < 0 || rssi > 31) return undefined;
  return -113 + 2 * rssi;
}

export function rssiToBars(rssi: number): number {
  if (rssi < 2 || rssi > 31) return 0;
  if (rssi < 8) return 1;
  if (rssi < 13) return 2;
  if (rssi < 18) return 3;
  if (rssi < 23) return 4;
  return 5;
}

/** `+CSQ: 20,99` -> { rssi 20, dbm -73, bars 4, ber undefined }. */
export function parseCsq(lines: readonly string[]): SignalQuality | undefined {
  const v = infoValue(lines, '+CSQ');
  if (v === undefined) return undefined;
  const [r, b] = v.split(',').map((x) => int(x));
  if (r === undefined) return undefined;
  return { rssi: r, dbm: rssiToDbm(r), bars: rssiToBars(r), ber: b === undefined || b === 99 ? undefined : b };
}

// ---- registration ---------------------------------------------------------------------------------------------

export interface Registration {
  stat: number;
  text: string;
  registered: boolean;
  lac?: string;
  ci?: string;
  act?: number;
  source: 'CREG' | 'CEREG' | 'CGREG';
}

const STAT_TEXT: Readonly<Record<number, string>> = {
  0: 'not registered',
  1: 'registered home',
  2: 'searching',
  3: 'denied',
  4: 'unknown',
  5: 'roaming',
  6: 'registered home (SMS only)',
  7: 'roaming (SMS only)',
  8: 'emergency only',
  9: 'registered home (CSFB not preferred)',
  10: 'roaming (CSFB not preferred)',
};

export function registrationText(stat: number): string {
  return STAT_TEXT[stat] ?? 'unknown';
}

export function isRegistered(stat: number): boolean {
  return [1, 5, 6, 7, 9, 10].includes(stat);
}

/**
 * Answer of AT+CREG? / AT+CEREG? / AT+CGREG?: `<n>,<stat>[,<lac>,<ci>[,<AcT>]]`.
 * (The unsolicited form without <n> is parsed by the URC table.)
 */
export function parseRegistrationQuery(
  lines: readonly string[],
  source: Registration['source'],
): Registration | undefined {
  const v = infoValue(lines, `+${source}`);
  if (v === undefined) return undefined;
  const f = splitFields(v);
  const stat = int(f[1]);
  if (stat === undefined) return undefined;
  const reg: Registration = { stat, text: registrationText(stat), registered: isRegistered(stat), source };
  const lac = unquote(f[2]);
  const ci = unquote(f[3]);
  const act = int(f[4]);
  if (lac) reg.lac = lac;
  if (ci) reg.ci = ci;
  if (act !== undefined) reg.act = act;
  return reg;
}

/** `+COPS: 0,0,"TELKOMSEL",7` -> 'TELKOMSEL'; `+COPS: 0` -> undefined. */
export function parseCopsName(lines: readonly string[]): string | undefined {
  const v = infoValue(lines, '+COPS');
  if (v === undefined) return undefined;
  const name = unquote(splitFields(v)[2]);
  return name === undefined || name === '' ? undefined : name;
}

/** `+CSCA: "+6281100000",145` -> '+6281100000'. */
export function parseCsca(lines: readonly string[]): string | undefined {
  const v = infoValue(lines, '+CSCA');
  if (v === undefined) return undefined;
  const n = unquote(splitFields(v)[0]);
  return n === undefined || n === '' ? undefined : n;
}

/** `+CNUM: "","+6281234",145` -> '+6281234'. */
export function parseCnum(lines: readonly string[]): string | undefined {
  const v = infoValue(lines, '+CNUM');
  if (v === undefined) return undefined;
  const n = unquote(splitFields(v)[1]);
  return n === undefined || n === '' ? undefined : n;
}

// ---- storage --------------------------------------------------------------------------------------------------

export type SmsMemory = 'SM' | 'ME' | 'MT' | 'SR' | 'BM' | string;

export interface StorageUsage {
  memory: SmsMemory;
  used: number;
  total: number;
}

/** `+CPMS: "SM",3,30,"SM",3,30,"SM",3,30` (AT+CPMS?) -> one row per memory slot (mem1, mem2, mem3). */
export function parseCpmsQuery(lines: readonly string[]): StorageUsage[] {
  const v = infoValue(lines, '+CPMS');
  if (v === undefined) return [];
  const f = splitFields(v);
  const out: StorageUsage[] = [];
  for (let i = 0; i + 2 < f.length; i += 3) {
    const memory = unquote(f[i]);
    const used = int(f[i + 1]);
    const total = int(f[i + 2]);
    if (memory !== undefined && used !== undefined && total !== undefined) out.push({ memory, used, total });
  }
  return out;
}

/** `+CPMS: 3,30,3,30,3,30` (answer to AT+CPMS=...) -> [{used,total}...]. */
export function parseCpmsSet(lines: readonly string[]): Array<{ used: number; total: number }> {
  const v = infoValue(lines, '+CPMS');
  if (v === undefined) return [];
  const nums = splitFields(v).map((x) => int(x));
  const out: Array<{ used: number; total: number }> = [];
  for (let i = 0; i + 1 < nums.length; i += 2) {
    const used = nums[i];
    const total = nums[i + 1];
    if (used !== undefined && total !== undefined) out.push({ used, total });
  }
  return out;
}

/**
 * `+CPMS: ("SM","ME"),("SM","ME"),("SM")` (AT+CPMS=?) -> memory lists per slot. Also the forms real modems send
 * (ModemManager test-modem-helpers.c, python-gsmmodem fakemodems.py): a bare memory per slot (Huawei MU609
 * `"ME","MT","SM"`), mixed (`("ME","MT"),"ME",("SM")`), spaces anywhere, empty lists (Nokia `(),(),()`), and the
 * groups inside one more pair of parentheses (Wavecom Multiband `(("SM","BM","SR"),("SM"))`).
 */
export function parseCpmsSupported(lines: readonly string[]): string[][] {
  let v = infoValue(lines, '+CPMS')?.trim();
  if (v === undefined) return [];
  const wrapped = /^\((\s*\(.*\)\s*)\)$/.exec(v);
  if (wrapped && wrapped[1]!.split('(').length - 1 === wrapped[1]!.split(')').length - 1) v = wrapped[1]!;
  const groups: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of v) {
    if (ch === '(') depth++;
    else if (ch === ')') depth = Math.max(0, depth - 1);
    if (ch === ',' && depth === 0) {
      groups.push(current);
      current = '';
    } else current += ch;
  }
  groups.push(current);
  return groups.map((g) =>
    g
      .trim()
      .replace(/^\(|\)$/g, '')
      .split(',')
      .map((x) => unquote(x) ?? '')
      .filter((x) => x !== ''),
  );
}

/** Picks the first preferred memory usable for slots 1 and 3 (read/delete and receive). */
export function chooseStorage(supported: readonly string[][], preference: readonly string[]): string | undefined {
  if (supported.length === 0) return undefined;
  const mem1 = supported[0] ?? [];
  const mem3 = supported[2] ?? mem1;
  return preference.find((m) => mem1.includes(m) && mem3.includes(m));
}

// ---- CNMI -----------------------------------------------------------------------------------------------------

/** `+CNMI: (0-3),(0,1,2),(0,2),(0-2),(0,1)` -> [[0,1,2,3],[0,1,2],[0,2],[0,1,2],[0,1]]. */
export function parseCnmiRanges(lines: readonly string[]): number[][] | undefined {
  const v = infoValue(lines, '+CNMI');
  if (v === undefined) return undefined;
  const groups = [...v.matchAll(/\(([^()]*)\)/g)].map((m) => m[1]!);
  const source = groups.length > 0 ? groups : v.split(',');
  const ranges = source.map((g) => {
    const values: number[] = [];
    for (const part of g.split(',')) {
      const r = /^\s*(\d+)\s*(?:-\s*(\d+))?\s*$/.exec(part);
      if (!r) continue;
      const lo = Number(r[1]);
      const hi = r[2] === undefined ? lo : Number(r[2]);
      for (let x = lo; x <= hi && x - lo < 32; x++) values.push(x);
    }
    return values;
  });
  return ranges.length >= 2 && ranges.every((r) => r.length > 0) ? ranges : undefined;
}

/**
 * The CNMI setting to try first, inside the advertised ranges: mode 2 (else 1), mt 1 to store (+CMTI) or 2 for
 * direct delivery (+CMT), bm 0, ds 0 (else 2, else 1), bfr 0. Undefined when mode or mt cannot be met.
 */
export function chooseCnmi(ranges: readonly number[][], delivery: 'store' | 'direct'): string | undefined {
  const pick = (i: number, prefs: number[]): number | undefined => prefs.find((p) => ranges[i]?.includes(p));
  const mode = pick(0, [2, 1]);
  const mt = pick(1, [delivery === 'store' ? 1 : 2]);
  if (mode === undefined || mt === undefined) return undefined;
  const values: number[] = [mode, mt];
  if (ranges.length > 2) values.push(pick(2, [0]) ?? Math.min(...ranges[2]!));
  if (ranges.length > 3) values.push(pick(3, [0, 2, 1]) ?? Math.min(...ranges[3]!));
  if (ranges.length > 4) values.push(pick(4, [0]) ?? Math.min(...ranges[4]!));
  return values.join(',');
}

/** Settings tried when the negotiated one is refused (after the profile's own fallbacks). */
export function genericCnmiFallbacks(delivery: 'store' | 'direct'): string[] {
  const mt = delivery === 'store' ? 1 : 2;
  return [`2,${mt},0,0,0`, `1,${mt},0,0,0`, `2,${mt},0,0`, `1,${mt},0,0`, `2,${mt}`, `1,${mt}`];
}

/** Profile fallbacks are written for store delivery; direct delivery swaps mt to 2. */
export function adaptCnmiForDelivery(setting: string, delivery: 'store' | 'direct'): string {
  if (delivery === 'store') return setting;
  const parts = setting.split(',');
  if (parts.length >= 2) parts[1] = '2';
  return parts.join(',');
}

// ---- SMS listing ----------------------------------------------------------------------------------------------

export interface PduListResult {
  messages: StoredPdu[];
  /** Lines that could not be read (reported by the caller, never dropped silently). */
  skipped: string[];
}

const HEX = /^[0-9A-Fa-f]+$/;

/**
 * Pairs of `+CMGL: <index>,<stat>,[<alpha>],<length>` + PDU line. Indexes are kept as the modem reports them
 * (0-based on some modems). A header without a hex PDU line after it is skipped and reported.
 */
export function parseCmgl(lines: readonly string[]): PduListResult {
  const messages: StoredPdu[] = [];
  const skipped: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '') continue;
    // Flag s: a U+2028/U+2029 in the <alpha> field must not make the header unreadable (found by test/fuzz).
    const m = /^\+CMGL:\s*(.*)$/is.exec(line);
    if (!m) {
      skipped.push(line);
      continue;
    }
    const f = splitFields(m[1]!);
    const index = int(f[0]);
    const stat = int(f[1]);
    const length = int(f[f.length - 1]);
    const pdu = lines[i + 1]?.trim() ?? '';
    if (index === undefined || length === undefined || f.length < 3 || !HEX.test(pdu)) {
      skipped.push(line);
      continue;
    }
    i++;
    messages.push({ index, stat, length, pdu: pdu.toUpperCase() });
  }
  return { messages, skipped };
}

/** `+CMGR: <stat>,[<alpha>],<length>` + PDU line; undefined for an empty slot (no header, length 0, no PDU). */
export function parseCmgr(lines: readonly string[], index: number): StoredPdu | undefined {
  const at = lines.findIndex((l) => /^\+CMGR:/i.test(l.trim()));
  if (at < 0) return undefined;
  const f = splitFields(lines[at]!.trim().slice(6));
  const stat = int(f[0]);
  const length = int(f[f.length - 1]);
  const pdu = lines[at + 1]?.trim() ?? '';
  if (length === undefined || length === 0 || !HEX.test(pdu)) return undefined;
  return { index, stat, length, pdu: pdu.toUpperCase() };
}

/** `+CMGS: 12` -> 12. */
export function parseCmgs(lines: readonly string[]): number | undefined {
  const v = infoValue(lines, '+CMGS');
  return v === undefined ? undefined : int(splitFields(v)[0]);
}
