/**
 * PURE: the log line. Level numbers, the JSON line in pino's shape, redaction by path, error serialisation, and a safe
 * stringify for values JSON.stringify refuses. No I/O, no clock, no process: the caller passes time, pid and hostname.
 *
 * A line is `{"level":N,"time":ms,"pid":P,"hostname":"h","name":"pulsa-bridge"` + bindings (outer child first) + the
 * call's fields + `,"msg":"..."` + `}\n`, key for key what pino 10 wrote, so `jq` filters keep working:
 * - a field named like a base key (level, time, msg, ...) is written again after it, as pino does: JSON.parse and jq
 *   keep the last one; a `msg` field is overridden by the call's message;
 * - undefined, function and symbol values are left out; NaN and Infinity become null; BigInt is written as a number;
 * - `err` (and any other key whose value is an Error) becomes {type, message, stack, ...own enumerable props} like
 *   pino-std-serializers: the causes are folded into message (`outer: inner`) and stack (`caused by: ...`) (a cause
 *   that is not an error is kept as `cause`, which pino dropped); pino serialised only `err`;
 * - REDACT_PATHS: `a` the top-level key, `a.b` the key b of the object under a, `*` any one top-level key; the value
 *   becomes '[redacted]' in the line, the caller's object is never changed.
 * Building a line never throws: circular references become "[Circular]", a throwing getter "[Throws: ...]", and a line
 * that cannot be built at all (or exceeds MAX_LINE_BYTES) is replaced by one that keeps level, time and message.
 */

export const LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 } as const;
export type LevelName = keyof typeof LEVELS;

export function isLevelName(name: string): name is LevelName {
  return Object.prototype.hasOwnProperty.call(LEVELS, name);
}
/** A level a logger can be set to: a level name, or 'silent' for nothing. */
export type LevelSetting = LevelName | 'silent';

/** The threshold of a level name ('silent': above every level); throws on an unknown name, as pino does. */
export function levelValue(name: string): number {
  if (name === 'silent') return Infinity;
  const v = (LEVELS as Record<string, number>)[name];
  if (v === undefined) throw new Error(`unknown level ${name}`);
  return v;
}

/** The name of a level number (custom numbers fall to the standard level below them). */
export function levelName(level: number): LevelName {
  if (level >= 60) return 'fatal';
  if (level >= 50) return 'error';
  if (level >= 40) return 'warn';
  if (level >= 30) return 'info';
  if (level >= 20) return 'debug';
  return 'trace';
}

/**
 * syslog(3) priority of a level number: fatal -> 2 crit, error -> 3 err, warn -> 4 warning, info -> 6 info,
 * debug and trace -> 7 debug. Custom levels fall into the band of the standard level below them.
 */
export function syslogPriority(level: number): number {
  if (level >= 60) return 2;
  if (level >= 50) return 3;
  if (level >= 40) return 4;
  if (level >= 30) return 6;
  return 7;
}

export const REDACT_PATHS = [
  'apiKey',
  '*.apiKey',
  'pin',
  '*.pin',
  'hmacSecret',
  '*.hmacSecret',
  'headers.authorization',
  'headers.Authorization',
  '*.headers.authorization',
  '*.headers.Authorization',
  'config.webhook.hmacSecret',
  'config.webhook.headers',
];
export const CENSOR = '[redacted]';

/**
 * Longest line (UTF-8 bytes, newline included) written as built; a longer one is rebuilt with long strings cut.
 * journald splits a stream line longer than its LineMax (48 KiB by default) into entries that are not JSON; this stays
 * under it with room for the `<N>` prefix.
 */
export const MAX_LINE_BYTES = 48 * 1024 - 64;
/** Where a string is cut when its line is over MAX_LINE_BYTES. */
export const CUT_STRING_CHARS = 4 * 1024;

/** Redaction paths as a tree: a node with `censor` replaces the value; `children` go one key deeper. */
interface RedactNode {
  censor: boolean;
  children: Map<string, RedactNode>;
}

