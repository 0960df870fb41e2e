/**
 * writeConfig(): the config file a test runs the daemon on, written as `<dir>/config.json` and its path returned.
 * Contract: the defaults are a spool in `<dir>/spool` with fsync, JSON logs at debug level and shutdownGraceSec 1;
 * each top-level key of `parts` (webhook, modems, metrics, control, spool, log, ...) replaces the default whole.
 * testWebhook(url): a webhook section that retries within a test's bounds (50 ms first delay, 200 ms at most).
 */
import { chmod, writeFile } from 'node:fs/promises';
import path from 'node:path';

export async function writeConfig(dir: string, parts: Record<string, unknown> = {}, opts: { mode?: number } = {}): Promise<string> {
  const file = path.join(dir, 'config.json');
  const config = { spool: { dir: path.join(dir, 'spool'), fsync: true }, log: { level: 'debug', pretty: false }, shutdownGraceSec: 1, ...parts };
  await writeFile(file, JSON.stringify(config));
  if (opts.mode !== undefined) await chmod(file, opts.mode);
  return file;
}

export function testWebhook(url: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { url, retry: { baseDelayMs: 50, maxDelayMs: 200 }, ...extra };
}
