/**
 * Configuration: loaded and validated once, at the boundary, into a frozen, fully-defaulted Config.
 *
 * One declaration (configSchema, zod) gives the type, the allowed keys, the defaults and the messages. Unknown keys
 * are rejected; every problem is reported as `path: what was expected`, all at once; loadConfig names the file.
 * Secrets (modem PIN, HMAC secret, header values) may be given as "env:NAME" to read them from the environment,
 * so the file itself can be world-readable.
 * loadSpoolConfig() is the spool-only mode of the operator commands: the `spool` section alone, no secrets resolved.
 * Derived once, here: `webhook.endpoint` (the URL every POST goes to) and `warnings` (allowed but probably wrong;
 * the daemon logs them at start, `config check` prints them). maskSecrets() hides secrets, URL credentials included.
 * Per modem, `balance` (the periodic balance check) is resolved here: the code and replies from the `operator`'s
 * defaults when not given, the configured patterns first and the built-in ones after them (each compiled once, so
 * a broken one is a config error). `reseller` (test transfers, rates) defaults its base URL to webhook.baseUrl; its
 * API key may be "env:NAME" and is masked by maskSecrets(); transfer flow overrides are rendered once with sample
 * values, so a template error fails at load, not when credit moves.
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { compilePatterns, DEFAULT_BALANCE_PATTERNS, type BalancePatterns } from './balance/parse.js';
import { DEFAULT_BALANCE_CHECKS, OPERATORS, type OperatorKey } from './balance/operators.js';
import { ConfigError } from './errors.js';
import { PROFILE_SETTINGS, type ProfileSetting } from './modem/types.js';
import { FlowError, renderFlow, type FlowStepTemplate, type TransferFlow } from './transfer/flows.js';
import { DEDUPE_MIN_DAYS } from './spool/types.js';

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
    /** The SIM's operator: picks the balance check and transfer flow defaults. */
    operator: optional(oneOf(OPERATORS)),
    /** The SIM's own number (08..., 628... or +628...): the sender of test transfers, a centre SIM's address. */
    number: optional(text().pipe(matching(/^(?:\+?62|0)8\d{7,12}$/, 'an Indonesian mobile number (08..., 628... or +628...)', true))),
    /** Periodic balance and active-period check (absent: checked only on demand). */
    balance: optional(balanceSchema()),
    /** The virtual SIM behind a simulated modem: its starting balance and active-until date. */
    virtual: optional(
      object({
        balance: int(0, 100_000_000).default(50_000),
        activeUntil: optional(matching(/^\d{4}-\d{2}-\d{2}$/, 'a date YYYY-MM-DD', true)),
      }),
    ),
  }).transform((m, ctx) => ({ ...m, balance: resolveBalance(m.balance, m.operator, ctx) }));
  // A simulated modem needs no port: it gets a virtual one named after it.
  return z.preprocess((v) => {
    const o = asRecord(v);
    return o && o.simulate === true && isMissing(o.port) ? { ...o, port: `/virtual/${String(o.name)}` } : v;
  }, modem);
}

function patternList() {
  return z.array(z.string({ error: 'expected a regular expression source' }).min(1), { error: 'expected an array of regular expression sources' }).superRefine((list, ctx) => {
    list.forEach((src, i) => {
      try {
        compilePatterns([src]);
      } catch (err) {
        ctx.addIssue({ code: 'custom', path: [i], message: (err as Error).message });
      }
    });
  });
}

function balanceSchema() {
  return object({
    /** USSD code; default from the modem's `operator`. */
    code: optional(text()),
    /** Menu answers sent after the code, in order. */
    replies: optional(z.array(z.string().min(1).max(182), { error: 'expected an array of strings' }).max(10)),
    /** Hours between checks (0: only on demand). */
    intervalHours: z.number({ error: 'expected a number of hours from 0 to 720' }).min(0).max(720).default(24),
    /** A balance below this many rupiah is a warning (0: never). */
    minBalance: int(0, 100_000_000).default(0),
    /** An active period ending within this many days is a warning. */
    activeWarnDays: int(0, 365).default(7),
    patterns: object({ balance: patternList().default(() => []), activeUntil: patternList().default(() => []) }).prefault({}),
  });
}

