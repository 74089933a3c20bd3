#!/bin/bash
# domU side of the e2e checks (run by the domU's init as /xpv/checks/domu.sh, with /dev/xen/*
# ready and no kernel netfront loaded). Each check is a function check_<name> that ends with
# `pass [details]` or `fail <reason>` (see lib.sh); the list at the bottom runs them in order.
#
# The vifs: vif 0 (00:16:3e:00:00:10) and vif 1 (00:16:3e:00:00:11), both on dom0's xenbr0,
# served by Linux netback. Our frontend takes vif 1; the kernel's netfront gets vif 0 (and vif 1
# for a while, to leave the stale keys of an unbound netfront behind).
#
# The payload: /xpv/bin/{xpv-tests,xpv-pktgen,l3fwd-power,softrss} and /xpv/debs/ (libxpv0, dpdk-pmd-xenpv,
# xpv-tools, xpv-bind: make deb). The domU installs the packages (check packages-installed), as a
# user would: testpmd and l3fwd-power then find net_xenpv in EAL's driver directory without -d,
# and xpv-bind is the installed /usr/bin/xpv-bind.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=chaos.sh
. "$(dirname "$0")/chaos.sh"
# shellcheck source=tcp.sh
. "$(dirname "$0")/tcp.sh"
# shellcheck source=rss.sh
. "$(dirname "$0")/rss.sh"

BIN=/xpv/bin
# xpv-bind from its package (check packages-installed), as a user runs it.
XPV_BIND=/usr/bin/xpv-bind
DOMU_IP=10.99.0.2      # kernel netfront on vif 0
ICMPECHO_IP=10.99.0.3  # answered by testpmd icmpecho over net_xenpv on vif 1 (any IP would do)
VIF1_MAC=00:16:3e:00:00:11
SECS=${XPV_E2E_TRAFFIC_SECONDS:-12}  # each traffic phase

