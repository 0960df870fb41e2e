/**
 * The control socket's wire protocol (version 1), PURE: newline-delimited JSON over a Unix socket, at most
 * MAX_LINE_BYTES a line. Client -> daemon `{"v":1,"id":7,"op":"at","modem":"m1","command":"AT+CSQ"}`; daemon -> client
 * one reply per request `{"v":1,"id":7,"ok":true,"result":...}` or `{..."ok":false,"error":{"code","message","hint"}}`,
 * and events `{"v":1,"event":"urc","modem":"m1","data":...}`. Every request line gets exactly one reply (id null when
 * none could be read) and a bad line changes nothing; unknown fields are refused, so a typo cannot drop an option.
 */
import * as v from 'valibot';

export const PROTOCOL_VERSION = 1;
/** One request line at most (an SMS body is at most a few KiB; a PDU for AT+CMGS well under this). */
export const MAX_LINE_BYTES = 64 * 1024;

export type ErrorCode =
  | 'bad_request' // not JSON, not an object, unknown op, bad or unknown fields
  | 'too_large'
  | 'version' // a protocol version this daemon does not speak
  | 'unknown_modem'
  | 'modem_unavailable' // disconnected, initialising, SIM not ready
  | 'busy' // a USSD session held by another client; too many requests in flight (connection, modem); the socket full
  | 'forbidden' // the operating level is needed (control.operateGroup) and the peer does not have it
  | 'refused' // a raw AT command that would break the daemon's state, without force
  | 'timeout'
  | 'modem_error' // ERROR / +CME / +CMS from the modem
  | 'not_found' // an empty SMS slot, a USSD session that is not open
  | 'cancelled'
  | 'internal';

/** An error answered on the wire with its code, message, hint and data (the daemon's dispatcher and the USSD broker throw it). */
export class ControlError extends Error {
  override readonly name: string = 'ControlError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly hint?: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export interface WireError {
  code: ErrorCode;
  message: string;
  hint?: string;
  /** Machine-readable details (e.g. the session owner for `busy`, the modem's lines for `modem_error`). */
  data?: unknown;
}

// Field types. The messages are the ones operators' tools have seen since version 1 (worded as zod worded them).

const typeName = (x: unknown): string =>
  x === null
    ? 'null'
    : Array.isArray(x)
      ? 'array'
      : typeof x === 'number' && !Number.isFinite(x)
        ? String(x)
        : typeof x;
const wrongType = (expected: string) => (iss: v.BaseIssue<unknown>) =>
  `Invalid input: expected ${expected}, received ${typeName(iss.input)}`;

function str(min: number, max: number) {
  return v.pipe(
    v.string(wrongType('string')),
    v.minLength(min, `Too small: expected string to have >=${min} characters`),
    v.maxLength(max, `Too big: expected string to have <=${max} characters`),
  );
}

/** An integer from min to max: one message per value (not an integer, else too small, else too big). */
function int(min: number, max: number) {
  return v.pipe(
    v.custom<number>((x) => typeof x === 'number' && Number.isFinite(x), wrongType('number')),
    v.rawCheck<number>(({ dataset, addIssue }) => {
      if (!dataset.typed) return;
      const n = dataset.value;
      if (!Number.isInteger(n)) addIssue({ message: 'Invalid input: expected int, received number' });
      else if (n < min) addIssue({ message: `Too small: expected number to be >=${min}` });
      else if (n > max) addIssue({ message: `Too big: expected number to be <=${max}` });
    }),
  );
}

const bool = () => v.boolean(wrongType('boolean'));

function oneOf<const T extends readonly [string, ...string[]]>(values: T) {
  return v.picklist(values, `Invalid option: expected one of ${values.map((x) => JSON.stringify(x)).join('|')}`);
}

function list<T extends v.GenericSchema>(item: T, min: number, max: number) {
  return v.pipe(
    v.array(item, wrongType('array')),
    v.minLength(min, `Too small: expected array to have >=${min} items`),
    v.maxLength(max, `Too big: expected array to have <=${max} items`),
  );
}

