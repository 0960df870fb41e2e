import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Command } from 'commander';
import { queueCommands } from '../../src/cli/queue.js';
import { Spool } from '../../src/spool/store.js';
import { serializeRecord } from '../../src/spool/codec.js';
import type { PartRecord, SmsRecord } from '../../src/spool/types.js';
import { silentLogger } from '../../src/log.js';
import { makeSms } from '../spool/helpers.js';
import { tempDir } from '../support/tmp.js';
import { cli as runCli } from '../support/cli.js';

let dir: string;
let cleanup: () => Promise<void>;
/** The "daemon": an owner Spool in this process (it holds spool.lock with our pid). */
let daemon: Spool;

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('cli'));
  daemon = await Spool.open(dir, { logger: silentLogger(), fsync: false });
  await daemon.putPending(makeSms('p1', { receivedAt: '2024-01-01T00:00:01Z' }));
  await daemon.putPending(makeSms('p2', { receivedAt: '2024-01-01T00:00:02Z', sender: 'TELKOMSEL' }));
  await daemon.markRetry('p2', {
    error: 'HTTP 503: busy',
    status: 503,
    nextAttemptAt: new Date('2099-01-01T00:00:00Z'),
  });
  await daemon.putPending(makeSms('d1', { receivedAt: '2024-01-01T00:00:03Z' }));
  await daemon.markDead('d1', 'HTTP 422: unknown sender format', 422);
  await daemon.putPending(makeSms('s1', { receivedAt: '2024-01-01T00:00:04Z' }));
  await daemon.markDelivered('s1', { status: 200, at: new Date('2024-01-01T00:01:00Z') });
  await daemon.putIgnored(makeSms('i1', { sender: '+6281234567890', ignoredReason: 'sender not accepted' }));
  await daemon.putQuarantine({
    v: 1,
    kind: 'quarantine',
    id: 'q1',
    modem: 'telkomsel-1',
    index: 4,
    raw: '0791ZZ',
    reason: 'PDU invalid',
    receivedAt: '2024-01-01T00:00:05Z',
  });
  const part: PartRecord = {
    v: 1,
    kind: 'part',
    groupKey: 'telkomsel-1|858|42|2|8',
    id: 'part1',
    sim: { modem: 'telkomsel-1' },
    sender: '858',
    sequence: 1,
    total: 2,
    reference: 42,
    referenceBits: 8,
    text: 'Anda mendapatkan ',
    scTimestamp: '2018-01-08T10:15:30+07:00',
    receivedAt: '2024-01-01T00:00:06Z',
    pdu: '0041000A',
  };
  await daemon.putPart(part);
});
afterEach(async () => {
  await daemon.close();
  await cleanup();
});

type Open = Parameters<typeof queueCommands>[1];

/** Run `pulsa-bridge queue <args>` in-process; returns what the command printed. */
async function run(args: string[], open?: Open): Promise<string> {
  const out: string[] = [];
  const io = { out: (t: string) => void out.push(t), err: (t: string) => void out.push(`ERR ${t}`) };
  const program = new Command().exitOverride().addCommand(queueCommands(io, open));
  await program.parseAsync(['node', 'x', 'queue', ...args]);
  return out.join('');
}
const runJson = async <T>(args: string[], open?: Open) =>
  JSON.parse(await run([...args, '--spool', dir, '--json'], open)) as T;
const files = async (area: string) => (await readdir(path.join(dir, area))).sort();

interface LsJson {
  daemon: { running: boolean | null; pid?: number };
  records: Array<{ area: string; record: { id: string } }>;
}

