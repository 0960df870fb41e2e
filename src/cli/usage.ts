/**
 * Usage errors: what the operator typed cannot work (a bad number, a missing port, an empty AT command). They exit 2
 * (lifecycle.ts) and are found before any port or spool is opened. Option parsers throw commander's
 * InvalidArgumentError, which commander names with the option; checks inside an action throw UsageError.
 */
import { InvalidArgumentError } from 'commander';

export { UsageError } from './usage-error.js';

/** Option/argument parser for a whole number >= min; `what` completes "expected ...". */
export function wholeNumber(what: string, min: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isInteger(n) || n < min) throw new InvalidArgumentError(`expected ${what}.`);
    return n;
  };
}

/** Option parser for a comma-separated list of baud rates, e.g. `115200,9600`. */
export function baudRates(value: string): number[] {
  const rates = value.split(',').map((v) => v.trim());
  if (rates.some((r) => !/^\d+$/.test(r) || Number(r) < 1))
    throw new InvalidArgumentError('expected baud rates such as 115200,9600.');
  return rates.map(Number);
}
