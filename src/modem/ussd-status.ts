/**
 * PURE: what a +CUSD status <m> means (27.007 §7.15): the text of a reply that carried no string, and the short label
 * the CLI prints (`[status 1: more input expected]`). Its own module so that `ussd` through the daemon prints labels
 * without loading the session code (the AT layer and the USSD codec).
 */
/** +CUSD <m>: the text of a reply without a string, and the short label the CLI prints (`[status 1: ...]`). */
const USSD_STATUSES: Readonly<Record<number, { text: string; label: string }>> = {
  0: { text: 'USSD done', label: 'done' },
  1: { text: 'USSD needs further input', label: 'more input expected' },
  2: { text: 'USSD session ended by the network', label: 'ended by the network' },
  3: { text: 'USSD answered by another client', label: 'answered by another client' },
  4: { text: 'USSD not supported by the network or the SIM (+CUSD: 4)', label: 'not supported' },
  5: { text: 'USSD timed out in the network', label: 'timed out' },
};

/** The text of a +CUSD reply that carried no string. */
export function ussdStatusText(status: number): string {
  return USSD_STATUSES[status]?.text ?? `USSD status ${status}`;
}

/** The short label of a status for operators ('done', 'more input expected', ...); '?' when unknown. */
export function ussdStatusLabel(status: number): string {
  return USSD_STATUSES[status]?.label ?? '?';
}
