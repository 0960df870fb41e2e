/**
 * The systemd unit as systemd reads it: `systemd-analyze verify` accepts it, `systemd-analyze security` scores it 2.0
 * or lower, and the directives the daemon relies on are there (exit 78 ends the restarts, SIGHUP on reload, the
 * runtime directory). The exit code itself is checked on the compiled CLI (npm test builds dist/ first).
 */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compiledCli } from '../support/cli.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const unitFile = path.join(root, 'systemd/pulsa-bridge.service');
const hasAnalyze = spawnSync('sh', ['-c', 'command -v systemd-analyze']).status === 0;
if (!hasAnalyze)
  console.warn('test/systemd/unit.test.ts: systemd-analyze is not installed: verify and security checks skipped');

/** `[Service]` directives of the unit, name -> values in order (comments and blank lines dropped). */
async function directives(file: string): Promise<Map<string, string[]>> {
  const map = new Map<string, string[]>();
  for (const raw of (await readFile(file, 'utf8')).split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith('[')) continue;
    const eq = line.indexOf('=');
    const key = line.slice(0, eq);
    map.set(key, [...(map.get(key) ?? []), line.slice(eq + 1)]);
  }
  return map;
}

/** The score in `→ Overall exposure level for pulsa-bridge.service: 1.7 OK`. */
function exposureScore(output: string): number | undefined {
  const m = /Overall exposure level for \S+: (\d+(?:\.\d+)?)/.exec(output);
  return m ? Number(m[1]) : undefined;
}

describe('systemd/pulsa-bridge.service', () => {
  it.skipIf(!hasAnalyze)('passes systemd-analyze verify without a complaint', () => {
    // A copy in a directory of its own: verify also loads every unit next to the file.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'pb-unit-'));
    try {
      copyFileSync(unitFile, path.join(dir, 'pulsa-bridge.service'));
      const r = spawnSync('systemd-analyze', ['verify', path.join(dir, 'pulsa-bridge.service')], { encoding: 'utf8' });
      expect(r.stderr + r.stdout).toBe('');
      expect(r.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(!hasAnalyze)('scores 2.0 or lower in systemd-analyze security (was 8.6 EXPOSED)', () => {
    const r = spawnSync('systemd-analyze', ['security', '--offline=true', '--no-pager', unitFile], {
      encoding: 'utf8',
    });
    const score = exposureScore(r.stdout + r.stderr);
    expect(score, r.stdout + r.stderr).toBeDefined();
    expect(score!).toBeLessThanOrEqual(2.0);
  });

  it.skipIf(!hasAnalyze)('the score parser reads what systemd-analyze prints, and a weak unit fails the bound', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'pb-unit-'));
    try {
      const weak = path.join(dir, 'weak.service');
      writeFileSync(weak, '[Service]\nExecStart=/bin/true\n');
      const r = spawnSync('systemd-analyze', ['security', '--offline=true', '--no-pager', weak], { encoding: 'utf8' });
      expect(exposureScore(r.stdout + r.stderr)!).toBeGreaterThan(2.0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs the CLI through bin/, stops restarting on exit 78, reloads with SIGHUP, has a runtime directory', async () => {
    const d = await directives(unitFile);
    expect(d.get('ExecStart')).toEqual([
      '/usr/bin/node --max-semi-space-size=1 /opt/pulsa-bridge/bin/pulsa-bridge run --config /etc/pulsa-bridge/config.json',
    ]);
    expect(d.get('RestartPreventExitStatus')).toEqual(['78']);
    expect(d.get('ExecReload')).toEqual(['/bin/kill -HUP $MAINPID']);
    expect(d.get('RuntimeDirectory')).toEqual(['pulsa-bridge']);
    expect(d.get('RuntimeDirectoryMode')).toEqual(['0750']);
    expect(d.get('UMask')).toEqual(['0027']);
    expect(d.get('ReadWritePaths')).toEqual(['/var/lib/pulsa-bridge']);
    // The serial ports stay reachable; V8 needs W+X memory; the webhook is remote.
    expect(d.get('DeviceAllow')).toEqual(
      expect.arrayContaining(['char-ttyUSB rw', 'char-ttyACM rw', 'char-ttyAMA rw', 'char-ttyS rw']),
    );
    expect(d.get('PrivateDevices')).toEqual(['false']);
    expect(d.has('MemoryDenyWriteExecute')).toBe(false);
    expect(d.has('IPAddressDeny')).toBe(false);
    expect(d.get('RestrictAddressFamilies')).toEqual(['AF_UNIX AF_INET AF_INET6']);
    // The spool lock needs boot_id and other users' /proc/<pid>/stat to recognise a lock left by a crashed daemon.
    expect(d.has('ProtectProc')).toBe(false);
    expect(d.has('ProcSubset')).toBe(false);
  });
});

describe('exit codes the unit relies on (compiled CLI)', () => {
  const run = (args: string[]) => {
    const r = compiledCli(args, { env: { ...process.env, INVOCATION_ID: '' } });
    return { status: r.code, stdout: r.out, stderr: r.err };
  };

  it('`run` with a missing or invalid config exits 78 (EX_CONFIG) and says why', () => {
    expect(
      existsSync(path.join(root, 'dist/src/cli.js')),
      'dist/ is missing: run `npm run build` (npm test does)',
    ).toBe(true);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'pb-exit-'));
    try {
      const missing = run(['run', '--config', path.join(dir, 'none.json')]);
      expect(missing.status).toBe(78);
      expect(missing.stderr).toContain('cannot read (ENOENT)');
      const bad = path.join(dir, 'bad.json');
      writeFileSync(bad, JSON.stringify({ webhook: {}, modems: [] }));
      const invalid = run(['run', '--config', bad]);
      expect(invalid.status).toBe(78);
      expect(invalid.stderr).toContain('error: invalid config:');
      // `config check` keeps its exit code 1.
      expect(run(['config', 'check', bad]).status).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
