/**
 * Multipart (concatenated SMS) reassembly, PURE: the caller keeps the parts and asks what to do with them.
 * joinParts is deterministic in any arrival order; a duplicate sequence counts once; a missing part is never dropped
 * silently (missingPartMarker stands in its place). partGroupKey is a map key, not a file name (partRecordId is).
 * clusterParts splits a family (SIM, sender, reference, total) into messages so parts of two messages never mix: a
 * part joins a message by exact SMSC stamp, or within MAX_PART_SPREAD_MS when the family shows no reuse; when two
 * messages fit equally it joins neither (it is forwarded alone, marked incomplete).
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

/**
 * Parts of one message are stamped by the SMSC within this of each other (they are submitted back to back: the same
 * second, or one or two apart). Two SMS of one sender a minute apart that share a reference are two messages.
 */
export const MAX_PART_SPREAD_MS = 5_000;

/** What clustering needs to know of a part. */
export interface ClusterablePart {
  readonly id: string;
  readonly sequence: number;
  /** Service-centre time stamp, epoch ms. */
  readonly scTimestampMs: number;
  /** TP-DCS alphabet; undefined (records from before the field) fits any. */
  readonly encoding?: string | undefined;
}

function fitsIn<T extends ClusterablePart>(cluster: readonly T[], p: T): boolean {
  return cluster.every(
    (q) =>
      q.sequence !== p.sequence && (q.encoding === undefined || p.encoding === undefined || q.encoding === p.encoding),
  );
}

/**
 * How well `p` fits a message: 2 = a part with its exact time stamp, 1 = within MAX_PART_SPREAD_MS (only while the
 * family shows no reuse: `byTime`), 0 = not at all.
 */
function scoreIn<T extends ClusterablePart>(cluster: readonly T[], p: T, byTime: boolean): number {
  if (cluster.length === 0 || !fitsIn(cluster, p)) return 0;
  if (cluster.some((q) => q.scTimestampMs === p.scTimestampMs)) return 2;
  if (!byTime) return 0;
  return cluster.some((q) => Math.abs(q.scTimestampMs - p.scTimestampMs) <= MAX_PART_SPREAD_MS) ? 1 : 0;
}

export interface ClusterOptions {
  /** Service-centre time stamps (epoch ms) of parts of this family already joined (tombstones): evidence of reuse. */
  seenStampsMs?: readonly number[];
}

/**
 * Splits the parts of one family into messages (see the header). Each message's parts keep their input order.
 * A greedy pass in time-stamp order builds the messages; then a part that fits another message at least as well as
 * its own (an ambiguity the greedy pass could not see yet) is taken out to wait alone, until nothing changes.
 */
export function clusterParts<T extends ClusterablePart>(parts: readonly T[], opts: ClusterOptions = {}): T[][] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const t of [...parts.map((p) => p.scTimestampMs), ...(opts.seenStampsMs ?? [])]) {
    lo = Math.min(lo, t);
    hi = Math.max(hi, t);
  }
  const byTime = !(hi - lo > MAX_PART_SPREAD_MS); // a family spread wider than one message can be was reused
  const score = (c: readonly T[], p: T) => scoreIn(c, p, byTime);
  const sorted = [...parts].sort(
    (a, b) => a.scTimestampMs - b.scTimestampMs || a.sequence - b.sequence || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
  let clusters: T[][] = [];
  for (const p of sorted) {
    const scored = clusters.map((c) => score(c, p));
    const best = Math.max(0, ...scored);
    const target =
      best > 0 && scored.filter((x) => x === best).length === 1 ? clusters[scored.indexOf(best)] : undefined;
    if (target) target.push(p);
    else clusters.push([p]);
  }
  for (let changed = true; changed;) {
    changed = false;
    for (const c of clusters) {
      if (c.length < 2) continue;
      const loose = c.find((p) => {
        const own = score(
          c.filter((q) => q !== p),
          p,
        );
        return clusters.some((other) => other !== c && score(other, p) >= own);
      });
      if (loose) {
        clusters = [...clusters.map((x) => (x === c ? x.filter((q) => q !== loose) : x)), [loose]];
        changed = true;
        break;
      }
    }
  }
  const order = new Map(parts.map((p, i) => [p.id, i]));
  return clusters
    .map((c) => c.sort((a, b) => order.get(a.id)! - order.get(b.id)!))
    .sort((a, b) => order.get(a[0]!.id)! - order.get(b[0]!.id)!);
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
 * went backwards (now < first) does not expire the group. Pass a monotonic clock (the receiver does): a wall clock
 * that jumps forward (NTP on a Pi without RTC) would expire every open group at once.
 */
export function isExpired(firstReceivedAtMs: number, nowMs: number, timeoutMs: number): boolean {
  return nowMs - firstReceivedAtMs >= timeoutMs;
}
