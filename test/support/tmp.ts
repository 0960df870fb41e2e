/**
 * tempDir(): a fresh directory under the OS temp dir (`pulsa-<prefix>-XXXXXX`) and the cleanup that removes it.
 * Contract: cleanup() removes the whole tree and never throws on a missing directory.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

export async function tempDir(prefix: string): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), `pulsa-${prefix}-`));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
