/**
 * The operator commands that need only the spool (`status`, `queue ...`) work from a shell without the
 * service's secrets, as docs/install.md's `env:` advice leaves it: the config names `env:PB_PIN` / `env:PB_HMAC`, which only
 * the service's environment sets. The compiled CLI in its own process (npm test builds dist/ first).
 */
import { afterEach, describe, expect, it } from 'vitest';
import path from 'node:path';
import { silentLogger } from '../../src/log.js';
import { Spool } from '../../src/spool/store.js';
import { makeSms } from '../spool/helpers.js';
import { tempDir } from '../support/tmp.js';
import { compiledCli } from '../support/cli.js';
import { writeConfig } from '../support/config.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function cli(args: string[]): { code: number | null; out: string; err: string } {
  const env = { ...process.env };
  delete env.PB_PIN;
  delete env.PB_HMAC;
  return compiledCli(args, { env });
}

async function setup(spoolOver: Record<string, unknown> = {}): Promise<{ file: string; spoolDir: string }> {
  const { dir, cleanup } = await tempDir('spool-only');
  cleanups.push(cleanup);
  const spoolDir = path.join(dir, 'spool');
  const spool = await Spool.open(spoolDir, { logger: silentLogger(), fsync: false });
  await spool.putPending(makeSms('sms-one'));
  await spool.close();
  // An operator's config with its secrets in the service's environment (not in this shell's).
  const file = await writeConfig(
    dir,
    {
      webhook: {
        baseUrl: 'https://pulsa.example/api/v1/convert-pulsa',
        hmacSecret: 'env:PB_HMAC',
        headers: { Authorization: 'env:PB_AUTH' },
      },
      spool: { dir: spoolDir, ...spoolOver },
      modems: [
        { name: 'tsel-1', port: '/dev/serial/by-id/usb-SimTech-if02-port0', pin: 'env:PB_PIN', senders: ['858'] },
      ],
    },
    { defaults: false },
  );
  return { file, spoolDir };
}

describe('spool-only commands without the service secrets', () => {
  it('status, queue ls, queue stats and queue show read spool.dir without resolving env: secrets', async () => {
    const { file } = await setup();
    const status = cli(['status', '-c', file]);
    expect(status.err).not.toMatch(/environment variable|PB_PIN/);
    // No daemon runs on this spool: status says so with exit 3 (issue 12 item 1), after reading the spool.
    expect(status.code).toBe(3);
    expect(status.out).toContain('spool: 1 pending');
    const ls = cli(['queue', 'ls', '-c', file]);
    expect(ls.code).toBe(0);
    expect(ls.out).toContain('sms-one');
    const stats = cli(['queue', 'stats', '-c', file, '--json']);
    expect(stats.code).toBe(0);
    expect(JSON.parse(stats.out)).toMatchObject({ pending: 1 });
    expect(cli(['queue', 'show', 'sms-one', '-c', file]).code).toBe(0);
  }, 60_000);

  it('a bad spool section is still refused, naming the key', async () => {
    const { file } = await setup({ dir: 5 });
    const r = cli(['queue', 'ls', '-c', file]);
    expect(r.code).toBe(1);
    expect(r.err).toContain('spool.dir: expected a non-empty string');
    expect(r.err).not.toContain('PB_PIN');
  }, 30_000);

  it('`run` still needs the secrets (exit 78 naming the variable)', async () => {
    const { file } = await setup();
    const r = cli(['run', '-c', file]);
    expect(r.code).toBe(78);
    expect(r.err).toContain('modems[0].pin: environment variable PB_PIN is not set');
  }, 30_000);
});
