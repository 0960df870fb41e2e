/**
 * The building blocks of the config schema (src/config.ts), on valibot: each carries its message, so the declaration
 * reads as key, type, range, default. PURE: no I/O.
 * Contract of object(): exactly the declared keys; every other key is reported (`unknown key (allowed: ...)`), a
 * missing key reads as its field's own message about a missing value (`required`, or what the field says), and every
 * problem is reported at once. refineShape() checks run on the partly parsed object even when a field failed;
 * refine() checks only on a value that passed. Messages that name no wording of their own keep zod's defaults word
 * for word (wrongType), so a user sees what earlier releases printed.
 */
import * as v from 'valibot';
import { maskUrl } from './redact.js';

export type Env = Record<string, string | undefined>;

export type Schema<T = unknown> = v.GenericSchema<unknown, T>;
export type AddIssue = (info: { message: string; path?: readonly PropertyKey[] }) => void;

export const isMissing = (input: unknown): boolean => input === undefined || input === null;

/** zod's default message for a value of the wrong type, kept word for word where the schema names no message. */
export const wrongType = (expected: string) => (iss: v.BaseIssue<unknown>) =>
  `Invalid input: expected ${expected}, received ${iss.input === null ? 'null' : Array.isArray(iss.input) ? 'array' : typeof iss.input}`;

export const asRecord = (x: unknown): Record<string, unknown> | undefined =>
  x && typeof x === 'object' && !Array.isArray(x) ? (x as Record<string, unknown>) : undefined;

/** Path items for an issue raised by a check, relative to the value checked (only the keys are read: pathText). */
function pathItems(path: readonly PropertyKey[] | undefined): [v.IssuePathItem, ...v.IssuePathItem[]] | undefined {
  if (!path || path.length === 0) return undefined;
  return path.map((key) => ({
    type: 'unknown',
    origin: 'value',
    input: undefined,
    key,
    value: undefined,
  })) as unknown as [v.IssuePathItem, ...v.IssuePathItem[]];
}

/** addIssue of valibot's raw actions, taking a message and a path of keys. */
export function adder(
  add: (info: { message: string; path?: [v.IssuePathItem, ...v.IssuePathItem[]] }) => void,
): AddIssue {
  return ({ message, path }) => {
    const items = pathItems(path);
    add(items ? { message, path: items } : { message });
  };
}

/** A check on a value that passed its schema (as zod's refine: skipped when an earlier part failed). */
export function refine<T>(check: (value: T, addIssue: AddIssue) => void) {
  return v.rawCheck<T>(({ dataset, addIssue }) => {
    if (!dataset.issues && dataset.typed) check(dataset.value, adder(addIssue));
  });
}

/**
 * A check that also runs when a field failed (every problem at once), as long as the value has the right shape: it
 * sees the partly parsed value, so `check` reads it as the loosely typed `V`.
 */
export function refineShape<S extends Schema, V>(
  schema: S,
  shape: (value: unknown) => boolean,
  check: (value: V, addIssue: AddIssue) => void,
) {
  return v.pipe(
    schema,
    v.rawCheck<v.InferOutput<S>>(({ dataset, addIssue }) => {
      if (shape(dataset.value)) check(dataset.value as V, adder(addIssue));
    }),
  );
}

/** refineShape's test for an object (not an array, not null). */
export const anyObject = (x: unknown) => asRecord(x) !== undefined;

/** The message a field's schema gives for a missing value (so a missing key reads as the field says, e.g. `required`). */
function missingMessage(schema: Schema | undefined): string {
  return (schema && v.safeParse(schema, undefined).issues?.[0]?.message) || 'required';
}

/**
 * An object with exactly these keys: any other is `unknown key (allowed: ...)`, each reported; a missing key gets its
 * field's own message. When a field fails, the value seen by later checks is the partly parsed object (refineShape).
 */
export function object<S extends v.ObjectEntries>(shape: S) {
  const allowed = Object.keys(shape);
  const unknownKey = `unknown key (allowed: ${allowed.join(', ')})`;
  const fields = v.looseObject(shape, (iss) => missingMessage(shape[String(iss.path?.[0]?.key)]));
  return v.pipe(
    v.custom<Record<string, unknown>>((x) => asRecord(x) !== undefined, 'expected an object'),
    v.rawTransform<Record<string, unknown>, v.InferOutput<v.ObjectSchema<S, undefined>>>(
      ({ dataset, addIssue, NEVER }) => {
        const raw = dataset.value;
        const r = v.safeParse(fields, raw);
        for (const iss of r.issues ?? [])
          addIssue(iss.path ? { message: iss.message, path: iss.path } : { message: iss.message });
        for (const key of Object.keys(raw))
          if (!allowed.includes(key)) adder(addIssue)({ message: unknownKey, path: [key] });
        if (dataset.issues) {
          dataset.value = r.output as Record<string, unknown>; // the partly parsed object (defaults applied), for refineShape checks
          return NEVER;
        }
        const out: Record<string, unknown> = {};
        const parsed = r.output as Record<string, unknown>;
        for (const key of allowed) if (key in parsed) out[key] = parsed[key];
        return out as v.InferOutput<v.ObjectSchema<S, undefined>>;
      },
    ),
  );
}

