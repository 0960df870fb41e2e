/**
 * `pulsa-bridge status` exit codes as a probe gets them: the compiled bin/pulsa-bridge, and the compiled daemon, each
 * in its own process. 2: a usage error; 6: a config missing, not JSON, invalid, or one this user may not read (told
 * which group may and how to join it); 4, unknown: a user who may not enter the spool of a running daemon (told which
 * group may; neither "not running" nor counts it could not read), while root's status of the same daemon exits 0.
 * (0, 1 and 3 against the compiled daemon: test/metrics/process.test.ts.) Another user is `nobody`, through runuser:
 * only as root.
 */
import { chmod, chown, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { reply, startServer, type TestServer } from '../forward/server.js';
import { compiledCli } from '../support/cli.js';
import { testWebhook, writeConfig } from '../support/config.js';
import { DaemonProcess, distBuilt, killAll, runCli } from '../support/daemon.js';
import { tempDir } from '../support/tmp.js';
import { groupWithoutNobody, nobodyRunsCli } from '../support/users.js';

let dir: string;
let cleanup: () => Promise<void>;
let server: TestServer | undefined;

beforeEach(async () => {
  expect(distBuilt(), 'dist/ is missing: run `npm run build` (npm test does)').toBe(true);
  ({ dir, cleanup } = await tempDir('status-exit'));
});

afterEach(async () => {
  await killAll();
  await server?.close();
  server = undefined;
  await cleanup();
});

/** The hint a user outside `group` gets for a path that group may read. */
const joinHint = (group: string) =>
  `it is readable by the group ${group}: join it (sudo usermod -aG ${group} $USER, then log in again) or run with sudo`;

describe('status exit codes of the compiled CLI', () => {
  it('2 for a usage error (an unknown option, a stray argument), before any file is read', () => {
    for (const args of [['--bogus'], ['extra'], ['--config']]) {
      const r = compiledCli(['status', ...args, ...(args[0] === '--config' ? [] : ['--config', '/nonexistent'])]);
      expect(r.code, `${args.join(' ')}: ${r.err}`).toBe(2);
      expect(r.err).toMatch(/^error: /);
      expect(r.err).not.toContain('invalid config');
    }
  }, 120_000);

  it('6 when the config is missing, not JSON or invalid, with the reason on stderr (never 1, unhealthy, or 3)', async () => {
    const missing = path.join(dir, 'absent.json');
    const notJson = path.join(dir, 'not-json.json');
    await writeFile(notJson, '{"spool": ');
    const invalid = await writeConfig(dir, { spool: { dir: 42 } }, { file: 'invalid.json' });
    const cases: Array<[string, RegExp]> = [
      [missing, /^ {2}- cannot read \(ENOENT\)$/m],
      [notJson, /^ {2}- not valid JSON \(/m],
      [invalid, /^ {2}- spool\.dir: /m],
    ];
    for (const [file, reason] of cases) {
      for (const json of [[], ['--json']]) {
        const r = compiledCli(['status', '--config', file, ...json]);
        expect(r.code, `${file} ${json.join('')}: ${r.err}`).toBe(6);
        expect(r.out).toBe('');
        expect(r.err).toContain(`error: invalid config: ${file}\n`);
        expect(r.err).toMatch(reason);
      }
    }
  }, 180_000);

  it.skipIf(!nobodyRunsCli)(
    "6 for a user outside the config's group: the message names the group that may read it and how to join it",
    async () => {
      const group = groupWithoutNobody();
      await chmod(dir, 0o755); // nobody reaches the file; its own mode and group decide
      const config = await writeConfig(dir, { webhook: { url: 'http://127.0.0.1:9/x' } }, { mode: 0o640 });
      await chown(config, 0, group.gid); // as the package installs it: 0640 root:pulsa-bridge
      const r = await runCli(['status', '--config', config], { as: 'nobody' });
      expect(r.code, r.err).toBe(6);
      expect(r.err).toBe(`error: invalid config: ${config}\n  - cannot read (EACCES): ${joinHint(group.name)}\n`);
      // A file no group may read: no group to join, sudo (never "join root").
      await chmod(config, 0o600);
      const ownerOnly = await runCli(['status', '--config', config], { as: 'nobody' });
      expect(ownerOnly.code).toBe(6);
      expect(ownerOnly.err).toContain('cannot read (EACCES): it is readable by its owner alone: run with sudo\n');
    },
    60_000,
  );

  it.skipIf(!nobodyRunsCli)(
    '4 (unknown) for a user who may not enter the spool of a running daemon: the group that may, no counts made up; root gets 0',
    async () => {
      const group = groupWithoutNobody();
      server = await startServer([reply(200, '{"success":true}')]);
      await chmod(dir, 0o755);
      // The package's layout: the state directory 0750 root:pulsa-bridge, the spool inside it.
      const state = path.join(dir, 'state');
      await mkdir(state, { mode: 0o750 });
      await chown(state, 0, group.gid);
      const config = await writeConfig(
        dir,
        {
          webhook: testWebhook(server.url),
          spool: { dir: path.join(state, 'spool'), fsync: false },
          modems: [{ name: 'tsel-1', port: 'virtual:tsel-1', senders: ['858'] }],
        },
        { mode: 0o644 }, // nobody may read the config (it holds no secret), not the spool
      );
      const daemon = await DaemonProcess.start(config, ['ready: SIMCOM'], 60_000);

      const r = await runCli(['status', '--config', config], { as: 'nobody' });
      expect(r.code, r.out + r.err).toBe(4);
      const spool = path.join(state, 'spool');
      expect(r.out).toBe(
        `daemon: unknown (cannot read the spool lock ${spool}/spool.lock: EACCES: permission denied, open '${spool}/spool.lock')\n` +
          `spool: cannot read the spool ${spool} (EACCES)\n  hint: ${joinHint(group.name)}\n`,
      );
      const json = await runCli(['status', '--config', config, '--json'], { as: 'nobody' });
      expect(json.code).toBe(4);
      expect(JSON.parse(json.out)).toMatchObject({
        daemon: { running: null, hint: joinHint(group.name) },
        spool: null,
        spoolError: { error: `cannot read the spool ${spool} (EACCES)`, hint: joinHint(group.name) },
        health: null,
        exitCode: 4,
      });

      // The same daemon, seen by root: running and healthy.
      const root = compiledCli(['status', '--config', config]);
      expect(root.out).toContain(`daemon: running (pid ${daemon.child.pid}`);
      expect(root.code, root.out).toBe(0);
      daemon.child.kill('SIGTERM');
      expect((await daemon.exit).code).toBe(0);
    },
    120_000,
  );
});
