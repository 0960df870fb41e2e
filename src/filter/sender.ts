/**
 * Sender filter (PURE): is an SMS originator one of the operator senders we forward? normalizeSender trims, lowercases,
 * drops a leading '+' and makes '+62812..', '62812..' and '0812..' equal; short codes and names compare
 * case-insensitively; '812..' is not rewritten (it could be a long short code). '*' accepts all; an EMPTY list
 * accepts nothing (fail closed); a blank entry throws ConfigError.
 */
import { ConfigError } from '../errors.js';

const PHONE_LIKE = /^\+?[0-9][0-9 ().-]*$/;

export function normalizeSender(s: string): string {
  const trimmed = s.trim();
  if (PHONE_LIKE.test(trimmed)) {
    const digits = trimmed.replace(/[^0-9]/g, '');
    // Indonesian national form: one trunk '0' then the subscriber number (not '00', an international prefix).
    if (/^0[1-9]/.test(digits) && digits.length >= 8) return `62${digits.slice(1)}`;
    return digits;
  }
  return trimmed.toLowerCase().replace(/^\+/, '');
}

export interface SenderDecision {
  accept: boolean;
  /** The accepted entry (as configured) that matched. */
  rule?: string;
}

export type SenderFilter = (sender: string) => SenderDecision;

export function createSenderFilter(accepted: readonly string[]): SenderFilter {
  const problems: string[] = [];
  const rules = new Map<string, string>();
  let acceptAll: string | undefined;
  accepted.forEach((entry, i) => {
    if (typeof entry !== 'string' || entry.trim() === '') {
      problems.push(
        `accepted senders[${i}]: expected a sender (number, short code, name or '*'), got ${JSON.stringify(entry)}`,
      );
      return;
    }
    if (entry.trim() === '*') acceptAll ??= entry;
    else if (!rules.has(normalizeSender(entry))) rules.set(normalizeSender(entry), entry);
  });
  if (problems.length > 0) throw new ConfigError(problems);
  return (sender: string): SenderDecision => {
    if (acceptAll !== undefined) return { accept: true, rule: acceptAll };
    const rule = rules.get(normalizeSender(sender));
    return rule === undefined ? { accept: false } : { accept: true, rule };
  };
}
