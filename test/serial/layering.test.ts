/**
 * Serial stays at the bottom: nothing under src/serial/ imports the AT, modem or simulator layers (they build on it).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

describe('src/serial imports', () => {
  it('no module under src/serial imports src/at, src/modem or src/virtual-modem', () => {
    const dir = join(import.meta.dirname, '../../src/serial');
    const offenders: string[] = [];
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
      const text = readFileSync(join(dir, file), 'utf8');
      for (const m of text.matchAll(/from\s+'([^']+)'/g))
        if (/^\.\.\/(at|modem|virtual-modem)\//.test(m[1]!)) offenders.push(`${file}: ${m[1]}`);
    }
    expect(offenders).toEqual([]);
  });
});
