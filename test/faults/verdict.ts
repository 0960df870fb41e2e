/**
 * What a trial run proves, from what the receiver recorded. PURE.
 * - delivered: an accepted SMS has at least one POST answered 200 whose body is exactly {sender, message} of it;
 *   `lost` counts those that have none.
 * - duplicates by key: POSTs beyond the first for one Idempotency-Key (at-least-once delivery allows them, but every
 *   one must carry the same body: a key with two bodies is a problem).
 * - one SMS under two keys is a problem (the receiver could not deduplicate it).
 * - wrong texts: POSTs that match no SMS sent, from a filtered-out sender, or not JSON {sender, message}.
 */
import type { Post } from '../support/receiver.js';
import type { TrialSms } from './workload.js';

export interface RunCounts {
  sms: number;
  lost: number;
  duplicatesByKey: number;
  wrongTexts: number;
  problems: string[];
}

const contentKey = (sender: string, message: string): string => `${sender}\u0000${message}`;

export function judge(sent: readonly TrialSms[], posts: readonly Post[]): RunCounts {
  const problems: string[] = [];
  const expected = new Map<string, TrialSms>();
  const filtered = new Set<string>();
  for (const s of sent) {
    if (s.accepted) expected.set(contentKey(s.from, s.text), s);
    else filtered.add(contentKey(s.from, s.text));
  }
  const delivered = new Set<string>();
  const byKey = new Map<string, Post[]>();
  const keysOfContent = new Map<string, Set<string>>();
  let wrongTexts = 0;
  for (const p of posts) {
    let body: unknown;
    try {
      body = JSON.parse(p.body.toString('utf8'));
    } catch {
      wrongTexts++;
      problems.push(`a POST body is not JSON: ${p.body.toString('utf8').slice(0, 60)}`);
      continue;
    }
    const b = body as { sender?: unknown; message?: unknown };
    if (typeof b.sender !== 'string' || typeof b.message !== 'string' || Object.keys(b).length !== 2) {
      wrongTexts++;
      problems.push(`a POST body is not {sender, message}: ${p.body.toString('utf8').slice(0, 60)}`);
      continue;
    }
    const ck = contentKey(b.sender, b.message);
    if (!expected.has(ck)) {
      wrongTexts++;
      problems.push(
        filtered.has(ck)
          ? `an SMS from a filtered-out sender was POSTed (${b.sender})`
          : `a POST matches no SMS sent: ${JSON.stringify(b).slice(0, 100)}`,
      );
      continue;
    }
    if (p.answer === '200') delivered.add(ck);
    const key = p.key ?? '(no Idempotency-Key)';
    if (p.key === undefined) problems.push(`a POST without Idempotency-Key (${b.sender})`);
    byKey.set(key, [...(byKey.get(key) ?? []), p]);
    keysOfContent.set(ck, (keysOfContent.get(ck) ?? new Set()).add(key));
  }
  let duplicatesByKey = 0;
  for (const [key, group] of byKey) {
    duplicatesByKey += group.length - 1;
    if (group.some((p) => !p.body.equals(group[0]!.body)))
      problems.push(`Idempotency-Key ${key} carried different bodies`);
  }
  for (const [ck, keys] of keysOfContent) {
    if (keys.size > 1)
      problems.push(
        `one SMS was POSTed under ${keys.size} Idempotency-Keys (${ck.split('\u0000')[0]}: ${ck.split('\u0000')[1]!.slice(0, 40)}...)`,
      );
  }
  const lost = [...expected.keys()].filter((k) => !delivered.has(k));
  for (const k of lost.slice(0, 3))
    problems.push(`lost: ${k.split('\u0000')[0]}: ${JSON.stringify(k.split('\u0000')[1]!.slice(0, 50))}`);
  return { sms: sent.length, lost: lost.length, duplicatesByKey, wrongTexts, problems };
}
