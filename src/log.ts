/**
 * Logging: pino, one JSON line per call on stdout, pino-pretty's form on a terminal; secrets redacted by path
 * (REDACT_PATHS). Calls are pino's (`log.info(obj?, msg)`, `log.error(err, msg?)`; no printf arguments); flush(cb)
 * calls back once the lines so far reached the OS. Pure modules do not log; I/O modules take a Logger.
 * The glue in log/: syslog priority prefixes and line limits under systemd (journal.ts), control characters escaped
 * on a terminal (pretty.ts), and a bounded, non-blocking stdout (sink.ts).
 */
import { hostname } from 'node:os';
import pino from 'pino';
import { capLine, levelOf, syslogPriority } from './log/journal.js';
import { prettyFormatter } from './log/pretty.js';
import type { Logger } from './log/logger.js';
import { MAX_PENDING_BYTES, sinkFor } from './log/sink.js';

export { syslogPriority } from './log/journal.js';
export { silentLogger } from './log/silent.js';
export type { LogFn, Logger } from './log/logger.js';

export interface LogOptions {
  level?: string;
  /** Force pretty output on or off; default: pretty when stdout is a TTY. */
  pretty?: boolean;
  destination?: NodeJS.WritableStream;
  /**
   * Start each JSON line with its syslog priority (`<3>{...}`). Default: on when the lines go to stdout (no
   * `destination`) of a process started by systemd (see runsUnderSystemd); never with pretty output.
   */
  syslogPrefix?: boolean;
  /** Environment to detect systemd in (default process.env). */
  env?: NodeJS.ProcessEnv;
}

export const REDACT_PATHS = [
  'apiKey',
  '*.apiKey',
  'pin',
  '*.pin',
  'hmacSecret',
  '*.hmacSecret',
  'headers.authorization',
  'headers.Authorization',
  '*.headers.authorization',
  '*.headers.Authorization',
  'config.webhook.hmacSecret',
  'config.webhook.headers',
];
export const CENSOR = '[redacted]';

/**
 * Whether this process was started by systemd with its output going to the journal: JOURNAL_STREAM is set when
 * stdout or stderr is connected to journald, INVOCATION_ID for every unit systemd runs (systemd.exec(5)).
 */
export function runsUnderSystemd(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.JOURNAL_STREAM) || Boolean(env.INVOCATION_ID);
}

const NAME = 'pulsa-bridge';

/**
 * pino's logMethod hook: a call whose fields cannot be written (a getter or toJSON that throws, a hostile proxy) must not
 * throw into the receive path or lose its line: it is written with its message and `logError` instead of the fields.
 */
function neverThrows(this: pino.Logger, args: unknown[], method: (...a: unknown[]) => void): void {
  try {
    method.apply(this, args);
  } catch (err) {
    let msg: unknown = typeof args[0] === 'string' ? args[0] : args[1];
    if (typeof msg !== 'string') msg = undefined;
    const reason = err instanceof Error ? err.message : 'unknown';
    try {
      method.call(this, { logError: `fields left out: they could not be written (${reason})` }, msg);
    } catch {
      // ignored on purpose: nothing more can be written about a line pino cannot write at all
    }
  }
}

export function createLogger(options: LogOptions = {}): Logger {
  const level = options.level ?? process.env.LOG_LEVEL ?? 'info';
  const stream = options.destination ?? process.stdout;
  const pretty = options.pretty ?? (process.stdout.isTTY === true && options.destination === undefined);
  const prefix =
    !pretty && (options.syslogPrefix ?? (options.destination === undefined && runsUnderSystemd(options.env)));
  const colors =
    pretty &&
    typeof (stream as { hasColors?: () => boolean }).hasColors === 'function' &&
    (stream as { hasColors: () => boolean }).hasColors();
  // pino-pretty loads asynchronously (pretty.ts); lines logged before it is there wait for it, in order.
  let prettify: ((line: string) => string) | undefined;
  let waiting: Array<() => void> | undefined;
  if (pretty) {
    waiting = [];
    const ready = (f: (line: string) => string) => {
      prettify = f;
      for (const write of waiting!.splice(0)) write();
      waiting = undefined;
    };
    prettyFormatter(colors).then(ready, () => ready((line) => line)); // no pino-pretty: JSON on the terminal
  }
  /** A capped JSON line in the form it is written: pretty, `<N>`-prefixed or as it is. */
  const form = (line: string): string =>
    prettify ? prettify(line) : prefix ? `<${syslogPriority(levelOf(line))}>${line}` : line;
  const notice = (dropped: number, important: number): string => {
    // Warnings and errors lost are said apart: for the operator they are not the same as lost debug lines.
    const record = {
      level: important > 0 ? 50 : 40,
      time: Date.now(),
      pid: process.pid,
      hostname: hostname(),
      name: NAME,
      dropped,
      droppedWarnOrWorse: important,
      msg: `log: ${dropped} lines dropped${important > 0 ? ` (${important} of them warnings or errors)` : ''}: the log's reader fell more than ${MAX_PENDING_BYTES / 1024} KiB behind`,
    };
    return form(`${JSON.stringify(record)}\n`);
  };
  // Not pino's own destination (sonic-boom): it writes fd 1 with fs.write, so on a blocking pipe a stalled reader holds
  // a thread of libuv's pool (which the spool's fsyncs need), and its sync mode blocks the event loop.
  const sink = sinkFor(stream, { notice });
  const output = {
    write(s: string): void {
      const line = capLine(s);
      // warn and worse go through a reader that fell behind longer than the rest (sink.ts: the operator needs them most)
      const write = () => sink.write(form(line), levelOf(line) >= 40);
      if (waiting) waiting.push(write);
      else write();
    },
    flush(cb: (err?: Error | null) => void): void {
      if (waiting) waiting.push(() => sink.flush(cb));
      else sink.flush(cb);
    },
  };
  const logger = pino(
    { name: NAME, level, redact: { paths: REDACT_PATHS, censor: CENSOR }, hooks: { logMethod: neverThrows } },
    output,
  );
  return logger as unknown as Logger;
}
