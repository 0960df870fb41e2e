#!/usr/bin/env bash
# Installs, upgrades or removes pulsa-bridge as a systemd service on a Raspberry Pi (or any Debian-like host).
#
#   sudo ./systemd/install.sh [--modem SERIAL|BY-ID-PATH]...     install or upgrade
#   sudo ./systemd/install.sh --uninstall [--purge]               remove (the spool and config stay unless --purge)
#
# Contract:
# - Node.js: the `node` found on PATH (command -v) is the one the unit runs (ExecStart). 22 or 24 (LTS) are supported;
#   20 runs with a warning (past its end of life); older stops the install with how to get a supported one.
# - The checkout is only built (npm ci when its dev tools are missing, npm run build); it is never pruned. The install
#   directory is assembled next to the old one (PREFIX.new: dist, bin, package files, `npm ci --omit=dev`) and swapped
#   in whole, so an upgrade leaves no stale file and a failed one leaves the old install running.
# - /etc/pulsa-bridge/config.json and the spool (/var/lib/pulsa-bridge) are never overwritten; --purge removes them.
# - The service is enabled and (re)started only when the config is no longer the example and `config check` passes;
#   otherwise the next steps are printed.
# - The udev rule marks only the modems named with --modem (or PULSA_BRIDGE_MODEMS) ID_MM_DEVICE_IGNORE=1, so
#   ModemManager keeps every other modem (an LTE uplink stick). Without names an installed rule is kept as it is.
#
# Options (also for packaging and tests):
#   --prefix DIR      install directory (default /opt/pulsa-bridge)
#   --destdir DIR     prepend DIR to every system path (or DESTDIR=DIR); no user is created, no owner changed
#   --no-systemctl    do not run systemctl or udevadm (print what would run)
#   --modem SPEC      a modem ModemManager must leave alone: its USB serial number (`udevadm info -q property
#                     /dev/ttyUSB2 | grep ID_SERIAL_SHORT`) or its /dev/serial/by-id/ path; repeatable.
#                     PULSA_BRIDGE_MODEMS="SPEC SPEC" does the same.
#   --uninstall, --purge
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=/opt/pulsa-bridge
ROOT=${DESTDIR:-}
SYSTEMCTL=1
MODE=install
PURGE=0
MODEMS=()
for spec in ${PULSA_BRIDGE_MODEMS:-}; do MODEMS+=("$spec"); done

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
    --uninstall) MODE=uninstall; shift ;;
    --purge) PURGE=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$PREFIX" in /*) ;; *) echo "install.sh: --prefix must be an absolute path" >&2; exit 2 ;; esac
ROOT=${ROOT%/}

ETC=$ROOT/etc/pulsa-bridge
STATE=$ROOT/var/lib/pulsa-bridge
UNIT=$ROOT/etc/systemd/system/pulsa-bridge.service
RULE=$ROOT/etc/udev/rules.d/99-pulsa-bridge.rules
LINK=$ROOT/usr/local/bin/pulsa-bridge
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

if real_root && [ "$(id -u)" != 0 ]; then die "run as root: sudo $0 $*"; fi

uninstall() {
  sys systemctl disable --now pulsa-bridge.service || true
  rm -f "$UNIT" "$RULE" "$LINK"
  sys systemctl daemon-reload || true
  sys udevadm control --reload || true
  rm -rf "$DEST" "$DEST.new" "$DEST.old"
  if [ "$PURGE" = 1 ]; then
    rm -rf "$STATE" "$ETC"
    if real_root && id pulsa-bridge >/dev/null 2>&1; then userdel pulsa-bridge || warn "could not remove the user pulsa-bridge"; fi
    say "removed pulsa-bridge, its config, its spool and its user"
  else
    say "removed pulsa-bridge; kept the config ($ETC) and the spool ($STATE): --purge removes them"
  fi
}
if [ "$MODE" = uninstall ]; then uninstall; exit 0; fi

