/**
 * The control socket's wire protocol (version 1): newline-delimited JSON over a Unix socket, between the CLI (or any
 * operator tool) and the running daemon. PURE: no I/O; the server, the client and the fuzzer share this module.
 *
 * Framing: one JSON object per line, UTF-8, at most MAX_LINE_BYTES per line (a longer line is answered with
 * `too_large` and the connection is closed, since the rest of it cannot be framed).
 *
 * Client -> daemon, a request:   {"v":1,"id":7,"op":"at","modem":"telkomsel-1","command":"AT+CSQ"}
 * Daemon -> client, one reply:   {"v":1,"id":7,"ok":true,"result":{...}}
 *                           or:  {"v":1,"id":7,"ok":false,"error":{"code":"busy","message":"...","hint":"..."}}
 * Daemon -> client, events:      {"v":1,"event":"urc","modem":"telkomsel-1","data":{...}}   (after `subscribe`, or
 *                                 tied to a request by "id", e.g. the menus of a USSD session)
 *
 * Invariants: every request line gets exactly one reply (a line that is not a valid request gets an error reply with
 * the id when one could be read, else id null) and changes nothing; requests on one connection are answered in any
 * order (ids match them); a request names a modem by its config name (`modem` may be omitted when the daemon has
 * exactly one). Unknown fields are refused, so a typo cannot silently drop an option.
 */
import { z } from 'zod';

export const PROTOCOL_VERSION = 1;
/** One request line at most (an SMS body is at most a few KiB; a PDU for AT+CMGS well under this). */
export const MAX_LINE_BYTES = 64 * 1024;

export type ErrorCode =
  | 'bad_request' // not JSON, not an object, unknown op, bad or unknown fields
  | 'too_large'
  | 'version' // a protocol version this daemon does not speak
  | 'unknown_modem'
  | 'modem_unavailable' // disconnected, initialising, SIM not ready
  | 'busy' // a USSD session held by another client
  | 'refused' // a raw AT command that would break the daemon's state, without force
  | 'timeout'
  | 'modem_error' // ERROR / +CME / +CMS from the modem
  | 'not_found' // an empty SMS slot, a USSD session that is not open
  | 'cancelled'
  | 'internal';

export interface WireError {
  code: ErrorCode;
  message: string;
  hint?: string;
  /** Machine-readable details (e.g. the session owner for `busy`, the modem's lines for `modem_error`). */
  data?: unknown;
}

const modem = z.string().min(1).max(64).optional();
const index = z.number().int().min(0).max(65_535);
const base = { v: z.literal(PROTOCOL_VERSION), id: z.union([z.number().int(), z.string().max(64)]), modem };

const requestSchema = z.discriminatedUnion('op', [
  /** The daemon's version, protocol version and modems (names, states): the CLI's first call. */
  z.strictObject({ ...base, op: z.literal('hello'), client: z.string().max(200).optional() }),
  z.strictObject({ ...base, op: z.literal('status') }),
  /** Identity, SIM, signal, registration, operator, SMSC, storage of one modem. */
  z.strictObject({ ...base, op: z.literal('info') }),
  /**
   * A raw AT command, sent as typed (nothing else is sent before it). `force` allows commands that change the state
   * the daemon relies on (then the daemon re-checks its settings). `body` answers a `> ` prompt (AT+CMGS): the text
   * or PDU, sent followed by Ctrl-Z; `cancelPrompt` sends Esc instead.
   */
  z.strictObject({
    ...base,
    op: z.literal('at'),
    command: z.string().min(1).max(4096),
    force: z.boolean().optional(),
    timeoutMs: z.number().int().min(100).max(600_000).optional(),
    body: z.string().max(8192).optional(),
    cancelPrompt: z.boolean().optional(),
  }),
  /** Opens a USSD session (one per modem). The reply carries the first menu; status 1 means the network asks more. */
  z.strictObject({ ...base, op: z.literal('ussd.open'), code: z.string().min(1).max(182), timeoutMs: z.number().int().min(1000).max(300_000).optional() }),
  /** Answers the open session (only its owner may). */
  z.strictObject({ ...base, op: z.literal('ussd.reply'), text: z.string().min(1).max(182), timeoutMs: z.number().int().min(1000).max(300_000).optional() }),
  /** Ends the open session (AT+CUSD=2). */
  z.strictObject({ ...base, op: z.literal('ussd.cancel') }),
  z.strictObject({ ...base, op: z.literal('sms.list'), which: z.enum(['all', 'unread']).optional() }),
  z.strictObject({ ...base, op: z.literal('sms.read'), index }),
  z.strictObject({ ...base, op: z.literal('sms.delete'), index }),
  z.strictObject({ ...base, op: z.literal('sms.send'), to: z.string().min(1).max(32), text: z.string().min(1).max(8192) }),
  /** Streams events to this connection: URCs of the modem(s), SMS spooled and their delivery results. */
  z.strictObject({ ...base, op: z.literal('subscribe'), events: z.array(z.enum(['urc', 'sms', 'delivery', 'ussd'])).min(1).max(4) }),
  /** A balance check now (the configured code and replies unless given). */
  z.strictObject({
    ...base,
    op: z.literal('balance'),
    code: z.string().min(1).max(182).optional(),
    replies: z.array(z.string().min(1).max(182)).max(10).optional(),
  }),
]);

export type Request = z.infer<typeof requestSchema>;
export type Op = Request['op'];
export const OPS: readonly Op[] = requestSchema.options.map((o) => o.shape.op.value);

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
    return { ok: false, reply: errorReply(null, { code: 'too_large', message: `request longer than ${MAX_LINE_BYTES} bytes` }) };
  }
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (err) {
    return { ok: false, reply: errorReply(null, { code: 'bad_request', message: `not JSON: ${(err as Error).message}` }) };
  }
  const id = readId(value);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, reply: errorReply(null, { code: 'bad_request', message: 'a request is a JSON object' }) };
  }
  const v = (value as Record<string, unknown>).v;
  if (v !== PROTOCOL_VERSION) {
    return {
      ok: false,
      reply: errorReply(id, {
        code: 'version',
        message: `protocol version ${JSON.stringify(v)} is not spoken here (this daemon speaks ${PROTOCOL_VERSION})`,
        hint: 'use the pulsa-bridge CLI of the same release as the daemon',
      }),
    };
  }
  const op = (value as Record<string, unknown>).op;
  if (typeof op !== 'string' || !(OPS as readonly string[]).includes(op)) {
    return { ok: false, reply: errorReply(id, { code: 'bad_request', message: `unknown op ${JSON.stringify(op)} (known: ${OPS.join(', ')})` }) };
  }
  const parsed = requestSchema.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.length ? i.path.join('.') : op}: ${i.message}`);
    return { ok: false, reply: errorReply(id, { code: 'bad_request', message: issues.join('; ') }) };
  }
  return { ok: true, request: parsed.data };
}

/** Serialises one message as a line (the trailing newline included). */
export function encodeLine(message: Reply | EventMessage | Request): string {
  return JSON.stringify(message) + '\n';
}
