#!/bin/bash
# make bench: every benchmark in one run (so that ratios hold), then the
# report in bench/results/ (latest.json, report.md, PNG plots).
#
#   1. per-packet cost of the library's data path against an in-process ideal
#      backend: instructions (callgrind, deterministic) and TSC cycles (Google
#      Benchmark), TX and RX, bursts of 1, 8 and 32
#   2. throughput: dpdk-testpmd over net_xenpv against xpv-netback --busy-poll
#      (TX: txonly -> sink, RX: source -> rxonly), and over a net_memif pair
#      (two testpmd processes, txonly -> rxonly), on the same two cores: one
#      run of each at 64 bytes (per-second rates, xstats)
#   2b. static grants: 64-byte xenpv TX and RX with static grants and with grant
#      copies against memif, taking turns in one-second windows
#      (bench/alternate.py), so that a pair shares one of this VM's speed spells;
#      the ratios of 2. at 64 bytes are these windows', at 256 and 1500 bytes
#      those of windows of their own (xenpv TX and RX against memif)
#   3. multi-queue: testpmd io over 1, 2 and 4 queues against xpv-netback
#   4. event mode under sustained traffic: xpv-pktgen --mode event against
#      xpv-netback, also with --fault late-tx-rsp
#   5. what bounds throughput: callgrind of xpv-netback's worker per packet,
#      with static grants and with grant copies (--no-static-grants)
#   6. real Xen: TCP through a PV domU (scripts/e2e-xen.sh, checks tcp-through-domu
#      and tcp-windows alone: one round of each way, then each DPDK way against
#      the kernel bridge in alternating windows, what the on/kernel targets
#      judge; XPV_BENCH_TCP_WINDOWS windows a way, default 8), and the other
#      figures of the last `make e2e-xen` when it has run
#   7. wake-up latency from sleep: l3fwd-power --interrupt-only over net_xenpv,
#      first frame in to first frame out, after idle and without
#
#   scripts/bench.sh [--build DIR] [--out DIR] [--seconds N] [--quick] [--only wakeup]
#     --build DIR    the project's build (default build); the PMD, xpv-netback
#                    and xpv-pktgen come from there
#     --out DIR      where the report goes (default bench/results)
#     --seconds N    forwarding seconds per 64-byte throughput run (default 8)
#     --quick        shorter runs (a smoke test of the whole pipeline)
#     --only wakeup  only the wake-up latency runs (7.), printed, no report;
#                    logs in BUILD/bench-logs-wakeup/
#     --only sgrants only the static-grants windows (2b.), their table printed,
#                    no report; logs in BUILD/bench-logs-sgrants/
#                    (XPV_BENCH_SG_ROUNDS: rounds, default 12; at 256 and
#                    1500 bytes XPV_BENCH_WIN_ROUNDS, default 6)
#     --only nbprof  only xpv-netback's profiles (5.), both modes, their table
#                    printed, no report; logs in BUILD/bench-logs-nbprof/
#     --only xentcp  only the real-Xen TCP runs (6.), their lines printed, no
#                    report; logs in BUILD/bench-logs-xentcp/
#     --no-xen       no real-Xen TCP run (6.): the TCP targets are judged on the
#                    last make e2e-xen's one round (--quick implies it)
#
# Raw logs stay in BUILD/bench-logs/ (not for committing). Timings on a shared
# 2-core VM are noisy: compare ratios measured in the same run only.
# Exit status: 0 when every measurement ran (targets may still be missed, the
# report says which), 1 when a measurement failed, 2 on bad arguments.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
BUILD=build
OUT=bench/results
SECS=8
MQ_SECS=6
EVT_SECS=8
SEED_SECS=5 SEED_PAIRS=3
TCP_SECS=5 TCP_PAIRS=3
NB_PROF_SECS=8
CG_PACKETS=65536
WARM=2  # seconds of forwarding not counted (ramp-up) before the measured ones
QUICK=0
ONLY=
WAKE_ROUNDS=200
XEN_TCP_ROUNDS=1  # rounds of the real-Xen TCP runs (0: no real-Xen run)
XEN_TCP_WINDOWS=${XPV_BENCH_TCP_WINDOWS:-8}  # windows of each DPDK way (check tcp-windows)
while (($#)); do
  case "$1" in
    --build) BUILD=${2:?--build needs a directory}; shift 2 ;;
    --out) OUT=${2:?--out needs a directory}; shift 2 ;;
    --seconds) SECS=${2:?--seconds needs a number}; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --only) ONLY=${2:?--only needs a name}; shift 2
      [[ $ONLY =~ ^(wakeup|seed|tcp|sgrants|nbprof|xentcp)$ ]] ||
        { echo "bench: --only '$ONLY': expected wakeup, seed, tcp, sgrants, nbprof or xentcp" >&2; exit 2; } ;;
    --no-xen) XEN_TCP_ROUNDS=0; shift ;;
    -h|--help) sed -n '2,52p' "$0"; exit 0 ;;
    *) echo "bench: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $SECS =~ ^[0-9]+$ ]] && ((SECS >= 2)) || { echo "bench: --seconds wants a number >= 2" >&2; exit 2; }
if ((QUICK)); then
  SECS=3 MQ_SECS=3 EVT_SECS=3 NB_PROF_SECS=4 CG_PACKETS=8192 WARM=1 WAKE_ROUNDS=50
  SEED_SECS=3 SEED_PAIRS=2
  TCP_SECS=3 TCP_PAIRS=1
  XEN_TCP_ROUNDS=0