# --- udev lines for the modems named (checked before anything is built or written) --------------------------------
udev_lines() {
  local spec name serial
  for spec in "${MODEMS[@]}"; do
    name=${spec#/dev/serial/by-id/}
    if [ "$name" != "$spec" ] || [[ "$spec" == usb-* ]]; then
      # by-id name: usb-<ID_SERIAL>-if<NN>[-port<N>] (60-serial.rules); every port of that modem is ignored.
      [[ "$name" =~ ^usb-(.+)-if[0-9A-Fa-f]{2}(-port[0-9]+)?$ ]] || die "--modem $spec: not a /dev/serial/by-id/usb-...-ifNN path"
      serial=${BASH_REMATCH[1]}
      [[ "$serial" =~ ^[A-Za-z0-9._:+-]+$ ]] || die "--modem $spec: unexpected characters"
      printf '# %s\nENV{ID_SERIAL}=="%s", ENV{ID_MM_DEVICE_IGNORE}="1"\nSUBSYSTEM=="tty", ENV{ID_SERIAL}=="%s", GROUP="dialout", MODE="0660"\n' "$spec" "$serial" "$serial"
    else
      [[ "$spec" =~ ^[A-Za-z0-9._:+-]+$ ]] || die "--modem $spec: a USB serial number has letters, digits, . _ : + - only"
      printf '# USB serial %s\nATTRS{serial}=="%s", ENV{ID_MM_DEVICE_IGNORE}="1"\nSUBSYSTEM=="tty", ATTRS{serial}=="%s", GROUP="dialout", MODE="0660"\n' "$spec" "$spec" "$spec"
    fi
  done
}
UDEV_LINES=$(udev_lines) || exit 1


# --- Node.js -----------------------------------------------------------------------------------------------------
node_help() {
  local arch
  case "$(uname -m)" in
    aarch64|arm64) arch=arm64 ;;
    armv7l) arch=armv7l ;;
    x86_64) arch=x64 ;;
    *) arch="$(uname -m)" ;;
  esac
  cat >&2 <<EOF
