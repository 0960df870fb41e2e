/**
 * The code is formatted (prettier, .prettierrc.json: the project's line length 120): every TypeScript file of src/,
 * test/ and bench/ and the status page's script, as `npm run format:check` sees them. `npm run format` fixes it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function files(dir: string, ext: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(path.join(dir, e.name), ext) : e.name.endsWith(ext) ? [path.join(dir, e.name)] : [],
  );
}

describe('formatting', () => {
  it(
    'every source file is as prettier writes it (npm run format fixes the ones listed)',
    { timeout: 120_000 },
    async () => {
      const options = (await prettier.resolveConfig(path.join(ROOT, 'src/cli.ts'))) ?? {};
      const all = [
        ...files('src', '.ts'),
        ...files('test', '.ts').filter((f) => !f.startsWith(`test${path.sep}fixtures`)),
        ...files('bench', '.ts'),
        ...files('web', '.js'),
        'vitest.config.ts',
        'vitest.faults.config.ts',
      ];
      const unformatted: string[] = [];
      for (const f of all) {
        const text = readFileSync(path.join(ROOT, f), 'utf8');
        if (!(await prettier.check(text, { ...options, filepath: path.join(ROOT, f) }))) unformatted.push(f);
      }
      expect(unformatted).toEqual([]);
    },
  );
});
