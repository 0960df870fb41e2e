#!/usr/bin/env bash
# Installs, upgrades or removes pulsa-bridge from a checkout as a systemd service on a Raspberry Pi (or any
# Debian-like host). The Debian package (`npm run package`, docs/install.md) needs no build on the
# Pi; this script is for those who build from a checkout.
#
#   sudo ./systemd/install.sh [--modem SPEC]... [--operator USER]   install or upgrade
#   sudo ./systemd/install.sh --uninstall [--purge]                  remove (the spool and config stay unless --purge)
#
# Contract:
# - Node.js: the `node` found on PATH (command -v) is the one the unit runs (ExecStart). 22 or 24 are supported, and
#   Debian's own nodejs 20 (Trixie: patched by Debian); another Node 20 runs with a warning (past its end of life);
#   older stops the install with what really exists for this architecture (`dpkg --print-architecture`: a Pi 4/5 on
#   the 32-bit OS boots a 64-bit kernel, but only armhf programs run there) and this OS.
# - Everything npm runs (npm ci when the checkout's dev tools are missing or package-lock.json changed since, npm run
#   build, the production install) runs as the checkout's owner, not root, and no package's install script runs
#   (--ignore-scripts): koffi's rebuilds koffi from source wherever its prebuilt binary does not load (cmake, minutes;
#   without cmake npm ci fails and so would the install), which is an ARMv6 Pi or 32-bit Raspberry Pi OS older than
#   Bookworm, exactly where the daemon asks perl instead; the serial addon's prebuilt binary is found at run time.
#   The install directory is assembled next to the old one (PREFIX.new: dist, bin, package files, `npm ci --omit=dev
#   --include=optional`, TypeScript then removed from it), the serial addon is loaded from it with the unit's node and
#   flags, and it is swapped in whole only then: a failed install leaves the old one as it was.
# - koffi's binary for this machine (the daemon reads its control clients' peer credentials in process through it;
#   without it, perl once per connection) is an optional package: the production npm ci keeps optional packages, so
#   npm adds this platform's, checked against the lock's integrity (on an ARMv6 Pi it is there but never loaded:
#   koffi's arm binary is ARMv7 code). TypeScript, the lock's one devOptional package (a dev dependency and valibot's
#   optional peer), comes with them and is removed after npm ci; a lock with another devOptional package stops the
#   install before it. The new tree's in-process read is then tried on a connection of its own: a read that gives
#   another peer stops the install; one that cannot load says why (perl then).
# - A running service is restarted only on a config that the new version accepts; otherwise the install stops before
#   the swap and the service goes on as it was. /etc/pulsa-bridge/config.json and the spool (/var/lib/pulsa-bridge)
#   are never overwritten; --purge removes them.
# - The udev rule (pulsa-bridge-modems) marks only the modems named with --modem (or PULSA_BRIDGE_MODEMS) and makes
#   ModemManager let go of them now; every other modem (an LTE uplink stick) stays with it.
# - A kernel console on the modem's UART (/dev/serial0) is found in /proc/cmdline and named with the command that
#   frees it; the service is not started on it.
# - Groups: pulsa-bridge (the control socket: status, queue) and pulsa-bridge-ops (AT, USSD, SMS, test transfers).
#   The invoking user (sudo) is offered both; --operator USER adds USER without asking.
#
# Options (also for packaging and tests):
#   --prefix DIR      install directory (default /opt/pulsa-bridge); never a system directory, and an existing one
#                     only when empty or a pulsa-bridge install (it is replaced whole; --uninstall deletes it)
#   --destdir DIR     prepend DIR to every system path (or DESTDIR=DIR); no user is created, no owner changed
#   --no-systemctl    do not run systemctl or udevadm (print what would run)
#   --modem SPEC      a modem ModemManager must leave alone: its USB serial number (`udevadm info -q property
#                     /dev/ttyUSB2 | grep ID_SERIAL_SHORT`) or its /dev/serial/by-id/ path; repeatable.
#                     PULSA_BRIDGE_MODEMS="SPEC SPEC" does the same.
#   --operator USER   add USER to the groups pulsa-bridge and pulsa-bridge-ops
#   --uninstall, --purge
# Test hooks: PULSA_BRIDGE_OS_RELEASE (default /etc/os-release), PULSA_BRIDGE_CMDLINE (/proc/cmdline),
# PULSA_BRIDGE_DEV_ROOT (prefix of /dev), PULSA_BRIDGE_KERNEL_ARCH (uname -m).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=/opt/pulsa-bridge
ROOT=${DESTDIR:-}
SYSTEMCTL=1
MODE=install
PURGE=0
MODEMS=()
OPERATOR=
for spec in ${PULSA_BRIDGE_MODEMS:-}; do MODEMS+=("$spec"); done
OS_RELEASE=${PULSA_BRIDGE_OS_RELEASE:-/etc/os-release}
CMDLINE=${PULSA_BRIDGE_CMDLINE:-/proc/cmdline}
DEV_ROOT=${PULSA_BRIDGE_DEV_ROOT:-}

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) PREFIX=${2:?--prefix needs a directory}; shift 2 ;;
    --prefix=*) PREFIX=${1#*=}; shift ;;
    --destdir) ROOT=${2:?--destdir needs a directory}; shift 2 ;;
    --destdir=*) ROOT=${1#*=}; shift ;;
    --no-systemctl) SYSTEMCTL=0; shift ;;
    --modem) MODEMS+=("${2:?--modem needs a USB serial number or a /dev/serial/by-id/ path}"); shift 2 ;;
    --modem=*) MODEMS+=("${1#*=}"); shift ;;
    --operator) OPERATOR=${2:?--operator needs a user name}; shift 2 ;;
    --operator=*) OPERATOR=${1#*=}; shift ;;
    --uninstall) MODE=uninstall; shift ;;
    --purge) PURGE=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$PREFIX" in /*) ;; *) echo "install.sh: --prefix must be an absolute path" >&2; exit 2 ;; esac
