#!/bin/bash
# make e2e-xen: Xen 4.17 in QEMU, Linux netback in dom0, our frontend in a PV domU.
# Assembles the payload from the build (test binaries, the PMD, the example) and the checks in
# e2e/xen/checks/, runs e2e/xen/run.sh, and prints the CHECK lines of the result log.
#   scripts/e2e-xen.sh [--build DIR] [--timeout SECONDS] [--log FILE]
#     --log FILE   the result log (default BUILD/e2e-xen/e2e.log, which make bench reads)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
BUILD=build
TIMEOUT=3300  # seconds, QEMU start to power-off: what fits CI's 90 minutes after the other suites
LOG=
while (($#)); do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --log) LOG=${2:?--log needs a file}; shift 2 ;;
    *) echo "e2e-xen: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
for f in "$BUILD/tests/xpv-tests" "$BUILD/tests/softrss" "$BUILD/examples/xpv-pktgen" "$BUILD/examples/l3fwd-power" \
  "$BUILD/drivers/net_xenpv/librte_net_xenpv.so"; do
  [[ -e $f ]] || { echo "CHECK e2e-payload FAIL $f is missing (make build)"; exit 1; }
done
# The domUs install our Debian packages (the PMD and xpv-bind come from them, as for a user):
# those of make deb (make test's packaging suite makes them first), built again here when
# missing or older than any program of the build they carry (debian/*.install).
DEB_PKGS=(libxpv0 dpdk-pmd-xenpv xpv-tools xpv-bind)
DEB_INPUTS=("$BUILD/drivers/net_xenpv/librte_net_xenpv.so" "$BUILD/tools/xpv-bind" "$BUILD/src/netback/xpv-netback"
  "$BUILD/examples/xpv-fwd" "$BUILD/examples/xpv-pktgen")
debs_fresh() {
  local p f i
  for p in "${DEB_PKGS[@]}"; do
    f=$(ls "$BUILD"/deb/"${p}"_*.deb 2>/dev/null | head -1)
    [[ -n $f ]] || return 1
    for i in "${DEB_INPUTS[@]}"; do [[ $f -nt $i ]] || return 1; done
  done
}
if ! debs_fresh; then
  echo "e2e-xen: building the Debian packages (scripts/build-deb.sh)"
  scripts/build-deb.sh --build "$BUILD" || { echo "CHECK e2e-payload FAIL make deb failed"; exit 1; }
fi
PAYLOAD=$(mktemp -d /var/tmp/xpv-payload.XXXXXX)
trap 'rm -rf "$PAYLOAD"' EXIT
mkdir -p "$PAYLOAD/bin" "$PAYLOAD/debs"
cp "$BUILD/tests/xpv-tests" "$BUILD/tests/softrss" "$BUILD/examples/xpv-pktgen" "$BUILD/examples/l3fwd-power" \
  "$PAYLOAD/bin/"
for p in "${DEB_PKGS[@]}"; do cp "$BUILD"/deb/"${p}"_*.deb "$PAYLOAD/debs/"; done
cp -r e2e/xen/checks "$PAYLOAD/checks"
# The domUs dom0 runs, in order (default "pv pvh hvm"; "pv pvh" leaves HVM out, about 9 minutes less).
if [[ -n ${XPV_E2E_GUEST_TYPES:-} ]]; then
  [[ $XPV_E2E_GUEST_TYPES =~ ^(pv|pvh|hvm)( (pv|pvh|hvm))*$ ]] ||
    { echo "CHECK e2e-payload FAIL XPV_E2E_GUEST_TYPES='$XPV_E2E_GUEST_TYPES': want words of pv, pvh, hvm"; exit 1; }
  sed -i "s/^XPV_E2E_GUEST_TYPES=.*/XPV_E2E_GUEST_TYPES=\"$XPV_E2E_GUEST_TYPES\"/" "$PAYLOAD/checks/dom0.sh"
fi
# More xl config lines for the PVH/HVM domUs (e.g. "hap = 0"; experiments, see e2e/xen/README.md).
if [[ -n ${XPV_E2E_NONPV_XL:-} ]]; then
  sed -i "s/^XPV_E2E_NONPV_XL=.*/XPV_E2E_NONPV_XL=\"$XPV_E2E_NONPV_XL\"/" "$PAYLOAD/checks/dom0.sh"
fi
# Only the named checks (words; e.g. XPV_E2E_ONLY="handshake-unbound-vif testpmd-net-xenpv"), for a
# short run while developing one: the result is not a full e2e run.
if [[ -n ${XPV_E2E_ONLY:-} ]]; then
  [[ $XPV_E2E_ONLY =~ ^[a-z0-9-]+( [a-z0-9-]+)*$ ]] ||
    { echo "CHECK e2e-payload FAIL XPV_E2E_ONLY='$XPV_E2E_ONLY': want check names separated by spaces"; exit 1; }
  sed -i "s/^XPV_E2E_ONLY=.*/XPV_E2E_ONLY=\"$XPV_E2E_ONLY\"/" "$PAYLOAD/checks/lib.sh"
fi
# The checks' numeric knobs and on/off switches (defaults in the checks, see e2e/xen/README.md;
# e.g. XPV_E2E_TCP_ROUNDS=5 for tcp-through-domu's rounds, as make bench runs it; XPV_E2E_RSS=0
# leaves rss-linux-netback out): the guests do not inherit this environment, so the ones set go
# in checks/knobs.env, which lib.sh reads.
KNOBS=(XPV_E2E_CHAOS_ROUNDS XPV_E2E_CHAOS_L3FWD_ROUNDS XPV_E2E_L3FWD_ROUNDS XPV_E2E_SEED_EVENTS
  XPV_E2E_SEED_EVENTS_SECONDS XPV_E2E_SEED_SECONDS XPV_E2E_TRAFFIC_SECONDS XPV_E2E_TCP_ROUNDS
  XPV_E2E_TCP_SECONDS XPV_E2E_TCP_WINDOWS XPV_E2E_TCP_WINDOW_SECONDS)
: >"$PAYLOAD/checks/knobs.env"
SWITCHES=(XPV_E2E_AF_XDP XPV_E2E_NONPV_AF_XDP XPV_E2E_NONPV_L3FWD XPV_E2E_RSS)
for v in "${KNOBS[@]}" "${SWITCHES[@]}"; do
  [[ -n ${!v:-} ]] || continue
  if [[ " ${SWITCHES[*]} " == *" $v "* ]]; then
    [[ ${!v} =~ ^[01]$ ]] || { echo "CHECK e2e-payload FAIL $v='${!v}': want 0 or 1"; exit 1; }
  else
    [[ ${!v} =~ ^[1-9][0-9]{0,5}$ ]] || { echo "CHECK e2e-payload FAIL $v='${!v}': want a whole number from 1 to 999999"; exit 1; }
  fi
  echo "$v=${!v}" >>"$PAYLOAD/checks/knobs.env"
done
# tcp-windows' DPDK ways, when not all (names of TCP_WINDOW_WAYS in checks/tcp.sh; e.g.
# XPV_E2E_TCP_WAYS="testpmd-sleep testpmd-xwait" to weigh two of them in a shorter run).
if [[ -n ${XPV_E2E_TCP_WAYS:-} ]]; then
  [[ $XPV_E2E_TCP_WAYS =~ ^[a-z0-9-]+( [a-z0-9-]+)*$ ]] ||
    { echo "CHECK e2e-payload FAIL XPV_E2E_TCP_WAYS='$XPV_E2E_TCP_WAYS': want way names separated by spaces"; exit 1; }
  echo "XPV_E2E_TCP_WAYS=\"$XPV_E2E_TCP_WAYS\"" >>"$PAYLOAD/checks/knobs.env"
fi
chmod -R a+rX,go-w "$PAYLOAD"
LOG=${LOG:-$BUILD/e2e-xen/e2e.log}
mkdir -p "$(dirname "$LOG")"
e2e/xen/run.sh --payload "$PAYLOAD" --log "$LOG" --timeout "$TIMEOUT"
rc=$?
echo "=== e2e-xen results ($LOG)"
grep -E '^CHECK ' "$LOG" || echo "CHECK e2e-xen FAIL no result lines (exit $rc)"
exit $rc
