#!/bin/bash
# Conformance of net_xenpv with what DPDK documents for an ethdev port, seen
# only through independent tools: testpmd's own commands (driven through a
# pipe) and dpdk-telemetry.py. Sourced by tests/integration/run.sh after
# pmd.sh and testpmd_session.sh (uses EAL, PMD_SO, NETBACK, PKTGEN, TP_MAC,
# ts_*).

TP_MAC=${TP_MAC:-00:16:3e:00:01:00}  # the first frontend on a bridge is domain 1

# inject MAC N: a second frontend on the bridge sends N raw frames to MAC
# (nothing answers them: xpv-pktgen reports them lost, which is expected).
inject() {
  timeout 60 "$PKTGEN" --platform "sim:$RUN/cf.sock" --role gen --dst-mac "$1" --count "$2" \
    --window "$2" --seconds 1 --no-verify --quiet >>"$RUN/cf-inject.log" 2>&1
  sleep 0.3
}


conformance_bridge_session() {
  nb_start cf --mode bridge || { fail conf-setup "netback did not start"; return; }
  local nb=$NB_PID
  if ! ts_start tp-cf "net_xenpv0,backend=sim:$RUN/cf.sock" --forward-mode=rxonly; then
    fail conf-setup "testpmd did not start (log $RUN/tp-cf.log)"
    nb_stop $nb
    return
  fi
  local bad

  # -- descriptor counts, segment limit and link speed as the port reports them
  ts_cmd "show port info 0"
  bad=""
  local want
  for want in "Link speed: Unknown" "Max possible number of RXDs per queue: 256" \
    "Min possible number of RXDs per queue: 256" "Max possible number of TXDs per queue: 256" \
    "Min possible number of TXDs per queue: 256" "Max segment number per packet: 64" \
    "Max segment number per MTU/TSO: 18"; do
    has "$want" || bad+=" [missing '$want']"
  done
  ts_cmd "show rxq info 0 0"
  has "Number of RXDs: 256" || bad+=" [rxq info: no 'Number of RXDs: 256']"
  has "Burst mode: Scalar" || bad+=" [rxq info: no burst mode]"
  ts_cmd "show txq info 0 0"
  has "Number of TXDs: 256" || bad+=" [txq info: no 'Number of TXDs: 256']"
  has "Burst mode: Scalar" || bad+=" [txq info: no burst mode]"
  # Any other count is refused by ethdev with dev_infos_get's limits.
  ts_cmd "port stop 0"
  ts_cmd "port config all rxd 128"
  has "can't be less than min_rxds (256)" || bad+=" [128 rx descriptors accepted]"
  ts_cmd "port config all rxd 256"
  ts_cmd "port start 0"
  has "Fail" && bad+=" [256 rx descriptors refused]"
  if [[ -z $bad ]]; then
    pass conf-desc-info "256 descriptors (min = max) in port info and rxq/txq info, 128 refused; 18 segments a packet (64 a TSO packet); speed unknown; burst modes named"
  else
    fail conf-desc-info "$bad (log $TS_LOG)"
  fi

  # -- more tx queues than rx queues (l3fwd-power opens one per lcore): they
  # share the rx queues' netif queues, the port starts
  ts_cmd "port stop 0"
  ts_cmd "port config all txq 2"
  ts_cmd "port start 0"
  local shared=0
  has "Fail" || shared=1
  ts_cmd "port stop 0"
  ts_cmd "port config all txq 1"
  ts_cmd "port start 0"
  if ((shared)) && ! has "Fail"; then
    pass conf-queue-pairs "1 rx + 2 tx queues start (the tx queues share the netif queue); 1 + 1 starts again"
  else
    fail conf-queue-pairs "1 rx + 2 tx: $shared; restart output: $(tr '\n' ' ' <<<"$TS_OUT" | cut -c1-200) (log $TS_LOG)"
  fi

  # -- xstats: every name once, the same set through telemetry
  read_xstats
  local names dups tnames
  names=$(sed -nE 's/^ *([a-z0-9_]+): +[0-9]+$/\1/p' <<<"$XSTATS" | sort)
  dups=$(uniq -d <<<"$names" | tr '\n' ' ')
  tnames=$(telemetry "/ethdev/xstats,0" | python3 -c 'import json,sys; print("\n".join(sorted(json.load(sys.stdin)["/ethdev/xstats"])))' 2>/dev/null)
  if [[ -n $names && -z $dups && "$names" == "$tnames" ]]; then
    pass conf-xstats-unique "$(wc -l <<<"$names") xstats, each name once; dpdk-telemetry.py /ethdev/xstats lists the same names"
  else
    fail conf-xstats-unique "duplicates: '${dups}'; testpmd $(wc -l <<<"$names") names, telemetry $(wc -l <<<"$tnames") (log $TS_LOG)"
  fi

  # -- the MAC filter: promiscuous, all-multicast, the multicast list
  ts_cmd "start"
  ts_cmd "set promisc 0 off"
  ts_cmd "set allmulti 0 off"
  local info
  info=$(telemetry "/ethdev/info,0")
  ts_cmd "clear port xstats 0"
  local other=02:aa:bb:cc:dd:ee mc1=01:00:5e:00:00:fb mc2=01:00:5e:00:00:01
  local steps="" rx0 rx
  read_xstats
  rx0=$(xstat rx_good_packets)
  check_rx() {  # LABEL EXPECTED_NEW_RX
    read_xstats
    rx=$(xstat rx_good_packets)
    steps+=" $1:$((rx - rx0))/$2"
    (((rx - rx0) == $2)) || bad+=" [$1: $((rx - rx0)) received, $2 expected]"
    rx0=$rx
  }
  bad=""
  inject $other 100 && check_rx unicast-other 0
  inject $TP_MAC 100 && check_rx unicast-ours 100
  inject $mc1 100 && check_rx multicast-unlisted 0
  local fu fm mreq
  fu=$(xstat rx_q0_filtered_unicast)
  fm=$(xstat rx_q0_filtered_multicast)
  ts_cmd "mcast_addr add 0 $mc1"
  inject $mc1 100 && check_rx multicast-listed 100
  mreq=$(xstat q0_mcast_requests)
  inject ff:ff:ff:ff:ff:ff 100 && check_rx broadcast 100
  ts_cmd "set allmulti 0 on"
  inject $mc2 100 && check_rx allmulti 100
  ts_cmd "set promisc 0 on"
  inject $other 100 && check_rx promisc 100
  ts_cmd "show port info 0"
  has "Promiscuous mode: enabled" || bad+=" [show port info: promiscuous not enabled]"
  [[ $info == *'"promiscuous": 0'* && $info == *'"all_multicast": 0'* ]] ||
    bad+=" [telemetry /ethdev/info with both off: $(cut -c1-120 <<<"$info")]"
  # Unlisted multicast is dropped by xpv-netback's filter (it offers
  # feature-dynamic-multicast-control), before it reaches the port: counted
  # there (conf-mcast-backend), not in rx_q0_filtered_multicast.
  ((fu == 100 && fm == 0 && mreq == 1)) ||
    bad+=" [filtered counted: unicast $fu (100 expected), multicast $fm (0: netback filters), MCAST_ADD requests $mreq (1)]"
  if [[ -z $bad ]]; then
    pass conf-mac-filter "received/expected:$steps; dropped and counted: rx_q0_filtered_unicast $fu, unlisted multicast by netback's filter (q0_mcast_requests $mreq); telemetry agrees"
  else
    fail conf-mac-filter "$bad (log $TS_LOG, $RUN/cf-inject.log)"
  fi

  # -- queue stop/start and descriptor status: frames for a stopped queue
  # wait in its ring as DONE descriptors and come out when it starts
  bad=""
  read_xstats
  rx0=$(xstat rx_good_packets)
  ts_cmd "stop"  # testpmd stops queues only while it does not forward
  ts_cmd "port 0 rxq 0 stop"
  inject $TP_MAC 50
  ts_cmd "show port 0 rxq 0 desc used count"
  has "Used desc count = 50" || bad+=" [used count: $(grep -i 'count' <<<"$TS_OUT" | tr -d '\r')]"
  ts_cmd "show port 0 rxq 0 desc 0 status"
  has "Desc status = DONE" || bad+=" [rx desc 0 not DONE]"
  ts_cmd "show port 0 rxq 0 desc 60 status"
  has "Desc status = AVAILABLE" || bad+=" [rx desc 60 not AVAILABLE]"
  ts_cmd "show port 0 txq 0 desc 0 status"
  has "Desc status = DONE" || bad+=" [tx desc 0 not DONE]"
  ts_cmd "show rxq info 0 0"
  has "Rx queue state: stopped" || bad+=" [rxq info: not stopped]"
  read_xstats
  (($(xstat rx_good_packets) == rx0)) || bad+=" [a stopped queue delivered]"
  ts_cmd "port 0 rxq 0 start"
  ts_cmd "start"
  sleep 0.5
  check_rx started-again 50
  # deferred start: the queue stays stopped at port start until started
  ts_cmd "stop"
  ts_cmd "port stop 0"
  ts_cmd "port 0 rxq 0 deferred_start on"
  ts_cmd "port start 0"
  ts_cmd "show rxq info 0 0"
  has "Rx queue state: stopped" && has "RX deferred start: on" || bad+=" [deferred queue not stopped after port start]"
  info=$(telemetry "/ethdev/info,0")
  [[ $info == *'"rxq_state": [0]'* || $info == *'"rxq_state": [ 0 ]'* ]] || bad+=" [telemetry rxq_state: $(grep -o '"rxq_state": [^]]*]' <<<"$info")]"
  ts_cmd "port 0 rxq 0 start"
  ts_cmd "show rxq info 0 0"
  has "Rx queue state: started" || bad+=" [deferred queue did not start]"
  ts_cmd "port stop 0"
  ts_cmd "port 0 rxq 0 deferred_start off"
  ts_cmd "port start 0"
  if [[ -z $bad ]]; then
    pass conf-queue-start-stop "50 frames for a stopped rxq: desc used count 50, desc 0 DONE, desc 60 AVAILABLE; delivered on start; deferred start honoured (testpmd and telemetry)"
  else
    fail conf-queue-start-stop "$bad (log $TS_LOG)"
  fi

  # -- MTU enforced on TX, multi-segment limit (the bridge floods testpmd's
  # frames to no one: what counts is what the port accepted)
  bad=""
  ts_cmd "set fwd txonly"
  ts_cmd "port config mtu 0 1000"
  has "failed" && bad+=" [mtu 1000 refused]"
  ts_cmd "set txpkts 1100"
  ts_cmd "clear port xstats 0"
  ts_cmd "start"
  sleep 1
  ts_cmd "stop"
  read_xstats
  local big_ok big_mtu
  big_ok=$(xstat tx_good_packets)
  big_mtu=$(xstat tx_q0_refused_mtu)
  ((big_ok == 0 && big_mtu > 0)) || bad+=" [1100-byte frames at MTU 1000: $big_ok sent, $big_mtu refused]"
  ts_cmd "set txpkts 1000"
  ts_cmd "clear port xstats 0"
  ts_cmd "start"
  sleep 1
  ts_cmd "stop"
  read_xstats
  local fit_ok
  fit_ok=$(xstat tx_good_packets)
  ((fit_ok > 0 && $(xstat tx_q0_refused_mtu) == 0)) || bad+=" [1000-byte frames at MTU 1000: $fit_ok sent, $(xstat tx_q0_refused_mtu) refused]"
  ts_cmd "port config mtu 0 9000"
  ts_cmd "show port info 0"
  has "MTU: 9000" || bad+=" [MTU 9000 not taken with feature-sg]"
  # 19 segments: more than a netif packet may have slots
  ts_cmd "port stop 0"
  ts_cmd "port config 0 tx_offload multi_segs on"
  ts_cmd "port start 0"
  ts_cmd "set txpkts $(printf '64,%.0s' $(seq 18))64"
  ts_cmd "clear port xstats 0"
  ts_cmd "start"
  sleep 1
  ts_cmd "stop"
  read_xstats
  local segs_ok segs_ref
  segs_ok=$(xstat tx_good_packets)
  segs_ref=$(xstat tx_q0_refused_segs)
  ((segs_ok == 0 && segs_ref > 0)) || bad+=" [19-segment chains: $segs_ok sent, $segs_ref refused]"
  ts_cmd "set txpkts $(printf '64,%.0s' $(seq 17))64"
  ts_cmd "clear port xstats 0"
  ts_cmd "start"
  sleep 1
  ts_cmd "stop"
  read_xstats
  ((${segs18:=$(xstat tx_good_packets)} > 0)) || bad+=" [18-segment chains not sent]"
  if [[ -z $bad ]]; then
    pass conf-mtu-segs "MTU 1000: 1100-byte frames refused ($big_mtu counted), 1000-byte sent ($fit_ok); MTU 9000 with feature-sg; 19-segment chains refused ($segs_ref counted), 18-segment sent ($segs18)"
  else
    fail conf-mtu-segs "$bad (log $TS_LOG)"
  fi
  unset segs18

  # -- close frees the port: the backend sees the vif closed
  ts_cmd "port stop 0"
  ts_cmd "port close 0"
  # testpmd's vif is domain 1's: its last word before testpmd exits is
  # "disconnected" (the handshake closed, every grant given back).
  local closed=0 i
  for i in $(seq 50); do
    [[ $(grep -E "vif1\.0: (connected|disconnected)" "$RUN/cf.log" | tail -1) == *disconnected ]] &&
      { closed=1; break; }
    sleep 0.1
  done
  ts_cmd "show port info 0"
  local gone=0
  has "Invalid port" || has "invalid port" && gone=1
  ts_quit
  local rc=$?
  nb_stop $nb
  local mdrop
  mdrop=$(json "$RUN/cf.json" "d['totals']['rx_dropped_multicast']" 2>/dev/null || echo -1)
  if ((mdrop == 100)); then
    pass conf-mcast-backend "set_mc_addr_list and all-multicast kept in netback's filter (request-multicast-control, MCAST_ADD/DEL): it dropped the 100 unlisted multicast frames, delivered the listed ones and, with all-multicast on, the rest"
  else
    fail conf-mcast-backend "netback dropped $mdrop multicast frames, 100 expected (log $RUN/cf.log)"
  fi
  if ((rc == 0 && gone && closed)); then
    pass conf-close "port close: the port is gone (show port info: invalid port), backend saw the vif close: $closed; testpmd exited 0"
  else
    fail conf-close "testpmd exit $rc, port gone $gone, backend saw close $closed (logs $TS_LOG $RUN/cf.log)"
  fi
}

