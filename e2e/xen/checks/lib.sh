# Helpers for the e2e check scripts, sourced by dom0.sh and domu.sh (bash).
#
# Check protocol: every check prints exactly one line
#     CHECK <name> PASS [details]      or      CHECK <name> FAIL <reason>
# on its console (dom0: straight to the serial log; domU: through dom0 with the prefix "U| ").
#
# Writing a check: a function check_<name> (dashes in <name> become underscores) that ends with
# `pass [details]` or `fail <reason>`; both end the check (it runs in a subshell, in its own
# process group, killed after $XPV_CHECK_TIMEOUT seconds). Run checks in order with
#     xpv_run_checks name1 name2 ...
#
# dom0 <-> domU: the domU asks dom0 to do something with `xpv_dom0 ACTION ARGS...` (it blocks and
# returns the action's exit code, printing its output). dom0 serves these requests while the
# domU runs (xpv_domu_run) by calling the function action_<ACTION> ARGS... defined in dom0.sh.
# The request/response travel through the domU's own xenstore dir /local/domain/<domid>/data/xpv/:
# req = "SEQ ACTION ARGS..." (written by the domU), out = output, resp = "SEQ RC" (by dom0).
# Arguments are words: no spaces inside one argument.

XPV_CHECKS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
XPV_RUN_DIR=/run/xpv
XPV_CHECK_TIMEOUT=${XPV_CHECK_TIMEOUT:-900}  # seconds per check
XPV_RPC_TIMEOUT=${XPV_RPC_TIMEOUT:-300}      # seconds a domU waits for dom0 to answer a request
# Seconds between two reads of dom0's answer while its watch stays quiet (the watch says when it
# comes; the reads are for a watch that ended). Each read starts a process in the domU: a caller
# that measures the domU's data path meanwhile sets it longer than the request takes.
XPV_RPC_POLL=${XPV_RPC_POLL:-2}
# Only these checks run when set (words of check names; scripts/e2e-xen.sh writes it from the
# environment's XPV_E2E_ONLY): a short run while developing a check. Name its prerequisites too.
XPV_E2E_ONLY=""
# The checks' numeric knobs (XPV_E2E_CHAOS_ROUNDS and the like, defaults in the checks) as the
# environment of scripts/e2e-xen.sh set them: the guests do not inherit it.
if [[ -f $XPV_CHECKS_DIR/knobs.env ]]; then
    # shellcheck source=/dev/null
    . "$XPV_CHECKS_DIR/knobs.env"
fi
mkdir -p "$XPV_RUN_DIR"

# Process starts are expensive in emulated PV guests: wait with xenstore watches, not polling,
# and prefer shell builtins.
xpv_uptime() {
    local up _
    read -r up _ < /proc/uptime
    echo "$up"
}
xpv_log() { echo "[${XPV_ROLE:-?} $(xpv_uptime)] $*"; }

# ---------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------

# xpv_check NAME PASS|FAIL [text]: print one result line (for results outside xpv_run_checks).
# In a PVH or HVM domU the names carry the guest type ("CHECK pvh:icmpecho PASS ...").
xpv_check() {
    local name=$1 result=$2
    shift 2
    echo "CHECK ${XPV_CHECK_PREFIX:-}$name $result${*:+ $(tr '\n' ' ' <<<"$*" | sed 's/ *$//')}"
}

pass() { echo "PASS${*:+ $*}" > "$XPV_RESULT"; exit 0; }
fail() { echo "FAIL ${*:-failed}" > "$XPV_RESULT"; exit 1; }

