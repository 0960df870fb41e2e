/**
 * `pulsa-bridge run`: the daemon. Loads and validates the config (a ConfigError is printed with every problem and
 * exits 78, EX_CONFIG), then hands over to runDaemon (lifecycle.ts), which owns signals and the process exit.
 * This is the command as `--help` shows it; bin/pulsa-bridge starts the daemon through run-entry.ts without
 * commander, which comes here only for help and usage errors.
 */
import { Command } from 'commander';
import { configPath } from './io.js';
import { startDaemon } from './run-entry.js';

export function runCommand(): Command {
  return new Command('run')
    .description('run the daemon: receive SMS on every configured modem, spool them, forward them to the webhook')
    .option('-c, --config <file>', 'config file', configPath())
    .option('--simulate', 'run every modem on the virtual modem (no hardware); the webhook must be on this machine')
    .option('--allow-remote-webhook', 'with simulated modems, post to a webhook on another machine anyway (requests marked X-Pulsa-Bridge-Simulated, signed with the simulation secret)')
    .action((opts: { config: string; simulate?: boolean; allowRemoteWebhook?: boolean }) =>
      startDaemon({ config: opts.config, simulate: opts.simulate === true, ...(opts.allowRemoteWebhook ? { allowRemoteWebhook: true } : {}) }),
    );
}
