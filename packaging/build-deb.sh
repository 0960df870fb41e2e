#!/usr/bin/env bash
# Builds the Debian package: npm run package [-- --version V] [--out DIR] -> DIR/pulsa-bridge_V_all.deb
#
# One Architecture: all package for every Pi and x64 host: the compiled JavaScript (dist/src), the production
# node_modules (`npm ci --omit=dev --omit=optional`: no TypeScript, no libraries' tests or examples) with the serial
# addon's prebuilt binaries for linux x64, armv6, armv7 and arm64 and koffi's (the control socket's SO_PEERCRED read in
# process) for linux x64, armv7 and arm64 (glibc; the other platforms' are left out; an ARMv6 Pi reads the peer with
# perl), run by Debian's /usr/bin/node (Depends: nodejs (>= 20)). Nothing is compiled on the Pi.
# koffi's binaries are optional packages, which --omit=optional leaves out (and which npm would install for this
# machine's platform alone; install.sh, building on the Pi itself, lets npm ci add that one): the three are fetched at
# package-lock.json's versions (npm pack) and checked against its sha512 integrity before they are unpacked (a mismatch
# fails the build).
#
# Layout: /usr/lib/pulsa-bridge (the program), /usr/bin/pulsa-bridge, /usr/sbin/pulsa-bridge-modems (udev rule +
# ModemManager), /lib/systemd/system/pulsa-bridge.service (generated from systemd/pulsa-bridge.service: ExecStart's
# node flags are read from that file, only the paths change), /etc/pulsa-bridge/config.json (a conffile: the example,
# spool in /var/lib/pulsa-bridge), man pages from --help, maintainer scripts in packaging/debian/.
# Built with dpkg-deb --root-owner-group (no fakeroot needed); timestamps from the last commit (SOURCE_DATE_EPOCH), so
# the same commit gives the same files. Checked with lintian when it is installed (an error fails the build).
#
# Options: --version V (default: package.json's), --out DIR (default: the checkout), --no-build (use dist/ as it is),
#          --no-lintian.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD

VERSION=$(node -p 'require("./package.json").version')
OUT=$SRC
BUILD=1
LINT=1
while [ $# -gt 0 ]; do
  case "$1" in
    --version) VERSION=${2:?--version needs a version}; shift 2 ;;
    --out) OUT=${2:?--out needs a directory}; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --no-lintian) LINT=0; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-deb: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$VERSION" =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || { echo "build-deb: $VERSION is not a Debian version" >&2; exit 2; }
for tool in dpkg-deb gzip; do command -v "$tool" >/dev/null || { echo "build-deb: $tool is missing (apt-get install dpkg-dev gzip)" >&2; exit 1; }; done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH

if [ "$BUILD" = 1 ]; then npm run -s build; fi
[ -f dist/src/cli.js ] || { echo "build-deb: dist/src/cli.js is missing (npm run build)" >&2; exit 1; }

