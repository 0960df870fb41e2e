/**
 * Reading a config file, and its spool section alone (the part `status` and `queue ...` need).
 *
 * readJson() turns an unreadable file or bad JSON into a ConfigError naming the file, without quoting its text (it may
 * hold a secret). loadSpoolConfig() checks the `spool` section and `stateDir` only, by hand and without the schema
 * library (those commands start fast): no secrets are resolved and no other section is read. Its rules and messages
 * are config.ts's (spoolSchema, built from SPOOL_DEFAULTS), which `run` and `config check` apply to the whole file;
 * test/config-spool-only.test.ts holds the two to the same answers for any input.
 */
import { readFile } from 'node:fs/promises';
import { ConfigError } from './errors.js';

/** The spool section's keys, in the order the schema checks them, and their defaults. */
export const SPOOL_DEFAULTS = { dir: '/var/lib/pulsa-bridge/spool', sentRetentionDays: 30, ignoredRetentionDays: 30, fsync: true } as const;
/** The range of both retention settings, in days. */
export const RETENTION_DAYS = { min: 0, max: 3650 } as const;

export interface SpoolSection {
  dir: string;
  sentRetentionDays: number;
  ignoredRetentionDays: number;
  fsync: boolean;
}

/** What the operator commands that need only the spool (`status`, `queue ...`) take from the config. */
export interface SpoolOnlyConfig {
  spool: SpoolSection;
  /** Where the spool's integrity key is (absent: the spool directory). */
  stateDir?: string;
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const NON_EMPTY = 'expected a non-empty string';

/** A field's value, or the problem with it. */
type Field<T> = { value: T } | { problem: string };

function text(value: unknown, fallback: string): Field<string> {
  if (value === undefined || value === null) return { value: fallback };
  return typeof value === 'string' && value !== '' ? { value } : { problem: NON_EMPTY };
}

function days(value: unknown, fallback: number): Field<number> {
  if (value === undefined) return { value: fallback };
  const ok = typeof value === 'number' && Number.isSafeInteger(value) && value >= RETENTION_DAYS.min && value <= RETENTION_DAYS.max;
  return ok ? { value } : { problem: `expected an integer from ${RETENTION_DAYS.min} to ${RETENTION_DAYS.max}` };
}

function bool(value: unknown, fallback: boolean): Field<boolean> {
  if (value === undefined) return { value: fallback };
  return typeof value === 'boolean' ? { value } : { problem: 'expected true or false' };
}

/**
 * The spool section and stateDir of a parsed config, or every problem with them as `path: message` (the other
 * sections are the daemon's business here). PURE.
 */
export function readSpoolSection(raw: unknown): { config: SpoolOnlyConfig; problems: [] } | { config?: undefined; problems: string[] } {
  if (!isObject(raw)) return { problems: ['expected an object'] };
  const problems: string[] = [];
  const section = raw.spool === undefined ? {} : raw.spool;
  const spool: Record<string, unknown> = {};
  if (!isObject(section)) {
    problems.push('spool: expected an object');
  } else {
    const fields: Record<keyof SpoolSection, Field<unknown>> = {
      dir: text(section.dir, SPOOL_DEFAULTS.dir),
      sentRetentionDays: days(section.sentRetentionDays, SPOOL_DEFAULTS.sentRetentionDays),
      ignoredRetentionDays: days(section.ignoredRetentionDays, SPOOL_DEFAULTS.ignoredRetentionDays),
      fsync: bool(section.fsync, SPOOL_DEFAULTS.fsync),
    };
    for (const [key, f] of Object.entries(fields)) {
      if ('problem' in f) problems.push(`spool.${key}: ${f.problem}`);
      else spool[key] = f.value;
    }
    const allowed = Object.keys(fields);
    for (const key of Object.keys(section)) if (!allowed.includes(key)) problems.push(`spool.${key}: unknown key (allowed: ${allowed.join(', ')})`);
  }
  const stateDir = raw.stateDir ?? undefined; // absent or null: none
  if (stateDir !== undefined && (typeof stateDir !== 'string' || stateDir === '')) problems.push(`stateDir: ${NON_EMPTY}`);
  if (problems.length > 0) return { problems: [...new Set(problems)] };
  return { config: { spool: spool as unknown as SpoolSection, ...(typeof stateDir === 'string' ? { stateDir } : {}) }, problems: [] };
}

/**
 * Spool-only mode: reads the config file and checks its `spool` section and stateDir alone. Secrets are not resolved
 * and the rest is not checked, so `status` and `queue ...` work for an operator whose shell lacks the service's
 * environment (`env:PB_PIN`); `run` and `config check` still validate everything. Throws ConfigError (naming the file).
 */
export async function loadSpoolConfig(file: string): Promise<SpoolOnlyConfig> {
  const r = readSpoolSection(await readJson(file));
  if (!r.config) throw new ConfigError(r.problems, { file });
  return deepFreeze(r.config);
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
