/**
 * The logger's lines, as journald, jq and the tests read them: pino's key order, every call form the code uses,
 * child bindings, levels, redaction of each REDACT_PATHS entry, error serialisation, and values JSON.stringify refuses.
 */
import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { hostname } from 'node:os';
import { createLogger, REDACT_PATHS, silentLogger, type Logger } from '../../src/log.js';
import { MAX_LINE_BYTES } from '../../src/log/journal.js';

function capture(level = 'trace'): { log: Logger; raw: string[]; lines: () => Array<Record<string, unknown>> } {
  const raw: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      raw.push(chunk.toString('utf8'));
      cb();
    },
  });
  const log = createLogger({ level, pretty: false, destination });
  return {
    log,
    raw,
    lines: () =>
      raw
        .join('')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

const keysOf = (line: string) => [...line.matchAll(/(?:^\{|,)"([^"]+)":/g)].map((m) => m[1]);

describe('the line', () => {
  it('has pino keys in pino order: level, time, pid, hostname, name, bindings, fields, msg; one line per call', () => {
    const { log, raw } = capture();
    const before = Date.now();
    log.child({ modem: 'tsel-1' }).child({ task: 'cmgl' }).info({ id: 'k1', n: 2 }, 'forwarded');
    expect(raw).toHaveLength(1);
    expect(raw[0]!.endsWith('}\n')).toBe(true);
    expect(raw[0]!.indexOf('\n')).toBe(raw[0]!.length - 1);
    expect(keysOf(raw[0]!)).toEqual(['level', 'time', 'pid', 'hostname', 'name', 'modem', 'task', 'id', 'n', 'msg']);
    const rec = JSON.parse(raw[0]!) as Record<string, unknown>;
    expect(rec).toMatchObject({
      level: 30,
      pid: process.pid,
      hostname: hostname(),
      name: 'pulsa-bridge',
      modem: 'tsel-1',
      task: 'cmgl',
      id: 'k1',
      n: 2,
      msg: 'forwarded',
    });
    expect(rec.time).toBeGreaterThanOrEqual(before);
    expect(rec.time).toBeLessThanOrEqual(Date.now());
  });

  it('numbers the levels like pino', () => {
    const { log, lines } = capture();
    log.trace('t');
    log.debug('d');
    log.info('i');
    log.warn('w');
    log.error('e');
    log.fatal('f');
    expect(lines().map((l) => [l.level, l.msg])).toEqual([
      [10, 't'],
      [20, 'd'],
      [30, 'i'],
      [40, 'w'],
      [50, 'e'],
      [60, 'f'],
    ]);
  });

  it('call forms: (msg), (obj, msg), (obj), (err), (err, msg), ({ err }), (null, msg)', () => {
    const { log, lines } = capture();
    const err = new Error('disk full');
    log.info('just a message');
    log.info({ a: 1 }, 'with fields');
    log.info({ a: 2 });
    log.error(err);
    log.error(err, 'write failed');
    log.error({ err, id: 'k' });
    log.error({ err: 'not an error' });
    log.info(null, 'null object');
    const l = lines();
    expect(l[0]).toMatchObject({ msg: 'just a message' });
    expect(l[1]).toMatchObject({ a: 1, msg: 'with fields' });
    expect(l[2]).toMatchObject({ a: 2 });
    expect(l[2]).not.toHaveProperty('msg');
    expect(l[3]).toMatchObject({ msg: 'disk full', err: { type: 'Error', message: 'disk full' } });
    expect(l[4]).toMatchObject({ msg: 'write failed', err: { type: 'Error', message: 'disk full' } });
    expect(l[5]).toMatchObject({ msg: 'disk full', id: 'k', err: { message: 'disk full' } });
    expect(l[6]).toEqual(expect.objectContaining({ err: 'not an error' }));
    expect(l[6]).not.toHaveProperty('msg');
    expect(l[7]).toMatchObject({ msg: 'null object' });
  });

  it('a field named like a base key is written again after it (JSON.parse keeps the last, as with pino); msg wins', () => {
    const { log, raw, lines } = capture();
    log.info({ level: 99, time: 1, name: 'other', msg: 'inner' }, 'outer');
    log.info({ msg: 'only inner' });
    expect(keysOf(raw[0]!)).toEqual([
      'level',
      'time',
      'pid',
      'hostname',
      'name',
      'level',
      'time',
      'name',
      'msg',
      'msg',
    ]);
    expect(lines()[0]).toMatchObject({ level: 99, time: 1, name: 'other', msg: 'outer' });
    expect(lines()[1]!.msg).toBe('only inner');
  });

  it('leaves out undefined, functions and symbols; NaN and Infinity become null; BigInt a number; Dates ISO', () => {
    const { log, raw } = capture();
    log.info(
      {
        u: undefined,
        f: () => 1,
        s: Symbol('x'),
        n: NaN,
        i: -Infinity,
        b: 12345678901234567890n,
        d: new Date(0),
        nested: { b: 1n },
      },
      'odd',
    );
    expect(raw[0]).toContain(
      '"n":null,"i":null,"b":12345678901234567890,"d":"1970-01-01T00:00:00.000Z","nested":{"b":1},"msg":"odd"',
    );
    expect(keysOf(raw[0]!)).not.toContain('u');
    expect(keysOf(raw[0]!)).not.toContain('f');
    expect(keysOf(raw[0]!)).not.toContain('s');
  });

  it('escapes strings (quotes, newlines, control characters, non-ASCII) so each line stays one JSON line', () => {
    const { log, raw, lines } = capture();
    const text = 'Pulsa "Rp 5.000"\r\nline2\u0000\u001b é 😀';
    log.info({ text }, text);
    expect(raw[0]!.split('\n')).toHaveLength(2);
    expect(lines()[0]).toMatchObject({ text, msg: text });
  });
});

describe('safety: a log call never throws and never loses its line', () => {
  it('circular references do not stop the line: "[Circular]" where they loop, the rest of the object stays', () => {
    const { log, lines } = capture();
    const a: Record<string, unknown> = { x: 1 };
    a.self = a;
    a.list = [a, { y: 2 }];
    expect(() => log.info({ a, after: 'kept' }, 'circular')).not.toThrow();
    expect(lines()[0]).toMatchObject({ a: { x: 1, self: { self: '[Circular]' } }, after: 'kept', msg: 'circular' });
  });

  it('a getter or toJSON that throws: the line goes out with its level and message, logError says why', () => {
    const { log, lines } = capture();
    const top = {
      ok: 1,
      get bad(): never {
        throw new Error('getter broke');
      },
    };
    const nested = {
      inner: {
        toJSON: () => {
          throw new Error('toJSON broke');
        },
      },
      fine: true,
    };
    expect(() => log.warn(top, 'top getter')).not.toThrow();
    expect(() => log.warn({ nested }, 'nested toJSON')).not.toThrow();
    expect(lines()[0]).toMatchObject({ level: 40, msg: 'top getter' });
    expect(lines()[0]!.logError).toContain('getter broke');
    expect(lines()[1]).toMatchObject({ level: 40, msg: 'nested toJSON' });
  });

  it('an object that throws on every access still gives the line with its level and message', () => {
    const { log, lines } = capture();
    const hostile = new Proxy(
      {},
      {
        ownKeys: () => {
          throw new Error('no keys');
        },
        get: () => {
          throw new Error('no get');
        },
      },
    );
    expect(() => log.error(hostile, 'hostile object')).not.toThrow();
    expect(lines()[0]).toMatchObject({ level: 50, msg: 'hostile object' });
    expect(lines()[0]!.logError).toContain('fields left out');
  });

  it('a huge string is cut so the line stays under MAX_LINE_BYTES; the message and other fields are kept', () => {
    const { log, raw, lines } = capture();
    const huge = 'x'.repeat(5_000_000);
    expect(() => log.info({ huge, id: 'k1' }, 'big')).not.toThrow();
    expect(raw[0]!.length).toBeLessThanOrEqual(MAX_LINE_BYTES);
    const rec = lines()[0]!;
    expect(rec).toMatchObject({ id: 'k1', msg: 'big' });
    expect(rec.huge).toMatch(/^x{4096}\.\.\.\[4995904 more chars\]$/);
  });

  it('the limit is in UTF-8 bytes (journald counts bytes): a line of two-byte characters is cut too', () => {
    const { log, raw, lines } = capture();
    const text = 'é'.repeat(30_000); // 30,000 chars, 60,000 bytes
    log.info({ text }, 'wide');
    expect(Buffer.byteLength(raw[0]!, 'utf8')).toBeLessThanOrEqual(MAX_LINE_BYTES);
    expect(lines()[0]).toMatchObject({ msg: 'wide' });
    expect(String(lines()[0]!.text)).toMatch(/^é{4096}\.\.\.\[25904 more chars\]$/);
  });

  it('lines under the limit are not cut', () => {
    const { log, lines } = capture();
    const text = 'y'.repeat(MAX_LINE_BYTES - 500);
    log.info({ text });
    expect(lines()[0]!.text).toBe(text);
  });
});

describe('child loggers', () => {
  it('accumulate bindings, outer first; the parent is unchanged; bindings are redacted too', () => {
    const { log, raw } = capture();
    const a = log.child({ modem: 'tsel-1', pin: '4821' });
    const b = a.child({ task: 'send' });
    b.info({ id: 1 }, 'b');
    a.info('a');
    log.info('root');
    expect(keysOf(raw[0]!).slice(5)).toEqual(['modem', 'pin', 'task', 'id', 'msg']);
    expect(raw[0]).toContain('"pin":"[redacted]"');
    expect(keysOf(raw[1]!).slice(5)).toEqual(['modem', 'pin', 'msg']);
    expect(keysOf(raw[2]!).slice(5)).toEqual(['msg']);
  });

  it('a child binding and a call field of the same name are both written, the call field last', () => {
    const { log, lines, raw } = capture();
    log.child({ modem: 'a' }).info({ modem: 'b' }, 'm');
    expect(keysOf(raw[0]!).filter((k) => k === 'modem')).toHaveLength(2);
    expect(lines()[0]!.modem).toBe('b');
  });
});

describe('levels', () => {
  it('filters below the level; level reads and sets by name; silent drops everything', () => {
    const { log, lines } = capture('info');
    expect(log.level).toBe('info');
    log.debug('hidden');
    log.info('shown');
    log.level = 'debug';
    expect(log.level).toBe('debug');
    log.debug('now shown');
    log.trace('still hidden');
    log.level = 'silent';
    log.fatal('silenced');
    log.level = 'error';
    log.warn('hidden warn');
    log.error('shown error');
    expect(lines().map((l) => l.msg)).toEqual(['shown', 'now shown', 'shown error']);
  });

  it('isLevelEnabled of no level is false', () => {
    const { log } = capture();
    expect(log.isLevelEnabled('verbose')).toBe(false);
    expect(log.isLevelEnabled('toString')).toBe(false);
  });

  it('isLevelEnabled follows the level', () => {
    const { log } = capture('warn');
    expect(['trace', 'debug', 'info', 'warn', 'error', 'fatal'].map((l) => log.isLevelEnabled(l))).toEqual([
      false,
      false,
      false,
      true,
      true,
      true,
    ]);
    log.level = 'trace';
    expect(log.isLevelEnabled('trace')).toBe(true);
  });

  it('a child starts at its parent level; changing one later does not change the other (as pino)', () => {
    const { log, lines } = capture('info');
    const child = log.child({ c: 1 });
    expect(child.level).toBe('info');
    child.level = 'debug';
    log.debug('parent debug: hidden');
    child.debug('child debug: shown');
    log.level = 'error';
    child.info('child info: shown');
    expect(lines().map((l) => l.msg)).toEqual(['child debug: shown', 'child info: shown']);
  });

  it('an unknown level name throws (createLogger and the setter), as pino did', () => {
    expect(() =>
      createLogger({ level: 'verbose', destination: new Writable({ write: (_c, _e, cb) => cb() }) }),
    ).toThrow(/verbose/);
    const { log } = capture('info');
    expect(() => (log.level = 'loud')).toThrow('unknown level loud');
    expect(log.level).toBe('info');
  });

  it('silentLogger writes nothing, has children and flushes', async () => {
    const log = silentLogger();
    expect(log.level).toBe('silent');
    log.child({ a: 1 }).fatal('nothing');
    await new Promise<void>((r) => log.flush(() => r()));
  });
});

describe('redaction', () => {
  // One case per REDACT_PATHS entry: the object logged and where '[redacted]' must appear in the line.
  const cases: Array<[string, Record<string, unknown>, (rec: Record<string, any>) => unknown]> = [
    ['apiKey', { apiKey: 'K' }, (r) => r.apiKey],
    ['*.apiKey', { modem: { apiKey: 'K' } }, (r) => r.modem.apiKey],
    ['pin', { pin: '4821' }, (r) => r.pin],
    ['*.pin', { sim: { pin: '4821' } }, (r) => r.sim.pin],
    ['hmacSecret', { hmacSecret: 'S' }, (r) => r.hmacSecret],
    ['*.hmacSecret', { webhook: { hmacSecret: 'S' } }, (r) => r.webhook.hmacSecret],
    ['headers.authorization', { headers: { authorization: 'Bearer x' } }, (r) => r.headers.authorization],
    ['headers.Authorization', { headers: { Authorization: 'Bearer x' } }, (r) => r.headers.Authorization],
    [
      '*.headers.authorization',
      { req: { headers: { authorization: 'Bearer x' } } },
      (r) => r.req.headers.authorization,
    ],
    [
      '*.headers.Authorization',
      { req: { headers: { Authorization: 'Bearer x' } } },
      (r) => r.req.headers.Authorization,
    ],
    [
      'config.webhook.hmacSecret',
      { config: { webhook: { hmacSecret: 'S', url: 'http://x' } } },
      (r) => r.config.webhook.hmacSecret,
    ],
    [
      'config.webhook.headers',
      { config: { webhook: { headers: { 'X-Api': 'K' }, url: 'http://x' } } },
      (r) => r.config.webhook.headers,
    ],
  ];

  it('covers every REDACT_PATHS entry', () => {
    expect(cases.map((c) => c[0])).toEqual(REDACT_PATHS);
  });

  it.each(cases)('%s is censored, without changing the caller object', (_path, obj, at) => {
    const { log, lines, raw } = capture();
    const before = JSON.stringify(obj);
    log.info(obj, 'secret');
    expect(at(lines()[0]!)).toBe('[redacted]');
    expect(raw[0]).not.toMatch(/4821|Bearer x|"K"|"S"/);
    expect(JSON.stringify(obj)).toBe(before);
  });

  it('keeps what is not a path: deeper keys, arrays, siblings; a top-level path censors any value', () => {
    const { log, lines } = capture();
    log.info(
      {
        a: { b: { pin: '1' } },
        list: [{ pin: '2' }],
        headers: { other: 'kept' },
        pin: { nested: true },
        config: { webhook: { url: 'u' } },
      },
      'm',
    );
    expect(lines()[0]).toMatchObject({
      a: { b: { pin: '1' } },
      list: [{ pin: '2' }],
      headers: { other: 'kept' },
      pin: '[redacted]',
      config: { webhook: { url: 'u' } },
    });
  });

  it('a path whose key is present with undefined is censored below the top level, left out at it (as pino)', () => {
    const { log, raw } = capture();
    log.info({ pin: undefined, sim: { pin: undefined } }, 'u');
    expect(raw[0]).toContain('"sim":{"pin":"[redacted]"}');
    expect(keysOf(raw[0]!)).not.toContain('pin');
  });

  it('applies to an error serialised under err (err.pin)', () => {
    const { log, lines } = capture();
    const e = Object.assign(new Error('bad pin'), { pin: '4821' });
    log.error(e);
    expect((lines()[0]!.err as Record<string, unknown>).pin).toBe('[redacted]');
  });
});

describe('errors', () => {
  it('type, message, stack, code and the other own enumerable props', () => {
    const { log, lines } = capture();
    class SpoolError extends Error {
      override name = 'SpoolError';
    }
    const e = Object.assign(new SpoolError('no space'), { code: 'ENOSPC', path: '/var/spool/x', errno: -28 });
    log.error({ err: e, id: 'k1' }, 'write failed');
    const err = lines()[0]!.err as Record<string, unknown>;
    expect(err).toMatchObject({
      type: 'SpoolError',
      message: 'no space',
      code: 'ENOSPC',
      path: '/var/spool/x',
      errno: -28,
    });
    expect(err.stack).toBe(e.stack);
  });

  it('folds causes into message and stack like pino-std-serializers (also a cause loop)', () => {
    const { log, lines } = capture();
    const root = new Error('EIO');
    const mid = new Error('fsync failed', { cause: root });
    const top = new Error('record not stored', { cause: mid });
    log.error(top);
    const err = lines()[0]!.err as Record<string, string>;
    expect(err.message).toBe('record not stored: fsync failed: EIO');
    expect(err.stack).toBe(`${top.stack}\ncaused by: ${mid.stack}\ncaused by: ${root.stack}`);
    expect(err).not.toHaveProperty('cause');

    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    expect(() => log.error(a)).not.toThrow();
    expect((lines()[1]!.err as Record<string, string>).message).toBe('a: b: a: ...');
  });

  it('an error held in a property of the error is serialised too (not the cause, which is in message and stack)', () => {
    const { log, lines } = capture();
    const e = Object.assign(new Error('post failed'), { original: new TypeError('fetch failed') });
    log.error(e);
    expect(lines()[0]!.err).toMatchObject({
      message: 'post failed',
      original: { type: 'TypeError', message: 'fetch failed' },
    });
  });

  it('serialises AggregateError members', () => {
    const { log, lines } = capture();
    log.error(new AggregateError([new Error('one'), new Error('two')], 'all failed'));
    expect(lines()[0]!.err).toMatchObject({
      type: 'AggregateError',
      message: 'all failed',
      aggregateErrors: [{ message: 'one' }, { message: 'two' }],
    });
  });

  it('odd errors never throw: getters that throw, no constructor, no stack, a circular prop, error-like objects', () => {
    const { log, lines } = capture();
    const noCtor = Object.assign(Object.create(null) as object, { message: 'bare', name: 'Bare' });
    const throwing = new Error('x');
    Object.defineProperty(throwing, 'stack', {
      get: () => {
        throw new Error('stack getter');
      },
      enumerable: false,
    });
    Object.defineProperty(throwing, 'detail', {
      get: () => {
        throw new Error('detail getter');
      },
      enumerable: true,
    });
    const noStack = new Error('no stack');
    noStack.stack = undefined;
    const circ = new Error('circ') as Error & { self?: unknown };
    circ.self = circ;
    const messageThrows = new Error('m');
    Object.defineProperty(messageThrows, 'message', {
      get: () => {
        throw new Error('message getter');
      },
    });
    for (const e of [noCtor, throwing, noStack, circ, messageThrows])
      expect(() => log.error({ err: e }, 'odd')).not.toThrow();
    const l = lines();
    expect(l).toHaveLength(5);
    expect(l[0]!.err).toMatchObject({ type: 'Bare', message: 'bare', name: 'Bare' });
    expect(l[1]!.logError).toContain('stack getter');
    expect(l[2]!.err).toMatchObject({ message: 'no stack', stack: '' });
    expect(l[3]!.err).toMatchObject({ message: 'circ' });
    expect(l.every((r) => r.msg === 'odd')).toBe(true);
  });
});
