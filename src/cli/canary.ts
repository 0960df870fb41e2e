/**
 * `pulsa-bridge canary ls|run|pause|resume`: the daemon's canaries (scheduled test transfers, src/canary/) through its
 * control socket. `ls` is the reading level's (what `status` shows too); run, pause and resume are the operating
 * level's. `run` waits for the run to end and prints its outcome and lines; exit 0 when it ended approved, 1 otherwise
 * (skipped, failed, timeout, unknown), 2 for a name no canary has.
 */
import { summaryOf } from './command-list.js';
import { Command } from 'commander';
import type { CanaryRunReport } from '../canary/scheduler.js';
import type { CanaryStatus } from '../canary/types.js';
import { loadDaemonConfig } from '../config-control.js';
import { RemoteError, type ControlClient } from '../control/client/client.js';
import { localTime } from '../time-format.js';
import { safeText } from '../terminal-text.js';
import { table } from './format.js';
import { configPath, printJson, type Io } from './io.js';
import { CommandFailed } from './lifecycle.js';
import { findDaemon } from './daemon-link.js';
import { UsageError } from './usage.js';

/** How long `canary run` waits for the daemon's answer beyond the run's own bound. */
const RUN_MARGIN_MS = 120_000;
/** The approval bound assumed when the daemon does not say it: the longest a config allows. */
const DEFAULT_TIMEOUT_SEC = 3600;

/** The commands this module adds to the program (cli.ts). */
export function commands(io: Io): Command[] {
  const canary = new Command('canary').description(summaryOf('canary'));
  const withConfig = (c: Command) => c.option('-c, --config <file>', 'config file').option('--json', 'print JSON');
  canary.addCommand(
    withConfig(
      new Command('ls').description("each canary's state, today's spend against its cap, its last and next run"),
    ).action((opts: { config?: string; json?: boolean }) =>
      onDaemon(opts.config, async (client) => {
        const list = await client.request<CanaryStatus[]>({ op: 'canary.ls' });
        if (opts.json) return printJson(io, list);
        io.out(list.length ? formatCanaries(list) : 'no canary is configured (config `canaries`)\n');
      }),
    ),
  );
  canary.addCommand(
    withConfig(
      new Command('run')
        .description('run a canary now (its daily cap and pause still hold) and wait for its outcome')
        .argument('<name>', 'the canary (`canary ls`)'),
    ).action((name: string, opts: { config?: string; json?: boolean }) =>
      onDaemon(opts.config, async (client) => {
        const bound = await runBoundMs(client, name);
        // a name the daemon does not list: its not_found comes at once, no "running" line before it
        if (!opts.json && bound.listed)
          io.out(`canary ${name}: running (this takes until the order is approved or times out)\n`);
        const r = await client.request<CanaryRunReport>({ op: 'canary.run', name }, bound.ms);
        if (opts.json) printJson(io, r);
        else {
          for (const line of r.lines) io.out(`  ${safeText(line)}\n`);
          io.out(
            safeText(
              `canary ${r.canary}: run ${r.id} ${r.outcome}${r.orderId ? ` (order ${r.orderId})` : ''}, Rp ${r.spent} spent, ${(r.durationMs / 1000).toFixed(1)} s: ${r.detail}`,
            ) + '\n',
          );
        }
        if (r.outcome !== 'approved') throw new CommandFailed(`canary ${r.canary} ${r.outcome}`);
      }),
    ),
  );
  for (const [verb, what] of [
    ['pause', 'pause a canary until `canary resume` (a run in progress finishes)'],
    ['resume', 'resume a paused canary (check the centre SIM and the last order first) and clear its failure count'],
  ] as const)
    canary.addCommand(
      withConfig(new Command(verb).description(what).argument('<name>', 'the canary (`canary ls`)')).action(
        (name: string, opts: { config?: string; json?: boolean }) =>
          onDaemon(opts.config, async (client) => {
            const st = await client.request<CanaryStatus>({ op: `canary.${verb}`, name });
            if (opts.json) printJson(io, st);
            else io.out(`canary ${st.name} ${verb}d: ${st.state}${st.reason ? ` (${safeText(st.reason)})` : ''}\n`);
          }),
      ),
    );
  return [canary];
}

/**
 * Runs `fn` on the running daemon's control socket (found from the config's control section alone); a daemon that is
 * not running, or a canary it has not, is said.
 */
async function onDaemon(file: string | undefined, fn: (c: ControlClient) => Promise<void>) {
  const { client, tried } = await findDaemon(await loadDaemonConfig(configPath(file)));
  if (!client)
    throw new CommandFailed(
      `no daemon is running (looked for its socket at ${tried.join(', ')}): canaries run in the daemon; start it with \`systemctl start pulsa-bridge\``,
    );
  try {
    await client.request({ op: 'hello', client: `pulsa-bridge canary (pid ${process.pid})` });
    await fn(client);
  } catch (err) {
    if (err instanceof RemoteError && err.code === 'not_found')
      throw new UsageError(err.message, err.hint ? { hint: err.hint } : {});
    throw err;
  } finally {
    await client.close();
  }
}

/**
 * How long `canary run` waits for the daemon's answer: twice the run's approval bound as the daemon has it (its flow
 * steps wait too), plus a margin; a canary the daemon does not list gets the daemon's `not_found` at once.
 */
async function runBoundMs(client: ControlClient, name: string): Promise<{ ms: number; listed: boolean }> {
  const canary = (await client.request<CanaryStatus[]>({ op: 'canary.ls' })).find((c) => c.name === name);
  return { ms: (canary?.timeoutSec ?? DEFAULT_TIMEOUT_SEC) * 2 * 1000 + RUN_MARGIN_MS, listed: canary !== undefined };
}

const STATE_MARK: Record<CanaryStatus['state'], string> = {
  waiting: 'waiting',
  running: 'RUNNING',
  paused: 'PAUSED',
  capped: 'capped for today',
  disabled: 'DISABLED',
};

/** The canaries as a table, then each one's reason and last run detail. */
export function formatCanaries(list: readonly CanaryStatus[]): string {
  const rows = [['CANARY', 'STATE', 'FROM', 'TO', 'TODAY / CAP', 'LAST RUN', 'NEXT RUN']];
  for (const c of list)
    rows.push([
      c.name,
      STATE_MARK[c.state],
      c.from,
      c.to,
      `Rp ${c.spentToday} / ${c.maxRupiahPerDay}`,
      c.lastRun
        ? `${c.lastRun.outcome} ${localTime(c.lastRun.at)}${c.lastRun.orderId ? ` (order ${c.lastRun.orderId})` : ''}`
        : '-',
      c.nextRunAt ? localTime(c.nextRunAt) : '-',
    ]);
  const notes = list.flatMap((c) => [
    ...(c.reason ? [`${c.name}: ${c.state}: ${c.reason}`] : []),
    ...(c.lastRun?.detail && c.lastRun.outcome !== 'approved' ? [`${c.name}: last run: ${c.lastRun.detail}`] : []),
  ]);
  return safeText(table(rows) + (notes.length ? `\n${notes.join('\n')}\n` : ''), { multiline: true });
}
