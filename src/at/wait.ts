/**
 * One "wait for a matching event or time out" helper for every hand-written wait of the AT, modem and probe layers.
 * The listener is subscribed before waitFor returns and removed exactly once (match, timeout or cancel()). A timeout
 * rejects with WaitTimeoutError naming what was awaited; cancel() with WaitCancelledError; both are marked handled, so
 * an abandoned waiter never becomes an unhandled rejection. setTimeout only (fake timers drive it).
 */
import { BridgeError } from '../errors.js';

/** Subscribes a listener and returns the function that unsubscribes it. */
export type Subscribe<V> = (listener: (value: V) => void) => () => void;

/** The rejection of a wait that ran out of time: `what` names what was awaited. */
export class WaitTimeoutError extends BridgeError {
  override name = 'WaitTimeoutError';
  readonly what: string;
  readonly timeoutMs: number;
  constructor(what: string, timeoutMs: number) {
    super('AT_TIMEOUT', `timed out after ${timeoutMs} ms waiting for ${what}`);
    this.what = what;
    this.timeoutMs = timeoutMs;
  }
}

/** The rejection of a wait its owner gave up on. */
export class WaitCancelledError extends Error {
  override name = 'WaitCancelledError';
  readonly what: string;
  constructor(what: string) {
    super(`stopped waiting for ${what}`);
    this.what = what;
  }
}

export interface Waiter<T> {
  readonly promise: Promise<T>;
  /** Stops waiting now (no-op once settled). */
  cancel(): void;
}

export interface WaitOptions {
  timeoutMs: number;
  /** What is awaited, for the timeout message: e.g. `the +CUSD reply to *888#`. */
  what: string;
}

/** An EventEmitter event as a Subscribe (the emitter's own typing is too narrow to pass around generically). */
export function listen<V>(
  emitter: { on(event: string, fn: (value: V) => void): unknown; off(event: string, fn: (value: V) => void): unknown },
  event: string,
): Subscribe<V> {
  return (listener) => {
    emitter.on(event, listener);
    return () => void emitter.off(event, listener);
  };
}

/** Waits for the first value `subscribe` delivers that `match` accepts. */
export function waitFor<V>(subscribe: Subscribe<V>, match: (value: V) => boolean, options: WaitOptions): Waiter<V> {
  let settle: { resolve: (value: V) => void; reject: (err: Error) => void } | undefined;
  const promise = new Promise<V>((resolve, reject) => {
    settle = { resolve, reject };
  });
  promise.catch(() => undefined); // see the header: handled here, still seen by whoever awaits
  let done = false;
  let timer: NodeJS.Timeout | undefined;
  let unsubscribe: (() => void) | undefined;
  const finish = (outcome: { value: V } | { error: Error }): void => {
    if (done) return;
    done = true;
    if (timer) clearTimeout(timer);
    unsubscribe?.();
    if ('value' in outcome) settle!.resolve(outcome.value);
    else settle!.reject(outcome.error);
  };
  unsubscribe = subscribe((value) => {
    if (!done && match(value)) finish({ value });
  });
  if (done)
    unsubscribe(); // matched synchronously while subscribing
  else
    timer = setTimeout(
      () => finish({ error: new WaitTimeoutError(options.what, options.timeoutMs) }),
      options.timeoutMs,
    );
  return { promise, cancel: () => finish({ error: new WaitCancelledError(options.what) }) };
}

/** Races `work` against a deadline: rejects with WaitTimeoutError naming `what` when the deadline comes first. */
export function withDeadline<T>(work: Promise<T>, options: WaitOptions): Promise<T> {
  const deadline = waitFor<never>(
    () => () => undefined,
    () => false,
    options,
  );
  return Promise.race([work, deadline.promise]).finally(() => deadline.cancel());
}

/** The awaited value, or undefined when the wait timed out (a pause that ends early on a match). */
export async function orTimeout<T>(promise: Promise<T>): Promise<T | undefined> {
  try {
    return await promise;
  } catch (err) {
    if (err instanceof WaitTimeoutError) return undefined;
    throw err;
  }
}
