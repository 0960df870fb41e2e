/**
 * SIGHUP re-reads the spool (`pulsa-bridge queue retry|drop` changed it on disk and signalled). The handler goes in
 * before the spool lock is taken, since SIGHUP's default action would end the process; one that arrives while the spool
 * is still being opened (its scan may already have passed the changed area) is remembered and served once the spool
 * is attached. Re-reads run one after another; a failed one is logged, never thrown.
 */
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';

export interface Rescannable {
  rescan(): Promise<unknown>;
}

export class SpoolRescanOnSighup {
  private spool: Rescannable | undefined;
  private missed = false;
  private rescanning: Promise<void> = Promise.resolve();

  constructor(private readonly logger: Logger) {}

  /** Installs the handler; returns its removal. */
  listen(): () => void {
    process.on('SIGHUP', this.onSignal);
    return () => void process.off('SIGHUP', this.onSignal);
  }

  /** The spool is open: signals from now on re-read it, and one that came while it opened is served now. */
  attach(spool: Rescannable): void {
    this.spool = spool;
    if (this.missed) {
      this.missed = false;
      this.onSignal();
    }
  }

  private readonly onSignal = (): void => {
    const spool = this.spool;
    if (!spool) {
      this.missed = true;
      this.logger.info('SIGHUP while the spool is being opened: it is re-read once open');
      return;
    }
    this.logger.info('SIGHUP: re-reading the spool (changed by the queue CLI)');
    this.rescanning = this.rescanning.then(async () => {
      try {
        this.logger.info(await spool.rescan(), 'spool re-read');
      } catch (err) {
        this.logger.error({ err }, `re-reading the spool failed: ${errorMessage(err)}`);
      }
    });
  };
}