STAGE=$(mktemp -d "${TMPDIR:-/tmp}/pulsa-bridge-deb.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
PKG=$STAGE/root
LIB=$PKG/usr/lib/pulsa-bridge
DOC=$PKG/usr/share/doc/pulsa-bridge
install -d "$LIB/dist" "$PKG/usr/bin" "$PKG/usr/sbin" "$PKG/lib/systemd/system" "$PKG/etc/pulsa-bridge" \
  "$PKG/usr/share/pulsa-bridge" "$DOC/examples" "$PKG/usr/share/man/man1" "$PKG/usr/share/man/man8" \
  "$PKG/usr/share/lintian/overrides" "$PKG/DEBIAN"

# --- the program: dist/src without source maps, bin, the production dependencies ----------------------------------
cp -R dist/src "$LIB/dist/src"
find "$LIB/dist" -name '*.map' -delete
cp -R bin "$LIB/bin"
cp -R web "$LIB/web"   # the status page's files: dist/src/metrics/server.js reads them from ../../../web
cp package.json package-lock.json systemd/addon-check.cjs systemd/peer-check.cjs "$LIB/"
(cd "$LIB" && npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund --loglevel=error)
# The program reports the package's version (`pulsa-bridge --version`, the User-Agent) when --version gave another.
node -e 'const f=process.argv[1], p=JSON.parse(require("fs").readFileSync(f,"utf8")); p.version=process.argv[2]; require("fs").writeFileSync(f, JSON.stringify(p,null,2)+"\n")' "$LIB/package.json" "$VERSION"
# The addon's prebuilt binaries: Linux with glibc on x64, armv6, armv7 and arm64 only.
PREBUILDS=$LIB/node_modules/@serialport/bindings-cpp/prebuilds
find "$PREBUILDS" -mindepth 1 -maxdepth 1 -type d ! -name linux-x64 ! -name linux-arm ! -name linux-arm64 -exec rm -rf {} +
find "$PREBUILDS" -name '*.musl.node' -delete
for want in linux-x64/@serialport+bindings-cpp.glibc.node linux-arm/@serialport+bindings-cpp.armv6.glibc.node \
  linux-arm/@serialport+bindings-cpp.armv7.glibc.node linux-arm64/@serialport+bindings-cpp.armv8.glibc.node; do
  [ -f "$PREBUILDS/$want" ] || { echo "build-deb: the addon's prebuilt $want is missing" >&2; exit 1; }
done
# The addon's C++ sources and build files: nothing compiles them here.
rm -rf "$LIB/node_modules/@serialport/bindings-cpp/src" "$LIB/node_modules/@serialport/bindings-cpp/binding.gyp"
# koffi's binaries (the daemon reads its control clients' SO_PEERCRED through koffi, src/control/server/
# peer-getsockopt.ts) come in koffi's optional per-platform packages, which `--omit=optional` (there to keep TypeScript
# out) leaves out as well, and of which npm would only ever install this machine's: without them every install would
# ask perl, once per connection. Only linux x64, arm (ARMv7 hard-float: Pi 2 and later on the 32-bit OS) and arm64, at
# the lock's versions (koffi refuses a binary of another version), each tarball checked against the lock's sha512
# before it is unpacked. The lock has no `resolved` URLs (omit-lockfile-registry-resolved), so npm pack fetches them
# from the configured registry (or its cache); the integrity check makes the registry's answer irrelevant. Only the
# glibc binary of each stays (the musl_* builds are never loaded on Raspberry Pi OS or Debian).
KOFFI_TGZ=$STAGE/koffi-tarballs
for plat in linux-x64:linux_x64 linux-arm:linux_armhf linux-arm64:linux_arm64; do
  name=@koromix/koffi-${plat%%:*} glibc=${plat#*:}
  read -r kver kint < <(node -e 'const p = require(process.argv[1]).packages["node_modules/" + process.argv[2]]; if (p && p.version && p.integrity) console.log(p.version, p.integrity)' "$SRC/package-lock.json" "$name") ||
    { echo "build-deb: package-lock.json has no version and integrity for $name (npm install koffi again)" >&2; exit 1; }
  mkdir -p "$KOFFI_TGZ/$name"
  (cd "$KOFFI_TGZ/$name" && npm pack --silent --pack-destination . "$name@$kver" >/dev/null) ||
    { echo "build-deb: npm pack $name@$kver failed (offline, and not in npm's cache?)" >&2; exit 1; }
  tgz=$(ls "$KOFFI_TGZ/$name"/*.tgz) || { echo "build-deb: npm pack $name@$kver left no tarball in $KOFFI_TGZ/$name" >&2; exit 1; }
  # The lock's integrity is `sha512-BASE64` (possibly with other hashes after it): the tarball's sha512 must be one.
  node -e 'const [file, want, name] = process.argv.slice(1); const got = "sha512-" + require("crypto").createHash("sha512").update(require("fs").readFileSync(file)).digest("base64"); const sums = want.split(/\s+/).filter((h) => h.startsWith("sha512-")); if (!sums.includes(got)) { console.error(`build-deb: ${name}: the tarball npm pack fetched is not the one package-lock.json names (${sums.length ? "lock " + sums[0] + ", got " + got : "the lock has no sha512 for it"}): not packaged`); process.exit(1); }' "$tgz" "$kint" "$name" || exit 1
  rm -rf "$LIB/node_modules/$name"; mkdir -p "$LIB/node_modules/$name"
  tar -xzf "$tgz" -C "$LIB/node_modules/$name" --strip-components=1 --no-same-owner
  find "$LIB/node_modules/$name" -mindepth 1 -maxdepth 1 -type d ! -name "$glibc" -exec rm -rf {} +
  [ -f "$LIB/node_modules/$name/$glibc/koffi.node" ] || { echo "build-deb: $name@$kver has no $glibc/koffi.node" >&2; exit 1; }
  [ "$(node -p 'require(process.argv[1]).version' "$LIB/node_modules/$name/package.json")" = "$kver" ] ||
    { echo "build-deb: $name's package.json is not version $kver" >&2; exit 1; }
done
# koffi's own C++ sources, vendored headers, build tool (cnoke.cjs, the install script, never run: --ignore-scripts)
# and docs: its JavaScript is index.js/index.cjs -> src/koffi/index.{js,cjs} -> src/koffi/src/static.{js,cjs}
# (indirect.* likewise), which then loads the platform package above. The check after the clean-up loads it.
KOFFI=$LIB/node_modules/koffi
rm -rf "$KOFFI/vendor" "$KOFFI/doc" "$KOFFI/lib" "$KOFFI/cnoke.cjs" "$KOFFI/src/koffi/CMakeLists.txt" "$KOFFI/src/koffi/src/abi"
find "$KOFFI/src/koffi/src" -type f ! -name static.js ! -name static.cjs -delete
# Documentation and type declarations inside node_modules (lintian: docs belong in /usr/share/doc).
find "$LIB/node_modules" -type f \( -iname 'README*' -o -iname 'CHANGELOG*' -o -iname 'HISTORY*' -o -name '*.md' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' \) -delete
# The libraries' own test suites, examples, benchmarks, doc sites and release scripts, at any depth (pino-pretty keeps
# its tests beside its code, sonic-boom nests a test folder, tdigest ships specs): nothing loads them at run time, and
# lintian flags a doc site's CDN links and the scripts. The check after the clean-up loads every dependency.
for pkgdir in "$LIB"/node_modules/* "$LIB"/node_modules/@*/*; do
  [ -d "$pkgdir" ] || continue
  rm -rf "$pkgdir/docs" "$pkgdir/index.html"
  find "$pkgdir" -maxdepth 1 -type f -name '*.sh' -delete
done
find "$LIB/node_modules" -depth -type d \( -name test -o -name tests -o -name __tests__ -o -name spec -o -name specs \
  -o -name example -o -name examples -o -name benchmark -o -name benchmarks -o -name bench \) -exec rm -rf {} +
find "$LIB/node_modules" -type f \( -name '*.test.js' -o -name '*.test.mjs' -o -name '*.test.cjs' -o -name '*.spec.js' \
  -o -name '*.test-d.ts' -o -name 'test.js' -o -name 'test-*.js' -o -name 'example.js' -o -name 'example*.html' \) -delete
# Dotfiles of the libraries' own repositories (.npmignore, CI configs).
find "$LIB/node_modules" -name '.*' ! -name '.bin' ! -name '.package-lock.json' -exec rm -rf {} +
find "$LIB/node_modules" -type d -empty -delete
# A tree with TypeScript in it means the optional peer came back: the package would be 3 times the size.
[ ! -e "$LIB/node_modules/typescript" ] || { echo "build-deb: typescript is in the production tree" >&2; exit 1; }
# Every production dependency still loads from the cleaned tree (a package that needed a removed file fails here).
(cd "$LIB" && node -e 'for (const d of Object.keys(require("./package.json").dependencies)) require.resolve(d); import("pino").then(() => import("pino-pretty")).then(() => import("prom-client")).then(() => import("valibot")).then(() => import("commander")).then(() => import("@serialport/stream")).then(() => import("koffi")).then(() => require("koffi")).catch((e) => { console.error("build-deb: a dependency no longer loads: " + e.message); process.exit(1); })') || exit 1
# And the daemon's own in-process read works from the staged tree on this machine (its koffi binary is one of the
# three above): loadSockopt() of the staged dist reads the peer of a connection to a temporary Unix socket, which must
# be this process. The Pis' binaries are loaded under qemu by the arm smoke test (test/arm/arm-smoke.sh).
peer=$(node "$LIB/peer-check.cjs" "$LIB" 2>&1) || { echo "build-deb: peer credentials: $peer" >&2; exit 1; }
echo "peer credentials: $peer"

cat > "$PKG/usr/bin/pulsa-bridge" <<'WRAP'
#!/bin/sh
# pulsa-bridge: the CLI and daemon of the Debian package, on Debian's node (Depends: nodejs (>= 20)).
exec /usr/bin/node /usr/lib/pulsa-bridge/bin/pulsa-bridge "$@"
WRAP
sed '1s#^.*$#\#!/bin/bash#' systemd/pulsa-bridge-modems > "$PKG/usr/sbin/pulsa-bridge-modems"
cp systemd/99-pulsa-bridge.rules.in "$PKG/usr/share/pulsa-bridge/"

# --- the unit: systemd/pulsa-bridge.service with the package's paths (its node flags as they are there) --------------
FLAGS=$(sed -n 's#^ExecStart=/usr/bin/node \(.*\) /opt/pulsa-bridge/bin/pulsa-bridge .*#\1#p' systemd/pulsa-bridge.service)
[ -n "$FLAGS" ] || { echo "build-deb: systemd/pulsa-bridge.service has no 'ExecStart=/usr/bin/node FLAGS /opt/pulsa-bridge/bin/pulsa-bridge' line" >&2; exit 1; }
{
  echo "# Generated by packaging/build-deb.sh from systemd/pulsa-bridge.service (only /opt/pulsa-bridge changed to the"
  echo "# package's paths). Local changes: systemctl edit pulsa-bridge (a drop-in survives upgrades)."
  sed -e "s#^ExecStart=/usr/bin/node \(.*\) /opt/pulsa-bridge/bin/#ExecStart=/usr/bin/node \1 /usr/lib/pulsa-bridge/bin/#" \
      -e "s#^Documentation=file:///opt/pulsa-bridge/README.md#Documentation=man:pulsa-bridge(1) file:///usr/share/doc/pulsa-bridge/README.md.gz#" \
      systemd/pulsa-bridge.service
} > "$PKG/lib/systemd/system/pulsa-bridge.service"
if grep -v '^#' "$PKG/lib/systemd/system/pulsa-bridge.service" | grep -q /opt/pulsa-bridge; then
  echo "build-deb: the unit still names /opt/pulsa-bridge outside comments: teach build-deb.sh the new line" >&2; exit 1
fi
grep -qxF "ExecStart=/usr/bin/node $FLAGS /usr/lib/pulsa-bridge/bin/pulsa-bridge run --config /etc/pulsa-bridge/config.json" \
  "$PKG/lib/systemd/system/pulsa-bridge.service" || { echo "build-deb: the generated ExecStart is not the expected one" >&2; exit 1; }

# --- config (conffile), docs, man pages ----------------------------------------------------------------------------
sed 's#"dir": "./spool"#"dir": "/var/lib/pulsa-bridge/spool"#' config.example.json > "$PKG/etc/pulsa-bridge/config.json"
cp config.example.json "$DOC/examples/"
gzip -9n < README.md > "$DOC/README.md.gz"
# The guides README.md points to (docs/*.md, compressed as README.md is; the screenshots stay in the repository).
install -d "$DOC/docs"
for f in docs/*.md; do gzip -9n < "$f" > "$DOC/docs/$(basename "$f").gz"; done
cat > "$DOC/copyright" <<'COPY'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: pulsa-bridge
Comment: The bridge itself is not licensed for redistribution ("license": "UNLICENSED" in package.json). The
 JavaScript libraries under /usr/lib/pulsa-bridge/node_modules keep their own licenses (MIT, except where a
 library's package.json says otherwise); their LICENSE files are installed beside them.

Files: *
Copyright: 2026 the pulsa-bridge authors
License: UNLICENSED
 All rights reserved.

Files: usr/lib/pulsa-bridge/node_modules/*
Copyright: their authors, as named in each library's LICENSE file (Copyright notices there)
License: MIT
 On Debian systems the MIT license text is in each library's LICENSE file under
 /usr/lib/pulsa-bridge/node_modules.
COPY
COMMIT=$(git log -1 --format=%h 2>/dev/null || echo unknown)
{
  echo "pulsa-bridge ($VERSION) unstable; urgency=medium"
  echo
  echo "  * Built from commit $COMMIT (packaging/build-deb.sh); see the git history."
  echo
  echo " -- pulsa-bridge build <pulsa-bridge@users.noreply.github.com>  $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n > "$DOC/changelog.gz"

# Man pages from the commands' own help (the help is the reference; README.md and docs/ have the rest).
manpage() { # name section summary helptext
  local up; up=$(printf '%s' "$1" | tr '[:lower:]' '[:upper:]')
  printf '.TH %s %s "%s" "pulsa-bridge %s"\n.SH NAME\n%s \\- %s\n.SH DESCRIPTION\n.nf\n' \
    "$up" "$2" "$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)" "$VERSION" "$1" "$3"
  printf '%s\n' "$4" | sed -e 's/\\/\\e/g' -e 's/^\./\\\&./' -e "s/^'/\\\\\\&'/"
  printf '.fi\n.SH SEE ALSO\n/usr/share/doc/pulsa-bridge/README.md.gz\n'
}
HELP=$(node bin/pulsa-bridge --help)
manpage pulsa-bridge 1 "GSM modem to webhook bridge for operator SMS" "$HELP" | gzip -9n > "$PKG/usr/share/man/man1/pulsa-bridge.1.gz"
manpage pulsa-bridge-modems 8 "hand modems to pulsa-bridge, take them from ModemManager" "$(bash systemd/pulsa-bridge-modems --help)" |
  gzip -9n > "$PKG/usr/share/man/man8/pulsa-bridge-modems.8.gz"

cp packaging/lintian-overrides "$PKG/usr/share/lintian/overrides/pulsa-bridge"

# --- control ------------------------------------------------------------------------------------------------------
for f in postinst prerm postrm; do install -m 0755 "packaging/debian/$f" "$PKG/DEBIAN/$f"; done
echo /etc/pulsa-bridge/config.json > "$PKG/DEBIAN/conffiles"
SIZE=$(du -sk --exclude=DEBIAN "$PKG" | cut -f1)
cat > "$PKG/DEBIAN/control" <<CTRL
Package: pulsa-bridge
Version: $VERSION
Architecture: all
Maintainer: pulsa-bridge build <pulsa-bridge@users.noreply.github.com>
Installed-Size: $SIZE
Depends: nodejs (>= 20), adduser, libc6 (>= 2.28), libstdc++6, libgcc-s1
Suggests: socat
Section: net
Priority: optional
Description: GSM modem to webhook bridge for operator SMS
 pulsa-bridge owns USB (or UART) GSM modems: it reads the operators' SMS
 confirming prepaid credit transfers, keeps each in a crash-safe spool and
 POSTs it to the convert-pulsa webhook, at least once.
 It runs as a systemd service (pulsa-bridge.service) under its own user,
 with the pulsa-bridge-modems command to keep ModemManager off its modems.
 .
 One package for every Raspberry Pi (armv6, armv7, arm64) and x64: the
 serial addon's and koffi's prebuilt binaries are included, nothing is
 compiled.
CTRL

# Modes and times: directories 0755, files 0644, programs 0755; the config 0640 (postinst gives it the service's group).
find "$PKG" -path "$PKG/DEBIAN" -prune -o -type d -exec chmod 0755 {} +
find "$PKG" -path "$PKG/DEBIAN" -prune -o -type f -exec chmod 0644 {} +
chmod 0755 "$PKG/usr/bin/pulsa-bridge" "$PKG/usr/sbin/pulsa-bridge-modems" "$LIB/bin/pulsa-bridge"
# Library scripts with a #! line stay runnable as their authors shipped them.
find "$LIB/node_modules" -type f -name '*.js' -exec sh -c 'for f; do [ "$(head -c 2 "$f")" = "#!" ] && chmod 0755 "$f"; done; true' sh {} +
rm -rf "$LIB/node_modules/.bin" "$LIB/node_modules/.package-lock.json"
chmod 0640 "$PKG/etc/pulsa-bridge/config.json"
(cd "$PKG" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) > "$PKG/DEBIAN/md5sums"
find "$PKG" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

DEB=$OUT/pulsa-bridge_${VERSION}_all.deb
dpkg-deb --root-owner-group -Zxz --build "$PKG" "$DEB" >/dev/null
echo "built $DEB ($(du -k "$DEB" | cut -f1) KiB, $SIZE KiB installed)"
if [ "$LINT" = 1 ]; then
  if command -v lintian >/dev/null; then
    lint=$(lintian --info --display-info --no-tag-display-limit "$DEB" 2>&1 || true)
    if [ -n "$lint" ]; then printf '%s\n' "$lint"; else echo "lintian: no tags"; fi
    if printf '%s\n' "$lint" | grep -q '^E: '; then echo "build-deb: lintian found errors" >&2; exit 1; fi
  else
    echo "lintian not installed: not checked (apt-get install lintian)"
  fi
fi