describe('queue ls', () => {
  it('lists pending and dead by default, oldest first, and says the daemon runs', async () => {
    const ls = await runJson<LsJson>(['ls']);
    expect(ls.records.map((r) => `${r.area}/${r.record.id}`)).toEqual(['pending/p1', 'pending/p2', 'dead/d1']);
    expect(ls.daemon).toMatchObject({ running: true, pid: process.pid });

    const text = await run(['ls', '--spool', dir]);
    const lines = text.split('\n');
    expect(lines[0]).toBe(`daemon: running (pid ${process.pid})`);
    expect(lines[1]).toMatch(/^ID\s+AREA\s+MODEM\s+SENDER\s+AGE\s+STATE\s+TEXT \/ LAST ERROR$/);
    expect(text).toMatch(/p2\s+pending\s+telkomsel-1\s+TELKOMSEL\s+\S+\s+retry 1 at 00:00:00\s+HTTP 503: busy/);
    expect(text).toMatch(/d1\s+dead\s+.*HTTP 422: unknown sender format/);
    expect(text).not.toContain('s1');
  });

  it('--area all shows every area; --area sent only sent', async () => {
    const all = await runJson<LsJson>(['ls', '--area', 'all']);
    expect(all.records.map((r) => `${r.area}/${r.record.id}`).sort()).toEqual(
      ['dead/d1', 'ignored/i1', 'parts/part1', 'pending/p1', 'pending/p2', 'quarantine/q1', 'sent/s1'].sort(),
    );
    const sent = await runJson<LsJson>(['ls', '--area', 'sent']);
    expect(sent.records.map((r) => r.record.id)).toEqual(['s1']);
    await expect(run(['ls', '--spool', dir, '--area', 'outbox'])).rejects.toThrow('--area: unknown area "outbox"');
  });

  it('leaves a file the daemon is writing in tmp/ alone', async () => {
    const inProgress = `p9.${process.pid}.3.beef.tmp`;
    await writeFile(path.join(dir, 'tmp', inProgress), serializeRecord(makeSms('p9')).slice(0, 30));
    await run(['ls', '--spool', dir, '--area', 'all']);
    await run(['stats', '--spool', dir]);
    expect(await files('tmp')).toEqual([inProgress]);
  });

  it('says "daemon: not running" when no process holds the spool', async () => {
    await daemon.close();
    expect((await run(['ls', '--spool', dir])).split('\n')[0]).toBe('daemon: not running');
    expect((await runJson<LsJson>(['ls'])).daemon).toEqual({ running: false });
  });
});

describe('queue show', () => {
  it('prints the full record of any area', async () => {
    const shown = await runJson<{ area: string; record: SmsRecord }>(['show', 'd1']);
    expect(shown).toEqual(await daemon.get('d1'));
    expect(shown.record).toMatchObject({
      deadReason: 'HTTP 422: unknown sender format',
      lastStatus: 422,
      sender: '858',
    });

    const text = await run(['show', 'i1', '--spool', dir]);
    expect(text).toContain('area: ignored\n');
    expect(text).toContain('ignoredReason: sender not accepted\n');
    expect(text).toContain(`text:\n  ${makeSms('i1').text}\n`);
  });

  it('an unknown id is an error that says how to find ids', async () => {
    const err = await run(['show', 'nope', '--spool', dir]).catch((e: unknown) => e);
    expect(err).toMatchObject({
      message: 'no record nope in the spool',
      hint: expect.stringContaining('queue ls --area all'),
    });
  });
});

