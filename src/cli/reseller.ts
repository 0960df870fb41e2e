/**
 * `pulsa-bridge rates` and `pulsa-bridge calculate --operator-id N --amount N`: the reseller API's read operations
 * (also a check that the API key works), printed as the API answered them (JSON). The client is built from the
 * config's `reseller` section: base URL (default webhook.baseUrl) and API key (from the config or `env:NAME`).
 * An API error is shown with its status and body (the key masked) and exits 1; a missing key is a usage error.
 */
import { summaryOf } from './command-list.js';
import { Command } from 'commander';
import { loadConfig, type Config } from '../config.js';
import { USER_AGENT } from '../version.js';
import { ResellerClient, ResellerError } from '../reseller/client.js';
import { configPath, printJson, type Io } from './io.js';
import { CommandFailed } from './lifecycle.js';
import { UsageError, wholeNumber } from './usage.js';
import { safeText } from '../terminal-text.js';

export function resellerClient(config: Config): ResellerClient {
  const r = config.reseller;
  if (!r.baseUrl)
    throw new UsageError('no reseller API address', {
      hint: 'set reseller.baseUrl (or webhook.baseUrl) in the config',
    });
  if (!r.apiKey)
    throw new UsageError('no reseller API key', {
      hint: 'set reseller.apiKey in the config, e.g. "env:PULSA_API_KEY" to read it from the environment',
    });
  return new ResellerClient({ baseUrl: r.baseUrl, apiKey: r.apiKey, timeoutMs: r.timeoutMs, userAgent: USER_AGENT });
}

/** Prints a ResellerError as status + body and fails the command; rethrows anything else. */
export function reportApiError(io: Io, err: unknown, json: boolean | undefined): never {
  if (!(err instanceof ResellerError)) throw err;
  if (json) printJson(io, { error: err.message, status: err.status ?? null, body: err.bodyStart ?? null });
  // The server's words: control characters escaped (terminal-text.ts).
  else
    io.err(
      safeText(
        `error: ${err.message}\n${err.status === undefined ? '' : `  status: ${err.status}\n`}${err.bodyStart ? `  body: ${err.bodyStart}\n` : ''}`,
        { multiline: true },
      ),
    );
  throw new CommandFailed(err.message);
}

/** The commands this module adds to the program (cli.ts). */
export function commands(io: Io): Command[] {
  return resellerCommands(io);
}

export function resellerCommands(io: Io): Command[] {
  const rates = new Command('rates')
    .description(summaryOf('rates'))
    .option('-c, --config <file>', 'config file')
    .option('--json', 'print JSON only')
    .action(async (opts: { config?: string; json?: boolean }) => {
      const client = resellerClient(await loadConfig(configPath(opts.config)));
      try {
        const body = await client.rates();
        if (!opts.json) io.out('GET /rates answered:\n');
        printJson(io, body);
      } catch (err) {
        reportApiError(io, err, opts.json);
      }
    });
  const calculate = new Command('calculate')
    .description(summaryOf('calculate'))
    .option('-c, --config <file>', 'config file')
    .requiredOption(
      '--operator-id <n>',
      'operator id, as `rates` lists it',
      wholeNumber('an operator id (a whole number >= 1)', 1),
    )
    .requiredOption(
      '--amount <rupiah>',
      'credit amount in whole rupiah',
      wholeNumber('an amount in whole rupiah (>= 1)', 1),
    )
    .option('--json', 'print JSON only')
    .action(async (opts: { config?: string; operatorId: number; amount: number; json?: boolean }) => {
      const client = resellerClient(await loadConfig(configPath(opts.config)));
      try {
        const body = await client.calculate(opts.operatorId, opts.amount);
        if (!opts.json)
          io.out(`POST /calculate {"operator_id": ${opts.operatorId}, "pulsa_amount": ${opts.amount}} answered:\n`);
        printJson(io, body);
      } catch (err) {
        reportApiError(io, err, opts.json);
      }
    });
  return [rates, calculate];
}
