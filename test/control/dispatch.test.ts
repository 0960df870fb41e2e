/**
 * The control plane against the daemon's production wiring, in-process: Daemon.start with a virtual modem, a real
 * spool directory, a real HTTP server on loopback, and the real control socket (ControlClient). Plus the ordering
 * rule on a real AtScheduler: an SMS waits for at most one operator command.
 */
import { stat } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { ControlClient, RemoteError } from '../../src/control/client/client.js';
import { Dispatcher, type DispatchModem } from '../../src/control/server/dispatch.js';
import type { EventMessage } from '../../src/control/protocol.js';
import type { ControlConnection } from '../../src/control/server/server.js';
import { silentLogger } from '../../src/log.js';
import { AtScheduler } from '../../src/modem/scheduler.js';
import { until } from '../support/until.js';
import { startControlDaemon } from './daemon.js';
import { OPEN_ACCESS, OWN_PEER } from './access-fixtures.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const startDaemon = () => startControlDaemon(cleanups);

const errorOf = async (p: Promise<unknown>) =>
  (await p.then(
    () => undefined,
    (e: unknown) => e,
  )) as RemoteError;

describe('the daemon answers on its control socket', () => {
  it('listens beside the spool with mode 0660; hello names the modems; info shows the config name', async () => {
    const { socket, client } = await startDaemon();
    expect(socket.endsWith('/spool/control.sock')).toBe(true);
    expect((await stat(socket)).mode & 0o777).toBe(0o660);
    const hello = await client.request<{ protocol: number; modems: Array<{ name: string; state: string }> }>({
      op: 'hello',
      client: 'test',
    });
    expect(hello).toMatchObject({
      protocol: 1,
      // no operator and no balance section: the CLI's `balance` skips it
      modems: [{ name: 'tsel-1', state: 'running', port: 'virtual:tsel-1', balanceCheck: false }],
    });
    const info = await client.request<Record<string, unknown>>({ op: 'info', modem: 'tsel-1' });
    expect(info).toMatchObject({
      name: 'tsel-1',
      profile: 'simcom',
      simState: 'READY',
      operator: 'TELKOMSEL',
      errors: [],
    });
    // `modem` may be omitted when the daemon runs one.
    expect(await client.request({ op: 'info' })).toMatchObject({ name: 'tsel-1' });
  });

  it('sms list/read/delete on the SIM; an empty slot is not found on read and not deleted', async () => {
    const { vm, client, daemon } = await startDaemon();
    vm.injectSms({ from: '0812999', text: 'pesan pribadi' });
    await until(
      () => (daemon.status().modems[0]?.receiver?.ignored ?? 0) >= 1 || vm.storedMessages().length === 1,
      'the SMS to be kept',
      5000,
    );
    const list = await client.request<Array<{ index: number; sender: string; text: string }>>({
      op: 'sms.list',
      modem: 'tsel-1',
    });
    expect(list.map((m) => [m.sender, m.text])).toEqual([['0812999', 'pesan pribadi']]);
    const index = list[0]!.index;
    expect(await client.request({ op: 'sms.read', modem: 'tsel-1', index })).toMatchObject({
      index,
      sender: '0812999',
      text: 'pesan pribadi',
    });
    expect(await client.request({ op: 'sms.read', modem: 'tsel-1', index: 29 })).toBeNull();
    // Through the daemon a delete handles the SMS first: one kept by policy is archived in ignored (test/control/sms-delete.test.ts).
    expect(await client.request({ op: 'sms.delete', modem: 'tsel-1', index })).toMatchObject({
      deleted: true,
      index,
      sender: '0812999',
      handled: { spooled: 'ignored', created: true },
    });
    expect(await client.request({ op: 'sms.delete', modem: 'tsel-1', index })).toEqual({
      deleted: false,
      index,
      summary: `no SMS at index ${index} (the slot was already empty: nothing deleted)`,
    });
    expect(vm.storedMessages()).toEqual([]);
  });

  it('sms send goes out through the daemon, one part after the other', async () => {
    const { vm, client } = await startDaemon();
    const long = 'BAGI 081234567890 5000 '.repeat(10).trim();
    const r = await client.request<{ parts: number; references: number[] }>({
      op: 'sms.send',
      modem: 'tsel-1',
      to: '+6281234567890',
      text: long,
    });
    expect(r.parts).toBe(2);
    expect(r.references).toHaveLength(2);
    expect(
      vm
        .sentMessages()
        .map((m) => m.text)
        .join(''),
    ).toBe(long);
    const bad = await errorOf(client.request({ op: 'sms.send', modem: 'tsel-1', to: 'abc!', text: 'x' }));
    expect([bad.code, bad.data]).toEqual(['bad_request', { code: 'PDU_INVALID' }]);
  });

  it('unknown modems and malformed requests get errors and change nothing; the daemon goes on receiving', async () => {
    const { vm, client, posts } = await startDaemon();
    vm.injectSms({ from: '0812999', text: 'tetap di SIM' });
    await until(() => vm.storedMessages().length === 1, 'the kept SMS', 5000);
    const unknown = await errorOf(client.request({ op: 'sms.delete', modem: 'nope', index: 1 }));
    expect(unknown).toBeInstanceOf(RemoteError);
    expect([unknown.code, unknown.data]).toEqual(['unknown_modem', { modems: ['tsel-1'] }]);
    expect((await errorOf(client.request({ op: 'sms.delete', modem: 'tsel-1', index: -1 } as never))).code).toBe(
      'bad_request',
    );
    expect(vm.storedMessages()).toHaveLength(1);
    vm.injectSms({ from: '858', text: 'Anda mendapatkan penambahan pulsa Rp 5000' });
    await until(() => posts() === 1, 'the operator SMS to be forwarded', 10_000);
    expect(await client.request({ op: 'info' })).toMatchObject({ name: 'tsel-1' });
  });

  it('raw AT: answers as an outcome; state-changing lines are refused without force', async () => {
    const { vm, client } = await startDaemon();
    expect(await client.request({ op: 'at', modem: 'tsel-1', command: 'AT+CSQ' })).toMatchObject({
      command: 'AT+CSQ',
      lines: ['+CSQ: 20,99'],
      final: 'OK',
      ok: true,
    });
    expect(await client.request({ op: 'at', modem: 'tsel-1', command: 'AT+NOSUCH' })).toMatchObject({
      final: 'ERROR',
      ok: false,
    });
    const refused = await errorOf(client.request({ op: 'at', modem: 'tsel-1', command: 'AT+CNMI=0,0,0,0,0' }));
    expect(refused.code).toBe('refused');
    expect(refused.message).toContain('AT+CNMI changes how new SMS are announced');
    expect(vm.commandLog().some((c) => c.startsWith('AT+CNMI=0'))).toBe(false);
  });

  it('a forced state change is followed by a re-initialisation: SMS are still announced and spooled', async () => {
    const { vm, client, posts } = await startDaemon();
    await client.request({ op: 'at', modem: 'tsel-1', command: 'AT+CNMI=0,0,0,0,0', force: true });
    await until(
      () => vm.commandLog().filter((c) => c.startsWith('AT+CNMI=2')).length >= 2,
      'CNMI to be set again',
      10_000,
    );
    vm.injectSms({ from: '858', text: 'Anda mendapatkan penambahan pulsa Rp 7000' });
    await until(() => posts() === 1, 'the SMS after the forced command', 10_000);
  });

  it('subscribers get `sms` (record id, modem, sender, text), `delivery` and `urc` events', async () => {
    const { vm, client } = await startDaemon();
    const events: EventMessage[] = [];
    client.onEvent((e) => events.push(e));
    await client.request({ op: 'subscribe', modem: 'tsel-1', events: ['sms', 'delivery', 'urc'] });
    vm.injectSms({ from: '858', text: 'Anda mendapatkan penambahan pulsa Rp 5000' });
    await until(() => events.some((e) => e.event === 'delivery'), 'the delivery event', 10_000);
    const sms = events.find((e) => e.event === 'sms')!;
    expect(sms).toMatchObject({
      modem: 'tsel-1',
      data: { modem: 'tsel-1', sender: '858', text: 'Anda mendapatkan penambahan pulsa Rp 5000' },
    });
    const id = (sms.data as { id: string }).id;
    expect(id).toMatch(/^sms-[0-9a-f]{32}$/);
    expect(events.find((e) => e.event === 'delivery')).toMatchObject({
      data: { id, status: 'delivered', outcome: 'HTTP 200' },
    });
    expect(events.some((e) => e.event === 'urc' && JSON.stringify(e.data).includes('+CMTI'))).toBe(true);
  });

  it('USSD: the reply is the result and a `ussd` event; another connection is busy; closing releases; balance shares the rule', async () => {
    const { client, socket, daemon } = await startDaemon();
    const events: EventMessage[] = [];
    client.onEvent((e) => events.push(e));
    await client.request({ op: 'subscribe', events: ['ussd'] });
    const holder = await ControlClient.connect(socket);
    await holder.request({ op: 'hello', client: 'holder' });
    const menu = await holder.request<{ status: number; statusText: string; text: string }>({
      op: 'ussd.open',
      code: '*888#',
    });
    expect(menu).toMatchObject({
      status: 1,
      statusText: 'USSD needs further input',
      text: expect.stringContaining('Sisa pulsa Rp.24025'),
    });
    await until(() => events.length === 1, 'the ussd event');
    expect(events[0]).toMatchObject({
      event: 'ussd',
      modem: 'tsel-1',
      data: { owner: expect.stringMatching(/^holder \(uid \d+, connection \d+\)$/), request: '*888#', status: 1 },
    });
    const busy = await errorOf(client.request({ op: 'ussd.open', code: '*888#' }));
    expect([busy.code, busy.message]).toEqual([
      'busy',
      expect.stringMatching(/^busy, session opened by holder \(uid \d+, connection \d+\) at /),
    ]);
    expect((await errorOf(client.request({ op: 'ussd.reply', text: '2' }))).code).toBe('busy');
    expect((await errorOf(client.request({ op: 'balance', code: '*888#' }))).code).toBe('busy');
    await holder.close();
    await until(() => daemon.ussdBrokers.get('tsel-1')!.current() === undefined, 'the session to be released');
    const open = await client.request<{ status: number }>({ op: 'ussd.open', code: '*888#' });
    expect(open.status).toBe(1);
    expect(await client.request({ op: 'ussd.reply', text: '2' })).toMatchObject({
      status: 0,
      text: expect.stringMatching(/^Nomor Anda \d+$/),
    });
    expect((await errorOf(client.request({ op: 'ussd.reply', text: '1' }))).code).toBe('not_found');
    const balance = await client.request({ op: 'balance', code: '*888#' });
    expect(balance).toMatchObject({ modem: 'tsel-1', code: '*888#', balance: 24025 });
    expect(daemon.status().modems[0]!.balance).toMatchObject({ balance: 24025 });
  });

  it('a client that vanishes with a request queued: the request is dropped, nothing else changes', async () => {
    const { vm, daemon, socket, posts } = await startDaemon();
    vm.stall(400); // the modem answers nothing for a while: requests queue up behind the first
    const other = await ControlClient.connect(socket);
    const first = other
      .request({ op: 'at', modem: 'tsel-1', command: 'AT+CSQ', timeoutMs: 1000 })
      .catch((e: unknown) => e);
    const second = other.request({ op: 'sms.delete', modem: 'tsel-1', index: 1 }).catch((e: unknown) => e);
    await until(() => daemon.status().modems[0]!.scheduler.queuedBy.operator >= 1, 'the second request to queue', 5000);
    await other.close();
    await Promise.all([first, second]);
    // The running command ends by its own timeout; the queued one never runs. (A stalled modem drops URCs too: the SMS
    // below is injected once it answers again.)
    await until(
      () =>
        daemon.status().modems[0]!.scheduler.queued === 0 && daemon.status().modems[0]!.scheduler.running === undefined,
      'the queue to empty',
      5000,
    );
    expect(vm.commandLog().some((c) => c.startsWith('AT+CMGR=1') || c.startsWith('AT+CMGD=1'))).toBe(false);
    vm.injectSms({ from: '858', text: 'Anda mendapatkan penambahan pulsa Rp 5000' });
    await until(() => posts() === 1, 'the SMS to be forwarded after the client vanished', 10_000);
  });
});

