/**
 * Configuration: loaded and validated once, at the boundary, into a frozen, fully-defaulted Config. One valibot
 * declaration (configSchema, building blocks in config-fields.ts) gives the type, keys, defaults and messages; unknown
 * keys are rejected and every problem is reported at once as `path: what was expected`. Secrets may be "env:NAME";
 * maskSecrets() hides them. Everything derived (webhook endpoint, warnings, balance patterns, transfer flows) is
 * compiled here, so a broken pattern or template fails at load, not when credit moves.
 */
import * as v from 'valibot';
import { compilePatterns, DEFAULT_BALANCE_PATTERNS, type BalancePatterns } from './balance/parse.js';
import { DEFAULT_BALANCE_CHECKS, OPERATORS, type OperatorKey } from './balance/operators.js';
import { ConfigError } from './errors.js';
import { PROFILE_SETTINGS, type ProfileSetting } from './modem/types.js';
import type { TransferFlow } from './transfer/flows.js';
import { DEDUPE_MIN_DAYS } from './spool/types.js';
import { madeUpSmsProblem } from './serial/port-kind.js';
import { maskUrl } from './redact.js';
import { deepFreeze, fileModeVerdict, readJson } from './config-file.js';
import { spoolSchema } from './config-spool.js';
import { controlSchema, controlSocketPath, modemList, modemName } from './config-control.js';
import { resellerSchema } from './config-reseller.js';
import { canariesSchema, checkCanaries } from './config-canary.js';
import { API_PREFIX, webhookSchema } from './config-webhook.js';
import {
  adder,
  bool,
  int,
  isMissing,
  matching,
  object,
  oneOf,
  optional,
  problemsOf,
  refine,
  secret,
  text,
  withDefault,
  wrongType,
  type AddIssue,
  type Env,
} from './config-fields.js';

export type { ProfileSetting };

/** Appended to webhook.baseUrl to give the URL the bridge posts to. */
const WEBHOOK_PATH = '/webhook/sms-gateway';

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;

// The declaration.

function modemSchema(env: Env) {
  const modem = object({
    name: modemName(),
    /** Serial port, preferably /dev/serial/by-id/...; or a virtual modem's `virtual:<name>?...` (serial/port-kind.ts). */
    port: text(),
    baudRate: withDefault(int(300, 4_000_000), 115200),
    profile: withDefault(oneOf(PROFILE_SETTINGS), 'auto'),
    pin: optional(v.pipe(secret(env), matching(/^\d{4,8}$/, '4 to 8 digits', false))),
    storage: withDefault(oneOf(['auto', 'SM', 'ME', 'MT']), 'auto'),
    delivery: withDefault(oneOf(['store', 'direct']), 'store'),
    senders: v.pipe(
      v.array(
        v.pipe(v.string('expected a non-empty string'), v.trim(), v.minLength(1, 'expected a non-empty string')),
        (iss) =>
          isMissing(iss.input)
            ? 'required: the operator sender ids to forward, e.g. ["858"] (or ["*"] for all)'
            : 'expected an array of non-empty strings',
      ),
      v.minLength(
        1,
        'expected at least one sender id, e.g. ["858"] (or ["*"] for all): an empty list would forward nothing',
      ),
    ),
    otherSenders: withDefault(oneOf(['archive', 'delete', 'keep']), 'archive'),
    sweepIntervalSec: withDefault(int(5, 86_400), 60),
    multipartTimeoutSec: withDefault(int(10, 7 * 86_400), 600),
    commandTimeoutMs: withDefault(int(500, 180_000), 10_000),
    /** The SIM's operator: picks the balance check and transfer flow defaults. */
    operator: optional(oneOf(OPERATORS)),
    /** The SIM's own number (08..., 628... or +628...): the sender of test transfers, a centre SIM's address. */
    number: optional(
      v.pipe(
        text(),
        matching(/^(?:\+?62|0)8\d{7,12}$/, 'an Indonesian mobile number (08..., 628... or +628...)', true),
      ),
    ),
    /** Periodic balance and active-period check (absent: checked only on demand). */
    balance: optional(balanceSchema()),
  });
  return v.pipe(
    modem,
    v.rawTransform(({ dataset, addIssue, NEVER }: v.RawTransformContext<v.InferOutput<typeof modem>>) => {
      const m = dataset.value;
      const balance = resolveBalance(m.balance, m.operator, adder(addIssue));
      return balance === null ? NEVER : { ...m, balance };
    }),
  );
}

