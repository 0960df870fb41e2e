/**
 * The compiled daemon (`bin/pulsa-bridge run`, native serial binding on a pty) against the simulator as a process,
 * fed the TP-PID and DCS values TS 23.040 / 23.038 keep from a person: a Short Message Type 0 and a (U)SIM data
 * download never reach the webhook and do not stay on the SIM; the ordinary SMS after them is posted once.
 */
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
  ({ dir, cleanup } = await tempDir('pid-dcs-process'));
  server = await startServer([reply(200, '{"success":true}')]);
});

afterEach(async () => {
  await killAll();
  await server.close();
  await cleanup();
});

const TEXT = 'Anda menerima Pulsa dari 6285941020493 sebesar Rp7000.';

describe('TP-PID and DCS corners, the daemon as a process', () => {
  it.skipIf(!hasSocat)(
    'a Type 0 and a SIM data download are not posted and leave the SIM; the SMS after them is posted',
    async () => {
      const sim = await SimProcess.start(path.join(dir, 'modem'));
      const cfg = await writeConfig(dir, {
        webhook: testWebhook(server.url, { timeoutMs: 5000 }),
        modems: [
          {
            name: 'tsel-1',
            port: path.join(dir, 'modem'),
            senders: ['858'],
            commandTimeoutMs: 3000,
            sweepIntervalSec: 3600,
          },
        ],
      });
      const daemon = await DaemonProcess.start(cfg, 'modem tsel-1 ready:');
      sim.send('inject {"from":"858","text":"ping","pid":64}');
      sim.send('inject {"from":"858","text":"OTA","pid":127,"dcs":242,"encoding":"gsm7"}');
      sim.send(`sms 858 ${TEXT}`);
      await until(() => server.requests.length >= 1, 'the ordinary SMS to be posted', 20_000);
      await until(async () => (await sim.state()).stored === 0, 'the SIM to be empty', 20_000);
      await until(
        () => daemon.logged('Short Message Type 0 (TP-PID 0x40): acknowledged and discarded'),
        'the Type 0 log line',
        20_000,
      );
      await new Promise((r) => setTimeout(r, 500)); // a POST of either of the other two would come now
      expect(server.requests.map((r) => (JSON.parse(r.body.toString('utf8')) as { message: string }).message)).toEqual([
        TEXT,
      ]);
      expect(daemon.logged('(U)SIM Data download (TP-PID 0x7F), meant for the modem or SIM: archived')).toBe(true);
      daemon.child.kill('SIGTERM');
      expect((await daemon.exit).code).toBe(0);
      await sim.quit();
    },
    90_000,
  );
});
