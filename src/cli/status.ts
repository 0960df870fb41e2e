/**
 * `pulsa-bridge status`: is the daemon running, what state is each modem in (and why, with the hint), what has it
 * received, spooled and forwarded, and how deep is the spool. Reads `status.json`, which the running daemon rewrites
 * every few seconds in the spool directory, plus the spool itself (as a client) and its lock.
 */
import { Command } from 'commander';
import { readFile } from 'node:fs/promises';
import { loadSpoolConfig } from '../config.js';
import { STATUS_INTERVAL_MS, statusFilePath, type DaemonStatus } from '../daemon.js';
import { errorMessage } from '../errors.js';
import { configPath, printJson, type Io } from './io.js';
import { spoolHolder, spoolFrom } from './queue.js';

export function statusCommand(io: Io): Command {
  return new Command('status')
    .description('daemon and modem states (with the last error and a hint), receive/forward counters, spool depth')
    .option('-c, --config <file>', 'config file (for spool.dir)')
    .option('-s, --spool <dir>', 'spool directory')
    .option('--json', 'print JSON')
    .action(async (opts: { config?: string; spool?: string; json?: boolean }) => {
      const dir = opts.spool ?? (await loadSpoolConfig(configPath(opts.config))).spool.dir;
      const daemon = await spoolHolder(dir);
      let running: (DaemonStatus & { pid: number; writtenAt: string }) | undefined;
      let staleNote: string | undefined;
      if (daemon.running) {
        try {
          running = JSON.parse(await readFile(statusFilePath(dir), 'utf8')) as typeof running;
          const age = Date.now() - Date.parse(running!.writtenAt);
          if (age > 3 * STATUS_INTERVAL_MS) staleNote = `status.json is ${Math.round(age / 1000)} s old: the daemon may be hung (check journalctl -u pulsa-bridge)`;
        } catch (err) {
          staleNote = `no readable status.json yet (${errorMessage(err)})`;
        }
      }
      const spool = await spoolFrom({ spool: dir });
      const stats = await spool.stats();
      await spool.close();
      if (opts.json) {
        printJson(io, { daemon, status: running, note: staleNote, spool: stats });
        return;
      }
      io.out(daemon.running ? `daemon: running (pid ${daemon.pid}, since ${daemon.startedAt})\n` : daemon.running === false ? 'daemon: not running\n' : `daemon: unknown (${daemon.error})\n`);
      if (staleNote) io.out(`note: ${staleNote}\n`);
      if (running) {
        io.out(`webhook: ${running.webhookUrl}\n`);
        const f = running.forwarder;
        io.out(`forwarder: ${f.delivered} delivered, ${f.retried} retried, ${f.dead} dead${f.inFlightId ? `, posting ${f.inFlightId}` : ''}${f.nextWakeAt ? `, next retry ${f.nextWakeAt}` : ''}\n`);
        if (f.unrecorded > 0) {
          io.out(`  WARNING: ${f.unrecorded} delivery result(s) not yet written to the spool (disk full or read-only?): they are retried and not POSTed again\n  hint: check \`df -h\` and \`journalctl -u pulsa-bridge\` for the spool error\n`);
        }
        for (const m of running.modems) {
          const id = m.identity;
          io.out(`modem ${m.name}: ${m.state} since ${m.since}${id ? ` (${id.manufacturer ?? '?'} ${id.model ?? '?'}, profile ${id.profile ?? '?'}, IMSI ${id.imsi ?? '?'})` : ''}\n`);
          if (m.lastError) io.out(`  last error: ${m.lastError}\n`);
          if (m.hint) io.out(`  hint: ${m.hint}\n`);
          const r = m.receiver;
          // A daemon started before `spooled` existed wrote the same count as `forwarded` only.
          if (r) io.out(`  received ${r.received}, spooled ${r.spooled ?? r.forwarded}, ignored ${r.ignored}, quarantined ${r.quarantined}, duplicates ${r.duplicates}, parts waiting ${r.partsWaiting}, reconnects ${m.reconnects}${r.lastSweepAt ? `, last sweep ${r.lastSweepAt}` : ''}\n`);
        }
      }
      io.out(`spool: ${stats.pending} pending, ${stats.dead} dead, ${stats.sent} sent, ${stats.ignored} ignored, ${stats.quarantine} quarantined, ${stats.parts} parts\n`);
      if (stats.dead > 0) io.out('  hint: `pulsa-bridge queue ls --area dead` shows why; `pulsa-bridge queue retry --dead` sends them again\n');
    });
}