function compile(paths: readonly string[]): RedactNode {
  const root: RedactNode = { censor: false, children: new Map() };
  for (const p of paths) {
    let node = root;
    for (const seg of p.split('.')) {
      let next = node.children.get(seg);
      if (!next) node.children.set(seg, (next = { censor: false, children: new Map() }));
      node = next;
    }
    node.censor = true;
  }
  return root;
}

const REDACT = compile(REDACT_PATHS);
const wildcard = REDACT.children.get('*');

/** The nodes that apply to each top-level key: its own and the wildcard's (built once). */
const WILDCARD_ONLY: RedactNode[] = wildcard ? [wildcard] : [];
const NODES_BY_KEY = new Map<string, RedactNode[]>(
  [...REDACT.children].filter(([k]) => k !== '*').map(([k, own]) => [k, wildcard ? [own, wildcard] : [own]]),
);

/**
 * `value` with the paths below `nodes` censored: a copy where something was censored, the value itself otherwise.
 * Only plain keys of non-null objects are followed (an array has no key `pin`).
 */
function redactBelow(value: unknown, nodes: RedactNode[]): unknown {
  if (value === null || typeof value !== 'object') return value;
  let copy: Record<string, unknown> | undefined;
  for (const node of nodes) {
    for (const [seg, child] of node.children) {
      const src = (copy ?? value) as Record<string, unknown>;
      if (seg === '*' || !Object.prototype.hasOwnProperty.call(src, seg)) continue;
      const next = child.censor ? CENSOR : redactBelow(src[seg], [child]);
      if (next === src[seg]) continue;
      copy ??= Array.isArray(value) ? ([...value] as unknown as Record<string, unknown>) : { ...(value as Record<string, unknown>) };
      copy[seg] = next;
    }
  }
  return copy ?? value;
}

/** The value to write for top-level key `key`, censored per REDACT_PATHS (the node of `key` itself censors outright). */
function redactTop(key: string, value: unknown): unknown {
  const nodes = NODES_BY_KEY.get(key) ?? WILDCARD_ONLY;
  if (nodes.length === 0) return value;
  if (nodes[0]!.censor && nodes[0] !== wildcard) return CENSOR;
  return redactBelow(value, nodes);
}

const isErrorLike = (v: unknown): v is { message: string } =>
  v !== null && typeof v === 'object' && typeof (v as { message?: unknown }).message === 'string';

function causeOf(err: unknown): unknown {
  const cause = (err as { cause?: unknown }).cause;
  if (typeof cause === 'function') {
    // VError style: cause() returns the cause
    const r: unknown = (cause as () => unknown).call(err);
    return isErrorLike(r) ? r : undefined;
  }
  return isErrorLike(cause) ? cause : undefined;
}

function messageWithCauses(err: unknown, seen: Set<unknown>, skip = false): string {
  if (!isErrorLike(err)) return '';
  const message = skip ? '' : err.message || '';
  if (seen.has(err)) return `${message}: ...`;
  const cause = causeOf(err);
  if (!cause) return message;
  seen.add(err);
  const vErrorStyle = typeof (err as { cause?: unknown }).cause === 'function';
  return message + (vErrorStyle ? '' : ': ') + messageWithCauses(cause, seen, vErrorStyle);
}

function stackWithCauses(err: unknown, seen: Set<unknown>): string {
  if (!isErrorLike(err)) return '';
  const stack = String((err as { stack?: unknown }).stack || '');
  if (seen.has(err)) return `${stack}\ncauses have become circular...`;
  const cause = causeOf(err);
  if (!cause) return stack;
  seen.add(err);
  return `${stack}\ncaused by: ${stackWithCauses(cause, seen)}`;
}

const throws = (e: unknown): string => `[Throws: ${e instanceof Error ? e.message : String(e)}]`;

/**
 * pino-std-serializers' err: {type, message (with causes), stack (with causes), aggregateErrors?, ...every enumerable
 * property not set yet}; error-like values below are serialised too, an error `cause` through message and stack, any
 * other cause (enumerable or not) as `cause`: the one addition to pino's serializer. A value
 * that is not error-like is returned as is. Never throws: a part that throws is written as "[Throws: ...]".
 */
