#!/bin/bash
# net_xenpv's offloads as a DPDK application uses them: testpmd forwarding a
# TCP stream between two net_xenpv ports (vif 0 and vif 1 of one domain on
# xpv-netback's bridge), from one xpv-pktgen guest to another that recomputes
# every checksum and checks every byte (offload.sh's offload_run and
# offload_judge). testpmd's csum engine sets the offload flags (`csum set tcp
# hw`, `tso set`), its counters come from `show port xstats`.
# Sourced by tests/integration/run.sh after conformance.sh (ts_start, ts_cmd,
# ts_quit) and offload.sh.

# pmd_via start NAME SINK_MAC | stop NAME: testpmd between the sender and the
# sink (OFF_VIA for offload_run). PV_FWD: the forwarding engine; PV_CMDS: the
# commands run with the ports stopped. Port 1 sends to the sink's mac.
pmd_via() {
  local name=$2
  if [[ $1 == start ]]; then
    ts_start "$name-tp" "net_xenpv0,backend=sim:$RUN/$name.sock,vif=0 net_xenpv1,backend=sim:$RUN/$name.sock,vif=1" \
      --forward-mode="$PV_FWD" --eth-peer="1,$3" || return 1
    PV_ERRORS=""
    # Promiscuous off: frames the bridge floods to port 1 (port 0's mac is
    # never learned: it sends nothing) are not forwarded back.
    ts_cmd "set promisc all off"
    ts_cmd "port stop all"
    local c
    for c in "${PV_CMDS[@]}"; do
      ts_cmd "$c"
      grep -qiE "error|fail|invalid|not supported|bad arguments" <<<"$TS_OUT" &&
        PV_ERRORS+=" [$c: $(tr '\n' ' ' <<<"$TS_OUT" | cut -c1-160)]"
    done
    ts_cmd "port start all"
    has "Fail" && PV_ERRORS+=" [port start: $(tr '\n' ' ' <<<"$TS_OUT" | cut -c1-160)]"
    # Port 0's mac, where the sender sends (after the restart: a port that
    # reconnects for another offload set is another simulated domain).
    ts_cmd "show port info 0"
    OFF_DST=$(sed -nE 's/^MAC address: ([0-9A-Fa-f:]{17}).*/\1/p' <<<"$TS_OUT" | head -n1)
    # Retry: a full TX ring makes the engine wait (up to 100 ms) instead of
    # dropping.
    ts_cmd "set fwd $PV_FWD retry"
    ts_cmd "set burst tx delay 200 retry 500"
    # tx_first: a burst out of each port first, so that the bridge learns
    # both ports' macs (port 0 would otherwise never send, and every frame
    # for it would be flooded to port 1 and the sink too).
    ts_cmd "start tx_first"
    [[ -n $OFF_DST ]]
  else
    ts_cmd "stop"
    # Both ports' xstats, as p0_NAME / p1_NAME, with what went wrong in setup.
    local p out=""
    for p in 0 1; do
      ts_cmd "show port xstats $p"
      out+=$(sed -nE "s/^ *([a-z0-9_]+): +([0-9]+)\$/\"p${p}_\\1\": \\2,/p" <<<"$TS_OUT")
    done
    printf '{%s "setup_errors": "%s"}\n' "$out" "${PV_ERRORS//\"/\'}" >"$RUN/$name-via.json"
    ts_quit
  fi
}

# offload_case NAME "SINK OPTIONS" "TX OPTIONS" WHAT CONDITION...: offload_run over
# two vifs through OFF_VIA, then offload_judge; a run that did not start fails NAME.
# OFF_NB_OPTS: more xpv-netback options.
offload_case() {
  local name=$1 sink_opts=$2 tx_opts=$3
  shift 3
  # shellcheck disable=SC2086
  if offload_run "$name" "$sink_opts" "$tx_opts" --vifs 2 ${OFF_NB_OPTS:-}; then
    offload_judge "$name" "$@"
  else
    fail "$name" "did not start (logs $RUN/$name*)"
  fi
}

