/**
 * The compiled daemon (`bin/pulsa-bridge run`, native serial binding on a pty) against the simulator as a process
 * (`bin/pulsa-bridge simulate --quirk store-in-me`): a modem that stores received SMS in ME while SM is selected and
 * announces them as `+CMTI: "ME",n` (Quectel EC25 default, Huawei sticks). Every SMS reaches the webhook once and
 * neither memory keeps anything. Also SMS left in ME while the daemon was down, found by the start-up sweep.
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
  ({ dir, cleanup } = await tempDir('storages-process'));
  server = await startServer([reply(200, '{"success":true}')]);
});

afterEach(async () => {
  await killAll();
  await server.close();
  await cleanup();
});

const config = (): Promise<string> =>
  writeConfig(dir, {
    webhook: testWebhook(server.url, { timeoutMs: 5000 }),
    modems: [
      {
        name: 'qtl-1',
        port: path.join(dir, 'modem'),
        senders: ['858'],
        commandTimeoutMs: 3000,
        sweepIntervalSec: 3600,
      },
    ],
  });

const texts = [1, 2, 3, 4].map((i) => `Anda menerima Pulsa dari 62859410200${i} sebesar Rp${i}0000.`);
const postsOf = (text: string) =>
  server.requests.filter((r) => (JSON.parse(r.body.toString('utf8')) as { message: string }).message === text).length;

describe('a modem storing in ME while SM is selected, the daemon as a process', () => {
  it.skipIf(!hasSocat)(
    'every SMS delivered once, nothing left in SM or ME; SMS left in ME while the daemon was down are swept at start',
    async () => {
      const sim = await SimProcess.start(path.join(dir, 'modem'), ['--quirk', 'store-in-me']);
      // Two SMS arrive before the daemon runs: stored in ME, their +CMTI heard by nobody.
      sim.send(`sms 858 ${texts[0]}`);
      sim.send(`sms 858 ${texts[1]}`);
      // The simulator may still be booting (SMS held at the network until its SMS service is ready): wait for both.
      await until(async () => (await sim.state()).stored === 2, 'both SMS stored in the simulator', 20_000);
      expect(await sim.ask('list', 'ME #')).toMatch(/^ME #1 unread/);
      const cfg = await config();
      const daemon = await DaemonProcess.start(cfg, 'modem qtl-1 ready:');
      await until(() => server.requests.length >= 2, 'the SMS left in ME to be posted', 20_000);
      // Two more while it runs: `+CMTI: "ME",n`, read in ME.
      sim.send(`sms 858 ${texts[2]}`);
      sim.send(`sms 858 ${texts[3]}`);
      await until(() => server.requests.length >= 4, 'all four SMS posted', 20_000);
      await until(async () => (await sim.state()).stored === 0, 'both memories empty', 20_000);
      // The status the operator reads shows each memory's fill.
      await until(
        async () => {
          const status = JSON.parse(
            await readFile(path.join(dir, 'spool', 'status.json'), 'utf8').catch(() => '{}'),
          ) as { modems?: Array<{ receiver?: { storages?: Array<{ storage: string; used: number }> } }> };
          const storages = status.modems?.[0]?.receiver?.storages ?? [];
          return storages.some((s) => s.storage === 'ME') && storages.some((s) => s.storage === 'SM');
        },
        'status.json to show SM and ME',
        20_000,
      );
      await new Promise((r) => setTimeout(r, 500)); // a second POST of any of them would come now
      for (const text of texts) expect(postsOf(text), text).toBe(1);
      expect(server.requests).toHaveLength(4);
      expect(daemon.logged('SMS announced in storage ME')).toBe(true);
      expect(await sim.ask('list', 'SIM empty')).toBe('SIM empty');
      daemon.child.kill('SIGTERM');
      expect((await daemon.exit).code).toBe(0);
      await sim.quit();
    },
    90_000,
  );
});
