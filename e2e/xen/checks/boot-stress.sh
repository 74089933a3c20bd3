#!/bin/bash
# dom0 side of a boot-stress run (scripts/e2e-xen-stress.sh puts it in the payload as dom0.sh):
# boots one domU of type XPV_STRESS_TYPE XPV_STRESS_BOOTS times in a row, each running the
# stress workload (boot-stress-domu.sh) and powering off, and counts the boots Xen saw crash
# (a PVH/HVM vCPU's triple fault, a PV domain crash). One CHECK line a boot, one summary line.
# Settings come from stress.env next to this file (written by scripts/e2e-xen-stress.sh):
# XPV_STRESS_TYPE, XPV_STRESS_BOOTS, XPV_DOMU_XL_EXTRA, XPV_DOMU_CMDLINE_EXTRA.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=/dev/null
. "$(dirname "$0")/stress.env"

crashed=0 failed=0 lines=()
for ((boot = 1; boot <= XPV_STRESS_BOOTS; boot++)); do
    XPV_DOMU_TYPE=$XPV_STRESS_TYPE XPV_DOMU_BOOT_TIMEOUT=600 XPV_DOMU_RUN_TIMEOUT=900 \
        xpv_domu_run "stress-$boot"
    rc=$?
    if ((rc == 3)); then
        crashed=$((crashed + 1))
        lines+=("boot $boot: $XPV_DOMU_CRASH")
        xpv_check "stress-boot-$boot" FAIL "crashed: $XPV_DOMU_CRASH"
    elif ((rc != 0)); then
        failed=$((failed + 1))
        xpv_check "stress-boot-$boot" FAIL "did not run to its end (exit $rc)"
    else
        xpv_check "stress-boot-$boot" PASS "ran its workload and powered off"
    fi
done
summary="$XPV_STRESS_TYPE x$XPV_STRESS_BOOTS (xl: ${XPV_DOMU_XL_EXTRA:-defaults}; cmdline: ${XPV_DOMU_CMDLINE_EXTRA:-defaults}): $crashed crashed, $failed failed otherwise"
if ((crashed + failed == 0)); then
    xpv_check stress-summary PASS "$summary"
else
    xpv_check stress-summary FAIL "$summary; ${lines[*]}"
fi
exit 0