fi
[[ $BUILD = /* ]] || BUILD=$ROOT/$BUILD
[[ $OUT = /* ]] || OUT=$ROOT/$OUT

T0=$(date +%s)
elapsed() { echo $(($(date +%s) - T0)); }
step() { printf '\n[bench %4ss] == %s\n' "$(elapsed)" "$*"; }
info() { printf '[bench %4ss]    %s\n' "$(elapsed)" "$*"; }
warn() { printf '[bench %4ss]    WARNING: %s\n' "$(elapsed)" "$*" >&2; }
die() { printf 'bench: error: %s\n' "$*" >&2; exit 1; }
FAILED=0
fail() { warn "$*"; FAILED=$((FAILED + 1)); }
# A sleep that a signal interrupts at once (the wait builtin returns for a
# trapped signal; a foreground sleep would make bash wait and then ignore a
# SIGINT sent to the script alone).
nap() { sleep "$1" & wait $!; }

# ---------------------------------------------------------------------------
# Tools.

need() {  # need COMMAND PACKAGE
  command -v "$1" >/dev/null 2>&1 || die "'$1' not found (Debian package $2); run 'make setup' or apt-get install $2"
}
need dpdk-testpmd dpdk-dev
need valgrind valgrind
need python3 python3
need taskset util-linux
need timeout coreutils
need meson meson
need ninja ninja-build
need pkill procps

# gnuplot draws the report's PNG plots: installed once, a no-op when present.
ensure_gnuplot() {
  command -v gnuplot >/dev/null 2>&1 && return 0
  [[ $(id -u) == 0 ]] || die "gnuplot is missing and we are not root: apt-get install gnuplot-nox"
  info "installing gnuplot-nox (for the report's plots)"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -q --no-install-recommends gnuplot-nox >/dev/null 2>&1; then
    apt-get update -q >/dev/null 2>&1 || true
    apt-get install -y -q --no-install-recommends gnuplot-nox >/dev/null 2>&1 ||
      die "apt-get install gnuplot-nox failed"
  fi
  command -v gnuplot >/dev/null 2>&1 || die "gnuplot still missing after installing gnuplot-nox"
}
ensure_gnuplot

NETBACK=$BUILD/src/netback/xpv-netback
PKTGEN=$BUILD/examples/xpv-pktgen
PMD=$BUILD/drivers/net_xenpv/librte_net_xenpv.so
for f in "$NETBACK" "$PKTGEN" "$PMD"; do
  [[ -x $f || -f $f ]] || die "$f is missing: run 'make build' first"
done
source scripts/pmd-path.sh
PMD=$(xpv_pmd_path "$PMD") || die "cannot place the PMD where DPDK loads it"
# EAL refuses a -d plugin under any world-writable folder (e.g. /tmp).
d=$(dirname "$(readlink -f "$PMD")")
while [[ -n $d && $d != / ]]; do
  [[ $(stat -c %A "$d") == d???????w? ]] &&
    die "$d is world-writable: dpdk-testpmd refuses to load $PMD from under it (build elsewhere)"
  d=$(dirname "$d")
done
(($(nproc) >= 2)) || die "the benchmarks pin two processes to cores 0 and 1; this machine has $(nproc) CPU"

# ---------------------------------------------------------------------------
# Processes we start, and their cleanup (also on Ctrl-C and errors).

RUN=$(mktemp -d /run/xpv-bench.XXXXXX 2>/dev/null || mktemp -d /var/tmp/xpv-bench.XXXXXX) ||
  die "cannot create a run folder"
chmod 755 "$RUN"
LOGS=$BUILD/bench-logs${ONLY:+-$ONLY}
rm -rf "$LOGS"
mkdir -p "$LOGS" "$OUT" || die "cannot create $LOGS or $OUT"
MANIFEST=$LOGS/manifest.jsonl
: >"$MANIFEST"
PIDS=()
PREFIXES=()

forget_pid() {
  local p keep=()
  for p in "${PIDS[@]}"; do [[ $p == "$1" ]] || keep+=("$p"); done
  PIDS=("${keep[@]}")
}
# stop_pid PID SIGNAL [GRACE_SECONDS]: signal, wait for it, then SIGKILL.
stop_pid() {
  local pid=$1 sig=$2 grace=${3:-10} i
  [[ -n $pid ]] || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill "-$sig" "$pid" 2>/dev/null
    for ((i = 0; i < grace * 10; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      nap 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      warn "process $pid did not exit on SIG$sig within ${grace}s: killing it"
      # It may be a `timeout` wrapper: its child (ours too) goes first.
      pkill -KILL -P "$pid" 2>/dev/null
      kill -KILL "$pid" 2>/dev/null
    fi
  fi
  wait "$pid" 2>/dev/null
  local rc=$?
  forget_pid "$pid"
  return $rc
}
cleanup() {
  local p
  for p in "${PIDS[@]}"; do
    kill -TERM "$p" 2>/dev/null
  done
  for p in "${PIDS[@]}"; do
    stop_pid "$p" TERM 5 >/dev/null 2>&1
  done
  for p in "${PREFIXES[@]}"; do
    rm -rf "/var/run/dpdk/$p" 2>/dev/null
  done
  rm -rf "$RUN"
}
trap cleanup EXIT
trap 'echo; warn "interrupted: stopping everything we started"; exit 130' INT TERM
ulimit -c 0  # a memif peer may crash when the other one leaves first: no core files

# record KEY=VALUE...: one JSON line per run for the report generator.
record() {
  python3 -c 'import json, sys
d = {}
for a in sys.argv[1:]:
    k, _, v = a.partition("=")
    d[k] = v
print(json.dumps(d))' "$@" >>"$MANIFEST"
}

# wait_for FILE REGEX PID SECONDS: until FILE matches, PID dies, or time runs out.
wait_for() {
  local file=$1 re=$2 pid=$3 secs=$4 i
  for ((i = 0; i < secs * 10; i++)); do
    grep -qE "$re" "$file" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || { grep -qE "$re" "$file" 2>/dev/null; return $?; }
    nap 0.1
  done
  return 1
}

# samples LOG FIELD: testpmd's per-second FIELD values printed since the
# first non-zero one (forwarding started, link up).
samples() {
  awk -v f="$2:" '$1 == f { if ($2 > 0) s = 1; if (s) n++ } END { print n + 0 }' "$1" 2>/dev/null
}
# wait_samples LOG FIELD N PID SECONDS: until N such samples, PID dies, or time runs out.
wait_samples() {
  local log=$1 field=$2 n=$3 pid=$4 secs=$5 i
  for ((i = 0; i < secs * 10; i++)); do
    local got
    got=$(samples "$log" "$field")
    ((${got:-0} >= n)) && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    nap 0.1
  done
  return 1
}

# start_netback NAME ARGS...: xpv-netback on core 0, waits until it listens.
# Sets NB_PID and NB_SOCK.
start_netback() {
  local name=$1
  shift
  NB_SOCK=$RUN/$name.sock
  taskset -c 0 "$NETBACK" --socket "$NB_SOCK" --stats-file "$LOGS/$name.netback.json" "$@" \
    >"$LOGS/$name.netback.log" 2>&1 &
  NB_PID=$!
  PIDS+=("$NB_PID")
  if ! wait_for "$LOGS/$name.netback.log" "listening on" "$NB_PID" 30; then
    fail "$name: xpv-netback did not start: $(tail -3 "$LOGS/$name.netback.log" | tr '\n' ' ')"
    stop_pid "$NB_PID" KILL 1
    return 1
  fi
}
stop_netback() {
  stop_pid "$NB_PID" TERM 15 || warn "xpv-netback exited with status $?"
  NB_PID=
}

EAL=(--no-huge -m 1024 --no-pci --no-shconf)
# testpmd's own counters print once per second; quit with SIGINT for totals.
TESTPMD_COMMON=(--total-num-mbufs=32768 --stats-period 1)

# start_testpmd NAME MAIN_LCORE EAL-ARGS... -- APP-ARGS...: sets TP_PID.
start_testpmd() {
  local name=$1 main=$2
  shift 2
  local prefix="xpvb$$-$name"
  PREFIXES+=("$prefix")
  # Both lcores 0 and 1: the main lcore mostly sleeps, the other forwards.
  timeout -k 10 -s INT $((SECS + 120)) dpdk-testpmd -l 0,1 --main-lcore "$main" \
    "${EAL[@]}" --file-prefix "$prefix" "$@" >"$LOGS/$name.testpmd.log" 2>&1 &
  TP_PID=$!
  PIDS+=("$TP_PID")
}

show_rate() {  # show_rate LOG FIELD LABEL WARM
  local r
  r=$(python3 "$ROOT/bench/report.py" --rate "$1" "$2" --warm "$4" 2>/dev/null) || r="?"
  info "$3: $r"
}

record kind=load when=start loadavg="$(cut -d' ' -f1-3 /proc/loadavg)"

# ---------------------------------------------------------------------------
# Wake-up latency from sleep (defined here, run at the end; alone with
# --only wakeup): l3fwd-power --interrupt-only over net_xenpv against
# xpv-netback in bridge mode. xpv-pktgen sends rounds of one burst of 32 UDP
# frames, waits until all are back, then lets the link idle. What it measures
# per round is the first frame's round trip: in through netback, out of
# l3fwd-power, back through netback. Idle 50 ms: l3fwd-power sleeps in
# rte_epoll_wait() when the burst comes (it does after 300 empty polls), so
# the figure includes its wake-up; idle 0: it is still polling, the same path
# without the wake-up. l3fwd-power is its own single lcore (-l 1: the main
# lcore serves the queue, nothing spins) on core 1; netback and pktgen on 0.
L3FWD=$BUILD/examples/l3fwd-power
run_wakeup() {  # run_wakeup NAME GAP_MS
  local name=$1 gap=$2
  [[ -x $L3FWD ]] || { fail "$name: $L3FWD was not built (package dpdk-doc)"; return; }
  start_netback "$name" --mode bridge || return
  local prefix="xpvb$$-$name"
  PREFIXES+=("$prefix")
  timeout -k 10 -s INT 300 stdbuf -oL -eL "$L3FWD" -l 1 "${EAL[@]}" --file-prefix "$prefix" -d "$PMD" \
    --vdev "net_xenpv0,backend=sim:$NB_SOCK" --log-level=user1:info -- -p 0x1 -P --config="(0,0,1)" \
    --interrupt-only --parse-ptype >"$LOGS/$name.l3fwd.log" 2>&1 &
  local l3=$!
  PIDS+=("$l3")
  if ! wait_for "$LOGS/$name.l3fwd.log" "entering main interrupt loop" "$l3" 60; then
    fail "$name: l3fwd-power did not start: $(tail -3 "$LOGS/$name.l3fwd.log" | tr '\n' ' ')"
    stop_pid "$l3" KILL 1
    stop_netback
    return
  fi
  # The first frontend to connect to the bridge is domain 1: 00:16:3e:00:01:00.
  taskset -c 0 timeout -k 5 -s INT 300 "$PKTGEN" --platform "sim:$NB_SOCK" --role gen --proto udp \
    --dst-mac 00:16:3e:00:01:00 --dst-ip 1.1.1.1 --count 32 --window 32 --rounds "$WAKE_ROUNDS" \
    --gap-ms "$gap" --mode event --quiet --json "$LOGS/$name.pktgen.json" >"$LOGS/$name.pktgen.log" 2>&1
  local rc=$?
  stop_pid "$l3" INT 10
  stop_netback
  ((rc == 0)) || fail "$name: xpv-pktgen exited with status $rc: $(tail -2 "$LOGS/$name.pktgen.log" | tr '\n' ' ')"
  record kind=wakeup name="$name" gap_ms="$gap" pktgen="$LOGS/$name.pktgen.json" l3fwd="$LOGS/$name.l3fwd.log" rc="$rc"
  info "$name: $(python3 "$ROOT/bench/report.py" --wakeup "$LOGS/$name.pktgen.json" "$LOGS/$name.l3fwd.log" 2>&1)"
}
wakeup_step() {
  step "wake-up latency: l3fwd-power --interrupt-only over net_xenpv, $WAKE_ROUNDS rounds of 32 frames"
  run_wakeup wakeup-asleep 50
  run_wakeup wakeup-awake 0
}
# TX-heavy (60-byte frames as fast as the ring takes them) against xpv-netback
# sink, the frontend sleeping on its event channels: handler-only reaping (the
# default) and the transmit path reaping too (--experiment-reap-tx-in-transmit,
# Linux netfront's rule before the fix). Alternating pairs in one run; the
# report takes medians and the median of the per-pair ratios.
# pktgen_run NAME SECS [PKTGEN-ARGS...]: xpv-pktgen on core 1 in event mode
# against the started netback for SECS seconds (results in
# $LOGS/NAME.pktgen.json and .log), then stops the netback; sets PG_RC and
# fails the step when pktgen failed or wrote no results.
pktgen_run() {
  local name=$1 secs=$2
  shift 2
  taskset -c 1 timeout -k 5 -s INT $((secs + 60)) "$PKTGEN" --platform "sim:$NB_SOCK" --mode event \
    --count 0 --seconds "$secs" --quiet --json "$LOGS/$name.pktgen.json" "$@" \
    >"$LOGS/$name.pktgen.log" 2>&1 &
  local pg=$!
  PIDS+=("$pg")
  wait "$pg"
  PG_RC=$?
  forget_pid "$pg"
  stop_netback
  [[ $PG_RC == 0 && -s $LOGS/$name.pktgen.json ]] ||
    fail "$name: xpv-pktgen exited with status $PG_RC: $(tail -3 "$LOGS/$name.pktgen.log" | tr '\n' ' ')"
}
run_seed() {  # run_seed NAME PAIR [PKTGEN-ARGS...]
  local name=$1 pair=$2
  shift 2
  start_netback "$name-$pair" --mode sink || return
  pktgen_run "$name-$pair" "$SEED_SECS" --role tx --size 60 "$@"
  record kind=seed name="$name" pair="$pair" pktgen="$LOGS/$name-$pair.pktgen.json" rc="$PG_RC"
  info "$name pair $pair: $(grep -E 'notifies' "$LOGS/$name-$pair.pktgen.log" | head -1 | sed 's/^xpv-pktgen: //')"
}
seed_step() {
  step "the seeds' experiment: who reaps TX responses, xpv-pktgen --role tx --mode event, ${SEED_PAIRS} alternating pairs of ${SEED_SECS}s"
  local pair
  for ((pair = 1; pair <= SEED_PAIRS; pair++)); do
    run_seed handler-only "$pair"
    run_seed reap-in-xmit "$pair" --experiment-reap-tx-in-transmit
  done
}
if [[ $ONLY == seed ]]; then
  seed_step
  printf '\n[bench %4ss] done (--only seed: no report written; logs in %s)\n' "$(elapsed)" "$LOGS"
  exit $((FAILED > 0))
fi

# TCP offloads over xpv-netback's bridge: xpv-pktgen --proto tcp from one
# guest to another whose sink recomputes every checksum and checks every byte
# (examples/tcp_stream.h). 1514-byte segments with full or partial checksums,
# and 64 KiB TSO packets that netback cuts to the MSS for a sink without GSO or
# hands whole to one with LRO. The sender goes as fast as the ring takes it;
# goodput is the stream bytes the sink received intact over the sender's time.
# Alternating rounds (a pair: each case once), medians in the report.
run_tcp() {  # run_tcp NAME PAIR "SINK-ARGS" TX-ARGS...
  local name=$1 pair=$2 sinkargs=$3 n=tcp-$1-$2
  shift 3
  start_netback "$n" --mode bridge || return
  # shellcheck disable=SC2086
  taskset -c 1 "$PKTGEN" --platform "sim:$NB_SOCK" --role sink --mode event --announce \
    --seconds $((TCP_SECS + 30)) --json "$LOGS/$n.sink.json" $sinkargs >"$LOGS/$n.sink.log" 2>&1 &
  local sk=$! mac
  PIDS+=("$sk")
  wait_for "$LOGS/$n.sink.log" "connected: domain" "$sk" 30 || { fail "$n: the sink did not connect"; stop_netback; return; }
  mac=$(sed -nE 's/.* mac ([0-9a-fA-F:]+) .*/\1/p' "$LOGS/$n.sink.log" | head -1)
  taskset -c 1 timeout -k 5 -s INT $((TCP_SECS + 60)) "$PKTGEN" --platform "sim:$NB_SOCK" --role tx \
    --mode event --count 0 --seconds "$TCP_SECS" --quiet --dst-mac "$mac" --json "$LOGS/$n.tx.json" "$@" \
    >"$LOGS/$n.tx.log" 2>&1
  local rc=$?
  nap 1
  stop_pid "$sk" INT 15
  local src=$?
  stop_netback
  ((rc == 0 && src == 0)) || fail "$n: sender exit $rc, sink exit $src ($(tail -2 "$LOGS/$n.sink.log" | tr '\n' ' '))"
  record kind=tcp name="$name" pair="$pair" sink="$LOGS/$n.sink.json" tx="$LOGS/$n.tx.json" \
    netback="$LOGS/$n.netback.json" rc=$((rc + src))
  info "$name pair $pair: $(grep -h 'tcp:' "$LOGS/$n.sink.log" | sed 's/^xpv-pktgen: //')"
}
tcp_step() {
  step "TCP offloads over xpv-netback (bridge), ${TCP_PAIRS} alternating round(s) of ${TCP_SECS}s per case"
  local pair
  for ((pair = 1; pair <= TCP_PAIRS; pair++)); do
    run_tcp seg1500 "$pair" "--proto tcp" --proto tcp --size 1514
    run_tcp seg1500-csum "$pair" "--proto tcp" --proto tcp --size 1514 --csum-offload
    run_tcp tso64k "$pair" "--proto tcp" --proto tcp --size 65535 --tso 1460
    run_tcp tso64k-lro "$pair" "--proto tcp --lro" --proto tcp --size 65535 --tso 1460
  done
}
if [[ $ONLY == tcp ]]; then
  tcp_step
  printf '\n[bench %4ss] done (--only tcp: no report written; logs in %s)\n' "$(elapsed)" "$LOGS"
  exit $((FAILED > 0))
fi
# ---------------------------------------------------------------------------
# TCP through a PV domU on real Xen: scripts/e2e-xen.sh runs check tcp-through-domu (and the
# checks it builds on) alone, one round of each way (the on/off figures), then check
# tcp-windows: the kernel bridge (vifs 2 and 3) and each DPDK way the on/kernel targets compare
# (testpmd, xpv-fwd, xpv-fwd zero-copy, testpmd idle_sleep zero-copy; vifs 4 and 5) take turns
# in windows of a few seconds, XEN_TCP_WINDOWS of each way, each between two kernel-bridge
# windows, and the report judges each way on the median of those pairs: runs minutes apart
# (the rounds, until 2026-12-06) fell in different speed spells of this VM as often as not.
XEN_TCP_CHECKS="guest-type payload-mounted packages-installed xen-devices vifs-untouched kernel-netfront-ping tcp-through-domu tcp-windows"
xentcp_step() {
  local log=$LOGS/e2e-tcp.log rc
  step "real Xen: TCP through a PV domU, $XEN_TCP_ROUNDS round(s), then $XEN_TCP_WINDOWS alternating windows of each DPDK way against the kernel bridge (scripts/e2e-xen.sh, tcp-through-domu and tcp-windows alone)"
  rm -f "$log"
  XPV_E2E_GUEST_TYPES=pv XPV_E2E_TCP_ROUNDS=$XEN_TCP_ROUNDS XPV_E2E_TCP_WINDOWS=$XEN_TCP_WINDOWS \
    XPV_E2E_ONLY=$XEN_TCP_CHECKS \
    "$ROOT/scripts/e2e-xen.sh" --build "$BUILD" --log "$log" --timeout 3600 >"$LOGS/e2e-tcp.out" 2>&1
  rc=$?
  if grep -q "^CHECK tcp-through-domu PASS" "$log" 2>/dev/null && grep -q "^CHECK tcp-windows PASS" "$log"; then
    record kind=e2e_tcp log="$log" rounds="$XEN_TCP_ROUNDS" windows="$XEN_TCP_WINDOWS"
    info "$(grep -oE "[0-9]+ rounds, kernel bridge/[^;]*" "$log" | head -n 1)"
    info "$(grep -oE "CHECK tcp-windows PASS .*Mbit/s in order" "$log" | head -n 1)"
  else
    record kind=e2e_tcp log=
    fail "the real-Xen TCP run failed (exit $rc): $(grep -hE '^CHECK .* FAIL' "$log" "$LOGS/e2e-tcp.out" 2>/dev/null |
      head -n 3 | cut -c1-300 | tr '\n' ' ')(see $LOGS/e2e-tcp.out)"
  fi
}
if [[ $ONLY == xentcp ]]; then
  ((XEN_TCP_ROUNDS > 0)) || die "--only xentcp with --no-xen or --quick: nothing to run"
  xentcp_step
  printf '\n[bench %4ss] done (--only xentcp: no report written; logs in %s)\n' "$(elapsed)" "$LOGS"
  exit $((FAILED > 0))
