#!/bin/bash
# Helpers for integration checks that run real processes: xpv-netback, the
# xpv-pktgen example, dpdk-testpmd. Each check prints exactly one line
#   CHECK <name> PASS <details> | CHECK <name> FAIL <reason>
# shellcheck disable=SC2034

RUN=${RUN:-$(mktemp -d /tmp/xpv-it.XXXXXX)}
chmod 755 "$RUN"
PIDS=()
FAILED=0

pass() { echo "CHECK $1 PASS ${*:2}"; }
fail() {
  echo "CHECK $1 FAIL ${*:2}"
  FAILED=$((FAILED + 1))
}

cleanup_all() {
  local p
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
}

# nb_start NAME [xpv-netback options...]: starts a backend on $RUN/NAME.sock,
# stats in $RUN/NAME.json, log in $RUN/NAME.log; sets NB_PID.
nb_start() {
  local name=$1; shift
  rm -f "$RUN/$name.sock" "$RUN/$name.json"
  "$NETBACK" --socket "$RUN/$name.sock" --stats-file "$RUN/$name.json" "$@" >"$RUN/$name.log" 2>&1 &
  NB_PID=$!
  PIDS+=("$NB_PID")
  local i
  for i in $(seq 200); do
    grep -q "listening on" "$RUN/$name.log" 2>/dev/null && return 0
    kill -0 "$NB_PID" 2>/dev/null || break
    sleep 0.05
  done
  echo "xpv-netback $name did not start:" >&2
  cat "$RUN/$name.log" >&2
  return 1
}

# nb_stop PID: clean shutdown (SIGTERM); returns its exit code. A backend
# started by a subshell (a restarter) is not this shell's child: wait cannot
# reap it (127), so this polls until it is gone, at most 10 s (1 if it stays).
nb_stop() {
  kill -TERM "$1" 2>/dev/null
  local rc=0
  wait "$1" 2>/dev/null || rc=$?
  ((rc == 127)) || return $rc
  local i
  for ((i = 0; i < 200; i++)); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.05
  done
  return 1
}

# json FILE EXPR: evaluates a python expression over the JSON document `d`;
# helpers: total(key) sums every value named key anywhere in it.
json() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
def total(key):
    out = 0
    def walk(o):
        nonlocal out
        if isinstance(o, dict):
            for k, v in o.items():
                if k == key and isinstance(v, (int, float)) and not isinstance(v, bool):
                    out += v
                else:
                    walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(d)
    return out
r = eval(sys.argv[2])
print(r if not isinstance(r, bool) else int(r))
EOF
}

# sanitizer_clean LOG...: no AddressSanitizer/UBSan/LeakSanitizer report.
sanitizer_clean() {
  ! grep -lE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: UndefinedBehaviorSanitizer' "$@" 2>/dev/null | grep -q .
}

# wait_log LOG REGEX PID TENTHS: waits until LOG matches REGEX (grep -E); fails
# early when PID exits, or after TENTHS tenths of a second.
wait_log() {
  local i
  for ((i = 0; i < $4; i++)); do
    grep -qE "$2" "$1" 2>/dev/null && return 0
    kill -0 "$3" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
