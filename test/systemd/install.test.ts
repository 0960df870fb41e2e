/**
 * systemd/install.sh in a temporary root (--destdir, --no-systemctl): no user, no systemctl, no udevadm, nothing
 * outside the temporary directory. `npm` is a stand-in on PATH that logs where and how it was called (the build copies
 * the real dist/, `ci --omit=dev` makes a node_modules of links to the real packages), so the installed CLI really runs
 * `config check`.
 * `node` is the real one through a link on PATH, or a stand-in that reports an old version. The machine is faked too:
 * `dpkg --print-architecture` and `dpkg-query` (which package owns node, its maintainer) are stand-ins on PATH, and
 * /etc/os-release, /proc/cmdline, /dev and `uname -m` come from the test hooks install.sh documents.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { spawnSync } from 'node:child_process';
import {
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
  chmodSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// Each install.sh run starts node several times (addon check, --version with the unit's flags, config check) and some
// tests run it two or three times: on a loaded 2-core machine that is well over the suite's 20 s default.
vi.setConfig({ testTimeout: 180_000 });

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

let tmp: string;
let checkout: string;
let dest: string;
let bin: string;
let npmLog: string;

let root: string;

// The production tree (ci --omit=dev) is a directory of its own, as npm makes it: each package a link to the real one,
// and .bin links as npm writes them (install.sh removes TypeScript from it: only the links go, never the real tree).
// INSTALL_SCRIPTS_FAIL: a machine where an install script fails (koffi's, whose prebuilt binary does not load on an
// ARMv6 Pi or 32-bit Bullseye, with no cmake to rebuild it): any ci without --ignore-scripts fails as npm ci would.
const FAKE_NPM = `#!/usr/bin/env bash
echo "$PWD|$*" >> "$NPM_LOG"
echo "$(id -un)" >> "$NPM_LOG.users"
if [ -n "\${INSTALL_SCRIPTS_FAIL:-}" ] && [ "$1" = ci ] && [[ " $* " != *" --ignore-scripts "* ]]; then
  echo "npm error path $PWD/node_modules/koffi" >&2
  echo "npm error command sh -c node ./cnoke.cjs -P . -D src/koffi --prebuild --release" >&2
  echo "npm error Failed to load prebuilt binary, rebuilding from source" >&2
  echo "npm error Error: CMake does not seem to be available" >&2
  exit 1
fi
case "$*" in
  "run build") cp -R "$REAL_DIST" dist ;;
  ci\\ --omit=dev*)
    mkdir -p node_modules/.bin
    if [ -z "\${BROKEN_ADDON:-}" ]; then
      # the packages' paths come listed: the build's user (nobody) may not read the repository's parent directory
      printf '%s\\n' "$REAL_PACKAGES" | while IFS= read -r p; do
        # npm leaves out an optional package whose download or integrity check failed, and says nothing
        if [ -n "\${DROP_KOFFI_BINARY:-}" ] && [ "\${p##*/}" = @koromix ]; then continue; fi
        ln -s "$p" node_modules/
      done
      ln -s ../typescript/bin/tsc node_modules/.bin/tsc
      ln -s ../typescript/bin/tsserver node_modules/.bin/tsserver
      ln -s ../pino/bin.js node_modules/.bin/pino
    fi ;;
esac
`;

/** dpkg and dpkg-query as the faked machine answers them. */
const FAKE_DPKG = `#!/bin/sh
[ "$1" = --print-architecture ] && echo "\${FAKE_ARCH:-amd64}" && exit 0
exit 2
`;
const FAKE_DPKG_QUERY = `#!/bin/sh
case "$1" in
  -S) [ -n "\${FAKE_NODE_PKG:-}" ] && echo "$FAKE_NODE_PKG: $2" && exit 0; echo "dpkg-query: no path found matching pattern $2" >&2; exit 1 ;;
  -W) case "$*" in *" nodejs") [ -n "\${FAKE_NODE_PKG:-}" ] || exit 1; case "$2" in *Maintainer*) echo "$FAKE_NODE_MAINT" ;; *) echo "$FAKE_NODE_VERSION" ;; esac; exit 0 ;; esac; exit 1 ;;