fi
if [[ $ONLY == wakeup ]]; then
  wakeup_step
  printf '\n[bench %4ss] done (--only wakeup: no report written; logs in %s)\n' "$(elapsed)" "$LOGS"
  exit $((FAILED > 0))
fi


# What bounds throughput: instructions per packet of the backend half in the
# TX (sink) and RX (source) setups of the throughput step, collected inside
# its worker's ring handling only; with static grants (the default: memcpy
# into the pages the frontend registered) and without (--no-static-grants:
# a grant copy per buffer, what Linux netback does), in the same run.
run_nb_profile() {  # run_nb_profile DIR [copy]
  local dir=$1 variant=${2:-} name nbmode fwd nbargs=()
  name=nbprof-$dir${variant:+-$variant}
  [[ $variant == copy ]] && nbargs=(--no-static-grants)
  if [[ $dir == tx ]]; then nbmode=sink fwd=txonly; else nbmode=source fwd=rxonly; fi
  NB_SOCK=$RUN/$name.sock
  taskset -c 0 valgrind --tool=callgrind --collect-atstart=no \
    --toggle-collect='xpv::netback::Queue::tx_action*' --toggle-collect='xpv::netback::Queue::service*' \
    --callgrind-out-file="$LOGS/$name.callgrind" \
    "$NETBACK" --socket "$NB_SOCK" --stats-file "$LOGS/$name.netback.json" --mode "$nbmode" --busy-poll \
    --source-size 64 "${nbargs[@]}" >"$LOGS/$name.netback.log" 2>&1 &
  NB_PID=$!
  PIDS+=("$NB_PID")
  if ! wait_for "$LOGS/$name.netback.log" "listening on" "$NB_PID" 60; then
    fail "$name: xpv-netback under valgrind did not start"
    stop_pid "$NB_PID" KILL 1
    return
  fi
  start_testpmd "$name" 0 -d "$PMD" --vdev "net_xenpv0,backend=sim:$NB_SOCK" -- \
    "${TESTPMD_COMMON[@]}" --forward-mode="$fwd" --txpkts=64
  local tp=$TP_PID
  if wait_for "$LOGS/$name.testpmd.log" "Rx-pps" "$tp" 60; then
    nap "$NB_PROF_SECS"
  else
    fail "$name: testpmd did not start forwarding"
  fi
  stop_pid "$tp" INT 20
  stop_pid "$NB_PID" TERM 60 || warn "xpv-netback (valgrind) exited with status $?"
  NB_PID=
  record kind=nbprof dir="$dir" variant="${variant:-static}" out="$LOGS/$name.callgrind" \
    netback="$LOGS/$name.netback.json"
  info "netback $dir${variant:+ ($variant)}: $(python3 "$ROOT/bench/report.py" --nbprof "$LOGS/$name.callgrind" "$LOGS/$name.netback.json" "$dir" 2>&1)"
}
nbprof_step() {
  step "what bounds throughput: xpv-netback's worker under callgrind, ${NB_PROF_SECS}s per direction, with and without static grants"
  run_nb_profile tx
  run_nb_profile tx copy
  run_nb_profile rx
  run_nb_profile rx copy
  python3 "$ROOT/bench/report.py" --nbprof-table "$MANIFEST" || warn "no xpv-netback profile table"
}
if [[ $ONLY == nbprof ]]; then
  nbprof_step
  printf '\n[bench %4ss] done (--only nbprof: no report written; logs in %s)\n' "$(elapsed)" "$LOGS"
  exit $((FAILED > 0))
