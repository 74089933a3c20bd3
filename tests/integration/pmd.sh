#!/bin/bash
# Integration checks of the net_xenpv DPDK driver: Debian's dpdk-testpmd
# (and l3fwd-power) over net_xenpv against xpv-netback in another process.
# Sourced by tests/integration/run.sh.

PMD_SO=$PWD/$BUILD/drivers/net_xenpv/librte_net_xenpv.so
TP_COMMON=(--total-num-mbufs=16384 --stats-period 1)

if [[ ! -e $PMD_SO ]]; then
  fail pmd-build "$PMD_SO is missing (DPDK driver SDK headers? run make setup)"
  return
fi
source scripts/pmd-path.sh
PMD_SO=$(xpv_pmd_path "$PMD_SO") || { fail pmd-build "cannot place the PMD where DPDK loads it"; return; }
EAL=(-l 0-1 --no-huge -m 1024 --no-pci --no-shconf -d "$PMD_SO")
if ! command -v dpdk-testpmd >/dev/null; then
  fail pmd-testpmd "dpdk-testpmd not found (package dpdk-dev)"
  return
fi

# tp_run NAME SECONDS VDEV_ARGS [testpmd app args...]: runs testpmd for
# SECONDS after forwarding started, stops it with SIGINT; log $RUN/NAME.log.
tp_run() {
  local name=$1 secs=$2 vdev=$3; shift 3
  timeout -k 10 -s INT $((secs + 40)) dpdk-testpmd "${EAL[@]}" --file-prefix "xpvit$$$name" \
    --vdev "$vdev" -- "${TP_COMMON[@]}" "$@" >"$RUN/$name.log" 2>&1 &
  local tp=$!
  PIDS+=("$tp")
  wait_log "$RUN/$name.log" "Press enter to exit|Rx-pps" $tp 400
  sleep "$secs"
  kill -INT $tp 2>/dev/null
  wait $tp
}

# The last NIC statistics of port 0 (our PMD's counters) testpmd printed.
tp_port() {  # LOG FIELD (RX-packets|RX-missed|RX-errors|TX-packets|TX-errors)
  python3 -c '
import re, sys
# Only the "NIC statistics" blocks (they pair RX-packets with RX-missed, and
# RX-errors / TX-errors with their packets), not the forward statistics.
log = "".join(b.lstrip(" #").split("\n  ####")[0] for b in open(sys.argv[1]).read().split("NIC statistics for port 0")[1:])
m = re.findall(sys.argv[2] + r":\s+(\d+)", log)
print(m[-1] if m else -1)' "$1" "$2"
}

# Final accumulated counters of port 0 printed by testpmd at stop.
tp_total() {  # LOG FIELD (RX-packets|RX-dropped|TX-packets|TX-dropped)
  python3 - "$1" "$2" <<'EOF'
import re, sys
log = open(sys.argv[1]).read()
block = log.split("Accumulated forward statistics for all ports")[-1]
m = re.search(sys.argv[2] + r":\s+(\d+)", block)
print(m.group(1) if m else -1)
EOF
}

# ---- txonly against a sink: every packet testpmd sent reached the backend
check_txonly() {
  local name=pmd-txonly
  nb_start tpsink --mode sink || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  tp_run tp-txonly 4 "net_xenpv0,backend=sim:$RUN/tpsink.sock" --forward-mode=txonly --txpkts=64
  local rc=$?
  nb_stop $nb
  local sent drop got nberr
  sent=$(tp_total "$RUN/tp-txonly.log" TX-packets)
  drop=$(tp_total "$RUN/tp-txonly.log" TX-dropped)
  got=$(json "$RUN/tpsink.json" "d['totals']['tx_packets']")
  nberr=$(json "$RUN/tpsink.json" "d['totals']['tx_error_responses'] + d['totals']['fatal_errors']")
  if ((rc == 0 && sent > 10000 && got == sent && nberr == 0)); then
    pass $name "testpmd sent $sent (not accepted, retried by testpmd: $drop); xpv-netback received $got"
  else
    fail $name "exit $rc testpmd TX $sent, netback received $got, errors $nberr (log $RUN/tp-txonly.log)"
  fi
}

