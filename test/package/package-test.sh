#!/usr/bin/env bash
# Package test (npm run test:package; root): the Debian package installed with apt on this machine, used, upgraded
# with a record pending, removed and purged.
#
#   1. build pulsa-bridge_V_all.deb (packaging/build-deb.sh, lintian included) and a rebuild with a higher version;
#   2. apt-get install ./V.deb: user, groups, owners, conffile, unit, wrapper; the example config: not enabled;
#   3. an invalid config: postinst (dpkg-reconfigure) says why and leaves the service alone; a valid one: enabled;
#   4. the installed daemon, started with the unit's own ExecStart as its user, says it reads its control clients'
#      peer credentials in process (koffi's binary from the package) and runs `pulsa-bridge at` (root) through its
#      control socket, naming the client's uid and pid; it reads an SMS from the installed `pulsa-bridge simulate` and
#      POSTs it to a local receiver;
#   5. the receiver stops, a second SMS is spooled (pending); the upgrade is installed while the daemon runs; the
#      daemon is restarted on the new files: the pending record is delivered, the config is byte for byte the same;
#   6. apt-get remove keeps the config and the spool; apt-get purge removes them.
# systemd: where it is not PID 1 (containers, CI) postinst enables the unit (deb-systemd-helper) but cannot start it;
# this test then starts and restarts the daemon itself, as the unit would, and says so. Under systemd the test stops
# after step 3 would start a second daemon: it refuses to run there (a machine's real service is not its to take).
#
# The nodejs dependency (>= 20): this machine's nodejs package as dpkg knows it. Where dpkg's nodejs is older
# (Debian Bookworm's own is 18) but /usr/bin/node is 20 or later, a local test-only package
# `pulsa-bridge-test-nodejs-provides` (Provides: nodejs (= that version), no files) stands in for it, is labelled as
# such in the output, and is removed at the end.
# It installs and purges the package pulsa-bridge on this machine: an installed one stops it (PULSA_PACKAGE_TEST_PURGE=1
# purges it first). Ends with `package: N passed, N failed, 0 skipped`.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pulsa-package.XXXXXX")
chmod 0755 "$WORK"
. test/package/lib.sh
APT=(apt-get -y -q -o DPkg::Lock::Timeout=300 -o Dpkg::Use-Pty=0)
export DEBIAN_FRONTEND=noninteractive
PROVIDER=
finish() {
  cleanup_pids
  if dpkg-query -W -f='${Status}' pulsa-bridge 2>/dev/null | grep -q installed; then "${APT[@]}" purge pulsa-bridge >/dev/null 2>&1; fi
  [ -z "$PROVIDER" ] || dpkg --purge "$PROVIDER" >/dev/null 2>&1
  rm -rf "$WORK" /run/pulsa-bridge-test
}
trap finish EXIT
summary() { echo "package: $PASSED passed, $FAILED failed, 0 skipped"; [ "$FAILED" -eq 0 ]; exit $?; }
stop() { fail "$*"; summary; }

[ "$(id -u)" = 0 ] || stop "the package test installs a package: run it as root"
if [ -d /run/systemd/system ]; then stop "systemd runs here: this test starts the daemon itself; run it where systemd is not PID 1 (CI, a container)"; fi
note "systemd is not PID 1 here: postinst enables the unit but starts nothing; the test starts the daemon with the unit's ExecStart, as its user, and restarts it after the upgrade"
if dpkg-query -W -f='${Status}' pulsa-bridge 2>/dev/null | grep -q 'ok installed'; then
  [ "${PULSA_PACKAGE_TEST_PURGE:-}" = 1 ] || stop "pulsa-bridge is installed on this machine: PULSA_PACKAGE_TEST_PURGE=1 purges it first"
  "${APT[@]}" purge pulsa-bridge >/dev/null
fi
if systemctl is-active --quiet pulsa-bridge 2>/dev/null || pgrep -u pulsa-bridge >/dev/null 2>&1; then stop "a pulsa-bridge daemon runs here"; fi

# --- nodejs (>= 20) as dpkg sees it ---------------------------------------------------------------------------------
node_pkg=$(dpkg-query -W -f='${Version}' nodejs 2>/dev/null || true)
if [ -n "$node_pkg" ] && dpkg --compare-versions "$node_pkg" ge 20; then
  note "nodejs: the installed package nodejs $node_pkg ($(dpkg-query -W -f='${Maintainer}' nodejs)) satisfies Depends: nodejs (>= 20)"
