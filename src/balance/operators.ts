/**
 * The Indonesian operators a modem's SIM may belong to, and what each one's balance check looks like by default
 * (Telkomsel `*888#`, XL `*123#`, Indosat `*555#` as gateways logged them, test/fixtures/balance/replies.json; the
 * others are the codes operators publish today). PURE data.
 * Codes change: every default here is overridden by `modems[].balance.code` in the config, never hard-wired.
 */

export const OPERATORS = ['telkomsel', 'indosat', 'xl', 'axis', 'smartfren', 'tri'] as const;
export type OperatorKey = (typeof OPERATORS)[number];

export interface BalanceCheckDefaults {
  /** USSD code that answers with the balance and the active-until date. */
  code: string;
  /** Menu answers to send after the code (none: the first reply carries the balance). */
  replies: readonly string[];
}

export const DEFAULT_BALANCE_CHECKS: Readonly<Record<OperatorKey, BalanceCheckDefaults>> = Object.freeze({
  // Telkomsel: a menu whose first line is the balance ("Sisa pulsa Rp.24025.Aktif sd 28/08/2016. ... 2.Info Kartu").
  telkomsel: { code: '*888#', replies: [] },
  xl: { code: '*123#', replies: [] },
  axis: { code: '*888#', replies: [] },
  indosat: { code: '*555#', replies: [] },
  smartfren: { code: '*999#', replies: [] },
  tri: { code: '*111#', replies: [] },
});
