/** The fault suite's judge (verdict.ts) must see each kind of failure it claims to count. */
import { describe, expect, it } from 'vitest';
import type { Post } from '../support/receiver.js';
import { judge } from './verdict.js';
import type { TrialSms } from './workload.js';
import { makeWorkload } from './workload.js';

const sms = (from: string, text: string, accepted = true): TrialSms => ({ from, text, concatRef: 1, accepted });
const post = (sender: string, message: string, key: string, answer = '200'): Post => ({
  body: Buffer.from(JSON.stringify({ sender, message })),
  key,
  at: 0,
  answer,
});

describe('judge', () => {
  const sent = [sms('858', 'satu'), sms('TELKOMSEL', 'dua 🙏'), sms('+6281299990000', 'pribadi', false)];

  it('all delivered once: no problem', () => {
    expect(judge(sent, [post('858', 'satu', 'k1'), post('TELKOMSEL', 'dua 🙏', 'k2')])).toEqual({
      sms: 3,
      lost: 0,
      duplicatesByKey: 0,
      wrongTexts: 0,
      problems: [],
    });
  });

  it('a retried POST with the same key and body is a duplicate by key, not a problem; only a 200 delivers', () => {
    const r = judge(sent, [
      post('858', 'satu', 'k1', '500'),
      post('858', 'satu', 'k1'),
      post('TELKOMSEL', 'dua 🙏', 'k2', '500'),
    ]);
    expect(r.duplicatesByKey).toBe(1);
    expect(r.lost).toBe(1);
    expect(r.problems).toEqual([expect.stringMatching(/^lost: TELKOMSEL/)]);
  });

  it('names a key with two bodies, one SMS under two keys, a changed text, a filtered sender POSTed', () => {
    const r = judge(sent, [
      post('858', 'satu', 'k1'),
      { ...post('858', 'satu', 'k1'), body: Buffer.from('{"message":"satu","sender":"858"}') },
      post('TELKOMSEL', 'dua 🙏', 'k2'),
      post('TELKOMSEL', 'dua 🙏', 'k3'),
      post('TELKOMSEL', 'dua ??', 'k4'),
      post('+6281299990000', 'pribadi', 'k5'),
    ]);
    expect(r.wrongTexts).toBe(2);
    expect(r.problems.join('\n')).toMatch(/k1 carried different bodies/);
    expect(r.problems.join('\n')).toMatch(/under 2 Idempotency-Keys/);
    expect(r.problems.join('\n')).toMatch(/matches no SMS sent/);
    expect(r.problems.join('\n')).toMatch(/filtered-out sender/);
  });
});

describe('makeWorkload', () => {
  it('is reproducible from its seed, with unique texts and concatenation references', () => {
    const a = makeWorkload(7, 100, 't');
    expect(makeWorkload(7, 100, 't')).toEqual(a);
    expect(new Set(a.map((s) => s.text)).size).toBe(100);
    expect(new Set(a.map((s) => s.concatRef)).size).toBe(100);
    expect(a.some((s) => !s.accepted)).toBe(true);
    expect(a.some((s) => /[^\u0000-\u007f€]/.test(s.text))).toBe(true); // UCS2 content
    expect(a.some((s) => s.text.length > 160)).toBe(true); // multipart
  });
});