describe('Dispatcher: operator commands between receive tasks', () => {
  /** A modem whose every command waits until the test lets it go; logs what ran, in order. */
  function gatedModem(log: string[]) {
    const gates: Array<() => void> = [];
    const step = (what: string) =>
      new Promise<void>((resolve) => {
        log.push(`start ${what}`);
        gates.push(() => {
          log.push(`end ${what}`);
          resolve();
        });
      });
    const modem = {
      listSms: async () => (await step('operator list'), []),
      sendSms: async (_to: string, pdus: unknown[]) => (await step(`operator send part`), pdus.map(() => 7)),
    };
    return {
      modem,
      release: async () => {
        for (let i = 0; i < 50 && gates.length === 0; i++) await new Promise((r) => setTimeout(r, 2));
        gates.shift()!();
      },
    };
  }

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

  it('an SMS arriving during a multi-part send or behind queued operator requests waits for one operator command', async () => {
    const log: string[] = [];
    const { modem, release } = gatedModem(log);
    const scheduler = new AtScheduler<{ modem: never; channel: never }>({ name: 'm' });
    scheduler.attach({ modem: modem as never, channel: {} as never });
    const m: DispatchModem = { name: 'm', port: '/dev/x', scheduler: scheduler as never, state: () => 'running' };
    const d = new Dispatcher({
      modems: [m],
      version: 't',
      logger: silentLogger(),
      status: () => ({}),
      access: OPEN_ACCESS,
    });
    const signal = new AbortController().signal;
    const send = d.handle(
      { v: 1, id: 1, op: 'sms.send', to: '+6281234567890', text: 'BAGI 081234567890 5000 '.repeat(10).trim() },
      conn,
      signal,
    );
    const lists = [2, 3].map((id) => d.handle({ v: 1, id, op: 'sms.list' }, conn, signal));
    await until(() => log.length === 1, 'the first part to start');
    const receive = scheduler.schedule(
      { priority: 'receive', label: 'read index 3' },
      async () => void log.push('receive'),
    );
    await release(); // part 1 ends: the SMS goes next, before the queued lists and part 2
    await receive;
    await until(() => log.length >= 4, 'the next operator command to start');
    const second = scheduler.schedule(
      { priority: 'receive', label: 'read index 4' },
      async () => void log.push('receive 2'),
    );
    await release(); // the first list ends: the second SMS goes next
    await second;
    for (let i = 0; i < 2; i++) await release();
    await Promise.all([send, ...lists]);
    // Part 2 is queued when part 1 has ended, behind the lists queued meanwhile (FIFO within 'operator').
    expect(log).toEqual([
      'start operator send part',
      'end operator send part',
      'receive',
      'start operator list',
      'end operator list',
      'receive 2',
      'start operator list',
      'end operator list',
      'start operator send part',
      'end operator send part',
    ]);
  });
});
