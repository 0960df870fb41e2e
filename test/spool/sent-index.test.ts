/**
 * The sent index (src/spool/sent-index.ts): start-up, rescan and prune know delivered records without reading their
 * files, and the index is rebuilt from the records when it is missing, garbled or stale. That a sent file is not read
 * is shown with a file damaged after it was indexed: with the index it stays in sent/; without it, start-up reads it
 * and moves it to quarantine (as every unreadable record always was).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { silentLogger } from '../../src/log.js';
import { parseSentIndex, SENT_INDEX_FILE } from '../../src/spool/sent-index.js';
import { Spool } from '../../src/spool/store.js';
import { makeSms } from './helpers.js';
import { tempDir } from '../support/tmp.js';

let dir: string;
let cleanup: () => Promise<void>;
const open: Spool[] = [];
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('sent-index'));
});
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
  await cleanup();
});

async function owner(clock?: () => Date): Promise<Spool> {
  const s = await Spool.open(dir, { logger: silentLogger(), fsync: false, ...(clock ? { clock } : {}) });
  open.push(s);
  return s;
}

async function deliver(s: Spool, id: string, at: string): Promise<void> {
  await s.putPending(makeSms(id));
  await s.markDelivered(id, { status: 200, at: new Date(at) });
}

const indexText = () => readFile(path.join(dir, SENT_INDEX_FILE), 'utf8');

describe('sent index', () => {
  it('deliveries are appended; a reopen compacts it and knows every sent record', async () => {
    const s = await owner();
    await deliver(s, 'a', '2026-01-01T00:00:00Z');
    await deliver(s, 'b', '2026-01-02T00:00:00Z');
    expect(parseSentIndex(await indexText())).toEqual(
      new Map([
        ['a', { rev: 1, at: Date.parse('2026-01-01T00:00:00Z') }],
        ['b', { rev: 1, at: Date.parse('2026-01-02T00:00:00Z') }],
      ]),
    );
    await s.close();
    const again = await owner();
    expect((await again.stats()).sent).toBe(2);
    expect((await again.get('a'))?.area).toBe('sent');
  });

  it('start-up does not read indexed sent files; without the index it reads (and checks) them all', async () => {
    const s = await owner();
    await deliver(s, 'a', '2026-01-01T00:00:00Z');
    await deliver(s, 'b', '2026-01-02T00:00:00Z');
    await s.close();
    await writeFile(path.join(dir, 'sent', 'b.json'), '{"damaged after it was indexed"'); // bit rot, say
    const indexed = await owner();
    expect((await indexed.stats()).sent).toBe(2); // listed, not read
    expect((await indexed.stats()).quarantine).toBe(0);
    await indexed.close();
    await rm(path.join(dir, SENT_INDEX_FILE));
    const rebuilt = await owner();
    expect((await rebuilt.stats()).sent).toBe(1); // read: b is unreadable and goes to quarantine
    expect((await rebuilt.stats()).quarantine).toBe(1);
    expect([...parseSentIndex(await indexText()).keys()]).toEqual(['a']);
  });

  it('a garbled or stale index: files it lacks are read, entries without a file are dropped', async () => {
    const s = await owner();
    await deliver(s, 'a', '2026-01-01T00:00:00Z');
    await deliver(s, 'b', '2026-01-02T00:00:00Z');
    await s.close();
    // Stale: names 'ghost' (no file), lacks 'b'; one garbled line.
    await writeFile(
      path.join(dir, SENT_INDEX_FILE),
      `# pulsa-bridge sent index v1\n+\ta\t1\t${Date.parse('2026-01-01T00:00:00Z')}\n+\tghost\t1\t5\nnonsense\n+\tb\tx\n`,
    );
    const s2 = await owner();
    expect((await s2.stats()).sent).toBe(2);
    expect(await s2.get('ghost')).toBeUndefined();
    expect(parseSentIndex(await indexText())).toEqual(
      new Map([
        ['a', { rev: 1, at: Date.parse('2026-01-01T00:00:00Z') }],
        ['b', { rev: 1, at: Date.parse('2026-01-02T00:00:00Z') }],
      ]),
    );
    await writeFile(path.join(dir, SENT_INDEX_FILE), 'not an index at all\n');
    await s2.close();
    const s3 = await owner();
    expect((await s3.stats()).sent).toBe(2);
  });

  it('prune takes the delivery time from the index and rewrites it', async () => {
    const s = await owner(() => new Date('2026-03-31T00:00:00Z'));
    await deliver(s, 'old', '2026-03-01T00:00:00Z');
    await deliver(s, 'new', '2026-03-30T00:00:00Z');
    await writeFile(path.join(dir, 'sent', 'old.json'), 'unreadable, but the index knows when it was delivered');
    expect(await s.prune('sent', 7)).toBe(1);
    expect(await readdir(path.join(dir, 'sent'))).toEqual(['new.json']);
    expect([...parseSentIndex(await indexText()).keys()]).toEqual(['new']);
  });

  it('an id left in pending and sent by a crash: the sent copy wins, from the index alone', async () => {
    const s = await owner();
    await s.putPending(makeSms('x'));
    const pendingCopy = await readFile(path.join(dir, 'pending', 'x.json'), 'utf8');
    await s.markDelivered('x', { status: 200, at: new Date('2026-01-01T00:00:00Z') });
    await s.close();
    await writeFile(path.join(dir, 'pending', 'x.json'), pendingCopy); // the move's unlink never happened
    const s2 = await owner();
    expect((await s2.get('x'))?.area).toBe('sent');
    expect(await readdir(path.join(dir, 'pending'))).toEqual([]);
  });
});
