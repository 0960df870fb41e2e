/**
 * `pulsa-bridge status`: is the daemon running, what state is each modem in (and why, with the hint), what has it
 * received, spooled and forwarded, its canaries (state, the day's spend, the last and next run), and how deep is the
 * spool. Reads `status.json`, which the running daemon rewrites
 * every few seconds in the spool directory, plus the spool itself (as a client) and its lock.
 * Exit codes, for monitoring (like systemctl is-active / LSB status), one table, STATUS_EXIT: 0 running and healthy
 * (degraded included: money flows, warnings printed); 1 running but unhealthy (the reasons printed); 2 a usage error;
 * 3 not running; 4 unknown (the spool lock could not be read: e.g. this user may not enter the spool, told which
 * group may); 6 the config cannot be read or is invalid (EACCES: which group may read it).
 */
import { summaryOf } from './command-list.js';
import { localTime } from '../time-format.js';
import { Command } from 'commander';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { loadSpoolConfig } from '../config-spool.js';
import type { StatusSnapshot } from '../status.js';
import type { SpoolStats } from '../spool/store.js';
import { STATUS_INTERVAL_MS, statusFilePath } from '../daemon/status-file.js';
import { ConfigError, errorMessage } from '../errors.js';
import { judgeHealth, type HealthProblem, type Verdict } from '../health/model.js';
import { CommandFailed, formatError } from './lifecycle.js';
import { formatBalance } from './balance-format.js';
import { formatCanary } from './canary-format.js';
import { configPath, printJson, type Io } from './io.js';
import { spoolFrom, spoolHolder, spoolUnreadable } from './spool-access.js';
import { maskUrl } from '../redact.js';
import { safeText } from '../terminal-text.js';

export const STATUS_EXIT = {
  healthy: 0,
  unhealthy: 1,
  usage: 2,
  notRunning: 3,
  unknown: 4,
  configUnreadable: 6,
} as const;

/** status.json as the daemon writes it; a daemon of an older release wrote no `health` or `spool`. */
type StatusFile = Omit<StatusSnapshot, 'health' | 'spool'> &
  Partial<Pick<StatusSnapshot, 'health' | 'spool'>> & { pid: number; writtenAt: string };

/**
 * The verdict of a running daemon: the one it wrote in status.json (what /healthz answers), or for a daemon that
 * predates it, the model applied to what status.json holds; plus `status-stale` when status.json is old or unreadable.
 */
function verdictOf(
  running: StatusFile | undefined,
  staleNote: string | undefined,
  spool: { pending: number; oldestPendingAgeMs?: number | undefined },
): Verdict {
  let problems: HealthProblem[] = [];
  let warnings: HealthProblem[] = [];
  if (running?.health) {
    problems = [...running.health.problems];
    warnings = [...(running.health.warnings ?? [])];
  } else if (running) {
    const writtenAtMs = Date.parse(running.writtenAt);
    problems = judgeHealth({
      nowMs: Date.now(),
      startedAtMs: Date.parse(running.startedAt),
      modems: running.modems.map((m) => ({
        name: m.name,
        state: m.state,
        since: m.since,
        downSince: m.downSince,
        lastError: m.lastError,
        hint: m.hint,
      })),
      spoolProbe: { okAtMs: writtenAtMs }, // status.json was written in the spool directory
      forwarder: { running: running.forwarder.running ?? true, unrecorded: running.forwarder.unrecorded ?? 0 },
      spool,
    }).problems;
  }
  if (staleNote) problems.push({ code: 'status-stale', message: staleNote });
  return {
    healthy: problems.length === 0,
    state: problems.length > 0 ? 'unhealthy' : warnings.length > 0 ? 'degraded' : 'healthy',
    problems,
    warnings,
  };
}

/** The spool's counts, read from the directory (no daemon, or its status.json is missing or stale). */
async function scanCounts(dir: string): Promise<SpoolStats> {
  const spool = await spoolFrom({ spool: dir });
  try {
    return await spool.stats();
  } finally {
    await spool.close();
  }
}

/** The commands this module adds to the program (cli.ts). */
export function commands(io: Io): Command[] {
  return [statusCommand(io)];
}

