/**
 * Prints one plain closing line, `N passed, N failed, N skipped`, that CI reads
 * (vitest's own summary is decorated and not recognised). With PULSA_SUMMARY_LABEL set (.ci/node-versions: the same
 * suite on another Node), the line starts with that label, so the README command's own line stays the plain one.
 * Tests that passed only on a retry (PULSA_TEST_RETRY, set by .ci/run) are listed above that line as `flaky: ...`.
 */
import type { Reporter, TestModule } from 'vitest/node';

export default class PlainSummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    const flaky: string[] = [];
    for (const mod of testModules) {
      for (const test of mod.children.allTests()) {
        const state = test.result().state;
        if (test.diagnostic()?.flaky) flaky.push(`${mod.moduleId.replace(`${process.cwd()}/`, '')} > ${test.fullName}`);
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
      }
      // A file that failed to load has no tests but must count as a failure.
      if (mod.state() === 'failed' && [...mod.children.allTests()].length === 0) failed++;
    }
    failed += unhandledErrors.length;
    const label = process.env.PULSA_SUMMARY_LABEL ? `${process.env.PULSA_SUMMARY_LABEL}: ` : '';
    for (const name of flaky) process.stdout.write(`\n${label}flaky (passed only on a retry): ${name}`);
    process.stdout.write(`\n${label}${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
