/**
 * `<dir>/sent.index`: what start-up, rescan and prune need of each sent record (id, rev, delivery time) without
 * reading its file, so a year of archive does not outlast systemd's start timeout. A cache, never the truth: a
 * missing, garbled or stale entry only means that file is read. Lines `+ id rev deliveredAt` / `- id`; the owner
 * appends after each delivery (no fsync) and rewrites it compactly after scan and prune; clients only read it.
 * Sound because sent records are immutable.
 */
import { appendFile, promises as fsp } from 'node:fs';
import path from 'node:path';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';

export const SENT_INDEX_FILE = 'sent.index';
const HEADER = '# pulsa-bridge sent index v1';

/** What the spool needs of a sent record without reading it. */
export interface SentMeta {
  rev: number;
  /** deliveredAt (else receivedAt) as epoch ms; undefined when the record has neither. */
  at: number | undefined;
}

export type SentIndex = Map<string, SentMeta>;

/** Parse the index text (PURE); bad lines are skipped, a wrong header gives an empty index. */
export function parseSentIndex(text: string): SentIndex {
  const out: SentIndex = new Map();
  const lines = text.split('\n');
  if (lines[0] !== HEADER) return out;
  for (const line of lines.slice(1)) {
    const f = line.split('\t');
    if (f[0] === '-' && f.length === 2 && f[1]) out.delete(f[1]);
    else if (f[0] === '+' && f.length === 4 && f[1] && /^\d+$/.test(f[2]!) && /^(\d+|-)$/.test(f[3]!)) {
      out.set(f[1], { rev: Number(f[2]), at: f[3] === '-' ? undefined : Number(f[3]) });
    }
  }
  return out;
}

function addLine(id: string, m: SentMeta): string {
  return `+\t${id}\t${m.rev}\t${m.at ?? '-'}\n`;
}

/** The cached entries, or an empty index when the file is missing or unreadable (logged: the records are read instead). */
export async function readSentIndex(dir: string, logger: Logger): Promise<SentIndex> {
  try {
    return parseSentIndex(await fsp.readFile(path.join(dir, SENT_INDEX_FILE), 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      logger.warn({ err: errorMessage(err) }, 'spool: sent index unreadable; reading the sent records instead');
    return new Map();
  }
}

/** Owner: rewrite the index compactly (tmp + rename). Best effort: a failure is logged and costs file reads next start. */
export async function writeSentIndex(dir: string, index: SentIndex, logger: Logger): Promise<void> {
  const file = path.join(dir, SENT_INDEX_FILE);
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    let body = `${HEADER}\n`;
    for (const [id, m] of index) body += addLine(id, m);
    await fsp.writeFile(tmp, body, { mode: 0o640 });
    await fsp.rename(tmp, file);
  } catch (err) {
    logger.warn(
      { err: errorMessage(err) },
      'spool: could not write the sent index (start-up reads the sent records instead)',
    );
    await fsp.rm(tmp, { force: true }).catch(() => undefined); // best effort: a stray tmp is rewritten next time
  }
}

/** Owner: record one delivery (append, no fsync). Best effort, like writeSentIndex. */
export async function appendSentIndex(dir: string, id: string, m: SentMeta, logger: Logger): Promise<void> {
  const file = path.join(dir, SENT_INDEX_FILE);
  try {
    // The callback form: fs/promises' appendFile goes through a FileHandle, twice the main-thread CPU of this (files.ts).
    await new Promise<void>((resolve, reject) =>
      appendFile(file, addLine(id, m), { mode: 0o640 }, (err) => (err ? reject(err) : resolve())),
    );
  } catch (err) {
    logger.debug(
      { id, err: errorMessage(err) },
      'spool: could not append to the sent index (the record is read at the next start)',
    );
  }
}
