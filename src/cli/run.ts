/**
 * `pulsa-bridge run`: the daemon. Loads and validates the config (a ConfigError is printed with every problem and
 * exits 1), then hands over to runDaemon (lifecycle.ts), which owns signals and the process exit.
 */
import { Command } from 'commander';
import { loadConfig } from '../config.js';
import { configPath } from './io.js';
import { runDaemon } from './lifecycle.js';

export function runCommand(): Command {
  return new Command('run')
    .description('run the daemon: receive SMS on every configured modem, spool them, forward them to the webhook')
    .option('-c, --config <file>', 'config file', configPath())
    .option('--simulate', 'run every modem on the virtual modem (no hardware)')
    .action(async (opts: { config: string; simulate?: boolean }) => {
      const config = await loadConfig(opts.config);
      await runDaemon(config, opts.simulate === true);
    });
}