else
  sys_node=$(/usr/bin/node --version 2>/dev/null | sed 's/^v//')
  [ -n "$sys_node" ] && dpkg --compare-versions "$sys_node" ge 20 || stop "neither dpkg's nodejs (${node_pkg:-none}) nor /usr/bin/node (${sys_node:-none}) is 20 or later"
  PROVIDER=pulsa-bridge-test-nodejs-provides
  mkdir -p "$WORK/provider/DEBIAN"
  printf 'Package: %s\nVersion: 1\nArchitecture: all\nMaintainer: pulsa-bridge tests <tests@pulsa-bridge.invalid>\nProvides: nodejs (= %s)\nDescription: TEST ONLY: says /usr/bin/node %s is nodejs\n' "$PROVIDER" "$sys_node" "$sys_node" > "$WORK/provider/DEBIAN/control"
  dpkg-deb --root-owner-group --build "$WORK/provider" "$WORK/provider.deb" >/dev/null && dpkg -i "$WORK/provider.deb" >/dev/null
  note "nodejs: TEST-ONLY stand-in package $PROVIDER (Provides: nodejs (= $sys_node)) for /usr/bin/node $sys_node; dpkg's nodejs is ${node_pkg:-not installed}"
fi

# --- 1. build ---------------------------------------------------------------------------------------------------------
V1=$(node -p 'require("./package.json").version')
V2=$V1+pkgtest2
if bash packaging/build-deb.sh --out "$WORK" > "$WORK/build1.log" 2>&1; then
  pass "built $(basename "$WORK"/pulsa-bridge_"${V1}"_all.deb): $(grep -o '([0-9]* KiB, [0-9]* KiB installed)' "$WORK/build1.log")"
  grep -E '^(E|W|lintian)' "$WORK/build1.log" | sed 's/^/        | /'
  lintian_summary=$(grep -cE '^(E|W): ' "$WORK/build1.log")
  if grep -q 'lintian not installed' "$WORK/build1.log"; then fail "lintian is not installed: the package was not checked"
  elif [ "$lintian_summary" -eq 0 ]; then pass "lintian: no errors, no warnings"; else fail "lintian: $lintian_summary errors or warnings"; fi
else
  cat "$WORK/build1.log"; stop "the package did not build"
fi
bash packaging/build-deb.sh --out "$WORK" --version "$V2" --no-build --no-lintian > "$WORK/build2.log" 2>&1 || { cat "$WORK/build2.log"; stop "the rebuild $V2 did not build"; }
pass "rebuilt as $V2 (the upgrade)"

# --- 2. install -------------------------------------------------------------------------------------------------------
if "${APT[@]}" install "$WORK/pulsa-bridge_${V1}_all.deb" > "$WORK/install1.log" 2>&1; then pass "apt-get install ./pulsa-bridge_${V1}_all.deb"; else cat "$WORK/install1.log"; stop "apt-get install failed"; fi
grep '^pulsa-bridge:' "$WORK/install1.log" | sed 's/^/        | /'
check "postinst: the example config is not enabled, the next steps are printed" grep -q 'still holds the example values (line [0-9]*: "baseUrl": "https://convert.example.com.*): the service is not enabled yet' "$WORK/install1.log"
check "user pulsa-bridge (group pulsa-bridge, in dialout), group pulsa-bridge-ops" bash -c 'id -gn pulsa-bridge | grep -qx pulsa-bridge && id -nG pulsa-bridge | grep -qw dialout && getent group pulsa-bridge-ops'
check "/etc/pulsa-bridge/config.json: a conffile, 0640 root:pulsa-bridge" bash -c 'dpkg-query -W -f="\${Conffiles}" pulsa-bridge | grep -q /etc/pulsa-bridge/config.json && [ "$(stat -c "%a %U:%G" /etc/pulsa-bridge/config.json)" = "640 root:pulsa-bridge" ]'
check "/var/lib/pulsa-bridge: 0750 pulsa-bridge" bash -c '[ "$(stat -c "%a %U:%G" /var/lib/pulsa-bridge)" = "750 pulsa-bridge:pulsa-bridge" ]'
UNIT_FILE=/lib/systemd/system/pulsa-bridge.service
FLAGS_SRC=$(sed -n 's#^ExecStart=/usr/bin/node \(.*\) /opt/pulsa-bridge/bin/pulsa-bridge .*#\1#p' systemd/pulsa-bridge.service)
check "the unit runs /usr/bin/node with systemd/pulsa-bridge.service's flags" grep -qxF "ExecStart=/usr/bin/node $FLAGS_SRC /usr/lib/pulsa-bridge/bin/pulsa-bridge run --config /etc/pulsa-bridge/config.json" "$UNIT_FILE"
check "systemd-analyze verify accepts the installed unit" systemd-analyze verify "$UNIT_FILE"
check "not enabled on the example config" test ! -e /etc/systemd/system/multi-user.target.wants/pulsa-bridge.service
out=$(pulsa-bridge --version 2>&1)
if [ "$out" = "$V1" ]; then pass "/usr/bin/pulsa-bridge --version: $out"; else fail "/usr/bin/pulsa-bridge --version said: $out"; fi
check "no typescript in /usr/lib/pulsa-bridge" test ! -e /usr/lib/pulsa-bridge/node_modules/typescript
check "no libraries' tests, examples or benchmarks in /usr/lib/pulsa-bridge" bash -c '[ -z "$(find /usr/lib/pulsa-bridge/node_modules \( -type d \( -name test -o -name tests -o -name examples -o -name example -o -name benchmarks \) \) -o -name "*.test.js" | head -1)" ]'