esac
exit 1
`;
/** The faked OS: os-release of a Raspberry Pi OS release, the kernel's architecture, its command line. */
function fakeOs(o: {
  codename: 'bookworm' | 'trixie';
  arch: string;
  kernel: string;
  cmdline?: string;
  debianNode?: string;
}): NodeJS.ProcessEnv {
  const name = o.codename === 'bookworm' ? 'Debian GNU/Linux 12 (bookworm)' : 'Debian GNU/Linux 13 (trixie)';
  writeFileSync(path.join(tmp, 'os-release'), `PRETTY_NAME="${name}"\nVERSION_CODENAME=${o.codename}\nID=debian\n`);
  writeFileSync(
    path.join(tmp, 'cmdline'),
    `${o.cmdline ?? 'console=tty1 root=PARTUUID=1234-02 rootfstype=ext4 fsck.repair=yes rootwait'}\n`,
  );
  return {
    PULSA_BRIDGE_OS_RELEASE: path.join(tmp, 'os-release'),
    PULSA_BRIDGE_CMDLINE: path.join(tmp, 'cmdline'),
    PULSA_BRIDGE_KERNEL_ARCH: o.kernel,
    FAKE_ARCH: o.arch,
    ...(o.debianNode
      ? {
          FAKE_NODE_PKG: 'nodejs',
          FAKE_NODE_MAINT: 'Debian Javascript Maintainers <pkg-javascript-devel@alioth-lists.debian.net>',
          FAKE_NODE_VERSION: o.debianNode,
        }
      : {}),
  };
}

/** A PATH with the system's tools but no npm (Debian packages npm apart from nodejs). */
let noNpmBin: string;
beforeAll(() => {
  noNpmBin = mkdtempSync(path.join(os.tmpdir(), 'pb-nonpm-'));
  for (const dir of ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin']) {
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir)) {
      if (
        ['npm', 'npx', 'node', 'nodejs', 'dpkg', 'dpkg-query'].includes(name) ||
        existsSync(path.join(noNpmBin, name))
      )
        continue;
      symlinkSync(path.join(dir, name), path.join(noNpmBin, name));
    }
  }
});
afterAll(() => rmSync(noNpmBin, { recursive: true, force: true }));

/** A stand-in node reporting `version`; given the unit's flags and `-e ''` it accepts them, or refuses one as node does. */
function fakeNode(version: string, refuseFlag?: string): void {
  rmSync(path.join(bin, 'node'), { force: true });
  const onFlags = refuseFlag ? `echo "$0: bad option: ${refuseFlag}" >&2; exit 9` : 'exit 0';
  // Anything else (the addon check, the new tree's --version, config check) runs on the real node.
  writeFileSync(
    path.join(bin, 'node'),
    `#!/bin/sh\n[ "$1" = --version ] && echo ${version} && exit 0\ncase " $* " in *" -e "*) ${onFlags} ;; esac\nexec "${process.execPath}" "$@"\n`,
  );
  chmodSync(path.join(bin, 'node'), 0o755);
}

function install(args: string[] = [], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(
    'bash',
    [path.join(checkout, 'systemd/install.sh'), '--destdir', dest, '--no-systemctl', ...args],
    {
      encoding: 'utf8',
      env: {
        ...process.env,
        PATH: `${bin}:${process.env.PATH}`,
        PULSA_BRIDGE_OS_RELEASE: path.join(tmp, 'os-release'),
        PULSA_BRIDGE_CMDLINE: path.join(tmp, 'cmdline'),
        PULSA_BRIDGE_DEV_ROOT: root,
        PULSA_BRIDGE_KERNEL_ARCH: 'x86_64',
        NPM_LOG: npmLog,
        REAL_DIST: path.join(repo, 'dist'),
        REAL_PACKAGES: readdirSync(path.join(repo, 'node_modules'))
          .filter((name) => !name.startsWith('.'))
          .map((name) => path.join(repo, 'node_modules', name))
          .join('\n'),
        PULSA_BRIDGE_MODEMS: '',
        ...env,
      },
    },
  );
  return { code: r.status, out: r.stdout, err: r.stderr, all: r.stdout + r.stderr };
}

/** The lines that say why install.sh stopped (this machine's own Node may add a warning before them). */
const errors = (err: string) =>
  err.split('\n').filter((l) => l.startsWith('error:') || l.startsWith('pulsa-bridge-modems:'));
const npmCalls = () => (existsSync(npmLog) ? readFileSync(npmLog, 'utf8').trim().split('\n') : []);
const at = (p: string) => path.join(dest, p);
const configFile = () => at('etc/pulsa-bridge/config.json');

function editConfig(over: { baseUrl?: string; modems?: unknown } = {}): string {
  const text = JSON.stringify({
    webhook: { baseUrl: over.baseUrl ?? 'https://pulsa.internal.test/api/v1/convert-pulsa' },
    spool: { dir: '/var/lib/pulsa-bridge/spool' },
    modems: over.modems ?? [
      { name: 'tsel-1', port: '/dev/serial/by-id/usb-SimTech_SIM7600_A1B2-if02-port0', senders: ['858'] },
    ],
  });
  writeFileSync(configFile(), text);
  return text;
}