# The guest type: dom0 creates a PV domU, then a PVH and an HVM one (xpv.guest_type= on the
# kernel command line). The PV domU runs every check; the others run the ones whose code paths
# depend on the guest type (grant allocation and mapping, event channels, xenstore, the data
# path, interrupt mode), named "pvh:..." and "hvm:...".
GUEST_TYPE=pv
for arg in $(</proc/cmdline); do [[ $arg == xpv.guest_type=* ]] && GUEST_TYPE=${arg#*=}; done
# shellcheck disable=SC2034  # read by xpv_check (lib.sh)
[[ $GUEST_TYPE == pv ]] || XPV_CHECK_PREFIX=$GUEST_TYPE:

# ---- infrastructure --------------------------------------------------------------------------

# The kernel says which kind of guest it runs as (Linux's /sys/hypervisor/guest_type: PV, PVH, HVM).
check_guest_type() {
    local t
    t=$(cat /sys/hypervisor/guest_type 2>/dev/null) || fail "no /sys/hypervisor/guest_type (is this a Xen guest?)"
    [[ ${t,,} == "$GUEST_TYPE" ]] || fail "the kernel runs as a $t guest; dom0 created a $GUEST_TYPE one"
    pass "$t guest ($(dmesg | grep -m1 -oE 'Booting (paravirtualized )?kernel on .*' || echo "dmesg says nothing more"))"
}

check_payload_mounted() {
    local dev mnt fs opts _ entries=(/xpv/*)
    while read -r dev mnt fs opts _; do
        [[ $mnt == /xpv ]] || continue
        [[ ,$opts, == *,ro,* ]] || fail "/xpv ($dev) is mounted $opts"
        local debs=(/xpv/debs/*.deb)
        [[ -x $BIN/xpv-tests && -x $BIN/xpv-pktgen && ${#debs[@]} == 4 && -e ${debs[0]} ]] ||
            fail "payload lacks our binaries or its 4 packages: ${entries[*]} ${debs[*]}"
        pass "$dev $fs ro: ${entries[*]#/xpv/}"
    done < /proc/mounts
    fail "/xpv is not mounted"
}

# Our Debian packages (make deb) installed with dpkg, as a user installs them: the PMD lands in
# the directory EAL loads drivers from (RTE_EAL_PMD_PATH), so no check passes -d.
check_packages_installed() {
    local debs=(/xpv/debs/*.deb) so pkgs
    dpkg -i "${debs[@]}" >"$XPV_RUN_DIR/dpkg.log" 2>&1 || fail "dpkg -i ${debs[*]##*/}: $(tail -n 3 "$XPV_RUN_DIR/dpkg.log")"
    so=$(dpkg -L dpdk-pmd-xenpv | grep -m1 'librte_net_xenpv\.so$') || fail "dpdk-pmd-xenpv installed no librte_net_xenpv.so"
    [[ -x /usr/bin/xpv-netback ]] || fail "xpv-tools installed no /usr/bin/xpv-netback"
    [[ $(dpkg -S "$XPV_BIND" 2>/dev/null) == "xpv-bind: $XPV_BIND" && -x $XPV_BIND ]] ||
        fail "the xpv-bind package installed no $XPV_BIND"
    pkgs=$(dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\n' libxpv0 dpdk-pmd-xenpv xpv-tools xpv-bind | tr '\n' ',')
    pass "${pkgs%,}; the PMD at $so"
}

check_xen_devices() {
    local d missing=() all=(/dev/xen/*)
    for d in evtchn gntalloc gntdev xenbus; do
        [[ -c /dev/xen/$d ]] || missing+=("$d")
    done
    ((${#missing[@]} == 0)) || fail "missing /dev/xen/{${missing[*]}}"
    pass "/dev/xen: ${all[*]#/dev/xen/}"
}

check_vifs_untouched() {
    local n be fstate mac details=()
    [[ ! -d /sys/module/xen_netfront ]] || fail "xen-netfront is loaded"
    for n in 0 1; do
        be=$(xenstore-read "device/vif/$n/backend" 2>/dev/null) || fail "no device/vif/$n in xenstore"
        mac=$(xenstore-read "device/vif/$n/mac" 2>/dev/null)
        [[ $mac == "00:16:3e:00:00:1$n" ]] || fail "vif $n has mac '$mac'"
        xpv_xs_wait "$be/state" 2 30 || fail "vif $n backend state $(xenstore-read "$be/state" 2>/dev/null), want 2 (InitWait)"
        fstate=$(xenstore-read "device/vif/$n/state" 2>/dev/null)
        [[ $fstate == 1 ]] || fail "vif $n frontend state '$fstate', want 1 (Initialising)"
        details+=("vif$n mac=$mac backend=2 frontend=1")
    done
    pass "${details[*]}"
}

# ---- 1. the library's xen platform tests on real /dev/xen --------------------------------------

# gtest_counts LOG: "PASSED SKIPPED", the counts of a GoogleTest run's summary (0 when absent).
gtest_counts() {
    local p s
    p=$(sed -nE 's/^\[  PASSED  \] ([0-9]+) test.*/\1/p' "$1")
    s=$(sed -nE 's/^\[  SKIPPED \] ([0-9]+) test.*/\1/p' "$1")
    echo "${p:-0} ${s:-0}"
}

check_xen_platform_tests() {
    local log=$XPV_RUN_DIR/xpv-tests.log passed skipped filter='XenPlatformTest.*' left_out=''
    # In a PVH guest, mapping our own grants through gntdev oopses this kernel when the process
    # exits (__tlb_remove_page_size in exit_mmap: 3 of 3 PVH boots; HVM, also auto-translated, is
    # spared the try). A frontend never maps grants, only gives them (gntalloc): the other tests.
    if [[ $GUEST_TYPE != pv ]]; then
        filter+=':-XenPlatformTest.OwnGrantsMappedAndCopiedThroughGntdev'
        left_out="; left out: OwnGrantsMappedAndCopiedThroughGntdev (a self-map oopses a PVH guest's kernel)"
    fi
    "$BIN/xpv-tests" --gtest_filter="$filter" --gtest_color=no >"$log" 2>&1
    local rc=$?
    grep -E '^\[ +(OK|FAILED|SKIPPED) +\]|Failure|error' "$log" | head -n 20 | sed 's/^/    /'
    read -r passed skipped < <(gtest_counts "$log")
    ((rc == 0 && ${passed:-0} >= 6 && ${skipped:-0} == 0)) ||
        fail "exit $rc, passed ${passed:-0}, skipped ${skipped:-0}: $(grep -m1 -A3 Failure "$log" | tr '\n' ' ')"
    pass "$passed xen platform tests (grants, event channels, xenstore) passed on /dev/xen$left_out"
}

# ---- 2. the userspace handshake reaches Connected with Linux netback -------------------------

# handshake VIF LOG: our frontend connects (xpv-pktgen as a sink for 2 s) and closes.
handshake() {
    local vif=$1 log=$2 be
    be=$(xenstore-read "device/vif/$vif/backend")
    "$BIN/xpv-pktgen" --platform xen --vif "$vif" --role sink --seconds 2 >"$log" 2>&1
    local rc=$?
    sed 's/^/    /' "$log" | head -n 8
    grep -q "xpv-pktgen: connected" "$log" || return 1
    ((rc == 0)) || return 1
    # Closed again, and netback followed (Closed, or InitWait once we went back).
    [[ $(xenstore-read "device/vif/$vif/state") == 6 ]] || return 1
    echo "backend $be state $(xenstore-read "$be/state")"
}

check_handshake_fresh_vif() {
    local out
    out=$(handshake 1 "$XPV_RUN_DIR/hs-fresh.log") || fail "vif 1 (never had a frontend): $out"
    # Hand the vif back as a fresh device: Linux's xenbus only probes frontends in state
    # Initialising, and the next checks want the kernel netfront to take vif 1 for a while.
    xenstore-write device/vif/1/state 1
    pass "vif 1, never touched by a kernel netfront: Connected, closed cleanly ($(tail -n1 <<<"$out"))"
}

check_kernel_netfront_ping() {
    local ifc out i
    modprobe xen-netfront || fail "modprobe xen-netfront failed"
    for ((i = 0; i < 100; i++)); do
        ifc=$(xpv_vif_netdev 0) && break
        sleep 0.2
    done
    [[ -n $ifc ]] || fail "no netdev for vif 0 after loading xen-netfront"
    sysctl -qw net.ipv4.conf.all.arp_ignore=1
    if ! ip addr add "$DOMU_IP/24" dev "$ifc" || ! ip link set "$ifc" up; then
        fail "cannot configure $ifc"
    fi
    xpv_xs_wait "$(xenstore-read device/vif/0/backend)/state" 4 30 || fail "vif 0 backend not Connected (4)"
    out=$(xpv_dom0 ping "$DOMU_IP" 5) || fail "$ifc: $out"
    pass "$ifc $DOMU_IP: $out"
}

# The kernel netfront bound vif 1 too when it loaded: unbind it (both ends go to Closed and
# its keys stay behind), then our frontend must connect anyway.
check_handshake_unbound_vif() {
    local be stale out i
    be=$(xenstore-read device/vif/1/backend)
    for ((i = 0; i < 50; i++)); do
        [[ $(xenstore-read "$be/state" 2>/dev/null) == 4 ]] && break
        sleep 0.2
    done
    [[ -e /sys/bus/xen/drivers/vif/vif-1 ]] || fail "xen-netfront did not bind vif 1"
    echo vif-1 > /sys/bus/xen/drivers/vif/unbind || fail "unbinding vif-1 failed"
    xpv_xs_wait "device/vif/1/state" 6 30 || fail "vif 1 frontend state $(xenstore-read device/vif/1/state) after unbind"
    stale=$(xenstore-ls device/vif/1 2>/dev/null | grep -oE '^ *(event-channel[-a-z]*|tx-ring-ref|rx-ring-ref|queue-[0-9]+|multi-queue-num-queues)' | tr -d ' ' | tr '\n' ' ')
    [[ -n $stale ]] || fail "no stale keys after unbinding the kernel netfront"
    out=$(handshake 1 "$XPV_RUN_DIR/hs-unbound.log") || fail "vif 1 after unbind (stale: $stale): $out"
    pass "vif 1 after the kernel netfront was unbound (stale keys: $stale): Connected, closed cleanly"
}

# ---- xpv-bind (tools/xpv-bind; docs/xpv-bind.md). Three checks, each where the vifs already are
# what it needs, so that no testpmd starts for it: before testpmd (vif 0 xen-netfront and routed,
# vif 1 Closed), under testpmd (vif 1 userspace), and app-sigkill-restart (chaos.sh: bind vif 1
# back to xen-netfront, ping through it, unbind it). ------------------------------------------

# xpv_bind_section STATUS TITLE-END: the vif lines of one group of xpv-bind --status.
xpv_bind_section() {
    sed -n "/$2\$/,/^\$/p" <<<"$1" | grep '^vif-'
}

check_xpv_bind() {
    local out rc eth0 limit0 limit_path=/sys/module/xen_gntalloc/parameters/limit prep queues
    # --prepare on what domu-init loaded and mounted; gntalloc's limit raised for one queue
    # more than it holds, then put back.
    limit0=$(<"$limit_path")
    queues=$((limit0 / 514 + 1))
    out=$("$XPV_BIND" --prepare --queues "$queues" --set-grant-limit 2>&1)
    rc=$?
    prep="gntalloc limit $limit0 -> $(<"$limit_path") for $queues queues"
    echo "$limit0" >"$limit_path"
    ((rc == 0)) && [[ $(<"$limit_path") == "$limit0" ]] || fail "--prepare --queues $queues --set-grant-limit: exit $rc, $prep: $out"
    grep -q "^xenfs: mounted at /proc/xen$" <<<"$out" && grep -q "^grants: gntalloc limit $((queues * 514)), $queues queue(s) need $((queues * 514))" <<<"$out" ||
        fail "--prepare said: $out"
    out=$("$XPV_BIND" --status 2>&1) || fail "--status: exit $?: $out"
    sed 's/^/    /' <<<"$out"
    eth0=$(xpv_vif_netdev 0) || fail "no kernel netdev for vif 0"
    xpv_bind_section "$out" "xen-netfront" | grep -q "^vif-0 mac=00:16:3e:00:00:10 if=$eth0 state=Connected(4) .* \*Active\*$" ||
        fail "--status does not show vif-0 under xen-netfront as $eth0, Connected, *Active*"
    xpv_bind_section "$out" "held by nobody" | grep -q "^vif-1 mac=$VIF1_MAC state=Closed(6)" ||
        fail "--status does not list vif-1 (left Closed) under nobody"
    # vif 0 carries the domU's address: refused, and left alone.
    out=$("$XPV_BIND" --unbind vif-0 2>&1)
    rc=$?
    ((rc == 1)) && grep -q "^Error: vif-0 is $eth0, which is up, routed" <<<"$out" ||
        fail "--unbind vif-0 ($eth0, $DOMU_IP): exit $rc, '$out'"
    [[ -e /sys/bus/xen/drivers/vif/vif-0 ]] || fail "a refused --unbind vif-0 unbound it"
    pass "--prepare ($prep, put back); --status: vif-0 $eth0 *Active* under xen-netfront, vif-1 Closed under nobody; --unbind vif-0 refused: $out"
}

# Under the testpmd of the DPDK checks (net_xenpv on vif 1).
check_xpv_bind_userspace() {
    local out rc
    [[ -n $TP_PID ]] || fail "no testpmd"
    out=$("$XPV_BIND" --status 2>&1) || fail "--status: exit $?: $out"
    xpv_bind_section "$out" "no kernel driver)" | grep -q "^vif-1 mac=$VIF1_MAC state=Connected(4) .*state=Connected(4)$" ||
        fail "with testpmd on vif 1, --status does not list it under userspace: $out"
    out=$("$XPV_BIND" --bind vif-1 2>&1)
    rc=$?
    ((rc == 1)) && grep -q "^Error: vif-1 is held by a userspace frontend" <<<"$out" || fail "--bind vif-1 under testpmd: exit $rc, '$out'"
    [[ $(xenstore-read device/vif/1/state) == 4 && ! -e /sys/bus/xen/drivers/vif/vif-1 ]] || fail "a refused --bind vif-1 touched it"
    pass "testpmd holds vif 1: --status lists it under userspace (Connected, no kernel driver); --bind refused: $out"
}

# ---- one interactive testpmd for the DPDK checks: port 0 = net_xenpv on vif 1, port 1 =
# net_af_packet on the kernel netfront's vif 0 netdev -------------------------------------------

TP_LOG=$XPV_RUN_DIR/testpmd.log
TP_FIFO=$XPV_RUN_DIR/testpmd.in
TP_PID=
prompts() { grep -o 'testpmd> ' "$TP_LOG" 2>/dev/null | wc -l; }

# tp CMD [TIMEOUT] [REGEX]: one testpmd command; waits for the next prompt, or with REGEX until
# the lines after the command match it (grep -E); prints the command's output. REGEX is for
# "start" with verbose output on: testpmd writes its prompt a character at a time, and a packet
# line the forwarding lcore prints can split it ("test" + "port 0/queue 1: received 1 packets"),
# so that waiting for the prompt would last the whole timeout.
tp() {
    local before start=$SECONDS
    before=$(prompts)
    local lines
    lines=$(wc -l < "$TP_LOG")
    echo "$1" >&7
    until if [[ -n ${3:-} ]]; then tail -n +"$((lines + 1))" "$TP_LOG" | grep -qE "$3"
        else (($(prompts) > before)); fi; do
        kill -0 "$TP_PID" 2>/dev/null || { echo "testpmd died"; return 1; }
        ((SECONDS - start > ${2:-120})) && { echo "testpmd did not answer '$1'${3:+ with /$3/}"; return 1; }
        sleep 0.5
    done
    tail -n +"$((lines + 1))" "$TP_LOG"
}

# nice_lcore_workers PID [NICE]: DPDK's forwarding lcores of PID (threads "rte-worker-N") at
# nice NICE (19). They spin on the domU's one vCPU; niced, they leave it to the check scripts
# and the kernel whenever those have work (each process start here costs tens of milliseconds
# under TCG), and still get all of it while the scripts wait. The throughput checks put them
# back at 0 while they measure: niced, the lcore also yields to the kernel's softirq work (the
# frames the bridge floods back into the domU's kernel netfront), which skews the comparison.
# Prints the threads it reniced.
nice_lcore_workers() {
    local t n=0
    for t in /proc/"$1"/task/*; do
        [[ $(<"$t/comm") == rte-worker-* ]] || continue
        renice -n "${2:-19}" -p "${t##*/}" >/dev/null && n=$((n + 1))
    done
    echo "$n"
}

tp_start() {  # [NET_XENPV_DEVARGS: more device arguments for port 0, ",key=value..."]
    local eth0 start=$SECONDS
    eth0=$(xpv_vif_netdev 0) || { echo "no kernel netdev for vif 0"; return 1; }
    rm -f "$TP_FIFO"
    mkfifo "$TP_FIFO"
    exec 7<>"$TP_FIFO"
    # One vCPU: testpmd needs two lcores, both on CPU 0. stdbuf: output as it happens.
    stdbuf -oL -eL dpdk-testpmd --no-huge -m 256 --no-pci --no-shconf --lcores=0@0,1@0 \
        --vdev "net_xenpv0,vif=1${1:-}" --vdev "net_af_packet0,iface=$eth0" -- -i \
        --total-num-mbufs=8192 --port-topology=loop <&7 >"$TP_LOG" 2>&1 &
    TP_PID=$!
    until (($(prompts) >= 1)); do
        if ! kill -0 "$TP_PID" 2>/dev/null || ((SECONDS - start > 600)); then
            tail -n 30 "$TP_LOG"
            echo "testpmd did not come up within $((SECONDS - start))s"
            return 1
        fi
        sleep 1
    done
    xpv_log "testpmd interactive after $((SECONDS - start))s; lcore workers niced: $(nice_lcore_workers "$TP_PID")"
}

# The last "Forward statistics for port N" block's FIELD (TX-packets, RX-packets, RX-dropped...).
fwd_stat() {  # OUTPUT PORT FIELD
    python3 -c '
import re, sys
out, port, field = sys.argv[1], sys.argv[2], sys.argv[3]
blocks = out.split("Forward statistics for port " + port)
if len(blocks) < 2: print(-1); sys.exit()
m = re.search(field + r":\s+(\d+)", blocks[-1])
print(m.group(1) if m else -1)' "$1" "$2" "$3"
}
xstat() {  # OUTPUT NAME
    sed -nE "s/^ *$2: *([0-9]+).*/\1/p" <<<"$1" | tail -n1
}

check_testpmd_net_xenpv() {
    local info
    info=$(tp "show port info 0") || fail "$info"
    grep -q "net_xenpv" <<<"$info" || fail "port 0 is not net_xenpv: $(grep -m1 Driver <<<"$info")"
    tp "port config mtu 0 9000" >/dev/null
    local i
    for ((i = 0; i < 60; i++)); do
        info=$(tp "show port info 0")
        grep -q "Link status: up" <<<"$info" && break
        sleep 1
    done
    grep -q "Link status: up" <<<"$info" || fail "port 0 link stays down"
    pass "port 0 net_xenpv on vif 1 (backend $(xenstore-read device/vif/1/backend), state $(xenstore-read "$(xenstore-read device/vif/1/backend)/state")): link up"
}

# ---- 3. dom0 pings; testpmd icmpecho over net_xenpv answers (multi-slot both ways) ----------

check_icmpecho() {
    [[ -n $TP_PID ]] || fail "no testpmd"
    xpv_dom0 mtu 9000 >/dev/null || fail "cannot raise dom0's MTU"
    tp "set portlist 0" >/dev/null
    tp "set fwd icmpecho" >/dev/null
    tp "start" >/dev/null || fail "start failed"
    local small big
    small=$(xpv_dom0 ping "$ICMPECHO_IP" 10 56)
    local r1=$?
    big=$(xpv_dom0 ping "$ICMPECHO_IP" 10 8000)
    local r2=$?
    local out
    out=$(tp "stop")
    ((r1 == 0 && r2 == 0)) || fail "$small; $big"
    pass "$small; $big (8028-byte IP packets: multi-slot on both rings); testpmd RX $(fwd_stat "$out" 0 RX-packets) TX $(fwd_stat "$out" 0 TX-packets)"
}

# ---- 4. txonly: dom0 counts our frames; rxonly: we count dom0's frames -------------------------

# Checks run in subshells: the net_xenpv figures go to a file for kernel-vs-xenpv.
XENPV_FIGURES=$XPV_RUN_DIR/xenpv-txonly
KERNEL_FIGURES=$XPV_RUN_DIR/kernel-txonly  # pps events spurious jiffies_eoi_delayed (af_packet txonly)
check_txonly_counts() {
    [[ -n $TP_PID ]] || fail "no testpmd"
    local c0 c1 out sent x0 x1
    x0=$(tp "show port xstats 0")
    c0=$(xpv_dom0 vif_counts 1) || fail "$c0"
    tp "set fwd txonly" >/dev/null
    tp "set txpkts 64" >/dev/null
    nice_lcore_workers "$TP_PID" 0 >/dev/null
    tp "start" >/dev/null || fail "start failed"
    sleep "$SECS"
    out=$(tp "stop")
    nice_lcore_workers "$TP_PID" >/dev/null
    sleep 2
    c1=$(xpv_dom0 vif_counts 1) || fail "$c1"
    x1=$(tp "show port xstats 0")
    sent=$(fwd_stat "$out" 0 TX-packets)
    local rx0 rd0 rx1 rd1 _
    read -r rx0 rd0 _ _ <<<"$c0"
    read -r rx1 rd1 _ _ <<<"$c1"
    local got=$((rx1 - rx0)) dropped=$((rd1 - rd0))
    local notifies=$(($(xstat "$x1" q0_notifies) - $(xstat "$x0" q0_notifies)))
    echo "$((sent / SECS)) $(python3 -c "print('%.4f' % ($notifies / max(1, $sent)))")" >"$XENPV_FIGURES"
    ((sent > 0 && got + dropped == sent)) ||
        fail "testpmd sent $sent, dom0 counted $got on vif$(xenstore-read domid).1 (+$dropped dropped)"
    pass "testpmd txonly sent $sent 64-byte frames in ${SECS}s; dom0 counted $got on its vif (+$dropped dropped): they match"
}

check_rxonly_counts() {
    [[ -n $TP_PID ]] || fail "no testpmd"
    local n=5000 c0 c1 out got sent_line stats missed
    tp "set fwd rxonly" >/dev/null
    tp "start" >/dev/null || fail "start failed"
    c0=$(xpv_dom0 vif_counts 1) || fail "$c0"
    sent_line=$(xpv_dom0 send 1 "$VIF1_MAC" $n) || fail "$sent_line"
    sleep 3
    c1=$(xpv_dom0 vif_counts 1)
    out=$(tp "stop")
    stats=$(tp "show port stats 0")
    got=$(fwd_stat "$out" 0 RX-packets)
    missed=$(sed -nE 's/.*RX-missed: *([0-9]+).*/\1/p' <<<"$stats" | head -n1)
    local tx0 td0 tx1 td1 _
    read -r _ _ tx0 td0 <<<"$c0"
    read -r _ _ tx1 td1 <<<"$c1"
    local delivered=$((tx1 - tx0)) dom0_dropped=$((td1 - td0))
    ((delivered + dom0_dropped == n && got + ${missed:-0} == delivered)) ||
        fail "dom0 $sent_line: delivered $delivered, dropped $dom0_dropped; testpmd received $got, missed ${missed:-?}"
    pass "dom0 sent $n: netback delivered $delivered (+$dom0_dropped dropped in dom0); testpmd rxonly received $got (+${missed:-0} counted missed)"
}

# ---- 7. the kernel's netfront (af_packet) against net_xenpv, same domU, same run -------------

check_kernel_vs_xenpv() {
    [[ -n $TP_PID ]] || fail "no testpmd"
    local XENPV_PPS=0 XENPV_NOTIFIES_PER_PKT=0
    [[ -s $XENPV_FIGURES ]] && read -r XENPV_PPS XENPV_NOTIFIES_PER_PKT <"$XENPV_FIGURES"
    ((XENPV_PPS > 0)) || fail "no net_xenpv figure (txonly check failed)"
    local eth0 irq0 irq1 c0 c1 out sent
    eth0=$(xpv_vif_netdev 0)
    # The kernel netfront's event channels are the /proc/interrupts lines named after its
    # xenbus device (vif0-q0-tx, vif0-q0-rx) or, in older kernels, its netdev (eth0-tx).
    local irqnames
    irqnames=$(awk -v p="$eth0|vif0" '$NF ~ "^(" p ")(-|$)" { printf "%s ", $NF }' /proc/interrupts)
    [[ -n $irqnames ]] || fail "no /proc/interrupts line named after $eth0: $(grep -i xen /proc/interrupts | tr -s ' ' | tr '\n' ';')"
    irq0=$(xpv_irq_sum "^($eth0|vif0)(-|$)")
    # Linux keeps per-xenbus-device event statistics (events, spurious_events,
    # jiffies_eoi_delayed) since the late-EOI fix; the seeds' table compares them.
    local sysd=/sys/bus/xen/devices/vif-0 ev0 sp0 de0
    read -r ev0 sp0 de0 < <(cat $sysd/events $sysd/spurious_events $sysd/jiffies_eoi_delayed 2>/dev/null | tr '\n' ' ')
    c0=$(xpv_dom0 vif_counts 0) || fail "$c0"
    tp "set portlist 1" >/dev/null
    tp "set fwd txonly" >/dev/null
    nice_lcore_workers "$TP_PID" 0 >/dev/null
    tp "start" >/dev/null || fail "start failed"
    sleep "$SECS"
    out=$(tp "stop")
    nice_lcore_workers "$TP_PID" >/dev/null
    sleep 2
    c1=$(xpv_dom0 vif_counts 0)
    irq1=$(xpv_irq_sum "^($eth0|vif0)(-|$)")
    tp "set portlist 0" >/dev/null
    sent=$(fwd_stat "$out" 1 TX-packets)
    local rx0 rx1 _
    read -r rx0 _ _ _ <<<"$c0"
    read -r rx1 _ _ _ <<<"$c1"
    local kpps=$((sent / SECS)) ev1 sp1 de1
    read -r ev1 sp1 de1 < <(cat $sysd/events $sysd/spurious_events $sysd/jiffies_eoi_delayed 2>/dev/null | tr '\n' ' ')
    if [[ -n $ev0 && -n $ev1 ]]; then
        echo "$kpps $((ev1 - ev0)) $((sp1 - sp0)) $((de1 - de0))" >"$KERNEL_FIGURES"
    else
        # This kernel has no per-device statistics: its events from /proc/interrupts.
        echo "$kpps irq $((irq1 - irq0))" >"$KERNEL_FIGURES"
    fi
    local kev
    kev=$(python3 -c "print('%.4f' % (($irq1 - $irq0) / max(1, $sent)))")
    ((sent > 0 && rx1 - rx0 > 0)) || fail "kernel netfront sent $sent, dom0 counted $((rx1 - rx0))"
    local ratio
    ratio=$(python3 -c "print('%.2f' % ($XENPV_PPS / max(1, $kpps)))")
    pass "txonly 64 B, ${SECS}s each: kernel netfront (af_packet) $kpps pps, $kev events/packet ($((irq1 - irq0)) on ${irqnames% }); net_xenpv $XENPV_PPS pps, 0 events/packet (poll mode), $XENPV_NOTIFIES_PER_PKT notifies/packet; ratio xenpv/kernel $ratio"
}

# The kernel's fastest path a DPDK user could pick instead of net_xenpv: net_af_xdp over the
# kernel netfront (its own testpmd, txonly on vif 0's netdev). xen-netfront runs XDP natively
# only when netback offers feature-xdp-headroom (it does here). Not in the default run: in this
# PV domU one run saw the XDP socket's ring mmap fail in the PV MMU (xen_mc_flush -EINVAL,
# testpmd stuck in "Configuring Port 0"), another saw the XDP program attach but no forwarding
# within 300 s, and testpmd could not be reaped after SIGKILL (the check timed out). Opt in with
# XPV_E2E_AF_XDP=1 in the domU's environment.
check_kernel_af_xdp() {
    local eth0 log=$XPV_RUN_DIR/af-xdp.log pid c0 c1 rx0 rx1 _ i started=0 headroom
    eth0=$(xpv_vif_netdev 0) || fail "no kernel netdev for vif 0"
    headroom=$(xenstore-read "$(xenstore-read device/vif/0/backend)/feature-xdp-headroom" 2>/dev/null || echo absent)
    # The image keeps net_af_xdp out of EAL's autoload (image/build.sh): load it by name.
    local pmd
    pmd=$(ls /usr/lib/x86_64-linux-gnu/dpdk/drivers-*/librte_net_af_xdp.so.* 2>/dev/null | head -n1)
    [[ -n $pmd ]] || fail "no net_af_xdp driver in the image (Debian's librte-net-af-xdp23)"
    # libxdp's dispatcher wants a bpffs.
    mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf 2>/dev/null
    local dmesg0
    dmesg0=$(dmesg | wc -l)
    stdbuf -oL -eL dpdk-testpmd --no-huge -m 256 --no-pci --no-shconf --file-prefix afxdp \
        --lcores=0@0,1@0 -d "$pmd" --vdev "net_af_xdp0,iface=$eth0" -- --forward-mode=txonly --auto-start \
        --stats-period 5 --total-num-mbufs=4096 >"$log" 2>&1 </dev/null &
    pid=$!
    for ((i = 0; i < 300; i++)); do
        # testpmd without -i says "No commandline core given, start packet forwarding".
        grep -qE "Start automatic packet forwarding|start packet forwarding" "$log" && { started=1; break; }
        kill -0 "$pid" 2>/dev/null || break
        ((i % 5 == 4)) && dmesg | tail -n +"$((dmesg0 + 1))" | grep -q "xen_mc_flush" && { sleep 5; break; }
        sleep 1
    done
    if ((started == 0)); then
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        grep -q "Unable to parse device 'net_af_xdp0" "$log" &&
            fail "testpmd did not take net_af_xdp from $pmd: $(grep -iE 'xdp|dlopen|cannot|error' "$log" | head -n 4 | tr '\n' ' ')"
        sed -n 's/^/af_xdp testpmd: /p' "$log" | tail -n 30
        # Seen here: mapping the XDP socket's rings (remap_pfn_range) fails in a PV guest, the
        # PV MMU's multicall returning -EINVAL (a xen_mc_flush warning per ring), and testpmd
        # stays in "Configuring Port 0".
        if dmesg | tail -n +"$((dmesg0 + 1))" | grep -q "xen_mc_flush"; then
            pass "NOT RUN: net_af_xdp cannot run in this PV domU: mapping the XDP socket's rings failed in the PV MMU (remap_pfn_range: multicall -EINVAL, xen_mc_flush warnings in dmesg); testpmd stopped at '$(grep -v '^ *$' "$log" | tail -n 1)' (netback feature-xdp-headroom: $headroom)"
        fi
        pass "NOT RUN: testpmd over net_af_xdp on $eth0 did not start (netback feature-xdp-headroom: $headroom): $(grep -vE '^EAL: (Detected|Selected|Physical)|skipping unrecognized|^ *$' "$log" | tail -n 6 | tr '\n' ' ')"
    fi
    sleep 2
    c0=$(xpv_dom0 vif_counts 0) || { kill -KILL "$pid"; fail "$c0"; }
    sleep "$SECS"
    c1=$(xpv_dom0 vif_counts 0)
    kill -INT "$pid"
    for ((i = 0; i < 30; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    read -r rx0 _ _ _ <<<"$c0"
    read -r rx1 _ _ _ <<<"$c1"
    local pps=$(((rx1 - rx0) / SECS)) XENPV_PPS=0 _n
    [[ -s $XENPV_FIGURES ]] && read -r XENPV_PPS _n <"$XENPV_FIGURES"
    ((pps > 0)) || fail "testpmd over net_af_xdp on $eth0 forwarded, but dom0 counted $((rx1 - rx0)) frames on vif 0 in ${SECS}s: $(tail -n 3 "$log" | tr '\n' ' ')"
    pass "txonly 64 B over net_af_xdp on the kernel netfront ($eth0, netback feature-xdp-headroom: $headroom): $pps pps counted by dom0; net_xenpv $XENPV_PPS pps; ratio xenpv/af_xdp $(python3 -c "print('%.2f' % ($XENPV_PPS / max(1, $pps)))")"
}

# ---- 5. the backend goes away and comes back during traffic ----------------------------------

# One detach/attach round under txonly: the vif comes back with MAC $1. The port's MAC must
# follow it (show port info) and dom0 must see frames from the new MAC.
detach_attach_round() {
    local mac=$1 lsc0 lsc1 c out i
    lsc0=$(grep -c "link state change event" "$TP_LOG")
    out=$(vif1_reattach "$mac") || { tp "stop" >/dev/null; fail "$out"; }
    for ((i = 0; i < 120; i++)); do
        lsc1=$(grep -c "link state change event" "$TP_LOG")
        ((lsc1 - lsc0 >= 2)) && break
        sleep 1
    done
    ((lsc1 - lsc0 >= 2)) || { tp "stop" >/dev/null; fail "$((lsc1 - lsc0)) link state change events after attaching mac=$mac (want down and up)"; }
    # Traffic through the new backend: dom0 counts what testpmd keeps sending.
    local rx=0 _ t0=$SECONDS
    while ((SECONDS - t0 < 60)); do
        c=$(xpv_dom0 vif_counts 1) && read -r rx _ _ _ <<<"$c"
        ((rx > 0)) && break
        sleep 2
    done
    ((rx > 0)) || { tp "stop" >/dev/null; fail "no traffic through the vif re-attached with mac=$mac within 60 s of link up (vif counters: $c)"; }
    local port_mac srcs
    port_mac=$(tp "show port info 0" | sed -nE 's/^MAC address: *([0-9A-Fa-f:]+).*/\1/p' | head -n1 | tr 'A-F' 'a-f')
    # testpmd builds txonly frames from the MAC it read when it started the port: restart it.
    tp "stop" >/dev/null
    tp "port stop 0" >/dev/null
    tp "port start 0" >/dev/null
    tp "start" >/dev/null || fail "start failed after port start 0"
    sleep 2
    srcs=$(xpv_dom0 src_macs 1)
    [[ $port_mac == "$mac" ]] || { tp "stop" >/dev/null; fail "after attaching mac=$mac the port says MAC address $port_mac; dom0 sees source MACs $srcs"; }
    [[ ${srcs%%=*} == "$mac" ]] || { tp "stop" >/dev/null; fail "after attaching mac=$mac dom0 sees txonly frames from $srcs"; }
    ROUND_NOTE+="mac=$mac: $((lsc1 - lsc0)) LSC events, port MAC $port_mac, dom0 sees $srcs, $rx frames; "
}
VIF1_MAC_OTHER=00:16:3e:00:00:21
check_backend_detach_attach() {
    [[ -n $TP_PID ]] || fail "no testpmd"
    local ROUND_NOTE="" out
    tp "set portlist 0" >/dev/null
    tp "set fwd txonly" >/dev/null
    tp "start" >/dev/null || fail "start failed"
    sleep 3
    # Another MAC, then the original one again (the checks after this one address VIF1_MAC).
    detach_attach_round "$VIF1_MAC_OTHER"
    detach_attach_round "$VIF1_MAC"
    out=$(tp "stop")
    kill -0 "$TP_PID" || fail "testpmd died"
    grep -q "the backend's mac is now $VIF1_MAC_OTHER" "$TP_LOG" ||
        fail "testpmd's log does not say the backend's mac changed: $(grep -i "mac" "$TP_LOG" | tail -n 2 | tr '\n' ' ')"
    pass "xl network-detach/attach under txonly, twice: ${ROUND_NOTE%; }"
}

check_no_mbuf_leak() {
    [[ -n $TP_PID ]] || fail "no testpmd"
    local x out size cached common
    # An earlier check that failed half-way may have left forwarding running: a port is not
    # stopped while it forwards, and the burst in flight would count as leaked.
    tp "stop" >/dev/null
    x=$(tp "show port xstats 0")
    tp "port stop all" 60 >/dev/null
    out=$(tp "dump_mempool mb_pool_0")
    size=$(sed -nE 's/^ *size=([0-9]+)/\1/p' <<<"$out" | head -n1)
    cached=$(sed -nE 's/^ *total_cache_count=([0-9]+)/\1/p' <<<"$out" | head -n1)
    common=$(sed -nE 's/^ *common_pool_count=([0-9]+)/\1/p' <<<"$out" | head -n1)
    [[ -n $size && -n $cached && -n $common ]] || fail "no mempool dump: $(tail -n 5 <<<"$out" | tr '\n' ' ')"
    ((cached + common == size)) || fail "after port stop: $((cached + common)) of $size mbufs back in mb_pool_0"
    pass "after port stop all: $((cached + common)) of $size mbufs back in the pool; q0 backend errors $(xstat "$x" q0_backend_errors)"
}

# ---- 6. event mode against Linux netback: spurious-event ratio, notifies per packet -----------

# One sample: xpv-pktgen reflects on vif 1 while dom0 echoes 3000 frames through it. Prints the
# result line; status 1 when a frame did not come back, 3 when that happened during a stall. Beside the reflector, a shell in
# the domU wakes every 50 ms: its longest gap, the reflector's longest turn of its loop and
# dom0's longest stall (action_echo) tell a guest or dom0 that did not run (an emulated machine
# on a loaded host) from a reflector that stopped taking frames.
event_mode_sample() {
    local log=$XPV_RUN_DIR/pktgen-event$1.log json=$XPV_RUN_DIR/pktgen-event$1.json
    local hb=$XPV_RUN_DIR/heartbeat$1 pid hb_pid out rc c0 c1 i
    "$BIN/xpv-pktgen" --platform xen --vif 1 --role reflect --mode event --seconds 120 --json "$json" \
        >"$log" 2>&1 &
    pid=$!
    for ((i = 0; i < 100; i++)); do grep -q "xpv-pktgen: connected" "$log" && break; sleep 0.3; done
    grep -q "xpv-pktgen: connected" "$log" || { kill "$pid"; echo "xpv-pktgen did not connect: $(tail -n2 "$log")"; return 1; }
    (while :; do echo "$EPOCHREALTIME"; sleep 0.05; done) >"$hb" &
    hb_pid=$!
    c0=$(xpv_dom0 vif_counts 1)
    out=$(xpv_dom0 echo 1 "$VIF1_MAC" 3000)
    rc=$?
    c1=$(xpv_dom0 vif_counts 1)
    kill "$hb_pid"
    kill -INT "$pid"
    wait "$pid"
    [[ -s $json ]] || { echo "no results from xpv-pktgen: $(tail -n2 "$log")"; return 1; }
    python3 - "$json" "$hb" "$out" "$rc" "$c0" "$c1" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
beats = [float(x) for x in open(sys.argv[2]).read().split() if x.replace('.', '', 1).isdigit()]
guest_stall = max((b - a - 0.05 for a, b in zip(beats, beats[1:])), default=0.0)
out, rc = sys.argv[3], int(sys.argv[4])
n = max(1, d["received"])
line = "%s; events/packet %.4f, spurious %d of %d events (%.3f%%), notifies/packet %.4f, delayed EOIs %d, tx reaped in xmit %d" % (
    out, d["events"] / n, d["spurious_events"], d["events"], 100.0 * d["spurious_events"] / max(1, d["events"]),
    d["notifies"] / n, d["delayed_eois"], d["tx_reaped_in_xmit"])
if d["tx_packets"] != d["received"] or d["tx_errors"] or d["tx_dropped"] or d["backend_errors"]:
    line += "; reflector: received %d, sent %d, tx errors %d, tx dropped %d, ring full %d, backend errors %d" % (
        d["received"], d["tx_packets"], d["tx_errors"], d["tx_dropped"], d["ring_full"], d["backend_errors"])
if rc:
    line += ("; domU's longest stall %.2fs, the reflector's longest loop turn %.2fs (longest xenstore call %.2fs);"
             " reflector: %d TX notify waits (%d at the deadline), link downs %d, reconnects %d;"
             " dom0 vif counters (rx drop tx drop) before: %s, after: %s") % (
        guest_stall, d["longest_loop_gap_ms"] / 1e3, d["longest_control_call_ms"] / 1e3,
        d["tx_notify_waits"], d["tx_notify_waits_expired"],
        d["link_downs"], d["reconnects"], sys.argv[5], sys.argv[6])
print(line)
# 3: lost while something outside the data path stood still for seconds: the domU, dom0, or
# xenstore (xpv-pktgen reads it in the loop that reflects).
m = re.search(r"dom0's longest stall ([0-9.]+)s", out)
dom0_stall = float(m.group(1)) if m else 0.0
sys.exit(0 if not rc else 3 if max(guest_stall, dom0_stall, d["longest_control_call_ms"] / 1e3) >= 2 else 1)
PY
}

check_event_mode() {
    local first second rc
    first=$(event_mode_sample a)
    rc=$?
    ((rc == 0)) && pass "xpv-pktgen reflect, event mode, against Linux netback: $first"
    # Frames lost while the domU, dom0 or xenstore stood still for seconds (the emulated machine,
    # not the data path): Linux netback drops what waits 10 s for the guest (rx_drain_timeout).
    # Such a sample does not judge the data path; a second one does. Lost without such a stall:
    # a defect.
    ((rc == 3)) || fail "$first"
    xpv_log "event-mode: the first sample lost frames during a stall ($first); a second sample"
    second=$(event_mode_sample b) || fail "$second (a first sample, during a stall: $first)"
    pass "xpv-pktgen reflect, event mode, against Linux netback: $second (a first sample lost frames during a stall: $first)"
}

# ---- 8. l3fwd-power --interrupt-only over net_xenpv on vif 1 against Linux netback ------------
# Rounds of UDP frames from dom0, each followed by an idle gap: every round must wake l3fwd-power
# on the queue's event (it logs "waked up from rx interrupt" only when rte_epoll_wait() returned
# an event, not on its 10 ms timeout), every frame comes back forwarded, and the lcore sleeps
# through the gaps. One vCPU: one lcore, so the main thread serves the queue (--config (0,0,0)).
# What an idle l3fwd-power costs here: it still wakes on its 10 ms epoll timeout, disables and
# enables the queue's interrupt and polls once, 100 times a second; under TCG on a loaded 2-core
# host that measured 17% of the vCPU with the fixed PMD (0 wake-ups on events in the gaps), where
# the storm of empty wake-ups the issue saw (TX completions re-signalling the fd) took 87%. So
# the CPU limit here is 50% (storm or not) and the storm itself is caught by its wake-ups; the
# 5% limit is the simulated run's (tests/integration/l3fwd_power.sh). Reply latency is printed,
# not judged: the emulated dom0 -> domU -> dom0 trip alone is milliseconds to tens of them.
L3FWD_ROUNDS=${XPV_E2E_L3FWD_ROUNDS:-20}
L3FWD_FRAME_GAP_MS=50
L3FWD_FRAMES=5   # per round, L3FWD_FRAME_GAP_MS apart: each one finds l3fwd-power asleep
# PVH and HVM: frames 300 ms apart, 8 a round. There l3fwd-power's own 10 ms epoll timeouts keep
# it awake 29% of the idle time (15% in PV), and a frame that finds it awake is served without a
# wake-up; its 300 empty polls before it sleeps again also take longer. With 50 ms and 5 frames,
# a PVH run on a loaded host logged 15 wake-ups in 20 rounds, 5 rounds with none; with 300 ms a
# round goes without a wake-up only when all its frames find it awake (0.29^8).
if [[ $GUEST_TYPE != pv ]]; then
    L3FWD_FRAME_GAP_MS=300
    L3FWD_FRAMES=8
fi
L3FWD_GAP=0.4    # seconds idle after each round

# The round loop below reads the clock and the lcore's CPU time without a subshell, and sleeps
# without a process: a fork costs a tenth of a second and more in a domU under QEMU TCG.
# thread_ticks VAR PID TID: VAR = utime + stime of the thread in clock ticks (fields 14 and 15
# of its stat).
thread_ticks() {
    local line f
    read -r line < "/proc/$2/task/$3/stat" || return 1
    read -ra f <<<"${line##*) }"  # f[0] is field 3
    printf -v "$1" %d $((f[11] + f[12]))
}
# uptime_cs VAR: VAR = the uptime in hundredths of a second.
uptime_cs() {
    local up _
    read -r up _ < /proc/uptime
    printf -v "$1" %d $((10#${up/./}))
}
# nap SECONDS: the timeout of a read from a FIFO that nobody writes to.
NAP_FD=
nap() {
    if [[ -z $NAP_FD ]]; then
        [[ -p $XPV_RUN_DIR/nap ]] || mkfifo "$XPV_RUN_DIR/nap" || { sleep "$1"; return 0; }
        exec {NAP_FD}<>"$XPV_RUN_DIR/nap"
    fi
    read -r -t "$1" -u "$NAP_FD" _
    return 0
}
wake_ups() { grep -c "waked up from rx interrupt" "$1"; }

# l3fwd-power runs in this shell across the checks that use it (L3_PID, L3_LOG).
L3_LOG=$XPV_RUN_DIR/l3fwd-power.log
L3_PID=
l3fwd_start() {
    local bin=$BIN/l3fwd-power
    [[ -x $bin ]] || { echo "$bin is not in the payload"; return 1; }
    stdbuf -oL -eL "$bin" --no-huge -m 256 --no-pci --file-prefix l3fwd -l 0 \
        --vdev net_xenpv0,vif=1 --log-level=user1:info -- -p 0x1 -P --config="(0,0,0)" \
        --interrupt-only --parse-ptype >"$L3_LOG" 2>&1 &
    L3_PID=$!
    local start=$SECONDS
    until grep -q "entering main interrupt loop on lcore 0" "$L3_LOG"; do
        kill -0 "$L3_PID" 2>/dev/null || { echo "l3fwd-power exited: $(tail -n 3 "$L3_LOG" | tr '\n' ' ')"; return 1; }
        if ((SECONDS - start > 600)); then
            kill -KILL "$L3_PID"
            echo "l3fwd-power not in its loop after 600 s: $(tail -n 3 "$L3_LOG" | tr '\n' ' ')"
            return 1
        fi
        sleep 1
    done
    xpv_log "l3fwd-power in its interrupt loop after $((SECONDS - start))s"
}
l3fwd_stop() {
    local i
    kill -INT "$L3_PID"
    for ((i = 0; i < 30; i++)); do kill -0 "$L3_PID" 2>/dev/null || break; sleep 1; done
    kill -KILL "$L3_PID" 2>/dev/null
    wait "$L3_PID" 2>/dev/null
}

# l3fwd_round_stall HEARTBEAT T0 T1 OUT: prints the longest time, in seconds, that the domU (the
# gaps of HEARTBEAT's 50 ms beats between T0 and T1, less those 50 ms) or dom0 (the sender's
# own, in OUT) stood still during a round; status 0 when that is L3FWD_STALL_S or more.
l3fwd_round_stall() {
    python3 - "$@" "$L3FWD_STALL_S" <<'PY'
import re, sys
t0, t1 = float(sys.argv[2]), float(sys.argv[3])
beats = [float(x) for x in open(sys.argv[1]).read().split() if x.replace('.', '', 1).isdigit()]
around = [b for b in beats if b < t0][-1:] + [b for b in beats if t0 <= b <= t1] + [b for b in beats if b > t1][:1]
domu = max((b - a - 0.05 for a, b in zip(around, around[1:])), default=t1 - t0)
m = re.search(r"dom0's longest stall ([0-9.]+)s", sys.argv[4])
stall = max(domu, float(m.group(1)) if m else 0.0)
print("%.2f" % stall)
sys.exit(0 if stall >= float(sys.argv[5]) else 1)
PY
}

# A round whose frames did not all come back within their second, while the domU or dom0 stood
# still for L3FWD_STALL_S or more (QEMU TCG on a loaded host: the HVM domU's clocksource watchdog
# logs such stalls), says nothing about the data path: it is run again, L3FWD_REPEATS times at
# most in the check. Frames late or lost without such a stall fail the check.
L3FWD_STALL_S=0.8
L3FWD_REPEATS=3

check_l3fwd_power_interrupt() {
    local pid=$L3_PID log=$L3_LOG
    { [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; } || fail "no l3fwd-power"
    local hz r w0 w1 out c0 c1 u0 u1 lats="" lost="" nowake="" idle_ticks=0 idle_cs=0 gap_wakes=0
    local hb=$XPV_RUN_DIR/l3fwd-heartbeat hb_pid t0 t1 rc stall repeats=0 repeated=""
    hz=$(getconf CLK_TCK)
    # Beside l3fwd-power, a shell that wakes every 50 ms (builtins only, no process per beat).
    nap 0
    (while :; do echo "$EPOCHREALTIME"; nap 0.05; done) >"$hb" &
    hb_pid=$!
    for ((r = 1; r <= L3FWD_ROUNDS; r++)); do
        w0=$(wake_ups "$log")
        t0=$EPOCHREALTIME
        out=$(xpv_dom0 l3fwd_round 1 "$VIF1_MAC" "$L3FWD_FRAMES" "$L3FWD_FRAME_GAP_MS")
        rc=$? t1=$EPOCHREALTIME
        w1=$(wake_ups "$log")
        if ((rc != 0)); then
            if stall=$(l3fwd_round_stall "$hb" "$t0" "$t1" "$out") && ((repeats < L3FWD_REPEATS)); then
                repeats=$((repeats + 1))
                repeated+=" round $r: $out (longest stall ${stall}s);"
                xpv_log "l3fwd-power-interrupt: round $r during a stall of ${stall}s ($out): run again"
                r=$((r - 1))
                continue
            fi
            lost+=" round $r: $out (longest stall ${stall}s);"
        fi
        ((w1 > w0)) || nowake+=" $r"
        [[ $out == *"latency_us "* ]] && lats+=",${out##*latency_us }"
        nap 0.1  # l3fwd-power sleeps again after 300 empty polls
        thread_ticks c0 "$pid" "$pid"
        uptime_cs u0
        w0=$(wake_ups "$log")
        nap "$L3FWD_GAP"
        thread_ticks c1 "$pid" "$pid"
        uptime_cs u1
        w1=$(wake_ups "$log")
        idle_ticks=$((idle_ticks + c1 - c0)) idle_cs=$((idle_cs + u1 - u0)) gap_wakes=$((gap_wakes + w1 - w0))
    done
    kill "$hb_pid"
    wait "$hb_pid" 2>/dev/null
    # The PMD's own counters through DPDK's telemetry socket (l3fwd-power prints no xstats).
    local xs events
    xs=$(echo "/ethdev/xstats,0" | timeout 60 dpdk-telemetry.py -f l3fwd 2>&1)
    events=$(grep -oE '"q0_events": [0-9]+' <<<"$xs" | grep -oE '[0-9]+$')
    local cpu med max n
    read -r cpu med max n < <(python3 -c '
import statistics, sys
lat = [int(x) for x in sys.argv[1].split(",") if x]
ticks, cs, hz = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
print("%.1f %d %d %d" % (100.0 * ticks / hz / (cs / 100.0) if cs else -1,
                         statistics.median(lat) if lat else -1, max(lat) if lat else -1, len(lat)))' \
        "$lats" "$idle_ticks" "$idle_cs" "$hz")
    local what="$L3FWD_ROUNDS rounds of $L3FWD_FRAMES UDP frames from dom0 ($L3FWD_FRAME_GAP_MS ms apart), then ${L3FWD_GAP} s idle:"
    what+=" $n of $((L3FWD_ROUNDS * L3FWD_FRAMES)) forwarded back, latency median $med us (max $max us; l3fwd-power's epoll timeout is 10 ms);"
    what+=" $(wake_ups "$log") wake-ups logged ($gap_wakes in the idle gaps);"
    what+=" lcore CPU over $((idle_cs / 100)).$((idle_cs % 100 / 10)) s of idle gaps ${cpu}% of a core; q0_events ${events:-unknown}"
    [[ -z $repeated ]] || what+="; run again after a stall:$repeated"
    [[ -z $lost ]] || fail "$what; lost:$lost"
    [[ -z $nowake ]] || fail "$what; no wake-up logged in rounds$nowake"
    # TX completions waiting must not wake an idle queue (a storm is thousands of wake-ups).
    ((gap_wakes <= L3FWD_ROUNDS)) || fail "$what; woken $gap_wakes times while nothing arrived"
    [[ -n $events ]] || fail "$what; no q0_events from dpdk-telemetry.py: $(tail -n 3 <<<"$xs" | tr '\n' ' ')"
    ((events > 0)) || fail "$what; the PMD took no event from its event channel"
    python3 -c "import sys; sys.exit(0 if 0 <= float(sys.argv[1]) < 50 else 1)" "$cpu" || fail "$what; busy while idle"
    pass "$what"
}

# ---- 9. the seeds' experiment: who consumes TX responses, against Linux netback ---------------
#
# The same TX-heavy load (60-byte frames as fast as the ring takes them) from xpv-pktgen in event
# mode on vif 1, with handler-only reaping (the default, Linux's fixed rule) and with the
# transmit path also reaping while notifications are armed (the experiment, Linux's rule before
# the fix); beside them the kernel netfront's own statistics under af_packet txonly (check
# kernel-vs-xenpv). The default runs until it took SEED_EVENTS events (200 to 270 a second in a
# PV domU under QEMU TCG; one frame in flight makes an event per frame, but only about 40 a
# second there): it must keep spurious events under 0.05% over 50,000 events at least.
#
# One sample decides only when it is clear. Against Linux netback the default's share is 0.026 to
# 0.036% (13 to 18 of 50,000, runs of 2026-12-03), close enough to the 25 that 0.05% allows that
# Poisson noise alone takes one sample in seven over it. A first sample over the target is
# followed by a second of the same size, and the verdict is on the two together: at the measured
# share that fails about one run in a hundred, while a share at or above the target still fails
# (a defect like the seeds' one, 10x the target and more, fails on the first sample as well).

pktgen_tx() {  # pktgen_tx JSON [extra args]: one TX-heavy run in event mode
    local json=$1
    shift
    "$BIN/xpv-pktgen" --platform xen --vif 1 --role tx --mode event --count 0 \
        --size 60 --dst-mac 02:00:00:00:00:00 --quiet --json "$json" "$@" \
        >"$json.log" 2>&1 || fail "xpv-pktgen --role tx $*: $(tail -n 2 "$json.log" | tr '\n' ' ')"
}
check_seed_experiment() {
    local def=$XPV_RUN_DIR/seed-default.json def2=$XPV_RUN_DIR/seed-default-2.json
    local exp=$XPV_RUN_DIR/seed-reap-in-xmit.json
    rm -f "$def2"
    pktgen_tx "$def" --events "$SEED_EVENTS" --seconds "$SEED_EVENTS_SECS"
    # Empty when the first sample is under the target, else what it counted.
    local over
    over=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
if d["spurious_events"] >= 0.0005 * d["events"]: print("%d spurious of %d events" % (d["spurious_events"], d["events"]))' "$def")
    if [[ -n $over ]]; then
        xpv_log "seed: first sample over the target ($over): a second sample of $SEED_EVENTS events, judged together"
        pktgen_tx "$def2" --events "$SEED_EVENTS" --seconds "$SEED_EVENTS_SECS"
    fi
    pktgen_tx "$exp" --seconds "$SEED_SECS" --experiment-reap-tx-in-transmit
    local k=unavailable
    [[ -s $KERNEL_FIGURES ]] && k=$(cat "$KERNEL_FIGURES")
    local table verdict samples=1
    [[ -s $def2 ]] && samples=2
    table=$(python3 - "$def" "$exp" "$k" "$((SEED_EVENTS * samples))" "$def2" <<'PY'
import json, os, sys

def load(path, more=None):
    d = json.load(open(path))
    if more and os.path.exists(more) and os.path.getsize(more):
        # Two samples of the default judged as one: counts add up, rates weigh by time.
        e = json.load(open(more))
        secs = d["seconds"] + e["seconds"]
        d["pps"] = (d["pps"] * d["seconds"] + e["pps"] * e["seconds"]) / max(secs, 1e-9)
        for key in ("events", "spurious_events", "delayed_eois", "tx_reaped_in_xmit", "received", "foreign",
                    "tx_notify_waits", "tx_notify_waits_expired"):
            d[key] = d.get(key, 0) + e.get(key, 0)
        d["seconds"] = secs
        d["samples"] = 2
    return d

rows = []
for name, d in (("net_xenpv library, event mode, handler-only reaping (default)", load(sys.argv[1], sys.argv[5])),
                ("the same, transmit path also reaps (experiment, pre-fix rule)", load(sys.argv[2]))):
    rows.append((name, d["events"], d["spurious_events"], d["delayed_eois"], d["pps"], d["tx_reaped_in_xmit"]))
k = sys.argv[3].split()
if len(k) == 3 and k[1] == "irq":
    rows.append(("kernel netfront (af_packet txonly): events from /proc/interrupts; this kernel has no "
                 "per-device spurious_events or jiffies_eoi_delayed", int(k[2]), None, "n/a", float(k[0]), "-"))
elif len(k) == 4:
    rows.append(("kernel netfront (af_packet txonly), its vif-0 statistics", int(k[1]), int(k[2]),
                 "%s jiffies" % k[3], float(k[0]), "-"))
else:  # kernel-vs-xenpv did not run or measured nothing: "unavailable" or "PPS reason..."
    pps = float(k[0]) if k and k[0].replace(".", "", 1).isdigit() else 0
    rows.append(("kernel netfront (af_packet txonly): " + " ".join(k if not pps else k[1:]), 0, 0, "-", pps, "-"))
print("| sender | events | spurious | spurious share | delayed EOIs | packets/s | TX reaped in xmit |")
print("|---|---|---|---|---|---|---|")
for n, ev, sp, de, pps, rx in rows:
    if sp is None:
        print("| %s | %d | n/a | n/a | %s | %.0f | %s |" % (n, ev, de, pps, rx))
    else:
        print("| %s | %d | %d | %.3f%% | %s | %.0f | %s |" % (n, ev, sp, 100.0 * sp / max(1, ev), de, pps, rx))
d, x = load(sys.argv[1], sys.argv[5]), load(sys.argv[2])
want = int(sys.argv[4])
share = lambda r: 100.0 * r["spurious_events"] / max(1, r["events"])
# Only the experiment consumes in the transmit path, and that makes its events spurious far more
# often; the default keeps under 0.05% spurious over at least the events asked for.
ok = (d["tx_reaped_in_xmit"] == 0 and x["tx_reaped_in_xmit"] > 0 and share(x) > 10 * max(share(d), 0.1)
      and d["events"] >= want and share(d) < 0.05)
# Frames dom0 sent the sender meanwhile (its RX events are counted with the TX ones).
rx = lambda r: r.get("received", 0) + r.get("foreign", 0)
print("VERDICT %s default: %d events (%d wanted%s) in %.0f s, %d spurious (%.4f%%, target < 0.05%%), %.0f pps, "
      "%d frames received meanwhile, %d waits for a racing push's notification (%d ended at the deadline); "
      "reap-in-xmit: %d events, %.3f%% spurious, %d delayed EOIs, %.0f pps" % (
          "ok" if ok else "bad", d["events"], want,
          ", two samples: the first was over the target" if d.get("samples") == 2 else "",
          d["seconds"], d["spurious_events"], share(d), d["pps"],
          rx(d), d.get("tx_notify_waits", 0), d.get("tx_notify_waits_expired", 0),
          x["events"], share(x), x["delayed_eois"], x["pps"]))
PY
)
    while IFS= read -r line; do [[ $line == VERDICT* ]] || xpv_log "seed table: $line"; done <<<"$table"
    printf '%s\n' "$table" | grep -v '^VERDICT' >"$XPV_RUN_DIR/seed-table.md"
    verdict=$(grep '^VERDICT' <<<"$table")
    [[ $verdict == "VERDICT ok"* ]] || fail "${verdict#VERDICT bad }: want none reaped in xmit by the default, the experiment's events spurious far more often, and the default under 0.05% spurious over the events wanted"
    pass "${verdict#VERDICT ok }; table in the log and $XPV_RUN_DIR/seed-table.md"
}
SEED_SECS=${XPV_E2E_SEED_SECONDS:-20}
SEED_EVENTS=${XPV_E2E_SEED_EVENTS:-50000}             # the default's run: events wanted ...
# ... within this time: 50,000 took 184 s at 586e395 (16,707 pps); at 344fb66 the run got
# 13,679 pps and 48,269 events in 240 s (QEMU TCG's speed varies from run to run).
SEED_EVENTS_SECS=${XPV_E2E_SEED_EVENTS_SECONDS:-330}

# Event mode on the vif as the toolstack created it, and (last) on the one re-attached.
check_event_mode_first() { check_event_mode; }

# ---- idle_wait=xen: testpmd's idle lcore blocks its vCPU in Xen (SCHEDOP_poll through privcmd) ---
# 1. While Linux restricts privcmd hypercalls in this domU (its default), net_xenpv refuses
#    idle_wait=xen at probe, naming the cure. 2. xpv-bind --prepare --privcmd-hypercalls lifts
#    the restriction. 3. The library's SCHEDOP_poll tests on Xen (twenty waits each ended by a
#    notification; a wait with nothing pending blocks; a wake-up by work that arrived makes no
#    system call besides the hypercall; a wait ends by the fd, or at its deadline). 4. testpmd icmpecho on vif 1 with
#    idle_sleep=10000,idle_wait=xen: idle, Xen accounts the domU little CPU (spinning, the lcore
#    takes its whole vCPU); 20 pings half a second apart are answered, and most of them found the
#    lcore asleep and ended its sleep (a sleep that waited out its 10 ms would still answer: the
#    count of sleeps a packet ended is what tells); every sleep was spent in Xen; and stop and
#    quit come back. 5. What an idle lcore costs the domU with each wait, for the log: the same
#    testpmd idle with the wait in Xen, then waiting in the guest kernel (ppoll), then no testpmd:
#    Xen's accounting and the guest's timer interrupts a second (idle_cpu_figure). A wait in Xen
#    keeps the guest's periodic tick, which ends it (xen/sched_poll.h); a wait in the kernel lets
#    the idle guest stop it.
check_idle_wait_xen() {
    local log=$XPV_RUN_DIR/idle-wait-refused.log out rc passed skipped
    timeout 300 dpdk-testpmd --no-huge -m 256 --no-pci --no-shconf --file-prefix iwx --lcores=0@0 \
        --vdev "net_xenpv0,vif=1,idle_sleep=10000,idle_wait=xen" -- --total-num-mbufs=8192 -a \
        </dev/null >"$log" 2>&1
    grep -q "net_xenpv0: idle_wait=xen: waiting in Xen: the kernel refuses hypercalls through /dev/xen/privcmd .*unrestricted=1 (xpv-bind --prepare --privcmd-hypercalls)" "$log" ||
        fail "with privcmd restricted, idle_wait=xen was not refused naming the cure: $(grep -m2 net_xenpv "$log" | tr '\n' ' ')"
    local refused
    refused=$(grep -m1 -o "the kernel refuses hypercalls[^:]*" "$log")
    local bound
    bound=$("$XPV_BIND" --prepare --privcmd-hypercalls 2>&1)
    rc=$?
    ((rc == 0)) && grep -q "^privcmd: xen_privcmd reloaded with unrestricted=1" <<<"$bound" ||
        fail "xpv-bind --prepare --privcmd-hypercalls: exit $rc: $bound"
    "$BIN/xpv-tests" --gtest_filter='XenSchedPollTest.*' --gtest_color=no >"$XPV_RUN_DIR/schedpoll-tests.log" 2>&1
    rc=$?
    read -r passed skipped < <(gtest_counts "$XPV_RUN_DIR/schedpoll-tests.log")
    ((rc == 0 && ${passed:-0} == 5 && ${skipped:-0} == 0)) ||
        fail "SCHEDOP_poll tests: exit $rc, passed ${passed:-0}, skipped ${skipped:-0}: $(grep -m1 -A3 Failure "$XPV_RUN_DIR/schedpoll-tests.log" | tr '\n' ' ')"
    # What the tests said of this guest's clock (the deadline of a wait in Xen spares a read).
    local clock
    clock=$(grep -m1 -o "CLOCK_MONOTONIC is read [a-zA-Z ]*" "$XPV_RUN_DIR/schedpoll-tests.log")
    tp_start ",idle_sleep=10000,idle_wait=xen" >"$XPV_RUN_DIR/idle-wait-tp.out" || fail "testpmd with idle_wait=xen did not start: $(tail -n 3 "$TP_LOG" | tr '\n' ' ')"
    tp "set portlist 0" >/dev/null
    tp "set fwd icmpecho" >/dev/null
    tp "start" >/dev/null || fail "start failed"
    sleep 1
    local cpu x0 x1 ping stop_secs quit_secs start
    cpu=$(idle_cpu_figure) || fail "domU CPU: $cpu"
    local idle_xen="$cpu"
    cpu=${cpu%%%*}
    x0=$(tp "show port xstats 0")
    ping=$(xpv_dom0 ping "$ICMPECHO_IP" 20 56)
    rc=$?
    start=$SECONDS
    out=$(tp "stop" 30) || fail "stop: $out"
    stop_secs=$((SECONDS - start))
    # After the stop: a sleep is counted as it starts and as spent in Xen when it ends, so the
    # counts of a lcore caught asleep differ by one.
    x1=$(tp "show port xstats 0")
    start=$SECONDS
    tp_quit
    local tp_rc=$?
    quit_secs=$((SECONDS - start))
    ((tp_rc == 0)) || fail "testpmd exit $tp_rc: $(tail -n 3 "$TP_LOG" | tr '\n' ' ')"
    ((rc == 0)) || fail "pings through testpmd with idle_wait=xen: $ping"
    local sleeps in_xen woken0 woken1
    sleeps=$(xstat "$x1" rx_q0_idle_sleeps) in_xen=$(xstat "$x1" rx_q0_idle_sleeps_in_xen)
    woken0=$(xstat "$x0" rx_q0_idle_sleeps_woken) woken1=$(xstat "$x1" rx_q0_idle_sleeps_woken)
    local woken=$((${woken1:-0} - ${woken0:-0}))
    local figures="idle 3 s: domU ${cpu}% of a CPU; $ping; $woken sleeps ended by a packet, ${in_xen:-none} of ${sleeps:-none} sleeps in Xen"
    ((${sleeps:-0} > 0 && ${in_xen:-0} == ${sleeps:-0})) ||
        fail "every sleep should have been in Xen: $figures; testpmd said: $(grep -a -m3 'idle_wait' "$TP_LOG" | tr '\n' ' ')"
    # A ping that comes while the lcore polls (64 empty polls between sleeps) ends no sleep: most
    # must have ended one. A wait that a packet cannot end would count none.
    ((woken >= 10)) || fail "most of 20 pings should have ended a sleep: $figures"
    ((${cpu%.*} < 50)) || fail "idle, the domU should take little CPU: $figures"
    # 5. The same idle testpmd waiting in the kernel, then the domU without it.
    local idle_kernel idle_none
    tp_start ",idle_sleep=10000" >"$XPV_RUN_DIR/idle-wait-kernel-tp.out" || fail "testpmd with idle_sleep=10000 did not start: $(tail -n 3 "$TP_LOG" | tr '\n' ' ')"
    tp "set portlist 0" >/dev/null
    tp "set fwd icmpecho" >/dev/null
    tp "start" >/dev/null || fail "start (waiting in the kernel) failed"
    sleep 1
    idle_kernel=$(idle_cpu_figure) || fail "domU CPU, waiting in the kernel: $idle_kernel"
    tp "stop" 30 >/dev/null
    tp_quit || fail "testpmd (waiting in the kernel) exit $?: $(tail -n 3 "$TP_LOG" | tr '\n' ' ')"
    idle_none=$(idle_cpu_figure) || fail "domU CPU, no testpmd: $idle_none"
    pass "refused while privcmd is restricted ($refused); xpv-bind --prepare --privcmd-hypercalls: $(grep -m1 "^privcmd: " <<<"$bound" | head -c 90); $passed SCHEDOP_poll tests passed on Xen (${clock:-no word on CLOCK_MONOTONIC}); testpmd icmpecho with idle_sleep=10000,idle_wait=xen: idle 3 s, the domU took ${cpu}% of a CPU (Xen's accounting); $ping; $woken sleeps ended by a packet, $in_xen of $sleeps sleeps in Xen; stop in ${stop_secs} s, quit in ${quit_secs} s; idle 3 s, the domU's CPU (Xen's accounting) and its timer interrupts: testpmd waiting in Xen $idle_xen, waiting in the kernel $idle_kernel, no testpmd $idle_none"
}

# idle_cpu_figure: over 3 s, the CPU Xen accounted to this domU and the guest's timer interrupts
# a second (the /proc/interrupts lines named timer*: its periodic tick and one-shot timers), as
# "N% (T timer interrupts/s)".
idle_cpu_figure() {
    local cpu t0 t1 w0 w1
    t0=$(xpv_irq_sum '^timer[0-9]*$') w0=$EPOCHREALTIME
    cpu=$(xpv_dom0 domu_cpu 3) || { echo "$cpu"; return 1; }
    t1=$(xpv_irq_sum '^timer[0-9]*$') w1=$EPOCHREALTIME
    python3 -c "print('%s%% (%.0f timer interrupts/s)' % ('${cpu#cpu_domu=}', ($t1 - $t0) / ($w1 - $w0)))"
}

# tp_quit: testpmd (started by tp_start) quits, killed after 60 s; returns its exit status.
tp_quit() {
    local i rc
    echo "quit" >&7
    for ((i = 0; i < 60; i++)); do kill -0 "$TP_PID" 2>/dev/null || break; sleep 1; done
    kill -KILL "$TP_PID" 2>/dev/null && xpv_log "testpmd did not quit: killed"
    wait "$TP_PID"
    rc=$?
    exec 7>&-
    return $rc
}

# tp_stop: testpmd (started by tp_start) quits; its exit is a check of its own.
tp_stop() {
    local tp_rc
    tp_quit
    tp_rc=$?
    if ((tp_rc == 0)) && ! grep -qE 'Segmentation|panic|PANIC' "$TP_LOG"; then
        xpv_check testpmd-exit PASS "testpmd quit cleanly after all DPDK checks"
    else
        xpv_check testpmd-exit FAIL "exit $tp_rc: $(tail -n 3 "$TP_LOG" | tr '\n' ' ')"
    fi
}

# l3fwd_checks CHECK...: the checks that need l3fwd-power running (started once, in this shell).
l3fwd_checks() {
    if l3fwd_start >"$XPV_RUN_DIR/l3fwd-start.out"; then
        cat "$XPV_RUN_DIR/l3fwd-start.out"
        xpv_run_checks "$@"
        l3fwd_stop
    else
        xpv_check "$1" FAIL "$(cat "$XPV_RUN_DIR/l3fwd-start.out")"
    fi
}

# PVH and HVM run what depends on the guest type: grants, event channels and xenstore from
# userspace, the handshake, the data path both ways with testpmd (icmpecho, multi-slot; txonly's
# counts), event mode (and, opted in, l3fwd-power's interrupt mode). What does not (the
# xenstore side of a vif that comes back, chaos, the seeds' experiment) runs in the PV domU only.
if [[ $GUEST_TYPE != pv ]]; then
    xpv_run_checks guest-type payload-mounted packages-installed xen-devices xen-platform-tests handshake-fresh-vif \
        kernel-netfront-ping handshake-unbound-vif
    # testpmd runs in this shell, across the checks below (each check runs in a subshell).
    if tp_start; then
        xpv_run_checks testpmd-net-xenpv icmpecho txonly-counts kernel-vs-xenpv
        tp_stop
    else
        xpv_check testpmd-net-xenpv FAIL "testpmd did not start: $(tail -n 3 "$TP_LOG" | tr '\n' ' ')"
    fi
    # net_af_xdp over the kernel netfront, which the PV MMU refuses: in the HVM domU, with
    # the testpmd above gone (both at once exhausted the guest's memory: the OOM killer took
    # net_xenpv's testpmd). XPV_E2E_NONPV_AF_XDP=0 make e2e-xen leaves it out.
    [[ ${XPV_E2E_NONPV_AF_XDP:-1} == 1 && $GUEST_TYPE == hvm ]] && xpv_run_checks kernel-af-xdp
    xpv_run_checks event-mode
    # DPDK's rx interrupts in this guest type (XPV_E2E_NONPV_L3FWD=0 make e2e-xen leaves it out).
    [[ ${XPV_E2E_NONPV_L3FWD:-1} == 1 ]] && l3fwd_checks l3fwd-power-interrupt
    exit 0
fi
xpv_run_checks guest-type payload-mounted packages-installed xen-devices vifs-untouched xen-platform-tests \
    handshake-fresh-vif kernel-netfront-ping handshake-unbound-vif xpv-bind event-mode-first
if tp_start; then
    xpv_run_checks testpmd-net-xenpv xpv-bind-userspace icmpecho txonly-counts rxonly-counts \
        kernel-vs-xenpv backend-detach-attach
    # Opt-in: in this PV domU net_af_xdp's setup fails in the PV MMU or hangs (see the check).
    [[ ${XPV_E2E_AF_XDP:-0} == 1 ]] && xpv_run_checks kernel-af-xdp
    XPV_CHECK_TIMEOUT=2400 xpv_run_checks chaos-detach-attach
    xpv_run_checks no-mbuf-leak
    tp_stop
else
    xpv_check testpmd-net-xenpv FAIL "testpmd did not start: $(tail -n 3 "$TP_LOG" | tr '\n' ' ')"
fi
xpv_run_checks app-sigkill-restart idle-wait-xen tcp-through-domu
# The kernel bridge and the DPDK ways in alternating windows (make bench: XPV_E2E_TCP_WINDOWS).
[[ -n ${XPV_E2E_TCP_WINDOWS:-} ]] && XPV_CHECK_TIMEOUT=3000 xpv_run_checks tcp-windows
# RSS through Linux netback's control ring, 4 queues (XPV_E2E_RSS=0 make e2e-xen leaves it out).
[[ ${XPV_E2E_RSS:-1} == 1 ]] && xpv_run_checks rss-linux-netback
xpv_run_checks seed-experiment event-mode
XPV_CHECK_TIMEOUT=1800 l3fwd_checks l3fwd-power-interrupt l3fwd-power-reattach