while [ "$PREFIX" != / ] && [ "${PREFIX%/}" != "$PREFIX" ]; do PREFIX=${PREFIX%/}; done
# The prefix is replaced whole on install and deleted on --uninstall: never a system directory.
system_dir() { echo "install.sh: --prefix $PREFIX is a system directory, not an install directory (e.g. /opt/pulsa-bridge)" >&2; exit 2; }
case "$PREFIX" in
  *//*|*/./*|*/../*|*/.|*/..) echo "install.sh: --prefix $PREFIX: give a plain path (no ., .., //)" >&2; exit 2 ;;
  /usr/local/bin|/usr/local/sbin|/usr/local/lib|/usr/local/share|/usr/local/include|/usr/local/etc|/usr/local/src|/usr/local/games|/usr/local/man) system_dir ;;
  /*/*/*) ;;
  /usr/*|/var/*|/etc/*|/home/*|/root/*|/boot/*|/dev/*|/proc/*|/sys/*|/run/*|/lib*/*|/bin/*|/sbin/*|/tmp/*) system_dir ;;
  /*/*) ;;
  *) system_dir ;;
esac
ROOT=${ROOT%/}

ETC=$ROOT/etc/pulsa-bridge
STATE=$ROOT/var/lib/pulsa-bridge
UNIT=$ROOT/etc/systemd/system/pulsa-bridge.service
RULE=$ROOT/etc/udev/rules.d/99-pulsa-bridge.rules
LINK=$ROOT/usr/local/bin/pulsa-bridge
MODEMS_CMD=$ROOT/usr/local/sbin/pulsa-bridge-modems
DEST=$ROOT$PREFIX

say() { printf '%s\n' "$*"; }
warn() { printf 'warning: %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
# Runs systemctl/udevadm, or says what it would run.
sys() {
  if [ "$SYSTEMCTL" = 1 ]; then "$@"; else say "skipped (--no-systemctl): $*"; fi
}
# Root side effects on users and owners happen only on a real install (not under --destdir).
real_root() { [ -z "$ROOT" ]; }
# An existing install directory is replaced or deleted only when it is a pulsa-bridge install (or empty).
is_our_install() {
  [ -d "$1" ] && [ ! -L "$1" ] || return 1
  [ -z "$(ls -A "$1")" ] && return 0
  [ -f "$1/bin/pulsa-bridge" ] && grep -q '^ *"name": *"pulsa-bridge",\{0,1\} *$' "$1/package.json" 2>/dev/null
}
if [ -e "$DEST" ] || [ -L "$DEST" ]; then
  is_our_install "$DEST" || die "$DEST exists and is not a pulsa-bridge install (no bin/pulsa-bridge and package.json naming pulsa-bridge): it is left alone; choose another --prefix"
fi

if real_root && [ "$(id -u)" != 0 ]; then die "run as root: sudo $0 $*"; fi
if real_root && dpkg-query -W -f='${Status}' pulsa-bridge 2>/dev/null | grep -q 'ok installed'; then
  die "pulsa-bridge is installed as a Debian package: upgrade it with apt (sudo apt install ./pulsa-bridge_*_all.deb), or remove it first (sudo apt remove pulsa-bridge keeps the config and the spool)"
fi

uninstall() {
  sys systemctl disable --now pulsa-bridge.service || true
  rm -f "$UNIT" "$RULE" "$LINK" "$MODEMS_CMD"
  sys systemctl daemon-reload || true
  sys udevadm control --reload || true
  rm -rf "$DEST" "$DEST.new" "$DEST.old"
  if [ "$PURGE" = 1 ]; then
    rm -rf "$STATE" "$ETC"
    if real_root && id pulsa-bridge >/dev/null 2>&1; then userdel pulsa-bridge || warn "could not remove the user pulsa-bridge"; fi
    if real_root && getent group pulsa-bridge-ops >/dev/null; then groupdel pulsa-bridge-ops || warn "could not remove the group pulsa-bridge-ops"; fi
    say "removed pulsa-bridge, its config, its spool, its user and its groups"
  else
    say "removed pulsa-bridge; kept the config ($ETC) and the spool ($STATE): --purge removes them"
  fi
}
if [ "$MODE" = uninstall ]; then uninstall; exit 0; fi

# One install at a time: a second one waits for nothing and says so.
install -d -m 0755 "$ROOT/run/lock"
exec 9>"$ROOT/run/lock/pulsa-bridge-install.lock"
flock -n 9 || die "another install.sh is running (lock $ROOT/run/lock/pulsa-bridge-install.lock): wait for it to finish"

# --- udev lines for the modems named (checked before anything is built or written) --------------------------------
if [ "${#MODEMS[@]}" -gt 0 ]; then
  PULSA_BRIDGE_DEV_ROOT=$DEV_ROOT bash "$SRC/systemd/pulsa-bridge-modems" --lines "${MODEMS[@]}" >/dev/null || exit 1
fi

# --- this machine: userland architecture, OS ---------------------------------------------------------------------
# dpkg's architecture is what can run here: a Pi 4/5 on the 32-bit OS says aarch64 in uname -m but runs armhf.
KERNEL_ARCH=${PULSA_BRIDGE_KERNEL_ARCH:-$(uname -m)}
ARCH=$(dpkg --print-architecture 2>/dev/null || true)
if [ -z "$ARCH" ]; then
  case "$KERNEL_ARCH" in aarch64|arm64) ARCH=arm64 ;; armv6l|armv7l) ARCH=armhf ;; x86_64) ARCH=amd64 ;; *) ARCH=$KERNEL_ARCH ;; esac
