/**
 * `sms delete N` through the running daemon is "handle it, then remove it from the SIM": an SMS the daemon has not
 * spooled yet (its +CMTI lost while the modem stalled) is spooled first (and POSTed), one already spooled is not written
 * twice, a keep-policy sender is archived, an undecodable PDU quarantined; a failing spool write deletes nothing; an
 * empty slot keeps its error. The daemon's production wiring (Daemon.start, virtual modem, real spool directory, real
 * HTTP server, real control socket), and for the spool fault the receive stack under a Dispatcher.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Dispatcher } from '../../src/control/server/dispatch.js';
import type { ControlConnection } from '../../src/control/server/server.js';
import { silentLogger } from '../../src/log.js';
import { buildDeliverPdus } from '../../src/virtual-modem/pdu-builder.js';
import type { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';
import type { QuarantineRecord, SmsRecord } from '../../src/spool/types.js';
import { pendingRecords, startStack, virtualModem, type Faults } from '../receive/harness.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';
import { startControlDaemon } from './daemon.js';
import { OPEN_ACCESS, OWN_PEER } from './access-fixtures.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const TEXT = 'Anda mendapatkan penambahan pulsa Rp 25.000 dari 6281234567890. Ref: 8812'; // byte-exact check

/** The control daemon (daemon.ts), once its start-up sweep has ended. */
async function startDaemon() {
  const d = await startControlDaemon(cleanups);
  await until(
    () =>
      d.daemon.status().modems[0]!.scheduler.running === undefined &&
      d.daemon.status().modems[0]!.scheduler.queued === 0,
    'the start-up sweep to end',
    5000,
  );
  return d;
}

/** Stores an SMS on the SIM with its +CMTI lost (the modem stalled): the daemon has not seen it. Returns its index. */
function unannounced(vm: VirtualModem, inject: () => { indexes: number[] }): number {
  vm.stall('forever');
  const { indexes } = inject();
  vm.resume();
  expect(indexes).toHaveLength(1);
  return indexes[0]!;
}

const TS = new Date('2026-11-22T03:00:00Z');

