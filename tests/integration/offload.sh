#!/bin/bash
# Offloads through real processes (netif.h checksum flags and the GSO extra):
# two xpv-pktgen guests on one xpv-netback --mode bridge, a TCP stream from one
# to the other. The receiving xpv-pktgen recomputes every IPv4 and TCP
# checksum and checks every payload byte against its sequence number
# (examples/tcp_stream.h), so nothing the backend or the frontend says about a
# checksum is trusted. Sourced by tests/integration/run.sh, which calls
# check_offloads.

# The stream has no TCP under it to send a lost frame again, so every run wants
# all of it: netback's RX queues (and bridge inboxes) hold 16 MiB, about a
# second of the fastest sender here, instead of 1 MiB. A receiver that the
# machine does not run for a while then loses nothing (off-stall-* below). With
# 1 MiB, pmd-off-tso and pmd-off-tso-lro lost one or two 64 KiB packets in a CI
# run, and 2 of 6 of those cases did with four busy loops on this 2-core
# machine (0 of 6 with 16 MiB).
OFF_QUEUE_OPTS=(--rx-queue-bytes $((16 << 20)) --rx-queue-packets 16384)

# offload_run NAME "SINK OPTIONS" "TX OPTIONS" [NETBACK OPTIONS...]: the sink
# (announced on the bridge) for 30 s at most, the sender to its mac; results in
# $RUN/NAME-{sink,tx}.json and $RUN/NAME.json (netback). NETBACK OPTIONS come
# after OFF_QUEUE_OPTS, so a queue size given there counts. Returns 1 when
# something did not start.
offload_run() {
  local name=$1 sink_opts=$2 tx_opts=$3
  shift 3
  nb_start "$name" --mode bridge "${OFF_QUEUE_OPTS[@]}" "$@" || return 1
  local nb=$NB_PID line="" i
  # shellcheck disable=SC2086
  "$PKTGEN" --platform "sim:$RUN/$name.sock" --role sink --announce --seconds 30 \
    --json "$RUN/$name-sink.json" $sink_opts >"$RUN/$name-sink.log" 2>&1 &
  local sink=$!
  PIDS+=("$sink")
  for i in $(seq 200); do
    line=$(grep -m1 "connected: domain" "$RUN/$name-sink.log" 2>/dev/null)
    [[ -n $line ]] && break
    kill -0 $sink 2>/dev/null || break
    sleep 0.05
  done
  local mac
  mac=$(sed -nE 's/.* mac ([0-9a-fA-F:]+) .*/\1/p' <<<"$line")
  # Through a DPDK application between the two (OFF_VIA: a function called
  # "start NAME SINK_MAC", which sets OFF_DST, then "stop NAME").
  OFF_DST=$mac
  if [[ -z $mac ]] || { [[ -n ${OFF_VIA:-} ]] && ! $OFF_VIA start "$name" "$mac"; }; then
    kill -INT $sink 2>/dev/null
    nb_stop $nb
    return 1
  fi
  # OFF_STALL_SINK=S: the sink stopped (SIGSTOP) for S seconds, half a second into the
  # stream. It posts no RX requests meanwhile: what comes for it waits in netback's queue.
  local stall=""
  if [[ -n ${OFF_STALL_SINK:-} ]]; then
    (sleep 0.5 && kill -STOP $sink && sleep "$OFF_STALL_SINK" && kill -CONT $sink) &
    stall=$!
  fi
  # shellcheck disable=SC2086
  timeout 120 "$PKTGEN" --platform "sim:$RUN/$name.sock" --role tx --dst-mac "$OFF_DST" --quiet \
    --json "$RUN/$name-tx.json" $tx_opts >"$RUN/$name-tx.log" 2>&1
  OFF_TX_RC=$?
  if [[ -n $stall ]]; then
    wait $stall
    kill -CONT $sink 2>/dev/null  # a stopped sink would ignore the SIGINT below
  fi
  # The sender is paced (--rate) below what the sink takes: 1 s after it
  # finished, what was on its way has arrived.
  sleep 1
  [[ -n ${OFF_VIA:-} ]] && $OFF_VIA stop "$name"
  kill -INT $sink 2>/dev/null
  wait $sink
  OFF_SINK_RC=$?
  nb_stop $nb
  OFF_NB_RC=$?
}

