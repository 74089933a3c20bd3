# Shared by the PID 1 scripts of dom0 and the domU (/usr/lib/xpv/init-common.sh). Under emulation
# every process start is expensive (a PV guest's page tables go through Xen, emulated), so these
# helpers use shell builtins where they can.

# Kernel log lines that fail a run (run.sh uses the same pattern on the serial log).
KLOG_RE='segfault at|traps:|general protection'

uptime_s() {
    local up _
    read -r up _ < /proc/uptime
    echo "$up"
}

say() { echo "XPV: $* uptime=$(uptime_s)"; }

param() { # NAME DEFAULT: the value of xpv.NAME= on the kernel command line, else DEFAULT
    local cmdline arg
    read -r cmdline < /proc/cmdline
    for arg in $cmdline; do
        [[ $arg == "xpv.$1="* ]] && { echo "${arg#*=}"; return; }
    done
    echo "$2"
}

# The initramfs mounted the root rw and moved its devtmpfs (with /dev/fd & co) here.
mount_basics() {
    [[ -e /dev/null ]] || mount -t devtmpfs devtmpfs /dev
    mount -t proc proc /proc
    mount -t sysfs sysfs /sys
    mkdir -p /dev/pts /dev/shm
    mount -t devpts devpts /dev/pts
    mount -t tmpfs tmpfs /dev/shm
    mount -t tmpfs tmpfs /run
    mount -t tmpfs tmpfs /tmp
}

set_hostname() { echo "$1" > /proc/sys/kernel/hostname; }

# No IPv6: keeps the test network quiet (no router solicitations, MLD, DAD).
no_ipv6() {
    echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6
    echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6
}

# not_ready WHY: sets $why (read by the init scripts) and fails.
# shellcheck disable=SC2034
not_ready() { why=$*; return 1; }

# mount_payload DEV: the payload read-only at /xpv; its modprobe.d/*.conf apply from now on.
mount_payload() {
    mkdir -p /xpv
    mount -o ro "$1" /xpv || not_ready "cannot mount the payload disk $1" || return
    if [[ -d /xpv/modprobe.d ]]; then
        cp /xpv/modprobe.d/*.conf /etc/modprobe.d/ 2>/dev/null
    fi
    return 0
}

# run_checks ROLE: run /xpv/checks/ROLE.sh, then report "XPV: ROLE.sh rc=N".
run_checks() {
    local script=/xpv/checks/$1.sh
    if [[ -x $script ]]; then
        "$script"
        say "$1.sh rc=$?"
    else
        say "$1.sh rc=127 (no executable $script in the payload)"
    fi
}

# dump_klog ROLE: the kernel log lines matching KLOG_RE between markers run.sh reads.
dump_klog() {
    local lines n=0
    lines=$(dmesg | grep -E "$KLOG_RE")
    echo "XPV-KLOG $1 BEGIN"
    if [[ -n $lines ]]; then
        while IFS= read -r line; do
            echo "XPV-KLOG $1 | $line"
            n=$((n + 1))
        done <<<"$lines"
    fi
    echo "XPV-KLOG $1 END count=$n"
}

# A PVH guest has no device model: its ACPI power-off reaches nobody (the kernel prints "reboot:
# Power down" and carries on). Its restart is Xen's hypercall (SCHEDOP_shutdown, reason reboot),
# which the domUs' xl config turns into destroy (on_reboot = "destroy"). Other guests power off
# and, should that not end them either, restart.
power_off() {
    local type=''
    sync
    read -r type < /sys/hypervisor/guest_type 2>/dev/null
    if [[ $type != PVH ]]; then
        echo o > /proc/sysrq-trigger
        sleep 10
    fi
    echo b > /proc/sysrq-trigger
    sleep 60
}
