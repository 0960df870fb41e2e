/**
 * Balance and active-period parsing of an operator's USSD reply (`Sisa pulsa Rp.24025.Aktif sd 28/08/2026. ...`).
 * PURE: the reference date is passed in. parseBalanceReply returns whole rupiah and a `YYYY-MM-DD` date, each or null;
 * it never guesses: a malformed amount, an impossible date or an ambiguous match (a pattern finding several
 * different values) gives null and the caller keeps the reply verbatim. Patterns are case-insensitive regex sources
 * with an `amount` or `date` group; the first yielding exactly one valid value wins.
 */

import { daysUntil } from '../time-format.js';

export interface BalancePatterns {
  /** Regex sources whose `amount` group (or first group) is the balance. */
  balance: readonly string[];
  /** Regex sources whose `date` group (or first group) is the active-until date. */
  activeUntil: readonly string[];
}

export interface ParsedBalance {
  /** Whole rupiah, or null when no pattern gave a clean amount. */
  balance: number | null;
  /** `YYYY-MM-DD`, or null when no pattern gave a real date. */
  activeUntil: string | null;
}

// An amount ends where the number ends: `5GB`, `30 hari`, `100 SMS` are quotas, not rupiah.
const QUOTA_UNIT = String.raw`(?:[GMK]B\b|hari|days?\b|menit|mnt\b|minutes?\b|sms\b|detik|poin|points?\b|%|x\b)`;
const AMOUNT = String.raw`(?<amount>\d[\d.,]*)(?![\d.,]*\s*${QUOTA_UNIT})`;
const MONTH_WORD = String.raw`[A-Za-z]{3,9}\.?`;
/** Numeric (D/M/Y, Y-M-D, M/D/Y where D > 12), named month (`28 Agu 2026`, `18-AUG-14`, `23Jan16`), month first. */
const DATE =
  String.raw`(?<date>\d{4}[/.-]\d{1,2}[/.-]\d{1,2}|\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}` +
  String.raw`|\d{1,2}[\s.-]*${MONTH_WORD}[\s.,-]*\d{4}|\d{1,2}[\s.-]*${MONTH_WORD}[\s.,-]*\d{2}(?!\d)` +
  String.raw`|${MONTH_WORD}\s*\d{1,2}(?:st|nd|rd|th)?,?\s*\d{4})`;
/** A word before the amount that says balance; a purchase or a price list (`beli pulsa 10000`) does not. */
const BALANCE_WORD =
  String.raw`\b(?<!(?:beli|isi|transfer|kirim|paket|tarif|harga|bonus|hadiah)\s+)` +
  String.raw`(?:sisa\s+)?(?:pulsa|saldo|balance|sisa|credit)` +
  String.raw`(?:\s*(?:utama|anda|reguler|kamu|is|your)\b)*`;

/** Defaults for the Indonesian operators (field-notes.md, docs/balance-and-transfers.md) and common variants. */
export const DEFAULT_BALANCE_PATTERNS: BalancePatterns = Object.freeze({
  balance: Object.freeze([
    // With "Rp" the word before may be any of the balance words; without it the word is required (an amount alone
    // in a reply is never taken).
    BALANCE_WORD +
      String.raw`\s*(?:adalah|sebesar|saat\s+ini|skrg|sekarang|:|=)?\s*(?:adalah|sebesar|:)?\s*` +
      String.raw`(?:Rp\.?|IDR)?\s*` +
      AMOUNT,
    String.raw`\b(?:Rp\.?|IDR)\s*(?<amount>\d[\d.,]*)`,
  ]),
  activeUntil: Object.freeze([
    String.raw`(?:aktif|masa\s+aktif|berlaku|active|valid(?:ity)?)\s*(?:s\.?\s*/?\s*d\.?|sampai(?:\s+dengan)?|hingga` +
      String.raw`|until|till|to|sd|tgl|:)?\s*(?:tgl\.?\s*|tanggal\s*)?:?\s*` +
      DATE,
    String.raw`(?:exp(?:ired|\.)?|kadaluarsa|tenggang)\s*(?:date|pada|tgl|on|:)?\s*:?\s*` + DATE,
    // XL: `Pulsa 80000 s.d 23Jan16`: "until" right after the balance is the SIM's active-until.
    BALANCE_WORD + String.raw`\s*:?\s*(?:Rp\.?\s*)?\d[\d.,]*\s*,?\s*(?:s\.?\s*/?\s*d\.?|sd)\s*` + DATE,
  ]),
});