# offload_judge NAME WHAT CONDITION...: pass when every python condition holds over the
# run's documents s (sink), t (sender), n (netback totals) and x (what OFF_VIA
# left in NAME-via.json: the DPDK application's counters).
offload_judge() {
  local name=$1 what=$2
  shift 2
  local verdict
  verdict=$(python3 - "$RUN/$name-sink.json" "$RUN/$name-tx.json" "$RUN/$name.json" "$RUN/$name-via.json" "$@" <<'EOF'
import json, os, sys
try:
    s = json.load(open(sys.argv[1]))
    t = json.load(open(sys.argv[2]))
    n = json.load(open(sys.argv[3]))["totals"]
    x = json.load(open(sys.argv[4])) if os.path.exists(sys.argv[4]) else {}
except Exception as e:
    print("no results: %s" % e)
    sys.exit(0)
def ev(c):
    try:
        return eval(c)
    except Exception as e:
        return False
bad = [c for c in sys.argv[5:] if not ev(c)]
if bad:
    print("; ".join(bad) + " | sink: " + ", ".join("%s=%s" % (k, s[k]) for k in (
        "received", "tcp_payload_rx", "tcp_gap_bytes", "tcp_bad_checksum", "bad_payload",
        "out_of_order", "tcp_oversize", "tcp_wrong_gso_type", "rx_lro_packets", "rx_csum_blank",
        "rx_data_validated", "backend_errors")) +
        " | tx: tcp_payload_tx=%s tx_dropped=%s" % (t["tcp_payload_tx"], t["tx_dropped"]) +
        " | netback: " + ", ".join("%s=%s" % (k, v) for k, v in n.items()
                                  if v and any(w in k for w in ("gso", "csum", "drop", "fatal"))) +
        (" | via: " + ", ".join("%s=%s" % (k, v) for k, v in x.items() if v) if x else ""))
EOF
)
  if [[ -z $verdict && $OFF_TX_RC == 0 && $OFF_SINK_RC == 0 && $OFF_NB_RC == 0 ]]; then
    pass "$name" "$what"
  else
    fail "$name" "tx exit $OFF_TX_RC, sink exit $OFF_SINK_RC, netback exit $OFF_NB_RC: $verdict (logs $RUN/$name*)"
  fi
}

# What every run that should deliver the whole stream must show: every byte
# there once and in order, every checksum right, nothing dropped anywhere.
OFF_INTACT=("s['tcp_payload_rx'] == t['tcp_payload_tx'] > 0" "s['tcp_gap_bytes'] == 0"
  "s['tcp_bad_checksum'] == 0" "s['bad_payload'] == 0" "s['out_of_order'] == 0"
  "s['tcp_oversize'] == 0" "s['tcp_wrong_gso_type'] == 0" "t['tx_dropped'] == 0"
  "n['bridge_dropped'] + n['rx_dropped_queue_full'] + n['fatal_errors'] == 0"
  "s['backend_errors'] == 0 and t['backend_errors'] == 0")