describe('sms delete through the daemon: handle it, then remove it from the SIM', () => {
  it('an SMS from an accepted sender not spooled yet is spooled (byte-exact), POSTed, then deleted; the reply says so', async () => {
    const { daemon, vm, client, server } = await startDaemon();
    const index = unannounced(vm, () => vm.injectSms({ from: '858', text: TEXT }));
    expect(await pendingRecords(daemon.spool)).toEqual([]);
    const r = await client.request<{
      deleted: boolean;
      index: number;
      sender: string;
      handled: { spooled: string; id: string; created: boolean };
      summary: string;
    }>({ op: 'sms.delete', modem: 'tsel-1', index });
    const id = r.handled.id;
    expect(id).toMatch(/^sms-[0-9a-f]{32}$/);
    expect(r).toEqual({
      deleted: true,
      index,
      sender: '858',
      handled: { spooled: 'pending', id, created: true },
      summary: `deleted SMS at index ${index} (from 858, spooled as pending ${id} first)`,
    });
    expect(vm.storedMessages()).toEqual([]);
    // The record was durable before the delete (the reply came after both); the forwarder POSTs it.
    await until(() => server.requests.length === 1, 'the POST', 10_000);
    expect(server.requests[0]!.body.toString('utf8')).toBe(JSON.stringify({ sender: '858', message: TEXT }));
    const all = [...(await daemon.spool.list('pending')), ...(await daemon.spool.list('sent'))] as SmsRecord[];
    expect(all.map((rec) => [rec.id, rec.sender, rec.text])).toEqual([[id, '858', TEXT]]);
    const cmds = vm.commandLog();
    const del = cmds.lastIndexOf(`AT+CMGD=${index}`);
    expect(cmds.slice(del - 2, del + 1)).toEqual([`AT+CMGR=${index}`, `AT+CMGR=${index}`, `AT+CMGD=${index}`]); // confirming read, then delete
  });

  it('an SMS already spooled is not written twice, and is deleted', async () => {
    const { daemon, vm, client } = await startDaemon();
    const first = unannounced(vm, () => vm.injectSms({ from: '858', text: TEXT, timestamp: TS }));
    const r1 = await client.request<{ handled: { id: string } }>({ op: 'sms.delete', index: first });
    const again = unannounced(vm, () => vm.injectSms({ from: '858', text: TEXT, timestamp: TS })); // the same SMS, read again
    const r2 = await client.request<{ deleted: boolean; handled: unknown; summary: string }>({
      op: 'sms.delete',
      index: again,
    });
    expect(r2).toMatchObject({
      deleted: true,
      handled: { spooled: 'pending', id: r1.handled.id, created: false },
      summary: `deleted SMS at index ${again} (from 858, already spooled: ${r1.handled.id})`,
    });
    expect(vm.storedMessages()).toEqual([]);
    const all = [...(await daemon.spool.list('pending')), ...(await daemon.spool.list('sent'))];
    expect(all.map((rec) => rec.id)).toEqual([r1.handled.id]);
  });

  it('a sender the keep policy leaves on the SIM is archived in ignored, then deleted', async () => {
    const { daemon, vm, client } = await startDaemon();
    vm.injectSms({ from: '0812999', text: 'pesan pribadi' });
    await until(
      () =>
        vm.storedMessages().length === 1 &&
        daemon.status().modems[0]!.scheduler.running === undefined &&
        daemon.status().modems[0]!.scheduler.queued === 0,
      'the SMS to be kept',
      5000,
    );
    const index = vm.storedMessages()[0]!.index;
    expect(await daemon.spool.list('ignored')).toEqual([]);
    const r = await client.request<{ handled: { id: string } }>({ op: 'sms.delete', index });
    const id = r.handled.id;
    expect(r).toEqual({
      deleted: true,
      index,
      sender: '0812999',
      handled: { spooled: 'ignored', id, created: true },
      summary: `deleted SMS at index ${index} (from 0812999, archived in ignored: ${id})`,
    });
    expect(((await daemon.spool.list('ignored')) as SmsRecord[]).map((rec) => [rec.id, rec.sender, rec.text])).toEqual([
      [id, '0812999', 'pesan pribadi'],
    ]);
    expect(vm.storedMessages()).toEqual([]);
    expect(await client.request({ op: 'sms.delete', index })).toMatchObject({ deleted: false }); // gone: not archived twice
    expect(await daemon.spool.list('ignored')).toHaveLength(1);
  });

  it('an undecodable PDU is quarantined, then deleted', async () => {
    const { daemon, vm, client } = await startDaemon();
    const good = buildDeliverPdus({ originator: '858', text: TEXT, timestamp: TS })[0]!;
    const short = good.pdu.slice(0, -8); // user data shorter than its UDL: undecodable
    const index = unannounced(vm, () => vm.injectRawPdu(short, good.tpduLength - 4, 'store'));
    const r = await client.request<{ deleted: boolean; handled: { spooled: string; id: string }; summary: string }>({
      op: 'sms.delete',
      index,
    });
    expect(r.handled.spooled).toBe('quarantine');
    expect(r).toEqual({
      deleted: true,
      index,
      handled: { spooled: 'quarantine', id: r.handled.id, created: true },
      summary: `deleted SMS at index ${index} (quarantined: ${r.handled.id})`,
    });
    const q = (await daemon.spool.list('quarantine')) as QuarantineRecord[];
    expect(q.map((rec) => [rec.id, rec.raw, rec.index])).toEqual([[r.handled.id, short, index]]);
    expect(vm.storedMessages()).toEqual([]);
    expect(await pendingRecords(daemon.spool)).toEqual([]);
  });

  it('an empty slot keeps its answer: deleted false, nothing sent to AT+CMGD', async () => {
    const { vm, client } = await startDaemon();
    const r = await client.request<{ deleted: boolean }>({ op: 'sms.delete', index: 7 });
    expect(r).toEqual({
      deleted: false,
      index: 7,
      summary: 'no SMS at index 7 (the slot was already empty: nothing deleted)',
    });
    expect(vm.commandLog()).not.toContain('AT+CMGD=7');
  });
});

