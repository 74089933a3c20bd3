#!/bin/bash
# dom0 side of the e2e checks (run by dom0's init as /xpv/checks/dom0.sh, after the Xen
# daemons and xenbr0 10.99.0.1/24 are up). Creates the domU "domu" (two vifs on xenbr0:
# vif 0 = 00:16:3e:00:00:10, vif 1 = 00:16:3e:00:00:11), then answers its requests (the actions
# below) until it has run domu.sh and powered off.
#
# To add a dom0-side step that a domU check needs: define action_<name> here and call
# `xpv_dom0 <name> ARGS...` from the check in domu.sh. Checks that need no domU can run here
# with xpv_run_checks before xpv_domu_run.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# action_ping IP COUNT [PAYLOAD_BYTES]: COUNT pings from dom0 over xenbr0 (never fragmented);
# all must be answered.
action_ping() {
    local ip=$1 count=${2:-5} size=${3:-56} out summary
    ip neigh del "$ip" dev xenbr0 2>/dev/null
    out=$(ping -n -c "$count" -i 0.5 -W 3 -s "$size" -M do "$ip" 2>&1)
    summary=$(grep 'packets transmitted' <<<"$out")
    echo "${size}-byte payload: ${summary:-$out}"
    [[ $summary == *" $count received"* ]]
}

# action_domu_cpu SECONDS: "cpu_domu=<%>": the CPU time Xen accounted to the domU (xl list's
# Time(s)) over SECONDS, in % of one physical CPU. A vCPU blocked in Xen takes none; one
# spinning in the guest, all of it.
action_domu_cpu() {
    local t0 t1 w0 w1
    [[ $1 =~ ^[0-9]+$ ]] || { echo "domu_cpu: SECONDS '$1' wants a whole number"; return 2; }
    domu_seconds() { xl list | awk -v d="$XPV_DOMID" '$2 == d { print $NF }'; }
    t0=$(domu_seconds) w0=$EPOCHREALTIME
    sleep "$1"
    t1=$(domu_seconds) w1=$EPOCHREALTIME
    [[ -n $t0 && -n $t1 ]] || { echo "domu_cpu: domain $XPV_DOMID not in xl list"; return 1; }
    python3 -c "print('cpu_domu=%.0f' % (100.0 * ($t1 - $t0) / ($w1 - $w0)))"
}

# action_mtu MTU: jumbo frames on xenbr0 and both of the domU's vifs (8000-byte pings unfragmented).
action_mtu() {
    local d
    for d in /sys/class/net/vif"$XPV_DOMID".*; do ip link set "${d##*/}" mtu "$1" || return 1; done
    ip link set xenbr0 mtu "$1" && ip -o link show xenbr0 | grep -o 'mtu [0-9]*'
}

# action_vif_counts DEVID: "rx_packets rx_dropped tx_packets tx_dropped" of vif<domid>.<devid>
# (rx: frames the domU sent; tx: frames dom0 sent to the domU).
action_vif_counts() {
    local s=/sys/class/net/vif$XPV_DOMID.$1/statistics
    [[ -d $s ]] || { echo "no vif$XPV_DOMID.$1"; return 1; }
    echo "$(<"$s"/rx_packets) $(<"$s"/rx_dropped) $(<"$s"/tx_packets) $(<"$s"/tx_dropped)"
}