check_offloads() {
  # TSO/LRO at 200 packets/s (13 MB/s of 64 KiB packets): what a receiver on a loaded 2-core
  # machine drains without its queue filling (at 1000/s the bridge dropped frames under load).
  local n=400 mss=1460 segs
  # 65535-byte frames: 65481 stream bytes a packet over IPv4, 65461 over IPv6.
  segs=$(((65481 + mss - 1) / mss))

  # -- TSO out, the receiver without GSO: netback cuts every 64 KiB packet
  # into MSS-sized segments, each a correct frame under the MTU (their
  # checksums left partial for a receiver with checksum offload)
  if offload_run off-tso-seg "--proto tcp" "--proto tcp --tso $mss --size 65535 --count $n --rate 200"; then
    offload_judge off-tso-seg "$n TSO packets of 65535 bytes (MSS $mss, GSO extra) arrived as $((n * segs)) segments of at most 1514 bytes, every checksum and byte right" \
      "${OFF_INTACT[@]}" "n['tx_gso_packets'] == $n" "n['rx_gso_segmented'] == $n" \
      "s['received'] == $((n * segs))" "s['rx_lro_packets'] == 0" \
      "s['rx_csum_blank'] == s['received']"
  else
    fail off-tso-seg "did not start (logs $RUN/off-tso-seg*)"
  fi

  # -- A receiver that stops for half a second (100 of the 64 KiB packets, 4,500 segments,
  # 6.8 MB): netback's 16 MiB queue holds them all and the stream arrives whole; with the
  # default 1 MiB queue the excess is dropped, and every segment either arrives intact or is
  # counted dropped
  local q
  for q in 16M 1M; do
    local opts=() judge=("${OFF_INTACT[@]}" "n['rx_gso_segmented'] == $n" "s['received'] == $((n * segs))")
    local what="nothing lost: $((n * segs)) segments arrived, every checksum and byte right"
    if [[ $q == 1M ]]; then
      opts=(--rx-queue-bytes $((1 << 20)) --rx-queue-packets 1024)
      judge=("n['rx_dropped_queue_full'] > 1000" "n['bridge_dropped'] == 0"
        "s['received'] + n['rx_dropped_queue_full'] == $((n * segs))"
        "s['tcp_bad_checksum'] == 0" "s['bad_payload'] == 0" "s['out_of_order'] == 0")
      what="segments past the queue dropped and counted (received + rx_dropped_queue_full = $((n * segs))), the rest right"
    fi
    if OFF_STALL_SINK=0.5 offload_run off-stall-$q "--proto tcp" "--proto tcp --tso $mss --size 65535 --count $n --rate 200" "${opts[@]}"; then
      offload_judge off-stall-$q "$n TSO packets to a sink stopped for 0.5 s, netback queue $q: $what" "${judge[@]}"
    else
      fail off-stall-$q "did not start (logs $RUN/off-stall-$q*)"
    fi
  done

  # -- TSO out, the receiver takes large packets (LRO): whole, with the GSO
  # extra's type and MSS, over IPv4 and IPv6
  local proto mss6=1440
  for proto in tcp tcp6; do
    local m=$mss ip=IPv4
    [[ $proto == tcp6 ]] && m=$mss6 ip=IPv6
    if offload_run off-lro-$proto "--proto $proto --lro" "--proto $proto --tso $m --size 65535 --count $n --rate 200"; then
      offload_judge off-lro-$proto "$n TSO packets over $ip delivered whole to a receiver with feature-gso-tcpv4/6 (GSO extra of the right type), every checksum and byte right" \
        "${OFF_INTACT[@]}" "n['rx_gso_packets'] == $n" "s['received'] == $n" \
        "s['rx_lro_packets'] == $n"
    else
      fail off-lro-$proto "did not start (logs $RUN/off-lro-$proto*)"
    fi
  done

  # -- partial checksums to a receiver that wrote feature-no-csum-offload=1:
  # netback completes each (and says data_validated), mixed sizes, IPv4 and IPv6
  for proto in tcp tcp6; do
    local min=60
    [[ $proto == tcp6 ]] && min=75
    if offload_run off-csum-$proto "--proto $proto --no-rx-csum" "--proto $proto --csum-offload --size $min-1514 --count 20000 --rate 20000"; then
      offload_judge off-csum-$proto "20000 $proto segments of $min..1514 bytes with partial checksums (csum_blank) completed by netback for a receiver without checksum offload" \
        "${OFF_INTACT[@]}" "n['rx_csum_completed'] == 20000" "s['rx_csum_blank'] == 0" \
        "s['rx_data_validated'] == 20000"
    else
      fail off-csum-$proto "did not start (logs $RUN/off-csum-$proto*)"
    fi
  done

  # -- partial checksums to a receiver with checksum offload: they stay
  # partial (csum_blank), the receiver's pseudo-header sum matches
  if offload_run off-csum-blank "--proto tcp" "--proto tcp --csum-offload --size 60-1514 --count 20000 --rate 20000"; then
    offload_judge off-csum-blank "20000 segments with partial checksums handed over partial (csum_blank | data_validated), each field the pseudo-header sum" \
      "${OFF_INTACT[@]}" "n['rx_csum_completed'] == 0" "s['rx_csum_blank'] == 20000"
  else
    fail off-csum-blank "did not start (logs $RUN/off-csum-blank*)"
  fi

  # -- no offload asked: full checksums pass untouched, no flag set
  if offload_run off-none "--proto tcp" "--proto tcp --size 60-1514 --count 20000 --rate 20000"; then
    offload_judge off-none "20000 segments with full checksums: no flag on receive, nothing changed" \
      "${OFF_INTACT[@]}" "s['rx_csum_blank'] + s['rx_data_validated'] + n['rx_csum_completed'] == 0"
  else
    fail off-none "did not start (logs $RUN/off-none*)"
  fi

  # -- a backend without feature-gso-tcpv4: TSO packets are refused by the
  # frontend (counted), never sent for netback to drop
  if offload_run off-tso-refused "--proto tcp" "--proto tcp --tso $mss --size 65535 --count 50 --rate 1000" --no-gso; then
    offload_judge off-tso-refused "50 TSO packets refused by the frontend for a backend without feature-gso-tcpv4 (tx_dropped 50), none reached netback" \
      "t['tx_dropped'] == 50" "s['received'] == 0" "n['tx_gso_packets'] == 0" \
      "n['fatal_errors'] == 0"
  else
    fail off-tso-refused "did not start (logs $RUN/off-tso-refused*)"
  fi
}