const modem = v.optional(str(1, 64));
const index = int(0, 65_535);
const id = v.union(
  [
    v.pipe(
      v.number(),
      v.integer('Invalid input'),
      v.minValue(Number.MIN_SAFE_INTEGER, `Too small: expected int to be >=${Number.MIN_SAFE_INTEGER}`),
      v.maxValue(Number.MAX_SAFE_INTEGER, `Too big: expected int to be <=${Number.MAX_SAFE_INTEGER}`),
    ),
    v.pipe(v.string(), v.maxLength(64, 'Too big: expected string to have <=64 characters')),
  ],
  'Invalid input',
);

/**
 * A request of one op: exactly these fields besides v, id, modem and op (any other is refused, all named in one
 * message); a missing field reads as the field's own message about `undefined`.
 */
function request<const Op extends string, S extends v.ObjectEntries>(op: Op, fields: S) {
  const entries = { v: v.literal(PROTOCOL_VERSION), id, modem, op: v.literal(op), ...fields };
  const allowed = new Set(Object.keys(entries));
  const schema = v.looseObject(entries, (iss) => {
    const field = entries[String(iss.path?.[0]?.key) as keyof typeof entries] as v.GenericSchema | undefined;
    return (field && v.safeParse(field, undefined).issues?.[0]?.message) || 'Invalid input';
  });
  return v.pipe(
    v.custom<Record<string, unknown>>(
      (x) => typeof x === 'object' && x !== null && !Array.isArray(x),
      'a request is a JSON object',
    ),
    v.rawTransform(({ dataset, addIssue, NEVER }: v.RawTransformContext<Record<string, unknown>>) => {
      const raw = dataset.value;
      const r = v.safeParse(schema, raw);
      for (const iss of r.issues ?? [])
        addIssue(iss.path ? { message: iss.message, path: iss.path } : { message: iss.message });
      // From the raw keys: the object schema leaves keys such as __proto__ out of its output.
      const unknown = Object.keys(raw).filter((k) => !allowed.has(k));
      if (unknown.length > 0)
        addIssue({
          message: `Unrecognized key${unknown.length > 1 ? 's' : ''}: ${unknown.map((k) => JSON.stringify(k)).join(', ')}`,
        });
      if (!r.success || unknown.length > 0) return NEVER;
      const out: Record<string, unknown> = {};
      for (const k of allowed) if (k in r.output) out[k] = (r.output as Record<string, unknown>)[k];
      return out as v.InferOutput<v.ObjectSchema<typeof entries, undefined>>;
    }),
  );
}

/** Every op's request, by op name. */
const requestSchemas = {
  /** The daemon's version, protocol version and modems (names, states): the CLI's first call. */
  hello: request('hello', { client: v.optional(str(0, 200)) }),
  status: request('status', {}),
  /** Identity, SIM, signal, registration, operator, SMSC, storage of one modem. */
  info: request('info', {}),
  /**
   * A raw AT command, sent as typed (nothing else is sent before it). `force` allows commands that change the state
   * the daemon relies on (then the daemon re-checks its settings). `body` answers a `> ` prompt (AT+CMGS): the text
   * or PDU, sent followed by Ctrl-Z; `cancelPrompt` sends Esc instead.
   */
  at: request('at', {
    command: str(1, 4096),
    force: v.optional(bool()),
    timeoutMs: v.optional(int(100, 600_000)),
    body: v.optional(str(0, 8192)),
    cancelPrompt: v.optional(bool()),
  }),
  /** Opens a USSD session (one per modem). The reply carries the first menu; status 1 means the network asks more. */
  'ussd.open': request('ussd.open', { code: str(1, 182), timeoutMs: v.optional(int(1000, 300_000)) }),
  /** Answers the open session (only its owner may). */
  'ussd.reply': request('ussd.reply', { text: str(1, 182), timeoutMs: v.optional(int(1000, 300_000)) }),
  /** Ends the open session (AT+CUSD=2). */
  'ussd.cancel': request('ussd.cancel', {}),
  'sms.list': request('sms.list', { which: v.optional(oneOf(['all', 'unread'])) }),
  'sms.read': request('sms.read', { index }),
  'sms.delete': request('sms.delete', { index }),
  'sms.send': request('sms.send', { to: str(1, 32), text: str(1, 8192) }),
  /** Streams events to this connection: URCs of the modem(s), SMS spooled and their delivery results. */
  subscribe: request('subscribe', { events: list(oneOf(['urc', 'sms', 'delivery', 'ussd']), 1, 4) }),
  /** A balance check now (the configured code and replies unless given). */
  balance: request('balance', { code: v.optional(str(1, 182)), replies: v.optional(list(str(1, 182), 0, 10)) }),
  /** The canaries (scheduled test transfers): their state, today's spend, last run. */
  'canary.ls': request('canary.ls', {}),
  /** Runs a canary now (its cap and pause still hold); answers when the run has ended. */
  'canary.run': request('canary.run', { name: str(1, 64) }),
  /** Pauses a canary until `canary.resume`. */
  'canary.pause': request('canary.pause', { name: str(1, 64) }),
  /** Lifts a canary's pause (and its count of failures in a row). */
  'canary.resume': request('canary.resume', { name: str(1, 64) }),
};

