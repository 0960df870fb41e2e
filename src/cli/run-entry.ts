/**
 * `pulsa-bridge run` without commander: what bin/pulsa-bridge loads for the daemon (issue 13, memory: commander and
 * its built-ins cost ~2 MiB of a 50 MB budget in a process that parses two options once).
 *
 * Contract
 * - parseRunArgs(args) reads exactly the options `run` documents (cli/run.ts: `-c, --config <file>` in the forms
 *   `-c f`, `-cf`, `--config f`, `--config=f`, `--simulate` and `--allow-remote-webhook`; a repeated option: the last wins, as with commander);
 *   anything else (--help, an unknown option, a missing value or one starting with '-', an extra argument, `--`)
 *   returns undefined.
 * - main(argv) (argv as process.argv: node, script, 'run', ...) starts the daemon for what parseRunArgs read, with the
 *   exit codes and messages the full CLI gives (cli/lifecycle.ts: 78 for an invalid config, 1 for a failure); for
 *   undefined it hands the whole argv to the full CLI (cli.ts), so help and usage errors read exactly as before.
 */
import { loadConfig, simulatedWebhookProblem } from '../config.js';
import { ConfigError } from '../errors.js';
import { configPath, defaultIo } from './io.js';
import { DaemonConfigInvalid, reportFailure, runDaemon } from './lifecycle.js';

export interface RunOptions {
  config: string;
  simulate: boolean;
  /** With simulated modems: allow a webhook that is not on this machine. */
  allowRemoteWebhook?: boolean;
}

/** The options after `run`, or undefined when commander should read them (help, usage errors, anything unusual). */
export function parseRunArgs(args: readonly string[], defaultConfig: string = configPath()): RunOptions | undefined {
  let config: string | undefined;
  let simulate = false;
  let allowRemoteWebhook = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--simulate') simulate = true;
    else if (a === '--allow-remote-webhook') allowRemoteWebhook = true;
    else if (a === '-c' || a === '--config') {
      const v = args[i + 1];
      if (v === undefined || v === '' || v.startsWith('-')) return undefined;
      config = v;
      i++;
    } else if (a.startsWith('--config=') && a.length > '--config='.length) config = a.slice('--config='.length);
    else if (a.startsWith('-c') && !a.startsWith('--') && a.length > 2) config = a.slice(2);
    else return undefined;
  }
  return { config: config ?? defaultConfig, simulate, ...(allowRemoteWebhook ? { allowRemoteWebhook } : {}) };
}

/** What `run` does once its options are read (also the action of cli/run.ts's commander command). */
export async function startDaemon(opts: RunOptions): Promise<void> {
  const config = await loadConfig(opts.config).catch((err: unknown) => {
    throw err instanceof ConfigError ? new DaemonConfigInvalid(err) : err;
  });
  const problem = simulatedWebhookProblem(config, opts.simulate, opts.allowRemoteWebhook === true);
  if (problem) throw new DaemonConfigInvalid(new ConfigError([problem], { file: opts.config }));
  await runDaemon(config, opts.simulate, opts.allowRemoteWebhook === true);
}

export async function main(argv: string[]): Promise<void> {
  const opts = argv[2] === 'run' ? parseRunArgs(argv.slice(3)) : undefined;
  if (!opts) {
    const cli = await import('../cli.js');
    return cli.main(argv);
  }
  try {
    await startDaemon(opts);
    process.exitCode = 0;
  } catch (err) {
    process.exitCode = reportFailure(err, defaultIo);
  }
}
