/** The full fault suite, `npm run test:faults` (vitest.faults.config.ts); see suite.ts and trials.ts. */
import { defineFaultSuite } from './suite.js';

defineFaultSuite('full');
