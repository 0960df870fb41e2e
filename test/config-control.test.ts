/**
 * The daemon-only load (the commands that ask the running daemon): config-control.ts applies the config's own control
 * and spool schemas and reads the modems' names and ports; no secret is resolved and no other section read. The full
 * parse reports the same words and derives the same socket; a config writable by others is refused by both.
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { controlSocketCandidates, loadDaemonConfig, parseDaemonSection } from '../src/config-control.js';
import { loadConfig, parseConfig } from '../src/config.js';
import { ConfigError } from '../src/errors.js';
import { configProblems } from './support/config.js';

const problems = configProblems;

const modems = [{ name: 'm1', port: '/dev/ttyUSB0', senders: ['858'] }];
const webhook = { baseUrl: 'https://x.example/api/v1/convert-pulsa' };

describe('daemon-only config', () => {
  it('the cases an operator meets', () => {
    expect(parseDaemonSection({ modems }, {})).toMatchObject({
      control: { operateGroup: 'pulsa-bridge-ops', socketPath: '/var/lib/pulsa-bridge/spool/control.sock' },
      spool: { dir: '/var/lib/pulsa-bridge/spool' },
      modems: [{ name: 'm1', port: '/dev/ttyUSB0' }],
    });
    const v = parseDaemonSection({ spool: { dir: '/srv/spool/' }, control: { group: 'ops' }, modems }, {});
    expect(v.control).toEqual({
      group: 'ops',
      operateGroup: 'pulsa-bridge-ops',
      socketPath: '/srv/spool/control.sock',
    });
    expect(v.modems).toEqual([{ name: 'm1', port: '/dev/ttyUSB0' }]);
    expect(
      problems(() =>
        parseDaemonSection({ control: { socket: '', group: 'bad group', mode: 1 }, modems: [{ name: 'm1' }] }, {}),
      ),
    ).toEqual([
      'control.socket: expected a non-empty string',
      'control.group: expected a group name or gid, got "bad group"',
      'control.mode: unknown key (allowed: socket, group, operateGroup)',
      'modems[0].port: required',
    ]);
    // The modems list as the full config has it: at least one, names and ports once each.
    for (const bad of [{}, { modems: {} }, { modems: [] }])
      expect(problems(() => parseDaemonSection(bad, {}))).toEqual(['modems: required: a non-empty array of modems']);
    const twice = {
      webhook,
      modems: [...modems, { ...modems[0], port: '/dev/ttyUSB1' }, { ...modems[0], name: 'm2' }],
    };
    expect(problems(() => parseDaemonSection(twice, {}))).toEqual([
      'modems[1].name: duplicate name "m1"',
      'modems[2].port: port /dev/ttyUSB0 is used by another modem',
    ]);
    expect(problems(() => parseConfig(twice, {}))).toEqual(problems(() => parseDaemonSection(twice, {})));
    const odd = { webhook, modems: [5, { port: '/dev/ttyUSB1', senders: ['858'] }] };
    expect(problems(() => parseDaemonSection(odd, {}))).toEqual([
      'modems[0]: expected an object',
      'modems[1].name: required',
    ]);
    expect(problems(() => parseConfig(odd, {}))).toEqual(
      expect.arrayContaining([...problems(() => parseDaemonSection(odd, {}))]),
    );
    expect(problems(() => parseDaemonSection('x', {}))).toEqual(['expected an object']);
  });

  it('reads a config whose other sections need secrets it does not have', () => {
    const raw = {
      webhook: { ...webhook, hmacSecret: 'env:PB_HMAC_NOT_SET' },
      modems: [{ ...modems[0], pin: 'env:PB_PIN_NOT_SET' }],
      reseller: { apiKey: 'env:PB_KEY_NOT_SET' },
      control: { socket: '/run/x/control.sock' },
    };
    expect(parseDaemonSection(raw, {}).control.socketPath).toBe('/run/x/control.sock');
    expect(problems(() => parseConfig(raw, {}))).toEqual([
      'webhook.hmacSecret: environment variable PB_HMAC_NOT_SET is not set',
      'modems[0].pin: environment variable PB_PIN_NOT_SET is not set',
      'reseller.apiKey: environment variable PB_KEY_NOT_SET is not set',
    ]);
  });

  it('the full config reports a bad control section with the same words and derives the same socket', () => {
    const bad = { webhook, modems: [{ ...modems[0], name: 'has space' }], control: { socket: '', operateGroup: 7.5 } };
    const words = [
      'control.operateGroup: expected an integer from 0 to 2147483647',
      'control.socket: expected a non-empty string',
      'modems[0].name: expected letters, digits, - or _ (at most 40), got "has space"',
    ];
    // the same words, in each load's own order of sections
    expect([...problems(() => parseDaemonSection(bad, {}))].sort()).toEqual(words);
    expect([...problems(() => parseConfig(bad, {}))].sort()).toEqual(words);
    for (const env of [{}, { RUNTIME_DIRECTORY: '/run/pulsa-bridge/:/run/other' }])
      for (const control of [{}, { socket: '/tmp/c.sock' }]) {
        const raw = { webhook, modems, spool: { dir: '/srv/s' }, control };
        const full = parseConfig(raw, env);
        const lean = parseDaemonSection(raw, env);
        expect(lean.control, JSON.stringify([env, control])).toEqual(full.control);
        expect(controlSocketCandidates(lean)).toEqual(controlSocketCandidates(full));
      }
    expect(parseDaemonSection({ modems }, { RUNTIME_DIRECTORY: '/run/pulsa-bridge/' }).control.socketPath).toBe(
      '/run/pulsa-bridge/control.sock',
    );
  });

  describe('the file', () => {
    let dir: string;
    beforeEach(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'pb-config-control-'));
    });
    afterEach(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    it('is refused when others may write it, as the full load refuses it; its problems name it', async () => {
      const file = path.join(dir, 'config.json');
      await writeFile(file, JSON.stringify({ webhook, modems }));
      await chmod(file, 0o666);
      const why = async (p: Promise<unknown>) => ((await p.catch((e: unknown) => e)) as ConfigError).problems;
      expect(await why(loadDaemonConfig(file, {}))).toEqual([
        expect.stringMatching(/writable by others \(mode 0666\)/),
      ]);
      expect(await why(loadConfig(file, {}))).toEqual(await why(loadDaemonConfig(file, {})));
      await chmod(file, 0o640);
      expect((await loadDaemonConfig(file, {})).modems).toEqual([{ name: 'm1', port: '/dev/ttyUSB0' }]);
      await writeFile(file, JSON.stringify({ modems, control: { socket: 5 } }));
      const err = (await loadDaemonConfig(file, {}).catch((e: unknown) => e)) as ConfigError;
      expect(err.message).toContain(file);
      expect(err.problems).toEqual(['control.socket: expected a non-empty string']);
    });
  });
});
