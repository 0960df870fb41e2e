/**
 * `pulsa-bridge config check [FILE]` (or `-c FILE`, as every command takes it): validates a config file and prints the effective config (defaults applied,
 * secrets and URL credentials masked) on stdout, and on stderr the warnings the daemon would log at start
 * (`warning: ...`), so stdout stays `FILE: OK` + JSON (or JSON alone with --json). An invalid file exits 1.
 */
import { existsSync } from 'node:fs';
import { isVirtualPort } from '../serial/port-kind.js';
import { summaryOf } from './command-list.js';
import { Command } from 'commander';
import { loadConfig, maskSecrets, type Config } from '../config.js';
import { canaryName } from '../config-canary.js';
import { configInitCommand } from './config-init.js';
import { configPath, printJson, type Io } from './io.js';
import { UsageError } from './usage-error.js';

/** The commands this module adds to the program (cli.ts). */
export function commands(io: Io): Command[] {
  return [configCommand(io)];
}

/** Each canary's schedule and what it may spend, as `config check` shows them before the config. */
export function canarySchedules(canaries: Config['canaries']): string {
  const every = (sec: number) =>
    sec % 3600 === 0 ? `${sec / 3600} h` : sec % 60 === 0 ? `${sec / 60} min` : `${sec} s`;
  const lines = canaries.map((c) => {
    // Runs start an interval after the previous one ends, so a day holds at most this many; the cap may hold fewer.
    const byTime = Math.ceil(86_400 / c.intervalSec);
    const byCap = Math.floor(c.maxRupiahPerDay / c.amount);
    const runs = Math.min(byTime, byCap);
    return `  ${canaryName(c)}: Rp ${c.amount} from ${c.from} ${c.order ? 'through a reseller order' : `to ${c.to}`}, every ${every(c.intervalSec)} (the first ${every(c.intervalSec)} after start); cap Rp ${c.maxRupiahPerDay} a day (${c.timeZone}): at most ${runs} run(s), Rp ${runs * c.amount} a day${byCap < byTime ? ' (the cap binds)' : ''}`;
  });
  return `canaries (each run moves real credit; \`pulsa-bridge canary pause NAME\` stops one):\n${lines.join('\n')}\n`;
}

export function configCommand(io: Io): Command {
  const config = new Command('config').description(summaryOf('config'));
  config
    .command('check')
    .description('validate a config file and print the effective config (defaults applied, secrets masked)')
    .argument('[file]', 'config file (the same as --config)')
    .option('-c, --config <file>', `config file (default: $PULSA_BRIDGE_CONFIG or ${configPath(undefined, {})})`)
    .option('--json', 'print JSON only')
    .action(async (given: string | undefined, opts: { config?: string; json?: boolean }) => {
      if (given !== undefined && opts.config !== undefined && given !== opts.config) {
        throw new UsageError(`two config files given: ${given} and --config ${opts.config}`, { hint: 'give one' });
      }
      const file = configPath(given ?? opts.config);
      const cfg = await loadConfig(file);
      // Ports that are not on this machine now (a typo, a modem unplugged, a config written elsewhere): named, not fatal.
      const missing = cfg.modems.flatMap((m, i) =>
        isVirtualPort(m.port) || existsSync(m.port)
          ? []
          : [
              `modems[${i}].port ${m.port} (${m.name}) does not exist on this machine: is the modem plugged in? \`pulsa-bridge ports\` lists what is`,
            ],
      );
      if (!opts.json)
        io.out(
          `${file}: OK${cfg.warnings.length + missing.length > 0 ? `, with ${cfg.warnings.length + missing.length} warning(s)` : ''}\n`,
        );
      if (!opts.json && cfg.canaries.length > 0) io.out(canarySchedules(cfg.canaries));
      printJson(io, maskSecrets(cfg));
      for (const w of [...cfg.warnings, ...missing]) io.err(`warning: ${w}\n`);
    });
  config.addCommand(configInitCommand(io)); // `config init` (config-init.ts)
  return config;
}
