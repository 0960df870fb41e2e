/**
 * The bridge's version (package.json's `version`, read once) and the User-Agent its HTTP requests carry. A module of
 * its own so that `--version` and the CLI's commands get it without loading the daemon.
 */
import { readFileSync } from 'node:fs';

export const VERSION: string = (() => {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    return pkg.version;
  } catch {
    return '0.0.0';
  }
})();

export const USER_AGENT = `pulsa-bridge/${VERSION}`;