fi

if [[ $ONLY != sgrants ]]; then  # --only sgrants: straight to the throughput setups
# ---------------------------------------------------------------------------
step "building the benchmark binaries"
# The library, PMD, netback and pktgen are built by 'make build'; the
# benchmark programs are bench/ of the same build.
ninja -C "$BUILD" bench/xpv-bench-datapath bench/xpv-bench-micro >"$LOGS/build.log" 2>&1 ||
  { tail -30 "$LOGS/build.log" >&2; die "building the benchmarks in $BUILD failed (valgrind/callgrind.h and libbenchmark-dev are needed: 'make setup')"; }
BENCH_BIN=$BUILD/bench
for b in xpv-bench-datapath xpv-bench-micro; do
  [[ -x $BENCH_BIN/$b ]] || die "$BENCH_BIN/$b was not built (see $LOGS/build.log)"
done
info "benchmarks in $BENCH_BIN"

# ---------------------------------------------------------------------------
step "library data path: instructions per packet (callgrind, ideal in-process backend)"
# Only the public entry points are collected (everything they call included);
# the ideal backend runs between the calls. The driver zeroes the counters
# after a warm-up, so the dump holds exactly the measured packets.
cg_run() {  # cg_run DIR BURST SIZE
  local dir=$1 burst=$2 size=$3 fn name
  [[ $dir == tx ]] && fn='xpv::Queue::transmit*' || fn='xpv::Queue::receive_raw*'
  name=cg-$dir-b$burst-s$size
  if valgrind --tool=callgrind --collect-atstart=no --toggle-collect="$fn" \
    --callgrind-out-file="$LOGS/$name.callgrind" \
    "$BENCH_BIN/xpv-bench-datapath" --dir "$dir" --burst "$burst" --size "$size" \
    --packets "$CG_PACKETS" >"$LOGS/$name.log" 2>&1; then
    record kind=callgrind dir="$dir" burst="$burst" size="$size" packets="$CG_PACKETS" \
      out="$LOGS/$name.callgrind" log="$LOGS/$name.log"
    info "$dir burst $burst size $size: $(python3 "$ROOT/bench/cgprof.py" "$LOGS/$name.callgrind" \
      --packets "$CG_PACKETS" --top 1 | python3 -c 'import json,sys; print("%.1f instructions/packet" % json.load(sys.stdin)["per_packet"])')"
  else
    fail "callgrind $dir burst $burst failed: $(tail -3 "$LOGS/$name.log" | tr '\n' ' ')"
  fi
}
for dir in tx rx; do
  for burst in 1 8 32; do cg_run "$dir" "$burst" 64; done
  cg_run "$dir" 32 1500
