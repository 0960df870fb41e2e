/**
 * `info` and `sms ...` with `--config` / `--modem`, in-process (main(argv, io) with captured output): through the
 * running daemon's control socket when it holds the modem, directly on the port otherwise, with the same output,
 * `--json` and exit codes; `--verbose` says which path was taken.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import type { Daemon } from '../../src/daemon.js';
import { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';
import { reply, startServer, type TestServer } from '../forward/server.js';
import { writeConfig } from '../support/config.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';
import { cli } from '../support/cli.js';
import { startInProcess } from '../support/in-process.js';
import { virtualModemAt } from '../../src/virtual-modem/virtual-ports.js';

let dir: string;
let server: TestServer;
const cleanups: Array<() => Promise<void> | void> = [];
beforeEach(async () => {
  const t = await tempDir('target');
  dir = t.dir;
  cleanups.push(t.cleanup);
  server = await startServer([reply(200, '{"success":true}')]);
  cleanups.push(() => server.close());
});
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const modem = {
  name: 'tsel-1',
  port: 'virtual:tsel-1',
  senders: ['858'],
  otherSenders: 'keep',
  sweepIntervalSec: 3600,
};

const daemonConfig = (modems: unknown[] = [modem]): Promise<string> =>
  writeConfig(dir, { webhook: { url: server.url }, spool: { dir: path.join(dir, 'spool'), fsync: false }, modems });

/** The daemon on the config file an operator's command reads too. */
async function startDaemon(file: string): Promise<Daemon> {
  return startInProcess(parseConfig(JSON.parse(await readFile(file, 'utf8'))), cleanups, {
    virtualModem: { bootStepMs: 0, noise: false },
  });
}

/** The direct path's device: the same simulated modem the daemon runs, with nothing stored. */
const freshModem = (path: string) => {
  const vm = new VirtualModem({ path, profile: 'simcom', bootStepMs: 0, noise: false });
  vm.start();
  return vm;
};

