/**
 * Configuration: loaded and validated once, at the boundary, into a frozen, fully-defaulted Config.
 *
 * One declaration (configSchema, zod) gives the type, the allowed keys, the defaults and the messages. Unknown keys
 * are rejected; every problem is reported as `path: what was expected`, all at once; loadConfig names the file.
 * Secrets (modem PIN, HMAC secret, header values) may be given as "env:NAME" to read them from the environment,
 * so the file itself can be world-readable.
 * Derived once, here: `webhook.endpoint` (the URL every POST goes to) and `warnings` (allowed but probably wrong;
 * the daemon logs them at start, `config check` prints them). maskSecrets() hides secrets, URL credentials included.
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { ConfigError } from './errors.js';
import { PROFILE_SETTINGS, type ProfileSetting } from './modem/types.js';

export type { ProfileSetting };

/** The convert-pulsa service's API prefix: a webhook base URL is expected to end in it. */
const API_PREFIX = '/api/v1/convert-pulsa';
/** Appended to webhook.baseUrl to give the URL the bridge posts to. */
const WEBHOOK_PATH = '/webhook/sms-gateway';

type Env = Record<string, string | undefined>;

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
/** Headers pulsa-bridge sets itself (compared lower-case). */
const OWN_HEADERS = ['content-type', 'content-length', 'idempotency-key', 'x-api-key', 'host'];

// Building blocks: each carries its message, so a schema below reads as key, type, range, default.

const isMissing = (input: unknown): boolean => input === undefined || input === null;

/** An object with exactly these keys (others are `unknown key`). */
function object<S extends z.ZodRawShape>(shape: S) {
  const allowed = Object.keys(shape).join(', ');
  return z.strictObject(shape, { error: (iss) => (iss.code === 'unrecognized_keys' ? `unknown key (allowed: ${allowed})` : 'expected an object') });
}

function int(min: number, max: number) {
  return z.int({ error: `expected an integer from ${min} to ${max}` }).min(min).max(max);
}

function bool() {
  return z.boolean({ error: 'expected true or false' });
}

function oneOf<const T extends readonly [string, ...string[]]>(values: T) {
  return z.enum(values, { error: `expected one of ${values.map((v) => JSON.stringify(v)).join(', ')}` });
}

/** A non-empty string; missing (or null) is `required`, or the given message. */
function text(required = 'required') {
  return z.string({ error: (iss) => (isMissing(iss.input) ? required : 'expected a non-empty string') }).min(1);
}

/** A string that may be "env:NAME": the value is read from that environment variable. */
function secret(env: Env) {
  return text().transform((s, ctx) => {
    if (!s.startsWith('env:')) return s;
    const name = s.slice(4);
    const value = env[name];
    if (value === undefined || value === '') {
      ctx.addIssue({ code: 'custom', message: `environment variable ${name} is not set` });
      return z.NEVER;
    }
    return value;
  });
}

/** Matches `re`; the message shows the value unless it is a secret. */
function matching(re: RegExp, what: string, shown: boolean) {
  return z.string().regex(re, { error: (iss) => `expected ${what}${shown ? `, got ${JSON.stringify(iss.input)}` : ''}` });
}

