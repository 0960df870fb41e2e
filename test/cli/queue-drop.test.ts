/**
 * `queue drop` takes a stray multipart part (siblings that never came) and an unambiguous start of an
 * id; a prefix that fits several records is refused, naming them. The compiled CLI in its own process.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { silentLogger } from '../../src/log.js';
import { Spool } from '../../src/spool/store.js';
import { SPOOL_RECORD_VERSION, type PartRecord } from '../../src/spool/types.js';
import { makeSms } from '../spool/helpers.js';
import { tempDir } from '../support/tmp.js';
import { compiledCli } from '../support/cli.js';

let dir: string;
let cleanup: () => Promise<void>;

const part: PartRecord = {
  v: SPOOL_RECORD_VERSION,
  kind: 'part',
  groupKey: 'tsel-1|858|42|3|8',
  id: 'part-7f3a9c.2',
  sim: { modem: 'tsel-1' },
  sender: '858',
  sequence: 2,
  total: 3,
  reference: 42,
  referenceBits: 8,
  text: 'middle of a message whose other parts never came',
  scTimestamp: '2026-01-08T10:15:30+07:00',
  receivedAt: '2026-01-08T03:15:35.000Z',
  pdu: '00',
};

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('queue-drop'));
  const spool = await Spool.open(dir, { logger: silentLogger(), fsync: false });
  await spool.putPart(part);
  for (const id of ['sms-a1b2c3', 'sms-a1b2ff', 'sms-b9d8e7']) await spool.putPending(makeSms(id));
  await spool.close();
});
afterEach(() => cleanup());

function cli(args: string[]): { code: number | null; out: string; err: string } {
  return compiledCli(['queue', ...args, '--spool', dir]);
}

describe('queue drop: parts and id prefixes', () => {
  it('drops a stray multipart part by its id', () => {
    const r = cli(['drop', 'part-7f3a9c.2']);
    expect(r.err).toBe('');
    expect(r.out).toBe('dropped part-7f3a9c.2 from parts\n');
    expect(existsSync(path.join(dir, 'parts', 'part-7f3a9c.2.json'))).toBe(false);
  }, 30_000);

  it('an unambiguous prefix drops the one record it names (a part too)', () => {
    expect(JSON.parse(cli(['drop', 'sms-b9d8', '--json']).out)).toEqual({ dropped: 'sms-b9d8e7', area: 'pending' });
    expect(existsSync(path.join(dir, 'pending', 'sms-b9d8e7.json'))).toBe(false);
    expect(cli(['drop', 'part-7f3']).out).toBe('dropped part-7f3a9c.2 from parts\n');
  }, 30_000);

  it('a prefix of several ids is refused, naming them; nothing is dropped', () => {
    const r = cli(['drop', 'sms-a1b2', '--json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.out)).toMatchObject({
      code: 'SPOOL_INVALID_ID',
      error: 'id prefix sms-a1b2 matches 2 records (sms-a1b2c3, sms-a1b2ff)',
    });
    expect(existsSync(path.join(dir, 'pending', 'sms-a1b2c3.json'))).toBe(true);
    expect(existsSync(path.join(dir, 'pending', 'sms-a1b2ff.json'))).toBe(true);
    expect(cli(['drop', 'zzz']).code).toBe(1);
  }, 30_000);

  it('a prefix shorter than 8 characters is refused, even when it fits one record (an empty one too); --help says so', () => {
    expect(JSON.parse(cli(['drop', '', '--json']).out)).toMatchObject({ code: 'SPOOL_INVALID_ID' });
    for (const prefix of ['s', 'sms-b9d']) {
      const r = cli(['drop', prefix, '--json']);
      expect(r.code, prefix).toBe(1);
      expect(JSON.parse(r.out)).toMatchObject({
        code: 'SPOOL_INVALID_ID',
        error: expect.stringContaining('too short: give at least 8 characters'),
      });
    }
    expect(existsSync(path.join(dir, 'pending', 'sms-b9d8e7.json'))).toBe(true);
    const help = compiledCli(['queue', 'drop', '--help']);
    expect(help.out.replace(/\s+/g, ' ')).toMatch(/at least 8 characters/);
  }, 30_000);
});
