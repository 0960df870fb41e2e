/**
 * The `reseller` section of the config: the reseller API (base URL, key, timeouts), where an order's fields are in
 * its answers, the defaults of `test-transfer --order`, and the operators' transfer flows. Each valid flow must
 * render at load (a template error fails there, not when credit moves). Part of config.ts's one schema.
 */
import * as v from 'valibot';
import { FlowError, renderFlow, type FlowStepTemplate } from './transfer/flows.js';
import {
  adder,
  anyObject,
  asRecord,
  httpUrl,
  int,
  object,
  optional,
  recordOf,
  refineShape,
  secret,
  text,
  withDefault,
  wrongType,
  type Env,
} from './config-fields.js';

function flowSchema() {
  const steps = {
    ussd: object({
      kind: v.literal('ussd'),
      code: text(),
      replies: optional(v.array(text(), 'expected an array of non-empty strings')),
    }),
    sms: object({ kind: v.literal('sms'), to: text(), text: text() }),
    'await-sms': object({
      kind: v.literal('await-sms'),
      from: text(),
      token: optional(text()),
      timeoutSec: optional(int(5, 3600)),
    }),
  };
  const step = v.pipe(
    v.unknown(),
    v.rawTransform(({ dataset, addIssue, NEVER }: v.RawTransformContext<unknown>) => {
      const kind = asRecord(dataset.value)?.kind;
      if (!Object.hasOwn(steps, String(kind))) {
        const message = 'expected a step {"kind": "ussd" | "sms" | "await-sms", ...}';
        adder(addIssue)(asRecord(dataset.value) ? { message, path: ['kind'] } : { message });
        return NEVER;
      }
      const r = v.safeParse(steps[kind as keyof typeof steps], dataset.value);
      for (const iss of r.issues ?? [])
        addIssue(iss.path ? { message: iss.message, path: iss.path } : { message: iss.message });
      return r.success ? (r.output as v.InferOutput<(typeof steps)[keyof typeof steps]>) : NEVER;
    }),
  );
  return object({
    operator: optional(text()),
    steps: v.pipe(v.array(step, 'expected an array of steps'), v.minLength(1, 'expected at least one step')),
  });
}

export function resellerSchema(env: Env) {
  const paths = v.optional(v.array(text(), wrongType('array')));
  const flow = flowSchema();
  return withDefault(
    refineShape(
      object({
        /** The reseller API root (`{base_url}`, ending in /api/v1/convert-pulsa); default webhook.baseUrl. */
        baseUrl: optional(httpUrl()),
        /** X-API-KEY; "env:NAME" reads it from the environment. Never logged, masked by `config check`. */
        apiKey: optional(secret(env)),
        timeoutMs: withDefault(int(100, 600_000), 15_000),
        /** Where the order's fields are in the API's answers (dot paths, tried before the defaults). */
        orderPaths: withDefault(
          object({ trxId: paths, ussdCode: paths, centerNumber: paths, status: paths, amount: paths }),
          () => ({}),
        ),
        /** Defaults for `test-transfer --order` (each can be given on the command line). */
        order: withDefault(
          object({
            operatorId: optional(int(1, 1_000_000)),
            payoutMethod: optional(text()),
            payoutAccountNumber: optional(text()),
            payoutAccountName: optional(text()),
          }),
          () => ({}),
        ),
        /** Transfer flow overrides by operator key (telkomsel, indosat, xl, axis, smartfren, tri or a new one). */
        flows: withDefault(
          recordOf(v.pipe(v.string(), v.regex(/^[a-z0-9_-]{1,40}$/, 'expected a lower-case operator key')), flow),
          () => ({}),
        ),
        /** Seconds a test transfer waits for the confirmation SMS, and polls an order. */
        confirmTimeoutSec: withDefault(int(5, 3600), 180),
      }),
      // Each valid flow must render (a template error fails at load, not when credit moves), also when a field failed.
      anyObject,
      (r: { flows?: unknown }, addIssue) => {
        for (const [key, raw] of Object.entries(asRecord(r.flows) ?? {})) {
          const parsed = v.safeParse(flow, raw);
          if (!parsed.success) continue; // reported by the flow's own schema
          try {
            renderFlow(
              { operator: parsed.output.operator ?? key, steps: parsed.output.steps as FlowStepTemplate[] },
              { to: '081200000000', amount: 10_000 },
            );
          } catch (err) {
            if (err instanceof FlowError) addIssue({ path: ['flows', key], message: err.message });
            else throw err;
          }
        }
      },
    ),
    () => ({}),
  );
}