function patternList() {
  return v.pipe(
    v.array(
      v.pipe(v.string('expected a regular expression source'), v.minLength(1, 'expected a regular expression source')),
      'expected an array of regular expression sources',
    ),
    refine<string[]>((list, addIssue) => {
      list.forEach((src, i) => {
        try {
          compilePatterns([src]);
        } catch (err) {
          addIssue({ path: [i], message: (err as Error).message });
        }
      });
    }),
  );
}

function balanceSchema() {
  return object({
    /** USSD code; default from the modem's `operator`. */
    code: optional(text()),
    /** Menu answers sent after the code, in order. */
    replies: optional(
      v.pipe(
        // The item messages are zod's defaults, kept word for word.
        v.array(
          v.pipe(
            v.string(wrongType('string')),
            v.minLength(1, 'Too small: expected string to have >=1 characters'),
            v.maxLength(182, 'Too big: expected string to have <=182 characters'),
          ),
          'expected an array of strings',
        ),
        v.maxLength(10, 'expected an array of strings'),
      ),
    ),
    /** Hours between checks (0: only on demand). */
    intervalHours: withDefault(
      v.pipe(
        v.number('expected a number of hours from 0 to 720'),
        v.minValue(0, 'expected a number of hours from 0 to 720'),
        v.maxValue(720, 'expected a number of hours from 0 to 720'),
      ),
      24,
    ),
    /** A balance below this many rupiah is a warning (0: never). */
    minBalance: withDefault(int(0, 100_000_000), 0),
    /** An active period ending within this many days is a warning. */
    activeWarnDays: withDefault(int(0, 365), 7),
    patterns: withDefault(
      object({ balance: withDefault(patternList(), () => []), activeUntil: withDefault(patternList(), () => []) }),
      () => ({}),
    ),
  });
}

type BalanceInput = v.InferOutput<ReturnType<typeof balanceSchema>>;

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