function httpUrl() {
  return text().superRefine((v, ctx) => {
    let url: URL;
    try {
      url = new URL(v);
    } catch {
      ctx.addIssue({ code: 'custom', message: `expected a URL, got ${JSON.stringify(v)}` });
      return;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') ctx.addIssue({ code: 'custom', message: 'expected an http:// or https:// URL' });
  });
}

/** Absent or null: undefined. */
function optional<T extends z.ZodType>(s: T) {
  return s.nullish().transform((v) => v ?? undefined);
}

/** Absent or null: `fallback`. */
function orDefault<T extends z.ZodType>(s: T, fallback: z.output<T>) {
  return s.nullable().default(null).transform((v) => v ?? fallback);
}

const asRecord = (v: unknown): Record<string, unknown> | undefined =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

/** Cross-field checks also run when a field failed (every problem at once), as long as the shape is right. */
const onAnyObject = { when: (p: { value: unknown }) => asRecord(p.value) !== undefined };
const onAnyArray = { when: (p: { value: unknown }) => Array.isArray(p.value) };

// The declaration.

function modemSchema(env: Env) {
  const modem = object({
    name: text().pipe(matching(/^[A-Za-z0-9_-]{1,40}$/, 'letters, digits, - or _ (at most 40)', true)),
    /** Serial port, preferably /dev/serial/by-id/...; a simulated modem gets `/virtual/<name>`. */
    port: text(),
    baudRate: int(300, 4_000_000).default(115200),
    profile: oneOf(PROFILE_SETTINGS).default('auto'),
    pin: optional(secret(env).pipe(matching(/^\d{4,8}$/, '4 to 8 digits', false))),
    storage: oneOf(['auto', 'SM', 'ME', 'MT']).default('auto'),
    delivery: oneOf(['store', 'direct']).default('store'),
    senders: z
      .array(z.string({ error: 'expected a non-empty string' }).trim().min(1), {
        error: (iss) =>
          isMissing(iss.input) ? 'required: the operator sender ids to forward, e.g. ["858"] (or ["*"] for all)' : 'expected an array of non-empty strings',
      })
      .min(1, 'expected at least one sender id, e.g. ["858"] (or ["*"] for all): an empty list would forward nothing'),
    otherSenders: oneOf(['archive', 'delete', 'keep']).default('archive'),
    sweepIntervalSec: int(5, 86_400).default(60),
    multipartTimeoutSec: int(10, 7 * 86_400).default(600),
    commandTimeoutMs: int(500, 180_000).default(10_000),
    /** Use the built-in virtual modem instead of hardware (demo, tests, training). */
    simulate: bool().default(false),
  });
  // A simulated modem needs no port: it gets a virtual one named after it.
  return z.preprocess((v) => {
    const o = asRecord(v);
    return o && o.simulate === true && isMissing(o.port) ? { ...o, port: `/virtual/${String(o.name)}` } : v;
  }, modem);
}

function webhookSchema(env: Env) {
  const headers = z.record(z.string(), secret(env), { error: 'expected an object' }).superRefine((h, ctx) => {
    for (const k of Object.keys(h)) {
      if (!/^[A-Za-z0-9-]+$/.test(k)) ctx.addIssue({ code: 'custom', path: [k], message: 'invalid header name' });
      else if (OWN_HEADERS.includes(k.toLowerCase())) ctx.addIssue({ code: 'custom', path: [k], message: 'this header is set by pulsa-bridge and cannot be overridden' });
    }
  }, onAnyObject);
  const retry = object({
    baseDelayMs: int(10, 3_600_000).default(1000),
    maxDelayMs: int(100, 86_400_000).default(300_000),
    /** A record older than this goes to dead instead of being retried. */
    maxAgeHours: optional(int(1, 24 * 365)),
  }).superRefine((r, ctx) => {
    if (typeof r.maxDelayMs === 'number' && typeof r.baseDelayMs === 'number' && r.maxDelayMs < r.baseDelayMs) {
      ctx.addIssue({ code: 'custom', path: ['maxDelayMs'], message: 'must be at least webhook.retry.baseDelayMs' });
    }
  }, onAnyObject);
  return object({
    baseUrl: optional(httpUrl()),
    url: optional(httpUrl()),
    timeoutMs: int(100, 600_000).default(10_000),
    connectTimeoutMs: int(100, 600_000).default(5_000),
    headers: headers.default(() => ({})),
    hmacSecret: optional(secret(env)),
    retry: retry.prefault({}),
    strictOrder: bool().default(false),
  }).superRefine((w, ctx) => {
    if (isMissing(w.baseUrl) && isMissing(w.url)) {
      ctx.addIssue({ code: 'custom', path: ['baseUrl'], message: `required: the service's base URL, ending in ${API_PREFIX} (or webhook.url, the full webhook URL)` });
    }
  }, onAnyObject);
}

function configSchema(env: Env = process.env) {
  return object({
    webhook: webhookSchema(env).prefault({}),
    spool: object({
      dir: orDefault(text(), '/var/lib/pulsa-bridge/spool'),
      sentRetentionDays: int(0, 3650).default(30),
      ignoredRetentionDays: int(0, 3650).default(30),
      fsync: bool().default(true),
    }).prefault({}),
    modems: z
      .array(modemSchema(env), { error: 'required: a non-empty array of modems' })
      .min(1)
      .superRefine((modems, ctx) => {
        const names = new Set<unknown>();
        const ports = new Set<unknown>();
        modems.forEach((raw, i) => {
          const m = asRecord(raw);
          if (!m) return;
          if (typeof m.name === 'string' && names.has(m.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate name ${JSON.stringify(m.name)}` });
          if (typeof m.port === 'string' && ports.has(m.port)) ctx.addIssue({ code: 'custom', path: [i, 'port'], message: `port ${m.port} is used by another modem` });
          names.add(m.name);
          ports.add(m.port);
        });
      }, onAnyArray),
    log: object({
      level: oneOf(LOG_LEVELS).default('info'),
      /** Pretty output on a terminal, JSON otherwise (journald). */
      pretty: z.union([z.literal('auto'), z.boolean()], { error: 'expected true, false or "auto"' }).default('auto'),
    }).prefault({}),
    /** Seconds SIGTERM waits for the POST in flight before abandoning it (the record stays pending). */
    shutdownGraceSec: int(0, 120).default(5),
    /** Where the daemon keeps small state between runs (rejected PINs per SIM). Default: spool.dir. */
    stateDir: optional(text()),
  }).transform((c) => {
    const { url, warning } = c.webhook.url ? { url: c.webhook.url, warning: undefined } : webhookUrl(c.webhook.baseUrl ?? '');
    return { ...c, webhook: { ...c.webhook, endpoint: url }, warnings: warning ? [warning] : [] };
  });
}

export type Config = z.output<ReturnType<typeof configSchema>>;
export type ModemConfig = Config['modems'][number];
export type OtherSendersPolicy = ModemConfig['otherSenders'];

/** `modems[1].name` from zod's ['modems', 1, 'name']. */
function pathText(path: readonly PropertyKey[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i > 0 ? '.' : ''}${String(p)}`)).join('');
}

function problemsOf(error: z.ZodError): string[] {
  const out: string[] = [];
  for (const iss of error.issues) {
    const keys = iss.code === 'unrecognized_keys' ? iss.keys : [undefined];
    for (const k of keys) {
      const path = pathText(k === undefined ? iss.path : [...iss.path, k]);
      out.push(path ? `${path}: ${iss.message}` : iss.message);
    }
  }
  return [...new Set(out)];
}

/** Validates a parsed JSON value. Throws ConfigError listing every problem. */
export function parseConfig(raw: unknown, env: Env = process.env): Config {
  const r = configSchema(env).safeParse(raw);
  if (!r.success) throw new ConfigError(problemsOf(r.error));
  return deepFreeze(r.data);
}

/** Reads and validates a config file. Throws ConfigError (naming the file) on any problem. */
export async function loadConfig(file: string, env: Env = process.env): Promise<Config> {
  let body: string;
  try {
    body = await readFile(file, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new ConfigError([`cannot read (${e.code ?? e.message})`], { file });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(body);
  } catch (err) {
    throw new ConfigError([`not valid JSON (${(err as Error).message})`], { file });
  }
  try {
    return parseConfig(raw, env);
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError(err.problems, { file });
    throw err;
  }
}

/**
 * Join base URL + webhook path; `warning` when the base does not look like the convert-pulsa API root (the warning
 * shows the URL with its credentials masked).
 */
export function webhookUrl(baseUrl: string): { url: string; warning?: string } {
  const base = baseUrl.trim().replace(/\/+$/, '');
  let parsed: URL;
  try {
    parsed = new URL(base);
  } catch {
    throw new ConfigError([`webhook.baseUrl: expected an absolute http(s) URL, got ${JSON.stringify(maskUrl(baseUrl))}`]);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError([`webhook.baseUrl: expected http or https, got ${parsed.protocol}`]);
  }
  const url = base + WEBHOOK_PATH;
  if (!parsed.pathname.replace(/\/+$/, '').endsWith(API_PREFIX)) {
    return { url, warning: `webhook base URL ${maskUrl(base)} does not end in ${API_PREFIX}; posting to ${maskUrl(url)}` };
  }
  return { url };
}

const MASK = '********';

/** `https://user:pass@host/p` -> `https://********:********@host/p`; anything else unchanged. */
function maskUrl(value: string): string {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return value;
  }
  if (!u.username && !u.password) return value;
  if (u.username) u.username = MASK;
  if (u.password) u.password = MASK;
  return u.href.endsWith('/') && !value.trim().endsWith('/') ? u.href.slice(0, -1) : u.href;
}

/** The config with secrets masked (PIN, HMAC secret, header values, credentials in URLs), for `config check`. */
export function maskSecrets(cfg: Config): unknown {
  const mask = (v: string | undefined) => (v === undefined ? undefined : MASK);
  const url = (v: string | undefined) => (v === undefined ? undefined : maskUrl(v));
  return {
    ...cfg,
    webhook: {
      ...cfg.webhook,
      baseUrl: url(cfg.webhook.baseUrl),
      url: url(cfg.webhook.url),
      endpoint: maskUrl(cfg.webhook.endpoint),
      hmacSecret: mask(cfg.webhook.hmacSecret),
      headers: Object.fromEntries(Object.keys(cfg.webhook.headers).map((k) => [k, MASK])),
    },
    modems: cfg.modems.map((m) => ({ ...m, pin: mask(m.pin) })),
  };
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object') {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}
