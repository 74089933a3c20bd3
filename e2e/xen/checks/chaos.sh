#!/bin/bash
# Chaos and recovery against Linux netback, sourced by domu.sh (its TP_*, L3_*, VIF1_MAC, tp,
# xstat and the dom0 actions detach/attach are used here):
#  - many `xl network-detach`/`network-attach` rounds of vif 1 under testpmd txonly, and while
#    l3fwd-power sleeps in interrupt mode: every round reconnects and traffic resumes; at the end
#    the grant pages and event channels the application holds are back where they started;
#  - the DPDK application killed with SIGKILL mid-traffic and started again (the vif connects
#    again), then the kernel's netfront takes the vif and carries traffic.
# What the domU's kernel says the application holds (independent of our own counters):
#  - grants: what it shared through gntalloc = the size of its /dev/xen/gntalloc mappings
#    (xengntshr_share_pages maps every page it grants);
#  - event channels: Linux's evtchn driver names the interrupt of every port bound through
#    /dev/xen/evtchn "evtchn:<comm of the opener>" in /proc/interrupts.

CHAOS_ROUNDS=${XPV_E2E_CHAOS_ROUNDS:-50}            # under testpmd txonly
CHAOS_L3FWD_ROUNDS=${XPV_E2E_CHAOS_L3FWD_ROUNDS:-20} # while l3fwd-power sleeps

