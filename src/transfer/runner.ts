/**
 * Executes a rendered transfer flow (flows.ts) on the sending modem through ModemOps and, when the centre SIM is in a
 * modem of this bridge, waits there for the confirmation SMS. Steps run in order; the first failure ends the run.
 * Credit safety: each step records whether what it sent left the modem (`sent`, `not-sent`, `unknown`), so an
 * interrupted run is never repeated blindly. The operator's replies are judged (operator-replies.ts): a refusal fails
 * the step with its reason; a reply that matches nothing known ends the run `unknown`, never a success, unless the
 * confirmation SMS then arrives on a centre SIM of this bridge. Replies are always shown verbatim.
 */
import type { TransferOps, UssdOutcome } from '../ops/modem-ops.js';
import { errorMessage } from '../errors.js';
import { parseOperatorSms } from '../sms/operator-facts.js';
import { describeStep, extractToken, type FlowStep } from './flows.js';
import { judgeReply } from './operator-replies.js';
import {
  realClock,
  SmsWatch,
  TransferInterrupted,
  TransferTimeout,
  type DeliveryAnswer,
  type SeenSms,
  type WatchClock,
} from './sms-watch.js';

export type SentState = 'sent' | 'not-sent' | 'unknown';

export interface StepReport {
  /** 1-based. */
  step: number;
  kind: FlowStep['kind'] | 'confirm';
  description: string;
  status: 'ok' | 'failed' | 'timeout' | 'interrupted' | 'unknown';
  /** Milliseconds since the run started, at the step's start, and its duration. */
  startMs: number;
  ms: number;
  /** What the network answered (USSD texts) or the SMS that came. */
  replies: string[];
  sent: SentState;
  error?: string;
}

export interface Confirmation {
  sender: string;
  text: string;
  spoolId?: string;
  webhook?: DeliveryAnswer;
}

export interface TransferReport {
  outcome: 'confirmed' | 'sent' | 'failed' | 'timeout' | 'interrupted' | 'unknown';
  steps: StepReport[];
  /** Human lines: what left the modem (with `unknown` ones marked), for the interruption note. */
  sent: string[];
  confirmation?: Confirmation;
  totalMs: number;
}

export interface RunOptions {
  from: TransferOps;
  steps: FlowStep[];
  amount: number;
  /** The sending SIM's number (any form), to match the confirmation; optional. */
  fromNumber?: string;
  /** The centre SIM's modem in this bridge, if any: the confirmation is awaited there. */
  centre?: TransferOps;
  confirmTimeoutMs: number;
  /**
   * The confirmation must name the sending SIM's number (a canary on a centre SIM that customers also send to: their
   * transfer of the same amount is not this run's confirmation). Default: a confirmation without a number is taken.
   */
  strictConfirmation?: boolean;
  /** How long to wait for the webhook's answer after the SMS was spooled (daemon path). Default 30 s. */
  webhookTimeoutMs?: number;
  ussdTimeoutMs?: number;
  signal?: AbortSignal;
  clock?: WatchClock;
  pollMs?: number;
  onStep?: (s: StepReport) => void;
}

/** A reply that matched nothing known: the step ends `unknown` (see the header). */
class UnknownReply extends Error {}

function digits62(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  const d = raw.replace(/\D/g, '');
  return d.startsWith('0') ? `62${d.slice(1)}` : d;
}

function sameSender(a: string, b: string): boolean {
  const x = a.replace(/^\+/, '').toUpperCase();
  const y = b.replace(/^\+/, '').toUpperCase();
  return x === y || digits62(x) === digits62(y);
}

function ussdLine(r: UssdOutcome): string {
  return `[${r.statusText}] ${r.text}`.trim();
}