describe('sms delete through the daemon: the receive stack under a Dispatcher', () => {
  const conn: ControlConnection = {
    id: 1,
    openedAt: '',
    client: undefined,
    peer: OWN_PEER,
    who: 'uid 0 pid 1',
    subscriptions: new Set(),
    closed: false,
    send: () => undefined,
    onClose: () => undefined,
  };

  async function stack(faults?: Faults) {
    const { dir, cleanup } = await tempDir('del-stack');
    cleanups.push(cleanup);
    const vm = virtualModem('virtual:del');
    const s = await startStack(dir, vm, silentLogger(), faults ? { faults } : {});
    cleanups.push(() => s.stop());
    await s.supervisor.currentReceiver()!.drained();
    const d = new Dispatcher({
      modems: [
        {
          name: 'tsel-1',
          port: 'virtual:del',
          scheduler: s.supervisor.scheduler,
          state: () => s.supervisor.status().state,
          receiver: () => s.supervisor.currentReceiver(),
        },
      ],
      version: 't',
      logger: silentLogger(),
      status: () => ({}),
      access: OPEN_ACCESS,
    });
    return { vm, s, d };
  }

  it('a failing spool write: an error naming why, nothing deleted, the slot still there', async () => {
    const { vm, s, d } = await stack({ beforePendingWrite: () => true });
    const index = unannounced(vm, () => vm.injectSms({ from: '858', text: TEXT }));
    const err = (await d.handle({ v: 1, id: 1, op: 'sms.delete', index }, conn, new AbortController().signal).then(
      () => undefined,
      (e: unknown) => e,
    )) as { code: string; message: string; data: unknown };
    expect(err).toBeDefined();
    expect(err.message).toBe(
      `SMS at index ${index} not deleted: its spool write failed: simulated crash: before spool write`,
    );
    expect(err.data).toEqual({ code: 'SPOOL_IO' });
    expect(vm.storedMessages().map((m) => m.index)).toEqual([index]);
    expect(vm.commandLog()).not.toContain(`AT+CMGD=${index}`);
    expect(await pendingRecords(s.spool)).toEqual([]);
  });

  it('a +CMTI for the index still waiting in the receiver queue finds the slot empty afterwards: one record, one delete', async () => {
    const { vm, s } = await stack();
    const index = unannounced(vm, () => vm.injectSms({ from: '858', text: TEXT }));
    const receiver = s.supervisor.currentReceiver()!;
    // The +CMTI arrives while the operator's delete runs: its receive task is queued behind it.
    const r = (await s.supervisor.scheduler.schedule(
      { priority: 'operator', label: 'operator: sms delete' },
      async ({ target }) => {
        target.modem.emit('sms', { index, storage: 'SM' });
        return receiver.operatorDelete(index, target.modem);
      },
    )) as { handled: { id: string; spooled: string } };
    expect(r.handled.spooled).toBe('pending');
    await receiver.drained();
    const cmds = vm.commandLog();
    expect(cmds.filter((c) => c === `AT+CMGD=${index}`)).toHaveLength(1);
    expect(cmds.lastIndexOf(`AT+CMGR=${index}`)).toBeGreaterThan(cmds.indexOf(`AT+CMGD=${index}`)); // the queued read ran, found nothing
    expect((await pendingRecords(s.spool)).map((rec) => [rec.id, rec.text])).toEqual([[r.handled.id, TEXT]]);
    expect(receiver.stats.lastError).toBeUndefined();
  });
});
