/**
 * systemd/install.sh in a temporary root (--destdir, --no-systemctl): no user, no systemctl, no udevadm, nothing
 * outside the temporary directory. `npm` is a stand-in on PATH that logs where and how it was called (the build copies
 * the real dist/, `ci --omit=dev` links the real node_modules), so the installed CLI really runs `config check`.
 * `node` is the real one through a link on PATH, or a stand-in that reports an old version.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync, chmodSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

let tmp: string;
let checkout: string;
let dest: string;
let bin: string;
let npmLog: string;

const FAKE_NPM = `#!/usr/bin/env bash
echo "$PWD|$*" >> "$NPM_LOG"
case "$*" in
  "run build") cp -R "$REAL_DIST" dist ;;
  ci\\ --omit=dev*) ln -s "$REAL_NODE_MODULES" node_modules ;;
esac
`;

/** A stand-in node reporting `version`; given the unit's flags and `-e ''` it accepts them, or refuses one as node does. */
function fakeNode(version: string, refuseFlag?: string): void {
  rmSync(path.join(bin, 'node'), { force: true });
  const onFlags = refuseFlag ? `echo "$0: bad option: ${refuseFlag}" >&2; exit 9` : 'exit 0';
  writeFileSync(path.join(bin, 'node'), `#!/bin/sh\n[ "$1" = --version ] && echo ${version} && exit 0\ncase " $* " in *" -e "*) ${onFlags} ;; esac\necho "fake node: $*" >&2; exit 1\n`);
  chmodSync(path.join(bin, 'node'), 0o755);
}

function install(args: string[] = [], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync('bash', [path.join(checkout, 'systemd/install.sh'), '--destdir', dest, '--no-systemctl', ...args], {
    encoding: 'utf8',
    env: {
      ...process.env,
      PATH: `${bin}:${process.env.PATH}`,
      NPM_LOG: npmLog,
      REAL_DIST: path.join(repo, 'dist'),
      REAL_NODE_MODULES: path.join(repo, 'node_modules'),
      PULSA_BRIDGE_MODEMS: '',
      ...env,
    },
  });
  return { code: r.status, out: r.stdout, err: r.stderr, all: r.stdout + r.stderr };
}

const npmCalls = () => (existsSync(npmLog) ? readFileSync(npmLog, 'utf8').trim().split('\n') : []);
const at = (p: string) => path.join(dest, p);
const configFile = () => at('etc/pulsa-bridge/config.json');

function editConfig(over: { baseUrl?: string; modems?: unknown } = {}): string {
  const text = JSON.stringify({
    webhook: { baseUrl: over.baseUrl ?? 'https://pulsa.internal.test/api/v1/convert-pulsa' },
    spool: { dir: '/var/lib/pulsa-bridge/spool' },
    modems: over.modems ?? [{ name: 'tsel-1', port: '/dev/serial/by-id/usb-SimTech_SIM7600_A1B2-if02-port0', senders: ['858'] }],
  });
  writeFileSync(configFile(), text);
  return text;
}

beforeEach(() => {
  expect(existsSync(path.join(repo, 'dist/src/cli.js')), 'dist/ is missing: run `npm run build` (npm test does)').toBe(true);
  tmp = mkdtempSync(path.join(os.tmpdir(), 'pb-install-'));
  checkout = path.join(tmp, 'checkout');
  dest = path.join(tmp, 'root');
  bin = path.join(tmp, 'bin');
  npmLog = path.join(tmp, 'npm.log');
  mkdirSync(checkout);
  for (const f of ['systemd', 'bin', 'package.json', 'package-lock.json', 'README.md', 'config.example.json']) {
    cpSync(path.join(repo, f), path.join(checkout, f), { recursive: true });
  }
  // The checkout's dev tools are there (npm ci already ran in it): the installer must only build.
  mkdirSync(path.join(checkout, 'node_modules/.bin'), { recursive: true });
  writeFileSync(path.join(checkout, 'node_modules/.bin/tsc'), '#!/bin/sh\n');
  chmodSync(path.join(checkout, 'node_modules/.bin/tsc'), 0o755);
  writeFileSync(path.join(checkout, 'node_modules/keep-me'), 'dev dependency');
  mkdirSync(bin);
  writeFileSync(path.join(bin, 'npm'), FAKE_NPM);
  chmodSync(path.join(bin, 'npm'), 0o755);
  symlinkSync(process.execPath, path.join(bin, 'node'));
});

afterEach(() => {
  rmSync(tmp, { recursive: true, force: true });
});