# A backend without feature-sg and a speed= device argument.
conformance_nosg_session() {
  nb_start cfn --mode loopback --no-sg || { fail conf-nosg "netback did not start"; return; }
  local nb=$NB_PID
  if ! ts_start tp-cfn "net_xenpv0,backend=sim:$RUN/cfn.sock,speed=25000"; then
    fail conf-nosg "testpmd did not start (log $RUN/tp-cfn.log)"
    nb_stop $nb
    return
  fi
  local bad=""
  ts_cmd "show port info 0"
  has "Link speed: 25 Gbps" || bad+=" [speed=25000 not reported: $(grep 'Link speed' <<<"$TS_OUT")]"
  ts_cmd "port config mtu 0 1600"
  # testpmd checks max_mtu itself before it asks the driver.
  has "device max MTU (1500)" || has "MTU 1600 is outside 68..1500" || bad+=" [MTU 1600 accepted without feature-sg]"
  ts_cmd "port config mtu 0 1500"
  ts_cmd "show port info 0"
  has "MTU: 1500" || bad+=" [MTU 1500 not set]"
  ts_cmd "show port 0 tx_offload capabilities"
  has "MULTI_SEGS" && bad+=" [MULTI_SEGS offered without feature-sg]"
  ts_quit
  nb_stop $nb
  timeout 60 dpdk-testpmd "${EAL[@]}" --file-prefix "xpvc$$sp" --vdev "net_xenpv0,backend=sim:/nonexistent,speed=123" -- \
    --total-num-mbufs=8192 -a >"$RUN/cf-speed.log" 2>&1 </dev/null
  grep -qF "speed='123': expected a link speed in Mbps" "$RUN/cf-speed.log" || bad+=" [speed=123 not refused by name]"
  if [[ -z $bad ]]; then
    pass conf-nosg-speed "speed=25000 reported as 25 Gbps, speed=123 refused; without feature-sg MTU 1600 refused, 1500 taken, no MULTI_SEGS"
  else
    fail conf-nosg-speed "$bad (logs $RUN/tp-cfn.log $RUN/cf-speed.log)"
  fi
}

