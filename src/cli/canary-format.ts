/**
 * One canary (scheduled test transfer) as the CLI prints it: its state, the day's spend against the cap, the last run
 * (outcome, when, order) and the next. Used by `status`; `canary ls` may print the same block. PURE: no I/O. Times
 * are local with the offset (time-format.ts); the caller escapes the text for the terminal (reasons and details come
 * from operators' replies and the reseller API).
 */
import type { CanaryStatus } from '../canary/types.js';
import { localTime } from '../time-format.js';
import { rupiah } from './balance-format.js';

/** `6 h`, `15 min`, `90 s`: an interval as configured, in its largest whole unit. */
export function interval(sec: number): string {
  if (sec >= 3600 && sec % 3600 === 0) return `${sec / 3600} h`;
  if (sec >= 60 && sec % 60 === 0) return `${sec / 60} min`;
  return `${sec} s`;
}

function stateText(c: CanaryStatus): string {
  switch (c.state) {
    case 'paused':
      return `PAUSED${c.pausedAt ? ` since ${localTime(c.pausedAt)}` : ''}`;
    case 'disabled':
      return 'DISABLED';
    case 'capped':
      return "capped (the day's cap leaves no room for a run)";
    case 'running':
      return 'running now';
    default:
      return c.state;
  }
}

function lastRunText(c: CanaryStatus): string {
  const r = c.lastRun;
  if (!r) return 'none yet';
  const facts = [
    r.orderId ? `order ${r.orderId}` : undefined,
    r.durationMs !== undefined ? `took ${Math.round(r.durationMs / 1000)} s` : undefined,
  ].filter(Boolean);
  const detail = r.outcome !== 'approved' && r.detail ? `: ${r.detail}` : '';
  return `${r.outcome} at ${localTime(r.at)}${facts.length ? ` (${facts.join(', ')})` : ''}${detail}`;
}

function nextRunText(c: CanaryStatus): string {
  if (c.nextRunAt) return localTime(c.nextRunAt);
  if (c.state === 'running') return 'after this one';
  if (c.state === 'paused') return `none until \`pulsa-bridge canary resume ${c.name}\``;
  if (c.state === 'disabled') return 'none while its ledger cannot be read';
  return '-';
}

/** The canary's lines, each ending in a newline. */
export function formatCanary(c: CanaryStatus): string {
  const lines = [
    `canary ${c.name}: ${stateText(c)} (${rupiah(c.amount)} from ${c.from} ${c.to === 'order' ? 'through a reseller order' : `to ${c.to}`}, every ${interval(c.intervalSec)}), spent today ${rupiah(c.spentToday)} of ${rupiah(c.maxRupiahPerDay)} (${c.day}, ${c.timeZone})`,
  ];
  if (c.reason && (c.state === 'paused' || c.state === 'disabled')) lines.push(`  why: ${c.reason}`);
  lines.push(`  last run: ${lastRunText(c)}`);
  if (c.lastRun && c.lastRun.outcome !== 'approved')
    lines.push(
      `  last approved: ${c.lastSuccessAt ? localTime(c.lastSuccessAt) : 'never'}; ${c.failuresInARow} of ${c.pauseAfterFailures} failures in a row before it pauses itself`,
    );
  lines.push(`  next run: ${nextRunText(c)}`);
  return lines.map((l) => `${l}\n`).join('');
}
