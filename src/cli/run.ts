/**
 * `pulsa-bridge run`: the daemon. Loads and validates the config (a ConfigError is printed with every problem and
 * exits 78, EX_CONFIG, so the unit's RestartPreventExitStatus=78 stops systemd from restarting a daemon that cannot
 * start), then runs the daemon from start to process exit: the log, the stop signals (handlers in before anything
 * starts; a start-up stuck in the kernel gets a bound), the stop, the last log lines flushed (bounded), exit 0.
 * The only command module that loads the daemon.
 */
import { summaryOf } from './command-list.js';
import { writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { Command } from 'commander';
import { isLoopbackUrl, loadConfig, type Config } from '../config.js';
import { maskUrl } from '../redact.js';
import { madeUpSmsProblem, virtualPortFor } from '../serial/port-kind.js';
import type { Daemon } from '../daemon.js';
import { ConfigError, errorMessage } from '../errors.js';
import { createLogger, runsUnderSystemd, syslogPriority } from '../log.js';
import { configPath } from './io.js';
import { DaemonConfigInvalid, EXIT, onStopSignal, startupStopBound } from './lifecycle.js';

/** Seconds (beyond shutdownGraceSec) a stop signal waits for an unfinished start-up before the process exits 1. */
const STARTUP_STOP_BOUND_SEC = 10;
/** How long the exit waits for the log's reader to take the last lines. */
const LOG_FLUSH_BOUND_MS = 2000;

/** The commands this module adds to the program (cli.ts). */
export function commands(): Command[] {
  return [runCommand()];
}

export function runCommand(): Command {
  return new Command('run')
    .description(summaryOf('run'))
    .option('-c, --config <file>', 'config file', configPath())
    .option(
      '--simulate',
      "run every modem on a virtual modem (its port becomes virtual:<name>, with the modem's number and operator); the webhook must be on this machine",
    )
    .action(async (opts: { config: string; simulate?: boolean }) => {
      const loaded = await loadConfig(opts.config).catch((err: unknown) => {
        throw err instanceof ConfigError ? new DaemonConfigInvalid(err) : err;
      });
      const config = opts.simulate
        ? { ...loaded, modems: loaded.modems.map((m) => ({ ...m, port: virtualPortFor(m.name, m) })) }
        : loaded;
      const problem = madeUpSmsProblem(
        config.modems.map((m) => m.port),
        isLoopbackUrl(config.webhook.endpoint),
        maskUrl(config.webhook.endpoint),
      );
      if (problem) throw new DaemonConfigInvalid(new ConfigError([problem], { file: opts.config }));
      await runDaemon(config);
    });
}

/** `pulsa-bridge run`: starts the daemon, runs until SIGTERM/SIGINT, stops it and ends the process (exit 0). */
export async function runDaemon(config: Config): Promise<void> {
  const logger = createLogger({
    level: config.log.level,
    ...(config.log.pretty === 'auto' ? {} : { pretty: config.log.pretty }),
  });
  process.on('unhandledRejection', (reason) =>
    logger.error({ err: reason }, `unhandled rejection (kept running): ${errorMessage(reason)}`),
  );
  // Signal handlers go in before anything starts: a SIGTERM during start-up must stop cleanly, not kill.
  // A start-up stuck in the kernel (a spool on a filesystem that never answers) must not make SIGTERM useless: give it
  // a bound, then log the reason and end by the signal.
  const startBoundMs = (config.shutdownGraceSec + STARTUP_STOP_BOUND_SEC) * 1000;
  const guard = startupStopBound(
    startBoundMs,
    (signal) =>
      logger.info(
        { signal },
        `${signal} during start-up: stopping once start-up has finished (at most ${startBoundMs / 1000} s)`,
      ),
    (signal) => {
      // The process ends by the signal right after this line, before a queued asynchronous write could go out: the
      // line is written synchronously, in the log's own JSON shape (with its syslog priority under systemd). It may
      // come before lines still queued for a slow reader, or be lost if the non-blocking fd is full (EAGAIN).
      const msg = `${signal}: start-up did not finish within ${startBoundMs / 1000} s (spool or modem not answering); exiting`;
      const line = JSON.stringify({
        level: 50,
        time: Date.now(),
        pid: process.pid,
        hostname: hostname(),
        name: 'pulsa-bridge',
        signal,
        msg,
      });
      try {
        writeSync(1, `${runsUnderSystemd() ? `<${syslogPriority(50)}>` : ''}${line}\n`);
      } catch {
        // stdout gone: nothing left to tell; the exit by the signal still says it
      }
      // process.exit() waits for a thread stuck in the kernel (a read that never returns) and would hang too: end by
      // the signal's default action instead (what systemd expects of a stop).
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    },
  );
  let requestStop: (signal: string) => void = (signal) => guard.request(signal);
  onStopSignal((signal) => requestStop(signal));
  let daemon: Daemon;
  try {
    const { Daemon } = await import('../daemon.js'); // after the signal handlers: loading it takes a moment
    daemon = await Daemon.start({ config, logger });
  } finally {
    // Start-up is over: this timer must not cut the stop below short (it waits shutdownGraceSec for deliveries).
    guard.started();
  }
  const stopRequested = guard.requested();
  await new Promise<void>((resolve) => {
    let stopping = false;
    requestStop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal }, `${signal}: stopping`);
      daemon.stop().then(resolve, (err: unknown) => {
        logger.error({ err }, `error while stopping: ${errorMessage(err)}`);
        resolve();
      });
    };
    if (stopRequested) requestStop(stopRequested);
  });
  // Everything durable is closed; an abandoned HTTP socket must not keep the process alive past the grace bound.
  // The last lines may still wait for a slow reader (process.exit() drops what the kernel has not taken): a bounded wait.
  await new Promise<void>((resolve) => {
    setTimeout(resolve, LOG_FLUSH_BOUND_MS).unref();
    logger.flush(() => resolve());
  });
  process.exit(EXIT.ok);
}