check_pmd_offloads() {
  local n=300 OFF_VIA=pmd_via PV_FWD PV_CMDS
  # The application's side of every case: no setup error, nothing refused.
  local clean=("x['setup_errors'] == ''" "x['p1_tx_q0_refused_offload'] == 0"
    "x['p1_tx_q0_refused_segs'] == 0" "x['p1_tx_q0_refused_mtu'] == 0")

  # -- RX: partial checksums (the sender's csum_blank, kept by netback for a
  # port with checksum offload) completed by the RX burst when the
  # application did not enable the RX checksum offload; mac forwarding
  # leaves them as they are, the sink finds full checksums
  PV_FWD=mac PV_CMDS=()
  offload_case pmd-off-rx-sw "--proto tcp" "--proto tcp --csum-offload --size 60-1514 --count 10000 --rate 5000" \
    "10000 segments with partial checksums through testpmd mac forwarding: completed by net_xenpv's RX burst (rx_q0_csum_software 10000), full and right at the sink" \
    "${OFF_INTACT[@]}" "${clean[@]}" "x['p0_rx_q0_csum_software'] == 10000" \
    "s['rx_csum_blank'] == 0" "n['rx_csum_completed'] == 0"

  # -- TX checksum offload: testpmd's csum engine with `csum set tcp hw` (the
  # pseudo-header sum in the field, RTE_MBUF_F_TX_TCP_CKSUM): sent as
  # csum_blank, completed by netback for a sink without checksum offload;
  # IPv4 and IPv6 (netback's feature-ipv6-csum-offload)
  local proto min
  for proto in tcp tcp6; do
    min=60
    [[ $proto == tcp6 ]] && min=75
    PV_FWD=csum PV_CMDS=("csum set tcp hw 1" "csum set ip sw 1")
    offload_case pmd-off-csum-$proto "--proto $proto --no-rx-csum" "--proto $proto --size $min-1514 --count 10000 --rate 5000" \
      "10000 $proto segments through testpmd csum (tcp hw): sent with partial checksums (tx_q0_csum_offloaded 10000), completed by netback, right at the sink" \
      "${OFF_INTACT[@]}" "${clean[@]}" "x['p1_tx_q0_csum_offloaded'] == 10000" \
      "x['p1_tx_q0_csum_software'] == 0" "n['rx_csum_completed'] == 10000"
  done

  # -- LRO in, TSO out: 64 KiB TSO packets from the sender reach port 0 whole
  # (RTE_ETH_RX_OFFLOAD_TCP_LRO: RTE_MBUF_F_RX_LRO, multi-segment mbufs),
  # testpmd's csum engine sends them on with `tso set` (RTE_MBUF_F_TX_TCP_SEG),
  # netback cuts them for a sink without GSO, or hands them whole to one with it
  local sinkopt what
  for sinkopt in "" "--lro"; do
    PV_FWD=csum
    PV_CMDS=("port config 0 rx_offload tcp_lro on" "port config 0 rx_offload tcp_cksum on"
      "port config 1 tx_offload multi_segs on" "csum set tcp hw 1" "csum set ip sw 1"
      "tso set 1460 1")
    what="segments of at most 1514 bytes at the sink"
    [[ -n $sinkopt ]] && what="whole at a sink with LRO"
    local more=("n['rx_gso_segmented'] == $n" "s['rx_lro_packets'] == 0")
    # (netback counts GSO packets handed to port 0 and to the sink)
    [[ -n $sinkopt ]] && more=("n['rx_gso_packets'] == 2 * $n" "s['rx_lro_packets'] == $n")
    offload_case pmd-off-tso${sinkopt/--/-} "--proto tcp $sinkopt" "--proto tcp --tso 1460 --size 65535 --count $n --rate 200" \
      "$n TSO packets of 65535 bytes: LRO packets at port 0 (rx_q0_lro_packets $n), TSO out of port 1 (tx_q0_tso_packets $n), $what, every checksum and byte right" \
      "${OFF_INTACT[@]}" "${clean[@]}" "x['p0_rx_q0_lro_packets'] == $n" \
      "x['p1_tx_q0_tso_packets'] == $n" "${more[@]}"
  done

  # -- The same two offload paths through xpv-fwd (examples/xpv-fwd.cc), which sleeps on RX
  # interrupts between packets: the sender is paced (5 ms apart), so most packets find it
  # asleep. Its wait ends by an event or after 200 ms (not counted as a wake-up): over the
  # stream's 1.5 s, a quarter of n wake-ups can only be events. Not one each: packets that
  # arrive while the machine does not run xpv-fwd are taken by one wake-up (121 to 144 for
  # 300 packets beside four busy loops on the two CPUs).
  if [[ -x $BUILD/examples/xpv-fwd ]]; then
    OFF_VIA=fwd_via
    offload_case pmd-fwd-tso "--proto tcp" "--proto tcp --tso 1460 --size 65535 --count $n --rate 200" \
      "$n TSO packets of 65535 bytes through xpv-fwd asleep between them: LRO in at port 0 ($n), TSO out of port 1 ($n), cut by netback for the sink, every checksum and byte right; woken by RX interrupts at least $((n / 4)) times" \
      "${OFF_INTACT[@]}" "x['p0_lro'] == $n" "x['p1_tso'] == $n" "x['p1_dropped'] == 0" \
      "x['wakeups'] >= $n // 4" "n['rx_gso_segmented'] == $n"
    # A full TX ring: the sender is not paced and netback holds every TX response for 2 ms
    # (fault late-tx-rsp), so port 1's 256 slots (18 per 64 KiB TSO packet) fill and free in
    # steps. xpv-fwd holds what did not fit and takes nothing from port 0 until it is sent,
    # as a kernel qdisc holds a stopped queue's packets: every packet it took goes out (the
    # bridge drops what port 0's queue cannot hold meanwhile, as a Linux bridge drops at a
    # stopped vif's qdisc), and what arrives is right.
    OFF_NB_OPTS="--fault late-tx-rsp --fault-arg 2"
    offload_case pmd-fwd-tso-backlog "--proto tcp" "--proto tcp --tso 1460 --size 65535 --count 1000" \
      "1000 TSO packets of 65535 bytes, unpaced, through xpv-fwd while netback answers TX 2 ms late: every packet it took sent on once port 1's ring had room (none dropped), every checksum and byte that arrived right" \
      "x['p0_rx'] > 0" "x['p1_tx'] == x['p0_rx']" "x['p1_tso'] == x['p0_rx']" "x['p1_dropped'] == 0" \
      "s['tcp_bad_checksum'] == 0" "s['bad_payload'] == 0" "s['out_of_order'] == 0" \
      "n['fatal_errors'] == 0" "s['backend_errors'] == 0 and t['backend_errors'] == 0"
    OFF_NB_OPTS=""
    # Zero-copy receive (zerocopy=1 on both ports): each LRO packet is received into mbufs
    # attached to port 0's granted RX pages, not copied. The simulated hypervisor makes each
    # port's connection a domain of its own, and a grant means something only in the domain
    # that made it: port 1 copies them out (on Xen both vifs are one domU's, and it sends
    # them by their grants: e2e tcp-through-domu). What arrives is right, and every page
    # comes back (with 256 pages held and none back, the next packets would be copied).
    FWD_DEVARGS0=",zerocopy=1" FWD_DEVARGS1=",zerocopy=1"
    offload_case pmd-fwd-tso-zerocopy "--proto tcp" "--proto tcp --tso 1460 --size 65535 --count $n --rate 200" \
      "$n TSO packets of 65535 bytes through xpv-fwd with zerocopy=1: received into port 0's granted pages ($n kept), copied out of port 1 (another simulated domain's grants), cut by netback for the sink, every checksum and byte right" \
      "${OFF_INTACT[@]}" "x['p0_lro'] == $n" "x['p1_tso'] == $n" "x['p1_dropped'] == 0" \
      "x['p0_rx_kept'] == $n" "x['p1_tx_by_rx_grant'] == 0" "n['rx_gso_segmented'] == $n"
    FWD_DEVARGS0="" FWD_DEVARGS1=""
    offload_case pmd-fwd-csum "--proto tcp --no-rx-csum" "--proto tcp --csum-offload --size 60-1514 --count 10000 --rate 5000" \
      "10000 segments with partial checksums through xpv-fwd: sent on with RTE_MBUF_F_TX_TCP_CKSUM (10000), completed by netback, right at the sink" \
      "${OFF_INTACT[@]}" "x['p1_csum_offloaded'] == 10000" "x['p1_csum_software'] == 0" \
      "x['p1_dropped'] == 0" "n['rx_csum_completed'] == 10000"
    # Port 1 without checksum offload (csum=0): xpv-fwd completes the checksums itself
    FWD_DEVARGS1=",csum=0"
    offload_case pmd-fwd-csum-sw "--proto tcp --no-rx-csum" "--proto tcp --csum-offload --size 60-1514 --count 10000 --rate 5000" \
      "10000 segments with partial checksums through xpv-fwd to a port without checksum offload: completed by xpv-fwd in software (10000), right at the sink" \
      "${OFF_INTACT[@]}" "x['p1_csum_software'] == 10000" "x['p1_csum_offloaded'] == 0" \
      "x['p1_dropped'] == 0" "n['rx_csum_completed'] == 0"
    FWD_DEVARGS1=""
  else
    fail pmd-fwd "$BUILD/examples/xpv-fwd is missing"
  fi
}