export function serializeError(err: unknown, seen: Set<unknown> = new Set()): unknown {
  if (!isErrorLike(err)) return err;
  const out: Record<string, unknown> = {};
  seen.add(err);
  const part = (f: () => unknown): unknown => {
    try {
      return f();
    } catch (e) {
      return throws(e);
    }
  };
  out.type = part(() => {
    const ctor = (err as { constructor?: unknown }).constructor;
    return typeof ctor === 'function' ? ctor.name : (err as { name?: unknown }).name;
  });
  out.message = part(() => messageWithCauses(err, new Set()));
  out.stack = part(() => stackWithCauses(err, new Set()));
  const errors = part(() => (err as { errors?: unknown }).errors);
  if (Array.isArray(errors)) out.aggregateErrors = errors.map((e) => (seen.has(e) ? '[Circular]' : serializeError(e, seen)));
  let keys: string[] = [];
  try {
    // for...in, like the original: inherited enumerable props count too
    for (const k in err) keys.push(k);
  } catch (e) {
    keys = [];
    out.keys = throws(e);
  }
  for (const key of keys) {
    if (out[key] !== undefined) continue;
    const val = part(() => (err as Record<string, unknown>)[key]);
    if (isErrorLike(val)) {
      if (key !== 'cause' && !seen.has(val)) out[key] = serializeError(val, seen);
    } else {
      out[key] = val;
    }
  }
  if (out.cause === undefined) {
    // Error's own `cause` option is not enumerable: a cause that is not an error (a string, a code) would be lost
    const cause = part(() => (err as { cause?: unknown }).cause);
    if (cause !== undefined && typeof cause !== 'function' && !isErrorLike(cause)) out.cause = cause;
  }
  seen.delete(err);
  return out;
}

/** Depth beyond which the safe stringify writes "[Object]" / "[Array]" (pino's fallback does the same at 5). */
const SAFE_MAX_DEPTH = 8;

/**
 * JSON for values JSON.stringify throws on: "[Circular]" for a reference to an enclosing object, BigInt as a number,
 * "[Throws: ...]" for a getter or toJSON that throws. Returns undefined where JSON.stringify would (undefined,
 * functions, symbols).
 */
export function safeStringify(value: unknown, cut = Infinity): string | undefined {
  const stack: unknown[] = [];
  const str = (s: string): string => JSON.stringify(s.length > cut ? cutString(s, cut) : s);
  const walk = (v: unknown): string | undefined => {
    if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function') {
      try {
        v = (v as { toJSON: () => unknown }).toJSON();
      } catch (e) {
        return str(throws(e));
      }
    }
    switch (typeof v) {
      case 'string':
        return str(v);
      case 'number':
        return Number.isFinite(v) ? String(v) : 'null';
      case 'boolean':
        return String(v);
      case 'bigint':
        return v.toString();
      case 'undefined':
      case 'function':
      case 'symbol':
        return undefined;
    }
    if (v === null) return 'null';
    if (stack.includes(v)) return '"[Circular]"';
    const isArray = Array.isArray(v);
    if (stack.length >= SAFE_MAX_DEPTH) return isArray ? '"[Array]"' : '"[Object]"';
    stack.push(v);
    try {
      if (isArray) {
        const items = (v as unknown[]).map((item, i) => {
          let x: unknown;
          try {
            x = (v as unknown[])[i];
          } catch (e) {
            return str(throws(e));
          }
          return walk(x) ?? 'null';
        });
        return `[${items.join(',')}]`;
      }
      const parts: string[] = [];
      for (const key of Object.keys(v as object)) {
        let x: unknown;
        try {
          x = (v as Record<string, unknown>)[key];
        } catch (e) {
          x = throws(e);
        }
        const s = walk(x);
        if (s !== undefined) parts.push(`${JSON.stringify(key)}:${s}`);
      }
      return `{${parts.join(',')}}`;
    } catch (e) {
      return str(throws(e));
    } finally {
      stack.pop();
    }
  };
  return walk(value);
}

function cutString(s: string, cut: number): string {
  return `${s.slice(0, cut)}...[${s.length - cut} more chars]`;
}

