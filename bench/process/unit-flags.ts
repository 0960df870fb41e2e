/**
 * The node flags of the systemd unit (systemd/pulsa-bridge.service, `ExecStart=`): the process benchmarks start the
 * daemon with exactly these by default, so the unit file stays the one source of truth for how production runs node.
 *
 * Contract: unitNodeFlags() returns the words of the ExecStart line between the node executable and the script
 * (`.../bin/pulsa-bridge`), in order; it throws when the unit has no such line, so a renamed unit or a changed
 * ExecStart shape fails the bench loudly instead of measuring plain node.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The unit in the checkout: from dist/bench/process/ (compiled) or bench/process/ (the tests import the source). */
export const UNIT_FILE =
  ['../../../systemd/pulsa-bridge.service', '../../systemd/pulsa-bridge.service']
    .map((rel) => fileURLToPath(new URL(rel, import.meta.url)))
    .find((file) => existsSync(file)) ??
  fileURLToPath(new URL('../../../systemd/pulsa-bridge.service', import.meta.url));

/** The node flags on the ExecStart line of `unitText`. */
export function execStartNodeFlags(unitText: string): string[] {
  const line = unitText.split('\n').find((l) => l.trim().startsWith('ExecStart='));
  if (!line) throw new Error('no ExecStart= line in the unit');
  const words = line.trim().slice('ExecStart='.length).trim().split(/\s+/);
  const script = words.findIndex((w) => w.endsWith('/bin/pulsa-bridge'));
  if (script < 1) throw new Error(`ExecStart= does not run <node> [flags] .../bin/pulsa-bridge: ${line.trim()}`);
  return words.slice(1, script);
}

/** The node flags production uses (read from the unit file). */
export function unitNodeFlags(file: string = UNIT_FILE): string[] {
  return execStartNodeFlags(readFileSync(file, 'utf8'));
}
