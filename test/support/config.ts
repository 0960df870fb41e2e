/**
 * writeConfig(): the config file a test runs the daemon on, written as `<dir>/config.json` (or `<dir>/<file>`) and its
 * path returned. Contract: the defaults are a spool in `<dir>/spool` with fsync, JSON logs at debug level and
 * shutdownGraceSec 1; each top-level key of `parts` replaces the default whole; `defaults: false` writes `parts` alone
 * (an operator's config as the test's subject).
 * testWebhook(url): a webhook section that retries within a test's bounds (50 ms first delay, 200 ms at most).
 * configProblems(f): the problems of the ConfigError `f` throws ([] when it throws none; any other error rethrown).
 */
import { chmod, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError } from '../../src/errors.js';

export async function writeConfig(
  dir: string,
  parts: Record<string, unknown> = {},
  opts: { mode?: number; file?: string; defaults?: boolean } = {},
): Promise<string> {
  const file = path.join(dir, opts.file ?? 'config.json');
  const defaults =
    opts.defaults === false
      ? {}
      : {
          spool: { dir: path.join(dir, 'spool'), fsync: true },
          log: { level: 'debug', pretty: false },
          shutdownGraceSec: 1,
        };
  const config = { ...defaults, ...parts };
  await writeFile(file, JSON.stringify(config));
  if (opts.mode !== undefined) await chmod(file, opts.mode);
  return file;
}

export function testWebhook(url: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { url, retry: { baseDelayMs: 50, maxDelayMs: 200 }, ...extra };
}

export function configProblems(f: () => unknown): readonly string[] {
  try {
    f();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}
