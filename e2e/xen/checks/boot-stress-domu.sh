#!/bin/bash
# domU side of a boot-stress run (the payload's domu.sh there): what every boot does before it
# powers off. By default the platform tests (grants shared with dom0, event channels, xenstore
# from userspace: what our frontend asks of the guest kernel) and a burst of process starts
# (page-table work in every guest type); XPV_STRESS_WORKLOAD in stress.env replaces them with a
# command of one's own (its output goes to the console, its exit code decides the check).
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=/dev/null
. "$(dirname "$0")/stress.env"
for arg in $(</proc/cmdline); do [[ $arg == xpv.guest_type=* ]] && XPV_CHECK_PREFIX=${arg#*=}:; done

check_stress_workload() {
    local out i
    if [[ -n ${XPV_STRESS_WORKLOAD:-} ]]; then
        bash -c "$XPV_STRESS_WORKLOAD" 2>&1 | sed 's/^/    /'
        ((PIPESTATUS[0] == 0)) || fail "the workload exited ${PIPESTATUS[0]}: $XPV_STRESS_WORKLOAD"
        pass "the workload: $XPV_STRESS_WORKLOAD"
    fi
    out=$(/xpv/bin/xpv-tests --gtest_brief=1 --gtest_filter='XenPlatform*:-*OwnGrantsMappedAndCopiedThroughGntdev*' 2>&1) ||
        fail "platform tests: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
    for ((i = 0; i < 200; i++)); do /bin/true || fail "process start $i failed"; done
    pass "platform tests and 200 process starts"
}
xpv_run_checks stress-workload
