/**
 * The shipped systemd unit as the tests read it: the node flags on its ExecStart line, so a test starts the compiled
 * daemon exactly as production does. Contract: unitNodeFlags() returns the words between the node executable and
 * `.../bin/pulsa-bridge`, in order, and throws when the unit has no such ExecStart line.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const UNIT_FILE = fileURLToPath(new URL('../../systemd/pulsa-bridge.service', import.meta.url));

export function unitNodeFlags(file: string = UNIT_FILE): string[] {
  const line = readFileSync(file, 'utf8')
    .split('\n')
    .find((l) => l.trim().startsWith('ExecStart='));
  if (!line) throw new Error(`no ExecStart= line in ${file}`);
  const words = line.trim().slice('ExecStart='.length).trim().split(/\s+/);
  const script = words.findIndex((w) => w.endsWith('/bin/pulsa-bridge'));
  if (script < 1) throw new Error(`ExecStart= does not run <node> [flags] .../bin/pulsa-bridge: ${line.trim()}`);
  return words.slice(1, script);
}