type BalanceInput = z.output<ReturnType<typeof balanceSchema>>;

/** A modem's balance check, every default applied. */
export interface BalanceSettings {
  code: string;
  replies: readonly string[];
  intervalHours: number;
  minBalance: number;
  activeWarnDays: number;
  /** Configured patterns first, then the built-in ones. */
  patterns: BalancePatterns;
}

function resolveBalance(b: BalanceInput | undefined, operator: OperatorKey | undefined, ctx: z.RefinementCtx): BalanceSettings | undefined {
  if (!b) return undefined;
  const defaults = operator ? DEFAULT_BALANCE_CHECKS[operator] : undefined;
  const code = b.code ?? defaults?.code;
  if (code === undefined) {
    ctx.addIssue({ code: 'custom', path: ['balance', 'code'], message: `required: the USSD code that shows the balance (or set "operator" to one of ${OPERATORS.join(', ')} for its default)` });
    return z.NEVER;
  }
  return {
    code,
    replies: b.replies ?? (b.code === undefined ? [...(defaults?.replies ?? [])] : []),
    intervalHours: b.intervalHours,
    minBalance: b.minBalance,
    activeWarnDays: b.activeWarnDays,
    patterns: {
      balance: [...b.patterns.balance, ...DEFAULT_BALANCE_PATTERNS.balance],
      activeUntil: [...b.patterns.activeUntil, ...DEFAULT_BALANCE_PATTERNS.activeUntil],
    },
  };
}

/** The balance check of a modem: its config section, else its operator's defaults (for on-demand checks), else undefined. */
export function balanceSettingsFor(m: Pick<ModemConfig, 'balance' | 'operator'>): BalanceSettings | undefined {
  if (m.balance) return m.balance;
  if (!m.operator) return undefined;
  const d = DEFAULT_BALANCE_CHECKS[m.operator];
  return { code: d.code, replies: [...d.replies], intervalHours: 0, minBalance: 0, activeWarnDays: 7, patterns: DEFAULT_BALANCE_PATTERNS };
}

function flowSchema() {
  const step = z.discriminatedUnion(
    'kind',
    [
      object({ kind: z.literal('ussd'), code: text(), replies: optional(z.array(text())) }),
      object({ kind: z.literal('sms'), to: text(), text: text() }),
      object({ kind: z.literal('await-sms'), from: text(), token: optional(text()), timeoutSec: optional(int(5, 3600)) }),
    ],
    { error: 'expected a step {"kind": "ussd" | "sms" | "await-sms", ...}' },
  );
  return object({ operator: optional(text()), steps: z.array(step).min(1, 'expected at least one step') });
}

