import { describe, expect, it } from 'vitest';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, maskSecrets, parseConfig } from '../src/config.js';
import { madeUpSmsProblem } from '../src/serial/port-kind.js';
import { ConfigError } from '../src/errors.js';
import { runCli } from './support/daemon.js';

const minimal = () => ({
  webhook: { baseUrl: 'https://x.example/api/v1/convert-pulsa' },
  modems: [{ name: 'm1', port: '/dev/ttyUSB0', senders: ['858'] }],
});

function problems(raw: unknown, env: Record<string, string> = {}): string[] {
  try {
    parseConfig(raw, env);
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
  return [];
}

describe('config', () => {
  it('applies every default to a minimal config and freezes it', () => {
    const c = parseConfig(minimal(), {});
    expect(c.webhook.timeoutMs).toBe(10_000);
    expect(c.webhook.retry).toEqual({ baseDelayMs: 1000, maxDelayMs: 300_000, maxAgeHours: 72, probeIntervalMs: 2000 });
    expect(c.modems[0]).toMatchObject({
      baudRate: 115200,
      profile: 'auto',
      delivery: 'store',
      otherSenders: 'archive',
      sweepIntervalSec: 60,
      multipartTimeoutSec: 600,
    });
    expect(c.spool.dir).toBe('/var/lib/pulsa-bridge/spool');
    expect(Object.isFrozen(c.modems[0])).toBe(true);
  });

  it('webhook.retry.maxAgeHours: null means never; strictOrderHoldSec defaults to 300', () => {
    const raw = minimal() as { webhook: Record<string, unknown> };
    expect(parseConfig(raw, {}).webhook.strictOrderHoldSec).toBe(300);
    raw.webhook = { ...raw.webhook, retry: { maxAgeHours: null }, strictOrderHoldSec: 30 };
    const c = parseConfig(raw, {});
    expect(c.webhook.retry.maxAgeHours).toBeNull();
    expect(c.webhook.strictOrderHoldSec).toBe(30);
  });

  it('names the path and what was expected, for every problem at once', () => {
    const raw = {
      webhook: { baseUrl: 'ftp://x' },
      modems: [{ name: 'a' }, { name: 'b b', port: '/dev/x', senders: 'all', baudRate: -1 }],
      extra: 1,
    };
    const p = problems(raw);
    expect(p).toContain(
      'extra: unknown key (allowed: webhook, spool, modems, log, shutdownGraceSec, control, metrics, health, reseller, canaries, stateDir)',
    );
    expect(p).toContain('webhook.baseUrl: expected an http:// or https:// URL');
    expect(p).toContain('modems[0].port: required');
    expect(p.some((x) => x.startsWith('modems[0].senders: required'))).toBe(true);
    expect(p.some((x) => x.startsWith('modems[1].name: expected letters'))).toBe(true);
    expect(p).toContain('modems[1].senders: expected an array of non-empty strings');
    expect(p).toContain('modems[1].baudRate: expected an integer from 300 to 4000000');
  });

  it('rejects unknown keys inside nested objects', () => {
    const raw = minimal() as Record<string, unknown>;
    (raw.modems as Array<Record<string, unknown>>)[0]!.prot = '/dev/ttyUSB1';
    expect(problems(raw)[0]).toMatch(/^modems\[0\]\.prot: unknown key/);
  });

  it('reads secrets from the environment with env:NAME and masks them when printed', () => {
    const raw = minimal() as { webhook: Record<string, unknown>; modems: Array<Record<string, unknown>> };
    raw.webhook.hmacSecret = 'env:HMAC';
    raw.webhook.headers = { Authorization: 'env:AUTH' };
    raw.modems[0]!.pin = 'env:PIN1';
    const c = parseConfig(raw, { HMAC: 's3cret', AUTH: 'Bearer t', PIN1: '1234' });
    expect(c.webhook.hmacSecret).toBe('s3cret');
    expect(c.modems[0]!.pin).toBe('1234');
    const shown = JSON.stringify(maskSecrets(c));
    expect(shown).not.toContain('s3cret');
    expect(shown).not.toContain('Bearer t');
    expect(shown).not.toContain('1234');
    expect(problems(raw, {})).toContain('webhook.hmacSecret: environment variable HMAC is not set');
  });

  it('refuses headers that pulsa-bridge owns, duplicate names and ports', () => {
    const raw = minimal() as { webhook: Record<string, unknown>; modems: Array<Record<string, unknown>> };
    raw.webhook.headers = { 'Idempotency-Key': 'x', 'X-API-KEY': 'k' };
    raw.modems.push({ name: 'm1', port: '/dev/ttyUSB0', senders: ['858'] });
    const p = problems(raw);
    expect(p).toContain('webhook.headers.Idempotency-Key: this header is set by pulsa-bridge and cannot be overridden');
    expect(p).toContain('webhook.headers.X-API-KEY: this header is set by pulsa-bridge and cannot be overridden');
    expect(p).toContain('modems[1].name: duplicate name "m1"');
    expect(p).toContain('modems[1].port: port /dev/ttyUSB0 is used by another modem');
  });

  it('needs a webhook address and at least one modem', () => {
    const p = problems({});
    expect(p.some((x) => x.startsWith('webhook.baseUrl: required'))).toBe(true);
    expect(p).toContain('modems: required: a non-empty array of modems');
  });

  it('a simulated modem needs no port', () => {
    const c = parseConfig(
      { webhook: { url: 'http://127.0.0.1:1/x' }, modems: [{ name: 'sim', port: 'virtual:sim', senders: ['*'] }] },
      {},
    );
    expect(c.modems[0]!.port).toBe('virtual:sim');
  });

  it('loads the shipped config.example.json as it is', async () => {
    const c = await loadConfig(new URL('../config.example.json', import.meta.url).pathname, {});
    expect(c.modems[0]!.senders).toEqual(['858', 'TELKOMSEL']);
  });

  it('reports a missing file and bad JSON as config errors', async () => {
    await expect(loadConfig('/nonexistent/pulsa.json')).rejects.toThrow(/cannot read \(ENOENT\)/);
    const text = await readFile(new URL('../package.json', import.meta.url), 'utf8');
    expect(text.length).toBeGreaterThan(0);
  });

  it('names the file: a top-level array is `expected an object`, with no empty path', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pulsa-config-'));
    try {
      const file = join(dir, 'config.json');
      await writeFile(file, '[]');
      const err = await loadConfig(file, {}).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).file).toBe(file);
      expect((err as ConfigError).problems).toEqual(['expected an object']);
      expect((err as ConfigError).message).toBe(`invalid config ${file}: expected an object`);
      await writeFile(file, JSON.stringify({ ...minimal(), extra: 1 }));
      await expect(loadConfig(file, {})).rejects.toMatchObject({
        file,
        problems: [
          'extra: unknown key (allowed: webhook, spool, modems, log, shutdownGraceSec, control, metrics, health, reseller, canaries, stateDir)',
        ],
      });
      await expect(loadConfig(join(dir, 'missing.json'), {})).rejects.toMatchObject({
        file: join(dir, 'missing.json'),
        problems: ['cannot read (ENOENT)'],
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('an empty senders list is an error (it would forward nothing); senders are trimmed', () => {
    const raw = minimal();
    raw.modems[0]!.senders = [];
    expect(problems(raw)).toEqual([expect.stringMatching(/^modems\[0\]\.senders: expected at least one sender id/)]);
    raw.modems[0]!.senders = [' 858 ', 'TELKOMSEL'];
    expect(parseConfig(raw, {}).modems[0]!.senders).toEqual(['858', 'TELKOMSEL']);
  });

  it('computes the webhook endpoint once, with a warning when the base URL is not the API root', () => {
    expect(parseConfig(minimal(), {})).toMatchObject({
      webhook: { endpoint: 'https://x.example/api/v1/convert-pulsa/webhook/sms-gateway' },
      warnings: [],
    });
    const off = parseConfig({ ...minimal(), webhook: { baseUrl: 'https://x.example/api/' } }, {});
    expect(off.webhook.endpoint).toBe('https://x.example/api/webhook/sms-gateway');
    expect(off.warnings).toEqual([
      'webhook base URL https://x.example/api does not end in /api/v1/convert-pulsa; posting to https://x.example/api/webhook/sms-gateway',
    ]);
    const full = parseConfig(
      { ...minimal(), webhook: { baseUrl: 'https://x.example/nope', url: 'http://10.0.0.2:8080/hook' } },
      {},
    );
    expect(full).toMatchObject({ webhook: { endpoint: 'http://10.0.0.2:8080/hook' } });
    expect(full.warnings).toEqual([
      expect.stringContaining(
        'webhook URL http://10.0.0.2:8080/hook is plain http:// to a host that is not this machine',
      ),
    ]);
  });

  it('warns about plain http:// to another machine (webhook, reseller), not for loopback', () => {
    const local = [
      'http://127.0.0.1:8080/hook',
      'http://localhost/hook',
      'http://[::1]:80/hook',
      'http://127.1.2.3/hook',
    ];
    for (const url of local) expect(parseConfig({ ...minimal(), webhook: { url } }, {}).warnings, url).toEqual([]);
    const remote = parseConfig(
      {
        ...minimal(),
        webhook: { url: 'https://x.example/hook' },
        reseller: { baseUrl: 'http://api.example/api/v1/convert-pulsa', apiKey: 'k3y' },
      },
      {},
    );
    expect(remote.warnings).toEqual([
      'reseller URL http://api.example/api/v1/convert-pulsa is plain http:// to a host that is not this machine: the X-API-KEY travels unencrypted; use https://',
    ]);
  });

  it('refuses a header value with CR, LF, NUL or another control character (every POST would fail), without echoing it', () => {
    for (const [value, found] of [
      ['Bearer abc\r', 'CR at position 11'],
      ['Bearer\nX-Evil: 1', 'LF at position 7'],
      ['a\u0000b', 'NUL at position 2'],
      ['tok\u00e9n', 'U+00E9 at position 4'],
    ] as const) {
      let err: unknown;
      try {
        parseConfig(
          {
            ...minimal(),
            webhook: { baseUrl: 'https://x.example/api/v1/convert-pulsa', headers: { Authorization: value } },
          },
          {},
        );
      } catch (e) {
        err = e;
      }
      expect(err, value).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).problems).toEqual([
        `webhook.headers.Authorization: a header value may hold visible ASCII characters and spaces only; found ${found}`,
      ]);
    }
    expect(() =>
      parseConfig(
        {
          ...minimal(),
          webhook: { baseUrl: 'https://x.example/api/v1/convert-pulsa', headers: { Authorization: 'env:AUTH' } },
        },
        { AUTH: 'Bearer x\r\n' },
      ),
    ).toThrow(/found CR/);
    expect(() =>
      parseConfig(
        {
          ...minimal(),
          webhook: {
            baseUrl: 'https://x.example/api/v1/convert-pulsa',
            headers: { 'X-Pulsa-Bridge-Simulated': 'false' },
          },
        },
        {},
      ),
    ).toThrow(/set by pulsa-bridge/);
    expect(
      parseConfig(
        {
          ...minimal(),
          webhook: { baseUrl: 'https://x.example/api/v1/convert-pulsa', headers: { Authorization: 'Bearer a\tb c' } },
        },
        {},
      ).webhook.headers,
    ).toEqual({ Authorization: 'Bearer a\tb c' });
  });

  it('a virtual modem needs a webhook on this machine: made-up SMS never leave it', () => {
    expect(madeUpSmsProblem(['virtual:a', '/dev/ttyUSB0'], false, 'https://x.example/hook')).toMatch(
      /^webhook: https:\/\/x\.example\/hook is not on this machine, and virtual:a is a virtual modem/,
    );
    expect(madeUpSmsProblem(['/dev/ttyUSB0'], false, 'https://x.example/hook')).toBeUndefined(); // real modems only
    expect(madeUpSmsProblem(['virtual:a'], true, 'http://127.0.0.1:9/hook')).toBeUndefined();
    const remote = parseConfig(
      {
        ...minimal(),
        webhook: { url: 'https://x.example/hook' },
        modems: [{ name: 'v', port: 'virtual:v', senders: ['858'] }],
      },
      {},
    );
    expect(remote.warnings.join('\n')).toMatch(/virtual:v is a virtual modem.*`run` refuses this config/);
  });

  it('masks credentials inside URLs, in the config and in its warnings', () => {
    const c = parseConfig(
      {
        ...minimal(),
        webhook: { baseUrl: 'https://us3rname:pa55word@x.example/api', url: 'https://tok3n@x.example/hook' },
      },
      {},
    );
    expect(c.webhook.endpoint).toBe('https://tok3n@x.example/hook');
    const shown = JSON.stringify(maskSecrets(c));
    for (const secret of ['us3rname', 'pa55word', 'tok3n']) expect(shown).not.toContain(secret);
    expect(maskSecrets(c)).toMatchObject({
      webhook: { baseUrl: 'https://********:********@x.example/api', url: 'https://********@x.example/hook' },
    });
    const warned = parseConfig({ ...minimal(), webhook: { baseUrl: 'https://us3rname:pa55word@x.example/api' } }, {});
    expect(warned.webhook.endpoint).toBe('https://us3rname:pa55word@x.example/api/webhook/sms-gateway');
    expect(warned.warnings).toHaveLength(1);
    expect(warned.warnings[0]).not.toContain('pa55word');
    expect(warned.warnings[0]).toContain('https://********:********@x.example/api');
  });

  it('one schema: wrong types, ranges and values of every kind are named by path', () => {
    const raw = { ...minimal(), log: { level: 'loud', pretty: 'x' }, spool: { fsync: 'yes' }, shutdownGraceSec: 121 };
    expect(problems(raw).sort()).toEqual([
      'log.level: expected one of "trace", "debug", "info", "warn", "error", "fatal"',
      'log.pretty: expected true, false or "auto"',
      'shutdownGraceSec: expected an integer from 0 to 120',
      'spool.fsync: expected true or false',
    ]);
    expect(parseConfig({ ...minimal(), log: { pretty: true } }, {}).log).toEqual({ level: 'info', pretty: true });
  });
});

describe("the config file's own permissions", () => {
  it('writable by others: refused (config check exit 1, run exit 78); secrets readable by others: warned; 0640: quiet', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pb-config-mode-'));
    try {
      const file = join(dir, 'config.json');
      const raw = {
        ...minimal(),
        webhook: {
          baseUrl: 'https://x.example/api/v1/convert-pulsa',
          hmacSecret: 'hmac-secret-123',
          headers: { Authorization: 'Bearer t0ken' },
        },
        reseller: { apiKey: 'api-key-123' },
      };
      await writeFile(file, JSON.stringify(raw));
      await chmod(file, 0o666);
      await expect(loadConfig(file, {})).rejects.toMatchObject({
        problems: [expect.stringMatching(/^the config file is writable by others \(mode 0666\).*chmod o-w /)],
      });
      const check = await runCli(['config', 'check', file]);
      expect(check.code).toBe(1);
      expect(check.err).toContain('writable by others (mode 0666)');
      expect(check.err + check.out).not.toMatch(/hmac-secret-123|t0ken|api-key-123/);
      const run = await runCli(['run', '--config', file]);
      expect(run.code).toBe(78);
      expect(run.err).toContain('writable by others');

      await chmod(file, 0o644);
      const warned = await loadConfig(file, {});
      expect(warned.warnings.join('\n')).toContain(
        'is readable by everyone (mode 0644) and holds webhook.hmacSecret, webhook.headers.Authorization, reseller.apiKey',
      );
      const checked = await runCli(['config', 'check', file]);
      expect(checked.code).toBe(0);
      expect(checked.err).toContain('warning: ' + file + ' is readable by everyone (mode 0644)');

      await chmod(file, 0o640);
      expect((await loadConfig(file, {})).warnings.join('\n')).not.toContain('readable by everyone');
      // Secrets by reference are not secrets in the file.
      await writeFile(
        file,
        JSON.stringify({
          ...raw,
          webhook: { ...raw.webhook, hmacSecret: 'env:PB_HMAC', headers: {} },
          reseller: { apiKey: 'env:PB_KEY' },
        }),
      );
      await chmod(file, 0o644);
      expect(
        (await loadConfig(file, { PB_HMAC: 'x'.repeat(16), PB_KEY: 'y'.repeat(16) })).warnings.join('\n'),
      ).not.toContain('readable by everyone');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
