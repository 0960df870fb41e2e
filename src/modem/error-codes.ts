/**
 * The final result of a failed command as the modem layer writes it into its errors and logs. The CME/CMS texts are
 * the AT layer's (src/at/results.ts); this adds only what a message needs on top: a line for a command that got no
 * final result, and the class of a CMS network (RP, 1..127) or transfer (TP, 128..255) cause.
 * PURE: never throws; an unknown code still shows its number (it is part of the line).
 */
import { explainFinal } from '../at/results.js';

/**
 * `+CMS ERROR: 321` -> `+CMS ERROR: 321 (invalid memory index)`, `+CMS ERROR: 38` ->
 * `+CMS ERROR: 38 (network rejected the message (RP cause 38))`; other lines are returned trimmed.
 */
export function describeFinal(final: string | undefined): string {
  if (final === undefined) return 'no final result';
  const line = final.trim();
  const cms = /^\+CMS ERROR:?\s*(\d+)$/i.exec(line);
  const code = cms ? Number(cms[1]) : undefined;
  if (code !== undefined && code >= 1 && code <= 127)
    return `${line} (network rejected the message (RP cause ${code}))`;
  if (code !== undefined && code >= 128 && code <= 255) return `${line} (SMS transfer failed (TP cause ${code}))`;
  return explainFinal(line);
}
