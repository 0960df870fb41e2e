/**
 * Against the compiled daemon as a real process (`bin/pulsa-bridge run`) and the simulator as
 * another (`bin/pulsa-bridge simulate --link PATH --state FILE`, a pty and the native serial binding): a wrong PIN
 * across daemon restarts, resets with and without a banner, and an unplug/replug of the device.
 * The sweep interval is an hour in the reset trials, so an SMS that arrives after a reset reaches the webhook only if
 * the daemon noticed the reset. No wall-clock assertions: every wait is a bound on a condition.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DaemonProcess, distBuilt, killAll, SimProcess } from '../support/daemon.js';
import { until } from '../support/until.js';
import { reply, startServer, type TestServer } from '../forward/server.js';
import { testWebhook, writeConfig } from '../support/config.js';
import { tempDir } from '../support/tmp.js';
import { hasSocat } from '../support/pty.js';

let dir: string;
let cleanup: () => Promise<void>;
let server: TestServer;

beforeEach(async () => {
  expect(distBuilt(), 'dist/ is missing: run `npm run build` (npm test does)').toBe(true);
  ({ dir, cleanup } = await tempDir('self-healing'));
  server = await startServer([reply(200, '{"success":true}')]);
});

afterEach(async () => {
  await killAll();
  await server.close();
  await cleanup();
});

const config = (modem: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<string> =>
  writeConfig(dir, {
    webhook: testWebhook(server.url, { timeoutMs: 5000 }),
    modems: [{ name: 'tsel-1', port: path.join(dir, 'modem'), senders: ['858'], commandTimeoutMs: 3000, ...modem }],
    ...extra,
  });

interface StatusFile {
  modems: Array<{
    state: string;
    lastError?: string;
    hint?: string;
    reconnects: number;
    receiver?: { received: number };
  }>;
}

async function status(): Promise<StatusFile | undefined> {
  try {
    return JSON.parse(await readFile(path.join(dir, 'spool', 'status.json'), 'utf8')) as StatusFile;
  } catch {
    return undefined; // not written yet, or being replaced
  }
}

const posted = (text: string) => server.requests.some((r) => r.body.toString('utf8').includes(text));

describe.skipIf(!hasSocat)('self-healing on the modem side (real processes)', () => {
  it('a wrong PIN is sent once across daemon restarts; the state says so with a hint; the SIM does not lock', async () => {
    const link = path.join(dir, 'modem');
    const sim = await SimProcess.start(link, ['--pin', '1234', '--state', path.join(dir, 'sim.json')]);
    const stateDir = path.join(dir, 'state');
    const cfg = await config({ pin: '0000' }, { stateDir });
    for (let start = 1; start <= 3; start++) {
      const daemon = await DaemonProcess.start(cfg);
      await until(
        async () => (await status())?.modems[0]?.state === 'sim-not-ready',
        'the modem to be sim-not-ready',
        30_000,
      );
      const st = (await status())!.modems[0]!;
      expect(st.lastError).toMatch(
        start === 1 ? /rejected the configured PIN/ : /not sent again until modems\[\]\.pin changes/,
      );
      expect(st.hint).toMatch(/modems\[\]\.pin/);
      expect(daemon.running).toBe(true);
      expect((await daemon.stop()).code).toBe(0);
    }
    const simState = await sim.state();
    expect(simState.pinEntries).toBe(1);
    expect(simState.sim).toBe('pin');
    const memory = await readFile(path.join(stateDir, 'pin-memory.json'), 'utf8');
    expect(memory).not.toContain('0000');
    await sim.quit();
  }, 120_000);

  it.each([
    ['reboot banner ^SYSSTART', "another family's banner"],
    ['reboot autobaud', 'silent, URCs held until an AT: found by the state probe (default interval 30 s)'],
  ])(
    'after `%s` (%s) the next SMS reaches the webhook without the sweep',
    async (command) => {
      const sim = await SimProcess.start(path.join(dir, 'modem'));
      const daemon = await DaemonProcess.start(await config({ sweepIntervalSec: 3600 }));
      await until(() => daemon.logged('ready: SIMCOM'), 'the modem to be ready', 30_000);
      await sim.ask('sms 858 sebelum reset Rp 1000', 'sms from');
      await until(() => posted('sebelum reset'), 'the first SMS', 20_000);
      await sim.ask(command, 'modem rebooting');
      await sim.ask('sms 858 sesudah reset Rp 2000', 'sms from');
      await until(() => posted('sesudah reset'), 'the SMS after the reset', 60_000);
      expect(daemon.logged('rebooted (')).toBe(true);
      expect((await daemon.stop()).code).toBe(0);
      await sim.quit();
    },
    120_000,
  );

  it('an unplug and replug: the daemon reopens the device, counters survive, the last error clears', async () => {
    const link = path.join(dir, 'modem');
    const stateFile = path.join(dir, 'sim.json');
    let sim = await SimProcess.start(link, ['--state', stateFile]);
    const daemon = await DaemonProcess.start(await config({}));
    await sim.ask('sms 858 sebelum cabut Rp 1000', 'sms from');
    await until(() => posted('sebelum cabut'), 'the first SMS', 30_000);
    // The POST may come before AT+CMGD: unplug only once the SIM is empty, so the replugged SIM holds no old SMS.
    await until(async () => (await sim.state()).stored === 0, 'the first SMS deleted from the SIM', 15_000);
    await sim.quit(); // the device vanishes (the SIM saved to the state file)
    const seen = async () =>
      `status.json: ${JSON.stringify((await status())?.modems[0])}\ndaemon's last lines:\n${daemon.out.slice(-15).join('\n')}`;
    await until(async () => (await status())?.modems[0]?.state === 'disconnected', 'disconnected', 20_000, {
      everyMs: 20,
      explain: seen,
    });
    sim = await SimProcess.start(link, ['--state', stateFile]);
    await sim.ask('sms 858 sesudah colok Rp 2000', 'sms from');
    await until(() => posted('sesudah colok'), 'the SMS after the replug', 30_000);
    await until(
      async () => (await status())?.modems[0]?.receiver?.received === 2,
      'both SMS counted in status.json (written every 5 s)',
      20_000,
    );
    const st = (await status())!.modems[0]!;
    expect(st.state).toBe('running');
    expect(st.lastError).toBeUndefined();
    expect(st.reconnects).toBeGreaterThanOrEqual(1);
    expect(daemon.out.filter((l) => /retrying in/.test(l) && /"stack"/.test(l))).toEqual([]);
    expect((await daemon.stop()).code).toBe(0);
    await sim.quit();
  }, 120_000);
});