fi
# armhf on an ARMv6 core (Pi 1, Zero): no official Node build at all.
if [ "$ARCH" = armhf ] && [ "$KERNEL_ARCH" = armv6l ]; then ARM_LEVEL=armv6; else ARM_LEVEL=; fi
CODENAME=$( (. "$OS_RELEASE" 2>/dev/null && printf '%s' "${VERSION_CODENAME:-}") || true)
OS_NAME=$( (. "$OS_RELEASE" 2>/dev/null && printf '%s' "${PRETTY_NAME:-}") || true)

# --- Node.js -----------------------------------------------------------------------------------------------------
# What really exists for this architecture and OS (docs/install.md: the table under step 1).
node_help() {
  local debian_node
  case "$CODENAME" in
    bookworm) debian_node="Debian's nodejs here is 18: too old" ;;
    trixie) debian_node="Debian's nodejs here is 20 and works: sudo apt-get install nodejs (then the .deb needs nothing else; this script also needs npm)" ;;
    *) debian_node="Debian's nodejs: Bookworm has 18 (too old), Trixie 20 (works)" ;;
  esac
  {
    say "Node.js for ${OS_NAME:-this system} on $ARCH${ARM_LEVEL:+ ($ARM_LEVEL)} (kernel $KERNEL_ARCH):"
    if [ "$ARCH" = armhf ] && [ "$KERNEL_ARCH" = aarch64 ]; then
      say "  this Pi boots a 64-bit kernel but runs the 32-bit OS: only armhf (armv7l) programs run here, no arm64 build."
    fi
    say "  - $debian_node"
    case "$ARCH${ARM_LEVEL:+-$ARM_LEVEL}" in
      arm64|amd64)
        local tar=arm64; [ "$ARCH" = amd64 ] && tar=x64
        say "  - NodeSource 22 or 24 (apt, keeps itself updated):"
        say "      curl -fsSL https://deb.nodesource.com/setup_22.x -o nodesource_setup.sh"
        say "      sudo bash nodesource_setup.sh && sudo apt-get install -y nodejs"
        say "  - or the nodejs.org tarball into /usr/local:"
        say "      https://nodejs.org/dist/latest-v22.x/  (node-v22.*-linux-$tar.tar.xz)"
        say "      sudo tar -xJf node-v22.*-linux-$tar.tar.xz -C /usr/local --strip-components=1" ;;
      armhf)
        say "  - Node.js 22 from nodejs.org (linux-armv7l; end of life 2027-04-30); there is no Node 24 for 32-bit Arm,"
        say "    and NodeSource's 22 for armhf stopped at 22.15:"
        say "      https://nodejs.org/dist/latest-v22.x/  (node-v22.*-linux-armv7l.tar.xz)"
        say "      sudo tar -xJf node-v22.*-linux-armv7l.tar.xz -C /usr/local --strip-components=1"
        [ "$CODENAME" = trixie ] || say "  - or move to Raspberry Pi OS Trixie, whose own nodejs 20 Debian keeps patched" ;;
      armhf-armv6)
        say "  - a Pi 1 / Zero (ARMv6) has no official Node build and no NodeSource one: use Trixie's own nodejs 20"
        say "    (sudo apt-get install nodejs), or unofficial-builds.nodejs.org's linux-armv6l 22 at your own risk" ;;
      *)
        say "  - https://nodejs.org/en/download (22 or 24 for linux-$ARCH)" ;;
    esac
    say "  Then check \`command -v node\` and \`node --version\`, and run this script again: the service will use that node."
  } >&2
}
NODE=$(command -v node || true)
[ -n "$NODE" ] || { echo "error: Node.js not found on PATH ($PATH)" >&2; node_help; exit 1; }
# The unit runs this path (not resolved: an alternatives link keeps working after a Node.js upgrade). A node under
# /home or /root (nvm) is hidden from the service by ProtectHome=true.
case "$NODE" in /*) ;; *) die "command -v node gave $NODE, not a path" ;; esac
case "$(readlink -f "$NODE")" in /home/*|/root/*)
  echo "error: node is $NODE: the service cannot run a node from a home directory (nvm); install it system-wide." >&2
  node_help; exit 1 ;;
esac
# The unit runs this node as the service, and this script runs it as root: it must come from root's own paths. Every
# directory on the way to it (the path on PATH and the file it resolves to) and the file itself belong to root and are
# not writable by group or others (a sticky directory such as /tmp passes): nobody else can put another node there.
unsafe_in_path() {
  local p=$1 u m
  while [ -n "$p" ]; do
    read -r u m < <(stat -c '%u %a' "$p" 2>/dev/null) || { printf '%s (cannot be read)' "$p"; return 0; }
    if [ "$u" != 0 ]; then printf '%s (owned by uid %s)' "$p" "$u"; return 0; fi
    if [ -d "$p" ] && [ -k "$p" ]; then :; elif (( 8#$m & 8#022 )); then printf '%s (mode %s)' "$p" "$m"; return 0; fi
    [ "$p" = / ] && return 1
    p=$(dirname "$p")
  done
  return 1
}
for node_path in "$(dirname "$NODE")" "$(readlink -f "$NODE")"; do
  if bad=$(unsafe_in_path "$node_path"); then
    die "node is $NODE, and $bad is not root's alone: anyone who can write there could replace the node this script runs as root and the service runs; install Node.js system-wide (apt, NodeSource or nodejs.org under /usr/local) and run this again"
  fi
done
NODE_VERSION=$(env -u NODE_OPTIONS "$NODE" --version 2>/dev/null || true)
NODE_MAJOR=${NODE_VERSION#v}; NODE_MAJOR=${NODE_MAJOR%%.*}
case "$NODE_MAJOR" in ''|*[!0-9]*)
  echo "error: cannot run $NODE (node --version said: ${NODE_VERSION:-nothing}): it is not a Node.js build for this machine ($ARCH)" >&2
  node_help; exit 1 ;;
esac
# Debian's own nodejs package (not NodeSource's, which is also named nodejs): Debian patches its 20 for Trixie's life.
DEBIAN_NODE=0
NODE_PKG=$(dpkg-query -S "$(readlink -f "$NODE")" 2>/dev/null | head -n 1 | cut -d: -f1 || true)
if [ "$NODE_PKG" = nodejs ] && [[ "$(dpkg-query -W -f='${Maintainer}' nodejs 2>/dev/null)" == *Debian* ]]; then
  DEBIAN_NODE=1
  NODE_PKG_VERSION=$(dpkg-query -W -f='${Version}' nodejs 2>/dev/null || true)
fi
if [ "$NODE_MAJOR" -lt 20 ]; then
  echo "error: Node.js $NODE_VERSION ($NODE) is too old: pulsa-bridge needs Node.js 20 or later (22 or 24, or Debian's own 20 on Trixie)." >&2
  node_help
  exit 1
elif [ "$NODE_MAJOR" -lt 22 ] && [ "$DEBIAN_NODE" = 1 ]; then
  say "Node.js $NODE_VERSION is Debian's own package (nodejs $NODE_PKG_VERSION): supported, Debian keeps it patched"
elif [ "$NODE_MAJOR" -lt 22 ]; then
  warn "Node.js $NODE_VERSION ($NODE) is past its end of life: it runs, but upgrade to 22 or 24 LTS (or use Debian's own nodejs 20 on Trixie):"
  node_help
fi
# The unit's node flags must be ones this node accepts: node stops at once on a flag it does not know ("bad option",
# exit 9), and the service would restart into that forever (Node 24 refuses --no-expose-wasm, which the unit once had).
UNIT_FLAGS=$(sed -n 's#^ExecStart=/usr/bin/node \(.*\) /opt/pulsa-bridge/bin/pulsa-bridge .*#\1#p' "$SRC/systemd/pulsa-bridge.service")
[ -n "$UNIT_FLAGS" ] || die "$SRC/systemd/pulsa-bridge.service has no 'ExecStart=/usr/bin/node FLAGS /opt/pulsa-bridge/bin/pulsa-bridge' line"
# Without the installer's NODE_OPTIONS: the service does not run with them (its own come from /etc/pulsa-bridge/env).
# shellcheck disable=SC2086 # the flags are separate words
if ! flags_said=$(env -u NODE_OPTIONS "$NODE" $UNIT_FLAGS -e '' 2>&1); then
  die "Node.js $NODE_VERSION ($NODE) refuses the service's node flags ($UNIT_FLAGS): ${flags_said:-no message}"
fi
NPM=$(command -v npm || true)
if [ -z "$NPM" ]; then
  if [ "$DEBIAN_NODE" = 1 ]; then
    die "npm not found: Debian packages it apart (sudo apt-get install npm: about 375 packages with a compiler), or install the Debian package of pulsa-bridge instead, which needs no npm and no build (docs/install.md)"
  fi
  die "npm not found next to $NODE: NodeSource's nodejs and the nodejs.org tarball include it; reinstall Node.js from one of them"
fi
say "using Node.js $NODE_VERSION at $NODE ($ARCH)"

# --- who builds: the checkout's owner, never root ----------------------------------------------------------------
BUILD_USER=
if [ "$(id -u)" = 0 ]; then
  owner=$(stat -c %U "$SRC")
  [ "$owner" = root ] || BUILD_USER=$owner
fi
as_builder() {
  if [ -n "$BUILD_USER" ]; then
    runuser -u "$BUILD_USER" -- env HOME="$(getent passwd "$BUILD_USER" | cut -d: -f6)" PATH="$PATH" "$@"
  else
    "$@"
  fi
}

# --- build in the checkout (never pruned), assemble the production tree, check it, swap -------------------------
cd "$SRC"
# npm ci when the dev tools are missing or the lock file changed since they were installed (a pull that changed the
# dependencies). No install scripts: only koffi and the serial addon have one, and tsc needs neither; koffi's would
# rebuild koffi from source where its prebuilt binary does not load (an ARMv6 Pi, 32-bit Raspberry Pi OS older than
# Bookworm: glibc < 2.34), failing npm ci without cmake. The serial addon finds its prebuilt binary when loaded.
if [ ! -x node_modules/.bin/tsc ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  as_builder "$NPM" ci --ignore-scripts --no-audit --no-fund
fi
as_builder rm -rf dist
as_builder "$NPM" run build
[ -f dist/src/cli.js ] || die "the build did not produce dist/src/cli.js"

STAGE=$(mktemp -d "${TMPDIR:-/tmp}/pulsa-bridge-stage.XXXXXX")
trap 'rm -rf "$STAGE" "$DEST.new"' EXIT
[ -z "$BUILD_USER" ] || chown "$BUILD_USER" "$STAGE"
as_builder cp -R dist bin web package.json package-lock.json README.md docs config.example.json systemd/addon-check.cjs \
  systemd/peer-check.cjs "$STAGE/"
as_builder rm -rf "$STAGE/dist/bench" "$STAGE/dist/test"
# The production tree: no dev dependencies; the optional packages that fit this machine, among them koffi's binary
# (npm picks it by os and cpu and checks it against the lock's integrity; --include=optional whatever npm's own config
# says); no install scripts (the serial addon is prebuilt for linux x64, armv6, armv7 and arm64, and the check below
# says so when none fits). TypeScript is devOptional in the lock (a dev dependency, and valibot's optional peer): npm
# keeps such a package with --omit=dev unless optional ones go too, which would drop koffi's binary. So it is removed
# after npm ci, with the links to it in node_modules/.bin (tsc, tsserver); a lock with another devOptional package
# stops the install here, before anything is installed (it would stay in the tree unnoticed).
if ! devopt=$(env -u NODE_OPTIONS "$NODE" -e 'try { const l = require(process.argv[1]); if (!l.packages) throw new Error(`no "packages" (lockfileVersion ${l.lockfileVersion})`); console.log(Object.keys(l.packages).filter((k) => l.packages[k].devOptional && k !== "node_modules/typescript").join(" ")); } catch (e) { console.log(e.message.split("\n")[0]); process.exit(1); }' "$STAGE/package-lock.json"); then
  die "package-lock.json: its packages cannot be read ($devopt): the installed version is left as it was"
fi
[ -z "$devopt" ] || die "package-lock.json has devOptional packages besides typescript ($devopt): the production tree would keep them, and install.sh removes TypeScript alone: the installed version is left as it was"
(cd "$STAGE" && as_builder "$NPM" ci --omit=dev --include=optional --ignore-scripts --no-audit --no-fund)
# npm ci makes a directory of its own; anything else (a link to another tree) is not removed from.
if [ ! -d "$STAGE/node_modules" ] || [ -L "$STAGE/node_modules" ]; then
  die "npm ci made no node_modules directory in $STAGE: the installed version is left as it was"
fi
rm -rf "$STAGE/node_modules/typescript"
[ ! -d "$STAGE/node_modules/.bin" ] || find "$STAGE/node_modules/.bin" -xtype l -delete
# Where the daemon reads peers in process (linux x64, arm64, and arm on ARMv7 or later: src/control/server/
# peer-getsockopt.ts), koffi's package for this platform is in the tree now: a peer check below that cannot load it warns.
NODE_ARCH=$(env -u NODE_OPTIONS "$NODE" -p process.arch)
KOFFI_PKG=
case "$NODE_ARCH${ARM_LEVEL:+-$ARM_LEVEL}" in x64|arm64|arm) KOFFI_PKG=@koromix/koffi-linux-$NODE_ARCH ;; esac
# npm drops an optional package whose fetch or integrity check fails, and says nothing: that is no install.
if [ -n "$KOFFI_PKG" ] && [ -f "$STAGE/node_modules/koffi/package.json" ] && [ ! -f "$STAGE/node_modules/$KOFFI_PKG/package.json" ]; then
  die "npm ci left out $KOFFI_PKG (koffi's binary for this machine, an optional package: npm drops one whose download or integrity check against package-lock.json fails): the installed version is left as it was"
fi
rm -rf "$DEST.new" "$DEST.old"
install -d -m 0755 "$DEST.new"
cp -R "$STAGE/." "$DEST.new/"
real_root && chown -R root:root "$DEST.new"

# The new tree must start with the node and flags the unit will use, its addon loaded, before it replaces anything.
if ! addon=$(env -u NODE_OPTIONS "$NODE" "$DEST.new/addon-check.cjs" "$DEST.new" 2>&1); then
  die "$addon: the installed version is left as it was (a Pi needs linux armv6/armv7/arm64 with glibc >= 2.28; elsewhere: sudo apt-get install build-essential python3, then npm rebuild @serialport/bindings-cpp in $PREFIX)"
fi
say "serial addon: $addon"
# The daemon's in-process read of its clients' credentials, from the new tree with the node the unit runs: a read that
# gives another peer than the connection's own stops the install; one that does not load here says why (perl then,
# once per connection: expected on an ARMv6 Pi or another architecture, a warning where the daemon would use koffi).
peer_rc=0
peer=$(env -u NODE_OPTIONS "$NODE" "$DEST.new/peer-check.cjs" "$DEST.new" 2>&1) || peer_rc=$?
case "$peer_rc" in
  0) say "peer credentials: $peer" ;;
  2) if [ -n "$KOFFI_PKG" ]; then warn "peer credentials: $peer"; else say "peer credentials: $peer"; fi ;;
  *) die "peer credentials: $peer: the installed version is left as it was" ;;
esac
# shellcheck disable=SC2086
if ! new_version=$(env -u NODE_OPTIONS "$NODE" $UNIT_FLAGS "$DEST.new/bin/pulsa-bridge" --version 2>/dev/null); then
  die "the new build does not start (node $UNIT_FLAGS $DEST.new/bin/pulsa-bridge --version failed): the installed version is left as it was"
fi

CONFIG=$ETC/config.json
ENV_FILE=$ETC/env
# The unit's EnvironmentFile (KEY=VALUE lines: `env:NAME` secrets), exported for `config check` as systemd would pass
# them: parsed, never run; comments (# ;), blank lines and one pair of surrounding quotes as systemd reads them. Only a
# file owned by the installing user (root) and writable by nobody else (group or others) is read, and never a variable
# that changes how a program starts (LD_*, NODE_OPTIONS, ...): the check runs node as root. Call it in a subshell.
load_env_file() {
  local line key value
  [ -f "$1" ] || return 0
  if [ -L "$1" ] || [ "$(stat -c %u "$1")" != "$(id -u)" ] || [ -n "$(find "$1" -maxdepth 0 -perm /0022)" ]; then
    warn "$1 is not read for the config check: it must be a file of root's, writable by root alone (chown root: $1; chmod 600 $1)"; return 0
  fi
  while IFS= read -r line || [ -n "$line" ]; do
    line=${line#"${line%%[![:space:]]*}"}
    case "$line" in ''|'#'*|';'*) continue ;; esac
    key=${line%%=*}; [ "$key" != "$line" ] || continue
    key=${key%"${key##*[![:space:]]}"}
    case "$key" in ''|[0-9]*|*[!A-Za-z0-9_]*|PATH|LD_*|NODE_OPTIONS|NODE_PATH|NODE_REPL_EXTERNAL_MODULE|BASH_ENV|ENV|IFS|PS4|SHELLOPTS|BASHOPTS|GCONV_PATH|HOSTALIASES|LOCPATH|MALLOC_*|PYTHON*|PERL5*|RUBYOPT) continue ;; esac
    value=${line#*=}
    value=${value#"${value%%[![:space:]]*}"}
    value=${value%"${value##*[![:space:]]}"}
    case "$value" in \"*\"|\'*\') value=${value#?}; value=${value%?} ;; esac
    export "$key=$value"
  done < "$1"
}
config_check() { (load_env_file "$ENV_FILE" && "$NODE" "$1/bin/pulsa-bridge" config check "$CONFIG"); }
is_example() { grep -q -e 'convert\.example\.com' -e '0123456789ABCDEF' "$CONFIG"; }
service_active() { command -v systemctl >/dev/null && systemctl is-active --quiet pulsa-bridge.service 2>/dev/null; }
# A running service is never swapped onto a config the new version refuses: it would not come back after a restart.
if [ -f "$CONFIG" ] && ! is_example && ! check=$(config_check "$DEST.new" 2>&1 >/dev/null); then
  if service_active; then
    die "$CONFIG does not pass version $new_version's check ($(printf '%s\n' "$check" | sed -e 's/^error: //' -e 's/^ *- //' | head -n 4 | paste -sd ';' | sed 's/;/; /g')): the running service and its install are left as they were; fix the config (pulsa-bridge config check) and run this again"
  fi
fi

if [ -e "$DEST" ]; then mv "$DEST" "$DEST.old"; fi
mv "$DEST.new" "$DEST"
rm -rf "$DEST.old"
trap 'rm -rf "$STAGE"' EXIT
install -d -m 0755 "$(dirname "$LINK")" "$(dirname "$MODEMS_CMD")"
ln -sfn "$PREFIX/bin/pulsa-bridge" "$LINK"
say "installed $PREFIX (pulsa-bridge $new_version)"

# --- user and groups ----------------------------------------------------------------------------------------------
# pulsa-bridge: the service's own group, owner of the control socket (read level: status, queue);
# pulsa-bridge-ops: operate level (AT, USSD, SMS send, test transfers).
if real_root; then
  id pulsa-bridge >/dev/null 2>&1 || useradd --system --user-group --home-dir /var/lib/pulsa-bridge --no-create-home --shell /usr/sbin/nologin pulsa-bridge
  getent group pulsa-bridge-ops >/dev/null || groupadd --system pulsa-bridge-ops
  usermod -aG dialout pulsa-bridge
fi

# --- config and spool (kept) --------------------------------------------------------------------------------------
install -d -m 0750 "$ETC"
real_root && chgrp pulsa-bridge "$ETC"
if [ ! -f "$CONFIG" ]; then
  sed 's#"dir": "./spool"#"dir": "/var/lib/pulsa-bridge/spool"#' config.example.json > "$CONFIG"
  chmod 0640 "$CONFIG"
  real_root && chgrp pulsa-bridge "$CONFIG"
  say "wrote $CONFIG from config.example.json"
fi
install -d -m 0750 "$STATE"
real_root && chown pulsa-bridge:pulsa-bridge "$STATE"

# --- udev rule: only the modems named; ModemManager lets go of them now ------------------------------------------
install -m 0755 systemd/pulsa-bridge-modems "$MODEMS_CMD"
install -d -m 0755 "$ROOT/usr/local/share/pulsa-bridge"
install -m 0644 systemd/99-pulsa-bridge.rules.in "$ROOT/usr/local/share/pulsa-bridge/99-pulsa-bridge.rules.in"
if [ "${#MODEMS[@]}" -gt 0 ]; then
  reload=(); [ "$SYSTEMCTL" = 1 ] || reload=(--no-reload)
  PULSA_BRIDGE_DEV_ROOT=$DEV_ROOT bash "$SRC/systemd/pulsa-bridge-modems" --rules "$RULE" "${reload[@]}" "${MODEMS[@]}" ||
    warn "the rule is written, but ModemManager still holds a modem (above)"
elif [ -f "$RULE" ]; then
  say "kept $RULE (name the modems with --modem to rewrite it)"
else
  say "no udev rule written: ModemManager may take the modems' ports. Name them (USB serial or /dev/serial/by-id/ path):"
  say "  sudo pulsa-bridge-modems /dev/serial/by-id/usb-...-if02-port0     (pulsa-bridge ports lists them)"
fi

# --- a kernel console on the modem's UART (a SIM800 on the Pi's GPIO pins) -----------------------------------------
# The console and a login prompt (serial-getty) would talk to the modem. `raspi-config nonint do_serial_cons 1` turns
# both off (after a reboot); the UART itself stays on.
console_conflict=
tty_of() { local p=$DEV_ROOT$1; [ -e "$p" ] || [ -L "$p" ] || { printf '%s' "${1#/dev/}"; return; }; basename "$(readlink -f "$p")"; }
if [ -r "$CMDLINE" ] && [ -f "$CONFIG" ]; then
  for port in $(grep -o '"port": *"[^"]*"' "$CONFIG" | sed 's/.*"\([^"]*\)"$/\1/'); do
    case "$port" in /dev/serial0|/dev/serial1|/dev/ttyAMA*|/dev/ttyS*) ;; *) continue ;; esac
    port_tty=$(tty_of "$port")
    for arg in $(cat "$CMDLINE"); do
      case "$arg" in console=*) ;; *) continue ;; esac
      con=${arg#console=}; con=${con%%,*}
      if [ "$(tty_of "/dev/$con")" = "$port_tty" ]; then console_conflict="$port ($port_tty) carries the kernel console ($arg in /proc/cmdline)"; fi
    done
  done
fi
if [ -n "$console_conflict" ]; then
  warn "$console_conflict: free it with sudo raspi-config nonint do_serial_cons 1, then reboot"
fi

# --- unit: the node found above, the prefix chosen -----------------------------------------------------------------
install -d -m 0755 "$(dirname "$UNIT")"
sed -e "s#^ExecStart=/usr/bin/node \(.*\) /opt/pulsa-bridge/#ExecStart=$NODE \1 $PREFIX/#" \
    -e "s#file:///opt/pulsa-bridge/#file://$PREFIX/#" systemd/pulsa-bridge.service > "$UNIT.tmp"
chmod 0644 "$UNIT.tmp"; mv "$UNIT.tmp" "$UNIT"
sys systemctl daemon-reload

# --- operators: the control socket's groups -----------------------------------------------------------------------
add_operator() {
  if real_root; then
    usermod -aG pulsa-bridge,pulsa-bridge-ops "$1" && say "added $1 to pulsa-bridge and pulsa-bridge-ops (takes effect at the next login)"
  else
    say "skipped (--destdir): usermod -aG pulsa-bridge,pulsa-bridge-ops $1"
  fi
}
if [ -n "$OPERATOR" ]; then
  id "$OPERATOR" >/dev/null 2>&1 || die "--operator $OPERATOR: no such user"
  add_operator "$OPERATOR"
elif [ -n "${SUDO_USER:-}" ] && [ "$SUDO_USER" != root ] && ! id -nG "$SUDO_USER" 2>/dev/null | grep -qw pulsa-bridge-ops; then
  if [ -t 0 ]; then
    read -r -p "add $SUDO_USER to pulsa-bridge (status, queue) and pulsa-bridge-ops (AT, USSD, SMS, test transfers)? [y/N] " answer
    case "$answer" in y|Y|yes) add_operator "$SUDO_USER" ;; *) say "not added: sudo usermod -aG pulsa-bridge,pulsa-bridge-ops $SUDO_USER" ;; esac
  else
    say "operators: sudo usermod -aG pulsa-bridge $SUDO_USER (status, queue); add pulsa-bridge-ops for AT, USSD, SMS, test transfers"
  fi
fi

# --- enable only an edited, valid config -------------------------------------------------------------------------
next_steps() {
  say ""
  say "next steps:"
  say "  1. sudoedit /etc/pulsa-bridge/config.json    webhook.baseUrl, modems[].port (pulsa-bridge ports), modems[].senders"
  say "  2. pulsa-bridge config check /etc/pulsa-bridge/config.json"
  say "  3. sudo systemctl enable --now pulsa-bridge"
  say "  4. journalctl -u pulsa-bridge -f    (journalctl -u pulsa-bridge -p warning: problems only)"
}
if is_example; then
  example_values=$(grep -n -o -e '"[A-Za-z]*": *"[^"]*convert\.example\.com[^"]*"' -e '"[A-Za-z]*": *"[^"]*0123456789ABCDEF[^"]*"' "$CONFIG" | sed 's/^\([0-9]*\):/line \1: /' | paste -sd ';' | sed 's/;/; /g')
  say "$CONFIG still holds the example values ($example_values): the service is not enabled yet."
  next_steps
elif ! check=$(config_check "$DEST" 2>&1 >/dev/null); then
  say "$CONFIG does not pass the check, the service is not (re)started:"
  say "$check"
  next_steps
elif [ -n "$console_conflict" ]; then
  say "the service is not (re)started while the kernel console is on the modem's port (above)."
else
  sys systemctl enable pulsa-bridge.service
  sys systemctl restart pulsa-bridge.service
  sys systemctl --no-pager status pulsa-bridge.service || true
  say "pulsa-bridge is running: journalctl -u pulsa-bridge -f"
fi
