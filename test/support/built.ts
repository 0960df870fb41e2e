/**
 * vitest's global setup: refuses to run the suite on commands' bundles older than the modules they were made from.
 * bin/pulsa-bridge starts a one-shot command from dist/cli/<command>.js; after `tsc` alone (without `npm run build`)
 * those would run the previous build's code while the daemon runs the new one. No dist/cli at all is not an error
 * here: the commands then start from dist/src, and test/cli/command-modules.test.ts says the bundles are missing.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export default function setup(): void {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
  const list = path.join(root, 'dist/cli/inputs.json');
  if (!existsSync(list)) return;
  const inputs = JSON.parse(readFileSync(list, 'utf8')) as Record<string, string[]>;
  for (const [bundle, sources] of Object.entries(inputs)) {
    const made = statSync(path.join(root, bundle)).mtimeMs;
    const newer = sources.find((f) => existsSync(path.join(root, f)) && statSync(path.join(root, f)).mtimeMs > made);
    if (newer) throw new Error(`${newer} is newer than ${bundle}: the commands' bundles are stale; build with \`npm run -s build\` (tsc, then the bundles), not tsc alone`);
  }
}