describe('install.sh: Node.js', () => {
  it('refuses Node 18 and says how to get 22 or 24, before building anything', () => {
    fakeNode('v18.19.0');
    const r = install();
    expect(r.code).toBe(1);
    expect(r.err).toContain('Node.js v18.19.0');
    expect(r.err).toContain('22 or 24');
    expect(r.err).toContain('https://deb.nodesource.com/setup_22.x');
    expect(r.err).toMatch(/https:\/\/nodejs\.org\/dist\/latest-v22\.x\/ +\(node-v22\.\*-linux-\S+\.tar\.xz\)/);
    expect(npmCalls()).toEqual([]);
    expect(existsSync(at('opt/pulsa-bridge'))).toBe(false);
  });

  it("refuses a node that does not accept the unit's node flags, with node's own words, before building anything", () => {
    fakeNode('v26.0.0', '--lite-mode');
    const r = install();
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/error: Node\.js v26\.0\.0 \(\S+\) refuses the service's node flags \(--max-semi-space-size=1 --lite-mode --single-threaded-gc --expose-gc\): \S+ bad option: --lite-mode/);
    expect(npmCalls()).toEqual([]);
    expect(existsSync(at('opt/pulsa-bridge'))).toBe(false);
  });

  it('installs on Node 20 with an end-of-life warning', () => {
    fakeNode('v20.11.1');
    const r = install();
    expect(r.code, r.all).toBe(0);
    expect(r.err).toContain('warning: Node.js v20.11.1');
    expect(r.err).toContain('past its end of life');
  });

  it('writes the node found on PATH and the prefix into ExecStart', () => {
    const r = install(['--prefix', '/srv/pulsa']);
    expect(r.code, r.all).toBe(0);
    const unit = readFileSync(at('etc/systemd/system/pulsa-bridge.service'), 'utf8').split('\n').filter((l) => !l.startsWith('#')).join('\n');
    expect(unit).toContain(`\nExecStart=${path.join(bin, 'node')} --max-semi-space-size=1 --lite-mode --single-threaded-gc --expose-gc /srv/pulsa/bin/pulsa-bridge run --config /etc/pulsa-bridge/config.json\n`);
    expect(unit).not.toContain('/usr/bin/node');
    expect(unit).not.toContain('/opt/pulsa-bridge');
    expect(existsSync(at('srv/pulsa/dist/src/cli.js'))).toBe(true);
    expect(readlinkSync(at('usr/local/bin/pulsa-bridge'))).toBe('/srv/pulsa/bin/pulsa-bridge');
  });
});

describe('install.sh: build, install, upgrade', () => {
  it('builds in the checkout without pruning it; production dependencies go to the install directory', () => {
    const r = install();
    expect(r.code, r.all).toBe(0);
    expect(npmCalls()).toEqual([`${checkout}|run build`, `${at('opt/pulsa-bridge.new')}|ci --omit=dev --no-audit --no-fund`]);
    expect(readFileSync(path.join(checkout, 'node_modules/keep-me'), 'utf8')).toBe('dev dependency');
    for (const f of ['dist/src/cli.js', 'bin/pulsa-bridge', 'package.json', 'package-lock.json', 'config.example.json']) {
      expect(existsSync(at(`opt/pulsa-bridge/${f}`)), f).toBe(true);
    }
    expect(existsSync(at('opt/pulsa-bridge.new'))).toBe(false);
    expect(readFileSync(configFile(), 'utf8')).toContain('"dir": "/var/lib/pulsa-bridge/spool"');
  });

  it('does not enable the service on the example config: prints the next steps instead', () => {
    const r = install();
    expect(r.code, r.all).toBe(0);
    expect(r.out).toContain('still holds the example values: the service is not enabled yet');
    expect(r.out).toContain('sudo systemctl enable --now pulsa-bridge');
    expect(r.all).not.toMatch(/skipped \(--no-systemctl\): systemctl (enable|restart)/);
  });

  it('an upgrade replaces the build whole (a stale file goes) and keeps the config and the spool', () => {
    expect(install().code).toBe(0);
    const stale = at('opt/pulsa-bridge/dist/src/removed-module.js');
    writeFileSync(stale, 'export {};\n');
    const config = editConfig();
    const record = at('var/lib/pulsa-bridge/spool/pending/sms-1.json');
    mkdirSync(path.dirname(record), { recursive: true });
    writeFileSync(record, '{"pending":true}');

    const r = install();
    expect(r.code, r.all).toBe(0);
    expect(existsSync(stale)).toBe(false);
    expect(existsSync(at('opt/pulsa-bridge/dist/src/cli.js'))).toBe(true);
    expect(existsSync(at('opt/pulsa-bridge.old'))).toBe(false);
    expect(readFileSync(configFile(), 'utf8')).toBe(config);
    expect(readFileSync(record, 'utf8')).toBe('{"pending":true}');
    // The edited config passes `config check` (run by the installed CLI): the service is enabled and restarted.
    expect(r.out).toContain('skipped (--no-systemctl): systemctl enable pulsa-bridge.service');
    expect(r.out).toContain('skipped (--no-systemctl): systemctl restart pulsa-bridge.service');
  });

  it('does not enable a config that fails the check, and shows why', () => {
    expect(install().code).toBe(0);
    editConfig({ modems: [] });
    const r = install();
    expect(r.code, r.all).toBe(0);
    expect(r.out).toContain('does not pass the check');
    expect(r.out).toContain('modems');
    expect(r.all).not.toMatch(/skipped \(--no-systemctl\): systemctl (enable|restart)/);
  });

  it('--uninstall keeps the config and the spool; --purge removes them', () => {
    expect(install().code).toBe(0);
    const record = at('var/lib/pulsa-bridge/spool/pending/sms-1.json');
    mkdirSync(path.dirname(record), { recursive: true });
    writeFileSync(record, '{}');
    const r = install(['--uninstall']);
    expect(r.code, r.all).toBe(0);
    expect(existsSync(at('opt/pulsa-bridge'))).toBe(false);
    expect(existsSync(at('etc/systemd/system/pulsa-bridge.service'))).toBe(false);
    expect(existsSync(at('usr/local/bin/pulsa-bridge'))).toBe(false);
    expect(existsSync(record)).toBe(true);
    expect(existsSync(configFile())).toBe(true);
    expect(r.out).toContain('skipped (--no-systemctl): systemctl disable --now pulsa-bridge.service');

    expect(install(['--uninstall', '--purge']).code).toBe(0);
    expect(existsSync(at('var/lib/pulsa-bridge'))).toBe(false);
    expect(existsSync(at('etc/pulsa-bridge'))).toBe(false);
  });
});

