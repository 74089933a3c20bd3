#!/bin/bash
# Integration check of xpv-netback's bridge mode through real processes: two
# xpv-pktgen guests on one xpv-netback --mode bridge.
# Sourced by tests/integration/run.sh, which calls check_bridge_pktgen.

# ---- two guests through the learning bridge: a reflector, and a generator
# sending 100000 UDP frames to the reflector's mac, every one back and checked
check_bridge_pktgen() {
  local name=bridge-pktgen
  nb_start br --mode bridge || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  # The reflector connects first (domain 1). Its mac is the toolstack's
  # default, 00:16:3e:<domid hi>:<domid lo>:00: computed from the domain it
  # reports, and checked against the mac it reports.
  "$PKTGEN" --platform "sim:$RUN/br.sock" --role reflect --seconds 300 \
    --json "$RUN/br-refl.json" >"$RUN/br-refl.log" 2>&1 &
  local refl=$!
  PIDS+=("$refl")
  local line="" _
  for _ in $(seq 200); do
    line=$(grep -m1 "connected: domain" "$RUN/br-refl.log" 2>/dev/null)
    [[ -n $line ]] && break
    kill -0 $refl 2>/dev/null || break
    sleep 0.05
  done
  local domid mac want
  domid=$(echo "$line" | sed -nE 's/.*connected: domain ([0-9]+) .*/\1/p')
  mac=$(echo "$line" | sed -nE 's/.* mac ([0-9a-fA-F:]+) .*/\1/p')
  [[ -n $domid ]] && want=$(printf '00:16:3e:%02x:%02x:00' $((domid >> 8)) $((domid & 255)))
  if [[ -z $domid || ${mac,,} != "$want" ]]; then
    kill -INT $refl 2>/dev/null
    wait $refl 2>/dev/null
    nb_stop $nb
    fail $name "the reflector did not connect as expected: '$line' (log $RUN/br-refl.log)"
    return
  fi
  timeout 120 "$PKTGEN" --platform "sim:$RUN/br.sock" --role gen --count 100000 --proto udp \
    --dst-mac "$want" --json "$RUN/br-gen.json" --quiet >"$RUN/br-gen.log" 2>&1
  local rc=$?
  kill -INT $refl 2>/dev/null
  wait $refl
  local rrc=$?
  nb_stop $nb
  local nbrc=$?
  local rx bad refl_rx uni flood drop fatal
  rx=$(json "$RUN/br-gen.json" "d['received']" 2>/dev/null || echo 0)
  bad=$(json "$RUN/br-gen.json" "d['bad_payload'] + d['out_of_order'] + d['foreign'] + d['lost']" 2>/dev/null || echo 1)
  refl_rx=$(json "$RUN/br-refl.json" "d['received']" 2>/dev/null || echo 0)
  uni=$(json "$RUN/br.json" "d['totals']['bridge_unicast']" 2>/dev/null || echo 0)
  flood=$(json "$RUN/br.json" "d['totals']['bridge_flooded']" 2>/dev/null || echo 0)
  drop=$(json "$RUN/br.json" "d['totals']['bridge_dropped'] + d['totals']['bridge_dropped_self'] + d['totals']['rx_dropped_queue_full']" 2>/dev/null || echo 1)
  fatal=$(json "$RUN/br.json" "d['totals']['fatal_errors']" 2>/dev/null || echo 1)
  # Every frame crossed the bridge twice: to the reflector (flooded until
  # the reflector's mac was learned from its first reply), and back (unicast).
  if ((rc == 0 && rrc == 0 && nbrc == 0 && rx == 100000 && bad == 0 && refl_rx == 100000 &&
    uni + flood == 200000 && drop == 0 && fatal == 0)); then
    pass $name "100000 UDP frames to the reflector (domain $domid, $want) and back through the bridge, verified ($(json "$RUN/br-gen.json" "round(d['pps'])") pps; $flood flooded before the reflector's mac was learned, $uni unicast)"
  else
    fail $name "gen exit $rc received $rx bad/lost $bad; reflector exit $rrc received $refl_rx; netback exit $nbrc unicast $uni flooded $flood dropped $drop fatal $fatal (logs $RUN/br*)"
  fi
}

# ---- multicast filtering in the backend: a receiver that asked for one group
# (xpv-pktgen --mcast: request-multicast-control and an MCAST_ADD extra) gets
# that group and broadcast, not another group; without asking, all three; a
# backend without dynamic control refuses the request clearly
check_bridge_multicast() {
  local name=bridge-multicast g1=01:00:5e:00:00:01 g2=01:00:5e:00:00:02 bad="" summary=""
  # bridge_mc_run TAG "NETBACK OPTIONS" "SINK OPTIONS": the sink's received count, the
  # netback's multicast drops, the sink's MCAST requests (or its error line)
  bridge_mc_run() {
    local tag=$1
    # shellcheck disable=SC2086
    nb_start "brmc-$tag" --mode bridge $2 || { echo "netback did not start"; return; }
    local nb=$NB_PID
    # shellcheck disable=SC2086
    "$PKTGEN" --platform "sim:$RUN/brmc-$tag.sock" --role sink --seconds 30 $3 \
      --json "$RUN/brmc-$tag-sink.json" >"$RUN/brmc-$tag-sink.log" 2>&1 &
    local sink=$! i
    PIDS+=("$sink")
    for i in $(seq 100); do
      grep -q "connected: domain" "$RUN/brmc-$tag-sink.log" 2>/dev/null && break
      kill -0 $sink 2>/dev/null || break
      sleep 0.05
    done
    sleep 0.3
    local g
    for g in $g1 $g2 ff:ff:ff:ff:ff:ff; do
      timeout 60 "$PKTGEN" --platform "sim:$RUN/brmc-$tag.sock" --role tx --dst-mac $g --count 100 \
        --rate 5000 --quiet >>"$RUN/brmc-$tag-tx.log" 2>&1
    done
    sleep 0.5
    kill -INT $sink 2>/dev/null
    wait $sink
    local src=$?
    nb_stop $nb
    if ((src != 0)); then
      echo "sink exit $src: $(grep -m1 -- '--mcast' "$RUN/brmc-$tag-sink.log")"
      return
    fi
    echo "$(json "$RUN/brmc-$tag-sink.json" "d['received']") $(json "$RUN/brmc-$tag.json" "d['totals']['rx_dropped_multicast']") $(json "$RUN/brmc-$tag-sink.json" "d['mcast_requests']")"
  }
  local out
  out=$(bridge_mc_run filter "" "--mcast $g1")
  [[ $out == "200 100 1" ]] || bad+=" [filter on $g1: received/netback dropped/requests '$out', want '200 100 1']"
  summary+="asked for $g1: 200 of 300 received (netback dropped $g2's 100)"
  out=$(bridge_mc_run none "" "")
  [[ $out == "300 0 0" ]] || bad+=" [no filter: '$out', want '300 0 0']"
  out=$(bridge_mc_run static "--static-multicast-control" "--mcast $g1")
  [[ $out == *"does not offer feature-dynamic-multicast-control"* ]] ||
    bad+=" [static backend: '$out', want a refusal naming feature-dynamic-multicast-control]"
  if [[ -z $bad ]]; then
    pass $name "$summary; without asking 300 of 300; a backend with static control only: refused, naming feature-dynamic-multicast-control"
  else
    fail $name "$bad (logs $RUN/brmc-*)"
  fi
}
