#!/bin/bash
# Integration checks with real processes. Called by scripts/run-tests.sh.
#   tests/integration/run.sh --build DIR [--asan DIR] [--only GROUP[,GROUP]]
# Groups: netfront (xpv-netback + xpv-pktgen), pmd (dpdk-testpmd over net_xenpv),
# offload (offload.sh alone, also part of netfront), pmd-offload (pmd_offload.sh
# alone, also part of pmd), pmd-rss (pmd_rss.sh alone, also part of pmd), pmd-idle-sleep
# (pmd_idle_sleep.sh alone, also part of pmd), control
# (control.sh alone, also part of pmd), bench-windows (bench_windows.sh: make bench's windows
# driver, alone, also part of pmd), static-grants
# (static_grants.sh alone, also part of netfront), features (the NIC features table against the
# driver).
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=build
ASAN=
ONLY=
while (($#)); do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --asan) ASAN=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    *) echo "integration: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
source tests/integration/lib.sh
trap cleanup_all EXIT
# A check that writes commands to an interactive testpmd which has already died
# must fail that check, not end the whole run with SIGPIPE: writes then fail
# with EPIPE instead.
trap '' PIPE

NETBACK=$BUILD/src/netback/xpv-netback
PKTGEN=$BUILD/examples/xpv-pktgen
# Fault checks run the sanitized builds when there are any.
NETBACK_SAN=$NETBACK
PKTGEN_SAN=$PKTGEN
if [[ -n $ASAN && -x $ASAN/src/netback/xpv-netback && -x $ASAN/examples/xpv-pktgen ]]; then
  NETBACK_SAN=$ASAN/src/netback/xpv-netback
  PKTGEN_SAN=$ASAN/examples/xpv-pktgen
fi
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
want() { [[ -z "$ONLY" || ",$ONLY," == *",$1,"* ]]; }

for f in "$NETBACK" "$PKTGEN"; do
  [[ -x $f ]] || { fail setup "$f missing (make build)"; exit 1; }
done

if want netfront; then
  source tests/integration/netfront.sh
  if [[ -f tests/integration/bridge.sh ]]; then
    source tests/integration/bridge.sh
    check_bridge_pktgen
    check_bridge_multicast
  fi
  if [[ -f tests/integration/hostile_xenstore.sh ]]; then
    source tests/integration/hostile_xenstore.sh
    check_hostile_xenstore
  fi
  source tests/integration/offload.sh
  check_offloads
  source tests/integration/static_grants.sh
  check_static_grants_million
fi
if [[ $ONLY == static-grants ]]; then
  source tests/integration/static_grants.sh
  check_static_grants_million
fi
if [[ $ONLY == offload ]]; then
  source tests/integration/offload.sh
  check_offloads
fi
# pmd_session_alone: what pmd.sh sets up for the testpmd-session checks (the PMD where DPDK
# loads it, EAL, TP_MAC) and testpmd_session.sh, for a group run alone without pmd.sh's checks.
pmd_session_alone() {
  source scripts/pmd-path.sh
  PMD_SO=$(xpv_pmd_path "$PWD/$BUILD/drivers/net_xenpv/librte_net_xenpv.so")
  EAL=(-l 0-1 --no-huge -m 1024 --no-pci --no-shconf -d "$PMD_SO")
  TP_MAC=00:16:3e:00:01:00  # as pmd.sh: the first frontend to connect is domain 1
  source tests/integration/testpmd_session.sh
}
if [[ $ONLY == pmd-rss ]]; then
  pmd_session_alone
  source tests/integration/pmd_rss.sh
  check_pmd_rss
fi
if [[ $ONLY == pmd-idle-sleep ]]; then
  pmd_session_alone
  source tests/integration/pmd_idle_sleep.sh
  check_pmd_idle_sleep
  check_pmd_idle_wake
  check_pmd_idle_syscalls
fi
if [[ $ONLY == control ]]; then
  pmd_session_alone
  source tests/integration/control.sh
fi
if [[ $ONLY == bench-windows ]]; then
  pmd_session_alone
  source tests/integration/bench_windows.sh
  check_bench_windows
  check_bench_windows_size
  check_bench_windows_failed_start
fi
if [[ $ONLY == pmd-offload ]]; then
  pmd_session_alone
  source tests/integration/offload.sh
  source tests/integration/pmd_offload.sh
  check_pmd_offloads
fi
if want pmd; then
  source tests/integration/pmd.sh
  # EAL is set once pmd.sh found the PMD (it fails the group otherwise).
  if [[ -n ${EAL+set} ]]; then
    source tests/integration/testpmd_session.sh
    source tests/integration/conformance.sh
    source tests/integration/offload.sh
    source tests/integration/pmd_offload.sh
    check_pmd_offloads
    source tests/integration/control.sh
    source tests/integration/pmd_rss.sh
    check_pmd_rss
    source tests/integration/pmd_idle_sleep.sh
    check_pmd_idle_sleep
    check_pmd_idle_wake
    check_pmd_idle_syscalls
    source tests/integration/bench_windows.sh
    check_bench_windows
    check_bench_windows_size
    check_bench_windows_failed_start
    if [[ -f tests/integration/hostile_xenstore.sh ]]; then
      source tests/integration/hostile_xenstore.sh
      check_hostile_pmd
      check_pmd_reattach_mac
    fi
  fi
fi

if want features; then
  source tests/integration/features.sh
  check_features_table
  check_nic_guide_devargs
fi

echo "integration: $FAILED check(s) failed; logs in $RUN"
((FAILED == 0))
