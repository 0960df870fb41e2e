/**
 * USSD requests encoded as each profile needs, end to end against the virtual modem: ATD<code>; (then menu answers by
 * AT+CUSD, never `ATD1;`), UCS2 hex in the UCS2 charset, plain text in GSM; and send() returning before the reply.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SerialAtChannel } from '../../src/at/channel.js';
import { silentLogger } from '../../src/log.js';
import { ModemAt } from '../../src/modem/commands.js';
import { generic } from '../../src/modem/profiles/index.js';
import type { ModemProfile } from '../../src/modem/types.js';
import { buildUrcTable } from '../../src/modem/urcs.js';
import { UssdSession, ussdCommandGeneric } from '../../src/modem/ussd-session.js';
import { openVirtualLink } from '../../src/virtual-modem/virtual-link.js';
import { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';
import { defaultActiveUntil } from '../../src/virtual-modem/ussd-script.js';

let counter = 0;
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

async function setup(ussd: ModemProfile['ussd']) {
  const vm = new VirtualModem({
    path: `virtual:ussd-session-${process.pid}-${++counter}`,
    profile: 'simcom',
    bootStepMs: 0,
    noise: false,
  });
  const link = await openVirtualLink(vm.start());
  const channel = new SerialAtChannel({
    link,
    logger: silentLogger(),
    defaultTimeoutMs: 2000,
    urcs: buildUrcTable(generic),
  });
  const profile: ModemProfile = { ...generic, ussd };
  const session = new UssdSession({
    at: new ModemAt(channel, 'm1', silentLogger()),
    name: 'm1',
    log: silentLogger(),
    profile: () => profile,
    onUnsolicited: () => undefined,
  });
  channel.on('urc', (u) => {
    if (u.name === 'cusd') session.onCusd(u);
  });
  cleanups.push(async () => {
    session.dispose();
    await channel.close().catch(() => undefined);
    vm.stop();
  });
  await channel.run('ATE0');
  return { vm, session, cusd: () => vm.commandLog().filter((l) => /^AT(\+CUSD|\+CSCS|D)/i.test(l)) };
}

describe('ussdCommandGeneric', () => {
  it.each([
    [{ send: 'text', charset: 'GSM' }, 'open', '*888#', 'AT+CUSD=1,"*888#",15'],
    [{ send: 'text', charset: 'UCS2' }, 'open', '*888#', 'AT+CUSD=1,"002A0038003800380023",15'],
    [{ send: 'atd' }, 'open', '*888#', 'ATD*888#;'],
    [{ send: 'atd' }, 'reply', '1', 'AT+CUSD=1,"1",15'],
  ] as const)('%j %s %s -> %s', (ussd, kind, text, command) => {
    expect(ussdCommandGeneric({ ussd }, text, kind)).toBe(command);
  });
});

describe('UssdSession on the virtual modem', () => {
  it('ATD<code>; opens the session; the menu answer goes by AT+CUSD', async () => {
    const t = await setup({ send: 'atd' });
    const menu = await t.session.start('*888#');
    expect(menu.status).toBe(1);
    expect(menu.text).toContain('2.Info Kartu');
    const done = await t.session.reply('2');
    expect(done).toMatchObject({ status: 0, text: 'Nomor Anda 6281234567890' });
    expect(t.cusd()).toEqual(['ATD*888#;', 'AT+CUSD=1,"2",15']);
  });

  it('in the UCS2 charset the code goes as UCS2 hex and the UCS2 reply is decoded', async () => {
    const t = await setup({ send: 'text', charset: 'UCS2' });
    const menu = await t.session.start('*888#');
    expect(menu).toMatchObject({ status: 1, dcs: 72 });
    expect(menu.text).toBe(`Sisa pulsa Rp.24025.Aktif sd ${defaultActiveUntil()}.\n1.Beli Paket\n2.Info Kartu`);
    expect(t.cusd()).toEqual(['AT+CSCS="UCS2"', 'AT+CUSD=1,"002A0038003800380023",15']);
    await t.session.cancel();
  });

  it('send() resolves at the final result, with the reply still to come; the next request waits for it', async () => {
    const t = await setup({ send: 'text', charset: 'GSM' });
    const pending = await t.session.send('*888#', 'open');
    await expect(t.session.send('*123#', 'open')).rejects.toThrow(/already in progress/);
    const reply = await pending.reply;
    expect(reply.status).toBe(1);
    expect(t.session.waitingForInput).toBe(true);
    await t.session.cancel();
    expect(t.session.waitingForInput).toBe(false);
  });
});
