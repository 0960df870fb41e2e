import { describe, it, expect, beforeEach, afterEach, vi } from 'vitest';
import { createHash, createHmac } from 'node:crypto';
import { diskOps } from '../../src/spool/files.js';
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Spool } from '../../src/spool/store.js';
import { SpoolError } from '../../src/errors.js';
import { parseRecordFile, recordChecksum, serializeRecord } from '../../src/spool/codec.js';
import type { PartRecord, QuarantineRecord, SmsRecord } from '../../src/spool/types.js';
import { silentLogger } from '../../src/log.js';
import { makeSms, nextDue } from './helpers.js';
import { captureLogger } from '../support/logger.js';
import { tempDir } from '../support/tmp.js';

let dir: string;
let cleanup: () => Promise<void>;
/** Owners opened by `open`; a reopen first closes the previous one (a clean stop releases spool.lock). */
const opened: Spool[] = [];

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('spool'));
});
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
  await cleanup();
});

const open = async (opts: Partial<Parameters<typeof Spool.open>[1]> = {}) => {
  for (const s of opened.splice(0)) await s.close();
  const spool = await Spool.open(dir, { logger: silentLogger(), ...opts });
  opened.push(spool);
  return spool;
};
const files = async (area: string) => (await readdir(path.join(dir, area))).sort();

function makePart(id: string, sequence: number): PartRecord {
  return {
    v: 1,
    kind: 'part',
    groupKey: 'telkomsel-1|858|42|2|8',
    id,
    sim: { modem: 'telkomsel-1' },
    sender: '858',
    sequence,
    total: 2,
    reference: 42,
    referenceBits: 8,
    text: sequence === 1 ? 'Anda mendapatkan ' : 'penambahan pulsa',
    scTimestamp: '2018-01-08T10:15:30+07:00',
    receivedAt: `2018-01-08T03:15:3${sequence}.000Z`,
    pdu: '0041000A',
  };
}

describe('the record file format is pinned', () => {
  // Spools written by earlier releases must stay readable and their ids stable: the exact bytes of one record
  // (key order, indentation, the checksum over the canonical JSON, UTF-8 of non-ASCII text) are fixed here. The values
  // were produced by the serialiser before its one-pass rewrite (commit 8cd0a3c) and match it.
  it('serialises a record to the same bytes and checksum as before, and reads them back', () => {
    const rec: SmsRecord = {
      v: 1,
      kind: 'sms',
      id: 'sms-golden',
      sim: { modem: 'telkomsel-1', imsi: '510100123456789' },
      sender: '858',
      text: 'Pulsa Rp 10.000 diterima dari 081234567890 — terima kasih 🙏',
      scTimestamp: '2018-01-08T10:15:30+07:00',
      receivedAt: '2018-01-08T03:15:35.000Z',
      pdus: ['0791', '0792'],
      attempts: 2,
    };
    const bytes = [
      '{',
      '  "attempts": 2,',
      '  "id": "sms-golden",',
      '  "kind": "sms",',
      '  "pdus": [',
      '    "0791",',
      '    "0792"',
      '  ],',
      '  "receivedAt": "2018-01-08T03:15:35.000Z",',
      '  "scTimestamp": "2018-01-08T10:15:30+07:00",',
      '  "sender": "858",',
      '  "sim": {',
      '    "imsi": "510100123456789",',
      '    "modem": "telkomsel-1"',
      '  },',
      '  "text": "Pulsa Rp 10.000 diterima dari 081234567890 — terima kasih 🙏",',
      '  "v": 1,',
      '  "checksum": "f408f4a727f9576de9d24a03a1a57c948b9937dee834e835522251966be5c513"',
      '}',
      '',
    ].join('\n');
    const text = serializeRecord(rec);
    expect(text).toBe(bytes);
    expect(createHash('sha256').update(text).digest('hex')).toBe(
      '129810a160acf1ae2bb145a468b31fe7a9a470aef1b8a7572fac6331ab271117',
    );
    const parsed = parseRecordFile(bytes, 'pending', 'sms-golden.json');
    expect(parsed).toEqual({ ok: true, record: rec, mac: 'absent' });

    // Signed: the same bytes plus `mac`, an HMAC-SHA256 of the domain line, the area and the canonical JSON.
    const key = Buffer.alloc(32, 7);
    const { checksum, ...body } = JSON.parse(bytes) as Record<string, unknown>;
    const mac = createHmac('sha256', key)
      .update(`pulsa-bridge-spool-record-v1\npending\n${JSON.stringify(body)}`)
      .digest('hex');
    const signed = serializeRecord(rec, { area: 'pending', key });
    expect(JSON.parse(signed)).toEqual({ ...body, checksum, mac });
    expect(parseRecordFile(signed, 'pending', 'sms-golden.json', key)).toEqual({ ok: true, record: rec, mac: 'valid' });
    expect(parseRecordFile(signed, 'pending', 'sms-golden.json')).toEqual({ ok: true, record: rec, mac: 'unchecked' });
    // Another key, or the same file copied into another area, does not verify.
    expect(parseRecordFile(signed, 'pending', 'sms-golden.json', Buffer.alloc(32, 8))).toMatchObject({
      ok: false,
      reason: expect.stringContaining('integrity check failed'),
    });
    expect(parseRecordFile(signed, 'dead', 'sms-golden.json', key)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('integrity check failed'),
    });
  });

  it('a record an older version marked `simulated` (made up by a virtual modem) is refused, never sent as real', () => {
    const key = Buffer.alloc(32, 7);
    const old = JSON.parse(serializeRecord(makeSms('sms-sim'), { area: 'pending', key })) as Record<string, unknown>;
    delete old.checksum;
    delete old.mac;
    const withFlag = JSON.parse(
      serializeRecord({ ...(old as unknown as SmsRecord), simulated: true } as unknown as SmsRecord, {
        area: 'pending',
        key,
      }),
    );
    expect(parseRecordFile(JSON.stringify(withFlag), 'pending', 'sms-sim.json', key)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('made up by a virtual modem'),
    });
  });
});

