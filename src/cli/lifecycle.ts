/**
 * The process lifecycle of the CLI, in one place: exit codes, how an error becomes what the operator reads, the stop
 * signals, and the daemon's run from start to process exit.
 *
 * Exit codes: 0 done (also --help, --version); 78 (`run`) an invalid config or an unsafe spool/state/socket directory; 1 the operation failed (`error: ...` + `hint: ...`, or the command
 * already printed why and threw CommandFailed); 2 usage error (commander's own, or UsageError).
 * Signals: SIGTERM and SIGINT stop the daemon (or `simulate`) cleanly; the handlers go in before anything starts.
 */
import { writeSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Command } from 'commander';
import type { Config } from '../config.js';
import { Daemon } from '../daemon.js';
import { RemoteError } from '../control/client.js';
import { ControlError } from '../control/server.js';
import { BridgeError, ConfigError, errorMessage, UnsafePathError } from '../errors.js';
import { HeapGuard } from '../heap-guard.js';
import { createLogger, runsUnderSystemd, syslogPriority } from '../log.js';
import type { Io } from './io.js';
import { UsageError } from './usage-error.js';

const EXIT = { ok: 0, failed: 1, usage: 2, config: 78 } as const;
/** Seconds (beyond shutdownGraceSec) a stop signal waits for an unfinished start-up before the process exits 1. */
const STARTUP_STOP_BOUND_SEC = 10;
/** How long the exit waits for the log's reader to take the last lines. */
const LOG_FLUSH_BOUND_MS = 2000;

/**
 * `run` with a bad or unreadable config: printed like any config error, but exit 78 (EX_CONFIG), so the unit's
 * RestartPreventExitStatus=78 stops systemd from restarting a daemon that cannot start.
 */
export class DaemonConfigInvalid extends Error {
  override name = 'DaemonConfigInvalid';
  constructor(readonly configError: ConfigError) {
    super(configError.message);
  }
}

/**
 * Thrown by a command that has already printed what went wrong (e.g. the modem's ERROR): exit 1 (or the command's own
 * code, e.g. `status`'s 3 "not running"), nothing more.
 */
export class CommandFailed extends Error {
  override name = 'CommandFailed';
  constructor(reason: string, readonly exitCode: number = EXIT.failed) {
    super(reason);
  }
}

/** Formats an error for the terminal: one line, plus the hint when there is one. */
export function formatError(err: unknown): string {
  if (err instanceof ConfigError) return `error: invalid config:${err.file ? ` ${err.file}` : ''}\n${err.problems.map((p) => `  - ${p}`).join('\n')}\n`;
  if (err instanceof BridgeError || err instanceof UsageError || err instanceof ControlError || err instanceof RemoteError) return `error: ${err.message}\n${err.hint ? `hint: ${err.hint}\n` : ''}`;
  return `error: ${errorMessage(err)}\n`;
}

/** The command and every subcommand below it. */
export function allCommands(root: Command): Command[] {
  return [root, ...root.commands.flatMap((c) => allCommands(c))];
}

/** Parses argv and runs the command; sets process.exitCode (see the header) instead of exiting. */
export async function runCli(program: Command, argv: string[], io: Io): Promise<void> {
  // On every command: subcommands built before this call do not inherit it, and would call process.exit().
  for (const c of allCommands(program)) c.exitOverride();
  try {
    await program.parseAsync(argv);
    process.exitCode = EXIT.ok;
  } catch (err) {
    const e = err as { code?: string; exitCode?: number };
    if (typeof e.code === 'string' && e.code.startsWith('commander.')) {
      // commander has printed it. --help, --version and `help` exit 0; every usage error (unknown command or option,
      // bad value, missing argument, a command group called without its subcommand) exits 2.
      process.exitCode = e.exitCode === 0 ? EXIT.ok : EXIT.usage;
      return;
    }
    process.exitCode = reportFailure(err, io);
  }
}

