/**
 * A local user of the reading level against the compiled daemon (its modem on `simulate --link`, socat pty): its idle
 * connections are counted when they connect and never take the operators' slots (root's `at` goes through), a flood
 * of `balance` from it dials at most one USSD and leaves root's `ussd` free, and the log stays a few lines a second.
 * The reading user is `nobody` (in the socket's group `nogroup`), run through runuser: only as root, here.
 */
import { spawnSync } from 'node:child_process';
import { chmod, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { reply, startServer, type TestServer } from '../forward/server.js';
import { testWebhook, writeConfig } from '../support/config.js';
import { CliProcess, DaemonProcess, distBuilt, killAll, runCli, SimProcess } from '../support/daemon.js';
import { hasSocat } from '../support/pty.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';

const asNobody =
  hasSocat &&
  process.getuid?.() === 0 &&
  spawnSync('runuser', ['-u', 'nobody', '--', process.execPath, '-e', '0']).status === 0;

/**
 * `nobody`'s client: N connections; `idle` sends nothing on them, `flood` loops `balance` requests on each, one in
 * flight. Prints its counts as JSON lines.
 */
const READER = `
const net = require('node:net');
const [sock, n, mode] = process.argv.slice(1);
const c = { connected: 0, refused: 0, ok: 0, busy: 0, other: 0, closed: 0 };
const report = () => process.stdout.write(JSON.stringify(c) + '\\n');
const open = () => {
  const s = net.connect(sock);
  const x = { alive: true, id: 0 };
  const send = () => { if (x.alive && mode === 'flood') s.write(JSON.stringify({ v: 1, id: ++x.id, op: 'balance', modem: 'tsel-1' }) + '\\n'); };
  let buf = '';
  s.on('connect', () => { c.connected++; send(); report(); });
  s.on('data', (d) => {
    buf += d;
    const lines = buf.split('\\n');
    buf = lines.pop();
    for (const l of lines) {
      const m = JSON.parse(l);
      if (m.event) continue;
      if (m.id === null) { c.refused++; x.alive = false; }
      else if (m.ok) c.ok++;
      else if (m.error.code === 'busy') c.busy++;
      else c.other++;
      if (m.id !== null) send();
    }
    report();
  });
  s.on('error', () => {});
  s.on('close', () => { c.closed++; report(); if (mode === 'flood' && x.alive === false) setTimeout(open, 100); x.alive = false; });
};
for (let i = 0; i < Number(n); i++) open();
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
`;

let dir: string;
let cleanup: () => Promise<void>;
let server: TestServer;

beforeEach(async () => {
  expect(distBuilt(), 'dist/ is missing: run `npm run build` (npm test does)').toBe(true);
  ({ dir, cleanup } = await tempDir('control-limits'));
  server = await startServer([reply(200, '{"success":true}')]);
});

afterEach(async () => {
  await killAll();
  await server.close();
  await cleanup();
});

describe.skipIf(!asNobody)('a reading user against the compiled daemon', () => {
  it("34 idle connections leave root its slots; a balance flood dials one USSD; root's ussd is not busy; the log stays small", async () => {
    const link = path.join(dir, 'modem');
    await SimProcess.start(link, [], 15_000);
    await chmod(dir, 0o755);
    const runDir = path.join(dir, 'run');
    await mkdir(runDir, { mode: 0o755 });
    await chmod(runDir, 0o755);
    const socket = path.join(runDir, 'control.sock');
    const config = await writeConfig(
      dir,
      {
        webhook: testWebhook(server.url),
        modems: [{ name: 'tsel-1', port: link, senders: ['858'], sweepIntervalSec: 3600, operator: 'telkomsel' }],
        control: { socket, group: 'nogroup' },
      },
      { mode: 0o644 },
    );
    const daemon = await DaemonProcess.start(config, ['ready: SIMCOM', 'control socket listening'], 20_000);
    const idle = new CliProcess(['-e', READER, socket, '34', 'idle'], 'pipe', { as: 'nobody', node: true });
    const idleCounts = () => JSON.parse(idle.out.at(-1) ?? '{}') as { connected: number; refused: number };
    // At most 8 of them are admitted (control limits: 8 per uid), counted at connect although they send nothing.
    await until(() => idleCounts().connected === 34, "the reader's 34 connections", 20_000);
    const logLinesBefore = daemon.out.length;
    for (let i = 0; i < 6; i++) {
      const at = await runCli(['at', '--config', config, 'AT+CSQ']);
      expect(at.code, at.err).toBe(0);
      expect(at.out).toContain('+CSQ:');
    }
    await until(() => idleCounts().refused === 26, 'the 26 connections past 8 to be refused', 20_000);
    idle.child.stdin!.end();
    await idle.exit;
    // The flood: 8 connections loop `balance`.
    // (a connection refused while the idle ones are still being closed tries again, as an attacker would)
    const reader = new CliProcess(['-e', READER, socket, '8', 'flood'], 'pipe', { as: 'nobody', node: true });
    const counts = () => JSON.parse(reader.out.at(-1) ?? '{}') as { ok: number };
    await until(() => counts().ok >= 200, "the reader's balance answers", 30_000, {
      explain: () => `${JSON.stringify(counts())}\n${daemon.out.slice(-5).join('\n')}`,
    });
    const ussd = await runCli(['ussd', '*888#', '--config', config, '--no-interactive']);
    expect(ussd.code, ussd.err).toBe(0);
    expect(ussd.out).toContain('Sisa pulsa');
    await until(() => counts().ok >= 400, "more balance answers after root's ussd", 30_000);
    const balanceAnswers = counts().ok;
    reader.child.stdin!.end();
    await reader.exit;
    // Every one of those answers came from the one check the reader caused (the daemon logs each check it makes).
    const checks = daemon.out.filter((l) => /"msg":"balance(:| check failed| warning| unknown)/.test(l));
    expect({ checks: checks.length, answered: balanceAnswers > 400 }).toEqual({ checks: 1, answered: true });
    // The refusals of the 26 connections: summarised (one line, then a count), not one line each.
    const lines = daemon.out.slice(logLinesBefore).map((l) => JSON.parse(l) as { level: number; msg: string });
    expect(daemon.out.filter((l) => l.includes('already holds 8 control connections')).length).toBeLessThanOrEqual(2);
    expect(lines.filter((l) => l.level >= 40).length).toBeLessThan(10);
    expect(daemon.out.filter((l) => /"level":(50|60)/.test(l))).toEqual([]);
    daemon.child.kill('SIGTERM');
    expect((await daemon.exit).code).toBe(0);
  }, 120_000);
});