describe('Spool: durable, idempotent writes', () => {
  it('creates every area and writes a checksummed, versioned record that survives a reopen', async () => {
    const spool = await open();
    expect((await readdir(dir)).sort()).toEqual([
      'dead',
      'foreign',
      'ignored',
      'parts',
      'pending',
      'quarantine',
      'sent',
      'sent.index',
      'spool.key',
      'spool.lock',
      'tmp',
    ]);
    const rec = makeSms('a1', { text: 'Rp10.000 "ok" ünïcode\nline2' });
    expect(await spool.putPending(rec)).toEqual({ created: true, area: 'pending' });
    expect(await files('pending')).toEqual(['a1.json']);
    expect(await files('tmp')).toEqual([]);

    const onDisk = JSON.parse(await readFile(path.join(dir, 'pending', 'a1.json'), 'utf8')) as Record<string, unknown>;
    expect(onDisk.v).toBe(1);
    expect(onDisk.checksum).toBe(recordChecksum(onDisk));

    const again = await open();
    expect(await again.get('a1')).toEqual({ area: 'pending', record: rec });
  });

  it('putPending is idempotent by id in pending, sent and dead; only the first emits "pending"', async () => {
    const spool = await open();
    const woke: string[] = [];
    spool.on('pending', (id: string) => woke.push(id));
    await spool.putPending(makeSms('a1'));
    expect(await spool.putPending(makeSms('a1', { text: 'different' }))).toEqual({ created: false, area: 'pending' });
    await spool.markDelivered('a1', { status: 200, at: new Date('2024-01-01T00:00:00Z') });
    expect(await spool.putPending(makeSms('a1'))).toEqual({ created: false, area: 'sent' });
    await spool.putPending(makeSms('b2'));
    await spool.markDead('b2', 'HTTP 400: bad');
    expect(await spool.putPending(makeSms('b2'))).toEqual({ created: false, area: 'dead' });
    expect(woke).toEqual(['a1', 'b2']);
    expect((await spool.get('a1'))?.record).toMatchObject({ text: makeSms('a1').text });
  });

  it('serializes concurrent puts of one id: exactly one is created', async () => {
    const spool = await open();
    const results = await Promise.all(Array.from({ length: 8 }, () => spool.putPending(makeSms('same'))));
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(await files('pending')).toEqual(['same.json']);
  });

  it('refuses ids that are not filename-safe, writing nothing', async () => {
    const spool = await open();
    for (const bad of ['../evil', 'a/b', '', 'x'.repeat(129), 'sp ace', 'nul\u0000']) {
      await expect(spool.putPending(makeSms(bad))).rejects.toMatchObject({ reason: 'invalid-id' });
    }
    expect(await files('pending')).toEqual([]);
    expect(await readdir(path.dirname(dir))).not.toContain('evil.json');
  });

  it('putIgnored and putQuarantine are idempotent; an ignored id later accepted moves to pending', async () => {
    const spool = await open();
    expect(await spool.putIgnored(makeSms('i1', { ignoredReason: 'sender not accepted' }))).toEqual({
      created: true,
      area: 'ignored',
    });
    expect(await spool.putIgnored(makeSms('i1'))).toEqual({ created: false, area: 'ignored' });
    await spool.putPending(makeSms('p1'));
    expect(await spool.putIgnored(makeSms('p1'))).toEqual({ created: false, area: 'pending' });

    expect(await spool.putPending(makeSms('i1'))).toEqual({ created: true, area: 'pending' });
    expect(await files('ignored')).toEqual([]);
    expect((await files('pending')).sort()).toEqual(['i1.json', 'p1.json']);

    const q: QuarantineRecord = {
      v: 1,
      kind: 'quarantine',
      id: 'q1',
      modem: 'xl-1',
      index: 3,
      raw: '0791ZZ',
      reason: 'PDU invalid',
      receivedAt: '2024-01-01T00:00:00Z',
    };
    expect(await spool.putQuarantine(q)).toEqual({ created: true, area: 'quarantine' });
    expect(await spool.putQuarantine(q)).toEqual({ created: false, area: 'quarantine' });
    expect(await spool.list('quarantine')).toEqual([q]);
  });

  it('keeps multipart fragments across a restart and deletes them by id', async () => {
    const spool = await open();
    await spool.putPart(makePart('p-2', 2));
    await spool.putPart(makePart('p-1', 1));
    expect((await spool.putPart(makePart('p-1', 1))).created).toBe(false);
    const reopened = await open();
    expect((await reopened.listParts()).map((p) => p.sequence)).toEqual([1, 2]);
    await reopened.deleteParts(['p-1', 'p-2', 'never-existed']);
    expect(await files('parts')).toEqual([]);
    expect((await reopened.stats()).parts).toBe(0);
  });
});