# ---- rxonly from a source: received + counted drops = generated
check_rxonly() {
  local name=pmd-rxonly
  local n=200000
  nb_start tpsrc --mode source --source-size 128 --source-count $n || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  tp_run tp-rxonly 4 "net_xenpv0,backend=sim:$RUN/tpsrc.sock" --forward-mode=rxonly
  local rc=$?
  nb_stop $nb
  local rx rxdrop nbdrop nbrx
  # Port statistics: testpmd flushes the RX queues before it starts its
  # forwarding statistics, so those would miss the first packets.
  rx=$(tp_port "$RUN/tp-rxonly.log" RX-packets)
  rxdrop=$(( $(tp_port "$RUN/tp-rxonly.log" RX-missed) + $(tp_port "$RUN/tp-rxonly.log" RX-errors) ))
  nbrx=$(json "$RUN/tpsrc.json" "d['totals']['rx_packets']")
  nbdrop=$(json "$RUN/tpsrc.json" "d['totals']['rx_dropped_queue_full'] + d['totals']['rx_dropped_expired'] + d['totals']['rx_dropped_stalled']")
  if ((rc == 0 && rx + rxdrop + nbdrop == n && rx > 0)); then
    pass $name "generated $n = port received $rx + dropped $rxdrop + backend dropped $nbdrop"
  else
    fail $name "exit $rc: generated $n, testpmd RX $rx dropped $rxdrop, backend delivered $nbrx dropped $nbdrop (log $RUN/tp-rxonly.log)"
  fi
}

# ---- io forwarding over loopback, 2 and 4 queues: traffic on every queue
check_io_multiqueue() {
  local q
  for q in 1 2 4; do
    local name=pmd-io-${q}q
    nb_start "tpio$q" --mode loopback || { fail $name "netback did not start"; continue; }
    local nb=$NB_PID
    tp_run "tp-io$q" 4 "net_xenpv0,backend=sim:$RUN/tpio$q.sock" --forward-mode=io --tx-first \
      --rxq=$q --txq=$q --nb-cores=1
    local rc=$?
    nb_stop $nb
    local rx busy
    rx=$(tp_total "$RUN/tp-io$q.log" RX-packets)
    busy=$(json "$RUN/tpio$q.json" "sum(1 for v in d['vifs'] for qq in v['per_queue'] if qq['tx_packets'] > 0)")
    if ((rc == 0 && rx > 10000 && busy == q)); then
      pass $name "testpmd forwarded $rx packets; traffic on all $busy queue(s)"
    else
      fail $name "exit $rc RX $rx, queues with traffic $busy of $q (log $RUN/tp-io$q.log)"
    fi
  done
}

# ---- xpv-netback restarts under testpmd txonly: link down, link up (LSC
# events), traffic resumes through the new backend, testpmd exits cleanly
check_restart_lsc() {
  local name=pmd-backend-restart
  nb_start tprs --mode sink || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  disown $nb  # killed by the subshell below: no "Killed" report in the log
  (
    sleep 6
    kill -KILL $nb
    sleep 1
    "$NETBACK" --socket "$RUN/tprs.sock" --stats-file "$RUN/tprs2.json" --mode sink >"$RUN/tprs2.log" 2>&1 &
    echo $! >"$RUN/tprs2.pid"
  ) &
  local killer=$!
  tp_run tp-rs 12 "net_xenpv0,backend=sim:$RUN/tprs.sock" --forward-mode=txonly
  local rc=$?
  wait $killer
  local nb2
  nb2=$(cat "$RUN/tprs2.pid")
  PIDS+=("$nb2")
  nb_stop "$nb2"
  local lsc after
  lsc=$(grep -c "link state change event" "$RUN/tp-rs.log")
  after=$(json "$RUN/tprs2.json" "d['totals']['tx_packets']")
  if ((rc == 0 && lsc >= 2 && after > 1000)); then
    pass $name "$lsc link state change events; $after packets through the restarted backend"
  else
    fail $name "exit $rc, LSC events $lsc, packets after restart $after (log $RUN/tp-rs.log)"
  fi
}