/**
 * A record (any keys): every own key of the input is checked with `key` and its value with `value`, each problem
 * reported at its key. Unlike valibot's record(), which skips `__proto__`, `constructor` and `prototype` without a
 * word, no key is dropped: `__proto__` is reported (a trap for any later copy), `constructor` and `prototype` are
 * checked and kept; the output is built with Object.fromEntries (own data properties, never a prototype).
 * On a failure later checks (refineShape) see the raw object.
 */
export function recordOf<T>(key: Schema<string>, value: Schema<T>, message = 'expected an object') {
  return v.pipe(
    v.custom<Record<string, unknown>>(anyObject, message),
    v.rawTransform<Record<string, unknown>, Record<string, T>>(({ dataset, addIssue, NEVER }) => {
      const entries: Array<[string, T]> = [];
      for (const k of Object.keys(dataset.value)) {
        const at = pathItems([k])!;
        if (k === '__proto__') {
          addIssue({ message: 'a key named __proto__ is not allowed', path: at });
          continue;
        }
        const kr = v.safeParse(key, k);
        for (const iss of kr.issues ?? []) addIssue({ message: iss.message, path: at });
        const vr = v.safeParse(value, dataset.value[k]);
        for (const iss of vr.issues ?? []) addIssue({ message: iss.message, path: [...at, ...(iss.path ?? [])] });
        if (kr.success && vr.success) entries.push([k, vr.output]);
      }
      if (dataset.issues) return NEVER;
      return Object.fromEntries(entries) as Record<string, T>;
    }),
  );
}

export function int(min: number, max: number) {
  const error = `expected an integer from ${min} to ${max}`;
  return v.pipe(v.number(error), v.safeInteger(error), v.minValue(min, error), v.maxValue(max, error));
}

export function bool() {
  return v.boolean('expected true or false');
}

export function oneOf<const T extends readonly [string, ...string[]]>(values: T) {
  return v.picklist(values, `expected one of ${values.map((x) => JSON.stringify(x)).join(', ')}`);
}

/** A non-empty string; missing (or null) is `required`, or the given message. */
export function text(required = 'required') {
  const error = (iss: v.BaseIssue<unknown>) => (isMissing(iss.input) ? required : 'expected a non-empty string');
  return v.pipe(v.string(error), v.minLength(1, error));
}

/** A string that may be "env:NAME": the value is read from that environment variable. */
export function secret(env: Env) {
  return v.pipe(
    text(),
    v.rawTransform<string, string>(({ dataset, addIssue, NEVER }) => {
      const s = dataset.value;
      if (!s.startsWith('env:')) return s;
      const name = s.slice(4);
      const value = env[name];
      if (value === undefined || value === '') {
        addIssue({ message: `environment variable ${name} is not set` });
        return NEVER;
      }
      return value;
    }),
  );
}

/** Matches `re`; the message shows the value unless it is a secret. */
export function matching(re: RegExp, what: string, shown: boolean) {
  return v.pipe(
    v.string(wrongType('string')),
    v.regex(re, (iss) => `expected ${what}${shown ? `, got ${JSON.stringify(iss.input)}` : ''}`),
  );
}

export function httpUrl() {
  return v.pipe(
    text(),
    refine<string>((s, addIssue) => {
      let url: URL;
      try {
        url = new URL(s);
      } catch {
        addIssue({ message: `expected a URL, got ${JSON.stringify(maskUrl(s))}` }); // credentials and query values masked
        return;
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:')
        addIssue({ message: 'expected an http:// or https:// URL' });
    }),
  );
}

/** `modems[1].name` from the issue path's keys ['modems', 1, 'name']. */
function pathText(path: readonly v.IssuePathItem[]): string {
  return path
    .map((p, i) => (typeof p.key === 'number' ? `[${p.key}]` : `${i > 0 ? '.' : ''}${String(p.key)}`))
    .join('');
}

/** Each problem valibot found, as `path: message`, once. */
export function problemsOf(issues: readonly v.BaseIssue<unknown>[]): string[] {
  const out: string[] = [];
  for (const iss of issues) {
    const path = pathText(iss.path ?? []);
    out.push(path ? `${path}: ${iss.message}` : iss.message);
  }
  return [...new Set(out)];
}

/** Absent or null: undefined. */
export function optional<T extends Schema>(s: T) {
  return v.pipe(
    v.nullish(s),
    v.transform((x) => x ?? undefined),
  );
}

/** Absent or null: `fallback`. */
export function orDefault<T extends Schema>(s: T, fallback: v.InferOutput<T>) {
  return v.pipe(
    v.nullish(s, null),
    v.transform((x) => (x ?? fallback) as v.InferOutput<T>),
  );
}

/** Absent: `fallback` (a value, or a function for a fresh object), parsed like a given value. */
export function withDefault<T extends Schema>(s: T, fallback: v.InferInput<T> | (() => v.InferInput<T>)) {
  return v.optional(s, fallback as never);
}