describe('Spool: delivery transitions and operator commands', () => {
  it('markRetry counts the attempt, stays pending and is durable; stats shows the last error', async () => {
    const clock = () => new Date('2024-01-01T00:10:00Z');
    const spool = await open({ clock });
    await spool.putPending(makeSms('r1', { receivedAt: '2024-01-01T00:00:00Z' }));
    await spool.markRetry('r1', {
      error: 'HTTP 503: busy',
      status: 503,
      nextAttemptAt: new Date('2024-01-01T00:11:00Z'),
    });
    const reopened = await open({ clock });
    expect((await reopened.get('r1'))?.record).toMatchObject({
      attempts: 1,
      lastError: 'HTTP 503: busy',
      lastStatus: 503,
      nextAttemptAt: '2024-01-01T00:11:00.000Z',
    });
    expect(await spool.stats()).toMatchObject({
      pending: 1,
      oldestPendingAgeMs: 600_000,
      lastError: { id: 'r1', error: 'HTTP 503: busy' },
    });
  });

  it('markRetry retried after a failed directory fsync (the file was already renamed) counts the attempt once', async () => {
    const spool = await open({ fsync: true });
    await spool.putPending(makeSms('r2', { receivedAt: '2024-01-01T00:00:00Z' }));
    const baseRev = (await nextDue(spool, Date.parse('2024-01-01T00:10:00Z'))).next!.rev ?? 0;
    const pendingDir = path.join(dir, 'pending');
    const realOpen = diskOps.open;
    let failFsync = true;
    const spy = vi.spyOn(diskOps, 'open').mockImplementation(async (file, ...rest) => {
      if (failFsync && String(file) === pendingDir) {
        failFsync = false;
        throw Object.assign(new Error(`EIO: i/o error, open '${String(file)}'`), { code: 'EIO' });
      }
      return realOpen(file, ...rest);
    });
    try {
      const info = { error: 'HTTP 503: busy', status: 503, nextAttemptAt: new Date('2024-01-01T00:11:00Z'), baseRev };
      await expect(spool.markRetry('r2', info)).rejects.toMatchObject({ reason: 'io' });
      expect(JSON.parse(await readFile(path.join(pendingDir, 'r2.json'), 'utf8'))).toMatchObject({
        attempts: 1,
        rev: baseRev + 1,
      });
      await spool.markRetry('r2', info); // the forwarder's retried write
      const onDisk = JSON.parse(await readFile(path.join(pendingDir, 'r2.json'), 'utf8'));
      expect(onDisk).toMatchObject({ attempts: 1, rev: baseRev + 1, nextAttemptAt: '2024-01-01T00:11:00.000Z' });
      // the in-memory index follows: r2 waits for its retry time
      expect(nextDue(spool, Date.parse('2024-01-01T00:10:00Z'))).toEqual({
        wakeAtMs: Date.parse('2024-01-01T00:11:00Z'),
      });
      // another rev on disk (an operator's `queue retry` in between): marked from the disk as before
      await spool.retry('r2');
      await spool.markRetry('r2', info);
      expect((await spool.get('r2'))!.record).toMatchObject({ attempts: 1, rev: baseRev + 3 });
    } finally {
      spy.mockRestore();
    }
  });

  it('moves pending -> sent and pending -> dead -> pending (retry resets attempts and wakes the forwarder)', async () => {
    const spool = await open();
    await spool.putPending(makeSms('s1'));
    await spool.markDelivered('s1', { status: 200, at: new Date('2024-02-02T00:00:00Z') });
    expect(await files('pending')).toEqual([]);
    expect(await spool.get('s1')).toMatchObject({
      area: 'sent',
      record: { deliveredAt: '2024-02-02T00:00:00.000Z', lastStatus: 200, attempts: 1 },
    });

    await spool.putPending(makeSms('d1'));
    await spool.markRetry('d1', { error: 'ECONNREFUSED', nextAttemptAt: new Date('2030-01-01T00:00:00Z') });
    await spool.markDead('d1', 'HTTP 422: rejected', 422);
    expect(await spool.get('d1')).toMatchObject({
      area: 'dead',
      record: { deadReason: 'HTTP 422: rejected', lastStatus: 422, attempts: 2 },
    });

    const woke: string[] = [];
    spool.on('pending', (id: string) => woke.push(id));
    await spool.retry('d1');
    const back = (await spool.get('d1'))!;
    expect(back.area).toBe('pending');
    expect(back.record).toMatchObject({ attempts: 0 });
    expect((back.record as SmsRecord).nextAttemptAt).toBeUndefined();
    expect(woke).toEqual(['d1']);
    expect(await files('dead')).toEqual([]);
  });

  it('retryAllDead returns how many went back to pending', async () => {
    const spool = await open();
    for (const id of ['x1', 'x2', 'x3']) {
      await spool.putPending(makeSms(id));
      if (id !== 'x3') await spool.markDead(id, 'HTTP 400: no');
    }
    expect(await spool.retryAllDead()).toBe(2);
    expect(await spool.stats()).toMatchObject({ pending: 3, dead: 0 });
  });

  it("retry and retryAllDead stamp requeuedAt (the operator's requeue time, from the spool clock) on the record", async () => {
    let now = new Date('2024-03-01T10:00:00Z');
    const spool = await open({ fsync: false, clock: () => now });
    for (const id of ['q1', 'q2']) {
      await spool.putPending(makeSms(id));
      await spool.markDead(id, 'too old');
    }
    await spool.retry('q1');
    now = new Date('2024-03-01T11:00:00Z');
    expect(await spool.retryAllDead()).toBe(1);
    expect(((await spool.get('q1'))!.record as SmsRecord).requeuedAt).toBe('2024-03-01T10:00:00.000Z');
    expect(((await spool.get('q2'))!.record as SmsRecord).requeuedAt).toBe('2024-03-01T11:00:00.000Z');
    await spool.markDelivered('q2', { status: 200, at: now });
    expect(((await spool.get('q2'))!.record as SmsRecord).requeuedAt).toBe('2024-03-01T11:00:00.000Z'); // kept for the audit
  });

  it('transitions on an unknown or misplaced id fail with a clear error', async () => {
    const spool = await open();
    await expect(spool.markDelivered('ghost', { status: 200, at: new Date() })).rejects.toThrow(
      'no spool record with id ghost',
    );
    await spool.putPending(makeSms('s1'));
    await spool.markDelivered('s1', { status: 200, at: new Date() });
    await expect(spool.markRetry('s1', { error: 'x', nextAttemptAt: new Date() })).rejects.toThrow(
      'record s1 is in sent, not in pending',
    );
    await expect(spool.retry('s1')).rejects.toBeInstanceOf(SpoolError);
  });

  it('drop removes from pending/dead/ignored/quarantine and refuses unknown ids and sent records', async () => {
    const spool = await open();
    await spool.putPending(makeSms('p1'));
    await spool.putIgnored(makeSms('i1'));
    await spool.putQuarantine({
      v: 1,
      kind: 'quarantine',
      id: 'q1',
      modem: 'm',
      raw: 'zz',
      reason: 'bad',
      receivedAt: '2024-01-01T00:00:00Z',
    });
    expect(await spool.drop('p1')).toEqual({ area: 'pending', id: 'p1' });
    expect(await spool.drop('i1')).toEqual({ area: 'ignored', id: 'i1' });
    expect(await spool.drop('q1')).toEqual({ area: 'quarantine', id: 'q1' });
    expect(await spool.stats()).toMatchObject({ pending: 0, ignored: 0, quarantine: 0 });
    await expect(spool.drop('p1')).rejects.toMatchObject({
      reason: 'not-found',
      message: expect.stringContaining('no record p1'),
    });
    await spool.putPending(makeSms('s1'));
    await spool.markDelivered('s1', { status: 200, at: new Date() });
    await expect(spool.drop('s1')).rejects.toMatchObject({ reason: 'wrong-area' });
  });

  it('prune deletes sent records delivered before the cut-off and keeps newer ones', async () => {
    const spool = await open({ clock: () => new Date('2024-03-31T00:00:00Z') });
    for (const [id, at] of [
      ['old', '2024-03-01T00:00:00Z'],
      ['new', '2024-03-30T00:00:00Z'],
    ] as const) {
      await spool.putPending(makeSms(id));
      await spool.markDelivered(id, { status: 200, at: new Date(at) });
    }
    expect(await spool.prune('sent', 7)).toBe(1);
    expect(await files('sent')).toEqual(['new.json']);
  });

  it('lists pending oldest receivedAt first, with a limit', async () => {
    const spool = await open();
    await spool.putPending(makeSms('c', { receivedAt: '2024-01-03T00:00:00Z' }));
    await spool.putPending(makeSms('a', { receivedAt: '2024-01-01T00:00:00Z' }));
    await spool.putPending(makeSms('b', { receivedAt: '2024-01-02T00:00:00Z' }));
    expect((await spool.list('pending')).map((r) => r.id)).toEqual(['a', 'b', 'c']);
    expect((await spool.list('pending', { limit: 2 })).map((r) => r.id)).toEqual(['a', 'b']);
  });
});

