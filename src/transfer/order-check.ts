/**
 * A reseller order's answer checked against what was asked, before anything is dialled (PURE). The order must name a
 * centre number; an amount it names must be the one asked; its code must fit the operator's flow with that centre and
 * that amount (the flow's USSD template, any number form), or, for a flow of SMS, must not be a USSD code nor name
 * another number. What is then sent is the flow rendered from the checked values, never the answer's string as given.
 * An answer that fails any check sends nothing; every problem is named, with what was asked beside what came.
 */
import { nationalNumber, renderFlow, FlowError, type FlowStep, type TransferFlow } from './flows.js';

export interface OrderAnswer {
  /** The code the order says to dial (or to send, for a flow of SMS). */
  code: string;
  /** The centre (collecting) number the order names. */
  centreNumber?: string | undefined;
  /** The credit amount the order names, if it names one. */
  amount?: string | undefined;
}

export type OrderCheck = { ok: true; centre: string; steps: FlowStep[] } | { ok: false; problems: string[] };

const NUMBER = String.raw`(\+?62\d{8,13}|0\d{8,13})`;

/** Whole rupiah from an API's amount ("10000", "10.000", "Rp 10,000"); undefined when it is not one. */
export function rupiah(raw: string): number | undefined {
  const s = raw.trim().replace(/^rp\.?\s*/i, '');
  if (/^\d{1,3}([.,]\d{3})+$/.test(s)) return Number(s.replace(/[.,]/g, ''));
  if (/^\d+(\.0+)?$/.test(s)) return Math.trunc(Number(s));
  return undefined;
}

/** The {to} and {amount} a code carries when it fits `template` (`*858*{to}*{amount}#`); undefined when it does not. */
export function matchTemplate(template: string, code: string): { to?: string; amount?: string } | undefined {
  const names: string[] = [];
  const source = template.replace(
    /\{([a-zA-Z0-9_]*)\}|([^{]+)/g,
    (_, name: string | undefined, literal: string | undefined) => {
      if (literal !== undefined) return literal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      names.push(name!);
      return name === 'amount' ? String.raw`(\d+)` : name === 'to' || name === 'to62' ? NUMBER : '(.+?)';
    },
  );
  const m = new RegExp(`^${source}$`).exec(code.trim());
  if (!m) return undefined;
  const out: { to?: string; amount?: string } = {};
  names.forEach((name, i) => {
    const v = m[i + 1]!;
    if (name === 'amount') out.amount = v;
    if (name === 'to' || name === 'to62') out.to = v;
  });
  return out;
}

const sameNumber = (a: string, b: string): boolean => {
  try {
    return nationalNumber(a) === nationalNumber(b);
  } catch {
    return false;
  }
};

/** Checks an order's answer against the amount asked and the operator's flow (see the header). */
export function checkOrderAnswer(flow: TransferFlow, asked: { amount: number }, answer: OrderAnswer): OrderCheck {
  const problems: string[] = [];
  let centre: string | undefined;
  if (answer.centreNumber === undefined)
    problems.push('the order names no centre number: where the credit would go cannot be checked');
  else {
    try {
      centre = nationalNumber(answer.centreNumber);
    } catch {
      problems.push(
        `the order's centre number ${JSON.stringify(answer.centreNumber)} is not an Indonesian mobile number`,
      );
    }
  }
  if (answer.amount !== undefined) {
    const amount = rupiah(answer.amount);
    if (amount !== asked.amount)
      problems.push(`the order's amount is ${JSON.stringify(answer.amount)}, Rp ${asked.amount} was asked`);
  }
  const ussd = flow.steps.find((s) => s.kind === 'ussd');
  const code = answer.code.trim();
  if (ussd?.kind === 'ussd') {
    const fit = matchTemplate(ussd.code, code);
    if (!fit)
      problems.push(`the order's code ${JSON.stringify(code)} does not fit the ${flow.operator} flow (${ussd.code})`);
    else {
      if (fit.amount !== undefined && Number(fit.amount) !== asked.amount)
        problems.push(`the order's code ${code} sends Rp ${fit.amount}, Rp ${asked.amount} was asked`);
      if (fit.to !== undefined && centre !== undefined && !sameNumber(fit.to, centre))
        problems.push(`the order's code ${code} sends to ${fit.to}, the order's centre number is ${centre}`);
    }
  } else {
    if (/^[*#][0-9*#]+#$/.test(code))
      problems.push(`the order's code ${code} is a USSD code, and the ${flow.operator} flow sends SMS`);
    for (const n of code.match(/(?:\+?62|0)8\d{7,12}/g) ?? []) {
      if (centre !== undefined && !sameNumber(n, centre))
        problems.push(`the order's code names ${n}, the order's centre number is ${centre}`);
    }
  }
  if (problems.length > 0 || centre === undefined) return { ok: false, problems };
  try {
    return { ok: true, centre, steps: renderFlow(flow, { to: centre, amount: asked.amount }) };
  } catch (err) {
    if (err instanceof FlowError) return { ok: false, problems: [err.message] };
    throw err;
  }
}
