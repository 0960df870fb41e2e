/**
 * UsageError (usage.ts explains usage errors): its own module, so lifecycle.ts can tell a usage error from a
 * failure without loading usage.ts.
 */

/** Printed as `error: <message>` plus `hint: <hint>`; exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
  readonly hint: string | undefined;
  constructor(message: string, options: { hint?: string } = {}) {
    super(message);
    this.hint = options.hint;
  }
}