describe('Spool: recovery at start-up', () => {
  it('deletes a half-written tmp file (crash between tmp write and rename); the SMS is simply not there yet', async () => {
    const spool = await open();
    await writeFile(path.join(dir, 'tmp', 'a1.4242.1.deadbeef.tmp'), serializeRecord(makeSms('a1')).slice(0, 40));
    await writeFile(path.join(dir, 'tmp', 'a2.4242.2.deadbeef.tmp'), serializeRecord(makeSms('a2')));
    void spool;
    const { logger, lines } = captureLogger();
    const reopened = await open({ logger });
    expect(await files('tmp')).toEqual([]);
    expect(await reopened.get('a1')).toBeUndefined();
    expect(await reopened.get('a2')).toBeUndefined();
    expect(lines.filter((l) => l.msg.includes('half-written'))).toHaveLength(2);
    expect((await reopened.putPending(makeSms('a2'))).created).toBe(true);
  });

  it.each([
    ['bad checksum', (t: string) => t.replace('Rp 5000', 'Rp 9000'), 'bad checksum'],
    ['truncated JSON', (t: string) => t.slice(0, t.length / 2), 'invalid JSON'],
    ['wrong version', (t: string) => t.replace('"v": 1', '"v": 2'), 'unsupported record version 2'],
    ['empty file', () => '', 'invalid JSON'],
    ['binary garbage', () => '\u0000\u00ff\u0001', 'invalid JSON'],
  ])('moves a record with %s into quarantine with its raw text and a warning', async (_name, corrupt, reason) => {
    const spool = await open();
    await spool.putPending(makeSms('bad1'));
    await spool.putPending(makeSms('good1'));
    const file = path.join(dir, 'pending', 'bad1.json');
    const broken = corrupt(await readFile(file, 'utf8'));
    await writeFile(file, broken);

    const { logger, lines } = captureLogger();
    const reopened = await open({ logger });
    expect(await files('pending')).toEqual(['good1.json']);
    const [q] = (await reopened.list('quarantine')) as QuarantineRecord[];
    expect(q).toMatchObject({ kind: 'quarantine', raw: broken, originalFile: 'pending/bad1.json' });
    expect(q!.reason).toContain(reason);
    const warn = lines.find((l) => l.level === 40 && l.msg.includes('pending/bad1.json'));
    expect(warn?.msg).toContain('quarantine');
    expect((await reopened.stats()).quarantine).toBe(1);
    // a second start finds nothing more to do
    const third = await open();
    expect((await third.stats()).quarantine).toBe(1);
  });

  it('never crashes on odd entries: a directory named like a record, a stray file, a misplaced kind', async () => {
    await open();
    await mkdir(path.join(dir, 'pending', 'weird.json'));
    await writeFile(path.join(dir, 'sent', 'notes.txt'), 'operator notes');
    await writeFile(path.join(dir, 'sent', 'part1.json'), serializeRecord(makePart('part1', 1)));
    const { logger, lines } = captureLogger();
    const spool = await open({ logger });
    expect(await spool.stats()).toMatchObject({ pending: 0, sent: 0, quarantine: 1 });
    expect(await files('sent')).toEqual([]);
    expect((await readdir(path.join(dir, 'foreign'))).sort()).toEqual(['pending.weird.json', 'sent.notes.txt']); // moved aside as they are
    expect(lines.some((l) => l.level >= 50 && String(l.file).includes('weird.json'))).toBe(true);
  });

  it('a record in pending and sent (crash during the move) keeps sent and logs it', async () => {
    const spool = await open();
    await spool.putPending(makeSms('m1'));
    await copyFile(path.join(dir, 'pending', 'm1.json'), path.join(dir, 'saved.json'));
    await spool.markDelivered('m1', { status: 200, at: new Date() });
    await copyFile(path.join(dir, 'saved.json'), path.join(dir, 'pending', 'm1.json'));

    const { logger, lines } = captureLogger();
    const reopened = await open({ logger });
    expect((await reopened.get('m1'))?.area).toBe('sent');
    expect(await files('pending')).toEqual([]);
    expect(lines.some((l) => l.id === 'm1' && l.kept === 'sent' && l.removed === 'pending')).toBe(true);
  });

  it('the later state wins in both directions between pending and dead', async () => {
    const spool = await open();
    // interrupted markDead: pending copy left behind -> dead wins
    await spool.putPending(makeSms('to-dead'));
    await copyFile(path.join(dir, 'pending', 'to-dead.json'), path.join(dir, 'saved1.json'));
    await spool.markDead('to-dead', 'HTTP 400: x', 400);
    await copyFile(path.join(dir, 'saved1.json'), path.join(dir, 'pending', 'to-dead.json'));
    // interrupted operator retry: dead copy left behind -> pending wins
    await spool.putPending(makeSms('to-retry'));
    await spool.markDead('to-retry', 'HTTP 400: x', 400);
    await copyFile(path.join(dir, 'dead', 'to-retry.json'), path.join(dir, 'saved2.json'));
    await spool.retry('to-retry');
    await copyFile(path.join(dir, 'saved2.json'), path.join(dir, 'dead', 'to-retry.json'));

    const reopened = await open();
    expect((await reopened.get('to-dead'))?.area).toBe('dead');
    expect((await reopened.get('to-retry'))?.area).toBe('pending');
    expect(await files('pending')).toEqual(['to-retry.json']);
    expect(await files('dead')).toEqual(['to-dead.json']);
  });

  it('with fsync disabled the behaviour is the same (dev mode)', async () => {
    const spool = await open({ fsync: false });
    await spool.putPending(makeSms('f1'));
    expect((await (await open({ fsync: false })).get('f1'))?.area).toBe('pending');
  });
});