/** Prints what a command's failure means to the operator (nothing for CommandFailed: said already) and returns its exit code. */
export function reportFailure(err: unknown, io: Io): number {
  if (err instanceof CommandFailed) return err.exitCode;
  if (err instanceof DaemonConfigInvalid) {
    io.err(formatError(err.configError));
    return EXIT.config;
  }
  if (err instanceof UnsafePathError) {
    // A spool, state or socket directory others could write: like a bad config, restarting cannot fix it.
    io.err(formatError(err));
    return EXIT.config;
  }
  io.err(formatError(err));
  return err instanceof UsageError ? EXIT.usage : EXIT.failed;
}

/** Calls `stop` with the signal's name on SIGTERM or SIGINT; returns the function that removes the handlers. */
export function onStopSignal(stop: (signal: 'SIGTERM' | 'SIGINT') => void): () => void {
  const onTerm = () => stop('SIGTERM');
  const onInt = () => stop('SIGINT');
  process.on('SIGTERM', onTerm);
  process.on('SIGINT', onInt);
  return () => {
    process.off('SIGTERM', onTerm);
    process.off('SIGINT', onInt);
  };
}

/**
 * The bound on a stop requested during start-up: the first `request` logs (onRequest) and arms a timer that calls
 * onExpired after `boundMs` unless `started()` disarms it first; `requested()` names the first signal.
 */
export function startupStopBound(
  boundMs: number,
  onRequest: (signal: string) => void,
  onExpired: (signal: string) => void,
): { request(signal: string): void; started(): void; requested(): string | undefined } {
  let signal: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let over = false;
  return {
    request(s) {
      if (signal !== undefined) return;
      signal = s;
      onRequest(s);
      if (over) return;
      timer = setTimeout(() => onExpired(s), boundMs);
      timer.unref();
    },
    started() {
      over = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
    requested: () => signal,
  };
}

/** `pulsa-bridge run`: starts the daemon, runs until SIGTERM/SIGINT, stops it and ends the process (exit 0). */
export async function runDaemon(config: Config, simulate: boolean, allowRemoteWebhook = false): Promise<void> {
  const logger = createLogger({ level: config.log.level, ...(config.log.pretty === 'auto' ? {} : { pretty: config.log.pretty }) });
  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, `unhandled rejection (kept running): ${errorMessage(reason)}`));
  // Full collections after bursts (heap-guard.ts) when node runs with --expose-gc, as the unit starts it.
  const heap = new HeapGuard({ onError: (err) => logger.warn({ err }, `heap guard off: gc() failed (${errorMessage(err)}); V8 collects on its own schedule`) });
  if (!heap.start()) logger.debug('heap guard off: node runs without --expose-gc (the systemd unit sets it)');
  // Signal handlers go in before anything starts: a SIGTERM during start-up must stop cleanly, not kill.
  // A start-up stuck in the kernel (a spool on a filesystem that never answers) must not make SIGTERM useless: give it
  // a bound, then log the reason and end by the signal.
  const startBoundMs = (config.shutdownGraceSec + STARTUP_STOP_BOUND_SEC) * 1000;
  const guard = startupStopBound(
    startBoundMs,
    (signal) => logger.info({ signal }, `${signal} during start-up: stopping once start-up has finished (at most ${startBoundMs / 1000} s)`),
    (signal) => {
      // The process ends by the signal right after this line, before a queued asynchronous write could go out: the
      // line is written synchronously, in the log's own JSON shape (with its syslog priority under systemd). It may
      // come before lines still queued for a slow reader, or be lost if the non-blocking fd is full (EAGAIN).
      const msg = `${signal}: start-up did not finish within ${startBoundMs / 1000} s (spool or modem not answering); exiting`;
      const line = JSON.stringify({ level: 50, time: Date.now(), pid: process.pid, hostname: hostname(), name: 'pulsa-bridge', signal, msg });
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
    daemon = await Daemon.start({ config, logger, simulate, allowRemoteWebhook });
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
  heap.stop();
  logger.debug({ heapGuard: heap.stats }, 'heap guard: full collections forced since start');
  // Everything durable is closed; an abandoned HTTP socket must not keep the process alive past the grace bound.
  // The last lines may still wait for a slow reader (process.exit() drops what the kernel has not taken): a bounded wait.
  await new Promise<void>((resolve) => {
    setTimeout(resolve, LOG_FLUSH_BOUND_MS).unref();
    logger.flush(() => resolve());
  });
  process.exit(EXIT.ok);
}