done
cg_run rx-empty 32 64  # idle polls: receive calls on an empty ring ("packets" = calls)

# ---------------------------------------------------------------------------
step "library data path: cycles per packet (Google Benchmark, pinned to core 1)"
REPS=5 MINT=0.1
((QUICK)) && REPS=3 MINT=0.02
if taskset -c 1 "$BENCH_BIN/xpv-bench-micro" --benchmark_repetitions=$REPS \
  --benchmark_report_aggregates_only=true --benchmark_min_time=$MINT \
  --benchmark_out="$LOGS/micro.json" --benchmark_out_format=json >"$LOGS/micro.log" 2>&1; then
  record kind=micro out="$LOGS/micro.json"
  grep -E '_median' "$LOGS/micro.log" | sed -E 's/ +/ /g' | cut -c1-150 | while read -r l; do info "$l"; done
else
  fail "xpv-bench-micro failed: $(tail -3 "$LOGS/micro.log" | tr '\n' ' ')"
fi

fi  # $ONLY != sgrants

# ---------------------------------------------------------------------------
[[ $ONLY == sgrants ]] || step "throughput: one ${SECS}s run each at 64 bytes, testpmd over net_xenpv and net_memif, cores 0+1 (per-second rates, xstats)"
# xenpv, one direction at a time, the frontend's forwarding lcore on core 1
# and xpv-netback (busy-polling, so it never sleeps and never needs a
# notification) on core 0. TX: testpmd txonly -> netback sink. RX: netback
# source -> testpmd rxonly.
run_xenpv() {  # run_xenpv DIR SIZE
  local dir=$1 size=$2 name nbmode fwd field
  name=xenpv-$dir-$size
  if [[ $dir == tx ]]; then nbmode=sink fwd=txonly field=Tx-pps; else nbmode=source fwd=rxonly field=Rx-pps; fi
  start_netback "$name" --mode "$nbmode" --busy-poll --source-size "$size" || return
  start_testpmd "$name" 0 -d "$PMD" --vdev "net_xenpv0,backend=sim:$NB_SOCK" -- \
    "${TESTPMD_COMMON[@]}" --forward-mode="$fwd" --txpkts="$size" \
    --display-xstats=q0_notifies,q0_events,q0_spurious_events,q0_ring_full,rx_q0_packets,tx_q0_packets
  local tp=$TP_PID
  # WARM seconds of warm-up and the last sample (may overlap the stop) are
  # dropped by the report: SECS full seconds remain.
  wait_samples "$LOGS/$name.testpmd.log" "$field" $((SECS + WARM + 1)) "$tp" $((SECS + 90)) ||
    fail "$name: no $((SECS + WARM + 1)) non-zero $field samples: $(tail -3 "$LOGS/$name.testpmd.log" | tr '\n' ' ')"
  stop_pid "$tp" INT 20
  stop_netback
  record kind=throughput setup=xenpv dir="$dir" size="$size" field="$field" warm="$WARM" \
    log="$LOGS/$name.testpmd.log" netback="$LOGS/$name.netback.json"
  show_rate "$LOGS/$name.testpmd.log" "$field" "xenpv $dir ${size}B (median $field)" "$WARM"
}
# memif: a server and a client testpmd, the server forwarding on core 1, the
# client on core 0. a2b: server txonly -> client rxonly; b2a: the reverse.
run_memif() {  # run_memif DIR SIZE
  local dir=$1 size=$2 attempt
  for attempt in 1 2; do
    memif_pair "$dir" "$size" "$attempt" && return
    ((attempt == 1)) && info "memif $dir ${size}B: no traffic; starting the pair again"
  done
  fail "memif-$dir-$size: the receiver printed fewer than $((SECS + WARM + 1)) non-zero Rx-pps samples, twice"
}
memif_pair() {  # memif_pair DIR SIZE ATTEMPT: 0 when the receiver got its samples
  local dir=$1 size=$2 name afwd bfwd sock rxlog ok=0
  name=memif-$dir-$size
  sock=$RUN/$name-$3.memif.sock
  if [[ $dir == a2b ]]; then afwd=txonly bfwd=rxonly; else afwd=rxonly bfwd=txonly; fi
  start_testpmd "$name-a" 0 --vdev "net_memif0,role=server,socket=$sock,socket-abstract=no" -- \
    "${TESTPMD_COMMON[@]}" --forward-mode="$afwd" --txpkts="$size"
  local a=$TP_PID
  # The client connects only once the server's port is started (testpmd
  # then waits for the link): a client connecting earlier may get a link
  # that is up but never passes a packet.
  wait_for "$LOGS/$name-a.testpmd.log" "Checking link statuses" "$a" 60 && [[ -S $sock ]] ||
    warn "$name: the memif server did not start its port (or create $sock)"
  start_testpmd "$name-b" 1 --vdev "net_memif0,role=client,socket=$sock,socket-abstract=no" -- \
    "${TESTPMD_COMMON[@]}" --forward-mode="$bfwd" --txpkts="$size"
  local b=$TP_PID rx
  if [[ $dir == a2b ]]; then rxlog=$LOGS/$name-b.testpmd.log rx=$b; else rxlog=$LOGS/$name-a.testpmd.log rx=$a; fi
  # memif takes a few seconds after link-up before packets flow; once they
  # do, WARM seconds of warm-up, SECS measured, one more (may overlap the stop).
  wait_samples "$rxlog" Rx-pps $((SECS + WARM + 1)) "$rx" $((SECS + 40)) && ok=1
  # Both at once. A memif peer whose partner left may crash on its way out
  # (DPDK 22.11; its per-second statistics are in its log already): the
  # shell's "Segmentation fault" notice is silenced and the crash noted.
  kill -INT "$a" "$b" 2>/dev/null
  local ra rb
  { stop_pid "$a" INT 20; ra=$?; stop_pid "$b" INT 20; rb=$?; } 2>>"$LOGS/$name.stop.log"
  ((ra > 128 || rb > 128)) && info "(a memif peer died of signal $((ra > 128 ? ra - 128 : rb - 128)) on exit: known, harmless here)"
  ((ok)) || return 1
  record kind=throughput setup=memif dir="$dir" size="$size" field=Rx-pps log="$rxlog" warm="$WARM"
  show_rate "$rxlog" Rx-pps "memif $dir ${size}B (median Rx-pps of the receiver)" "$WARM"
  return 0
}
# One run of each at 64 bytes, for what its per-second rates and xstats show (the report's
# series plot, TX ring-full stops, notifies). The ratios xenpv/memif come from alternating
# windows (below): runs of SECS seconds tens of seconds apart fall in different speed spells of
# this VM as often as not.
if [[ $ONLY != sgrants ]]; then
  # Interleaved, so that drift in the machine's load hits both setups alike.
  run_memif a2b 64
  run_xenpv tx 64
  run_xenpv rx 64
  run_memif b2a 64
