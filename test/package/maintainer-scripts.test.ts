/**
 * Parts of the Debian maintainer scripts run by dash (as dpkg runs them) in a temporary root: their absolute system
 * paths are rewritten to it and the system tools they call (deb-systemd-helper, udevadm) are stand-ins on PATH.
 * The whole package on a real apt is test/package/package-test.sh.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
let root: string;
let stubs: string;

beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'pb-maint-'));
  stubs = path.join(root, 'stubs');
  mkdirSync(stubs);
  for (const name of ['deb-systemd-helper', 'udevadm', 'systemctl']) {
    writeFileSync(path.join(stubs, name), '#!/bin/sh\nexit 0\n');
    chmodSync(path.join(stubs, name), 0o755);
  }
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** The script's text with /etc, /usr/local, /var/lib paths moved under the temporary root. */
function rooted(script: string): string {
  return readFileSync(path.join(repo, 'packaging/debian', script), 'utf8').replace(
    /(?<![\w/.-])\/(etc|usr\/local|var\/lib|opt)\//g,
    `${root}/$1/`,
  );
}
function dash(text: string, args: string[] = []) {
  const file = path.join(root, 'script.sh');
  writeFileSync(file, text);
  const r = spawnSync('dash', [file, ...args], {
    encoding: 'utf8',
    env: { ...process.env, PATH: `${stubs}:${process.env.PATH}` },
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}
/** postinst's function definitions only (what runs before `case "$1"`), then `body`. */
function postinstFunctions(body: string): string {
  const text = rooted('postinst');
  return `${text.slice(0, text.indexOf('case "$1" in'))}\n${body}\n`;
}
const at = (p: string) => path.join(root, p);

describe('postinst', () => {
  it("exports the env file's KEY=VALUE lines for the check as systemd reads them, and runs nothing in it", () => {
    mkdirSync(at('etc/pulsa-bridge'), { recursive: true });
    const marker = at('ran');
    writeFileSync(
      at('etc/pulsa-bridge/env'),
      `# SIM PIN\n\n; comment\n  PB_PIN = "12 34"  \nQ='a b'\ntouch ${marker}\n$(touch ${marker})=1\nPATH=/nowhere\nNODE_OPTIONS=--max-old-space-size=200\nLD_PRELOAD=/nowhere/evil.so\n`,
      { mode: 0o600 },
    );
    const r = dash(postinstFunctions(`(load_env_file ${at('etc/pulsa-bridge/env')} && env)`));
    expect(r.code, r.err).toBe(0);
    const vars = r.out.split('\n');
    expect(vars).toContain('PB_PIN=12 34');
    expect(vars).toContain('Q=a b');
    expect(vars).toContain('NODE_OPTIONS=--max-old-space-size=200');
    expect(vars).not.toContain('PATH=/nowhere');
    expect(vars.some((v) => v.startsWith('LD_PRELOAD='))).toBe(false); // never into the root step (runuser)
    expect(existsSync(marker)).toBe(false);
  });

  it('does not read an env file others may write', () => {
    mkdirSync(at('etc/pulsa-bridge'), { recursive: true });
    writeFileSync(at('etc/pulsa-bridge/env'), 'PB_PIN=1234\n');
    chmodSync(at('etc/pulsa-bridge/env'), 0o666);
    const r = dash(postinstFunctions(`(load_env_file ${at('etc/pulsa-bridge/env')} && env)`));
    expect(r.out.split('\n')).not.toContain('PB_PIN=1234');
    expect(r.err).toContain("is not read for the config check: it must be a file of root's, writable by root alone");
  });

  it('warns about an install.sh install that shadows the package, with the commands that remove it; deletes nothing', () => {
    mkdirSync(at('etc/systemd/system'), { recursive: true });
    mkdirSync(at('usr/local/bin'), { recursive: true });
    mkdirSync(at('opt/pulsa-bridge/bin'), { recursive: true });
    writeFileSync(at('opt/pulsa-bridge/bin/pulsa-bridge'), '');
    writeFileSync(at('opt/pulsa-bridge/package.json'), '{"name": "pulsa-bridge"}');
    symlinkSync(at('opt/pulsa-bridge/bin/pulsa-bridge'), at('usr/local/bin/pulsa-bridge'));
    // What install.sh writes: the unit with its node and prefix.
    const unit = readFileSync(path.join(repo, 'systemd/pulsa-bridge.service'), 'utf8').replace(
      /^ExecStart=\/usr\/bin\/node (.*) \/opt\/pulsa-bridge\//m,
      `ExecStart=/usr/local/bin/node $1 ${at('opt/pulsa-bridge')}/`,
    );
    writeFileSync(at('etc/systemd/system/pulsa-bridge.service'), unit);
    const r = dash(postinstFunctions('UNIT=pulsa-bridge.service\nold_install_warning'));
    expect(r.code, r.err).toBe(0);
    expect(r.err).toContain(
      `pulsa-bridge: WARNING: an install made by systemd/install.sh (${at('opt/pulsa-bridge')}) shadows this package:`,
    );
    expect(r.err).toContain(
      `${at('etc/systemd/system/pulsa-bridge.service')} runs ${at('opt/pulsa-bridge')}: systemd starts it instead of this package's unit`,
    );
    expect(r.err).toContain('comes before /usr/bin/pulsa-bridge on PATH');
    expect(r.err).toContain(`sudo rm -rf ${at('opt/pulsa-bridge')} ${at('usr/local/share/pulsa-bridge')}`);
    expect(r.err).toContain('sudo systemctl daemon-reload && sudo systemctl restart pulsa-bridge');
    expect(existsSync(at('etc/systemd/system/pulsa-bridge.service'))).toBe(true);
    expect(existsSync(at('opt/pulsa-bridge/bin/pulsa-bridge'))).toBe(true);

    // The package's own unit copied to /etc (systemctl edit --full) is no old install.
    rmSync(at('usr/local/bin/pulsa-bridge'));
    writeFileSync(
      at('etc/systemd/system/pulsa-bridge.service'),
      unit.replace(
        /^ExecStart=.*$/m,
        'ExecStart=/usr/bin/node --max-semi-space-size=1 /usr/lib/pulsa-bridge/bin/pulsa-bridge run --config /etc/pulsa-bridge/config.json',
      ),
    );
    expect(dash(postinstFunctions('UNIT=pulsa-bridge.service\nold_install_warning')).err).toBe('');
  });
});

describe('postrm purge', () => {
  it('says how many undelivered records it deletes', () => {
    for (const [area, n] of [
      ['pending', 3],
      ['dead', 1],
      ['sent', 5],
    ] as const) {
      mkdirSync(at(`var/lib/pulsa-bridge/spool/${area}`), { recursive: true });
      for (let i = 0; i < n; i++) writeFileSync(at(`var/lib/pulsa-bridge/spool/${area}/sms-${i}.json`), '{}');
    }
    mkdirSync(at('etc/pulsa-bridge'), { recursive: true });
    const r = dash(rooted('postrm'), ['purge']);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(
      `pulsa-bridge: purge deletes 3 pending and 1 dead (undelivered) SMS records in ${at('var/lib/pulsa-bridge')}`,
    );
    expect(existsSync(at('var/lib/pulsa-bridge'))).toBe(false);
    expect(existsSync(at('etc/pulsa-bridge'))).toBe(false);
  });

  it('says nothing about records when none is undelivered', () => {
    mkdirSync(at('var/lib/pulsa-bridge/spool/sent'), { recursive: true });
    writeFileSync(at('var/lib/pulsa-bridge/spool/sent/sms-1.json'), '{}');
    const r = dash(rooted('postrm'), ['purge']);
    expect(r.code, r.err).toBe(0);
    expect(r.out).not.toContain('purge deletes');
  });
});