# --- 3. config: invalid, then valid ------------------------------------------------------------------------------------
install -d -o pulsa-bridge -g pulsa-bridge -m 0750 /run/pulsa-bridge-test
start_receiver "$WORK/posts.jsonl" || stop "the receiver did not start"
PORT=$RECEIVER_PORT
echo '{"webhook":{"baseUrl":"http://127.0.0.1:1/api/v1/convert-pulsa"},"modems":[]}' > /etc/pulsa-bridge/config.json
dpkg-reconfigure pulsa-bridge > "$WORK/reconf-bad.log" 2>&1
check "an invalid config: postinst says why (modems), exits 0, enables nothing" bash -c "grep -q 'does not pass the check' '$WORK/reconf-bad.log' && grep -q 'modems' '$WORK/reconf-bad.log' && test ! -e /etc/systemd/system/multi-user.target.wants/pulsa-bridge.service"
write_config /etc/pulsa-bridge/config.json /run/pulsa-bridge-test/modem /var/lib/pulsa-bridge/spool
dpkg-reconfigure pulsa-bridge > "$WORK/reconf.log" 2>&1
sed 's/^/        | /' "$WORK/reconf.log"
check "a valid config: postinst enables the unit (systemd not running: not started)" bash -c "test -L /etc/systemd/system/multi-user.target.wants/pulsa-bridge.service && grep -q 'systemd is not running here' '$WORK/reconf.log'"
CONFIG_SUM=$(sha256sum < /etc/pulsa-bridge/config.json)

# --- 4. the installed daemon, as the unit starts it ---------------------------------------------------------------------
EXEC=$(sed -n 's/^ExecStart=//p' "$UNIT_FILE")
AS_SERVICE=(setpriv --reuid=pulsa-bridge --regid=pulsa-bridge --init-groups --)
start_daemon() { # log
  # shellcheck disable=SC2086 # ExecStart's words
  (cd / && exec "${AS_SERVICE[@]}" $EXEC) > "$1" 2>&1 &
  DAEMON_PID=$!
  PIDS+=("$DAEMON_PID")
}
start_simulator /run/pulsa-bridge-test/modem "${AS_SERVICE[@]}" /usr/bin/pulsa-bridge || stop "the installed pulsa-bridge simulate did not start"
pass "the installed 'pulsa-bridge simulate' serves the virtual modem on /run/pulsa-bridge-test/modem"
start_daemon "$WORK/daemon1.log"
note "daemon: $EXEC (as pulsa-bridge, pid $DAEMON_PID)"
if until_true 60 grep -q 'modem sim-1 ready' "$WORK/daemon1.log"; then pass "the installed daemon started; the modem is ready"; else tail -n 20 "$WORK/daemon1.log"; stop "the daemon did not get ready"; fi
# The control socket's peer credentials: read in process through the package's koffi (a daemon that fell back to perl
# says so in a warning instead), and a real client's read: a peer it cannot identify gets the reading level only.
until_true 30 grep -q '"msg":"control: peer credentials ' "$WORK/daemon1.log"
out=$(grep -o '"msg":"control: peer credentials [^"]*"' "$WORK/daemon1.log")
if [[ "$out" == *"peer credentials read in process"* ]]; then pass "the installed daemon says $out"; else fail "the installed daemon does not read peer credentials in process: ${out:-no such line}"; fi
# `pulsa-bridge at` (root) goes through the daemon's control socket: the operating level it needs is granted by the
# peer's uid alone, and the daemon logs the uid and pid it read (the wrapper execs node: $! is the client's pid).
pulsa-bridge at --config /etc/pulsa-bridge/config.json --modem sim-1 AT > "$WORK/at.out" 2>&1 &
AT_PID=$!
wait "$AT_PID"; at_rc=$?
if [ "$at_rc" = 0 ] && grep -qx OK "$WORK/at.out" && until_true 10 grep -q "control request from uid 0 pid $AT_PID (" "$WORK/daemon1.log"; then
  pass "pulsa-bridge at (root, pid $AT_PID) through the daemon's control socket: the daemon (user pulsa-bridge) read uid 0 pid $AT_PID and ran the AT"