Raspberry Pi OS Bookworm ships Node.js 18 and Trixie Node.js 20. To get a supported LTS (22 or 24):
  NodeSource (apt, keeps itself updated):
    curl -fsSL https://deb.nodesource.com/setup_22.x -o nodesource_setup.sh
    sudo bash nodesource_setup.sh && sudo apt-get install -y nodejs
  or the official tarball for this machine ($arch) into /usr/local:
    https://nodejs.org/dist/latest-v22.x/  (node-v22.*-linux-$arch.tar.xz)
    sudo tar -xJf node-v22.*-linux-$arch.tar.xz -C /usr/local --strip-components=1
  (32-bit Pi OS: armv7l; a Pi Zero/1 (armv6l) has no official build.) Then check \`command -v node\` and
  \`node --version\`, and run this script again: the service will use that node.
EOF
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
NODE_VERSION=$(env -u NODE_OPTIONS "$NODE" --version 2>/dev/null || true)
NODE_MAJOR=${NODE_VERSION#v}; NODE_MAJOR=${NODE_MAJOR%%.*}
case "$NODE_MAJOR" in ''|*[!0-9]*) die "cannot tell the version of $NODE (node --version said: ${NODE_VERSION:-nothing})" ;; esac
if [ "$NODE_MAJOR" -lt 20 ]; then
  echo "error: Node.js $NODE_VERSION ($NODE) is too old: pulsa-bridge needs Node.js 22 or 24 (20 runs, past its end of life)." >&2
  node_help
  exit 1
elif [ "$NODE_MAJOR" -lt 22 ]; then
  warn "Node.js $NODE_VERSION ($NODE) is past its end of life: it runs, but upgrade to 22 or 24 LTS:"
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
[ -n "$NPM" ] || die "npm not found next to node (Debian: apt-get install npm; NodeSource and the tarball include it)"
say "using Node.js $NODE_VERSION at $NODE"

# --- user ---------------------------------------------------------------------------------------------------------
if real_root; then
  id pulsa-bridge >/dev/null 2>&1 || useradd --system --home-dir /var/lib/pulsa-bridge --no-create-home --shell /usr/sbin/nologin pulsa-bridge
  usermod -aG dialout pulsa-bridge
fi

# --- build in the checkout (never pruned), assemble PREFIX.new, swap ---------------------------------------------
cd "$SRC"
[ -x node_modules/.bin/tsc ] || "$NPM" ci --no-audit --no-fund
rm -rf dist
"$NPM" run build
[ -f dist/src/cli.js ] || die "the build did not produce dist/src/cli.js"

rm -rf "$DEST.new" "$DEST.old"
install -d -m 0755 "$DEST.new"
cp -R dist bin "$DEST.new/"
cp package.json package-lock.json README.md config.example.json "$DEST.new/"
(cd "$DEST.new" && "$NPM" ci --omit=dev --no-audit --no-fund)
if [ -e "$DEST" ]; then mv "$DEST" "$DEST.old"; fi
mv "$DEST.new" "$DEST"
rm -rf "$DEST.old"
install -d -m 0755 "$(dirname "$LINK")"
ln -sfn "$PREFIX/bin/pulsa-bridge" "$LINK"
say "installed $PREFIX"

# --- config and spool (kept) --------------------------------------------------------------------------------------
install -d -m 0750 "$ETC"
real_root && chgrp pulsa-bridge "$ETC"
CONFIG=$ETC/config.json
if [ ! -f "$CONFIG" ]; then
  sed 's#"dir": "./spool"#"dir": "/var/lib/pulsa-bridge/spool"#' config.example.json > "$CONFIG"
  chmod 0640 "$CONFIG"
  real_root && chgrp pulsa-bridge "$CONFIG"
  say "wrote $CONFIG from config.example.json"
fi
install -d -m 0750 "$STATE"
real_root && chown pulsa-bridge:pulsa-bridge "$STATE"

# --- udev rule: only the modems named ---------------------------------------------------------------------------
install -d -m 0755 "$(dirname "$RULE")"
if [ "${#MODEMS[@]}" -gt 0 ]; then
  awk -v lines="$UDEV_LINES" '$0 == "# @MODEMS@" { print lines; next } { print }' systemd/99-pulsa-bridge.rules.in > "$RULE.tmp"
  chmod 0644 "$RULE.tmp"; mv "$RULE.tmp" "$RULE"
  say "wrote $RULE for ${#MODEMS[@]} modem(s)"
  sys udevadm control --reload || true
  sys udevadm trigger --subsystem-match=tty --subsystem-match=usb --action=change || true
elif [ -f "$RULE" ]; then
  say "kept $RULE (name the modems with --modem to rewrite it)"
else
  say "no udev rule written: ModemManager may take the modems' ports. Name them (USB serial or /dev/serial/by-id/ path):"
  say "  sudo $0 --modem /dev/serial/by-id/usb-...-if02-port0     (pulsa-bridge ports lists them)"
fi

# --- unit: the node found above, the prefix chosen -----------------------------------------------------------------
install -d -m 0755 "$(dirname "$UNIT")"
sed -e "s#^ExecStart=/usr/bin/node \(.*\) /opt/pulsa-bridge/#ExecStart=$NODE \1 $PREFIX/#" \
    -e "s#file:///opt/pulsa-bridge/#file://$PREFIX/#" systemd/pulsa-bridge.service > "$UNIT.tmp"
chmod 0644 "$UNIT.tmp"; mv "$UNIT.tmp" "$UNIT"
sys systemctl daemon-reload

# --- enable only an edited, valid config -------------------------------------------------------------------------
next_steps() {
  say ""
  say "next steps:"
  say "  1. sudoedit /etc/pulsa-bridge/config.json    webhook.baseUrl, modems[].port (pulsa-bridge ports), modems[].senders"
  say "  2. pulsa-bridge config check /etc/pulsa-bridge/config.json"
  say "  3. sudo systemctl enable --now pulsa-bridge"
  say "  4. journalctl -u pulsa-bridge -f    (journalctl -u pulsa-bridge -p warning: problems only)"
}
if grep -q -e 'convert\.example\.com' -e '0123456789ABCDEF' "$CONFIG"; then
  say "$CONFIG still holds the example values: the service is not enabled yet."
  next_steps
elif ! check=$("$NODE" "$DEST/bin/pulsa-bridge" config check "$CONFIG" 2>&1 >/dev/null); then
  say "$CONFIG does not pass the check, the service is not (re)started:"
  say "$check"
  next_steps
else
  sys systemctl enable pulsa-bridge.service
  sys systemctl restart pulsa-bridge.service
  sys systemctl --no-pager status pulsa-bridge.service || true
  say "pulsa-bridge is running: journalctl -u pulsa-bridge -f"
fi
