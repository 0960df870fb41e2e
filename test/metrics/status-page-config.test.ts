/** Config of the listener and the page: defaults, a bare port on loopback, the token (env: allowed), the warning. */
import { describe, expect, it } from 'vitest';
import { isLoopbackListen, maskSecrets, parseConfig } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';

const base = (metrics: unknown) => ({
  webhook: { baseUrl: 'https://x.example/api/v1/convert-pulsa' },
  modems: [{ name: 'm1', port: '/dev/ttyUSB0', senders: ['858'] }],
  metrics,
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

describe('metrics config', () => {
  it('defaults: page on and masked, metrics open, 128 connections; a bare port listens on 127.0.0.1', () => {
    const c = parseConfig(base({ listen: '9469' }), {});
    expect(c.metrics).toEqual({
      listen: '127.0.0.1:9469',
      protectMetrics: false,
      maxConnections: 128,
      hosts: [],
      page: { enabled: true, showText: false, showNumbers: false, recent: 20 },
    });
    expect(c.warnings).toEqual([]);
    expect(parseConfig(base(undefined), {}).metrics.listen).toBeUndefined();
  });

  it('warns when the listener is reachable beyond loopback without a token; not with one, nor on loopback', () => {
    expect(parseConfig(base({ listen: '0.0.0.0:9469' }), {}).warnings.join('\n')).toMatch(
      /metrics\.listen 0\.0\.0\.0:9469 is reachable beyond this machine and metrics\.token is not set/,
    );
    expect(parseConfig(base({ listen: '192.168.1.5:9469', token: 'a-long-enough-token' }), {}).warnings).toEqual([]);
    expect(parseConfig(base({ listen: '[::1]:9469' }), {}).warnings).toEqual([]);
    expect(isLoopbackListen('127.0.0.2:1')).toBe(true);
    expect(isLoopbackListen('localhost:1')).toBe(true);
    expect(isLoopbackListen('[::]:1')).toBe(false);
  });

  it('the token: env: read from the environment, at least 12 characters, masked by config check', () => {
    const c = parseConfig(base({ listen: '9469', token: 'env:PB_TOKEN' }), { PB_TOKEN: 'from-the-environment' });
    expect(c.metrics.token).toBe('from-the-environment');
    expect(JSON.stringify(maskSecrets(c))).not.toContain('from-the-environment');
    expect(problems(base({ listen: '9469', token: 'env:PB_TOKEN' }))).toEqual([
      'metrics.token: environment variable PB_TOKEN is not set',
    ]);
    expect(problems(base({ listen: '9469', token: 'short' }))).toEqual([
      'metrics.token: at least 12 characters (it guards the status page)',
    ]);
    expect(problems(base({ listen: '9469', page: { showTexts: true } }))[0]).toMatch(
      /^metrics\.page\.showTexts: unknown key/,
    );
    expect(problems(base({ listen: 'host:port' }))[0]).toMatch(/^metrics\.listen: /);
  });
});