else
  fail "pulsa-bridge at (root, pid $AT_PID) through the daemon's control socket: exit $at_rc: $(tr '\n' ' ' < "$WORK/at.out")"
  grep '"msg":"control' "$WORK/daemon1.log" | tail -n 5 | sed 's/^/        | /'
fi
sim_say "sms 858 Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6281200000001 tgl 2026-11-26 (first)"
if until_true 30 grep -q '(first)' "$WORK/posts.jsonl"; then pass "SMS 1 reached the receiver: $(grep '(first)' "$WORK/posts.jsonl" | head -n 1 | cut -c1-110)..."; else fail "SMS 1 did not reach the receiver"; fi

# --- 5. upgrade with a record pending ----------------------------------------------------------------------------------
kill "$RECEIVER_PID"; wait "$RECEIVER_PID" 2>/dev/null
sim_say "sms 858 Anda mendapatkan penambahan pulsa Rp 7000 dari nomor 6281200000002 tgl 2026-11-26 (second)"
pending() { grep -rl '(second)' /var/lib/pulsa-bridge/spool/pending 2>/dev/null | grep -q .; }
if until_true 30 pending; then pass "the receiver is down: SMS 2 is pending in the spool ($(ls /var/lib/pulsa-bridge/spool/pending | wc -l) record)"; else fail "SMS 2 did not reach the spool"; fi
if "${APT[@]}" install "$WORK/pulsa-bridge_${V2}_all.deb" > "$WORK/install2.log" 2>&1; then pass "apt-get install ./pulsa-bridge_${V2}_all.deb while the daemon runs (upgrade)"; else cat "$WORK/install2.log"; fail "the upgrade failed"; fi
grep '^pulsa-bridge:' "$WORK/install2.log" | sed 's/^/        | /'
check "the upgrade kept the operator's config byte for byte (no conffile prompt)" bash -c "[ '$(sha256sum < /etc/pulsa-bridge/config.json)' = '$CONFIG_SUM' ] && ! grep -q 'Configuration file' '$WORK/install2.log'"
check "SMS 2 is still pending after the upgrade" pending
note "restart, as postinst's deb-systemd-invoke restart does under systemd: SIGTERM, then the unit's ExecStart again"
kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null
start_receiver "$WORK/posts.jsonl" "$PORT" || stop "the receiver did not come back on port $PORT"
start_daemon "$WORK/daemon2.log"
out=$(pulsa-bridge --version 2>&1)
if [ "$out" = "$V2" ]; then pass "the new version runs: $out"; else fail "pulsa-bridge --version said $out after the upgrade"; fi
if until_true 60 grep -q '(second)' "$WORK/posts.jsonl"; then pass "SMS 2, pending across the upgrade, was delivered by the new version"; else tail -n 20 "$WORK/daemon2.log"; fail "SMS 2 was not delivered after the upgrade"; fi
check "each SMS was posted once" bash -c "[ \$(grep -c '(first)' '$WORK/posts.jsonl') = 1 ] && [ \$(grep -c '(second)' '$WORK/posts.jsonl') = 1 ]"
kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null
exec {SIM_FD}>&-
cleanup_pids

# --- 6. remove, purge ------------------------------------------------------------------------------------------------
"${APT[@]}" remove pulsa-bridge > "$WORK/remove.log" 2>&1 || { cat "$WORK/remove.log"; fail "apt-get remove failed"; }
check "remove: the program is gone" bash -c 'test ! -e /usr/lib/pulsa-bridge && test ! -e /usr/bin/pulsa-bridge && test ! -e /lib/systemd/system/pulsa-bridge.service'
check "remove: the config (unchanged) and the spool stay" bash -c "[ '$(sha256sum < /etc/pulsa-bridge/config.json)' = '$CONFIG_SUM' ] && ls /var/lib/pulsa-bridge/spool/sent | grep -q ."
"${APT[@]}" purge pulsa-bridge > "$WORK/purge.log" 2>&1 || { cat "$WORK/purge.log"; fail "apt-get purge failed"; }
check "purge: config, spool and the unit's enablement are gone" bash -c 'test ! -e /etc/pulsa-bridge && test ! -e /var/lib/pulsa-bridge && test ! -e /etc/systemd/system/multi-user.target.wants/pulsa-bridge.service && ! dpkg-query -W pulsa-bridge >/dev/null 2>&1'
note "kept on purge, as Debian does: the system user pulsa-bridge and its groups ($(getent group pulsa-bridge pulsa-bridge-ops | cut -d: -f1 | tr '\n' ' '))"
summary
