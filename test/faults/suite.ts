/**
 * Declares the fault trials as vitest tests: one test per trial (its runs in sequence, one seed each), and the
 * summary table printed when the file ends. `full` is `npm run test:faults`; `ci` is the small set `npm test` runs.
 * FAULT_VERBOSE=1 prints each trial's notes, FAULT_KEEP=1 keeps its directory and daemon log. FAULT_ONLY=<text> keeps the trials whose name contains it. The base seed comes from FAULT_SEED or is drawn at random; it is printed first, and each run's seed with any problem.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { distBuilt, killAll } from '../support/daemon.js';
import { runTrial, summarise, table, type RunResult, type TrialSummary } from './runner.js';
import { TRIALS } from './trials.js';
import { hasSocat } from '../support/pty.js';

export function defineFaultSuite(set: 'full' | 'ci'): void {
  const baseSeed = Number(process.env.FAULT_SEED ?? Math.floor(Math.random() * 1_000_000));
  const rows: TrialSummary[] = [];
  const only = process.env.FAULT_ONLY?.toLowerCase(); // run only the trials whose name contains this
  const started = new Date().toISOString();

  describe.skipIf(!hasSocat)(`fault trials against the real daemon process (${set} set, seed ${baseSeed})`, () => {
    afterAll(async () => {
      await killAll();
      console.log(
        `fault suite (${set}), FAULT_SEED=${baseSeed}, started ${started}, node ${process.version}\n${table(rows)}`,
      );
    });

    TRIALS.forEach((def, t) => {
      const runs = def.runs[set];
      if (runs === 0 || (only && !def.name.toLowerCase().includes(only))) return;
      it(
        `${def.name} (${runs} run${runs > 1 ? 's' : ''})`,
        async () => {
          expect(distBuilt(), 'dist/ is missing: run `npm run build` first').toBe(true);
          const results: RunResult[] = [];
          for (let r = 0; r < runs; r++) results.push(await runTrial(def, baseSeed + t * 1000 + r));
          const summary = summarise(def, results);
          rows.push(summary);
          const detail = [
            `seeds ${summary.seeds.join(', ')}`,
            ...summary.problems,
            ...results.flatMap((x) => x.notes.map((n) => `seed ${x.seed}: ${n}`)),
          ].join('\n  ');
          if (summary.result === 'XFAIL' || process.env.FAULT_VERBOSE)
            console.log(`${summary.result} ${def.name}:\n  ${detail}`);
          expect(
            summary.result,
            `${def.name}: ${summary.result === 'XPASS' ? 'passed although marked expected-to-fail: remove expectedFailure' : 'failed'}\n  ${detail}`,
          ).toMatch(/^(PASS|XFAIL)$/);
        },
        runs * 240_000,
      );
    });
  });
}
