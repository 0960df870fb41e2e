/**
 * Configuration: loaded and validated once, at the boundary, into a frozen, fully-defaulted Config.
 * Unknown keys are rejected; every problem is reported as `path: what was expected`, all at once.
 * Secrets (modem PIN, HMAC secret, header values) may be given as "env:NAME" to read them from the environment,
 * so the file itself can be world-readable.
 */
import { readFile } from 'node:fs/promises';
import { ConfigError } from './errors.js';
import { PROFILE_SETTINGS, type ProfileSetting } from './modem/types.js';

export type { ProfileSetting };
export type OtherSendersPolicy = 'archive' | 'delete' | 'keep';

export interface ModemConfig {
  name: string;
  port: string;
  baudRate: number;
  profile: ProfileSetting;
  pin: string | undefined;
  storage: 'auto' | 'SM' | 'ME' | 'MT';
  delivery: 'store' | 'direct';
  senders: string[];
  otherSenders: OtherSendersPolicy;
  sweepIntervalSec: number;
  multipartTimeoutSec: number;
  commandTimeoutMs: number;
  /** Use the built-in virtual modem instead of hardware (demo, tests, training). */
  simulate: boolean;
}

export interface WebhookConfig {
  baseUrl: string | undefined;
  url: string | undefined;
  timeoutMs: number;
  connectTimeoutMs: number;
  headers: Record<string, string>;
  hmacSecret: string | undefined;
  retry: { baseDelayMs: number; maxDelayMs: number; maxAgeHours: number | undefined };
  strictOrder: boolean;
}

export interface Config {
  webhook: WebhookConfig;
  spool: { dir: string; sentRetentionDays: number; ignoredRetentionDays: number; fsync: boolean };
  modems: ModemConfig[];
  log: { level: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'; pretty: 'auto' | boolean };
  /** Seconds SIGTERM waits for the POST in flight before abandoning it (the record stays pending). */
  shutdownGraceSec: number;
}

export const API_PREFIX = '/api/v1/convert-pulsa';

type Json = unknown;
type Env = Record<string, string | undefined>;

class Checker {
  readonly problems: string[] = [];
  constructor(readonly env: Env) {}

  problem(path: string, msg: string): void {
    this.problems.push(`${path}: ${msg}`);
  }

  object(v: Json, path: string, allowed: readonly string[]): Record<string, Json> | undefined {
    if (v === undefined) return {};
    if (typeof v !== 'object' || v === null || Array.isArray(v)) {
      this.problem(path, 'expected an object');
      return undefined;
    }
    const o = v as Record<string, Json>;
    for (const k of Object.keys(o)) {
      if (!allowed.includes(k)) this.problem(path ? `${path}.${k}` : k, `unknown key (allowed: ${allowed.join(', ')})`);
    }
    return o;
  }

  string(v: Json, path: string, opts: { required?: boolean; secret?: boolean; pattern?: RegExp; what?: string } = {}): string | undefined {
    if (v === undefined || v === null) {
      if (opts.required) this.problem(path, 'required');
      return undefined;
    }
    if (typeof v !== 'string' || v.length === 0) {
      this.problem(path, 'expected a non-empty string');
      return undefined;
    }
    let s = v;
    if (opts.secret && s.startsWith('env:')) {
      const name = s.slice(4);
      const val = this.env[name];
      if (val === undefined || val === '') {
        this.problem(path, `environment variable ${name} is not set`);
        return undefined;
      }
      s = val;
    }
    if (opts.pattern && !opts.pattern.test(s)) {
      this.problem(path, `expected ${opts.what ?? opts.pattern.source}${opts.secret ? '' : `, got ${JSON.stringify(s)}`}`);
      return undefined;
    }
    return s;
  }

  number(v: Json, path: string, def: number, min: number, max: number, integer = true): number {
    if (v === undefined) return def;
    if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isInteger(v)) || v < min || v > max) {
      this.problem(path, `expected ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`);
      return def;
    }
    return v;
  }

  bool(v: Json, path: string, def: boolean): boolean {
    if (v === undefined) return def;
    if (typeof v !== 'boolean') {
      this.problem(path, 'expected true or false');
      return def;
    }
    return v;
  }

  oneOf<T extends string>(v: Json, path: string, values: readonly T[], def: T): T {
    if (v === undefined) return def;
    if (typeof v !== 'string' || !values.includes(v as T)) {
      this.problem(path, `expected one of ${values.map((x) => JSON.stringify(x)).join(', ')}`);
      return def;
    }
    return v as T;
  }
}