describe('queue retry and drop (while the daemon runs)', () => {
  /** The CLI's own open, with the SIGHUP to the daemon recorded instead of sent. */
  function recordingOpen(signals: Array<[number, string]>): Open {
    return (o) =>
      Spool.open(o.spool!, {
        logger: silentLogger(),
        role: 'client',
        signal: (pid, sig) => void signals.push([pid, sig]),
      });
  }

  it('retry <id>: dead -> pending with attempts reset; the daemon is signalled and picks it up on rescan', async () => {
    const signals: Array<[number, string]> = [];
    expect(await runJson(['retry', 'd1'], recordingOpen(signals))).toEqual({ retried: 1, id: 'd1' });
    expect(await files('dead')).toEqual([]);
    expect(await files('pending')).toEqual(['d1.json', 'p1.json', 'p2.json']);
    expect(signals).toEqual([[process.pid, 'SIGHUP']]);

    const woke: string[] = [];
    daemon.on('pending', (id: string) => woke.push(id));
    await daemon.rescan();
    expect(woke).toEqual(['d1']);
    expect(await daemon.get('d1')).toMatchObject({ area: 'pending', record: { attempts: 0 } });
  });

  it('retry --dead returns every dead record; retry without id or --dead is refused', async () => {
    await daemon.putPending(makeSms('d2'));
    await daemon.markDead('d2', 'HTTP 400: no');
    expect(await runJson(['retry', '--dead'], recordingOpen([]))).toEqual({ retried: 2 });
    expect(await files('dead')).toEqual([]);
    expect(await run(['retry', '--dead', '--spool', dir], recordingOpen([]))).toBe(
      '0 dead record(s) returned to pending\n',
    );
    await expect(run(['retry', '--spool', dir])).rejects.toThrow('give a record id, or --dead');
    await expect(run(['retry', 's1', '--spool', dir], recordingOpen([]))).rejects.toThrow(
      'record s1 is in sent, not in dead or pending',
    );
  });

  it('drop removes pending/ignored/quarantine records; sent and unknown ids are refused', async () => {
    const signals: Array<[number, string]> = [];
    expect(await runJson(['drop', 'i1'], recordingOpen(signals))).toEqual({ dropped: 'i1', area: 'ignored' });
    expect(await run(['drop', 'q1', '--spool', dir], recordingOpen(signals))).toBe('dropped q1 from quarantine\n');
    expect(await runJson(['drop', 'p1'], recordingOpen(signals))).toEqual({ dropped: 'p1', area: 'pending' });
    expect(signals).toHaveLength(3);
    expect(await files('ignored')).toEqual([]);
    expect(await files('quarantine')).toEqual([]);
    expect(await files('pending')).toEqual(['p2.json']);
    await expect(run(['drop', 's1', '--spool', dir])).rejects.toMatchObject({ reason: 'wrong-area' });
    await expect(run(['drop', 'ghost', '--spool', dir])).rejects.toMatchObject({ reason: 'not-found' });

    // the daemon does not resurrect the dropped record
    await expect(daemon.markDelivered('p1', { status: 200, at: new Date() })).rejects.toMatchObject({
      reason: 'not-found',
    });
    expect(await files('sent')).toEqual(['s1.json']);
  });
});

describe('queue stats', () => {
  it('--json counts match the spool, with the last error and the daemon', async () => {
    const s = await runJson<Record<string, unknown>>(['stats']);
    const truth = await daemon.stats();
    expect(s).toMatchObject({
      pending: truth.pending,
      dead: truth.dead,
      sent: truth.sent,
      ignored: truth.ignored,
      quarantine: truth.quarantine,
      parts: truth.parts,
      daemon: { running: true, pid: process.pid },
    });
    expect([s.pending, s.dead, s.sent, s.ignored, s.quarantine, s.parts]).toEqual([2, 1, 1, 1, 1, 1]);
    expect(s.lastError).toMatchObject({ id: 'p2', error: 'HTTP 503: busy' });
  });

  it('text output starts with the daemon line', async () => {
    const text = await run(['stats', '--spool', dir]);
    expect(text.split('\n').slice(0, 3)).toEqual([
      `daemon: running (pid ${process.pid})`,
      expect.stringMatching(/^pending: {4}2 \(oldest \S+\)$/),
      'dead:       1',
    ]);
    await daemon.close();
    expect((await run(['stats', '--spool', dir])).split('\n')[0]).toBe('daemon: not running');
    expect((await runJson<{ daemon: unknown }>(['stats'])).daemon).toEqual({ running: false });
  });
});

describe('usage errors exit 2, before the spool is touched', () => {
  const cli = (args: string[]) => runCli(['queue', ...args]);

  it.each([['abc'], ['0'], ['-1'], ['1.5']])('queue ls -n %s', async (n) => {
    const r = await cli(['ls', '--spool', dir, '-n', n]);
    expect(r.out).toBe('');
    expect(r.err).toContain(
      `error: option '-n, --limit <n>' argument '${n}' is invalid. expected a number of records (a whole number >= 1).`,
    );
    expect(r.code).toBe(2);
  });

  it('queue ls -n 1 lists at most one record per area', async () => {
    const r = await cli(['ls', '--spool', dir, '-n', '1', '--json']);
    expect(r.code).toBe(0);
    expect((JSON.parse(r.out) as LsJson).records.map((x) => x.record.id)).toEqual(['p1', 'd1']);
  });

  it('queue retry without an id or --dead', async () => {
    const r = await cli(['retry', '--spool', dir]);
    expect(r).toEqual({ out: '', err: 'error: give a record id, or --dead for every dead record\n', code: 2 });
    expect(await files('dead')).toEqual(['d1.json']);
  });
});
