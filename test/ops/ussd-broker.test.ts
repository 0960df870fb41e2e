/**
 * UssdBroker over a real channel, a real Modem (generic profile) and the real scheduler's operator lane, against a
 * scripted device whose "network" answers only when the test says so.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SerialAtChannel } from '../../src/at/channel.js';
import { silentLogger } from '../../src/log.js';
import { Modem } from '../../src/modem/modem.js';
import { AtScheduler } from '../../src/modem/scheduler.js';
import { buildUrcTable } from '../../src/modem/urcs.js';
import { generic } from '../../src/modem/profiles/index.js';
import { ControlError } from '../../src/control/protocol.js';
import { UssdBroker, type UssdOwner } from '../../src/ops/ussd-broker.js';
import { openVirtualLink, registerVirtualDevice } from '../../src/virtual-modem/virtual-link.js';
import { ScriptedDevice, answer } from '../at/scripted-device.js';
import { until } from '../support/until.js';

const alice: UssdOwner = { id: 'conn-1', label: 'pulsa-bridge ussd (pid 11)' };
const bob: UssdOwner = { id: 'conn-2', label: 'pulsa-bridge ussd (pid 22)' };

let counter = 0;
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

async function setup(o: { timeoutMs?: number } = {}) {
  const path = `virtual:mock-ussd-broker-${process.pid}-${++counter}`;
  const commands: string[] = [];
  const device = new ScriptedDevice((input) => {
    if (input.kind !== 'command') return undefined;
    commands.push(input.text);
    if (input.text === 'AT+CSQ') return answer('+CSQ: 20,99', 'OK');
    return answer('OK'); // AT+CSCS, AT+CUSD=1,... and AT+CUSD=2: the network's reply comes later, from the test
  });
  const unregister = registerVirtualDevice(path, device);
  const link = await openVirtualLink(path);
  const channel = new SerialAtChannel({
    link,
    logger: silentLogger(),
    defaultTimeoutMs: 2000,
    urcs: buildUrcTable(generic),
  });
  const modem = new Modem({ channel, name: 'telkomsel-1', logger: silentLogger(), profile: 'generic' });
  const scheduler = new AtScheduler<Modem>({ name: 'telkomsel-1' });
  scheduler.attach(modem);
  const held: string[] = [];
  let holding = 0;
  const sessions = new UssdBroker({
    modem: 'telkomsel-1',
    logger: silentLogger(),
    now: () => Date.parse('2026-03-01T08:00:00.000Z'),
    ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
    run: (label, fn, signal) =>
      scheduler.schedule({ priority: 'operator', label, ...(signal ? { signal } : {}) }, async (ctx) => {
        held.push(label);
        holding++;
        try {
          return await fn(ctx.target);
        } finally {
          holding--;
        }
      }),
  });
  cleanups.push(async () => {
    modem.detach();
    await scheduler.stop();
    await channel.close().catch(() => undefined);
    unregister();
  });
  const network = (line: string) => device.send(`\r\n${line}\r\n`);
  return { sessions, scheduler, commands, held, network, holding: () => holding };
}

describe('UssdBroker', () => {
  it('holds the lane only while AT+CUSD is in flight: other work runs while the network thinks; a menu, an answer, the end', async () => {
    const t = await setup();
    const opened = t.sessions.open(alice, '*888#');
    await until(() => t.commands.includes('AT+CUSD=1,"*888#",15'), 'the code was sent', 2000);
    await until(() => t.holding() === 0, 'the lane was given back', 2000);
    // A receive task (here an AT+CSQ) runs between the request and the network's reply.
    const csq = await t.scheduler.schedule({ priority: 'receive', label: 'csq' }, (ctx) => ctx.target.signal());
    expect(csq.rssi).toBe(20);
    await t.network('+CUSD: 1,"Sisa pulsa Rp.24025.\n1.Beli Paket\n2.Info Kartu",15');
    const menu = await opened;
    expect(menu).toMatchObject({ status: 1, statusText: 'USSD needs further input', dcs: 15 });
    expect(menu.text).toContain('2.Info Kartu');
    expect(t.sessions.current()).toEqual({ owner: alice, openedAt: '2026-03-01T08:00:00.000Z' });

    const answered = t.sessions.reply(alice, '2');
    await until(() => t.commands.includes('AT+CUSD=1,"2",15'), 'the answer was sent', 2000);
    await t.network('+CUSD: 0,"Nomor Anda 6281234567890",15');
    expect(await answered).toMatchObject({ status: 0, text: 'Nomor Anda 6281234567890' });
    expect(t.sessions.current()).toBeUndefined();
    expect(t.commands).not.toContain('AT+CUSD=2');
  });

  it('another owner is told who holds the session and since when', async () => {
    const t = await setup();
    const opened = t.sessions.open(alice, '*888#');
    await until(() => t.commands.some((c) => c.startsWith('AT+CUSD=1')), 'sent', 2000);
    await t.network('+CUSD: 1,"1.Beli Paket",15');
    await opened;
    for (const attempt of [
      () => t.sessions.open(bob, '*123#'),
      () => t.sessions.reply(bob, '1'),
      () => t.sessions.cancel(bob),
    ]) {
      const err = await attempt().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ControlError);
      expect(err).toMatchObject({
        code: 'busy',
        message: 'busy, session opened by pulsa-bridge ussd (pid 11) at 2026-03-01T08:00:00.000Z',
      });
    }
    expect(t.commands.filter((c) => c.startsWith('AT+CUSD'))).toEqual(['AT+CUSD=1,"*888#",15']);
  });

  it('a reply with no session open is not_found', async () => {
    const t = await setup();
    await expect(t.sessions.reply(alice, '1')).rejects.toMatchObject({ code: 'not_found' });
  });

  it('no reply within the timeout: cancelled with AT+CUSD=2, a timeout error, and the modem is ready for the next code', async () => {
    const t = await setup({ timeoutMs: 300 });
    const err = await t.sessions.open(alice, '*999#').catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 'timeout',
      message: 'no USSD reply to *999# within 300 ms; the session was cancelled',
    });
    expect(t.commands.at(-1)).toBe('AT+CUSD=2');
    expect(t.sessions.current()).toBeUndefined();
    // The late reply is not taken for the next session's answer.
    await t.network('+CUSD: 0,"late",15');
    const next = t.sessions.open(bob, '*888#');
    await until(() => t.commands.filter((c) => c.startsWith('AT+CUSD=1')).length === 2, 'second code sent', 2000);
    await t.network('+CUSD: 0,"fresh",15');
    expect(await next).toMatchObject({ status: 0, text: 'fresh' });
  });

  it('a menu left unanswered for the timeout is cancelled and the session freed', async () => {
    const t = await setup({ timeoutMs: 300 });
    const opened = t.sessions.open(alice, '*888#');
    await until(() => t.commands.some((c) => c.startsWith('AT+CUSD=1')), 'sent', 2000);
    await t.network('+CUSD: 1,"1.Beli Paket",15');
    await opened;
    await until(() => t.commands.includes('AT+CUSD=2'), 'the idle session was cancelled', 2000);
    expect(t.sessions.current()).toBeUndefined();
  });

  it('release() of the owner cancels its open menu; release() of anyone else does nothing', async () => {
    const t = await setup();
    const opened = t.sessions.open(alice, '*888#');
    await until(() => t.commands.some((c) => c.startsWith('AT+CUSD=1')), 'sent', 2000);
    await t.network('+CUSD: 1,"1.Beli Paket",15');
    await opened;
    t.sessions.release(bob.id);
    expect(t.sessions.current()?.owner).toEqual(alice);
    t.sessions.release(alice.id);
    expect(t.sessions.current()).toBeUndefined();
    await until(() => t.commands.includes('AT+CUSD=2'), 'cancelled on the modem', 2000);
  });

  it('release() while the reply is awaited ends the wait as cancelled and cancels on the modem', async () => {
    const t = await setup();
    const opened = t.sessions.open(alice, '*888#').catch((e: unknown) => e);
    await until(() => t.commands.some((c) => c.startsWith('AT+CUSD=1')) && t.holding() === 0, 'sent', 2000);
    t.sessions.release(alice.id);
    expect(await opened).toMatchObject({ code: 'cancelled' });
    await until(() => t.commands.includes('AT+CUSD=2'), 'cancelled on the modem', 2000);
  });

  it('the same owner dialling again ends its open menu first', async () => {
    const t = await setup();
    const first = t.sessions.open(alice, '*888#');
    await until(() => t.commands.some((c) => c.startsWith('AT+CUSD=1')), 'sent', 2000);
    await t.network('+CUSD: 1,"1.Beli Paket",15');
    await first;
    const second = t.sessions.open(alice, '*123#');
    await until(() => t.commands.includes('AT+CUSD=1,"*123#",15'), 'second code sent', 2000);
    await t.network('+CUSD: 0,"ok",15');
    await second;
    const cusd = t.commands.filter((c) => c.startsWith('AT+CUSD'));
    expect(cusd).toEqual(['AT+CUSD=1,"*888#",15', 'AT+CUSD=2', 'AT+CUSD=1,"*123#",15']);
  });

  it('decodes UCS2 replies and shows a reply in an unknown encoding raw, with its DCS', async () => {
    const t = await setup();
    const a = t.sessions.open(alice, '*888#');
    await until(() => t.commands.some((c) => c.startsWith('AT+CUSD=1')), 'sent', 2000);
    await t.network('+CUSD: 0,"00480061006C006F",72');
    expect(await a).toEqual({
      status: 0,
      statusText: 'USSD done',
      text: 'Halo',
      dcs: 72,
      raw: '+CUSD: 0,"00480061006C006F",72',
    });
    const b = t.sessions.open(alice, '*889#');
    await until(() => t.commands.some((c) => c.includes('*889#')), 'sent', 2000);
    await t.network('+CUSD: 0,"C8329BFD06",68');
    expect(await b).toEqual({
      status: 0,
      statusText: 'USSD done',
      text: 'C8329BFD06',
      undecoded: true,
      dcs: 68,
      raw: '+CUSD: 0,"C8329BFD06",68',
    });
  });

  it('the status of a reply without text is explained', async () => {
    const t = await setup();
    const a = t.sessions.open(alice, '*000#');
    await until(() => t.commands.some((c) => c.startsWith('AT+CUSD=1')), 'sent', 2000);
    await t.network('+CUSD: 4');
    expect(await a).toMatchObject({ status: 4, statusText: 'USSD not supported by the network or the SIM (+CUSD: 4)' });
    expect(t.sessions.current()).toBeUndefined();
  });
});

describe('UssdBroker and a menu the network opened', () => {
  it('a network-initiated menu is ended before a new code is dialled', async () => {
    const t = await setup();
    await t.network('+CUSD: 1,"Promo! 1.Ya 2.Tidak",15');
    const opened = t.sessions.open(alice, '*888#');
    await until(() => t.commands.includes('AT+CUSD=1,"*888#",15'), 'sent', 2000);
    await t.network('+CUSD: 0,"ok",15');
    expect(await opened).toMatchObject({ status: 0, text: 'ok' });
    expect(t.commands.filter((c) => c.startsWith('AT+CUSD'))).toEqual(['AT+CUSD=2', 'AT+CUSD=1,"*888#",15']);
  });
});
