/**
 * A logger that drops everything, without loading pino: the CLI's spool tools (queue, status) and tests use it, and a
 * command that logs nothing need not pay for the log library's start-up.
 */
import type { Logger } from './logger.js';

const drop = (): void => {};

export function silentLogger(): Logger {
  return {
    fatal: drop,
    error: drop,
    warn: drop,
    info: drop,
    debug: drop,
    trace: drop,
    child: () => silentLogger(),
    level: 'silent',
    isLevelEnabled: () => false,
    flush: (cb) => {
      if (cb) process.nextTick(cb);
    },
  };
}
