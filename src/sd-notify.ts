/**
 * systemd notification without a native addon: spawns `systemd-notify` (the unit needs NotifyAccess=all, because the
 * message comes from a child process). Does nothing outside systemd (no NOTIFY_SOCKET). Fails softly: a missing
 * binary or a refused message is logged at debug level and never stops the daemon.
 */
import { spawn } from 'node:child_process';
import type { Logger } from './log.js';

export interface Notifier {
  ready(status: string): void;
  status(status: string): void;
  stopping(): void;
  /** Starts WATCHDOG=1 pings at half the interval systemd asked for (WATCHDOG_USEC); returns a stop function. */
  startWatchdog(isHealthy: () => boolean): () => void;
}

export function createNotifier(logger: Logger, env: NodeJS.ProcessEnv = process.env): Notifier {
  const enabled = Boolean(env.NOTIFY_SOCKET);
  const send = (...args: string[]) => {
    if (!enabled) return;
    try {
      const child = spawn('systemd-notify', args, { stdio: 'ignore' });
      child.on('error', (err) => logger.debug({ err }, 'systemd-notify could not run (ignored: notification is optional)'));
      child.unref();
    } catch (err) {
      logger.debug({ err }, 'systemd-notify spawn failed (ignored)');
    }
  };
  return {
    ready: (status) => send('--ready', `--status=${status}`),
    status: (status) => send(`--status=${status}`),
    stopping: () => send('STOPPING=1'),
    startWatchdog: (isHealthy) => {
      const usec = Number(env.WATCHDOG_USEC);
      if (!enabled || !Number.isFinite(usec) || usec <= 0) return () => undefined;
      const timer = setInterval(() => {
        if (isHealthy()) send('WATCHDOG=1');
        else logger.warn('event loop healthy but the daemon reports unhealthy: withholding the watchdog ping');
      }, Math.max(1000, Math.floor(usec / 2000)));
      timer.unref();
      return () => clearInterval(timer);
    },
  };
}