if ! command -v dpdk-telemetry.py >/dev/null; then
  fail conf-telemetry "dpdk-telemetry.py not found (package dpdk)"
fi
conformance_bridge_session
conformance_nosg_session

# ---- --rxq=1 --txq=2: netback spreads received traffic over every netif
# queue, so there must be no netif queue whose RX nobody polls: every frame
# the backend generated reaches the one rx queue.
conformance_unequal_queues() {
  local name=conf-rx-every-netif-queue n=100000
  nb_start cfq --mode source --source-size 128 --source-count $n || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  tp_run tp-cfq 4 "net_xenpv0,backend=sim:$RUN/cfq.sock" --forward-mode=rxonly --rxq=1 --txq=2
  local rc=$?
  nb_stop $nb
  local rx nbrx nbdrop
  rx=$(tp_port "$RUN/tp-cfq.log" RX-packets)
  nbrx=$(json "$RUN/cfq.json" "d['totals']['rx_packets']")
  nbdrop=$(json "$RUN/cfq.json" "d['totals']['rx_dropped_queue_full'] + d['totals']['rx_dropped_expired'] + d['totals']['rx_dropped_stalled']")
  if ((rc == 0 && rx == nbrx && nbdrop * 20 < n && rx > 0)); then
    pass $name "1 rx + 2 tx queues: the port received all $rx frames the backend delivered (backend dropped $nbdrop of $n)"
  else
    fail $name "exit $rc: backend delivered $nbrx, port received $rx, backend dropped $nbdrop of $n (log $RUN/tp-cfq.log)"
  fi
}
conformance_unequal_queues