const MONTHS: Record<string, number> = {
  jan: 1,
  januari: 1,
  january: 1,
  feb: 2,
  februari: 2,
  february: 2,
  peb: 2,
  pebruari: 2,
  mar: 3,
  maret: 3,
  march: 3,
  apr: 4,
  april: 4,
  mei: 5,
  may: 5,
  jun: 6,
  juni: 6,
  june: 6,
  jul: 7,
  juli: 7,
  july: 7,
  agu: 8,
  agt: 8,
  ags: 8,
  agustus: 8,
  aug: 8,
  august: 8,
  sep: 9,
  sept: 9,
  september: 9,
  okt: 10,
  oktober: 10,
  oct: 10,
  october: 10,
  nov: 11,
  nopember: 11,
  november: 11,
  des: 12,
  desember: 12,
  dec: 12,
  december: 12,
};

/** `24025`, `10.000`, `25.000,-`, `25.000,00`, `1,250,000` -> integer rupiah; anything ambiguous -> null. */
export function parseRupiah(raw: string): number | null {
  let s = raw.trim().replace(/[.,]+$/, (m) => (m === ',' || m === '.' ? '' : m)); // a sentence's full stop
  s = s.replace(/,-$/, '');
  const decimal = /^(.*\d)[.,](\d{2})$/.exec(s);
  // `10.000,00` / `10,000.00` / `5000,00`: a 2-digit tail after a different separator (or after plain digits) is cents.
  if (decimal) {
    const [, whole, cents] = decimal as unknown as [string, string, string];
    const sepInWhole = /[.,]/.exec(whole)?.[0];
    const tailSep = s[whole.length];
    if (sepInWhole === undefined || sepInWhole !== tailSep) {
      if (cents !== '00') return null; // rupiah have no cents in practice; a non-zero fraction is not an amount we trust
      s = whole;
    }
  }
  if (/^\d+$/.test(s)) return safeInt(s);
  const m = /^(\d{1,3})((?:([.,])\d{3})(?:\3\d{3})*)$/.exec(s);
  if (!m) return null;
  return safeInt(s.replace(/[.,]/g, ''));
}

function safeInt(digits: string): number | null {
  const n = Number(digits);
  return Number.isSafeInteger(n) ? n : null;
}

/**
 * `28/08/2026`, `28-08-26`, `2026-08-28`, `28 Agu 2026`, `18-AUG-14`, `23Jan16`, `Aug 28, 2026` -> `2026-08-28`.
 * Numeric dates are day first (the operators' order); month first only where the day cannot be a month (`08/28/2026`).
 * Two-digit years are 20yy. An impossible date or an unknown month name -> null.
 */
export function parseActiveDate(raw: string): string | null {
  const s = raw.trim().replace(/\s+/g, ' ');
  let y: number, mo: number, d: number;
  const iso = /^(\d{4})([/.-])(\d{1,2})\2(\d{1,2})$/.exec(s);
  const numeric = /^(\d{1,2})([/.-])(\d{1,2})\2(\d{2}|\d{4})$/.exec(s);
  const named = /^(\d{1,2})[ .-]*([A-Za-z]{3,9})\.?[ .,-]*(\d{2}|\d{4})$/.exec(s);
  const monthFirst = /^([A-Za-z]{3,9})\.? ?(\d{1,2})(?:st|nd|rd|th)?,? ?(\d{4})$/i.exec(s);
  if (iso) {
    [y, mo, d] = [Number(iso[1]), Number(iso[3]), Number(iso[4])];
  } else if (numeric) {
    const [a, b] = [Number(numeric[1]), Number(numeric[3])];
    y = year(numeric[4] as string);
    // Day first unless that reading is impossible and the month-first one is not (`08/28/2026`).
    [d, mo] = b > 12 && a >= 1 && a <= 12 ? [b, a] : [a, b];
  } else if (named) {
    const month = MONTHS[(named[2] as string).toLowerCase()];
    if (month === undefined) return null;
    [d, mo, y] = [Number(named[1]), month, year(named[3] as string)];
  } else if (monthFirst) {
    const month = MONTHS[(monthFirst[1] as string).toLowerCase()];
    if (month === undefined) return null;
    [d, mo, y] = [Number(monthFirst[2]), month, Number(monthFirst[3])];
  } else {
    return null;
  }
  if (y < 2000 || y > 2199 || mo < 1 || mo > 12 || d < 1) return null;
  const days = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  if (d > days) return null;
  return `${y}-${String(mo).padStart(2, '0')}-${String(d).padStart(2, '0')}`;
}