# action_send DEVID DSTMAC COUNT: send COUNT 60-byte frames into the domU through vif<domid>.<devid>.
action_send() {
    python3 - "vif$XPV_DOMID.$1" "$2" "$3" <<'EOF'
import socket, sys, time
ifc, dst, n = sys.argv[1], bytes.fromhex(sys.argv[2].replace(':', '')), int(sys.argv[3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((ifc, 0))
frame = dst + bytes.fromhex('020000000001') + b'\x88\xb5' + bytes(46)
sent = 0
t0 = time.time()
while sent < n:
    try:
        s.send(frame)
        sent += 1
    except OSError:
        time.sleep(0.001)
print("sent %d frames on %s in %.2fs" % (sent, ifc, time.time() - t0))
EOF
}

# action_netback_queues DEVID N MAC: let Linux netback serve N queues on vif<domid>.<devid>.
# Its xen_netback.max_queues (default: dom0's CPU count, 2 here) is read twice: when the vif is
# created (alloc_netdev_mq sizes the netdev's TX queues by it, and multi-queue-max-queues is
# written from it) and at connect (the frontend's multi-queue-num-queues is checked against it).
# Raising it for a vif that exists already is not enough: netif_set_real_num_tx_queues then fails
# for N over the netdev's size, and xenvif_select_queue's choices past it are capped to queue 0
# (or, with one real queue, never asked: no hash at all). So the vif is detached and attached
# again with the parameter raised. Prints the parameter before, for action_netback_queues_restore.
action_netback_queues() {
    local p=/sys/module/xen_netback/parameters/max_queues old_p
    local key=/local/domain/0/backend/vif/$XPV_DOMID/$1/multi-queue-max-queues
    old_p=$(<"$p") || { echo "no $p"; return 1; }
    echo "$2" >"$p" || { echo "cannot set $p to $2"; return 1; }
    action_detach "$1" >/dev/null 2>&1 || { echo "$old_p" >"$p"; echo "xl network-detach $1 failed"; return 1; }
    action_attach "$1" "$3" >/dev/null 2>&1 || { echo "$old_p" >"$p"; echo "xl network-attach $1 $3 failed"; return 1; }
    [[ $(xenstore-read "$key" 2>/dev/null) == "$2" ]] ||
        { echo "$old_p" >"$p"; echo "the new vif's $key is '$(xenstore-read "$key" 2>&1)', not $2"; return 1; }
    local tx=(/sys/class/net/vif"$XPV_DOMID.$1"/queues/tx-*)
    ((${#tx[@]} >= $2)) || { echo "$old_p" >"$p"; echo "vif$XPV_DOMID.$1 has ${#tx[@]} TX queues, not $2"; return 1; }
    echo "$old_p"
}
# action_netback_queues_restore DEVID PARAM: the parameter as action_netback_queues found it
# (later vifs get it; this one keeps its TX queues, and its key says PARAM again).
action_netback_queues_restore() {
    echo "$2" >/sys/module/xen_netback/parameters/max_queues &&
        xenstore-write "/local/domain/0/backend/vif/$XPV_DOMID/$1/multi-queue-max-queues" "$2"
}

# action_send_flows DEVID DSTMAC FLOWS PER_FLOW: FLOWS IPv4 UDP flows into the domU through
# vif<domid>.<devid>, PER_FLOW 60-byte frames each: source 10.99.1.0 + i (i < FLOWS),
# destination 10.99.0.3, ports 1000 -> 2000; flow after flow, round after round.
action_send_flows() {
    python3 - "vif$XPV_DOMID.$1" "$2" "$3" "$4" <<'PYEOF'
import socket, struct, sys, time
ifc, dst, flows, per = sys.argv[1], bytes.fromhex(sys.argv[2].replace(':', '')), int(sys.argv[3]), int(sys.argv[4])
def csum(b):
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
def frame(i):
    src = struct.unpack('!I', socket.inet_aton('10.99.1.0'))[0] + i
    udp = struct.pack('!HHHH', 1000, 2000, 8 + 18, 0) + bytes(18)
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), i & 0xffff, 0, 64, 17, 0,
                     struct.pack('!I', src), socket.inet_aton('10.99.0.3'))
    ip = ip[:10] + struct.pack('!H', csum(ip)) + ip[12:]
    return dst + bytes.fromhex('020000000001') + b'\x08\x00' + ip + udp
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((ifc, 0))
frames = [frame(i) for i in range(flows)]
sent = 0
t0 = time.time()
for _ in range(per):
    for f in frames:
        while True:
            try:
                s.send(f)
                sent += 1
                break
            except OSError:
                time.sleep(0.001)
print("sent %d frames of %d flows on %s in %.2fs" % (sent, flows, ifc, time.time() - t0))
PYEOF
}

# action_src_macs DEVID: the distinct source MACs of the frames the domU sends on
# vif<domid>.<devid> within 3 s (at most 200 frames), most frequent first.
action_src_macs() {
    python3 - "vif$XPV_DOMID.$1" <<'EOF'
import collections, socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
s.bind((sys.argv[1], 0))
s.settimeout(0.5)
seen = collections.Counter()
t0 = time.time()
while time.time() - t0 < 3 and sum(seen.values()) < 200:
    try:
        data, addr = s.recvfrom(65535)
    except socket.timeout:
        continue
    if addr[2] != socket.PACKET_OUTGOING:  # what the domU sent arrives in dom0 as incoming
        seen[data[6:12].hex(':')] += 1
print(" ".join("%s=%d" % kv for kv in seen.most_common()) or "none")
EOF
}

# action_echo DEVID DSTMAC COUNT: send COUNT numbered 64-byte frames into the domU and count the
# ones that come back (reflected with MACs swapped) until 3 s pass without one (at most 30 s).
# Also prints dom0's longest stall meanwhile: the longest gap between the turns of a thread that
# wakes every 50 ms (a long one means dom0 itself did not run).
action_echo() {
    python3 - "vif$XPV_DOMID.$1" "$2" "$3" <<'EOF'
import select, socket, struct, sys, threading, time
ifc, dst, n = sys.argv[1], bytes.fromhex(sys.argv[2].replace(':', '')), int(sys.argv[3])
stall = 0.0
def heartbeat():
    global stall
    turn = time.monotonic()
    while True:
        time.sleep(0.05)
        now = time.monotonic()
        stall, turn = max(stall, now - turn - 0.05), now
threading.Thread(target=heartbeat, daemon=True).start()
src = bytes.fromhex('020000000001')
# ETH_P_ALL, not 0x88b5: the vif is a bridge port, and the bridge's rx handler takes every
# frame before protocol-specific packet sockets see it; ETH_P_ALL taps come first.
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
# Room for every reply (SO_RCVBUFFORCE: beyond rmem_max, we are root), and not our own
# frames going out (PACKET_IGNORE_OUTGOING).
s.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)
s.setsockopt(263, 23, 1)
s.bind((ifc, 0))
seen = set()
def drain(timeout):
    end = time.time() + timeout
    while True:
        left = end - time.time()
        if left <= 0 or not select.select([s], [], [], left)[0]:
            return
        f = s.recv(2048)
        if f[:6] == src and f[12:14] == b'\x88\xb5':
            seen.add(struct.unpack('!Q', f[14:22])[0])
t0 = time.time()
for i in range(n):
    s.send(dst + src + b'\x88\xb5' + struct.pack('!Q', i) + bytes(42))
    if i % 32 == 31:
        drain(0.002)
# Until 3 s pass without a reply (a slow, emulated guest may lag seconds behind), at most 30 s.
end = time.time() + 30
while len(seen) < n and time.time() < end:
    had = len(seen)
    drain(3)
    if len(seen) == had:
        break
print("echo: sent %d, %d came back in %.2fs; dom0's longest stall %.2fs" % (
    n, len(seen), time.time() - t0, stall))
sys.exit(0 if len(seen) == n else 1)
EOF
}

# action_l3fwd_round DEVID VIFMAC COUNT GAP_MS [first]: COUNT IPv4/UDP frames to 1.1.1.1 into the
# domU through vif<domid>.<devid>, GAP_MS apart, each sent once the one before came back (or 1 s
# passed): l3fwd-power forwards them out of the same port from VIFMAC with TTL 63. Prints
# "forwarded K/COUNT latency_us L1,L2,..." (send to forwarded copy back, per frame). With
# "first": stops at the first frame that comes back (up to COUNT tries), which must come back.
# The round is l3fwd_sender.py's, which stays up across rounds (started here when it is not).
L3FWD_SENDER=$XPV_RUN_DIR/l3fwd-sender
l3fwd_sender_up() {
    local pid
    pid=$(cat "$L3FWD_SENDER/pid" 2>/dev/null) && [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null && return 0
    mkdir -p "$L3FWD_SENDER" && rm -f "$L3FWD_SENDER/req" "$L3FWD_SENDER/resp" &&
        mkfifo "$L3FWD_SENDER/req" "$L3FWD_SENDER/resp" || return 1
    # Not tied to this action's output, which its caller reads to the end.
    python3 "$XPV_CHECKS_DIR/l3fwd_sender.py" "$L3FWD_SENDER/req" "$L3FWD_SENDER/resp" \
        >>"$L3FWD_SENDER/log" 2>&1 </dev/null &
    echo $! >"$L3FWD_SENDER/pid"
}
action_l3fwd_round() {
    local token=$BASHPID.$EPOCHREALTIME limit rc text req resp tok
    l3fwd_sender_up || { echo "cannot start the l3fwd sender in $L3FWD_SENDER"; return 1; }
    # Both FIFOs opened read-write: neither open waits for the sender, and the request stays in
    # its pipe until the sender reads it. An answer of an earlier request that gave up waiting
    # may come first: only this token's counts.
    exec {req}<>"$L3FWD_SENDER/req" {resp}<>"$L3FWD_SENDER/resp"
    printf '%s %s %s %s %s %s\n' "$token" "vif$XPV_DOMID.$1" "$2" "$3" "$4" "${5:-all}" >&"$req"
    # Each frame waits 1 s at most, then its gap; 30 s more for the sender's own start.
    limit=$(($3 * (1000 + $4) / 1000 + 30))
    local end=$((SECONDS + limit)) answered=0
    while ((SECONDS < end)) && read -r -t $((end - SECONDS)) -u "$resp" tok rc text; do
        [[ $tok == "$token" ]] && { answered=1; break; }
    done
    exec {req}>&- {resp}<&-
    if ((!answered)); then
        echo "no answer from the l3fwd sender within ${limit}s: $(tail -n 2 "$L3FWD_SENDER/log" 2>/dev/null | tr '\n' ' ')"
        return 124
    fi
    echo "$text"
    [[ $rc =~ ^[0-9]+$ ]] || rc=1
    return "$rc"
}

# action_detach DEVID / action_attach DEVID MAC: the backend goes away and comes back (what
# `xl network-detach` / `network-attach` do: netback Closing, xenstore nodes removed, new ones).
action_detach() {
    xl network-detach "$XPV_DOMU_NAME" "$1"
}
action_attach() {
    # xl takes the vifspec as one key=value per argument (not comma-joined as in a cfg file).
    local spec=(bridge=xenbr0 "mac=$2" "devid=$1")
    [[ $XPV_DOMU_HOTPLUG == lean ]] && spec+=("script=$XPV_CHECKS_DIR/hotplug/vif-bridge")
    [[ $XPV_DOMU_TYPE == hvm ]] && spec+=(type=vif)  # as in xpv_domu_config: no emulated NIC
    xl network-attach "$XPV_DOMU_NAME" "${spec[@]}" && ip link set "vif$XPV_DOMID.$1" mtu 9000
}

# action_reattach DEVID MAC [traffic|l3fwd]: detach, then attach with MAC; with "traffic", also
# wait (up to 60 s) until the domU sends a frame through the new vif; with "l3fwd", until
# l3fwd-power forwards one back (a frame a second, up to 120). One request per chaos round:
# every request costs seconds in the emulated guests.
action_reattach() {
    action_detach "$1" || return 1
    action_attach "$1" "$2" || return 1
    [[ ${3:-} == l3fwd ]] && { action_l3fwd_round "$1" "$2" 120 0 first; return; }
    [[ ${3:-} == traffic ]] || return 0
    local s=/sys/class/net/vif$XPV_DOMID.$1/statistics/rx_packets i
    for ((i = 0; i < 600; i++)); do
        if [[ -r $s ]] && (($(<"$s") > 0)); then
            echo "traffic $((i / 10)).$((i % 10)) s after the attach"
            return 0
        fi
        sleep 0.1
    done
    echo "no frame from the domU on vif$XPV_DOMID.$1 within 60 s of the attach"
    return 1
}

# ---- TCP through the domU (checks/tcp.sh) ----------------------------------------------------
# Two network namespaces, each on a bridge of its own with one of the PV domU's vifs 2 and 3:
#   nsa (10.77.0.1, veth 02:77:00:00:00:01) - xpvtcpa - vif 2 = domU = vif 3 - xpvtcpb - nsb
# (10.77.0.2, 02:77:00:00:00:02, iperf3's server). Whatever joins vifs 2 and 3 in the domU (a
# Linux bridge over the kernel netfronts, testpmd between two net_xenpv ports) carries the TCP.
# With XPV_E2E_TCP_WINDOWS (check tcp-windows), a second way between the same namespaces through
# vifs 4 and 5, so that two ways across the domU are ready at once and take turns:
#   nsa (10.78.0.1, vethc 02:77:00:00:00:03) - xpvtcpc - vif 4 = domU = vif 5 - xpvtcpd - nsb
# (10.78.0.2, vethd 02:77:00:00:00:04, a second iperf3 server).
TCP_NS_A=10.77.0.1
TCP_NS_B=10.77.0.2
TCP_NS_C=10.78.0.1
TCP_NS_D=10.78.0.2
tcp_net_setup() {
    local x ns mac
    for x in a b c d; do
        [[ $x == [cd] && -z ${XPV_E2E_TCP_WINDOWS:-} ]] && continue
        case $x in a) ns=nsa mac=01 ;; b) ns=nsb mac=02 ;; c) ns=nsa mac=03 ;; d) ns=nsb mac=04 ;; esac
        ip link add "xpvtcp$x" type bridge &&
            ip link set "xpvtcp$x" up &&
            { [[ -e /run/netns/$ns ]] || ip netns add "$ns"; } &&
            ip link add "veth$x" address "02:77:00:00:00:$mac" type veth peer name "veth$x-br" &&
            ip link set "veth$x" netns "$ns" &&
            ip link set "veth$x-br" master "xpvtcp$x" up &&
            ip -n "$ns" link set lo up &&
            ip -n "$ns" link set "veth$x" up || return 1
    done
    ip -n nsa addr add "$TCP_NS_A/24" dev vetha &&
        ip -n nsb addr add "$TCP_NS_B/24" dev vethb &&
        ip netns exec nsb iperf3 -s -D -B "$TCP_NS_B" --logfile "$XPV_RUN_DIR/iperf3-server.log" || return 1
    [[ -n ${XPV_E2E_TCP_WINDOWS:-} ]] || return 0
    ip -n nsa addr add "$TCP_NS_C/24" dev vethc &&
        ip -n nsb addr add "$TCP_NS_D/24" dev vethd &&
        ip netns exec nsb iperf3 -s -D -B "$TCP_NS_D" --logfile "$XPV_RUN_DIR/iperf3-server-d.log"
}

