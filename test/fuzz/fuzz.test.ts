/**
 * The bounded fuzz run of `npm test`: every target of targets.ts with its small `quickRuns`, a fresh random seed each
 * time (fast-check prints the seed and the shrunk counterexample on failure, so a failure is reproducible with
 * FUZZ_SEED=<seed>). The long run is `npm run fuzz` (bench/fuzz.ts).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FUZZ_TARGETS } from './targets.js';

const seedEnv = process.env.FUZZ_SEED;
const seed = seedEnv === undefined || seedEnv === '' ? undefined : Number(seedEnv);

describe('fuzz (quick run)', () => {
  it('has unique target names', () => {
    const names = FUZZ_TARGETS.map((t) => t.name);
    expect(new Set(names).size).toBe(names.length);
  });

  for (const t of FUZZ_TARGETS) {
    it(`${t.name}: ${t.holds}`, () => {
      fc.assert(t.property(), { numRuns: t.quickRuns, ...(seed === undefined ? {} : { seed }) });
    });
  }
});