# grant_pages PID: pages PID shares through gntalloc (builtins only: processes are expensive).
grant_pages() {
    local range _ path pages=0
    while read -r range _ _ _ _ path; do
        [[ $path == /dev/xen/gntalloc ]] || continue
        pages=$((pages + (16#${range#*-} - 16#${range%-*}) / 4096))
    done <"/proc/$1/maps"
    echo "$pages"
}

# user_evtchns: event channels bound through /dev/xen/evtchn in this domU.
user_evtchns() {
    local n=0 line
    while read -r line; do [[ $line == *" evtchn:"* ]] && n=$((n + 1)); done </proc/interrupts
    echo "$n"
}

# held PID: "G grant pages, E event channels" (what the checks compare).
held() { echo "$(grant_pages "$1") grant pages, $(user_evtchns) event channels"; }

# New devices on the xen bus stay driverless while 0 is written here: xen-netfront is loaded
# (kernel-netfront-ping) and would bind the vif the toolstack adds back before net_xenpv
# reconnects, as on a guest where the kernel netfront must keep its hands off a vif.
XEN_AUTOPROBE=/sys/bus/xen/drivers_autoprobe
autoprobe() { [[ -w $XEN_AUTOPROBE ]] && echo "$1" >"$XEN_AUTOPROBE"; }

# vif1_reattach MAC [traffic|l3fwd]: xl network-detach vif 1, then network-attach it with MAC
# (driverless); with "traffic", dom0 also waits until the domU sends through the new vif; with
# "l3fwd", until l3fwd-power forwards a frame back.
vif1_reattach() {
    local out rc
    autoprobe 0
    # shellcheck disable=SC2086  # the optional word
    out=$(xpv_dom0 reattach 1 "$1" ${2:-})
    rc=$?
    autoprobe 1
    ((rc == 0)) || { echo "xl network-detach/attach mac=$1: $out"; return 1; }
    [[ ! -e /sys/bus/xen/drivers/vif/vif-1 ]] || { echo "xen-netfront bound the re-attached vif 1"; return 1; }
    echo "$out"
}

# dom0_rx DEVID: frames dom0 has received from the domU on vif<domid>.DEVID (0 when absent).
dom0_rx() {
    local c rx=0 _
    c=$(xpv_dom0 vif_counts "$1") && read -r rx _ _ _ <<<"$c"
    echo "$rx"
}

# ---- detach/attach rounds under testpmd txonly ----------------------------------------------

check_chaos_detach_attach() {
    [[ -n $TP_PID ]] || fail "no testpmd"
    tp "set portlist 0" >/dev/null
    tp "set fwd txonly" >/dev/null
    tp "start" >/dev/null || fail "start failed"
    sleep 2
    local before after r lsc0 lsc1 i t0 out slowest=0 took lscs=0 t_all
    before=$(held "$TP_PID")
    [[ $before != *" 0 event channels" && $before != "0 grant pages"* ]] ||
        { tp "stop" >/dev/null; fail "cannot see what testpmd holds ($before): no gntalloc mapping or no evtchn: line in /proc/interrupts"; }
    t_all=$SECONDS
    for ((r = 1; r <= CHAOS_ROUNDS; r++)); do
        t0=$SECONDS
        lsc0=$(grep -c "link state change event" "$TP_LOG")
        # dom0 returns once a txonly frame went through the new vif: reconnected, sending.
        out=$(vif1_reattach "$VIF1_MAC" traffic) || { tp "stop" >/dev/null; fail "round $r: $out"; }
        for ((i = 0; i < 10; i++)); do
            lsc1=$(grep -c "link state change event" "$TP_LOG")
            ((lsc1 - lsc0 >= 2)) && break
            sleep 1
        done
        ((lsc1 - lsc0 >= 2)) || { tp "stop" >/dev/null; fail "round $r: traffic again ($out) but $((lsc1 - lsc0)) link state change events (want down and up)"; }
        lscs=$((lscs + lsc1 - lsc0))
        took=$((SECONDS - t0))
        ((took > slowest)) && slowest=$took
    done
    after=$(held "$TP_PID")
    out=$(tp "stop")
    kill -0 "$TP_PID" || fail "testpmd died"
    [[ $after == "$before" ]] || fail "after $CHAOS_ROUNDS rounds testpmd holds $after; before them $before"
    pass "$CHAOS_ROUNDS rounds of xl network-detach/attach under txonly: each reconnected ($lscs LSC events) and carried traffic again (slowest round ${slowest}s, $(((SECONDS - t_all) / CHAOS_ROUNDS))s on average); testpmd holds $after, as before the rounds; q0 backend errors $(xstat "$(tp "show port xstats 0")" q0_backend_errors)"
}

# ---- detach/attach rounds while l3fwd-power sleeps in interrupt mode ------------------------

# l3fwd_forwards N: N frames through l3fwd-power (action_l3fwd_round), every one back.
l3fwd_forwards() { xpv_dom0 l3fwd_round 1 "$VIF1_MAC" "$1" 50; }

check_l3fwd_power_reattach() {
    { [[ -n $L3_PID ]] && kill -0 "$L3_PID" 2>/dev/null; } || fail "no l3fwd-power"
    local before after r out w0 w1 nowake="" t0 slowest=0 took t_all
    sleep 0.5
    before=$(held "$L3_PID")
    [[ $before != *" 0 event channels" && $before != "0 grant pages"* ]] ||
        fail "cannot see what l3fwd-power holds ($before)"
    t_all=$SECONDS
    for ((r = 1; r <= CHAOS_L3FWD_ROUNDS; r++)); do
        t0=$SECONDS
        # Reconnected when a frame comes back (l3fwd-power logs no link changes): dom0 waits.
        out=$(vif1_reattach "$VIF1_MAC" l3fwd) || fail "round $r: $out"
        [[ $out == *"forwarded 1/1"* ]] || fail "round $r: nothing forwarded after the attach: $out"
        # Asleep again (300 empty polls), then a round must wake it and come back whole.
        nap 0.5
        w0=$(wake_ups "$L3_LOG")
        out=$(l3fwd_forwards "$L3FWD_FRAMES") || fail "round $r: $out"
        w1=$(wake_ups "$L3_LOG")
        ((w1 > w0)) || nowake+=" $r"
        took=$((SECONDS - t0))
        ((took > slowest)) && slowest=$took
    done
    sleep 0.5
    after=$(held "$L3_PID")
    [[ -z $nowake ]] || fail "no wake-up logged in rounds$nowake after the re-attach"
    [[ $after == "$before" ]] || fail "after $CHAOS_L3FWD_ROUNDS rounds l3fwd-power holds $after; before them $before"
    pass "$CHAOS_L3FWD_ROUNDS rounds of xl network-detach/attach while l3fwd-power slept: after each, $L3FWD_FRAMES of $L3FWD_FRAMES frames woke it and came back (slowest round ${slowest}s, $(((SECONDS - t_all) / CHAOS_L3FWD_ROUNDS))s on average); it holds $after, as before the rounds"
}

# ---- the application killed with SIGKILL mid-traffic, then started again ---------------------

# crash_tp_start LOG: a non-interactive testpmd sending txonly on vif 1 (prints its pid).
crash_tp_start() {
    stdbuf -oL -eL dpdk-testpmd --no-huge -m 256 --no-pci --no-shconf --file-prefix crash --lcores=0@0,1@0 \
        --vdev "net_xenpv0,vif=1" -- --forward-mode=txonly --auto-start \
        --stats-period 5 --total-num-mbufs=2048 >"$1" 2>&1 </dev/null &
    echo $!
}

# sending_again PID SECONDS: dom0 sees frames from the domU on vif 1 rise within SECONDS.
sending_again() {
    local rx0 rx t0=$SECONDS
    rx0=$(dom0_rx 1)
    while ((SECONDS - t0 < $2)); do
        kill -0 "$1" 2>/dev/null || return 1
        sleep 2
        rx=$(dom0_rx 1)
        ((rx > rx0)) && return 0
    done
    return 1
}

check_app_sigkill_restart() {
    local log1=$XPV_RUN_DIR/crash-1.log log2=$XPV_RUN_DIR/crash-2.log pid be left i ifc c0 c1 out bound refused unbound
    be=$(xenstore-read device/vif/1/backend) || fail "no backend for vif 1"
    pid=$(crash_tp_start "$log1")
    sending_again "$pid" 300 || { kill -KILL "$pid" 2>/dev/null; fail "the first testpmd never sent: $(tail -n 3 "$log1" | tr '\n' ' ')"; }
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null
    left="frontend state $(xenstore-read device/vif/1/state), backend state $(xenstore-read "$be/state")"
    pid=$(crash_tp_start "$log2")
    sending_again "$pid" 300 || { kill -KILL "$pid" 2>/dev/null; fail "after SIGKILL ($left) the restarted testpmd did not send: $(tail -n 3 "$log2" | tr '\n' ' ')"; }
    kill -INT "$pid"
    for ((i = 0; i < 60; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -0 "$pid" 2>/dev/null && { kill -KILL "$pid"; fail "the restarted testpmd did not exit on SIGINT"; }
    wait "$pid" 2>/dev/null
    # The kernel netfront takes the vif back: xpv-bind (it sets the Closed vif back to
    # Initialising, as Linux's xenbus probes a fresh device, binds it, waits for the netdev).
    [[ $(xenstore-read device/vif/1/state) == 6 ]] || fail "after testpmd quit, vif 1 frontend state $(xenstore-read device/vif/1/state) (want Closed)"
    out=$("$XPV_BIND" --bind vif-1 2>&1) || fail "xpv-bind --bind vif-1 after the restarted testpmd quit: exit $?: $out"
    ifc=$(xpv_vif_netdev 1) || fail "xpv-bind said '$out', but vif 1 has no netdev"
    bound=$("$XPV_BIND" --status 2>&1)
    sed -n "/xen-netfront\$/,/^\$/p" <<<"$bound" | grep -q "^vif-1 mac=$VIF1_MAC if=$ifc state=Connected(4) " ||
        fail "after --bind vif-1, --status does not list it under xen-netfront as $ifc: $bound"
    xpv_xs_wait "$be/state" 4 60 || fail "xen-netfront on vif 1: backend state $(xenstore-read "$be/state")"
    { ip addr add "$ICMPECHO_IP/24" dev "$ifc" && ip link set "$ifc" up; } || fail "cannot configure $ifc"
    c0=$(xpv_dom0 vif_counts 1)
    out=$(ping -n -c 5 -i 0.5 -W 3 -I "$ifc" 10.99.0.1 2>&1)
    local prc=$?
    c1=$(xpv_dom0 vif_counts 1)
    # Hand vif 1 back for the checks after this one (they connect net_xenpv to it again):
    # xpv-bind refuses while it is up and routed, unbinds it once it is not.
    refused=$("$XPV_BIND" --unbind vif-1 2>&1)
    local refused_rc=$?
    ip addr del "$ICMPECHO_IP/24" dev "$ifc"
    ip link set "$ifc" down
    unbound=$("$XPV_BIND" --unbind vif-1 2>&1) || fail "xpv-bind --unbind vif-1 ($ifc down): exit $?: $unbound"
    xpv_xs_wait device/vif/1/state 6 30 || fail "vif 1 frontend state $(xenstore-read device/vif/1/state) after unbinding xen-netfront"
    ((refused_rc == 1)) && grep -q "^Error: vif-1 is $ifc, which is up, routed" <<<"$refused" ||
        fail "xpv-bind --unbind vif-1 while $ifc had $ICMPECHO_IP: exit $refused_rc, '$refused'"
    local rx0 tx0 rx1 tx1 _
    read -r rx0 _ tx0 _ <<<"$c0"
    read -r rx1 _ tx1 _ <<<"$c1"
    ((prc == 0 && rx1 - rx0 >= 5 && tx1 - tx0 >= 5)) ||
        fail "xen-netfront on vif 1 ($ifc): $(grep 'packets transmitted' <<<"$out" || echo "$out"); dom0 vif counters (rx drop tx drop) $c0 -> $c1"
    pass "testpmd txonly on vif 1 killed with SIGKILL mid-traffic (left: $left), started again: sent again, quit on SIGINT; then xpv-bind gave vif 1 to xen-netfront ($ifc): $(grep 'packets transmitted' <<<"$out"), dom0 counted $((rx1 - rx0)) frames in and $((tx1 - tx0)) out on vif 1; xpv-bind --unbind refused while routed, done once down"
}
