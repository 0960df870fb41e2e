/**
 * Reading a config file, and its spool section alone (the part `status` and `queue ...` need).
 *
 * readJson() turns an unreadable file or bad JSON into a ConfigError naming the file, without quoting its text (it may
 * hold a secret). loadSpoolConfig() validates the `spool` section and `stateDir` only: no secrets are resolved and no
 * other section is built, so those commands start fast and work for an operator whose shell lacks the service's
 * environment; `run` and `config check` validate everything (config.ts, which takes spoolSchema from here).
 */
import { readFile } from 'node:fs/promises';
import * as v from 'valibot';
import { anyObject, bool, int, object, optional, orDefault, text, withDefault } from './config-fields.js';
import { ConfigError } from './errors.js';

export type SpoolSection = v.InferOutput<ReturnType<typeof spoolSchema>>;

export function spoolSchema() {
  return withDefault(
    object({
      dir: orDefault(text(), '/var/lib/pulsa-bridge/spool'),
      sentRetentionDays: withDefault(int(0, 3650), 30),
      ignoredRetentionDays: withDefault(int(0, 3650), 30),
      fsync: withDefault(bool(), true),
    }),
    () => ({}),
  );
}

/** `modems[1].name` from the issue path's keys ['modems', 1, 'name']. */
function pathText(path: readonly v.IssuePathItem[]): string {
  return path.map((p, i) => (typeof p.key === 'number' ? `[${p.key}]` : `${i > 0 ? '.' : ''}${String(p.key)}`)).join('');
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

/** What the operator commands that need only the spool (`status`, `queue ...`) take from the config. */
export interface SpoolOnlyConfig {
  spool: SpoolSection;
  /** Where the spool's integrity key is (absent: the spool directory). */
  stateDir?: string;
}

/**
 * Spool-only mode: reads the config file and validates its `spool` section alone. Secrets are not resolved and the
 * rest is not checked, so `status` and `queue ...` work for an operator whose shell lacks the service's environment
 * (`env:PB_PIN`); `run` and `config check` still validate everything. Throws ConfigError (naming the file).
 */
export async function loadSpoolConfig(file: string): Promise<SpoolOnlyConfig> {
  const raw = await readJson(file);
  // Not strict: the other sections are the daemon's business here.
  const r = v.safeParse(v.pipe(v.custom<Record<string, unknown>>(anyObject, 'expected an object'), v.looseObject({ spool: spoolSchema(), stateDir: optional(text()) })), raw);
  if (!r.success) throw new ConfigError(problemsOf(r.issues), { file });
  return deepFreeze({ spool: r.output.spool, ...(r.output.stateDir !== undefined ? { stateDir: r.output.stateDir } : {}) });
}

export async function readJson(file: string): Promise<unknown> {
  let body: string;
  try {
    body = await readFile(file, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new ConfigError([`cannot read (${e.code ?? e.message})`], { file });
  }
  try {
    return JSON.parse(body) as unknown;
  } catch (err) {
    throw new ConfigError([`not valid JSON (${jsonErrorWithoutText((err as Error).message, body)})`], { file });
  }
}

/**
 * A JSON.parse message without the text around the error (V8 quotes it, and it may be a secret): the kind of error
 * and, when V8 gives the offset, the line and column. `Unexpected token 's', "{"pin": s3cr..." is not valid JSON`
 * becomes `Unexpected token`.
 */
export function jsonErrorWithoutText(message: string, body: string): string {
  // V8 quotes the text (`..."snippet"... is not valid JSON`) only in messages without an offset: keep the kind alone.
  const kind = /is not valid JSON\s*$/.test(message) ? (/^Unexpected token/.test(message) ? 'Unexpected token' : 'not JSON') : message;
  const at = /at position (\d+)/.exec(kind);
  if (!at) return kind;
  const before = body.slice(0, Number(at[1]));
  const line = before.split('\n').length;
  const column = before.length - before.lastIndexOf('\n');
  return `${kind.replace(/\s*\(?at position \d+\)?/, '').replace(/ in JSON$/, '')} at line ${line}, column ${column}`;
}

export function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object') {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}