describe('install.sh: udev rule for the modems named', () => {
  const rule = () => readFileSync(at('etc/udev/rules.d/99-pulsa-bridge.rules'), 'utf8');

  it('marks only the named modems ID_MM_DEVICE_IGNORE (by-id path and USB serial), no vendor-wide match', () => {
    const r = install(['--modem', '/dev/serial/by-id/usb-SimTech__Incorporated_SimTech__Incorporated_0123456789ABCDEF-if02-port0'], {
      PULSA_BRIDGE_MODEMS: 'A1B2C3D4',
    });
    expect(r.code, r.all).toBe(0);
    const text = rule();
    const active = text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
    expect(active).toEqual([
      'ACTION=="remove", GOTO="pulsa_bridge_end"',
      'SUBSYSTEM!="tty|usb", GOTO="pulsa_bridge_end"',
      'ATTRS{serial}=="A1B2C3D4", ENV{ID_MM_DEVICE_IGNORE}="1"',
      'SUBSYSTEM=="tty", ATTRS{serial}=="A1B2C3D4", GROUP="dialout", MODE="0660"',
      'ENV{ID_SERIAL}=="SimTech__Incorporated_SimTech__Incorporated_0123456789ABCDEF", ENV{ID_MM_DEVICE_IGNORE}="1"',
      'SUBSYSTEM=="tty", ENV{ID_SERIAL}=="SimTech__Incorporated_SimTech__Incorporated_0123456789ABCDEF", GROUP="dialout", MODE="0660"',
      'LABEL="pulsa_bridge_end"',
    ]);
    expect(text).not.toContain('idVendor');
    expect(r.out).toContain('skipped (--no-systemctl): udevadm control --reload');
  });

  it('without names writes no rule (and says so), and keeps a rule written before', () => {
    const first = install();
    expect(first.code, first.all).toBe(0);
    expect(existsSync(at('etc/udev/rules.d/99-pulsa-bridge.rules'))).toBe(false);
    expect(first.out).toContain('no udev rule written');
    expect(install(['--modem', 'A1B2C3D4']).code).toBe(0);
    const again = install();
    expect(again.out).toContain('kept');
    expect(rule()).toContain('ATTRS{serial}=="A1B2C3D4"');
  });

  it('refuses a name that would break the rule file', () => {
    const r = install(['--modem', 'bad"serial']);
    expect(r.code).toBe(1);
    expect(r.err).toContain('--modem bad"serial');
    const notById = install(['--modem', '/dev/serial/by-id/not-a-usb-name']);
    expect(notById.code).toBe(1);
    // Checked before anything is built or installed.
    expect(npmCalls()).toEqual([]);
    expect(existsSync(at('opt/pulsa-bridge'))).toBe(false);
  });
});