fi

# windows_run SIZE SETUPS ROUNDS KIND: bench/alternate.py (memif and the xenpv SETUPS take turns
# in one-second windows of SIZE-byte frames, each xenpv window between two memif windows), its
# JSON recorded as KIND; 1 with a message when it failed.
windows_run() {
  local size=$1 setups=$2 rounds=$3 kind=$4 dir=$LOGS/windows-$1
  local out=$dir/windows.json
  mkdir -p "$dir"
  # Its own processes (it stops them itself, on SIGTERM too); a bound on the whole run.
  if timeout -k 30 $((rounds * 30 + 300)) python3 "$ROOT/bench/alternate.py" --pmd "$PMD" \
    --netback "$NETBACK" --logs "$dir" --run "$RUN" --out "$out" --rounds "$rounds" \
    --size "$size" --setups "$setups" >"$dir/alternate.log" 2>&1; then
    record kind="$kind" size="$size" file="$out"
  else
    fail "windows of ${size}-byte frames ($setups): bench/alternate.py failed: $(tail -3 "$dir/alternate.log" | tr '\n' ' ')"
    return 1
  fi
}

# ---------------------------------------------------------------------------
# Static grants (issue 12; netif.h control ring ADD_GREF_MAPPING): 64-byte xenpv TX and RX with
# xpv-netback copying by memcpy into the registered pages and with grant copies, against memif.
# This VM runs in spells of a few seconds at one of two speeds (memif too): runs of SECS seconds
# tens of seconds apart compared the spells as often as the setups. bench/alternate.py keeps
# every setup running and lets them take turns in one-second windows, each xenpv window between
# two memif windows; the report judges per setup the median over the pairs whose two memif
# windows agree (one spell), and the slower direction.
SG_ROUNDS=${XPV_BENCH_SG_ROUNDS:-12}
((QUICK)) && SG_ROUNDS=3
sgrants_step() {
  step "static grants: 64-byte xenpv TX/RX with and without static grants, and memif, ${SG_ROUNDS} rounds of alternating 1 s windows"
  windows_run 64 xenpv_tx,xenpv_rx,xenpv-copy_tx,xenpv-copy_rx "$SG_ROUNDS" sgrants-windows &&
    { python3 "$ROOT/bench/report.py" --sgrants-table "$MANIFEST" || warn "no static-grants table"; }
}
sgrants_step
# The 64-byte windows above are the throughput target's too (xenpv_tx and xenpv_rx are
# xpv-netback's default, static grants); 256 and 1500 bytes in windows of their own.
WIN_ROUNDS=${XPV_BENCH_WIN_ROUNDS:-6}
((QUICK)) && WIN_ROUNDS=3
if [[ $ONLY != sgrants ]]; then
  for size in 256 1500; do
    step "throughput: ${size}-byte xenpv TX/RX and memif, ${WIN_ROUNDS} rounds of alternating 1 s windows"
    windows_run "$size" xenpv_tx,xenpv_rx "$WIN_ROUNDS" windows
  done
