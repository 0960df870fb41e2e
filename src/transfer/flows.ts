/**
 * Operator credit-transfer flows as data, rendered into concrete steps for one transfer (PURE). Placeholders `{to}`,
 * `{to62}`, `{amount}`, `{token}`; rendering rejects an unknown placeholder or a `{token}` before a step captures one,
 * so a template typo fails before any credit moves. Defaults follow field-notes.md and are configurable, never
 * hard-wired.
 */

export type FlowStepTemplate =
  /** Dial a USSD code, then answer each menu in turn (the session must ask for more input before each answer). */
  | { kind: 'ussd'; code: string; replies?: readonly string[] }
  /** Send an SMS. */
  | { kind: 'sms'; to: string; text: string }
  /** Wait for an SMS from `from` on the sending modem; `token` (regex source, first group) captures {token}. */
  | { kind: 'await-sms'; from: string; token?: string; timeoutSec?: number };

export interface TransferFlow {
  /** Operator name for reports. */
  operator: string;
  steps: readonly FlowStepTemplate[];
}

/** XL and Axis (one operator group) share the flow: SMS to 168, then `Y` once the operator asks. */
const XL_AXIS: TransferFlow = {
  operator: 'XL/Axis',
  steps: [
    { kind: 'sms', to: '168', text: 'BAGI {to} {amount}' },
    { kind: 'await-sms', from: '168', timeoutSec: 120 },
    { kind: 'sms', to: '168', text: 'Y' },
  ],
};

export const DEFAULT_FLOWS: Readonly<Record<string, TransferFlow>> = Object.freeze({
  telkomsel: { operator: 'Telkomsel', steps: [{ kind: 'ussd', code: '*858*{to}*{amount}#', replies: ['1'] }] },
  indosat: {
    operator: 'Indosat',
    steps: [
      { kind: 'sms', to: '151', text: 'TRANSFERPULSA {to} {amount}' },
      // The operator's reply names the confirmation word; take the token that follows "OK".
      { kind: 'await-sms', from: '151', token: String.raw`\bOK\s?([A-Z0-9]{4,12})\b`, timeoutSec: 120 },
      { kind: 'sms', to: '151', text: 'OK{token}' },
    ],
  },
  xl: XL_AXIS,
  axis: XL_AXIS,
  smartfren: { operator: 'Smartfren', steps: [{ kind: 'sms', to: '879', text: 'KIRIM.{to}.{amount}' }] },
});

export type FlowStep =
  | { kind: 'ussd'; code: string; replies: string[] }
  | { kind: 'sms'; to: string; text: string; usesToken: boolean }
  | { kind: 'await-sms'; from: string; token: string | undefined; timeoutSec: number };

export interface TransferVars {
  to: string;
  amount: number;
}

export class FlowError extends Error {
  override readonly name = 'FlowError';
}

const PLACEHOLDER = /\{([a-zA-Z0-9_]*)\}/g;
const DEFAULT_AWAIT_SEC = 120;

/** `08123...`, `+628123...`, `628123...`, `8123...` -> national `08123...`; anything else is an error. */
export function nationalNumber(raw: string): string {
  const digits = raw.trim().replace(/[\s-]/g, '');
  let n: string;
  if (/^\+?62\d{8,13}$/.test(digits)) n = '0' + digits.replace(/^\+?62/, '');
  else if (/^0\d{8,13}$/.test(digits)) n = digits;
  else if (/^8\d{7,12}$/.test(digits)) n = '0' + digits;
  else throw new FlowError(`"${raw}" is not an Indonesian mobile number (08..., 628... or +628...)`);
  return n;
}

function fill(template: string, values: Record<string, string>, where: string, tokenAvailable: boolean): string {
  return template.replace(PLACEHOLDER, (_, name: string) => {
    if (name === 'token') {
      if (!tokenAvailable) throw new FlowError(`${where}: {token} is used before any await-sms step captures one`);
      return '{token}'; // filled at run time, after the await step
    }
    const v = values[name];
    if (v === undefined)
      throw new FlowError(`${where}: unknown placeholder {${name}} (known: {to}, {to62}, {amount}, {token})`);
    return v;
  });
}

/** Renders a flow for one transfer: every placeholder but {token} filled, every template checked. */
export function renderFlow(flow: TransferFlow, vars: TransferVars): FlowStep[] {
  if (!Number.isSafeInteger(vars.amount) || vars.amount <= 0)
    throw new FlowError(`amount must be a whole number of rupiah > 0 (got ${vars.amount})`);
  if (flow.steps.length === 0) throw new FlowError(`the ${flow.operator} flow has no steps`);
  const to = nationalNumber(vars.to);
  const values = { to, to62: '62' + to.slice(1), amount: String(vars.amount) };
  let token = false;
  return flow.steps.map((s, i): FlowStep => {
    const where = `${flow.operator} step ${i + 1} (${s.kind})`;
    switch (s.kind) {
      case 'ussd':
        return {
          kind: 'ussd',
          code: fill(s.code, values, where, token),
          replies: (s.replies ?? []).map((r) => fill(r, values, where, token)),
        };
      case 'sms': {
        const text = fill(s.text, values, where, token);
        return { kind: 'sms', to: fill(s.to, values, where, false), text, usesToken: text.includes('{token}') };
      }
      case 'await-sms': {
        if (s.token !== undefined) {
          let re: RegExp;
          try {
            re = new RegExp(s.token, 'u');
          } catch (err) {
            throw new FlowError(`${where}: invalid token pattern: ${(err as Error).message}`);
          }
          if (new RegExp(`${re.source}|`, 'u').exec('')!.length < 2)
            throw new FlowError(`${where}: the token pattern needs a capture group`);
          token = true;
        }
        return { kind: 'await-sms', from: s.from, token: s.token, timeoutSec: s.timeoutSec ?? DEFAULT_AWAIT_SEC };
      }
    }
  });
}

/** The token an operator's SMS carries, by the step's pattern; undefined when absent. */
export function extractToken(pattern: string, text: string): string | undefined {
  return new RegExp(pattern, 'u').exec(text)?.[1];
}

/** One line per step, for `--dry-run` and the confirmation prompt. */
export function describeStep(s: FlowStep, fromModem: string): string {
  switch (s.kind) {
    case 'ussd':
      return (
        `dial USSD ${s.code} on ${fromModem}` +
        (s.replies.length ? `, then answer ${s.replies.map((r) => JSON.stringify(r)).join(', ')}` : '')
      );
    case 'sms':
      return `send SMS "${s.text}" to ${s.to} from ${fromModem}`;
    case 'await-sms':
      return (
        `wait up to ${s.timeoutSec} s for an SMS from ${s.from} on ${fromModem}` +
        (s.token ? ' and read the token in it' : '')
      );
  }
}
