/**
 * until(): poll a condition until it holds, or throw naming what was awaited after `timeoutMs`.
 * Contract: uses the real setTimeout captured at import (fake timers installed later do not stall it); `explain`
 * adds what it returns (e.g. a log tail) to the error; the condition may be async.
 */
const realSetTimeout = globalThis.setTimeout;

export interface UntilOptions {
  /** Pause between polls (ms). */
  everyMs?: number;
  /** Appended to the timeout error, e.g. the tail of a process's log. */
  explain?: () => string | Promise<string>;
}

export async function until(
  cond: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 5000,
  opts: UntilOptions = {},
): Promise<void> {
  const started = performance.now();
  for (;;) {
    if (await cond()) return;
    if (performance.now() - started > timeoutMs) {
      const more = opts.explain ? `\n${await opts.explain()}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${more}`);
    }
    await new Promise((r) => realSetTimeout(r, opts.everyMs ?? 5));
  }
}

/** A pause with the real timer. */
export async function sleep(ms: number): Promise<void> {
  await new Promise((r) => realSetTimeout(r, ms));
}