function resellerSchema(env: Env) {
  const paths = z.array(text()).optional();
  return object({
    /** The reseller API root (`{base_url}`, ending in /api/v1/convert-pulsa); default webhook.baseUrl. */
    baseUrl: optional(httpUrl()),
    /** X-API-KEY; "env:NAME" reads it from the environment. Never logged, masked by `config check`. */
    apiKey: optional(secret(env)),
    timeoutMs: int(100, 600_000).default(15_000),
    /** Where the order's fields are in the API's answers (dot paths, tried before the defaults). */
    orderPaths: object({ trxId: paths, ussdCode: paths, centerNumber: paths, status: paths }).prefault({}),
    /** Defaults for `test-transfer --order` (each can be given on the command line). */
    order: object({
      operatorId: optional(int(1, 1_000_000)),
      payoutMethod: optional(text()),
      payoutAccountNumber: optional(text()),
      payoutAccountName: optional(text()),
    }).prefault({}),
    /** Transfer flow overrides by operator key (telkomsel, indosat, xl, axis, smartfren, tri or a new one). */
    flows: z.record(z.string().regex(/^[a-z0-9_-]{1,40}$/, 'expected a lower-case operator key'), flowSchema(), { error: 'expected an object' }).default(() => ({})),
    /** Seconds a test transfer waits for the confirmation SMS, and polls an order. */
    confirmTimeoutSec: int(5, 3600).default(180),
  })
    .prefault({})
    .superRefine((r, ctx) => {
      for (const [key, flow] of Object.entries(r.flows ?? {})) {
        try {
          renderFlow({ operator: flow.operator ?? key, steps: flow.steps as FlowStepTemplate[] }, { to: '081200000000', amount: 10_000 });
        } catch (err) {
          if (err instanceof FlowError) ctx.addIssue({ code: 'custom', path: ['flows', key], message: err.message });
          else throw err;
        }
      }
    }, onAnyObject);
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
    /**
     * A record rejected by the server (404, 401, 422, or a 5xx of its own) and older than this goes to dead instead of
     * being retried; endpoint failures (network errors, timeouts, outages) never expire a record. null = never.
     */
    maxAgeHours: int(1, 24 * 365).nullable().default(72),
    /** Cap of the interval between probes while the webhook endpoint fails (one request per interval). */
    probeIntervalMs: int(50, 600_000).default(2000),
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
    /** With strictOrder: how long one rejected record may hold back its modem's later records (from its first rejection). */
    strictOrderHoldSec: int(0, 30 * 86_400).default(300),
  }).superRefine((w, ctx) => {
    if (isMissing(w.baseUrl) && isMissing(w.url)) {
      ctx.addIssue({ code: 'custom', path: ['baseUrl'], message: `required: the service's base URL, ending in ${API_PREFIX} (or webhook.url, the full webhook URL)` });
    }
  }, onAnyObject);
}

function spoolSchema() {
  return object({
    dir: orDefault(text(), '/var/lib/pulsa-bridge/spool'),
    sentRetentionDays: int(0, 3650).default(30),
    ignoredRetentionDays: int(0, 3650).default(30),
    fsync: bool().default(true),
  }).prefault({});
}

function configSchema(env: Env = process.env) {
  return object({
    webhook: webhookSchema(env).prefault({}),
    spool: spoolSchema(),
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
    /** The control socket operators' commands reach the running daemon through (src/control/server.ts). */
    control: object({
      /** Default: $RUNTIME_DIRECTORY/control.sock when systemd sets RUNTIME_DIRECTORY, else <spool.dir>/control.sock. */
      socket: optional(text()),
      /** Group that owns the socket (mode 0660), a name or a gid; default the daemon's own group (the unit's Group=). */
      group: optional(z.union([int(0, 2_147_483_647), text().pipe(matching(/^[A-Za-z_][A-Za-z0-9_.-]{0,31}$/, 'a group name or gid', true))])),
    }).prefault({}),
    /** Optional Prometheus listener (/metrics, /healthz): "host:port", off when absent. See src/metrics/. */
    metrics: object({ listen: optional(matching(/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, 'host:port, e.g. "127.0.0.1:9469"', true)) }).prefault({}),
    /** Pending records older than this make `status` exit 1 and /healthz answer 503. */
    health: object({ maxPendingAgeSec: int(10, 7 * 86_400).default(300) }).prefault({}),
    /** The reseller API, for `rates`, `calculate` and `test-transfer --order`. */
    reseller: resellerSchema(env),
    /** Where the daemon keeps small state between runs (rejected PINs per SIM). Default: spool.dir. */
    stateDir: optional(text()),
  }).transform((c) => {
    const { url, warning } = c.webhook.url ? { url: c.webhook.url, warning: undefined } : webhookUrl(c.webhook.baseUrl ?? '');
    const warnings = warning ? [warning] : [];
    for (const key of ['sentRetentionDays', 'ignoredRetentionDays'] as const) {
      if (c.spool[key] < DEDUPE_MIN_DAYS) {
        warnings.push(`spool.${key} ${c.spool[key]} is below the dedupe memory: records are kept ${DEDUPE_MIN_DAYS} days, so an SMS read again is still recognised`);
      }
    }
    const socketPath = c.control.socket ?? defaultControlSocket(env, c.spool.dir);
    const resellerBase = c.reseller.baseUrl ?? c.webhook.baseUrl ?? (c.webhook.url?.endsWith(WEBHOOK_PATH) ? c.webhook.url.slice(0, -WEBHOOK_PATH.length) : undefined);
    return {
      ...c,
      webhook: { ...c.webhook, endpoint: url },
      control: { ...c.control, socketPath },
      reseller: { ...c.reseller, baseUrl: resellerBase, flows: c.reseller.flows as Record<string, Partial<TransferFlow> & Pick<TransferFlow, 'steps'>> },
      warnings,
    };
  });
}

