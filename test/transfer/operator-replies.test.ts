/**
 * The operator's replies on the test-transfer path (transfer/operator-replies.ts): every fixture's wording gets its
 * verdict (each refusal with its reason), and the runner acts on it: a reply that matches nothing known ends the run
 * `unknown` (never a success) unless the centre's confirmation then arrives, and nothing more is sent after an SMS
 * not understood.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ModemOps, UssdOutcome } from '../../src/ops/modem-ops.js';
import { renderFlow, DEFAULT_FLOWS } from '../../src/transfer/flows.js';
import { judgeReply } from '../../src/transfer/operator-replies.js';
import { runTransfer } from '../../src/transfer/runner.js';

interface Fixture {
  operator: string;
  kind: string;
  text: string;
  verdict: string;
  reason?: string;
  source: string;
}

const fixtures = (
  JSON.parse(readFileSync(new URL('../fixtures/transfer/operator-replies.json', import.meta.url), 'utf8')) as {
    replies: Fixture[];
  }
).replies;

describe('operator replies: the verdict for each known wording', () => {
  it.each(fixtures.map((f) => [`${f.operator} ${f.kind}: ${f.text}`, f] as const))('%s', (_name, f) => {
    expect(f.source).not.toBe('');
    const v = judgeReply(f.text);
    expect(v.kind).toBe(f.verdict);
    if (f.reason) expect(v).toEqual({ kind: 'refused', reason: f.reason });
  });

  it('a refusal wins over a confirmation word in the same reply', () => {
    expect(judgeReply('Transfer pulsa tidak berhasil.')).toMatchObject({ kind: 'refused' });
    expect(judgeReply('TRANSFER PULSA BERHASIL')).toEqual({ kind: 'confirmed' });
  });
});

/** A sending modem whose USSD answers are scripted (the last is the operator's final word). */
function scriptedSender(replies: UssdOutcome[], sent: string[]): ModemOps {
  let i = 0;
  const next = async (what: string): Promise<UssdOutcome> => {
    sent.push(what);
    return replies[i++]!;
  };
  return {
    name: 'sender',
    path: 'direct',
    ussdOpen: (code: string) => next(code),
    ussdReply: (text: string) => next(text),
    ussdCancel: async () => undefined,
  } as unknown as ModemOps;
}

const menu: UssdOutcome = {
  status: 1,
  statusText: 'USSD needs further input',
  text: 'Kirim pulsa Rp10000 ke 081200000001? 1.Ya 2.Tidak',
  raw: '',
};

describe('the runner on what the operator says', () => {
  it('a final reply that matches nothing known: the run ends unknown, shown verbatim, never a success', async () => {
    const sent: string[] = [];
    const report = await runTransfer({
      from: scriptedSender(
        [menu, { status: 0, statusText: 'USSD done', text: 'Permintaan Anda sedang diproses. Terima kasih.', raw: '' }],
        sent,
      ),
      steps: renderFlow(DEFAULT_FLOWS.telkomsel!, { to: '081200000001', amount: 10_000 }),
      amount: 10_000,
      confirmTimeoutMs: 1000,
    });
    expect(report.outcome).toBe('unknown');
    expect(report.steps[0]).toMatchObject({
      status: 'unknown',
      sent: 'sent',
      error: expect.stringContaining('Permintaan Anda sedang diproses'),
    });
    expect(report.sent).toEqual(['USSD *858*081200000001*10000# on sender', 'USSD answer "1" on sender']);
  });

  it('a refusal fails the step with its reason', async () => {
    const report = await runTransfer({
      from: scriptedSender(
        [
          menu,
          {
            status: 0,
            statusText: 'USSD done',
            text: 'Maaf, Anda telah mencapai batas maksimal transfer pulsa hari ini.',
            raw: '',
          },
        ],
        [],
      ),
      steps: renderFlow(DEFAULT_FLOWS.telkomsel!, { to: '081200000001', amount: 10_000 }),
      amount: 10_000,
      confirmTimeoutMs: 1000,
    });
    expect(report.outcome).toBe('failed');
    expect(report.steps[0]!.error).toBe(
      'the operator refused (a transfer limit was reached): Maaf, Anda telah mencapai batas maksimal transfer pulsa hari ini.',
    );
  });

  it('a confirmation: the step is ok', async () => {
    const report = await runTransfer({
      from: scriptedSender(
        [
          menu,
          { status: 0, statusText: 'USSD done', text: 'Transfer pulsa Rp10000 ke 081200000001 berhasil.', raw: '' },
        ],
        [],
      ),
      steps: renderFlow(DEFAULT_FLOWS.telkomsel!, { to: '081200000001', amount: 10_000 }),
      amount: 10_000,
      confirmTimeoutMs: 1000,
    });
    expect(report.outcome).toBe('sent');
  });
});