xpv_run_checks() {
    local name fn pid watchdog rc result
    for name in "$@"; do
        fn=check_${name//-/_}
        if [[ -n $XPV_E2E_ONLY && " $XPV_E2E_ONLY " != *" $name "* ]]; then
            xpv_log "check $name: skipped (not in XPV_E2E_ONLY)"
            continue
        fi
        if ! declare -F "$fn" >/dev/null; then
            xpv_check "$name" FAIL "no function $fn"
            continue
        fi
        XPV_RESULT=$XPV_RUN_DIR/result.$name
        rm -f "$XPV_RESULT"
        xpv_log "check $name: start"
        # set -m: the check gets its own process group, so the watchdog can end all of it.
        set -m
        ( "$fn" ) &
        pid=$!
        set +m
        ( sleep "$XPV_CHECK_TIMEOUT" && echo "TIMEOUT" > "$XPV_RESULT.timeout" &&
            kill -TERM -- -"$pid" && sleep 5 && kill -KILL -- -"$pid" ) 2>/dev/null &
        watchdog=$!
        wait "$pid"
        rc=$?
        kill "$watchdog" 2>/dev/null
        wait "$watchdog" 2>/dev/null
        if [[ -e $XPV_RESULT.timeout ]]; then
            result="FAIL timed out after ${XPV_CHECK_TIMEOUT}s"
        elif [[ -s $XPV_RESULT ]]; then
            result=$(head -n 1 "$XPV_RESULT")
        else
            result="FAIL ended without pass or fail (exit $rc)"
        fi
        rm -f "$XPV_RESULT" "$XPV_RESULT.timeout"
        xpv_check "$name" "${result%% *}" "$( [[ $result == *' '* ]] && echo "${result#* }")"
    done
}

# ---------------------------------------------------------------------------------------------
# xenstore
# ---------------------------------------------------------------------------------------------

# A watch that is armed before the value it waits for is read: xenstored fires every new watch
# once, at once, and xenstore-watch prints each event as a line, so the first line read from it
# says "armed"; a change after that (even one between a read and the wait) is a line too.
# xpv_xs_watch_open PATH SECONDS: arm a watch on PATH (and the nodes below it) for at most
# SECONDS; sets XPV_WATCH_FD and XPV_WATCH_PID. xpv_xs_watch_next WAIT: wait up to WAIT seconds
# for the next change (also returns at WAIT, and after 1 s if the watch has ended, so a caller's
# loop that re-reads on every return stays correct). xpv_xs_watch_close ends it.
xpv_xs_watch_open() {
    exec {XPV_WATCH_FD}< <(exec timeout "$2" xenstore-watch "$1" 2>/dev/null)
    XPV_WATCH_PID=$!
    read -r -t 5 -u "$XPV_WATCH_FD" _
    return 0
}
xpv_xs_watch_next() {
    read -r -t "$1" -u "$XPV_WATCH_FD" _ && return 0
    (($? > 128)) || sleep 1  # > 128: the wait timed out; else the watch ended (EOF)
    return 0
}
xpv_xs_watch_close() {
    kill "$XPV_WATCH_PID" 2>/dev/null
    exec {XPV_WATCH_FD}<&-
    wait "$XPV_WATCH_PID" 2>/dev/null
    return 0
}

# xpv_xs_wait PATH VALUE TIMEOUT: wait until xenstore PATH reads VALUE; 1 on timeout.
xpv_xs_wait() {
    local path=$1 want=$2 timeout=$3 end=$((SECONDS + $3)) rc=0
    xpv_xs_watch_open "$path" "$((timeout + 5))"
    until [[ $(xenstore-read "$path" 2>/dev/null) == "$want" ]]; do
        ((SECONDS < end)) || { rc=1; break; }
        xpv_xs_watch_next 2
    done
    xpv_xs_watch_close
    return $rc
}

# ---------------------------------------------------------------------------------------------
# domU side
# ---------------------------------------------------------------------------------------------

# xpv_dom0 ACTION ARGS...: run action_ACTION ARGS... in dom0; print its output, return its code.
xpv_dom0() {
    local seqfile=$XPV_RUN_DIR/rpc-seq seq resp start=$SECONDS
    seq=$(($(cat "$seqfile" 2>/dev/null || echo 0) + 1))
    echo "$seq" > "$seqfile"
    # Armed before the request goes out: dom0's answer cannot slip past the wait.
    xpv_xs_watch_open data/xpv/resp "$((XPV_RPC_TIMEOUT + 5))"
    xenstore-write data/xpv/req "$seq $*" || { xpv_xs_watch_close; echo "xenstore-write data/xpv/req failed"; return 125; }
    while :; do
        resp=$(xenstore-read data/xpv/resp 2>/dev/null)
        [[ $resp == "$seq "* ]] && break
        if ((SECONDS - start >= XPV_RPC_TIMEOUT)); then
            xpv_xs_watch_close
            echo "dom0 did not answer '$*' within ${XPV_RPC_TIMEOUT}s"
            return 124
        fi
        xpv_xs_watch_next "$XPV_RPC_POLL"
    done
    xpv_xs_watch_close
    xenstore-read data/xpv/out 2>/dev/null
    return "${resp#* }"
}

# xpv_irq_sum REGEX: the sum, over all CPUs, of the /proc/interrupts counts of the lines whose
# name (the last field) matches the extended REGEX (either side).
xpv_irq_sum() {
    awk -v p="$1" '$NF ~ p { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i } END { print s + 0 }' /proc/interrupts
}

# xpv_vif_netdev N: the kernel netdev name of vif N (needs xen-netfront bound to it).
xpv_vif_netdev() {
    local d
    for d in /sys/bus/xen/devices/vif-"$1"/net/*; do
        [[ -e $d ]] && { echo "${d##*/}"; return 0; }
    done
    return 1
}

# ---------------------------------------------------------------------------------------------
# dom0 side
# ---------------------------------------------------------------------------------------------

# Defaults of xpv_domu_start; dom0.sh may change them before calling it.
XPV_DOMU_MEMORY=${XPV_DOMU_MEMORY:-768}
XPV_DOMU_VCPUS=${XPV_DOMU_VCPUS:-1}
# vif 0, vif 1, ...: on xenbr0 unless an entry names its bridge (bridge=...)
XPV_DOMU_VIFS=("mac=00:16:3e:00:00:10" "mac=00:16:3e:00:00:11")
XPV_DOMU_TYPE=${XPV_DOMU_TYPE:-pv}  # pv, pvh or hvm (the domU reads it as xpv.guest_type)
XPV_DOMU_CMDLINE_EXTRA=${XPV_DOMU_CMDLINE_EXTRA:-}
XPV_DOMU_XL_EXTRA=${XPV_DOMU_XL_EXTRA:-}  # more xl config lines
# A PVH or HVM domU's vCPU gets CPU 1 to itself and dom0 keeps to CPU 0 while it runs (1), or
# they share both (0). Under QEMU's software SVM, a PVH vCPU sharing a CPU with dom0's vCPUs
# crashed in 1 to 2 of every 4 lives (Xen: "Triple fault", with Xen's own RIP and CR3 saved as
# the guest's; e2e/xen/README.md, Guest types); kept apart, none did.
XPV_DOMU_SVM_PIN=${XPV_DOMU_SVM_PIN:-1}
XPV_DOMU_BOOT_TIMEOUT=${XPV_DOMU_BOOT_TIMEOUT:-300}   # xl create to "ready"
XPV_DOMU_RUN_TIMEOUT=${XPV_DOMU_RUN_TIMEOUT:-3300}    # "ready" to powered off
XPV_CONSOLE_PREFIX=${XPV_CONSOLE_PREFIX:-"U| "}
# Hotplug scripts for the domU's disks and vifs: "lean" (hotplug/ here) or "stock" (Xen's block
# and vif-bridge, which fork dozens of processes and can miss libxl's fixed 40 s timeout when the
# emulated dom0 runs on a loaded host).
XPV_DOMU_HOTPLUG=${XPV_DOMU_HOTPLUG:-lean}

# xpv_domu_config NAME: the xl config of a domU of type $XPV_DOMU_TYPE whose root is dom0's
# $XPV_DOMU_ROOT disk and whose second, read-only disk is the payload (both on the kernel's
# xen-blkfront). PV and PVH boot the kernel directly; HVM boots it through the device model
# (qemu-xen's direct kernel boot with SeaBIOS), so the same kernel, initramfs and checks run in
# all three. In HVM, libxl gives the first four disks an emulated IDE twin as well, which qemu-xen
# refuses for a read-only disk: the payload becomes the fifth (xvde), PV only; `type=vif` vifs
# get no emulated NIC.
xpv_domu_config() {
    local vif vifs=() vif_script='' disk_script='' vif_type='' payload_vdev=xvdb console=hvc0
    # An HVM domU's first console is the device model's emulated UART (hvc0 has no xenconsoled
    # backend there): QEMU writes it to the file xpv_domu_start streams.
    [[ $XPV_DOMU_TYPE == hvm ]] && payload_vdev=xvde console=ttyS0
    if [[ $XPV_DOMU_HOTPLUG == lean ]]; then
        vif_script=",script=$XPV_CHECKS_DIR/hotplug/vif-bridge"
        disk_script=",script=$XPV_CHECKS_DIR/hotplug/block"
    fi
    [[ $XPV_DOMU_TYPE == hvm ]] && vif_type=",type=vif"
    for vif in "${XPV_DOMU_VIFS[@]}"; do
        [[ $vif == *bridge=* ]] || vif="bridge=xenbr0,$vif"
        vifs+=("'$vif$vif_type$vif_script'")
    done
    cat <<EOF
name = "$1"
type = "$XPV_DOMU_TYPE"
kernel = "$XPV_KERNEL"
ramdisk = "$XPV_RAMDISK"
extra = "root=/dev/xvda rw console=$console net.ifnames=0 modprobe.blacklist=xen_netfront panic=10 log_buf_len=1M init=/usr/sbin/xpv-domu-init xpv.payload=/dev/$payload_vdev xpv.guest_type=$XPV_DOMU_TYPE $XPV_DOMU_CMDLINE_EXTRA"
memory = $XPV_DOMU_MEMORY
vcpus = $XPV_DOMU_VCPUS
disk = [ 'vdev=xvda,access=rw,backendtype=phy$disk_script,target=$XPV_DOMU_ROOT',
         'vdev=$payload_vdev,access=ro,backendtype=phy$disk_script,target=$XPV_PAYLOAD_DEV' ]
vif = [ $(IFS=,; echo "${vifs[*]}") ]
on_poweroff = "destroy"
on_reboot = "destroy"
on_crash = "destroy"
$XPV_DOMU_XL_EXTRA
EOF
    [[ $XPV_DOMU_TYPE != pv && $XPV_DOMU_SVM_PIN == 1 ]] && echo 'cpus = "1"'
    [[ $XPV_DOMU_TYPE == hvm ]] || return 0
    cat <<EOF
device_model_version = "qemu-xen"
vga = "none"
nographic = 1
vnc = 0
serial = "file:/var/log/xen/console/guest-$1.log"
EOF
}

# xpv_domu_start NAME: create the domU and stream its console; sets XPV_DOMID.
xpv_domu_start() {
    local name=$1 cfg=$XPV_RUN_DIR/$1.cfg log=/var/log/xen/console/guest-$1.log
    xpv_domu_config "$name" > "$cfg"
    rm -f "$log"
    if ! xl create -q "$cfg" > "$XPV_RUN_DIR/$name.create.log" 2>&1; then
        cat "$XPV_RUN_DIR/$name.create.log"
        echo "--- /var/log/xen/xen-hotplug.log (tail)"
        tail -n 40 /var/log/xen/xen-hotplug.log 2>/dev/null
        XPV_DOMU_ERROR="xl create failed: $(tail -n 1 "$XPV_RUN_DIR/$name.create.log")"
        return 1
    fi
    XPV_DOMID=$(xl domid "$name")
    # shellcheck disable=SC2034  # read by dom0.sh's actions (xl network-detach/-attach)
    XPV_DOMU_NAME=$name
    (
        i=0
        while [[ ! -e $log && $i -lt 100 ]]; do sleep 0.2; i=$((i + 1)); done
        exec tail -n +1 -F "$log"
    ) 2>/dev/null > >(sed -u -e 's/\r$//' -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e "s/^/$XPV_CONSOLE_PREFIX/") &
    XPV_CONSOLE_PID=$!
    echo "XPV: domU created name=$name domid=$XPV_DOMID uptime=$(xpv_uptime)"
}


# xpv_domu_serve NAME: answer the domU's xpv_dom0 requests until it is gone (or the time limit).
xpv_domu_serve() {
    local name=$1 base=/local/domain/$XPV_DOMID/data/xpv last=0 req seq action fn out rc start=$SECONDS
    # One watch on the request for the domU's whole life, armed before the first read.
    xpv_xs_watch_open "$base/req" "$((XPV_DOMU_RUN_TIMEOUT + 60))"
    while :; do
        req=$(xenstore-read "$base/req" 2>/dev/null)
        seq=${req%% *}
        if [[ $seq =~ ^[0-9]+$ ]] && ((seq > last)); then
            last=$seq
            read -r _ action args <<<"$req"
            fn=action_${action//-/_}
            xpv_log "domU $name asks: $action $args"
            if [[ $action =~ ^[A-Za-z0-9_-]+$ ]] && declare -F "$fn" >/dev/null; then
                # shellcheck disable=SC2086  # arguments are words
                out=$("$fn" $args 2>&1)
                rc=$?
            else
                out="dom0 has no action '$action'"
                rc=127
            fi
            [[ -n $out ]] && sed 's/^/    /' <<<"$out"
            xpv_log "action $action: exit $rc"
            ((${#out} > 3000)) && out=${out: -3000}
            xenstore-write "$base/out" "$out"
            xenstore-write "$base/resp" "$seq $rc"
            continue
        fi
        # Destroying a domain removes its xenstore directory.
        xenstore-exists "/local/domain/$XPV_DOMID" 2>/dev/null || { xpv_xs_watch_close; return 0; }
        if ((SECONDS - start > XPV_DOMU_RUN_TIMEOUT)); then
            echo "XPV: domU $name still running after ${XPV_DOMU_RUN_TIMEOUT}s: destroying it"
            xl destroy "$name"
            xpv_xs_watch_close
            return 1
        fi
        xpv_xs_watch_next 5  # also the pace at which a destroyed domain is noticed
    done
}

xpv_domu_stop_console() {
    [[ -n ${XPV_CONSOLE_PID:-} ]] || return 0
    sleep 2 # let the last lines through
    kill "$XPV_CONSOLE_PID" 2>/dev/null
    wait "$XPV_CONSOLE_PID" 2>/dev/null
    XPV_CONSOLE_PID=
}

# xpv_domu_wait_ready: wait until the domU's init says ready; prints ready, gone (the domain
# went away first: a crash, a reboot) or timeout (after XPV_DOMU_BOOT_TIMEOUT seconds).
xpv_domu_wait_ready() {
    local dom=/local/domain/$XPV_DOMID end=$((SECONDS + XPV_DOMU_BOOT_TIMEOUT)) result=timeout
    xpv_xs_watch_open "$dom" "$((XPV_DOMU_BOOT_TIMEOUT + 5))"
    while ((SECONDS < end)); do
        [[ $(xenstore-read "$dom/data/xpv/state" 2>/dev/null) == ready ]] && { result=ready; break; }
        xenstore-exists "$dom" 2>/dev/null || { result=gone; break; }
        xpv_xs_watch_next 5
    done
    xpv_xs_watch_close
    echo "$result"
}

# xpv_domu_pin_dom0 0|all: dom0's vCPUs on CPU 0 only (for the life of a PVH/HVM domU, see
# XPV_DOMU_SVM_PIN), or on all CPUs again.
xpv_domu_pin_dom0() {
    [[ $XPV_DOMU_TYPE != pv && $XPV_DOMU_SVM_PIN == 1 ]] || return 0
    xl vcpu-pin Domain-0 all "$1" || echo "XPV: xl vcpu-pin Domain-0 all $1 failed"
}

# xpv_domu_run NAME [again]: the whole life of one domU: create it, wait until its init is ready
# (CHECK NAME-boot), serve its requests while domu.sh runs, wait until it powered off.
# Returns 3 when Xen logged a crash of the domain (XPV_DOMU_CRASH: Xen's line); with "again"
# (the caller will boot it once more) a crash before ready is not yet a failed boot check.
xpv_domu_run() {
    local name=$1 again=${2:-} t0=$SECONDS rc=0 boot
    xpv_domu_pin_dom0 0
    if ! xpv_domu_start "$name"; then
        xpv_domu_pin_dom0 all
        xpv_check "$name-boot" FAIL "$XPV_DOMU_ERROR"
        return 1
    fi
    boot=$(xpv_domu_wait_ready)
    if [[ $boot == ready ]]; then
        xpv_check "$name-boot" PASS "domid $XPV_DOMID ready $((SECONDS - t0))s after xl create"
        xpv_domu_serve "$name" || rc=1
    else
        xl destroy "$name" 2>/dev/null
        rc=1
    fi
    xpv_domu_stop_console
    xpv_domu_pin_dom0 all
    xpv_log "domU $name finished after $((SECONDS - t0))s"
    # What Xen says about a guest that died (a PVH or HVM vCPU's triple fault, a PV crash).
    XPV_DOMU_CRASH=$(xl dmesg 2>/dev/null | grep -E "d${XPV_DOMID}v[0-9]+ Triple fault|Domain ${XPV_DOMID} \(vcpu#[0-9]+\) crashed" | head -n 1 | tr -s ' ')
    [[ -n $XPV_DOMU_CRASH ]] && { echo "XPV: domU $name crashed: $XPV_DOMU_CRASH"; rc=3; }
    case $boot in
        ready) ;;
        gone) [[ $rc == 3 && $again == again ]] ||
            xpv_check "$name-boot" FAIL "the domain went away $((SECONDS - t0))s after xl create, before it was ready${XPV_DOMU_CRASH:+ (Xen: $XPV_DOMU_CRASH)}" ;;
        *) xpv_check "$name-boot" FAIL "not ready ${XPV_DOMU_BOOT_TIMEOUT}s after xl create" ;;
    esac
    return $rc
}
