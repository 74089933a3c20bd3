#!/bin/bash
# An interactive dpdk-testpmd driven through a pipe, a command at a time, its
# output read back: for the checks that use testpmd's own commands
# (conformance.sh, control.sh, pmd_offload.sh, ...). Uses EAL from pmd.sh.

# ts_start NAME VDEVS [testpmd args...]: telemetry on (no --no-shconf: EAL
# needs its runtime dir for the socket), file prefix NAME-$$; VDEVS are
# separated by spaces, a port each.
ts_start() {
  local name=$1 v vdevs=()
  for v in $2; do vdevs+=(--vdev "$v"); done
  shift 2
  TS_LOG=$RUN/$name.log
  TS_PREFIX=xpvc$$$name
  mkfifo "$RUN/$name.fifo"
  local eal=() a
  for a in "${EAL[@]}"; do [[ $a == --no-shconf ]] || eal+=("$a"); done
  # Line-buffered: the output of a command is in the log before the next prompt.
  stdbuf -oL dpdk-testpmd "${eal[@]}" --file-prefix "$TS_PREFIX" "${vdevs[@]}" -- -i \
    --total-num-mbufs=8192 "$@" <"$RUN/$name.fifo" >"$TS_LOG" 2>&1 &
  TS_PID=$!
  PIDS+=("$TS_PID")
  exec 8>"$RUN/$name.fifo"
  wait_log "$TS_LOG" "testpmd> " "$TS_PID" 400
}

# ts_send COMMAND: sends one command without waiting for its prompt. For
# "start" with verbose output on: testpmd writes its prompt apart from the
# lines the forwarding lcore prints, which can split it ("test" + "port 0/queue
# 0: received 16 packets"), and ts_cmd would wait its whole 30 s for it.
ts_send() { printf '%s\n' "$1" >&8; }

# ts_cmd COMMAND: runs one command and waits for the next prompt; its output
# is in TS_OUT.
ts_cmd() {
  local before n i
  before=$(stat -c %s "$TS_LOG")
  n=$(grep -o 'testpmd> ' "$TS_LOG" | wc -l)
  ts_send "$1"
  for ((i = 0; i < 600; i++)); do
    (($(grep -o 'testpmd> ' "$TS_LOG" | wc -l) > n)) && break
    kill -0 "$TS_PID" 2>/dev/null || break
    sleep 0.05
  done
  TS_OUT=$(tail -c +$((before + 1)) "$TS_LOG")
}

ts_quit() {
  ts_send quit
  exec 8>&-
  local i
  for i in $(seq 300); do kill -0 "$TS_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$TS_PID" 2>/dev/null
  wait "$TS_PID"
}

# xstat NAME: the value of one xstat in the last `show port xstats 0`.
xstat() { sed -nE "s/^ *$1: +([0-9]+)\$/\\1/p" <<<"$XSTATS" | tail -1; }
read_xstats() {
  ts_cmd "show port xstats 0"
  XSTATS=$TS_OUT
}

# telemetry QUERY: one dpdk-telemetry.py answer (JSON) of the session's app.
telemetry() { printf '%s\n' "$1" | timeout 20 dpdk-telemetry.py -f "$TS_PREFIX" 2>&1 | tail -1; }


# has TEXT: the last command's output contains TEXT.
has() { grep -qF -- "$1" <<<"$TS_OUT"; }