/** JSON of one value: JSON.stringify where it can, safeStringify where it throws (or when strings must be cut). */
function stringifyValue(value: unknown, cut: number): string | undefined {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value.length > cut ? cutString(value, cut) : value);
    case 'number':
      return Number.isFinite(value) ? String(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
  }
  if (cut === Infinity) {
    try {
      return JSON.stringify(value);
    } catch {
      // circular, BigInt, a throwing getter or toJSON: the safe way below
    }
  }
  return safeStringify(value, cut);
}

/**
 * `,"key":value` for every own enumerable field of `obj` that is written (see the header): serialised errors, redacted.
 * `skipLevel` leaves out a key named `level` (pino ignores it in child bindings).
 */
export function fieldsJson(obj: object, cut = Infinity, skipLevel = false): string {
  let out = '';
  for (const key in obj) {
    if (!Object.prototype.hasOwnProperty.call(obj, key)) continue;
    if (skipLevel && key === 'level') continue;
    let value: unknown;
    try {
      value = (obj as Record<string, unknown>)[key];
    } catch (e) {
      value = throws(e);
    }
    if (value === undefined) continue;
    if (key === 'err' ? isErrorLike(value) : value instanceof Error) value = serializeError(value);
    value = redactTop(key, value);
    const json = stringifyValue(value, cut);
    if (json !== undefined) out += `,${JSON.stringify(key)}:${json}`;
  }
  return out;
}

/** `,"pid":P,"hostname":"h","name":"pulsa-bridge"`: the fields every line carries after level and time. */
export function baseJson(pid: number, hostname: string, name = 'pulsa-bridge'): string {
  return `,"pid":${pid},"hostname":${JSON.stringify(hostname)},"name":${JSON.stringify(name)}`;
}

export interface LineParts {
  level: number;
  time: number;
  /** baseJson() + the bindings' fieldsJson(), outer child first. */
  bindings: string;
  /** The call's object (undefined for a message alone). */
  obj: object | undefined;
  msg: unknown;
}

function msgJson(msg: unknown, cut: number): string {
  if (msg === undefined) return '';
  const json = typeof msg === 'string' ? JSON.stringify(msg.length > cut ? cutString(msg, cut) : msg) : stringifyValue(msg, cut);
  return json === undefined ? '' : `,"msg":${json}`;
}

/** Whether a line fits MAX_LINE_BYTES (a UTF-8 char is at most 3 bytes per UTF-16 unit: most lines need no count). */
function fits(line: string): boolean {
  return line.length * 3 <= MAX_LINE_BYTES || Buffer.byteLength(line, 'utf8') <= MAX_LINE_BYTES;
}

/** The JSON line (with its newline) for one call; never throws, never longer than MAX_LINE_BYTES. */
export function buildLine(p: LineParts): string {
  const head = `{"level":${p.level},"time":${p.time}`;
  try {
    const line = `${head}${p.bindings}${p.obj === undefined ? '' : fieldsJson(p.obj)}${msgJson(p.msg, Infinity)}}\n`;
    if (fits(line)) return line;
  } catch {
    // e.g. RangeError: Invalid string length: the cut version below
  }
  try {
    const line = `${head}${p.bindings}${p.obj === undefined ? '' : fieldsJson(p.obj, CUT_STRING_CHARS)}${msgJson(p.msg, CUT_STRING_CHARS)}}\n`;
    if (fits(line)) return line;
  } catch {
    // a field that cannot be written at all (e.g. a Proxy that throws on every trap): the last resort below
  }
  let msg = '';
  try {
    msg = msgJson(typeof p.msg === 'string' ? p.msg : safeStringify(p.msg, CUT_STRING_CHARS), CUT_STRING_CHARS);
  } catch {
    msg = '';
  }
  const last = `${head}${fits(p.bindings + p.bindings) ? p.bindings : ''}${msg},"logError":"fields left out: the line could not be written whole"}\n`;
  return fits(last) ? last : `${head},"logError":"fields and message left out: the line could not be written whole"}\n`;
}