export async function runTransfer(o: RunOptions): Promise<TransferReport> {
  const clock = o.clock ?? realClock;
  const t0 = clock.now();
  const steps: StepReport[] = [];
  const sent: string[] = [];
  const fromName = o.from.name;
  const fromWatch = new SmsWatch(o.from, clock, o.pollMs);
  const centreWatch = o.centre ? new SmsWatch(o.centre, clock, o.pollMs) : undefined;
  const needsFromWatch = o.steps.some((s) => s.kind === 'await-sms');
  let token: string | undefined;
  let outcome: TransferReport['outcome'] = 'sent';
  let confirmation: Confirmation | undefined;

  const finish = (r: StepReport): StepReport => {
    steps.push(r);
    o.onStep?.(r);
    return r;
  };
  const interrupted = () => o.signal?.aborted === true;

  try {
    if (needsFromWatch) await fromWatch.start();
    if (centreWatch) await centreWatch.start();

    for (const [i, step] of o.steps.entries()) {
      const startMs = clock.now() - t0;
      const description = describeStep(step, fromName).replace('{token}', token ?? '{token}');
      const base = { step: i + 1, kind: step.kind, description, startMs, replies: [] as string[] };
      if (interrupted()) {
        finish({ ...base, status: 'interrupted', ms: 0, sent: 'not-sent', error: 'interrupted before this step' });
        outcome = 'interrupted';
        break;
      }
      let sentState: SentState = 'not-sent';
      try {
        if (step.kind === 'ussd') {
          sentState = 'unknown';
          let r = await o.from.ussdOpen(step.code, o.ussdTimeoutMs ? { timeoutMs: o.ussdTimeoutMs } : {});
          sentState = 'sent';
          sent.push(`USSD ${step.code} on ${fromName}`);
          base.replies.push(ussdLine(r));
          for (const answer of step.replies) {
            if (r.status !== 1)
              throw new Error(
                `the network ended the session (${r.statusText}) before the answer ${JSON.stringify(answer)} could be sent`,
              );
            if (interrupted()) throw new TransferInterrupted(`interrupted before answering ${JSON.stringify(answer)}`);
            sentState = 'unknown';
            r = await o.from.ussdReply(answer, o.ussdTimeoutMs ? { timeoutMs: o.ussdTimeoutMs } : {});
            sentState = 'sent';
            sent.push(`USSD answer ${JSON.stringify(answer)} on ${fromName}`);
            base.replies.push(ussdLine(r));
          }
          if (r.status === 1) await o.from.ussdCancel();
          if (r.status >= 2) throw new Error(`the network answered ${r.statusText}${r.text ? `: ${r.text}` : ''}`);
          const verdict = judgeReply(r.text);
          if (verdict.kind === 'refused') throw new Error(`the operator refused (${verdict.reason}): ${r.text}`);
          if (verdict.kind !== 'confirmed')
            throw new UnknownReply(
              `the operator's reply says neither that the transfer went nor that it was refused: ${r.text}`,
            );
        } else if (step.kind === 'sms') {
          if (step.usesToken && token === undefined) throw new Error('no token was captured for {token}');
          const text = step.text.replace('{token}', token ?? '');
          sentState = 'unknown';
          await o.from.smsSend(step.to, text);
          sentState = 'sent';
          sent.push(`SMS "${text}" to ${step.to} from ${fromName}`);
        } else {
          const sms = await fromWatch.next(
            (s) => sameSender(s.sender, step.from),
            step.timeoutSec * 1000,
            `SMS from ${step.from} on ${fromName} (step ${i + 1})`,
            o.signal,
          );
          base.replies.push(sms.text);
          const verdict = judgeReply(sms.text);
          if (verdict.kind === 'refused') throw new Error(`the operator refused (${verdict.reason}): ${sms.text}`);
          if (step.token) {
            token = extractToken(step.token, sms.text);
            if (token === undefined)
              throw new Error(`the SMS from ${step.from} carries no token matching /${step.token}/: ${sms.text}`);
          } else if (verdict.kind === 'unknown') {
            // Nothing more is sent on a message not understood (a `Y` could confirm something else).
            throw new UnknownReply(
              `the operator's SMS is not a known question or confirmation; nothing more was sent: ${sms.text}`,
            );
          }
        }
        finish({
          ...base,
          status: 'ok',
          ms: clock.now() - t0 - startMs,
          sent: step.kind === 'await-sms' ? 'not-sent' : sentState,
        });
      } catch (err) {
        // The USSD broker refuses the code while another owner holds the modem's session, before anything is sent
        // (ControlError `busy`): nothing of this step left the modem when its code got no reply yet.
        const refusedUnsent = step.kind === 'ussd' && base.replies.length === 0;
        if (sentState === 'unknown' && refusedUnsent && (err as { code?: unknown }).code === 'busy')
          sentState = 'not-sent';
        const status =
          err instanceof TransferTimeout
            ? 'timeout'
            : err instanceof TransferInterrupted || interrupted()
              ? 'interrupted'
              : err instanceof UnknownReply
                ? 'unknown'
                : 'failed';
        if (sentState === 'unknown')
          sent.push(
            `${step.kind === 'sms' ? 'SMS' : 'USSD'} step ${i + 1} on ${fromName} (MAY have been sent: the outcome is unknown)`,
          );
        finish({ ...base, status, ms: clock.now() - t0 - startMs, sent: sentState, error: errorMessage(err) });
        outcome = status;
        break;
      }
    }

    // The confirmation SMS decides when the centre SIM is in this bridge, also after a reply not understood.
    const lastUnknownUssd = outcome === 'unknown' && steps.at(-1)?.kind === 'ussd' && steps.at(-1)?.sent === 'sent';
    if ((outcome === 'sent' || lastUnknownUssd) && centreWatch && o.centre) {
      const startMs = clock.now() - t0;
      const from62 = digits62(o.fromNumber);
      const what = `the confirmation SMS (Rp ${o.amount}${from62 ? ` from ${from62}` : ''}) on ${o.centre.name}`;
      const base = {
        step: steps.length + 1,
        kind: 'confirm' as const,
        description: `wait up to ${Math.round(o.confirmTimeoutMs / 1000)} s for ${what}`,
        startMs,
        sent: 'not-sent' as const,
      };
      try {
        const sms = await centreWatch.next(
          (s) => isConfirmation(s, o.amount, from62, o.strictConfirmation === true),
          o.confirmTimeoutMs,
          what,
          o.signal,
        );
        confirmation = { sender: sms.sender, text: sms.text, ...(sms.spoolId ? { spoolId: sms.spoolId } : {}) };
        if (sms.spoolId) {
          const answer = await centreWatch.delivery(sms.spoolId, o.webhookTimeoutMs ?? 30_000, o.signal);
          if (answer) confirmation.webhook = answer;
        }
        finish({ ...base, status: 'ok', ms: clock.now() - t0 - startMs, replies: [sms.text] });
        outcome = 'confirmed';
      } catch (err) {
        const status = err instanceof TransferTimeout ? 'timeout' : 'interrupted';
        finish({ ...base, status, ms: clock.now() - t0 - startMs, replies: [], error: errorMessage(err) });
        outcome = lastUnknownUssd && status === 'timeout' ? 'unknown' : status;
      }
    }
  } finally {
    fromWatch.stop();
    centreWatch?.stop();
  }
  return { outcome, steps, sent, ...(confirmation ? { confirmation } : {}), totalMs: clock.now() - t0 };
}

/** An operator SMS that credits `amount` (from `from62`, when known). */
export function isConfirmation(s: SeenSms, amount: number, from62: string | undefined, strict = false): boolean {
  const f = parseOperatorSms(s.text);
  if (strict) return f.amount === amount && from62 !== undefined && f.senderNumber === from62;
  return f.amount === amount && (from62 === undefined || f.senderNumber === undefined || f.senderNumber === from62);
}