# ---- every mbuf is back in its pool after stop: interactive testpmd, dump
# the pool after forwarding stopped and the port stopped. Twice: io
# forwarding in loopback (full bursts, both directions), and rxonly from a
# paced source, whose bursts find one or two packets: the RX burst takes
# mbufs from the pool in bulk and must put back what a burst did not use.
check_mbuf_leak() {
  mbuf_leak_case pmd-mbuf-leak lk io "start tx_first 8" --mode loopback
  mbuf_leak_case pmd-mbuf-leak-partial-bursts lkp rxonly start \
    --mode source --source-rate 20000 --source-size 64
}
mbuf_leak_case() {  # NAME TAG FWD-MODE START-COMMAND NETBACK-ARGS...
  local name=$1 tag=$2 fwdmode=$3 startcmd=$4
  shift 4
  nb_start "tp$tag" "$@" || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  local fifo=$RUN/tp$tag.fifo
  mkfifo "$fifo"
  timeout -k 5 90 dpdk-testpmd "${EAL[@]}" --file-prefix "xpvit$$$tag" --vdev "net_xenpv0,backend=sim:$RUN/tp$tag.sock" \
    -- -i --total-num-mbufs=8192 --forward-mode="$fwdmode" <"$fifo" >"$RUN/tp-$tag.log" 2>&1 &
  local tp=$!
  PIDS+=("$tp")
  exec 7>"$fifo"
  wait_log "$RUN/tp-$tag.log" "testpmd>" $tp 300
  echo "$startcmd" >&7
  sleep 3
  echo "stop" >&7
  sleep 1
  echo "port stop all" >&7
  sleep 2
  echo "dump_mempool mb_pool_0" >&7
  sleep 1
  echo "quit" >&7
  exec 7>&-
  wait $tp
  local rc=$?
  nb_stop $nb
  local size avail fwd cached common
  size=$(sed -nE 's/^\s*size=([0-9]+)/\1/p' "$RUN/tp-$tag.log" | tail -1)
  cached=$(sed -nE 's/^\s*total_cache_count=([0-9]+)/\1/p' "$RUN/tp-$tag.log" | tail -1)
  common=$(sed -nE 's/^\s*common_pool_count=([0-9]+)/\1/p' "$RUN/tp-$tag.log" | tail -1)
  [[ -n $cached && -n $common ]] && avail=$((cached + common))
  fwd=$(tp_total "$RUN/tp-$tag.log" RX-packets)
  if ((rc == 0 && fwd > 1000)) && [[ -n $size && "$size" == "$avail" ]]; then
    pass $name "$fwdmode: received $fwd packets; after port stop all $avail of $size mbufs are back in the pool"
  else
    fail $name "exit $rc received $fwd; pool size '$size' available '$avail' (log $RUN/tp-$tag.log)"
  fi
}