function year(digits: string): number {
  return digits.length === 2 ? 2000 + Number(digits) : Number(digits);
}

/** Compiles pattern sources once; a bad source throws a SyntaxError naming it (config validation calls this). */
export function compilePatterns(sources: readonly string[]): RegExp[] {
  return sources.map((src) => {
    try {
      return new RegExp(src, 'iu');
    } catch (err) {
      throw new SyntaxError(`invalid pattern ${JSON.stringify(src)}: ${(err as Error).message}`);
    }
  });
}

function firstValue<T>(
  text: string,
  patterns: readonly RegExp[],
  group: string,
  parse: (raw: string) => T | null,
): T | null {
  const flat = text.replace(/\s+/g, ' ');
  for (const re of patterns) {
    const global = new RegExp(re.source, re.flags.includes('g') ? re.flags : re.flags + 'g');
    const values = new Set<T>();
    for (const m of flat.matchAll(global)) {
      const raw = m.groups?.[group] ?? m[1];
      const value = raw === undefined ? null : parse(raw);
      if (value !== null) values.add(value);
    }
    // One value: taken. Several different ones (a menu listing prices): ambiguous, so this pattern says nothing.
    if (values.size === 1) return [...values][0] as T;
  }
  return null;
}

export function parseBalanceReply(text: string, patterns: BalancePatterns = DEFAULT_BALANCE_PATTERNS): ParsedBalance {
  return {
    balance: firstValue(text, compilePatterns(patterns.balance), 'amount', parseRupiah),
    activeUntil: firstValue(text, compilePatterns(patterns.activeUntil), 'date', parseActiveDate),
  };
}

export interface BalanceThresholds {
  /** Warn when the balance is below this many rupiah (0: never). */
  minBalance: number;
  /** Warn when the active period ends within this many days. */
  activeWarnDays: number;
}

export interface BalanceVerdict {
  state: 'ok' | 'warning' | 'unknown';
  reasons: string[];
  hint?: string;
}

/** The warning state of one parsed reply (PURE). */
export function judgeBalance(parsed: ParsedBalance, t: BalanceThresholds, today: string): BalanceVerdict {
  const reasons: string[] = [];
  const hints: string[] = [];
  if (parsed.balance !== null && t.minBalance > 0 && parsed.balance < t.minBalance) {
    reasons.push(`balance Rp ${parsed.balance} is below Rp ${t.minBalance}`);
    hints.push('top up the SIM');
  }
  if (parsed.activeUntil !== null) {
    const left = daysUntil(parsed.activeUntil, today);
    if (left < 0) {
      reasons.push(`active period ended on ${parsed.activeUntil}`);
      hints.push('the SIM no longer receives transfers: top up now, before the number is recycled');
    } else if (left <= t.activeWarnDays) {
      reasons.push(`active period ends on ${parsed.activeUntil} (${left} day${left === 1 ? '' : 's'} left)`);
      hints.push('top up to extend the active period (a lapsed centre SIM stops receiving transfers)');
    }
  }
  if (reasons.length > 0) return { state: 'warning', reasons, hint: hints.join('; ') };
  if (parsed.balance === null && parsed.activeUntil === null) {
    return {
      state: 'unknown',
      reasons: ['the reply matched no balance or date pattern (kept verbatim)'],
      hint: 'add a pattern under balance.patterns in the config',
    };
  }
  return { state: 'ok', reasons: [] };
}
