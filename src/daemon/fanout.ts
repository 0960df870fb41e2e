/**
 * One producer, listeners that come and go: the daemon's events (`sms`, `delivery`, `urc`, `ussd`) and its "status
 * changed" signal. Producers are built before their listeners exist (the forwarder before the control socket), so they
 * publish here instead of holding a reference to what is built later. A listener that throws is logged; the producer
 * (a spool write, a modem's state change) never sees it.
 */
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';

export class Fanout<T> {
  private readonly listeners = new Set<(value: T) => void>();

  constructor(
    private readonly what: string,
    private readonly logger: Logger,
  ) {}

  readonly publish = (value: T): void => {
    for (const l of this.listeners) {
      try {
        l(value);
      } catch (err) {
        this.logger.error({ err }, `a listener of ${this.what} failed: ${errorMessage(err)}`);
      }
    }
  };

  /** Returns the unsubscribe function. */
  readonly subscribe = (listener: (value: T) => void): (() => void) => {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  };
}