# ---- bad device arguments: probe fails with the key and the expected form
check_devargs() {
  local name=pmd-devargs
  local bad=0 details=""
  local cases=(
    "bogus=1|unknown device argument 'bogus'"
    "vif=abc|vif='abc': expected a vif number"
    "vif=70000|vif='70000': expected a vif number"
    "queues=0|queues='0': expected a queue count 1..16"
    "queues=99|queues='99': expected a queue count 1..16"
    "backend=kvm|backend='kvm': expected 'xen' or 'sim:PATH'"
    "backend=sim:|backend='sim:': expected 'xen' or 'sim:PATH'"
    "mac=01:02|mac='01:02': expected a MAC address"
    "split=2|split='2': expected 0 or 1"
    "idle_sleep=1000001|idle_sleep='1000001': expected microseconds 0..1000000"
    "idle_sleep=-5|idle_sleep='-5': expected microseconds 0..1000000"
    "idle_wait=sometimes|idle_wait='sometimes': expected 'kernel'"
    "idle_wait=xen|idle_wait=xen says where an idle_sleep waits: give idle_sleep=US"
    "backend=sim:$RUN/none.sock,idle_sleep=100,idle_wait=xen|idle_wait=xen needs backend=xen"
    "idle_sleep=100,idle_wait=xen|idle_wait=xen: waiting in Xen: /dev/xen/privcmd is not usable"
    "vif|device argument 'vif' needs a value"
    "backend=sim:/nonexistent/xpv.sock|cannot connect to the simulated hypervisor at /nonexistent/xpv.sock"
    "backend=xen|/dev/xen does not exist"
  )
  local c
  for c in "${cases[@]}"; do
    local arg=${c%%|*} want=${c#*|}
    timeout 60 dpdk-testpmd "${EAL[@]}" --file-prefix "xpvit$$da" --vdev "net_xenpv0,$arg" -- \
      --total-num-mbufs=8192 -a >"$RUN/devargs.log" 2>&1 </dev/null
    # testpmd itself carries on without ports; the probe must have failed
    # with the message.
    if ! grep -qF "failed to initialize net_xenpv0" "$RUN/devargs.log" || ! grep -qF "$want" "$RUN/devargs.log"; then
      bad=$((bad + 1))
      details+=" [$arg: wanted '$want', got: $(grep -m1 'net_xenpv0:' "$RUN/devargs.log")]"
    fi
  done
  if ((bad == 0)); then
    pass $name "${#cases[@]} bad device arguments refused, each naming the key and the expected form"
  else
    fail $name "$bad case(s) wrong:$details"
  fi
}

check_txonly
check_rxonly
check_io_multiqueue
check_devargs
check_mbuf_leak
check_restart_lsc

# ---- the checks below need a second frontend: xpv-netback --mode bridge
# joins testpmd's vif and xpv-pktgen's vif like dom0's bridge would.
TP_MAC=00:16:3e:00:01:00  # the first frontend to connect is domain 1

# tp_start NAME VDEV_ARGS [testpmd args...]: starts testpmd in the background
# and waits until it forwards; sets TP_PID.
tp_start() {
  local name=$1 vdev=$2; shift 2
  dpdk-testpmd "${EAL[@]}" --file-prefix "xpvit$$$name" --vdev "$vdev" -- "${TP_COMMON[@]}" "$@" \
    >"$RUN/$name.log" 2>&1 &
  TP_PID=$!
  PIDS+=("$TP_PID")
  wait_log "$RUN/$name.log" "Press enter to exit|packet forwarding - ports=" "$TP_PID" 400
}
tp_stop() {
  kill -INT "$TP_PID" 2>/dev/null
  local i
  for i in $(seq 200); do kill -0 "$TP_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$TP_PID" 2>/dev/null
  wait "$TP_PID"
}

# ---- testpmd icmpecho answers ARP and pings of 56 and 8000 bytes of payload
check_icmpecho() {
  local name=pmd-icmpecho
  nb_start tpbr1 --mode bridge || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  # 8000-byte payloads: frames of 8042 bytes, above the default MTU of 1500.
  if ! tp_start tp-icmp "net_xenpv0,backend=sim:$RUN/tpbr1.sock" --forward-mode=icmpecho --max-pkt-len=9018; then
    fail $name "testpmd did not start forwarding (log $RUN/tp-icmp.log)"
    nb_stop $nb
    return
  fi
  local ok=0 detail=""
  local size
  for size in 98 8042; do  # 14 + 20 + 8 + payload (56, 8000 bytes)
    timeout 120 "$PKTGEN" --platform "sim:$RUN/tpbr1.sock" --role ping --dst-ip 10.0.0.1 \
      --src-ip 10.0.0.2 --count 20 --size $size --json "$RUN/ping$size.json" --quiet \
      >"$RUN/ping$size.log" 2>&1
    local rc=$?
    local got
    got=$(json "$RUN/ping$size.json" "d['received']" 2>/dev/null || echo 0)
    detail+=" $((size - 42))-byte payload: $got/20 replies (exit $rc);"
    ((rc == 0 && got == 20)) && ok=$((ok + 1))
  done
  tp_stop
  nb_stop $nb
  if ((ok == 2)); then pass $name "ARP answered;$detail no loss, every reply checked"; else fail $name "$detail (logs $RUN/ping*.log $RUN/tp-icmp.log)"; fi
}

# ---- testpmd macswap reflects generated UDP traffic; every byte checked
check_macswap() {
  local name=pmd-macswap
  nb_start tpbr2 --mode bridge || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  if ! tp_start tp-ms "net_xenpv0,backend=sim:$RUN/tpbr2.sock" --forward-mode=macswap; then
    fail $name "testpmd did not start forwarding (log $RUN/tp-ms.log)"
    nb_stop $nb
    return
  fi
  timeout 300 "$PKTGEN" --platform "sim:$RUN/tpbr2.sock" --role gen --proto udp --dst-mac $TP_MAC \
    --count 100000 --size 60-1500 --window 128 --json "$RUN/ms-gen.json" --quiet >"$RUN/ms-gen.log" 2>&1
  local rc=$?
  tp_stop
  nb_stop $nb
  local got bad
  got=$(json "$RUN/ms-gen.json" "d['received']" 2>/dev/null || echo 0)
  bad=$(json "$RUN/ms-gen.json" "d['bad_payload'] + d['out_of_order']" 2>/dev/null || echo 1)
  if ((rc == 0 && got == 100000 && bad == 0)); then
    pass $name "100000 UDP frames of 60..1500 bytes reflected by testpmd macswap, all verified"
  else
    fail $name "exit $rc, $got of 100000 back, $bad bad (logs $RUN/ms-gen.log $RUN/tp-ms.log)"
  fi
}

# ---- l3fwd-power (--interrupt-only, --pmd-mgmt=pause|monitor) over the bridge
source tests/integration/l3fwd_power.sh

if [[ $("$NETBACK" --help 2>&1) == *"--mode MODE"*bridge* ]]; then
  check_icmpecho
  check_macswap
  check_l3fwd_power_interrupt
  check_l3fwd_power_pmd_mgmt
else
  fail pmd-bridge "xpv-netback has no bridge mode: icmpecho, macswap and l3fwd-power checks not run"
fi
