/**
 * `pulsa-bridge config check [FILE]`: validates a config file and prints the effective config (defaults applied,
 * secrets and URL credentials masked) on stdout, and on stderr the warnings the daemon would log at start
 * (`warning: ...`), so stdout stays `FILE: OK` + JSON (or JSON alone with --json). An invalid file exits 1.
 */
import { Command } from 'commander';
import { loadConfig, maskSecrets } from '../config.js';
import { configInitCommand } from './config-init.js';
import { configPath, printJson, type Io } from './io.js';

/** The commands this module adds to the program (cli.ts). */
export function commands(io: Io): Command[] {
  return [configCommand(io)];
}

export function configCommand(io: Io): Command {
  const config = new Command('config').description('configuration tools');
  config
    .command('check')
    .description('validate a config file and print the effective config (defaults applied, secrets masked)')
    .argument('[file]', 'config file', configPath())
    .option('--json', 'print JSON only')
    .action(async (file: string, opts: { json?: boolean }) => {
      const cfg = await loadConfig(file);
      if (!opts.json) io.out(`${file}: OK\n`);
      printJson(io, maskSecrets(cfg));
      for (const w of cfg.warnings) io.err(`warning: ${w}\n`);
    });
  config.addCommand(configInitCommand(io)); // `config init` (config-init.ts)
  return config;
}