beforeEach(() => {
  expect(existsSync(path.join(repo, 'dist/src/cli.js')), 'dist/ is missing: run `npm run build` (npm test does)').toBe(
    true,
  );
  tmp = mkdtempSync(path.join(os.tmpdir(), 'pb-install-'));
  root = path.join(tmp, 'machine');
  mkdirSync(path.join(root, 'dev/serial/by-id'), { recursive: true });
  checkout = path.join(tmp, 'checkout');
  dest = path.join(tmp, 'root');
  bin = path.join(tmp, 'bin');
  npmLog = path.join(tmp, 'npm.log');
  mkdirSync(checkout);
  for (const f of [
    'systemd',
    'bin',
    'web',
    'package.json',
    'package-lock.json',
    'README.md',
    'docs',
    'config.example.json',
  ]) {
    cpSync(path.join(repo, f), path.join(checkout, f), { recursive: true });
  }
  // The checkout's dev tools are there (npm ci already ran in it): the installer must only build.
  mkdirSync(path.join(checkout, 'node_modules/.bin'), { recursive: true });
  writeFileSync(path.join(checkout, 'node_modules/.bin/tsc'), '#!/bin/sh\n');
  chmodSync(path.join(checkout, 'node_modules/.bin/tsc'), 0o755);
  // npm's record of what it installed, as new as the lock file it installed from
  writeFileSync(path.join(checkout, 'node_modules/.package-lock.json'), '{}\n');
  utimesSync(path.join(checkout, 'node_modules/.package-lock.json'), new Date(), new Date(Date.now() + 1000));
  writeFileSync(path.join(checkout, 'node_modules/keep-me'), 'dev dependency');
  mkdirSync(bin);
  for (const [name, text] of [
    ['npm', FAKE_NPM],
    ['dpkg', FAKE_DPKG],
    ['dpkg-query', FAKE_DPKG_QUERY],
  ] as const) {
    writeFileSync(path.join(bin, name), text);
    chmodSync(path.join(bin, name), 0o755);
  }
  fakeOs({ codename: 'bookworm', arch: 'amd64', kernel: 'x86_64' });
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
    expect(r.err).toContain(
      'error: Node.js v18.19.0 (' +
        path.join(bin, 'node') +
        ") is too old: pulsa-bridge needs Node.js 20 or later (22 or 24, or Debian's own 20 on Trixie).",
    );
    expect(r.err).toContain("Debian's nodejs here is 18: too old");
    expect(r.err).toContain('https://deb.nodesource.com/setup_22.x');
    expect(r.err).toMatch(/https:\/\/nodejs\.org\/dist\/latest-v22\.x\/ +\(node-v22\.\*-linux-\S+\.tar\.xz\)/);
    expect(npmCalls()).toEqual([]);
    expect(existsSync(at('opt/pulsa-bridge'))).toBe(false);
  });

  it("refuses a node that does not accept the unit's node flags, with node's own words, before building anything", () => {
    fakeNode('v26.0.0', '--max-semi-space-size=1');
    const r = install();
    expect(r.code).toBe(1);
    expect(r.err).toMatch(
      /error: Node\.js v26\.0\.0 \(\S+\) refuses the service's node flags \(--max-semi-space-size=1\): \S+ bad option: --max-semi-space-size=1/,
    );
    expect(npmCalls()).toEqual([]);
    expect(existsSync(at('opt/pulsa-bridge'))).toBe(false);
  });

  it('names what exists for a Pi 4/5 on the 32-bit Bookworm (64-bit kernel, armhf userland): armv7l, no arm64, no Node 24', () => {
    // The arm64 tarball unpacked on armhf: the node does not run at all.
    rmSync(path.join(bin, 'node'));
    writeFileSync(path.join(bin, 'node'), '#!/bin/sh\nexit 126\n');
    chmodSync(path.join(bin, 'node'), 0o755);
    const r = install([], fakeOs({ codename: 'bookworm', arch: 'armhf', kernel: 'aarch64' }));
    expect(r.code).toBe(1);
    expect(r.err).toContain(
      `error: cannot run ${path.join(bin, 'node')} (node --version said: nothing): it is not a Node.js build for this machine (armhf)`,
    );
    expect(r.err).toContain(
      'this Pi boots a 64-bit kernel but runs the 32-bit OS: only armhf (armv7l) programs run here, no arm64 build.',
    );
    expect(r.err).toContain('node-v22.*-linux-armv7l.tar.xz');
    expect(r.err).toContain('there is no Node 24 for 32-bit Arm');
    expect(r.err).toContain("Debian's nodejs here is 18: too old");
    expect(r.err).toContain('or move to Raspberry Pi OS Trixie');
    expect(r.err).not.toContain('linux-arm64');
    expect(r.err).not.toContain('setup_22.x');
    expect(npmCalls()).toEqual([]);
  });

  it("on a Pi Zero / Pi 1 (ARMv6) names Trixie's own nodejs: no official build exists", () => {
    fakeNode('v18.19.0');
    const r = install([], fakeOs({ codename: 'bookworm', arch: 'armhf', kernel: 'armv6l' }));
    expect(r.code).toBe(1);
    expect(r.err).toContain('a Pi 1 / Zero (ARMv6) has no official Node build and no NodeSource one');
    expect(r.err).not.toContain('linux-armv7l');
  });

  it('on 64-bit Bookworm names NodeSource and the linux-arm64 tarball', () => {
    fakeNode('v18.19.0');
    const r = install([], fakeOs({ codename: 'bookworm', arch: 'arm64', kernel: 'aarch64' }));
    expect(r.code).toBe(1);
    expect(r.err).toContain('https://deb.nodesource.com/setup_22.x');
    expect(r.err).toContain('node-v22.*-linux-arm64.tar.xz');
  });

  it("accepts Debian's own Node 20 on Trixie without a warning; without npm it names the package and the .deb", () => {
    fakeNode('v20.19.2');
    const env = fakeOs({ codename: 'trixie', arch: 'arm64', kernel: 'aarch64', debianNode: '20.19.2+dfsg-1' });
    const r = install([], { ...env, PATH: `${bin}:${noNpmBin}` });
    rmSync(path.join(bin, 'npm'));
    const noNpm = install([], { ...env, PATH: `${bin}:${noNpmBin}` });
    expect(r.code, r.all).toBe(0);
    expect(r.out).toContain(
      "Node.js v20.19.2 is Debian's own package (nodejs 20.19.2+dfsg-1): supported, Debian keeps it patched",
    );
    expect(r.err).not.toContain('end of life');
    expect(noNpm.code).toBe(1);
    expect(noNpm.err.trim()).toBe(
      'error: npm not found: Debian packages it apart (sudo apt-get install npm: about 375 packages with a compiler), or install the Debian package of pulsa-bridge instead, which needs no npm and no build (docs/install.md)',
    );
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
    const unit = readFileSync(at('etc/systemd/system/pulsa-bridge.service'), 'utf8')
      .split('\n')
      .filter((l) => !l.startsWith('#'))
      .join('\n');
    expect(unit).toContain(
      `\nExecStart=${path.join(bin, 'node')} --max-semi-space-size=1 /srv/pulsa/bin/pulsa-bridge run --config /etc/pulsa-bridge/config.json\n`,
    );
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
    const calls = npmCalls();
    expect(calls[0]).toBe(`${checkout}|run build`);
    // The production tree: no dev dependencies, the optional packages (koffi's binary), no install scripts, in a
    // staging directory (never the install directory itself, never the checkout).
    expect(calls[1]).toMatch(
      /\/pulsa-bridge-stage\.\w+\|ci --omit=dev --include=optional --ignore-scripts --no-audit --no-fund$/,
    );
    expect(calls).toHaveLength(2);
    expect(r.out).toMatch(/serial addon: @serialport\/bindings-cpp\/prebuilds\/linux-x64\/\S+\.node/);
    expect(readFileSync(path.join(checkout, 'node_modules/keep-me'), 'utf8')).toBe('dev dependency');
    for (const f of [
      'dist/src/cli.js',
      'bin/pulsa-bridge',
      'web/status-page/index.html',
      'package.json',
      'package-lock.json',
      'config.example.json',
    ]) {
      expect(existsSync(at(`opt/pulsa-bridge/${f}`)), f).toBe(true);
    }
    expect(existsSync(at('opt/pulsa-bridge.new'))).toBe(false);
    expect(readFileSync(configFile(), 'utf8')).toContain('"dir": "/var/lib/pulsa-bridge/spool"');
  });

  it('runs npm ci in the checkout first when the dev tools are missing or the lock file changed since they were installed', () => {
    for (const change of ['tools missing', 'lock file newer'] as const) {
      rmSync(npmLog, { force: true });
      if (change === 'tools missing') rmSync(path.join(checkout, 'node_modules/.bin/tsc'));
      else utimesSync(path.join(checkout, 'package-lock.json'), new Date(), new Date(Date.now() + 600_000));
      const r = install();
      expect(r.code, `${change}: ${r.all}`).toBe(0);
      expect(npmCalls().slice(0, 2), change).toEqual([
        `${checkout}|ci --ignore-scripts --no-audit --no-fund`,
        `${checkout}|run build`,
      ]);
      writeFileSync(path.join(checkout, 'node_modules/.bin/tsc'), '#!/bin/sh\n');
      chmodSync(path.join(checkout, 'node_modules/.bin/tsc'), 0o755);
      utimesSync(path.join(checkout, 'node_modules/.package-lock.json'), new Date(), new Date(Date.now() + 120_000));
    }
  });

  it("runs no install script (koffi's fails where its binary does not load); the production tree keeps koffi's binary, not TypeScript", () => {
    // A lock newer than the checkout's tools: npm ci there, on a machine where an install script would fail.
    utimesSync(path.join(checkout, 'package-lock.json'), new Date(), new Date(Date.now() + 600_000));
    const r = install([], { INSTALL_SCRIPTS_FAIL: '1' });
    expect(r.code, r.all).toBe(0);
    const calls = npmCalls();
    expect(calls.slice(0, 2)).toEqual([
      `${checkout}|ci --ignore-scripts --no-audit --no-fund`,
      `${checkout}|run build`,
    ]);
    expect(calls[2]).toMatch(
      /\/pulsa-bridge-stage\.\w+\|ci --omit=dev --include=optional --ignore-scripts --no-audit --no-fund$/,
    );
    expect(calls).toHaveLength(3);
    // TypeScript (devOptional: installed with the optional packages) is gone, with its .bin links; the rest stays.
    const nm = at('opt/pulsa-bridge/node_modules');
    expect(readdirSync(nm)).not.toContain('typescript');
    expect(readdirSync(path.join(nm, '.bin'))).toEqual(['pino']);
    expect(readdirSync(nm)).toEqual(expect.arrayContaining(['koffi', 'pino', 'valibot', '@koromix', '@serialport']));
    expect(r.out).toMatch(/^peer credentials: read in process \(getsockopt through koffi /m);
    // Only the stage's links went: the real tree the fake npm linked to still has TypeScript.
    expect(existsSync(path.join(repo, 'node_modules/typescript/package.json'))).toBe(true);
    expect(existsSync(path.join(repo, 'node_modules/.bin/tsc'))).toBe(true);
  });

  it("stops when npm ci left out koffi's binary for this machine (npm drops a failed optional package silently)", () => {
    const r = install([], { DROP_KOFFI_BINARY: '1' });
    expect(r.code).toBe(1);
    expect(errors(r.err)).toEqual([
      "error: npm ci left out @koromix/koffi-linux-x64 (koffi's binary for this machine, an optional package: npm drops one whose download or integrity check against package-lock.json fails): the installed version is left as it was",
    ]);
    expect(existsSync(at('opt/pulsa-bridge'))).toBe(false);
  });

  it('stops before the production install when the lock has a devOptional package besides TypeScript', () => {
    const lockFile = path.join(checkout, 'package-lock.json');
    const lock = JSON.parse(readFileSync(lockFile, 'utf8'));
    expect(lock.packages['node_modules/typescript'].devOptional).toBe(true);
    lock.packages['node_modules/tslib'].devOptional = true;
    writeFileSync(lockFile, JSON.stringify(lock, null, 2));
    utimesSync(lockFile, new Date(), new Date(Date.now() - 600_000));
    const r = install();
    expect(r.code).toBe(1);
    expect(errors(r.err)).toEqual([
      'error: package-lock.json has devOptional packages besides typescript (node_modules/tslib): the production tree would keep them, and install.sh removes TypeScript alone: the installed version is left as it was',
    ]);
    expect(npmCalls()).toEqual([`${checkout}|run build`]);
    expect(existsSync(at('opt/pulsa-bridge'))).toBe(false);
  });

  it('does not enable the service on the example config: prints the next steps instead', () => {
    const r = install();
    expect(r.code, r.all).toBe(0);
    expect(r.out).toMatch(
      /still holds the example values \(line \d+: "baseUrl": "https:\/\/convert\.example\.com[^)]*"port": "\/dev\/serial\/by-id\/[^"]*0123456789ABCDEF[^"]*"\): the service is not enabled yet/,
    );
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

  it("reads the unit's EnvironmentFile for the check: a config with an env: secret passes, as the service sees it", () => {
    expect(install().code).toBe(0);
    const modem = {
      name: 'tsel-1',
      port: '/dev/serial/by-id/usb-SimTech_SIM7600_A1B2-if02-port0',
      senders: ['858'],
      pin: 'env:PB_TEST_PIN',
    };
    editConfig({ modems: [modem] });
    // Without the env file the secret is missing: not enabled, and the reason shown.
    const without = install([], { PB_TEST_PIN: '' });
    expect(without.code, without.all).toBe(0);
    expect(without.out).toContain('environment variable PB_TEST_PIN is not set');
    expect(without.all).not.toMatch(/skipped \(--no-systemctl\): systemctl (enable|restart)/);
    // systemd's syntax: comments, blank lines, quotes; a line that is not KEY=VALUE is never run.
    const marker = path.join(tmp, 'ran');
    writeFileSync(
      at('etc/pulsa-bridge/env'),
      `# SIM PIN\n\n; other comment\n  PB_TEST_PIN = "1234"\ntouch ${marker}\n$(touch ${marker})=x\n`,
      { mode: 0o600 },
    );
    const r = install();
    expect(r.code, r.all).toBe(0);
    expect(r.out).not.toContain('does not pass the check');
    expect(r.out).toContain('skipped (--no-systemctl): systemctl restart pulsa-bridge.service');
    expect(existsSync(marker)).toBe(false);
    // Variables that change how a program starts never reach the root step that runs node.
    const preload = path.join(tmp, 'preloaded');
    writeFileSync(path.join(tmp, 'evil.cjs'), `require('fs').writeFileSync(${JSON.stringify(preload)}, 'x')`);
    writeFileSync(
      at('etc/pulsa-bridge/env'),
      `PB_TEST_PIN=1234\nNODE_OPTIONS=--require ${path.join(tmp, 'evil.cjs')}\nLD_PRELOAD=/nonexistent/evil.so\n`,
      { mode: 0o600 },
    );
    const guarded = install();
    expect(guarded.code, guarded.all).toBe(0);
    expect(guarded.out).not.toContain('does not pass the check');
    expect(existsSync(preload)).toBe(false);
    expect(guarded.all).not.toContain('evil.so');
    // A file its group or others may write is not trusted.
    for (const mode of [0o666, 0o620]) {
      chmodSync(at('etc/pulsa-bridge/env'), mode);
      const open = install();
      expect(open.out).toContain('does not pass the check');
      expect(open.all).toContain(
        "is not read for the config check: it must be a file of root's, writable by root alone",
      );
    }
  });

  it("takes node only from root's own paths: a node in a directory others can write is refused", () => {
    const shared = path.join(tmp, 'shared-bin');
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    symlinkSync(process.execPath, path.join(shared, 'node'));
    const r = install([], { PATH: `${shared}:${bin}:${process.env.PATH}` });
    expect(r.code).not.toBe(0);
    expect(r.err).toContain(`node is ${path.join(shared, 'node')}, and ${shared} (mode 777) is not root's alone`);
  });

  it('--prefix never takes a system directory or a directory that is not a pulsa-bridge install', () => {
    for (const prefix of [
      '/',
      '/usr',
      '/usr/local',
      '/opt',
      '/home',
      '/usr/lib',
      '/var/lib',
      '/home/pi',
      '/usr/local/bin',
      '/opt/../usr',
      '/etc/',
    ]) {
      const r = install(['--prefix', prefix]);
      expect(r.code, `${prefix}: ${r.all}`).toBe(2);
      expect(r.err).toMatch(/install\.sh: --prefix \S+( is a system directory|: give a plain path)/);
    }
    // An existing directory with other things in it: neither replaced by an install nor deleted by --uninstall.
    const other = at('srv/tools');
    mkdirSync(path.join(other, 'bin'), { recursive: true });
    writeFileSync(path.join(other, 'bin/tool'), 'keep');
    for (const args of [
      ['--prefix', '/srv/tools'],
      ['--prefix', '/srv/tools', '--uninstall'],
    ]) {
      const r = install(args);
      expect(r.code, r.all).toBe(1);
      expect(errors(r.err)).toEqual([
        `error: ${other} exists and is not a pulsa-bridge install (no bin/pulsa-bridge and package.json naming pulsa-bridge): it is left alone; choose another --prefix`,
      ]);
      expect(readFileSync(path.join(other, 'bin/tool'), 'utf8')).toBe('keep');
      expect(npmCalls()).toEqual([]);
    }
    // A previous install (and an empty directory) are fine.
    mkdirSync(at('srv/empty'), { recursive: true });
    expect(install(['--prefix', '/srv/empty']).code).toBe(0);
    expect(install(['--prefix', '/srv/empty']).code).toBe(0);
    expect(install(['--prefix', '/srv/empty', '--uninstall']).code).toBe(0);
    expect(existsSync(at('srv/empty'))).toBe(false);
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

  const byId = 'usb-SimTech__Incorporated_SimTech__Incorporated_0123456789ABCDEF-if02-port0';
  beforeEach(() => {
    writeFileSync(path.join(root, 'dev/ttyUSB2'), '');
    symlinkSync('../../ttyUSB2', path.join(root, 'dev/serial/by-id', byId));
  });

  it('marks only the named modems ID_MM_DEVICE_IGNORE (by-id path and USB serial), no vendor-wide match', () => {
    const r = install(['--modem', `/dev/serial/by-id/${byId}`], {
      PULSA_BRIDGE_MODEMS: 'A1B2C3D4',
    });
    expect(r.code, r.all).toBe(0);
    const text = rule();
    const active = text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
    expect(active).toEqual([
      'ACTION=="remove", GOTO="pulsa_bridge_end"',
      'SUBSYSTEM!="tty|usb", GOTO="pulsa_bridge_end"',
      'ATTRS{serial}=="A1B2C3D4", ENV{ID_MM_DEVICE_IGNORE}="1"',
      'SUBSYSTEM=="tty", ATTRS{serial}=="A1B2C3D4", ENV{ID_MM_CANDIDATE}="0", OWNER="pulsa-bridge", GROUP="root", MODE="0600"',
      'ENV{ID_SERIAL}=="SimTech__Incorporated_SimTech__Incorporated_0123456789ABCDEF", ENV{ID_MM_DEVICE_IGNORE}="1"',
      'SUBSYSTEM=="tty", ENV{ID_SERIAL}=="SimTech__Incorporated_SimTech__Incorporated_0123456789ABCDEF", ENV{ID_MM_CANDIDATE}="0", OWNER="pulsa-bridge", GROUP="root", MODE="0600"',
      'LABEL="pulsa_bridge_end"',
    ]);
    expect(text).not.toContain('idVendor');
    // ModemManager is told: the change event makes it drop a port that is no longer a candidate.
    expect(r.out).toContain('skipped (--no-reload): udevadm control --reload');
    expect(r.out).toContain('skipped (--no-reload): udevadm trigger --action=change --subsystem-match=tty');
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
    expect(errors(r.err)).toEqual([
      'pulsa-bridge-modems: bad"serial: a USB serial number has letters, digits, . _ : + - only',
    ]);
    const notById = install(['--modem', '/dev/serial/by-id/not-a-usb-name']);
    expect(notById.code).toBe(1);
    const absent = install(['--modem', '/dev/serial/by-id/usb-Quectel_EC25_0000-if02-port0']);
    expect(absent.code).toBe(1);
    expect(errors(absent.err)).toEqual([
      'pulsa-bridge-modems: /dev/serial/by-id/usb-Quectel_EC25_0000-if02-port0 does not exist: plug the modem in and pick its path from ls /dev/serial/by-id/, or give its USB serial number',
    ]);
    // Checked before anything is built or installed.
    expect(npmCalls()).toEqual([]);
    expect(existsSync(at('opt/pulsa-bridge'))).toBe(false);
  });
});

describe('install.sh: what must stop it, and what it leaves running', () => {
  it('an addon that does not load stops the install before the swap; the old install stays whole', () => {
    expect(install().code).toBe(0);
    const before = readFileSync(at('opt/pulsa-bridge/dist/src/cli.js'), 'utf8');
    const r = install([], { BROKEN_ADDON: '1' });
    expect(r.code).toBe(1);
    expect(errors(r.err)).toHaveLength(1);
    expect(errors(r.err)[0]).toMatch(
      /^error: the serial addon does not load with Node\.js v\d+\.\d+\.\d+ on linux-x64 \(Cannot find module '@serialport\/bindings-cpp\/package\.json'.*\): the installed version is left as it was/,
    );
    expect(readFileSync(at('opt/pulsa-bridge/dist/src/cli.js'), 'utf8')).toBe(before);
    expect(existsSync(at('opt/pulsa-bridge/node_modules/@serialport/bindings-cpp'))).toBe(true);
    expect(existsSync(at('opt/pulsa-bridge.new'))).toBe(false);
  });

  it('a running service is not swapped onto a config the new version refuses', () => {
    expect(install().code).toBe(0);
    editConfig({ modems: [] });
    const record = at('var/lib/pulsa-bridge/spool/pending/sms-1.json');
    mkdirSync(path.dirname(record), { recursive: true });
    writeFileSync(record, '{"pending":true}');
    writeFileSync(path.join(bin, 'systemctl'), '#!/bin/sh\n[ "$1" = is-active ] && exit 0\nexit 1\n');
    chmodSync(path.join(bin, 'systemctl'), 0o755);
    const stale = at('opt/pulsa-bridge/dist/src/old-module.js');
    writeFileSync(stale, 'export {};\n');
    const r = install();
    expect(r.code).toBe(1);
    expect(errors(r.err)).toHaveLength(1);
    expect(errors(r.err)[0]).toMatch(
      /^error: \S+config\.json does not pass version 0\.1\.0's check \(.*modems.*\): the running service and its install are left as they were; fix the config \(pulsa-bridge config check\) and run this again$/,
    );
    expect(existsSync(stale)).toBe(true);
    expect(readFileSync(record, 'utf8')).toBe('{"pending":true}');
  });

  it('a second install while one runs stops at once', () => {
    mkdirSync(at('run/lock'), { recursive: true });
    const holder = spawnSync(
      'flock',
      [
        at('run/lock/pulsa-bridge-install.lock'),
        'bash',
        '-c',
        `${['bash', path.join(checkout, 'systemd/install.sh')].join(' ')} --destdir ${dest} --no-systemctl 2>&1; true`,
      ],
      {
        encoding: 'utf8',
        env: {
          ...process.env,
          PATH: `${bin}:${process.env.PATH}`,
          NPM_LOG: npmLog,
          PULSA_BRIDGE_DEV_ROOT: root,
          PULSA_BRIDGE_OS_RELEASE: path.join(tmp, 'os-release'),
        },
      },
    );
    expect(holder.stdout.trim()).toBe(
      `error: another install.sh is running (lock ${at('run/lock/pulsa-bridge-install.lock')}): wait for it to finish`,
    );
    expect(npmCalls()).toEqual([]);
  });

  it("a kernel console on the modem's UART is named with the command that frees it; the service is not started", () => {
    expect(install().code).toBe(0);
    editConfig({ modems: [{ name: 'sim800', port: '/dev/serial0', senders: ['858'] }] });
    writeFileSync(path.join(root, 'dev/ttyS0'), '');
    symlinkSync('ttyS0', path.join(root, 'dev/serial0'));
    const env = fakeOs({
      codename: 'bookworm',
      arch: 'arm64',
      kernel: 'aarch64',
      cmdline: 'console=serial0,115200 console=tty1 root=PARTUUID=1-02 rootwait',
    });
    const r = install([], env);
    expect(r.code, r.all).toBe(0);
    expect(r.err).toContain(
      'warning: /dev/serial0 (ttyS0) carries the kernel console (console=serial0,115200 in /proc/cmdline): free it with sudo raspi-config nonint do_serial_cons 1, then reboot',
    );
    expect(r.out).toContain("the service is not (re)started while the kernel console is on the modem's port");
    expect(r.all).not.toMatch(/skipped \(--no-systemctl\): systemctl (enable|restart)/);
    // Without the console on it, the same config starts the service.
    const free = install([], fakeOs({ codename: 'bookworm', arch: 'arm64', kernel: 'aarch64' }));
    expect(free.all).not.toContain('kernel console');
    expect(free.out).toContain('skipped (--no-systemctl): systemctl restart pulsa-bridge.service');
  });

  it('offers the control groups: --operator adds a user to both', () => {
    const r = install(['--operator', 'root']);
    expect(r.code, r.all).toBe(0);
    expect(r.out).toContain('skipped (--destdir): usermod -aG pulsa-bridge,pulsa-bridge-ops root');
    const nobody = install(['--operator', 'no-such-user-here']);
    expect(nobody.code).toBe(1);
    expect(errors(nobody.err)).toEqual(['error: --operator no-such-user-here: no such user']);
  });

  it.runIf(process.getuid?.() === 0)("builds as the checkout's owner, not root", () => {
    chmodSync(tmp, 0o755);
    writeFileSync(npmLog, '');
    writeFileSync(`${npmLog}.users`, '');
    chmodSync(npmLog, 0o666);
    chmodSync(`${npmLog}.users`, 0o666);
    const run = spawnSync('chown', ['-R', 'nobody', checkout]);
    expect(run.status).toBe(0);
    // The fake npm's build copies the real dist/ as that owner: from a copy it can read, whatever the repository's own
    // parent directory allows (a clone in a 0700 `mktemp -d` is closed to nobody).
    const dist = path.join(tmp, 'real-dist');
    cpSync(path.join(repo, 'dist'), dist, { recursive: true });
    const r = install([], { REAL_DIST: dist });
    expect(r.code, r.all).toBe(0);
    const users = readFileSync(`${npmLog}.users`, 'utf8').trim().split('\n');
    expect(users).toEqual(['nobody', 'nobody']);
  });
});
