/**
 * `pulsa-bridge run`: the daemon. Loads and validates the config (a ConfigError is printed with every problem and
 * exits 78, EX_CONFIG), then hands over to runDaemon (lifecycle.ts), which owns signals and the process exit.
 */
import { Command } from 'commander';
import { loadConfig } from '../config.js';
import { ConfigError } from '../errors.js';
import { configPath } from './io.js';
import { DaemonConfigInvalid, runDaemon } from './lifecycle.js';

export function runCommand(): Command {
  return new Command('run')
    .description('run the daemon: receive SMS on every configured modem, spool them, forward them to the webhook')
    .option('-c, --config <file>', 'config file', configPath())
    .option('--simulate', 'run every modem on the virtual modem (no hardware)')
    .action(async (opts: { config: string; simulate?: boolean }) => {
      const config = await loadConfig(opts.config).catch((err: unknown) => {
        throw err instanceof ConfigError ? new DaemonConfigInvalid(err) : err;
      });
      await runDaemon(config, opts.simulate === true);
    });
}