export type Op = keyof typeof requestSchemas;
export type Request = { [K in Op]: v.InferOutput<(typeof requestSchemas)[K]> }[Op];
export const OPS: readonly Op[] = Object.keys(requestSchemas) as Op[];

export type Reply =
  | { v: typeof PROTOCOL_VERSION; id: Request['id'] | null; ok: true; result: unknown }
  | { v: typeof PROTOCOL_VERSION; id: Request['id'] | null; ok: false; error: WireError };

export interface EventMessage {
  v: typeof PROTOCOL_VERSION;
  event: 'urc' | 'sms' | 'delivery' | 'ussd' | 'closing';
  modem?: string;
  /** The request this event belongs to (a USSD session's menus), when it belongs to one. */
  id?: Request['id'];
  data: unknown;
}

export type ParsedRequest = { ok: true; request: Request } | { ok: false; reply: Reply };

export function errorReply(id: Request['id'] | null, error: WireError): Reply {
  return { v: PROTOCOL_VERSION, id, ok: false, error };
}

export function okReply(id: Request['id'], result: unknown): Reply {
  return { v: PROTOCOL_VERSION, id, ok: true, result };
}

function readId(value: unknown): Request['id'] | null {
  if (value === null || typeof value !== 'object') return null;
  const id = (value as Record<string, unknown>).id;
  if (typeof id === 'number' && Number.isInteger(id)) return id;
  if (typeof id === 'string' && id.length <= 64) return id;
  return null;
}

/** One request line -> a validated request, or the error reply to send. Never throws. */
export function parseRequest(line: string): ParsedRequest {
  if (Buffer.byteLength(line, 'utf8') > MAX_LINE_BYTES) {
    return {
      ok: false,
      reply: errorReply(null, { code: 'too_large', message: `request longer than ${MAX_LINE_BYTES} bytes` }),
    };
  }
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (err) {
    return {
      ok: false,
      reply: errorReply(null, { code: 'bad_request', message: `not JSON: ${(err as Error).message}` }),
    };
  }
  const id = readId(value);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, reply: errorReply(null, { code: 'bad_request', message: 'a request is a JSON object' }) };
  }
  const version = (value as Record<string, unknown>).v;
  if (version !== PROTOCOL_VERSION) {
    return {
      ok: false,
      reply: errorReply(id, {
        code: 'version',
        message: `protocol version ${JSON.stringify(version)} is not spoken here (this daemon speaks ${PROTOCOL_VERSION})`,
        hint: 'use the pulsa-bridge CLI of the same release as the daemon',
      }),
    };
  }
  const op = (value as Record<string, unknown>).op;
  if (typeof op !== 'string' || !Object.hasOwn(requestSchemas, op)) {
    return {
      ok: false,
      reply: errorReply(id, {
        code: 'bad_request',
        message: `unknown op ${JSON.stringify(op)} (known: ${OPS.join(', ')})`,
      }),
    };
  }
  const parsed = v.safeParse(requestSchemas[op as Op], value);
  if (!parsed.success) {
    const issues = parsed.issues.map(
      (i) => `${i.path?.length ? i.path.map((p) => String(p.key)).join('.') : op}: ${i.message}`,
    );
    return { ok: false, reply: errorReply(id, { code: 'bad_request', message: issues.join('; ') }) };
  }
  return { ok: true, request: parsed.output as Request };
}

/** Serialises one message as a line (the trailing newline included). */
export function encodeLine(message: Reply | EventMessage | Request): string {
  return JSON.stringify(message) + '\n';
}
