/**
 * Fuzz targets of the control socket's request parser (src/control/protocol.ts) and the config loader
 * (src/config.ts parseConfig).
 *
 * What must hold:
 * - parseRequest never throws, on any string (random, mutated valid requests, deep or huge JSON): it returns a
 *   validated request or exactly one error reply with a known code; a valid request round-trips (its encoded line
 *   parses back to the same request);
 * - parseConfig, on random and mutated configs, returns a frozen Config or throws one ConfigError whose problems each
 *   name a path; never another exception.
 */
import fc from 'fast-check';
import { parseConfig } from '../../src/config.js';
import { encodeLine, MAX_LINE_BYTES, parseRequest } from '../../src/control/protocol.js';
import { ConfigError } from '../../src/errors.js';
import { type FuzzTarget, target } from './support.js';

const CODES = new Set([
  'bad_request',
  'too_large',
  'version',
  'unknown_modem',
  'modem_unavailable',
  'busy',
  'refused',
  'timeout',
  'modem_error',
  'not_found',
  'cancelled',
  'internal',
]);

const validRequest = fc.oneof(
  fc.record({ v: fc.constant(1), id: fc.nat(), op: fc.constant('hello') }),
  fc.record({
    v: fc.constant(1),
    id: fc.nat(),
    op: fc.constant('at'),
    modem: fc.string({ minLength: 1, maxLength: 20 }),
    command: fc.string({ minLength: 1, maxLength: 200 }),
  }),
  fc.record({
    v: fc.constant(1),
    id: fc.string({ maxLength: 10 }),
    op: fc.constant('ussd.open'),
    code: fc.string({ minLength: 1, maxLength: 30 }),
  }),
  fc.record({ v: fc.constant(1), id: fc.nat(), op: fc.constant('sms.read'), index: fc.nat({ max: 65535 }) }),
  fc.record({
    v: fc.constant(1),
    id: fc.nat(),
    op: fc.constant('sms.send'),
    to: fc.string({ minLength: 1, maxLength: 20 }),
    text: fc.string({ minLength: 1, maxLength: 300 }),
  }),
  fc.record({
    v: fc.constant(1),
    id: fc.nat(),
    op: fc.constant('subscribe'),
    events: fc.uniqueArray(fc.constantFrom('urc', 'sms', 'delivery', 'ussd'), { minLength: 1, maxLength: 4 }),
  }),
);

const canonical = (v: object): string =>
  JSON.stringify(Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b))));

function checkParsed(line: string): void {
  const r = parseRequest(line);
  if (r.ok) return;
  if (r.reply.ok) throw new Error('an error result marked ok');
  if (!CODES.has(r.reply.error.code)) throw new Error(`unknown error code ${r.reply.error.code}`);
  if (typeof r.reply.error.message !== 'string' || r.reply.error.message.length === 0)
    throw new Error('an error without a message');
}

/** One mutation of a JSON text: a character replaced, inserted or deleted, or a key renamed. */
const mutatedJson = (base: fc.Arbitrary<string>) =>
  fc
    .tuple(
      base,
      fc.nat(),
      fc.constantFrom('replace', 'insert', 'delete', 'truncate'),
      fc.string({ minLength: 1, maxLength: 3 }),
    )
    .map(([s, at, how, ch]) => {
      const i = s.length === 0 ? 0 : at % s.length;
      if (how === 'replace') return s.slice(0, i) + ch + s.slice(i + 1);
      if (how === 'insert') return s.slice(0, i) + ch + s.slice(i);
      if (how === 'delete') return s.slice(0, i) + s.slice(i + ch.length);
      return s.slice(0, i);
    });

const controlAny = target(
  'control/parse-any',
  'parseRequest never throws on any string and answers with a known error code',
  400,
  () =>
    fc.property(
      fc.oneof(
        fc.string({ maxLength: 300 }),
        fc.json({ maxDepth: 4 }),
        fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
      ),
      (line) => checkParsed(line),
    ),
);