# action_iperf SECONDS [WAY [OMIT]]: iperf3 TCP from nsa to nsb for SECONDS through the domU, by
# vifs 2 and 3 (WAY a, the default) or 4 and 5 (WAY c, tcp-windows), after OMIT seconds not
# counted (iperf3 -O: TCP's slow start, for short windows): "mbit=<received
# Mbit/s> retransmits=<n> bytes=<received> csum_errors=<TcpInCsumErrors of both namespaces>
# cpu_dom0=<%> cpu_domu=<%> pcpus=<n>" (and what the retransmits were, the slowest second's
# Mbit/s): the CPU time Xen accounted to dom0 and to the domU
# (xl list's Time(s)) over the run, in % of one physical CPU, and how many there are: where
# the path's CPU goes, and whether the machine ran out of it (dom0 + domU near pcpus x 100).
# Then "irqs_tx=<n> irqs_rx=<n>": the interrupts netback took on vifs 2 and 3 over the run, for
# requests the domU pushed on the TX rings and on the RX rings (each costs dom0 an upcall).
action_iperf() {
    local secs=$1 way=${2:-a} omit=${3:-0} e0 e1 out c0 c1 w0 w1 pcpus t0 t1 r0 r1 server vifs
    case $way in
        a) server=$TCP_NS_B vifs=(2 3) ;;
        c) server=$TCP_NS_D vifs=(4 5) ;;
        *) echo "iperf: no way '$way' (a: vifs 2 and 3, c: vifs 4 and 5)"; return 2 ;;
    esac
    [[ $secs =~ ^[0-9]+$ && $omit =~ ^[0-9]+$ ]] || { echo "iperf: SECONDS '$secs' and OMIT '$omit' want whole numbers"; return 2; }
    vif_irqs() { action_irqs "vif$XPV_DOMID\\.[${vifs[0]}${vifs[1]}]-q[0-9]+-$1"; }
    xl_cpu_seconds() {  # "<dom0 seconds> <all other domains' seconds>"
        xl list | awk 'NR > 1 { if ($2 == 0) d += $NF; else u += $NF } END { printf "%.1f %.1f\n", d, u }'
    }
    pcpus=$(xl info | awk '$1 == "nr_cpus" { print $3 }')
    # Packets netback dropped on vifs 2 and 3: "to the guest" is the vifs' tx_dropped (the
    # domU's RX queue full or stalled, xenvif_start_xmit), "from the guest" their rx_dropped.
    vif_drops() {
        local d n=0 v
        for d in "${vifs[@]}"; do
            v=$(cat "/sys/class/net/vif$XPV_DOMID.$d/statistics/$1" 2>/dev/null)
            n=$((n + ${v:-0}))
        done
        echo "$n"
    }
    csum_errors() {
        local x n=0 v
        for x in a b; do
            v=$(ip netns exec "ns$x" nstat -az TcpInCsumErrors 2>/dev/null | awk '$1 == "TcpInCsumErrors" { print $2 }')
            n=$((n + ${v:-0}))
        done
        echo "$n"
    }
    # What TCP's retransmits were (nsa, the sender): tail-loss probes (sent when no ACK came in
    # time, whether or not anything was lost), and DSACKs received (the receiver had the
    # segment already: a spurious retransmit); at nsb, segments that came out of order; in dom0,
    # packets the CPUs' input backlogs dropped (/proc/net/softnet_stat, second column). Last, at
    # nsa, retransmission timeouts (TcpExtTCPTimeouts): a loss no fast retransmit repaired,
    # which stops the stream for 200 ms or more.
    tcp_why() {
        local v rto
        v=$(ip netns exec nsa nstat -az TcpExtTCPLossProbes TcpExtTCPDSACKRecv 2>/dev/null |
            awk '$1 == "TcpExtTCPLossProbes" { p = $2 } $1 == "TcpExtTCPDSACKRecv" { d = $2 } END { print p + 0, d + 0 }')
        rto=$(ip netns exec nsa nstat -az TcpExtTCPTimeouts 2>/dev/null | awk '$1 == "TcpExtTCPTimeouts" { print $2 + 0 }')
        local o n=0 x d
        o=$(ip netns exec nsb nstat -az TcpExtTCPOFOQueue 2>/dev/null | awk '$1 == "TcpExtTCPOFOQueue" { print $2 + 0 }')
        while read -r x d x; do n=$((n + 16#$d)); done </proc/net/softnet_stat  # hex
        echo "$v ${o:-0} $n ${rto:-0}"
    }
    local why0 why1
    why0=$(tcp_why)
    e0=$(csum_errors)
    ip -n nsa neigh flush all 2>/dev/null
    local d0 d1 f0 f1
    d0=$(vif_drops tx_dropped) f0=$(vif_drops rx_dropped)
    t0=$(vif_irqs tx) r0=$(vif_irqs rx) c0=$(xl_cpu_seconds) w0=$EPOCHREALTIME
    out=$(timeout $((secs + omit + 60)) ip netns exec nsa iperf3 -c "$server" -t "$secs" -O "$omit" -J --connect-timeout 20000 2>&1)
    c1=$(xl_cpu_seconds) w1=$EPOCHREALTIME t1=$(vif_irqs tx) r1=$(vif_irqs rx)
    d1=$(vif_drops tx_dropped) f1=$(vif_drops rx_dropped)
    e1=$(csum_errors)
    why1=$(tcp_why)
    python3 -c '
import json, sys
try:
    d = json.loads(sys.argv[1])
    if "error" in d: raise ValueError(d["error"])
    r, s = d["end"]["sum_received"], d["end"]["sum_sent"]
    try:  # loss probes, DSACKs received, out-of-order segments, backlog drops, timeouts over the run
        w0, w1 = [int(x) for x in sys.argv[11].split()], [int(x) for x in sys.argv[12].split()]
        assert len(w0) == len(w1) == 5
        why = " loss_probes=%d dsacks=%d ofo=%d backlog_drops=%d rtos=%d" % tuple(b - a for a, b in zip(w0, w1))
    except Exception:
        why = ""
    # The slowest of the counted seconds (iperf3 -O leaves the omitted ones out): a stall
    # shows there, where the mean of the run hides it.
    secs = [i["sum"]["bits_per_second"] / 1e6 for i in d.get("intervals", []) if not i["sum"].get("omitted")]
    why += " slowest_second=%.1f" % min(secs) if secs else ""
    try:  # the figures of the run stand without the CPU shares
        c0, c1, wall = [float(x) for x in sys.argv[3].split()], [float(x) for x in sys.argv[4].split()], float(sys.argv[5])
        cpu = ["%.0f" % (100.0 * (b - a) / max(wall, 0.001)) for a, b in zip(c0, c1)]
        assert len(cpu) == 2
    except Exception:
        cpu = ["?", "?"]
    print("mbit=%.1f retransmits=%d bytes=%d csum_errors=%s cpu_dom0=%s cpu_domu=%s pcpus=%s irqs_tx=%s irqs_rx=%s drops_to_guest=%s drops_from_guest=%s%s" % (r["bits_per_second"] / 1e6, s.get("retransmits", -1), r["bytes"], sys.argv[2], cpu[0], cpu[1], sys.argv[6] or "?", sys.argv[7], sys.argv[8], sys.argv[9], sys.argv[10], why))
except Exception as e:
    print("iperf3 failed: %s: %s" % (e, sys.argv[1][-300:].replace("\n", " ")))
    sys.exit(1)' "$out" "$((e1 - e0))" "$c0" "$c1" "$(python3 -c "print($w1 - $w0)")" "$pcpus" "$((t1 - t0))" "$((r1 - r0))" "$((d1 - d0))" "$((f1 - f0))" "$why0" "$why1"
}

# action_irqs REGEX: the sum of dom0's /proc/interrupts counts of the lines named by REGEX.
action_irqs() { xpv_irq_sum "$1"; }

# The PV domU runs every check; then a PVH domU (and, opted in, an HVM one) runs the
# guest-type-dependent ones (see the end of domu.sh). One domU at a time, on the same vifs and
# MACs. scripts/e2e-xen.sh writes XPV_E2E_GUEST_TYPES from its environment in here.
# domu_hvm_like TYPE [again]: the life of the PVH or HVM domU (slower to boot under TCG).
domu_hvm_like() {
    XPV_DOMU_TYPE=$1 XPV_DOMU_BOOT_TIMEOUT=600 XPV_DOMU_RUN_TIMEOUT=1500 \
        XPV_DOMU_XL_EXTRA=$XPV_E2E_NONPV_XL xpv_domu_run "domu-$1" ${2:-}
}
XPV_E2E_GUEST_TYPES="pv pvh hvm"
XPV_E2E_NONPV_XL=""  # more xl config lines for them (scripts/e2e-xen.sh, from its environment)
for type in $XPV_E2E_GUEST_TYPES; do
    case $type in
        pv)
            # vifs 2 and 3 for TCP through the domU (checks/tcp.sh), in the PV domU only; 4 and 5
            # as well for tcp-windows.
            if tcp_net_setup; then
                XPV_DOMU_VIFS+=("bridge=xpvtcpa,mac=00:16:3e:00:00:12" "bridge=xpvtcpb,mac=00:16:3e:00:00:13")
                [[ -n ${XPV_E2E_TCP_WINDOWS:-} ]] &&
                    XPV_DOMU_VIFS+=("bridge=xpvtcpc,mac=00:16:3e:00:00:14" "bridge=xpvtcpd,mac=00:16:3e:00:00:15")
            else
                xpv_check tcp-net-setup FAIL "dom0's namespaces and bridges for TCP through the domU"
            fi
            XPV_DOMU_TYPE=pv xpv_domu_run domu
            XPV_DOMU_VIFS=("${XPV_DOMU_VIFS[@]:0:2}") ;;
        pvh | hvm)
            # Under QEMU's software SVM a PVH vCPU sharing a CPU with dom0 crashed (Xen: "Triple
            # fault") in about one life of three; kept apart (XPV_DOMU_SVM_PIN in lib.sh), none
            # did. Should one crash still: one fresh boot, and the log says why.
            domu_hvm_like "$type" again
            if (($? == 3)); then
                echo "XPV: domU domu-$type booted again after a crash"
                domu_hvm_like "$type"
            fi ;;
        *) xpv_check "domu-$type-boot" FAIL "no guest type '$type' (pv, pvh, hvm)" ;;
    esac
done
# Each domU's outcome is in its own checks (NAME-boot, NAME-end and what it ran): dom0.sh itself
# ran to its end.
exit 0
