/**
 * Every fuzz target, in the order `npm test` and `npm run fuzz` run them. One list, so the quick run in the test
 * suite and the long run can never drift apart.
 *
 * To add a target: write it in a `<area>.fuzz.ts` file beside this one (a FuzzTarget from support.ts: name, what
 * holds, quick run count, a property) and add its list here.
 */
import { AT_TARGETS } from './at.fuzz.js';
import { CODEC_TARGETS } from './codecs.fuzz.js';
import { CONFIG_TARGETS, CONTROL_TARGETS } from './control.fuzz.js';
import { PDU_TARGETS } from './pdu.fuzz.js';
import type { FuzzTarget } from './support.js';

export type { FuzzTarget } from './support.js';

export const FUZZ_TARGETS: readonly FuzzTarget[] = [
  ...AT_TARGETS,
  ...PDU_TARGETS,
  ...CODEC_TARGETS,
  ...CONTROL_TARGETS,
  ...CONFIG_TARGETS,
];