fi
if [[ $ONLY == sgrants ]]; then
  printf '\n[bench %4ss] done (--only sgrants: no report written; logs in %s)\n' "$(elapsed)" "$LOGS"
  exit $((FAILED > 0))
fi

# ---------------------------------------------------------------------------
step "multi-queue: testpmd io over net_xenpv, 1/2/4 queues, xpv-netback loopback, ${MQ_SECS}s each"
# The backend's workers sleep on their event channels here (no --busy-poll):
# with N queues it runs N workers, and N spinning threads on one core would
# measure the scheduler. The frontend polls (testpmd), one lcore for all queues.
run_mq() {  # run_mq QUEUES
  local nq=$1 name xs q
  name=mq-$nq
  xs=
  for ((q = 0; q < nq; q++)); do xs+="q${q}_notifies,q${q}_events,q${q}_spurious_events,rx_q${q}_packets,tx_q${q}_packets,q${q}_ring_full,"; done
  start_netback "$name" --mode loopback || return
  start_testpmd "$name" 0 -d "$PMD" --vdev "net_xenpv0,backend=sim:$NB_SOCK" -- \
    "${TESTPMD_COMMON[@]}" --forward-mode=io --tx-first --rxq="$nq" --txq="$nq" \
    --display-xstats="${xs%,}"
  local tp=$TP_PID
  wait_samples "$LOGS/$name.testpmd.log" Rx-pps $((MQ_SECS + WARM + 1)) "$tp" $((MQ_SECS + 90)) ||
    fail "$name: no $((MQ_SECS + WARM + 1)) non-zero Rx-pps samples: $(tail -3 "$LOGS/$name.testpmd.log" | tr '\n' ' ')"
  stop_pid "$tp" INT 20
  stop_netback
  record kind=mq queues="$nq" warm="$WARM" log="$LOGS/$name.testpmd.log" netback="$LOGS/$name.netback.json"
  show_rate "$LOGS/$name.testpmd.log" Rx-pps "$nq queue(s), io loopback (median Rx-pps)" "$WARM"
}
for nq in 1 2 4; do run_mq "$nq"; done

