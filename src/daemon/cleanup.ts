/**
 * The daemon's one cleanup stack: each step of the start sequence that acquires something pushes its release at once.
 * A failed start unwinds exactly what was acquired, last first; the stop unwinds the same stack. A release that fails
 * is logged and the unwinding goes on (what is below it must still be released); each release runs once.
 */
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';

export class CleanupStack {
  private readonly steps: Array<{ what: string; release: () => unknown }> = [];

  /** `release` undoes `what` (named in the log when it fails). */
  push(what: string, release: () => unknown): void {
    this.steps.push({ what, release });
  }

  /** Releases everything pushed, last first. Never throws. */
  async unwind(logger: Logger): Promise<void> {
    for (let step = this.steps.pop(); step; step = this.steps.pop()) {
      try {
        await step.release();
      } catch (err) {
        logger.error({ err }, `releasing ${step.what} failed: ${errorMessage(err)}`);
      }
    }
  }
}
