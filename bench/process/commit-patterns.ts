/**
 * What group commit would buy, measured on raw files (not the spool: the figures are for designing it). Writes
 * `records` small JSON files the way the spool writes one record (tmp file, fsync, rename into the area, fsync the
 * area directory), in three patterns:
 *   - one by one: each record tmp -> fsync -> rename -> fsync dir before the next (the spool today);
 *   - group of g, files in parallel: g tmp files written and fsynced concurrently, renamed, ONE fsync of the directory;
 *   - group of g, one fsync of the directory per group but the files fsynced one after the other.
 * Prints total ms and ms per record. A fresh temporary directory; nothing else is touched. Figures only.
 */
import { mkdir, mkdtemp, open, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface CommitPatternRow {
  pattern: string;
  records: number;
  totalMs: number;
  msPerRecord: number;
  fsyncs: number;
}

const BODY = JSON.stringify({ v: 1, kind: 'sms', sender: '858', text: 'x'.repeat(160), pdus: ['0'.repeat(280)] });

async function fsyncPath(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function writeTmp(dir: string, name: string): Promise<string> {
  const tmp = join(dir, 'tmp', `${name}.tmp`);
  const fh = await open(tmp, 'wx', 0o640);
  try {
    await fh.writeFile(BODY);
    await fh.sync();
  } finally {
    await fh.close();
  }
  return tmp;
}

export async function commitPatterns(records: number, groups: number[]): Promise<CommitPatternRow[]> {
  const root = await mkdtemp(join(tmpdir(), 'pulsa-commit-'));
  const rows: CommitPatternRow[] = [];
  try {
    let run = 0;
    const fresh = async () => {
      const dir = join(root, String(run++));
      await mkdir(join(dir, 'tmp'), { recursive: true });
      await mkdir(join(dir, 'pending'));
      await writeFile(join(dir, 'warm'), ''); // the first write of a directory is not what we time
      return dir;
    };
    {
      const dir = await fresh();
      const t0 = performance.now();
      for (let i = 0; i < records; i++) {
        const tmp = await writeTmp(dir, `r${i}`);
        await rename(tmp, join(dir, 'pending', `r${i}.json`));
        await fsyncPath(join(dir, 'pending'));
      }
      const ms = performance.now() - t0;
      rows.push({
        pattern: 'one by one (today)',
        records,
        totalMs: ms,
        msPerRecord: ms / records,
        fsyncs: 2 * records,
      });
    }
    for (const g of groups) {
      for (const parallel of [true, false]) {
        const dir = await fresh();
        const t0 = performance.now();
        for (let start = 0; start < records; start += g) {
          const names = Array.from({ length: Math.min(g, records - start) }, (_, j) => `r${start + j}`);
          const tmps = parallel ? await Promise.all(names.map((n) => writeTmp(dir, n))) : [];
          if (!parallel) for (const n of names) tmps.push(await writeTmp(dir, n));
          for (const [j, tmp] of tmps.entries()) await rename(tmp, join(dir, 'pending', `${names[j]}.json`));
          await fsyncPath(join(dir, 'pending'));
        }
        const ms = performance.now() - t0;
        rows.push({
          pattern: `groups of ${g}, files fsynced ${parallel ? 'in parallel' : 'one after another'}, one dir fsync`,
          records,
          totalMs: ms,
          msPerRecord: ms / records,
          fsyncs: records + Math.ceil(records / g),
        });
      }
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
  return rows;
}
