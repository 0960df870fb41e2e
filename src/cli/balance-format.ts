/**
 * One balance check's result as the CLI prints it (`balance`, and each modem's line in `status`). Replies and errors
 * come from the network, so the text is escaped for the terminal. PURE: no I/O.
 */
import type { BalanceResult } from '../balance/watch.js';
import { daysUntil, localDate } from '../time-format.js';
import { safeText } from '../terminal-text.js';

/** `Rp 20.000`: whole rupiah, thousands dotted as in Indonesia. */
export const rupiah = (n: number) => 'Rp ' + String(n).replace(/\B(?=(\d{3})+(?!\d))/g, '.');

/** The result's lines, ending in a newline; `today` (YYYY-MM-DD) counts the days left. */
export function formatBalance(r: BalanceResult, today: string = localDate(new Date())): string {
  const lines: string[] = [];
  if (r.state === 'error') {
    lines.push(`${r.modem}: balance check ${r.code} failed: ${r.error}`);
  } else {
    const bal = r.balance === null ? 'balance unknown' : rupiah(r.balance);
    const until =
      r.activeUntil === null
        ? 'active-until unknown'
        : `active until ${r.activeUntil} (${daysUntil(r.activeUntil, today)} days)`;
    lines.push(`${r.modem}: ${bal}, ${until} [${r.state.toUpperCase()}]`);
  }
  for (const reason of r.reasons) lines.push(`  warning: ${reason}`);
  if (r.reply) lines.push(`  reply (${r.code}): ${r.reply.replace(/\s*\n\s*/g, ' / ')}`);
  if (r.hint && r.state !== 'ok') lines.push(`  hint: ${r.hint}`);
  return safeText(lines.join('\n'), { multiline: true }) + '\n'; // replies and errors come from the network: escaped
}
