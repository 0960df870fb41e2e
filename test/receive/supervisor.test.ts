/**
 * A modem that resets is noticed from what it does, through the production wiring
 * (createModemSupervisor) over the virtual modem and a real spool. The sweep interval is an hour in these tests, so an
 * SMS that arrives after the reset is only found if the reset itself was noticed (re-init, sweep). Plus the idle AT
 * budget counted with fake timers, counters across a reconnect, and the last error clearing.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createModemSupervisor } from '../../src/daemon/modem-wiring.js';
import { silentLogger } from '../../src/log.js';
import { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';
import { Spool } from '../../src/spool/store.js';
import { captureLogger } from '../support/logger.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';
import { uniquePath } from '../virtual-modem/wire.js';
import { modemConfig, pendingRecords, startStack, virtualModem, type Stack } from './harness.js';

let dir: string;
let cleanup: () => Promise<void>;
const stops: Array<() => Promise<void> | void> = [];

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('supervisor'));
});

afterEach(async () => {
  vi.useRealTimers();
  for (const stop of stops.splice(0).reverse()) await stop();
  await cleanup();
});

const HOUR = { sweepIntervalSec: 3600 };

async function stack(
  vm: VirtualModem,
  opts: { livenessIntervalMs?: number; modem?: Record<string, unknown> } = {},
): Promise<Stack> {
  const s = await startStack(dir, vm, silentLogger(), {
    modem: { ...HOUR, ...opts.modem },
    ...(opts.livenessIntervalMs ? { livenessIntervalMs: opts.livenessIntervalMs } : {}),
  });
  stops.push(
    () => vm.stop(),
    () => s.stop(),
  );
  await until(() => (s.supervisor.status().receiver?.sweeps ?? 0) >= 1, 'the start sweep');
  return s;
}

async function arrivesAfterReset(s: Stack, vm: VirtualModem, reset: () => void, text: string): Promise<void> {
  reset();
  vm.injectSms({ from: '858', text });
  await until(async () => (await pendingRecords(s.spool)).some((r) => r.text === text), `"${text}" spooled`, 10_000);
  await until(() => s.supervisor.status().state === 'running', 'running again');
  expect(vm.storedMessages()).toEqual([]);
  expect(vm.cnmi().mt).toBe(1);
}

describe('a reset is noticed from what the modem does', () => {
  it('silent reset (SIM800 in auto-baud: no banner, URCs held until an AT): the state probe finds CNMI gone', async () => {
    const vm = virtualModem(uniquePath(), { profile: 'simcom' });
    const s = await stack(vm, { livenessIntervalMs: 300 });
    await arrivesAfterReset(s, vm, () => vm.reboot({ silent: true, holdUntilAt: true }), 'Pulsa Rp 5000 silent');
    expect(vm.commandLog()).toContain('AT+CNMI?');
  });

  it.each([
    ['huawei', undefined, 'its own boot URCs (^SIMST), which its profile has no reboot banner for'],
    ['simcom', ['^SYSSTART'], "another family's banner"],
    ['huawei', ['RDY'], 'a 27.007 banner its profile does not list'],
  ] as const)(
    '%s modem printing %j at reset (%s): checked and re-initialised without waiting for a probe',
    async (profile, banners, _why) => {
      const vm = virtualModem(uniquePath(), { profile, noise: false });
      const s = await stack(vm, { livenessIntervalMs: 3_600_000 });
      await arrivesAfterReset(s, vm, () => vm.reboot(banners ? { banners } : {}), `Pulsa Rp 7000 ${profile}`);
    },
  );

  it('a false alarm (a hint while the settings are intact) does not hide a real reset right after it; noise is bounded', async () => {
    const vm = virtualModem(uniquePath(), { profile: 'huawei', noise: false });
    const s = await stack(vm, { livenessIntervalMs: 3_600_000 });
    const probes = () => vm.commandLog().filter((c) => c === 'AT+CNMI?').length;
    vm.injectUrc('^SIMST:1'); // trailing banner of the boot just handled: one check, settings intact
    await until(() => probes() === 1, 'the check of the false alarm');
    await arrivesAfterReset(s, vm, () => vm.reboot(), 'Pulsa Rp 9000 after a false alarm');
    const before = probes();
    for (let i = 0; i < 20; i++) {
      vm.injectUrc('^RSSI:17'); // a stick whose AT^CURC=0 did not hold: periodic noise
      await new Promise((r) => setTimeout(r, 5));
    }
    await new Promise((r) => setTimeout(r, 100));
    expect(probes() - before).toBeLessThanOrEqual(3);
  });

  it('+CMS ERROR 311 on an SMS command after init (the reset re-locked the SIM): re-init enters the PIN again', async () => {
    const vm = virtualModem(uniquePath(), { profile: 'generic', pin: '4321' });
    const s = await stack(vm, { livenessIntervalMs: 3_600_000, modem: { pin: '4321' } });
    vm.reboot({ silent: true });
    vm.injectSms({ from: '858', text: 'held by the network while the SIM is locked' });
    // Nothing tells the bridge yet (no banner, CNMI gone); its next SMS command does:
    s.supervisor.currentReceiver()!.requestSweep('test');
    await until(async () => (await pendingRecords(s.spool)).length === 1, 'the SMS spooled after re-init', 10_000);
    expect(vm.sim).toBe('ready');
    expect(vm.commandLog().filter((l) => l.startsWith('AT+CPIN="'))).toHaveLength(2);
  });
});

describe('reconnects', () => {
  it('counters survive a replug, the last error clears once running, and the retry is one log line without a stack', async () => {
    const { logger, lines } = captureLogger();
    const vm = virtualModem(uniquePath(), { profile: 'simcom' });
    const spool = await Spool.open(dir, { logger: silentLogger() });
    const supervisor = createModemSupervisor(modemConfig(HOUR), { spool, logger, path: vm.start() });
    stops.push(
      () => vm.stop(),
      () => spool.close(),
      () => supervisor.stop(),
    );
    supervisor.start();
    await until(() => supervisor.status().state === 'running', 'running');
    vm.injectSms({ from: '858', text: 'before the unplug' });
    await until(() => supervisor.status().receiver?.spooled === 1, 'first SMS');
    vm.unplug();
    await until(() => supervisor.status().state === 'disconnected', 'disconnected');
    await new Promise((r) => setTimeout(r, 600)); // a few reopen attempts fail while unplugged
    expect(supervisor.status().lastError).toBeDefined();
    vm.replug();
    await until(() => supervisor.status().state === 'running', 'running again', 5_000);
    vm.injectSms({ from: '858', text: 'after the replug' });
    await until(() => supervisor.status().receiver?.spooled === 2, 'second SMS counted on top of the first');
    const st = supervisor.status();
    expect(st.receiver?.received).toBe(2);
    expect(st.lastError).toBeUndefined();
    expect(st.hint).toBeUndefined();
    expect(st.reconnects).toBeGreaterThanOrEqual(1);
    const retries = lines.filter((l) => /retrying in/.test(String(l.msg)));
    expect(retries.length).toBeGreaterThanOrEqual(1);
    for (const l of retries) expect(JSON.stringify(l)).not.toMatch(/"stack"|\\n\s+at /);
  });
});

describe('down since and the counters tell the truth', () => {
  it('down since is when the modem was last up, kept across retries; reconnects counts connections re-established, failed attempts apart; the repeating error is one line', async () => {
    const { logger, lines } = captureLogger();
    const vm = virtualModem(uniquePath(), { profile: 'simcom' });
    const spool = await Spool.open(dir, { logger: silentLogger() });
    const supervisor = createModemSupervisor(modemConfig(HOUR), { spool, logger, path: vm.start() });
    stops.push(
      () => vm.stop(),
      () => spool.close(),
      () => supervisor.stop(),
    );
    supervisor.start();
    await until(() => supervisor.status().state === 'running', 'running');
    expect(supervisor.status()).toMatchObject({ reconnects: 0, failedAttempts: 0, downSince: undefined });
    vm.unplug();
    await until(() => supervisor.status().state === 'disconnected', 'disconnected');
    const downSince = supervisor.status().downSince;
    expect(downSince).toBeDefined();
    await until(() => supervisor.status().failedAttempts >= 3, 'three failed attempts', 10_000);
    // Every retry changes the state (connecting, disconnected again): down since does not move, nothing reconnected.
    expect(supervisor.status().downSince).toBe(downSince);
    expect(supervisor.status().reconnects).toBe(0);
    vm.replug();
    await until(() => supervisor.status().state === 'running', 'running again', 5_000);
    expect(supervisor.status()).toMatchObject({ reconnects: 1, downSince: undefined });
    expect(supervisor.status().failedAttempts).toBeGreaterThanOrEqual(3);
    // The same error repeated while unplugged: logged once (then summarised), not once per attempt.
    const same = lines.filter((l) => /retrying in/.test(String(l.msg)) && l.level >= 50);
    expect(same.length).toBeLessThanOrEqual(2);
  });
});

describe('idle traffic', () => {
  it('at most 3 AT commands per idle minute with the default sweep (60 s) and probe (30 s) intervals', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const vm = new VirtualModem({ path: uniquePath(), profile: 'simcom', bootStepMs: 0 });
    const spool = await Spool.open(dir, { logger: silentLogger() });
    const supervisor = createModemSupervisor(modemConfig(), { spool, logger: silentLogger(), path: vm.start() });
    stops.push(
      () => vm.stop(),
      () => spool.close(),
      () => supervisor.stop(),
    );
    supervisor.start();
    const advanceUntil = async (cond: () => boolean, what: string) => {
      for (let i = 0; i < 2000 && !cond(); i++) await vi.advanceTimersByTimeAsync(10);
      expect(cond(), what).toBe(true);
    };
    await advanceUntil(() => (supervisor.status().receiver?.sweeps ?? 0) >= 1, 'running and swept once');
    await vi.advanceTimersByTimeAsync(1_000);
    const before = vm.commandLog().length;
    const minutes = 10;
    await vi.advanceTimersByTimeAsync(minutes * 60_000);
    const idle = vm.commandLog().slice(before);
    expect(idle.filter((c) => c === 'AT+CMGL=4')).toHaveLength(minutes);
    // Every probe reads CNMI back; every third carries a signal or registration sample on the same line.
    expect(idle.filter((c) => c.startsWith('AT+CNMI?'))).toHaveLength(minutes * 2);
    expect(idle.filter((c) => c === 'AT+CNMI?;+CSQ').length).toBeGreaterThanOrEqual(Math.floor(minutes / 3));
    expect(idle.filter((c) => c === 'AT+CNMI?;+CREG?').length).toBeGreaterThanOrEqual(Math.floor(minutes / 3));
    expect(idle.length / minutes).toBeLessThanOrEqual(3);
    expect(supervisor.status().state).toBe('running');
  });
});
