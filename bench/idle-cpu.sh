#!/bin/bash
# The daemon's CPU while idle, all threads, from /proc/PID/task/*/schedstat (ns, not 10 ms ticks): one simulated
# modem, nothing received, measured over 60 s after a 20 s warm-up. Figures only (bench/README.md).
#   bash bench/idle-cpu.sh <built checkout> [node flags...]   e.g. bash bench/idle-cpu.sh . --max-semi-space-size=1
set -euo pipefail
co=$1; shift
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
cat > "$d/config.json" <<EOC
{ "webhook": { "url": "http://127.0.0.1:9/hook" }, "spool": { "dir": "$d/spool", "fsync": false },
  "modems": [{ "name": "m1", "simulate": true, "senders": ["858"] }], "control": { "socket": "$d/ctl.sock" } }
EOC
node "$@" "$co/bin/pulsa-bridge" run --config "$d/config.json" --simulate > "$d/log" 2>&1 &
pid=$!
cpu() { cat /proc/$pid/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%d", s / 1e6 }'; }
sleep 20; t0=$(cpu); sleep 60; t1=$(cpu)
kill -INT $pid; wait $pid 2>/dev/null || true
echo "$co $*: $(( t1 - t0 )) ms of CPU per minute idle"