/** Where systemd's RuntimeDirectory=pulsa-bridge puts the socket (the CLI, started outside the unit, looks there). */
const SYSTEMD_RUNTIME_DIR = '/run/pulsa-bridge';
const CONTROL_SOCKET_NAME = 'control.sock';

/** The daemon's socket path: `$RUNTIME_DIRECTORY` (its first entry) when systemd set it, else beside the spool. */
function defaultControlSocket(env: Env, spoolDir: string): string {
  const runtime = env.RUNTIME_DIRECTORY?.split(':')[0];
  return `${runtime ? runtime.replace(/\/+$/, '') : spoolDir.replace(/\/+$/, '')}/${CONTROL_SOCKET_NAME}`;
}

/**
 * Where a CLI looks for the running daemon's socket, in order: the configured one only, when the config names it;
 * else the path this process would derive, the systemd unit's runtime directory, and the spool directory (a CLI run
 * from a login shell has no RUNTIME_DIRECTORY, the daemon under systemd has).
 */
export function controlSocketCandidates(cfg: Pick<Config, 'control' | 'spool'>): string[] {
  if (cfg.control.socket) return [cfg.control.socket];
  const spoolSide = `${cfg.spool.dir.replace(/\/+$/, '')}/${CONTROL_SOCKET_NAME}`;
  return [...new Set([cfg.control.socketPath, `${SYSTEMD_RUNTIME_DIR}/${CONTROL_SOCKET_NAME}`, spoolSide])];
}

export type Config = z.output<ReturnType<typeof configSchema>>;
export type ModemConfig = Config['modems'][number];
export type OtherSendersPolicy = ModemConfig['otherSenders'];
export type ResellerConfig = Config['reseller'];

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
  const raw = await readJson(file);
  try {
    return parseConfig(raw, env);
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError(err.problems, { file });
    throw err;
  }
}

/** What the operator commands that need only the spool (`status`, `queue ...`) take from the config. */
export interface SpoolOnlyConfig {
  spool: Config['spool'];
}

/**
 * Spool-only mode: reads the config file and validates its `spool` section alone. Secrets are not resolved and the
 * rest is not checked, so `status` and `queue ...` work for an operator whose shell lacks the service's environment
 * (`env:PB_PIN`); `run` and `config check` still validate everything. Throws ConfigError (naming the file).
 */
export async function loadSpoolConfig(file: string): Promise<SpoolOnlyConfig> {
  const raw = await readJson(file);
  // Not strict: the other sections are the daemon's business here.
  const r = z.object({ spool: spoolSchema() }, { error: 'expected an object' }).safeParse(raw);
  if (!r.success) throw new ConfigError(problemsOf(r.error), { file });
  return deepFreeze({ spool: r.data.spool });
}

async function readJson(file: string): Promise<unknown> {
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
    throw new ConfigError([`not valid JSON (${(err as Error).message})`], { file });
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
    reseller: { ...cfg.reseller, baseUrl: url(cfg.reseller.baseUrl), apiKey: mask(cfg.reseller.apiKey) },
  };
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object') {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}
