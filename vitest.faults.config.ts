import { defineConfig } from 'vitest/config';

// `npm run test:faults`: the full fault suite against the real daemon process (test/faults/). Trials run one after
// another in one file; each bounds its own waits.
export default defineConfig({
  test: {
    include: ['test/faults/**/*.faults.ts'],
    reporters: ['default', './test/plain-summary-reporter.ts'],
    testTimeout: 600_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
