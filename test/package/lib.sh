# Shared by test/arm/arm-smoke.sh and test/package/package-test.sh: checks that count, a webhook receiver, the
# virtual modem on a pseudo-terminal, a config for them. Sourced; needs $WORK (a temp directory) and $REPO.

PASSED=0
FAILED=0
T0=$(date +%s.%N)
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%6.1fs", b - a }'; }
pass() { PASSED=$((PASSED + 1)); echo "[$(elapsed)] ok   $*"; }
fail() { FAILED=$((FAILED + 1)); echo "[$(elapsed)] FAIL $*"; }
note() { echo "[$(elapsed)]      $*"; }
# check "what" command...: one counted check.
check() { local what=$1; shift; local out; if out=$("$@" 2>&1); then pass "$what"; else fail "$what"; printf '%s\n' "$out" | tail -n 20 | sed 's/^/        | /'; fi; }
# until_true SECONDS command...: polls every 0.2 s.
until_true() { local end=$(( $(date +%s) + $1 )); shift; while ! "$@" >/dev/null 2>&1; do [ "$(date +%s)" -lt "$end" ] || return 1; sleep 0.2; done; }

PIDS=()
cleanup_pids() { local p; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done; PIDS=(); }

# start_receiver FILE [PORT]: sets RECEIVER_PORT and RECEIVER_PID.
start_receiver() {
  touch "$1"; rm -f "$WORK/receiver.port"
  node "$REPO/test/package/receiver.mjs" "$1" ${2:-} > "$WORK/receiver.port" &
  RECEIVER_PID=$!
  PIDS+=($!)
  until_true 10 test -s "$WORK/receiver.port" || return 1
  RECEIVER_PORT=$(head -n 1 "$WORK/receiver.port")
}

# start_simulator LINK [COMMAND...]: the virtual modem on a pty at LINK (default command: the checkout's build on this
# machine's node); commands go to the fifo $LINK.in (sim_say "sms 858 ...").
start_simulator() {
  local link=$1; shift
  [ $# -gt 0 ] || set -- node "$REPO/bin/pulsa-bridge"
  rm -f "$link" "$link.in"; mkfifo -m 0644 "$link.in"
  "$@" simulate --link "$link" < "$link.in" > "$link.log" 2>&1 &
  PIDS+=($!)
  exec {SIM_FD}> "$link.in"
  until_true 20 test -e "$link" || return 1
}
sim_say() { printf '%s\n' "$*" >&"$SIM_FD"; }

# write_config FILE LINK SPOOL: one modem on LINK, the webhook on the receiver.
write_config() {
  cat > "$1" <<JSON
{
  "webhook": { "baseUrl": "http://127.0.0.1:$RECEIVER_PORT/api/v1/convert-pulsa", "retry": { "baseDelayMs": 200, "maxDelayMs": 1000 } },
  "spool": { "dir": "$3" },
  "modems": [ { "name": "sim-1", "port": "$2", "senders": ["858"], "sweepIntervalSec": 5 } ],
  "log": { "level": "info", "pretty": false }
}
JSON
}
