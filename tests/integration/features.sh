#!/bin/bash
# The NIC features table (docs/nics/features/xenpv.ini, DPDK's
# doc/guides/nics/features/*.ini format) held against the running driver:
# tests/features/xenpv-features asks net_xenpv, loaded with -d over
# xpv-netback, what it reports (rte_eth_dev_info_get's capabilities, device
# flags, and each op through its rte_eth_* call), and
# tests/features/compare.py fails on a marked feature the driver does not
# report and on a reported one the table does not mark.
# Sourced by tests/integration/run.sh (group "features"); FEATURES_INI
# overrides the table (to see the check fail).

check_features_table() {
  local name=features-table
  local prog=$BUILD/tests/features/xenpv-features
  local ini=${FEATURES_INI:-docs/nics/features/xenpv.ini}
  local so=$PWD/$BUILD/drivers/net_xenpv/librte_net_xenpv.so
  [[ -x $prog ]] || { fail $name "$prog missing (make build; needs the PMD)"; return; }
  source scripts/pmd-path.sh
  so=$(xpv_pmd_path "$so") || { fail $name "cannot place the PMD where DPDK loads it"; return; }
  # A sink backend (takes what the port sends: the stats probe sends 8 frames)
  # offering everything xpv-netback can offer: multi-queue, sg, GSO, ipv6 csum.
  nb_start features --mode sink || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  # speed=: netif has no link speed; the device argument is how the port
  # reports one (Speed capabilities).
  timeout -k 5 60 "$prog" -l 0 --no-huge -m 512 --no-pci --no-shconf --file-prefix "xpvfeat$$" \
    -d "$so" --vdev "net_xenpv0,backend=sim:$RUN/features.sock,speed=10000" \
    >"$RUN/features.txt" 2>"$RUN/features.err"
  local rc=$?
  nb_stop "$nb"
  if ((rc != 0)); then
    fail $name "xenpv-features exit $rc: $(tail -n 3 "$RUN/features.err" | tr '\n' ' ')"
    return
  fi
  local out
  if out=$(python3 tests/features/compare.py "$ini" "$RUN/features.txt" --usage-doc docs/nics/xenpv.rst); then
    pass $name "$ini: $out"
  else
    fail $name "$ini disagrees with the driver (probe output $RUN/features.txt): $(tr '\n' '|' <<<"$out")"
  fi
}
