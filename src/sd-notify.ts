/**
 * systemd notification without a native addon: spawns `systemd-notify` (the unit needs NotifyAccess=all, because the
 * message comes from a child process). Does nothing outside systemd (no NOTIFY_SOCKET). Fails softly: a missing
 * binary or a refused message is logged at debug level and never stops the daemon.
 * The watchdog ping is sent only while `isLive` says the daemon makes progress (the daemon passes its health
 * monitor's liveness verdict, which logs its reasons); the ping timer firing at all is the event loop's proof.
 */
import { spawn } from 'node:child_process';
import type { Logger } from './log.js';

export interface Notifier {
  ready(status: string): void;
  status(status: string): void;
  stopping(): void;
  /**
   * Starts WATCHDOG=1 pings at half the interval systemd asked for (WATCHDOG_USEC), each only while `isLive()` holds;
   * returns a stop function. Withheld pings make systemd restart the daemon after WatchdogSec.
   */
  startWatchdog(isLive: () => boolean | { healthy: boolean }): () => void;
}

export function createNotifier(logger: Logger, env: NodeJS.ProcessEnv = process.env): Notifier {
  const enabled = Boolean(env.NOTIFY_SOCKET);
  const send = (...args: string[]) => {
    if (!enabled) return;
    try {
      const child = spawn('systemd-notify', args, { stdio: 'ignore' });
      child.on('error', (err) =>
        logger.debug({ err }, 'systemd-notify could not run (ignored: notification is optional)'),
      );
      child.unref();
    } catch (err) {
      logger.debug({ err }, 'systemd-notify spawn failed (ignored)');
    }
  };
  return {
    ready: (status) => send('--ready', `--status=${status}`),
    status: (status) => send(`--status=${status}`),
    stopping: () => send('STOPPING=1'),
    startWatchdog: (isLive) => {
      const usec = Number(env.WATCHDOG_USEC);
      if (!enabled || !Number.isFinite(usec) || usec <= 0) return () => undefined;
      const timer = setInterval(
        () => {
          let live: boolean;
          try {
            const v = isLive();
            live = typeof v === 'boolean' ? v : v.healthy;
          } catch (err) {
            logger.error({ err }, 'the liveness check threw: withholding the watchdog ping');
            live = false;
          }
          if (live) send('WATCHDOG=1');
          else logger.debug('not live: watchdog ping withheld');
        },
        Math.max(1000, Math.floor(usec / 2000)),
      );
      timer.unref();
      return () => clearInterval(timer);
    },
  };
}
