import { describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { loadConfig, maskSecrets, parseConfig } from '../src/config.js';
import { ConfigError } from '../src/errors.js';

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
    expect(c.webhook.retry).toEqual({ baseDelayMs: 1000, maxDelayMs: 300_000, maxAgeHours: undefined });
    expect(c.modems[0]).toMatchObject({ baudRate: 115200, profile: 'auto', delivery: 'store', otherSenders: 'archive', sweepIntervalSec: 60, multipartTimeoutSec: 600 });
    expect(c.spool.dir).toBe('/var/lib/pulsa-bridge/spool');
    expect(Object.isFrozen(c.modems[0])).toBe(true);
  });

  it('names the path and what was expected, for every problem at once', () => {
    const raw = { webhook: { baseUrl: 'ftp://x' }, modems: [{ name: 'a' }, { name: 'b b', port: '/dev/x', senders: 'all', baudRate: -1 }], extra: 1 };
    const p = problems(raw);
    expect(p).toContain('extra: unknown key (allowed: webhook, spool, modems, log, shutdownGraceSec)');
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
    const c = parseConfig({ webhook: { url: 'http://127.0.0.1:1/x' }, modems: [{ name: 'sim', simulate: true, senders: ['*'] }] }, {});
    expect(c.modems[0]!.port).toBe('/virtual/sim');
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
});
