/**
 * The `canaries` section of the config: scheduled test transfers the daemon runs itself (src/canary/). Off unless
 * configured; a canary without `maxRupiahPerDay` is refused (the cap is what bounds the money). checkCanaries() runs on
 * the whole parsed config: every canary must plan as `test-transfer` would (its modems, flow, order defaults, the
 * reseller API for an order), so a canary that could not run fails at load, not at its first run. Part of config.ts's
 * one schema.
 */
import * as v from 'valibot';
import { bool, int, isMissing, matching, object, optional, text, withDefault, type AddIssue } from './config-fields.js';
import { planTransfer, PlanError, type PlanConfig, type TransferAsk } from './transfer/plan.js';

export const DEFAULT_CANARY_TIME_ZONE = 'Asia/Jakarta';
const RUPIAH_MAX = 100_000_000;

function timeZone() {
  const message = 'expected an IANA time zone, e.g. "Asia/Jakarta"';
  return v.pipe(
    v.string(message),
    v.check((tz) => {
      // The list of zone names first: a formatter loads ICU's zone data (about 25 ms and 9 MiB here, paid by every
      // command that loads the config); it is asked only for what the list lacks (aliases such as UTC, any case).
      if (Intl.supportedValuesOf('timeZone').includes(tz)) return true;
      try {
        new Intl.DateTimeFormat('en-CA', { timeZone: tz });
        return true;
      } catch {
        return false;
      }
    }, message),
  );
}

/** The daily cap, whole rupiah; missing is a refusal that says why. */
function dailyCap() {
  const range = `expected an integer from 1 to ${RUPIAH_MAX}`;
  return v.pipe(
    v.number((iss) =>
      isMissing(iss.input) ? 'required: the most this canary may spend in a day, in rupiah (no cap, no canary)' : range,
    ),
    v.safeInteger(range),
    v.minValue(1, range),
    v.maxValue(RUPIAH_MAX, range),
  );
}

export function canariesSchema() {
  const canary = object({
    /** Default `<from>-<amount>`. */
    name: optional(matching(/^[A-Za-z0-9._-]{1,64}$/, '1 to 64 letters, digits, ".", "_" or "-"', true)),
    /** The modem whose SIM sends the credit. */
    from: text(),
    /** Rupiah per run. */
    amount: int(1, 10_000_000),
    /** Seconds between runs (from the end of one to the start of the next); the first one interval after start. */
    intervalSec: int(1, 31 * 86_400),
    /** The most the canary spends in a day; a run whose send is unknown counts as spent. Required. */
    maxRupiahPerDay: dailyCap(),
    /** true: through a reseller order (reseller.order's defaults); false: a plain transfer to `to`. */
    order: bool(),
    /** With order false: the centre SIM's modem name or number. */
    to: optional(text()),
    /** The transfer flow's operator key; default the sending modem's `operator`. */
    operator: optional(text()),
    /** Seconds a run waits for the confirmation and the order; default reseller.confirmTimeoutSec. */
    timeoutSec: optional(int(5, 3600)),
    /** Failed, timed-out or unknown runs in a row after which the canary pauses itself until `canary resume`. */
    pauseAfterFailures: withDefault(int(1, 100), 3),
    /** The day the cap counts in: midnight there starts a new day's budget. */
    timeZone: withDefault(timeZone(), DEFAULT_CANARY_TIME_ZONE),
  });
  return withDefault(v.array(canary, 'expected an array of canaries'), () => []);
}

export type CanaryConfig = v.InferOutput<ReturnType<typeof canariesSchema>>[number];

/** A canary's name: its own, or `<from>-<amount>`. */
export function canaryName(c: Pick<CanaryConfig, 'name' | 'from' | 'amount'>): string {
  return c.name ?? `${c.from}-${c.amount}`;
}

/** What a canary asks of the transfer engine: planned so at load (the check below) and at each run (the scheduler). */
export function canaryAsk(
  c: Pick<CanaryConfig, 'from' | 'amount' | 'order' | 'to' | 'operator' | 'timeoutSec'>,
): TransferAsk {
  return {
    from: c.from,
    amount: c.amount,
    order: c.order,
    ...(c.to !== undefined ? { to: c.to } : {}),
    ...(c.operator !== undefined ? { operator: c.operator } : {}),
    ...(c.timeoutSec !== undefined ? { timeoutSec: c.timeoutSec } : {}),
  };
}

/** The whole config as the canaries' check reads it. */
export interface CanaryCheckInput extends PlanConfig {
  canaries: readonly CanaryConfig[];
  reseller: PlanConfig['reseller'] & { apiKey?: string; baseUrl?: string };
  webhook: { baseUrl?: string; url?: string };
}

/** Each canary plans as `test-transfer` would; unique names; a cap that allows one run (see the header). */
export function checkCanaries(c: CanaryCheckInput, addIssue: AddIssue): void {
  const names = new Set<string>();
  c.canaries.forEach((k, i) => {
    const at = (field: string) => ['canaries', i, field];
    const name = canaryName(k);
    if (names.has(name))
      addIssue({ path: at('name'), message: `duplicate canary name ${JSON.stringify(name)} (set "name")` });
    names.add(name);
    if (k.maxRupiahPerDay < k.amount)
      addIssue({
        path: at('maxRupiahPerDay'),
        message: `the daily cap ${k.maxRupiahPerDay} is below one run's amount ${k.amount}: it would never run`,
      });
    if (k.order && k.to !== undefined)
      addIssue({ path: at('to'), message: 'not used with "order": true (the order names the centre number)' });
    if (!k.order && k.to === undefined)
      addIssue({ path: at('to'), message: 'required when "order" is false: the centre modem or number' });
    if (k.order === (k.to !== undefined)) return; // named above
    let plan: ReturnType<typeof planTransfer>;
    try {
      plan = planTransfer(c, canaryAsk(k));
    } catch (err) {
      if (!(err instanceof PlanError)) throw err;
      // The CLI's hints name its flags; a canary is configured, so the config key is the way.
      const hint = err.hint?.replace(/^pass [^,]*, or /, '').replace(/^pass --[\w-]+ with /, '');
      addIssue({ path: at(fieldOf(err.message)), message: `${err.message}${hint ? ` (${hint})` : ''}` });
      return;
    }
    if (!k.order && plan.fromNumber === undefined)
      addIssue({
        path: at('from'),
        message: `modem ${JSON.stringify(k.from)} has no "number": a canary's confirmation is told from customers' transfers by the sending number`,
      });
    if (plan.centre?.name === k.from)
      addIssue({ path: at('to'), message: `the centre is the sending modem ${JSON.stringify(k.from)} itself` });
    else if (!k.order && !plan.centre)
      addIssue({
        path: at('to'),
        message: `the centre ${plan.to} is not a modem of this bridge: a canary proves the transfer by its confirmation SMS there (name a modem, or use "order": true)`,
      });
    if (k.order) {
      if (c.reseller.apiKey === undefined)
        addIssue({ path: at('order'), message: 'an order canary needs reseller.apiKey' });
      if (c.reseller.baseUrl === undefined && c.webhook.baseUrl === undefined && c.webhook.url === undefined)
        addIssue({ path: at('order'), message: 'an order canary needs reseller.baseUrl (or webhook.baseUrl)' });
    }
  });
}

/** The canary's field a planning error is about. */
function fieldOf(message: string): string {
  if (/^no modem|sending SIM's number/.test(message)) return 'from';
  if (/operator flow|transfer flow/.test(message)) return 'operator';
  if (/^the order needs/.test(message)) return 'order';
  return 'to';
}