describe('through the running daemon, or directly: the same output', () => {
  it('info: the daemon path and the direct path print the same, with the config name; --verbose says which', async () => {
    const file = await daemonConfig();
    const direct = await cli(['info', '--config', file, '--verbose'], { virtualModem: freshModem });
    expect(direct.code).toBe(0);
    expect(direct.err).toMatch(/^path: direct, opening virtual:tsel-1 \(no daemon answered at .*control\.sock\)\n/);
    expect(direct.out).toMatch(/^name: tsel-1\n/);
    const directJson = await cli(['info', '--config', file, '--json']);
    await startDaemon(file);
    const viaDaemon = await cli(['info', '--config', file, '--verbose']);
    expect(viaDaemon.err).toMatch(/^path: the running daemon \(control socket .*control\.sock\), modem tsel-1\n$/);
    expect(viaDaemon.out).toBe(direct.out);
    expect(viaDaemon.code).toBe(0);
    const json = await cli(['info', '--config', file, '--json']);
    expect(JSON.parse(json.out)).toEqual(JSON.parse(directJson.out));
  });

  it('sms list/read/delete through the daemon; deleting an empty slot says so (exit 1), on both paths', async () => {
    const file = await daemonConfig();
    const daemon = await startDaemon(file);
    const vm = virtualModemAt('virtual:tsel-1')!;
    vm.injectSms({ from: '0812999', text: 'pesan pribadi' });
    await until(
      () => vm.storedMessages().length === 1 && daemon.status().modems[0]!.scheduler.running === undefined,
      'the kept SMS',
      5000,
    );
    const list = await cli(['sms', 'list', '--config', file, '--modem', 'tsel-1', '--json']);
    const [only] = JSON.parse(list.out) as Array<{ index: number; sender: string }>;
    expect(only).toMatchObject({ sender: '0812999' });
    const read = await cli(['sms', 'read', '--config', file, String(only!.index)]);
    expect(read.out).toMatch(
      new RegExp(`^#${only!.index} \\[(un)?read\\] from 0812999 at .*\\n  pesan pribadi\\n\\n$`),
    );
    // Through the daemon the SMS is handled first: a sender the keep policy leaves on the SIM is archived, then deleted.
    const del = await cli(['sms', 'delete', '--config', file, String(only!.index)]);
    expect(del).toMatchObject({ err: '', code: 0 });
    expect(del.out).toMatch(
      new RegExp(`^deleted SMS at index ${only!.index} \\(from 0812999, archived in ignored: \\S+\\)\\n$`),
    );
    const again = await cli(['sms', 'delete', '--config', file, String(only!.index)]);
    expect(again).toEqual({
      out: '',
      err: `error: no SMS at index ${only!.index} (the slot was already empty: nothing deleted)\nhint: \`pulsa-bridge sms list\` shows the stored messages and their indexes\n`,
      code: 1,
    });
    const missing = await cli(['sms', 'read', '--config', file, '7']);
    expect(missing).toEqual({
      out: '',
      err: 'error: no SMS at index 7\nhint: `pulsa-bridge sms list` shows the stored messages and their indexes\n',
      code: 1,
    });
    expect(await cli(['sms', 'list', '--config', file])).toEqual({ out: 'no SMS on the modem\n', err: '', code: 0 });
    // The direct path says the same about an empty slot.
    expect(await cli(['sms', 'delete', '--simulate', '9'], { virtualModem: freshModem })).toEqual({
      ...again,
      err: again.err.replace(`index ${only!.index}`, 'index 9'),
    });
  });

  it('sms send through the daemon prints what the direct path prints', async () => {
    const file = await daemonConfig();
    const daemon = await startDaemon(file);
    const r = await cli(['sms', 'send', '--config', file, '--to', '151', 'TRANSFERPULSA', '081234567890', '5000']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^sent to 151 in 1 part\(s\); message reference\(s\) \d+\n$/);
    expect(
      virtualModemAt('virtual:tsel-1')!
        .sentMessages()
        .map((m) => [m.destination, m.text]),
    ).toEqual([['151', 'TRANSFERPULSA 081234567890 5000']]);
  });
});

describe('choosing the modem', () => {
  it('several modems: --modem picks one; without it, a usage error naming them; an unknown name too', async () => {
    const file = await daemonConfig([modem, { ...modem, name: 'xl-1', port: 'virtual:xl-1' }]);
    await startDaemon(file);
    const r = await cli(['info', '--config', file, '--modem', 'xl-1']);
    expect(r.out).toMatch(/^name: xl-1\n/);
    expect(await cli(['info', '--config', file])).toEqual({
      out: '',
      err: 'error: the config has 2 modems: pass --modem NAME (tsel-1, xl-1)\n',
      code: 2,
    });
    const unknown = await cli(['sms', 'list', '--config', file, '--modem', 'isat-9']);
    expect(unknown.err).toBe(
      'error: no modem named "isat-9" in the config (it has: tsel-1, xl-1)\nhint: `pulsa-bridge config check` shows the config\n',
    );
    expect(unknown.code).toBe(2);
  });

  it('a daemon that does not run the modem named: the port is opened directly', async () => {
    const file = await daemonConfig();
    await startDaemon(file);
    const other = await writeConfig(
      dir,
      {
        webhook: { url: server.url },
        spool: { dir: path.join(dir, 'spool') },
        modems: [{ ...modem, name: 'xl-1', port: 'virtual:xl-1' }],
      },
      { file: 'other.json', defaults: false },
    );
    const r = await cli(['info', '--config', other, '--verbose'], { virtualModem: freshModem });
    expect(r.err).toMatch(/^path: direct, opening virtual:xl-1 \(the daemon at .* does not run this modem\)\n/);
    expect(r.out).toMatch(/^name: xl-1\n/);
  });
});