function checkUrl(c: Checker, v: string | undefined, path: string): string | undefined {
  if (v === undefined) return undefined;
  try {
    const u = new URL(v);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') {
      c.problem(path, 'expected an http:// or https:// URL');
      return undefined;
    }
    return v;
  } catch {
    c.problem(path, `expected a URL, got ${JSON.stringify(v)}`);
    return undefined;
  }
}

function checkModem(c: Checker, raw: Json, i: number): ModemConfig | undefined {
  const path = `modems[${i}]`;
  const o = c.object(raw, path, [
    'name', 'port', 'baudRate', 'profile', 'pin', 'storage', 'delivery', 'senders', 'otherSenders',
    'sweepIntervalSec', 'multipartTimeoutSec', 'commandTimeoutMs', 'simulate',
  ]);
  if (!o) return undefined;
  const simulate = c.bool(o.simulate, `${path}.simulate`, false);
  const name = c.string(o.name, `${path}.name`, { required: true, pattern: /^[A-Za-z0-9_-]{1,40}$/, what: 'letters, digits, - or _ (at most 40)' });
  const port = c.string(o.port, `${path}.port`, { required: !simulate }) ?? (simulate ? `/virtual/${name ?? i}` : undefined);
  const pin = c.string(o.pin, `${path}.pin`, { secret: true, pattern: /^\d{4,8}$/, what: '4 to 8 digits' });
  let senders: string[] = [];
  if (o.senders === undefined) c.problem(`${path}.senders`, 'required: the operator sender ids to forward, e.g. ["858"] (or ["*"] for all)');
  else if (!Array.isArray(o.senders) || o.senders.some((s) => typeof s !== 'string' || s.trim() === '')) {
    c.problem(`${path}.senders`, 'expected an array of non-empty strings');
  } else senders = (o.senders as string[]).map((s) => s.trim());
  const m: ModemConfig = {
    name: name ?? `modem${i}`,
    port: port ?? '',
    baudRate: c.number(o.baudRate, `${path}.baudRate`, 115200, 300, 4_000_000),
    profile: c.oneOf(o.profile, `${path}.profile`, PROFILE_SETTINGS, 'auto'),
    pin,
    storage: c.oneOf(o.storage, `${path}.storage`, ['auto', 'SM', 'ME', 'MT'] as const, 'auto'),
    delivery: c.oneOf(o.delivery, `${path}.delivery`, ['store', 'direct'] as const, 'store'),
    senders,
    otherSenders: c.oneOf(o.otherSenders, `${path}.otherSenders`, ['archive', 'delete', 'keep'] as const, 'archive'),
    sweepIntervalSec: c.number(o.sweepIntervalSec, `${path}.sweepIntervalSec`, 60, 5, 86_400),
    multipartTimeoutSec: c.number(o.multipartTimeoutSec, `${path}.multipartTimeoutSec`, 600, 10, 7 * 86_400),
    commandTimeoutMs: c.number(o.commandTimeoutMs, `${path}.commandTimeoutMs`, 10_000, 500, 180_000),
    simulate,
  };
  return m;
}

