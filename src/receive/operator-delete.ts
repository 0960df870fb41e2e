/**
 * The operator's `sms delete N` through the daemon: the receiver takes slot N through the pipeline ('operator') in the
 * operator's one scheduler task, so no SMS leaves the SIM before it is spooled; operatorResult() says what the run did.
 * An empty slot is `deleted: false`; a failed write deletes nothing (SpoolError); a failed join after the delete is a
 * `warning` (the parts are durable and joined at the multipart timeout).
 */
import { errorMessage, SpoolError } from '../errors.js';
import type { RunResult } from './pipeline.js';
import type { HandledAs } from './types.js';

export type { HandledAs } from './types.js';

export interface OperatorDeleteResult {
  /** false: the slot was empty (nothing deleted). */
  deleted: boolean;
  index: number;
  sender?: string;
  handled?: HandledAs;
  /** What was done, in words (the reply and the daemon's log line). */
  summary: string;
  /** Something that went wrong after the delete (the join of a completed multipart message); the caller logs it. */
  warning?: string;
}

/**
 * What a run of slot `index` in 'operator' mode (SlotPipeline.run) means for the operator. PURE. Throws when the slot
 * could not be handled (nothing was deleted then): a failed spool write as a SpoolError, anything else as it came.
 */
export function operatorResult(index: number, run: RunResult): OperatorDeleteResult {
  const slot = run.slots[0];
  const failure = run.failures.find((f) => f.stage !== 'join');
  if (failure?.stage === 'write') {
    throw new SpoolError(
      'io',
      `SMS at index ${index} not deleted: its spool write failed: ${errorMessage(failure.error)}`,
      {
        cause: failure.error,
        hint: 'the SMS stays on the SIM (the next sweep retries it); fix the spool (disk full? permissions?) and try again',
      },
    );
  }
  if (failure) throw failure.error;
  if (!slot || slot.outcome === 'empty' || slot.outcome === 'gone') {
    return { deleted: false, index, summary: `no SMS at index ${index} (the slot was already empty: nothing deleted)` };
  }
  if (slot.outcome !== 'released')
    throw new Error(`SMS at index ${index}: ${slot.outcome} although the operator deletes it`); // 'operator' never keeps
  const joinFailed = run.failures.find((f) => f.stage === 'join');
  const warning = joinFailed
    ? `joining its multipart message failed (${errorMessage(joinFailed.error)}); the parts are on disk and the receiver joins them at its multipart timeout`
    : undefined;
  const { sender, handled } = slot;
  const summary = summarize(index, sender, handled) + (warning ? `; ${warning}` : '');
  return {
    deleted: true,
    index,
    ...(sender === undefined ? {} : { sender }),
    ...(handled ? { handled } : {}),
    summary,
    ...(warning ? { warning } : {}),
  };
}

export function summarize(index: number, sender: string | undefined, h: HandledAs | undefined): string {
  const from = sender === undefined ? '' : `from ${sender}, `;
  const what = (() => {
    if (!h) return 'not spooled';
    switch (h.spooled) {
      case 'pending':
        return h.created ? `spooled as pending ${h.id} first` : `already spooled: ${h.id}`;
      case 'ignored':
        return h.created ? `archived in ignored: ${h.id}` : `already archived in ignored: ${h.id}`;
      case 'quarantine':
        return h.created ? `quarantined: ${h.id}` : `already quarantined: ${h.id}`;
      case 'part':
        return h.created ? `spooled as part ${h.part} first` : `part ${h.part} already spooled`;
      case 'none':
        return `not spooled: ${h.reason}`;
    }
  })();
  return `deleted SMS at index ${index} (${from}${what})`;
}