# ---------------------------------------------------------------------------
step "event mode: xpv-pktgen --mode event against xpv-netback loopback, ${EVT_SECS}s each"
# Sustained traffic (a window of 256 frames in flight, bursts of 32), the
# frontend sleeping on its event channels whenever it has nothing to do; then
# the same with every TX response held back 1 ms (--fault late-tx-rsp).
run_event() {  # run_event NAME NETBACK-ARGS...
  local name=$1
  shift
  start_netback "$name" --mode loopback "$@" || return
  pktgen_run "$name" "$EVT_SECS" --role gen --window 256
  record kind=event name="$name" args="$*" pktgen="$LOGS/$name.pktgen.json" \
    log="$LOGS/$name.pktgen.log" netback="$LOGS/$name.netback.json" rc="$PG_RC"
  info "$name: $(grep -E 'notifies' "$LOGS/$name.pktgen.log" | head -1 | sed 's/^xpv-pktgen: //')"
}
run_event event
run_event event-late-tx-rsp --fault late-tx-rsp --fault-arg 1 --fault-after 1000

# ---------------------------------------------------------------------------
seed_step

# ---------------------------------------------------------------------------
nbprof_step

wakeup_step

tcp_step

((XEN_TCP_ROUNDS > 0)) && xentcp_step

# ---------------------------------------------------------------------------
step "real Xen: make e2e-xen results"
E2E=$BUILD/e2e-xen/e2e.log
if [[ -f $E2E ]]; then
  cp "$E2E" "$LOGS/e2e.log"
  record kind=e2e log="$LOGS/e2e.log" mtime="$(date -r "$E2E" -u +%FT%TZ)"
  info "found $E2E ($(grep -c 'pps' "$E2E") line(s) with 'pps')"
else
  record kind=e2e log=
  info "not run ($E2E is absent)"
fi

# ---------------------------------------------------------------------------
step "report"
record kind=load when=end loadavg="$(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$ROOT/bench/report.py" --logs "$LOGS" --out "$OUT" --root "$ROOT" --build "$BUILD" \
  --bench-bin "$BENCH_BIN" --started "$T0" --failed "$FAILED" ||
  { fail "the report generator failed"; }
# The README shows the latest targets table (between its bench-table markers)
# when the report went to the default place.
if [[ $(realpath -m "$OUT") == "$ROOT/bench/results" && -f $OUT/report.md ]]; then
  python3 - "$OUT/report.md" README.md <<'PY' || warn "could not update the README's table"
import re, sys
report, readme = open(sys.argv[1]).read(), open(sys.argv[2]).read()
m = re.search(r"^## Targets\n\n(.*?)\n\n", report, re.S | re.M)
gen = re.search(r"on (\S+), in \d+ s; commit (\w+)", report)
if m:
    stamp = "Measured by `make bench` on %s (commit %s):" % (gen.group(1)[:16].replace("T", " "), gen.group(2)) if gen else ""
    block = "<!-- bench-table:start -->\n%s\n\n%s\n<!-- bench-table:end -->" % (stamp, m.group(1))
    new = re.sub(r"<!-- bench-table:start -->.*?<!-- bench-table:end -->", lambda _: block, readme, flags=re.S)
    if new != readme:
        open(sys.argv[2], "w").write(new)
PY
fi
printf '\n[bench %4ss] done: %s, %s, plots in %s\n' "$(elapsed)" "${OUT#"$ROOT"/}/latest.json" \
  "${OUT#"$ROOT"/}/report.md" "${OUT#"$ROOT"/}/"
if ((FAILED)); then
  echo "bench: $FAILED measurement(s) failed; see the warnings above and $LOGS" >&2
  exit 1
fi
exit 0
