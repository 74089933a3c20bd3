#!/bin/bash
# Boot stress on real Xen (in QEMU): one domU type booted N times in a row, each boot running a
# short workload (e2e/xen/checks/boot-stress-domu.sh); counts the boots Xen saw crash. For
# deciding what a guest type needs under QEMU's software virtualization (e2e/xen/README.md,
# Guest types); not part of make test.
#   scripts/e2e-xen-stress.sh [--build DIR] [--type pv|pvh|hvm] [--boots N] [--xl LINE]...
#                             [--cmdline ARGS] [--xen ARGS] [--workload CMD] [--log FILE]
#   --xl "hap = 0"       an extra line of the domU's xl config (repeatable)
#   --cmdline ARGS       extra domU kernel arguments
#   --xen ARGS           extra Xen command-line options (e.g. asid=0)
#   --workload CMD       what each boot runs (bash -c, in the domU; the payload's binaries are
#                        in /xpv/bin) instead of the platform tests and process starts
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=build TYPE=pvh BOOTS=10 XL='' CMDLINE='' XEN='' LOG='' WORKLOAD=
while (($#)); do
    case "$1" in
        --build) BUILD=$2; shift 2 ;;
        --type) TYPE=$2; shift 2 ;;
        --boots) BOOTS=$2; shift 2 ;;
        --xl) XL+="$2"$'\n'; shift 2 ;;
        --cmdline) CMDLINE=$2; shift 2 ;;
        --xen) XEN=$2; shift 2 ;;
        --workload) WORKLOAD=$2; shift 2 ;;
        --log) LOG=$2; shift 2 ;;
        *) echo "e2e-xen-stress: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
[[ $TYPE =~ ^(pv|pvh|hvm)$ ]] || { echo "e2e-xen-stress: --type wants pv, pvh or hvm, not '$TYPE'" >&2; exit 2; }
[[ $BOOTS =~ ^[1-9][0-9]*$ ]] || { echo "e2e-xen-stress: --boots wants a positive number, not '$BOOTS'" >&2; exit 2; }
[[ -x $BUILD/tests/xpv-tests ]] || { echo "e2e-xen-stress: $BUILD/tests/xpv-tests is missing (make build)" >&2; exit 2; }
PAYLOAD=$(mktemp -d /var/tmp/xpv-stress.XXXXXX)
trap 'rm -rf "$PAYLOAD"' EXIT
mkdir -p "$PAYLOAD/bin" "$PAYLOAD/lib"
cp "$BUILD/tests/xpv-tests" "$BUILD/examples/xpv-pktgen" "$BUILD/examples/l3fwd-power" "$PAYLOAD/bin/"
cp "$BUILD/drivers/net_xenpv/librte_net_xenpv.so" "$PAYLOAD/lib/"
cp -r e2e/xen/checks "$PAYLOAD/checks"
mv "$PAYLOAD/checks/boot-stress.sh" "$PAYLOAD/checks/dom0.sh"
mv "$PAYLOAD/checks/boot-stress-domu.sh" "$PAYLOAD/checks/domu.sh"
{
    printf 'XPV_STRESS_TYPE=%q\nXPV_STRESS_BOOTS=%q\n' "$TYPE" "$BOOTS"
    printf 'XPV_DOMU_XL_EXTRA=%q\nXPV_DOMU_CMDLINE_EXTRA=%q\n' "${XL%$'\n'}" "$CMDLINE"
    printf 'XPV_STRESS_WORKLOAD=%q\n' "$WORKLOAD"
} > "$PAYLOAD/checks/stress.env"
chmod -R a+rX,go-w "$PAYLOAD"
LOG=${LOG:-$BUILD/e2e-xen/stress-$TYPE.log}
mkdir -p "$(dirname "$LOG")"
XPV_E2E_XEN_ARGS_EXTRA=$XEN e2e/xen/run.sh --payload "$PAYLOAD" --log "$LOG" --timeout $((BOOTS * 400 + 300))
rc=$?
grep -E '^CHECK stress-summary' "$LOG" || echo "CHECK stress-summary FAIL no summary (exit $rc)"
exit $rc