const controlMutated = target(
  'control/parse-mutated',
  'mutated valid requests parse or fail cleanly; valid ones round-trip',
  400,
  () =>
    fc.property(validRequest, mutatedJson(validRequest.map((r) => JSON.stringify(r))), (req, mutated) => {
      const r = parseRequest(encodeLine(req as never).trimEnd());
      if (!r.ok || canonical(r.request) !== canonical(req))
        throw new Error(`valid request refused: ${JSON.stringify(req)} -> ${JSON.stringify(r)}`);
      checkParsed(mutated);
    }),
);

const controlHuge = target(
  'control/parse-huge',
  'a line over the limit is refused as too_large without parsing',
  20,
  () =>
    fc.property(fc.integer({ min: 1, max: 2000 }), (extra) => {
      const r = parseRequest('{"v":1,"id":1,"op":"hello","x":"' + 'y'.repeat(MAX_LINE_BYTES + extra) + '"}');
      if (r.ok || r.reply.ok || r.reply.error.code !== 'too_large')
        throw new Error('oversized line not refused as too_large');
    }),
);

const BASE_CONFIG = {
  webhook: {
    baseUrl: 'https://convert.example.com/api/v1/convert-pulsa',
    timeoutMs: 10000,
    headers: {},
    retry: { baseDelayMs: 1000, maxDelayMs: 300000, maxAgeHours: 72 },
  },
  spool: { dir: './spool', sentRetentionDays: 30, fsync: true },
  modems: [
    {
      name: 'telkomsel-1',
      port: '/dev/ttyUSB0',
      baudRate: 115200,
      profile: 'auto',
      senders: ['858', 'TELKOMSEL'],
      otherSenders: 'archive',
      sweepIntervalSec: 60,
    },
  ],
  log: { level: 'info', pretty: 'auto' },
};

function checkConfig(raw: unknown): void {
  try {
    const c = parseConfig(raw, {});
    if (!Object.isFrozen(c)) throw new Error('a Config that is not frozen');
  } catch (err) {
    if (!(err instanceof ConfigError))
      throw new Error(`parseConfig threw ${(err as Error)?.name}: ${(err as Error)?.message}`);
    if (err.problems.length === 0) throw new Error('a ConfigError without problems');
  }
}

/** A path into the base config and a random JSON value to put there (or to delete the key). */
const configMutation = fc.tuple(
  fc.constantFrom(
    ['webhook'],
    ['webhook', 'baseUrl'],
    ['webhook', 'timeoutMs'],
    ['webhook', 'headers'],
    ['webhook', 'retry'],
    ['webhook', 'retry', 'maxAgeHours'],
    ['spool'],
    ['spool', 'dir'],
    ['spool', 'fsync'],
    ['modems'],
    ['modems', '0'],
    ['modems', '0', 'name'],
    ['modems', '0', 'port'],
    ['modems', '0', 'baudRate'],
    ['modems', '0', 'profile'],
    ['modems', '0', 'senders'],
    ['modems', '0', 'pin'],
    ['log', 'level'],
    ['extra'],
  ),
  fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: undefined }),
);

const configMutated = target(
  'config/mutated',
  'mutated configs give a frozen Config or one ConfigError with problems, nothing else',
  100,
  () =>
    fc.property(fc.array(configMutation, { minLength: 1, maxLength: 4 }), (mutations) => {
      const raw = structuredClone(BASE_CONFIG) as Record<string, unknown>;
      for (const [path, value] of mutations) {
        let obj: unknown = raw;
        for (const key of path.slice(0, -1))
          obj = obj !== null && typeof obj === 'object' ? (obj as Record<string, unknown>)[key] : undefined;
        if (obj === null || typeof obj !== 'object') continue;
        const last = path[path.length - 1]!;
        if (value === undefined) delete (obj as Record<string, unknown>)[last];
        else (obj as Record<string, unknown>)[last] = value;
      }
      checkConfig(raw);
    }),
);

const configAny = target(
  'config/any-json',
  'any JSON value gives a ConfigError (or a Config), never another exception',
  100,
  () => fc.property(fc.jsonValue({ maxDepth: 4 }), (raw) => checkConfig(raw)),
);

export const CONTROL_TARGETS: readonly FuzzTarget[] = [controlAny, controlMutated, controlHuge];
export const CONFIG_TARGETS: readonly FuzzTarget[] = [configMutated, configAny];
