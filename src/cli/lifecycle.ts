/**
 * The process lifecycle of the CLI, in one place: exit codes, how an error becomes what the operator reads, the stop
 * signals, and the daemon's run from start to process exit.
 *
 * Exit codes: 0 done (also --help, --version); 78 (`run`) an invalid config or an unsafe spool/state/socket directory; 1 the operation failed (`error: ...` + `hint: ...`, or the command
 * already printed why and threw CommandFailed); 2 usage error (commander's own, or UsageError).
 * Signals: SIGTERM and SIGINT stop the daemon (or `simulate`) cleanly; the handlers go in before anything starts.
 * The daemon's own run, from start to process exit, is cli/run.ts: nothing here loads the daemon.
 */
import type { Command } from 'commander';
import { BridgeError, ConfigError, errorMessage, UnsafePathError } from '../errors.js';
import type { Io } from './io.js';
import { UsageError } from './usage-error.js';
import { safeText } from '../terminal-text.js';

export const EXIT = { ok: 0, failed: 1, usage: 2, config: 78 } as const;

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
  constructor(
    reason: string,
    readonly exitCode: number = EXIT.failed,
  ) {
    super(reason);
  }
}

/**
 * The control socket's errors (control/protocol.ts ControlError, control/client/client.ts RemoteError), told by name: importing
 * their classes here would load the control protocol into every command, --version included.
 */
function isControlError(err: unknown): err is Error & { hint?: string } {
  return err instanceof Error && (err.name === 'ControlError' || err.name === 'RemoteError');
}

/** Formats an error for the terminal: one line, plus the hint when there is one. */
export function formatError(err: unknown): string {
  // Messages may quote a modem, a network or a server: control characters escaped (terminal-text.ts).
  return safeText(formatErrorText(err), { multiline: true });
}

function formatErrorText(err: unknown): string {
  if (err instanceof ConfigError)
    return `error: invalid config:${err.file ? ` ${err.file}` : ''}\n${err.problems.map((p) => `  - ${p}`).join('\n')}\n`;
  if (err instanceof BridgeError || err instanceof UsageError || isControlError(err))
    return `error: ${err.message}\n${err.hint ? `hint: ${err.hint}\n` : ''}`;
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