# fwd_via start NAME SINK_MAC | stop NAME: xpv-fwd between the sender and the sink (OFF_VIA
# for offload_run): port 1 sends to the sink's mac, both ports announce themselves to the
# bridge; its counts go to NAME-via.json as p0_*, p1_*, sleeps, wakeups. FWD_DEVARGS0,
# FWD_DEVARGS1: more devargs for port 0, port 1.
fwd_via() {
  local name=$2 i
  if [[ $1 == start ]]; then
    "$BUILD/examples/xpv-fwd" "${EAL[@]/0-1/0}" --file-prefix "$name-fwd" \
      --vdev "net_xenpv0,backend=sim:$RUN/$name.sock,vif=0${FWD_DEVARGS0:-}" \
      --vdev "net_xenpv1,backend=sim:$RUN/$name.sock,vif=1${FWD_DEVARGS1:-}" -- \
      --no-promisc --eth-peer "1,$3" --announce >"$RUN/$name-fwd.log" 2>&1 &
    FWD_PID=$!
    PIDS+=("$FWD_PID")
    for i in $(seq 400); do
      grep -q "^xpv-fwd: forwarding" "$RUN/$name-fwd.log" 2>/dev/null && break
      kill -0 "$FWD_PID" 2>/dev/null || return 1
      sleep 0.05
    done
    OFF_DST=$(sed -nE 's/^xpv-fwd: port 0: mac ([0-9A-Fa-f:]{17}),.*/\1/p' "$RUN/$name-fwd.log")
    [[ -n $OFF_DST ]]
  else
    kill -INT "$FWD_PID" 2>/dev/null
    wait "$FWD_PID"
    python3 - "$RUN/$name-fwd.log" >"$RUN/$name-via.json" <<'EOF2'
import json, re, sys
x = {}
for line in open(sys.argv[1]):
    m = re.match(r"xpv-fwd: port (\d+): rx ", line)
    if m:
        f = line.split(": ", 2)[2].split()
        for k, v in zip(f[::2], f[1::2]):
            x["p%s_%s" % (m.group(1), k.replace("-", "_"))] = int(v)
    m = re.match(r"xpv-fwd: sleeps (\d+) wakeups (\d+)", line)
    if m:
        x["sleeps"], x["wakeups"] = int(m.group(1)), int(m.group(2))
print(json.dumps(x))
EOF2
  fi
}
