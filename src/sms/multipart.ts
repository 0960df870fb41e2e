/**
 * Multipart (concatenated SMS) reassembly, PURE: no storage, no clock. The caller keeps the parts (spool area
 * 'parts') and asks these functions what to do with them.
 *
 * Invariants:
 * - `joinParts` is deterministic: the same set of parts gives the same text in any arrival order. A sequence that
 *   arrives twice counts once (the first copy wins; a copy with different text is listed in `conflicting`).
 *   Sequences outside 1..total are left out and listed in `ignored`.
 * - A missing part is never silently dropped: its place holds `missingPartMarker(n, total)`, visible to the reader.
 * - Halves of a surrogate pair split across parts meet again here; a half whose partner is missing becomes U+FFFD.
 * - `partGroupKey` puts every component through encodeURIComponent, so no two different groups share a key. It is
 *   a map key, not a file name: use `partRecordId` (identity.ts) for names.
 */
import type { ConcatInfo } from './types.js';
import { replaceLoneSurrogates } from './ucs2.js';

/** Text of the gap left by a part that never arrived, e.g. `[…missing part 2/3…]`. */
export function missingPartMarker(sequence: number, total: number): string {
  return `[…missing part ${sequence}/${total}…]`;
}
/** Every gap marker starts with this; lets a reader (or a test) spot an incomplete message. */
export const MISSING_PART_PREFIX = '[…missing part ';

export interface JoinedMessage {
  text: string;
  /** Sequences present, ascending, each once. */
  received: number[];
  /** Sequences absent, ascending. */
  missing: number[];
  complete: boolean;
  /** Sequences that arrived more than once with different texts (the first copy was used). */
  conflicting: number[];
  /** Sequences outside 1..total that were left out. */
  ignored: number[];
}

export function joinParts(parts: ReadonlyArray<{ sequence: number; text: string }>, total: number): JoinedMessage {
  const bySequence = new Map<number, string>();
  const conflicting = new Set<number>();
  const ignored = new Set<number>();
  for (const part of parts) {
    if (!Number.isInteger(part.sequence) || part.sequence < 1 || part.sequence > total) {
      ignored.add(part.sequence);
      continue;
    }
    const seen = bySequence.get(part.sequence);
    if (seen === undefined) bySequence.set(part.sequence, part.text);
    else if (seen !== part.text) conflicting.add(part.sequence);
  }
  const received: number[] = [];
  const missing: number[] = [];
  let text = '';
  for (let seq = 1; seq <= total; seq++) {
    const t = bySequence.get(seq);
    if (t === undefined) {
      missing.push(seq);
      text += missingPartMarker(seq, total);
    } else {
      received.push(seq);
      text += t;
    }
  }
  return {
    text: replaceLoneSurrogates(text),
    received,
    missing,
    complete: total >= 1 && missing.length === 0,
    conflicting: [...conflicting].sort((a, b) => a - b),
    ignored: [...ignored].sort((a, b) => a - b),
  };
}

/** Originator as used in group keys: trimmed, upper case, without a leading '+'. */
function keyOriginator(originator: string): string {
  return originator.trim().toUpperCase().replace(/^\+/, '');
}

/** Stable key of the message a part belongs to: SIM + originator + reference bits + reference + total. */
export function partGroupKey(simKey: string, originator: string, c: ConcatInfo): string {
  return [simKey, keyOriginator(originator), `r${c.referenceBits}`, String(c.reference), String(c.total)]
    .map((s) => encodeURIComponent(s))
    .join('|');
}

/**
 * True once a group whose first part arrived at `firstReceivedAtMs` has waited `timeoutMs` or longer. A clock that
 * went backwards (now < first) does not expire the group.
 */
export function isExpired(firstReceivedAtMs: number, nowMs: number, timeoutMs: number): boolean {
  return nowMs - firstReceivedAtMs >= timeoutMs;
}