/** Validates a parsed JSON value. Throws ConfigError listing every problem. */
export function parseConfig(raw: Json, env: Env = process.env): Config {
  const c = new Checker(env);
  const top = c.object(raw, '', ['webhook', 'spool', 'modems', 'log', 'shutdownGraceSec']);
  if (!top) throw new ConfigError(c.problems);

  const w = c.object(top.webhook, 'webhook', ['baseUrl', 'url', 'timeoutMs', 'connectTimeoutMs', 'headers', 'hmacSecret', 'retry', 'strictOrder']) ?? {};
  const baseUrl = checkUrl(c, c.string(w.baseUrl, 'webhook.baseUrl'), 'webhook.baseUrl');
  const url = checkUrl(c, c.string(w.url, 'webhook.url'), 'webhook.url');
  if (top.webhook === undefined || (baseUrl === undefined && url === undefined && w.baseUrl === undefined && w.url === undefined)) {
    c.problem('webhook.baseUrl', `required: the service's base URL, ending in ${API_PREFIX} (or webhook.url, the full webhook URL)`);
  }
  const headers: Record<string, string> = {};
  const h = c.object(w.headers, 'webhook.headers', Object.keys((w.headers as object | undefined) ?? {}));
  if (h) {
    for (const [k, v] of Object.entries(h)) {
      if (!/^[A-Za-z0-9-]+$/.test(k)) c.problem(`webhook.headers.${k}`, 'invalid header name');
      else if (['content-type', 'content-length', 'idempotency-key', 'x-api-key', 'host'].includes(k.toLowerCase())) {
        c.problem(`webhook.headers.${k}`, 'this header is set by pulsa-bridge and cannot be overridden');
      } else {
        const s = c.string(v, `webhook.headers.${k}`, { secret: true });
        if (s !== undefined) headers[k] = s;
      }
    }
  }
  const r = c.object(w.retry, 'webhook.retry', ['baseDelayMs', 'maxDelayMs', 'maxAgeHours']) ?? {};
  const baseDelayMs = c.number(r.baseDelayMs, 'webhook.retry.baseDelayMs', 1000, 10, 3_600_000);
  const maxDelayMs = c.number(r.maxDelayMs, 'webhook.retry.maxDelayMs', 300_000, 100, 86_400_000);
  if (maxDelayMs < baseDelayMs) c.problem('webhook.retry.maxDelayMs', 'must be at least webhook.retry.baseDelayMs');
  const maxAgeHours = r.maxAgeHours === undefined || r.maxAgeHours === null ? undefined : c.number(r.maxAgeHours, 'webhook.retry.maxAgeHours', 0, 1, 24 * 365);
  const webhook: WebhookConfig = {
    baseUrl,
    url,
    timeoutMs: c.number(w.timeoutMs, 'webhook.timeoutMs', 10_000, 100, 600_000),
    connectTimeoutMs: c.number(w.connectTimeoutMs, 'webhook.connectTimeoutMs', 5_000, 100, 600_000),
    headers,
    hmacSecret: c.string(w.hmacSecret, 'webhook.hmacSecret', { secret: true }),
    retry: { baseDelayMs, maxDelayMs, maxAgeHours },
    strictOrder: c.bool(w.strictOrder, 'webhook.strictOrder', false),
  };

  const s = c.object(top.spool, 'spool', ['dir', 'sentRetentionDays', 'ignoredRetentionDays', 'fsync']) ?? {};
  const spool = {
    dir: c.string(s.dir, 'spool.dir') ?? '/var/lib/pulsa-bridge/spool',
    sentRetentionDays: c.number(s.sentRetentionDays, 'spool.sentRetentionDays', 30, 0, 3650),
    ignoredRetentionDays: c.number(s.ignoredRetentionDays, 'spool.ignoredRetentionDays', 30, 0, 3650),
    fsync: c.bool(s.fsync, 'spool.fsync', true),
  };

  const modems: ModemConfig[] = [];
  if (!Array.isArray(top.modems) || top.modems.length === 0) {
    c.problem('modems', 'required: a non-empty array of modems');
  } else {
    top.modems.forEach((m, i) => {
      const mc = checkModem(c, m, i);
      if (mc) modems.push(mc);
    });
    const seenNames = new Set<string>();
    const seenPorts = new Set<string>();
    modems.forEach((m, i) => {
      if (seenNames.has(m.name)) c.problem(`modems[${i}].name`, `duplicate name ${JSON.stringify(m.name)}`);
      if (m.port && seenPorts.has(m.port)) c.problem(`modems[${i}].port`, `port ${m.port} is used by another modem`);
      seenNames.add(m.name);
      seenPorts.add(m.port);
    });
  }

  const l = c.object(top.log, 'log', ['level', 'pretty']) ?? {};
  const level = c.oneOf(l.level, 'log.level', ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const, 'info');
  let pretty: 'auto' | boolean = 'auto';
  if (l.pretty !== undefined && l.pretty !== 'auto') pretty = c.bool(l.pretty, 'log.pretty', false);

  const shutdownGraceSec = c.number(top.shutdownGraceSec, 'shutdownGraceSec', 5, 0, 120);
  if (c.problems.length > 0) throw new ConfigError(c.problems);
  return deepFreeze({ webhook, spool, modems, log: { level, pretty }, shutdownGraceSec });
}

/** Reads and validates a config file. Throws ConfigError (with the file name) on any problem. */
export async function loadConfig(file: string, env: Env = process.env): Promise<Config> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new ConfigError([`${file}: cannot read (${e.code ?? e.message})`]);
  }
  let raw: Json;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigError([`${file}: not valid JSON (${(err as Error).message})`]);
  }
  return parseConfig(raw, env);
}

/** The config with secrets masked, for `config check` and the start-up log. */
export function maskSecrets(cfg: Config): unknown {
  const mask = (v: string | undefined) => (v === undefined ? undefined : '********');
  return {
    ...cfg,
    webhook: {
      ...cfg.webhook,
      hmacSecret: mask(cfg.webhook.hmacSecret),
      headers: Object.fromEntries(Object.keys(cfg.webhook.headers).map((k) => [k, '********'])),
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