/** The balance settings, or null after reporting why there are none (no code, no operator to default it from). */
function resolveBalance(
  b: BalanceInput | undefined,
  operator: OperatorKey | undefined,
  addIssue: AddIssue,
): BalanceSettings | undefined | null {
  if (!b) return undefined;
  const defaults = operator ? DEFAULT_BALANCE_CHECKS[operator] : undefined;
  const code = b.code ?? defaults?.code;
  if (code === undefined) {
    addIssue({
      path: ['balance', 'code'],
      message: `required: the USSD code that shows the balance (or set "operator" to one of ${OPERATORS.join(', ')} for its default)`,
    });
    return null;
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
  return {
    code: d.code,
    replies: [...d.replies],
    intervalHours: 0,
    minBalance: 0,
    activeWarnDays: 7,
    patterns: DEFAULT_BALANCE_PATTERNS,
  };
}

function configSchema(env: Env = process.env) {
  const fields = object({
    webhook: withDefault(webhookSchema(env), () => ({})),
    spool: spoolSchema(),
    modems: modemList(modemSchema(env)),
    log: withDefault(
      object({
        level: withDefault(oneOf(LOG_LEVELS), 'info'),
        /** Pretty output on a terminal, JSON otherwise (journald). */
        pretty: withDefault(v.union([v.literal('auto'), v.boolean()], 'expected true, false or "auto"'), 'auto'),
      }),
      () => ({}),
    ),
    /** Seconds SIGTERM waits for the POSTs in flight before abandoning them (the records stay pending). */
    shutdownGraceSec: withDefault(int(0, 120), 5),
    control: controlSchema(),
    /**
     * Optional HTTP listener (/metrics, /healthz, the status page): off when `listen` is absent. See src/metrics/.
     * `listen` is "host:port", or a bare port for 127.0.0.1. `token` ("env:NAME" allowed) protects the page and its
     * JSON (bearer token, or the password of HTTP Basic auth); `protectMetrics` puts /metrics and /healthz behind it too.
     */
    metrics: withDefault(
      object({
        listen: optional(
          matching(
            /^((\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):)?\d{1,5}$/,
            'host:port or a port, e.g. "127.0.0.1:9469"',
            true,
          ),
        ),
        token: optional(v.pipe(secret(env), v.minLength(12, 'at least 12 characters (it guards the status page)'))),
        protectMetrics: withDefault(bool(), false),
        /** The status page: off, or masking message text and phone numbers unless these are set. */
        page: withDefault(
          object({
            enabled: withDefault(bool(), true),
            showText: withDefault(bool(), false),
            showNumbers: withDefault(bool(), false),
            recent: withDefault(int(0, 200), 20),
          }),
          () => ({}),
        ),
        /** Open connections at most (beyond it new ones are closed at once): file descriptors stay for the spool. */
        maxConnections: withDefault(int(4, 4096), 128),
        /** Host names the listener answers besides loopback names and IP literals (DNS rebinding is refused). */
        hosts: withDefault(
          v.array(
            v.pipe(text(), matching(/^[A-Za-z0-9.-]{1,253}$/, 'a host name', true)),
            'expected an array of host names',
          ),
          [],
        ),
      }),
      () => ({}),
    ),
    /** Pending records older than this make `status` exit 1 and /healthz answer 503. */
    health: withDefault(object({ maxPendingAgeSec: withDefault(int(10, 7 * 86_400), 300) }), () => ({})),
    /** The reseller API, for `rates`, `calculate` and `test-transfer --order`. */
    reseller: resellerSchema(env),
    /** Scheduled test transfers the daemon runs itself, each with a daily cap (config-canary.ts, src/canary/). */
    canaries: canariesSchema(),
    /** Where the daemon keeps small state between runs (rejected PINs per SIM). Default: spool.dir. */
    stateDir: optional(text()),
  });
  return v.pipe(
    fields,
    refine<v.InferOutput<typeof fields>>((c, addIssue) => checkCanaries(c, addIssue)),
    v.transform((c: v.InferOutput<typeof fields>) => {
      const { url, warning } = c.webhook.url
        ? { url: c.webhook.url, warning: undefined }
        : webhookUrl(c.webhook.baseUrl ?? '');
      const warnings = warning ? [warning] : [];
      for (const key of ['sentRetentionDays', 'ignoredRetentionDays'] as const) {
        if (c.spool[key] < DEDUPE_MIN_DAYS) {
          warnings.push(
            `spool.${key} ${c.spool[key]} is below the dedupe memory: records are kept ${DEDUPE_MIN_DAYS} days, so an SMS read again is still recognised`,
          );
        }
      }
      const listen =
        c.metrics.listen === undefined || c.metrics.listen.includes(':')
          ? c.metrics.listen
          : `127.0.0.1:${c.metrics.listen}`;
      if (listen !== undefined && c.metrics.token === undefined && !isLoopbackListen(listen)) {
        warnings.push(
          `metrics.listen ${listen} is reachable beyond this machine and metrics.token is not set: anyone on the network can read the status page (modems, balances, SMS senders); set metrics.token`,
        );
      }
      const socketPath = controlSocketPath(c.control, c.spool.dir, env);
      const resellerBase =
        c.reseller.baseUrl ??
        c.webhook.baseUrl ??
        (c.webhook.url?.endsWith(WEBHOOK_PATH) ? c.webhook.url.slice(0, -WEBHOOK_PATH.length) : undefined);
      if (isPlainRemote(url)) {
        warnings.push(
          `webhook URL ${maskUrl(url)} is plain http:// to a host that is not this machine: every SMS, its Authorization header and HMAC signature travel unencrypted; use https://`,
        );
      }
      // The shipped example's values left in place: the daemon would post to nowhere and open a port that is not there.
      const exampleHost = (u: string | undefined) =>
        u !== undefined && /^https?:\/\/([^/]*\.)?example\.(com|org|net)(:\d+)?(\/|$)/i.test(u);
      if (exampleHost(c.webhook.baseUrl) || exampleHost(c.webhook.url))
        warnings.push(
          `webhook ${maskUrl(url)} is the example's address: set webhook.baseUrl to the convert-pulsa server`,
        );
      c.modems.forEach((m, i) => {
        if (/0123456789ABCDEF/.test(m.port))
          warnings.push(
            `modems[${i}].port ${m.port} is the example's made-up modem: set the port \`pulsa-bridge ports\` shows (its /dev/serial/by-id/ path)`,
          );
      });
      const madeUp = madeUpSmsProblem(
        c.modems.map((m) => m.port),
        isLoopbackUrl(url),
        maskUrl(url),
      );
      if (madeUp) warnings.push(`${madeUp}: \`run\` refuses this config`);
      if (
        resellerBase !== undefined &&
        isPlainRemote(resellerBase) &&
        (c.reseller.apiKey !== undefined || c.reseller.baseUrl !== undefined)
      ) {
        warnings.push(
          `reseller URL ${maskUrl(resellerBase)} is plain http:// to a host that is not this machine: the X-API-KEY travels unencrypted; use https://`,
        );
      }
      return {
        ...c,
        webhook: { ...c.webhook, endpoint: url },
        metrics: { ...c.metrics, listen },
        control: { ...c.control, socketPath },
        reseller: {
          ...c.reseller,
          baseUrl: resellerBase,
          flows: c.reseller.flows as Record<string, Partial<TransferFlow> & Pick<TransferFlow, 'steps'>>,
        },
        warnings,
      };
    }),
  );
}

/** Whether a listen address ("host:port") is on the loopback interface only. */
export function isLoopbackListen(listen: string): boolean {
  const host = listen
    .replace(/:\d+$/, '')
    .replace(/^\[|\]$/g, '')
    .toLowerCase();
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export type Config = v.InferOutput<ReturnType<typeof configSchema>>;
export type ModemConfig = Config['modems'][number];
export type OtherSendersPolicy = ModemConfig['otherSenders'];
export type ResellerConfig = Config['reseller'];

/** Validates a parsed JSON value. Throws ConfigError listing every problem. */
export function parseConfig(raw: unknown, env: Env = process.env): Config {
  const r = v.safeParse(configSchema(env), raw);
  if (!r.success) throw new ConfigError(problemsOf(r.issues));
  return deepFreeze(r.output);
}

/** Reads and validates a config file. Throws ConfigError (naming the file) on any problem. */
export async function loadConfig(file: string, env: Env = process.env): Promise<Config> {
  const raw = await readJson(file);
  const mode = await fileModeVerdict(file, raw);
  let config: Config;
  try {
    config = parseConfig(raw, env);
  } catch (err) {
    if (err instanceof ConfigError)
      throw new ConfigError(mode.problem ? [mode.problem, ...err.problems] : err.problems, { file });
    throw err;
  }
  if (mode.problem) throw new ConfigError([mode.problem], { file });
  return mode.warning ? deepFreeze({ ...config, warnings: [...config.warnings, mode.warning] }) : config;
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
    throw new ConfigError([
      `webhook.baseUrl: expected an absolute http(s) URL, got ${JSON.stringify(maskUrl(baseUrl))}`,
    ]);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError([`webhook.baseUrl: expected http or https, got ${parsed.protocol}`]);
  }
  const url = base + WEBHOOK_PATH;
  if (!parsed.pathname.replace(/\/+$/, '').endsWith(API_PREFIX)) {
    return {
      url,
      warning: `webhook base URL ${maskUrl(base)} does not end in ${API_PREFIX}; posting to ${maskUrl(url)}`,
    };
  }
  return { url };
}

/** Whether a URL's host is this machine: localhost (and *.localhost), 127.0.0.0/8, ::1. Unparseable: false. */
export function isLoopbackUrl(value: string): boolean {
  let host: string;
  try {
    host = new URL(value).hostname.toLowerCase();
  } catch {
    return false;
  }
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  return (
    host === 'localhost' ||
    host.endsWith('.localhost') ||
    /^127(?:\.\d{1,3}){3}$/.test(host) ||
    host === '::1' ||
    host === '::ffff:7f00:1'
  );
}

/** A plain http:// URL to another machine (what is sent travels in clear). */
function isPlainRemote(value: string): boolean {
  try {
    return new URL(value).protocol === 'http:' && !isLoopbackUrl(value);
  } catch {
    return false;
  }
}

const MASK = '********';

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
    metrics: { ...cfg.metrics, token: mask(cfg.metrics.token) },
  };
}
