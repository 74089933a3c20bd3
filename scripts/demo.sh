#!/bin/bash
# make demo: Debian's dpdk-testpmd forwarding over net_xenpv against
# xpv-netback (loopback) in another process, for about ten seconds; prints
# packets per second and the event counters, and cleans up (also on Ctrl-C).
#
#   scripts/demo.sh [--build DIR] [--seconds N] [--size BYTES] [--queues N]
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=build
SECS=10
SIZE=64
QUEUES=1
while (($#)); do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --seconds) SECS=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --queues) QUEUES=$2; shift 2 ;;
    *) echo "demo: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

NETBACK=$BUILD/src/netback/xpv-netback
PMD=$PWD/$BUILD/drivers/net_xenpv/librte_net_xenpv.so
for f in "$NETBACK" "$PMD"; do
  [[ -e $f ]] || { echo "demo: $f is missing: run 'make build' first" >&2; exit 1; }
done
command -v dpdk-testpmd >/dev/null || { echo "demo: dpdk-testpmd not found (package dpdk-dev): run 'make setup'" >&2; exit 1; }
source scripts/pmd-path.sh
PMD=$(xpv_pmd_path "$PMD") || exit 1

RUN=$(mktemp -d /run/xpv-demo.XXXXXX 2>/dev/null || mktemp -d)
chmod 755 "$RUN"
SOCK=$RUN/netback.sock
NB_PID=
TP_PID=
cleanup() {
  [[ -n $TP_PID ]] && kill -INT "$TP_PID" 2>/dev/null && wait "$TP_PID" 2>/dev/null
  [[ -n $NB_PID ]] && kill -TERM "$NB_PID" 2>/dev/null && wait "$NB_PID" 2>/dev/null
  rm -rf "$RUN"
}
trap cleanup EXIT
trap 'echo; echo "demo: interrupted, cleaning up"; exit 130' INT TERM

echo "demo: starting xpv-netback (simulated dom0, loopback) on $SOCK"
"$NETBACK" --socket "$SOCK" --mode loopback --stats-file "$RUN/netback.json" >"$RUN/netback.log" 2>&1 &
NB_PID=$!
for _ in $(seq 100); do
  grep -q "listening on" "$RUN/netback.log" 2>/dev/null && break
  kill -0 $NB_PID 2>/dev/null || { cat "$RUN/netback.log"; echo "demo: xpv-netback died" >&2; exit 1; }
  sleep 0.1
done

XSTATS=$(for ((q = 0; q < QUEUES; q++)); do printf 'q%d_notifies,q%d_events,q%d_spurious_events,' $q $q $q; done)
echo "demo: running dpdk-testpmd over net_xenpv for ${SECS}s (io forwarding, ${SIZE}-byte packets, $QUEUES queue(s))"
timeout -k 10 -s INT $((SECS + 15)) dpdk-testpmd -l 0-1 --no-huge -m 1024 --no-pci --no-shconf \
  --file-prefix "xpvdemo$$" -d "$PMD" --vdev "net_xenpv0,backend=sim:$SOCK" -- \
  --total-num-mbufs=16384 --forward-mode=io --tx-first --txpkts="$SIZE" \
  --rxq="$QUEUES" --txq="$QUEUES" --stats-period 1 --display-xstats="${XSTATS%,}" \
  >"$RUN/testpmd.log" 2>&1 &
TP_PID=$!
# Let it forward for SECS seconds after forwarding started, then stop it.
for _ in $(seq 300); do
  grep -q "Rx-pps" "$RUN/testpmd.log" 2>/dev/null && break
  kill -0 $TP_PID 2>/dev/null || break
  sleep 0.1
done
sleep "$SECS"
kill -INT $TP_PID 2>/dev/null
wait $TP_PID
rc=$?
TP_PID=
kill -TERM $NB_PID 2>/dev/null
wait $NB_PID 2>/dev/null
NB_PID=

if ! grep -q "Rx-pps" "$RUN/testpmd.log"; then
  echo "demo: testpmd did not forward (exit $rc); its log:" >&2
  tail -30 "$RUN/testpmd.log" >&2
  exit 1
fi
python3 - "$RUN/testpmd.log" "$RUN/netback.json" "$SECS" <<'EOF'
import json, re, statistics, sys
log = open(sys.argv[1]).read()
rx_pps = [int(x) for x in re.findall(r"Rx-pps:\s+(\d+)", log)]
tx_pps = [int(x) for x in re.findall(r"Tx-pps:\s+(\d+)", log)]
# Final totals printed by testpmd at exit.
rx = [int(x) for x in re.findall(r"RX-packets:\s+(\d+)", log)]
tx = [int(x) for x in re.findall(r"TX-packets:\s+(\d+)", log)]
xs = {}
for name, val in re.findall(r"^\s+(q\d+_[a-z_]+)\s+(\d+)\s+\d+\s*$", log, re.M):
    xs[name] = int(val)  # last value wins
steady = rx_pps[1:] or rx_pps
print()
print("=== xpv demo: testpmd over net_xenpv against xpv-netback (loopback) ===")
print(f"  throughput  median {statistics.median(steady) / 1e6:.3f} Mpps, max {max(steady) / 1e6:.3f} Mpps "
      f"(per-second Rx-pps over {len(rx_pps)} s)")
if rx and tx:
    print(f"  totals      RX {rx[-1]:,} packets, TX {tx[-1]:,} packets")
notifies = sum(v for k, v in xs.items() if k.endswith("_notifies"))
events = sum(v for k, v in xs.items() if k.endswith("_events") and not k.endswith("spurious_events"))
spurious = sum(v for k, v in xs.items() if k.endswith("_spurious_events"))
pk = tx[-1] if tx else 0
print(f"  events      notifies {notifies:,} ({notifies / pk if pk else 0:.5f} per packet), "
      f"events {events:,}, spurious events {spurious:,}")
try:
    nb = json.load(open(sys.argv[2]))
    print(f"  netback     tx {nb['totals']['tx_packets']:,} rx {nb['totals']['rx_packets']:,} packets, "
          f"notifies {nb['totals']['notifies_sent']:,}, events {nb['totals']['events']:,}, fatal errors {nb['totals']['fatal_errors']}")
except Exception as e:  # the stats file is optional for the demo
    print(f"  netback     (no stats: {e})")
print("  (poll mode: the frontend keeps backend notifications disarmed; see `make bench` for event mode)")
EOF