export function statusCommand(io: Io): Command {
  return new Command('status')
    .description(summaryOf('status'))
    .option('-c, --config <file>', 'config file (for spool.dir)')
    .option('-s, --spool <dir>', 'spool directory')
    .option('--json', 'print JSON')
    .action(async (opts: { config?: string; spool?: string; json?: boolean }) => {
      // Modem states, errors, identities and balance replies come from modems and networks: escaped (terminal-text.ts).
      const out = (text: string) => io.out(safeText(text, { multiline: true }));
      let dir: string;
      try {
        dir = opts.spool ?? (await loadSpoolConfig(configPath(opts.config))).spool.dir;
      } catch (err) {
        // Not "unhealthy" (1): a probe must tell a broken bridge from a config it cannot read (permissions, a typo).
        if (!(err instanceof ConfigError)) throw err;
        io.err(formatError(err));
        throw new CommandFailed('status: the config cannot be read', STATUS_EXIT.configUnreadable);
      }
      const daemon = await spoolHolder(dir);
      let running: StatusFile | undefined;
      let staleNote: string | undefined;
      if (daemon.running) {
        try {
          const file = JSON.parse(await readFile(statusFilePath(dir), 'utf8')) as StatusFile;
          const age = Date.now() - Date.parse(file.writtenAt);
          if (file.pid !== daemon.pid) {
            // Left by a process that died (SIGKILL, watchdog): its counts and verdict are not the running daemon's.
            staleNote = `status.json is from an earlier process (pid ${file.pid}); the daemon (pid ${daemon.pid}) has not written its own yet`;
          } else if (!Number.isFinite(age)) {
            staleNote = 'status.json has no readable writtenAt';
          } else {
            running = file;
            if (age > 3 * STATUS_INTERVAL_MS)
              staleNote = `status.json is ${Math.round(age / 1000)} s old: the daemon may be hung (check journalctl -u pulsa-bridge)`;
          }
        } catch (err) {
          staleNote = `no readable status.json yet (${errorMessage(err)})`;
        }
      }
      if (daemon.running === false && !existsSync(dir)) {
        // Never started here (or the spool was removed): nothing more to read.
        if (opts.json)
          printJson(io, { daemon, status: undefined, spool: null, health: null, exitCode: STATUS_EXIT.notRunning });
        else out(`daemon: not running\nspool: no spool directory at ${dir}\n`);
        throw new CommandFailed('status: not running', STATUS_EXIT.notRunning);
      }
      // A running daemon's fresh status.json carries its own spool counts: no need to read a spool of any size again.
      const fromDaemon = running?.spool !== undefined && !staleNote;
      // A spool this user may not list would scan as empty: said instead of counts that are not there.
      const denied = fromDaemon ? undefined : await spoolUnreadable(dir);
      const stats: SpoolStats | undefined = fromDaemon ? running!.spool! : denied ? undefined : await scanCounts(dir);
      const verdict = daemon.running ? verdictOf(running, staleNote, stats ?? { pending: 0 }) : undefined;
      const exitCode =
        daemon.running === false
          ? STATUS_EXIT.notRunning
          : !verdict
            ? STATUS_EXIT.unknown
            : verdict.healthy
              ? STATUS_EXIT.healthy
              : STATUS_EXIT.unhealthy;
      const done = () => {
        if (exitCode !== STATUS_EXIT.healthy) throw new CommandFailed(`status: exit ${exitCode}`, exitCode);
      };
      if (opts.json) {
        printJson(io, {
          daemon,
          status: running,
          note: staleNote,
          spool: stats ?? null,
          ...(denied ? { spoolError: denied } : {}),
          health: verdict ?? null,
          exitCode,
        });
        return done();
      }
      out(
        daemon.running
          ? `daemon: running (pid ${daemon.pid}, since ${localTime(daemon.startedAt)})\n`
          : daemon.running === false
            ? 'daemon: not running\n'
            : `daemon: unknown (${daemon.error})\n${daemon.hint && !denied ? `  hint: ${daemon.hint}\n` : ''}`,
      );
      if (staleNote) out(`note: ${staleNote}\n`);
      if (running) {
        out(`webhook: ${maskUrl(running.webhookUrl)}\n`); // masked again: a status.json of an older daemon has it in clear
        const f = running.forwarder;
        out(
          `forwarder: ${f.delivered} delivered, ${f.retried} retried, ${f.dead} dead${f.inFlightId ? `, posting ${f.inFlightId}` : ''}${f.nextWakeAt ? `, next retry ${localTime(f.nextWakeAt)}` : ''}\n`,
        );
        if (f.endpointDown)
          out(
            `  webhook failing since ${localTime(f.endpointDown.since)} (${f.endpointDown.lastError}); ${f.endpointDown.failures} failed request(s), next probe ${localTime(f.endpointDown.nextProbeAt)}\n`,
          );
        if (f.lastRetry)
          out(
            `  last not delivered: ${f.lastRetry.id} (${f.lastRetry.error}) at ${localTime(f.lastRetry.at)}, retry ${localTime(f.lastRetry.nextAttemptAt)}\n`,
          );
        if (f.unrecorded > 0) {
          out(
            `  WARNING: ${f.unrecorded} delivery result(s) not yet written to the spool (disk full or read-only?): they are retried and not POSTed again\n  hint: check \`df -h\` and \`journalctl -u pulsa-bridge\` for the spool error\n`,
          );
        }
        for (const m of running.modems) {
          const id = m.identity;
          const down = m.state !== 'running' && m.downSince ? `, down since ${localTime(m.downSince)}` : '';
          out(
            `modem ${m.name}: ${m.state} since ${localTime(m.since)}${down}${id ? ` (${id.manufacturer ?? '?'} ${id.model ?? '?'}, profile ${id.profile ?? '?'}, IMSI ${id.imsi ?? '?'})` : ''}\n`,
          );
          if (m.lastError) out(`  last error: ${m.lastError}\n`);
          if (m.hint) out(`  hint: ${m.hint}\n`);
          if ((m.signal || m.registration) && m.state === 'running') {
            const sig = m.signal
              ? `signal ${m.signal.dbm ?? 'unknown'} dBm (${m.signal.bars}/5)`
              : 'signal not sampled yet';
            const reg = m.registration ? `registration ${m.registration.text}` : 'registration not sampled yet';
            out(`  ${sig}, ${reg} (sampled ${localTime(m.signal?.sampledAt ?? m.registration?.sampledAt)})\n`);
          }
          const r = m.receiver;
          // A daemon started before `spooled` existed wrote the same count as `forwarded` only.
          if (r)
            out(
              `  received ${r.received}, spooled ${r.spooled ?? r.forwarded}, ignored ${r.ignored}, quarantined ${r.quarantined}, duplicates ${r.duplicates}, parts waiting ${r.partsWaiting}, reconnects ${m.reconnects}, failed attempts ${m.failedAttempts ?? 0}${r.lastSweepAt ? `, last sweep ${localTime(r.lastSweepAt)}` : ''}\n`,
            );
          const memories = r?.storages ?? [];
          if (memories.length > 0)
            out(
              `  SMS storage: ${memories.map((x) => `${x.storage} ${x.used}/${x.total}`).join(', ')} (checked ${localTime(
                memories
                  .map((x) => x.checkedAt)
                  .sort()
                  .at(-1),
              )})\n`,
            );
          if (m.balance)
            out(
              formatBalance(m.balance)
                .replace(/^[^:]*: /, `  balance (checked ${localTime(m.balance.checkedAt)}): `)
                .replace(/\n {2}/g, '\n    '),
            );
        }
        // Absent (or empty): no canary configured, nothing to say.
        for (const c of running.canaries ?? []) out(formatCanary(c));
      }
      if (!stats) out(`spool: ${denied!.error}\n${denied!.hint ? `  hint: ${denied!.hint}\n` : ''}`);
      else
        out(
          `spool: ${stats.pending} pending, ${stats.dead} dead, ${stats.sent} sent, ${stats.ignored} ignored, ${stats.quarantine} quarantined, ${stats.parts} parts${fromDaemon ? ` (the daemon's count at ${localTime(running!.writtenAt)})` : ''}\n`,
        );
      if (stats && stats.dead > 0)
        out(
          '  hint: `pulsa-bridge queue ls --area dead` shows why; `pulsa-bridge queue retry --dead` sends them again\n',
        );
      if (verdict) {
        const line = (p: HealthProblem) => `  - ${p.message}\n${p.hint ? `    hint: ${p.hint}\n` : ''}`;
        const warned = (verdict.warnings ?? []).map(line).join('');
        out(
          !verdict.healthy
            ? `health: UNHEALTHY\n${verdict.problems.map(line).join('')}${warned}`
            : warned
              ? `health: degraded (money flows; warnings)\n${warned}`
              : 'health: ok\n',
        );
      }
      done();
    });
}
