/** The small fault set `npm test` runs (3 SIGKILL trials, one receiver 500 outage, one modem reboot); see suite.ts. */
import { defineFaultSuite } from './suite.js';

defineFaultSuite('ci');
