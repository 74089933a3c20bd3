#!/bin/bash
# Integration checks of the netfront library through real processes:
# xpv-netback (the simulated dom0) and the xpv-pktgen example.
# Sourced by tests/integration/run.sh.

# ---- a million packets each way, 60..9000 bytes, 4 queues, every byte checked
check_loopback_million() {
  local name=loopback-1M-4q
  nb_start lb1m --mode loopback || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  # Window: 64 packets of up to 9000 bytes per queue stay within netback's
  # 1 MiB per-queue RX buffer, so that nothing is dropped by design.
  timeout 600 "$PKTGEN" --platform "sim:$RUN/lb1m.sock" --role gen --count 1000000 \
    --size 60-9000 --queues 4 --window 64 --json "$RUN/lb1m-gen.json" --quiet >"$RUN/lb1m-gen.log" 2>&1
  local rc=$?
  nb_stop $nb
  local rx bad ooo errs nbtx fatal
  rx=$(json "$RUN/lb1m-gen.json" "d['received']")
  bad=$(json "$RUN/lb1m-gen.json" "d['bad_payload'] + d['foreign']")
  ooo=$(json "$RUN/lb1m-gen.json" "d['out_of_order']")
  errs=$(json "$RUN/lb1m-gen.json" "d['backend_errors'] + d['tx_errors'] + d['rx_errors']")
  nbtx=$(json "$RUN/lb1m.json" "d['totals']['tx_packets']")
  fatal=$(json "$RUN/lb1m.json" "d['totals']['fatal_errors']")
  if ((rc == 0 && rx == 1000000 && bad == 0 && ooo == 0 && errs == 0 && nbtx == 1000000 && fatal == 0)); then
    pass $name "1000000 packets each way verified byte by byte ($(json "$RUN/lb1m-gen.json" "round(d['pps'])") pps)"
  else
    fail $name "exit $rc received $rx bad $bad out-of-order $ooo errors $errs netback-tx $nbtx fatal $fatal (logs $RUN/lb1m*)"
  fi
}

# ---- asking for more queues than multi-queue-max-queues is a clear error
check_too_many_queues() {
  local name=too-many-queues
  nb_start mq --max-queues 2 || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  timeout 60 "$PKTGEN" --platform "sim:$RUN/mq.sock" --queues 4 --count 10 >"$RUN/mq-gen.log" 2>&1
  local rc=$?
  nb_stop $nb
  if ((rc == 1)) && grep -q "asked for 4 queues but backend .* allows at most 2" "$RUN/mq-gen.log"; then
    pass $name "refused: $(grep -o 'asked for 4 queues.*' "$RUN/mq-gen.log" | head -1)"
  else
    fail $name "exit $rc; output: $(tail -2 "$RUN/mq-gen.log" | tr '\n' ' ')"
  fi
}

# ---- xpv-netback killed and restarted during traffic: the frontend notices,
# reports link down, reconnects to the new backend, and traffic resumes
check_backend_restart() {
  local name=backend-restart
  nb_start rs --mode loopback || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  timeout 120 "$PKTGEN" --platform "sim:$RUN/rs.sock" --role gen --count 0 --seconds 9 \
    --size 60-1500 --json "$RUN/rs-gen.json" >"$RUN/rs-gen.log" 2>&1 &
  local gen=$!
  PIDS+=("$gen")
  sleep 3
  kill -KILL $nb
  wait $nb 2>/dev/null
  sleep 1
  nb_start rs --mode loopback || { fail $name "netback did not restart"; return; }
  nb=$NB_PID
  wait $gen
  local rc=$?
  nb_stop $nb
  local downs recon bad after
  downs=$(json "$RUN/rs-gen.json" "d['link_downs']")
  recon=$(json "$RUN/rs-gen.json" "d['reconnects']")
  bad=$(json "$RUN/rs-gen.json" "d['bad_payload'] + d['out_of_order']")
  after=$(json "$RUN/rs.json" "d['totals']['tx_packets']")
  if ((rc == 0 && downs >= 1 && recon >= 1 && bad == 0 && after > 1000)); then
    pass $name "link down $downs, reconnected $recon, $after packets through the restarted backend"
  else
    fail $name "exit $rc link-downs $downs reconnects $recon bad $bad packets-after-restart $after (log $RUN/rs-gen.log)"
  fi
}

# ---- xpv-netback killed with SIGKILL and restarted, 20 times under traffic:
# every round reconnects, and what the frontend holds stays bounded: its
# resident memory and its mappings (a dead backend's simulated hypervisor
# takes the pages it still mapped along; nothing is kept per crash).
check_backend_sigkill_rounds() {
  local name=backend-sigkill-20 rounds=20
  nb_start sk --mode loopback || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  timeout 300 "$PKTGEN" --platform "sim:$RUN/sk.sock" --role gen --mode event --count 0 \
    --seconds 600 --window 64 --size 60-1500 --json "$RUN/sk-gen.json" >"$RUN/sk-gen.log" 2>&1 &
  local gen=$!
  PIDS+=("$gen")
  sleep 2
  local i rss1=0 maps1=0 rss maps
  for ((i = 1; i <= rounds; i++)); do
    kill -KILL $nb
    wait $nb 2>/dev/null
    sleep 0.3
    nb_start sk --mode loopback || { fail $name "netback did not restart in round $i"; kill -INT $gen; return; }
    nb=$NB_PID
    # Connected again: pktgen logs one more link up.
    local t
    for ((t = 0; t < 200; t++)); do
      (($(grep -c "^xpv-pktgen: link up" "$RUN/sk-gen.log") >= i)) && break
      sleep 0.05
    done
    (($(grep -c "^xpv-pktgen: link up" "$RUN/sk-gen.log") >= i)) ||
      { fail $name "no reconnect within 10 s in round $i (log $RUN/sk-gen.log)"; kill -INT $gen; return; }
    sleep 0.3  # some traffic through this backend
    local pg
    pg=$(pgrep -n -P $gen)  # xpv-pktgen itself, under timeout
    rss=$(awk '/^VmRSS/ {print $2}' /proc/$pg/status 2>/dev/null)
    maps=$(wc -l </proc/$pg/maps 2>/dev/null)
    ((i == 2)) && rss1=$rss maps1=$maps
  done
  kill -INT $gen
  wait $gen
  local rc=$?
  nb_stop $nb
  local downs bad kept
  downs=$(json "$RUN/sk-gen.json" "d['link_downs']")
  bad=$(json "$RUN/sk-gen.json" "d['bad_payload'] + d['out_of_order']")
  kept=$(grep -c "kept (never reused)" "$RUN/sk-gen.log")
  if ((rc == 0 && downs >= rounds && bad == 0 && kept == 0 && rss - rss1 < 4096 && maps - maps1 <= 4)); then
    pass $name "$rounds SIGKILLs, $downs link downs, each reconnected; from round 2 to $rounds resident memory $rss1 -> $rss kB, mappings $maps1 -> $maps; no page kept"
  else
    fail $name "exit $rc, link downs $downs (want >= $rounds), bad $bad, 'kept' warnings $kept, rss $rss1 -> $rss kB, mappings $maps1 -> $maps (log $RUN/sk-gen.log)"
  fi
}

# ---- a backend fault: the frontend disconnects cleanly (counted, logged, no
# leaked buffer, no sanitizer report) and reconnects by itself
# run_fault NAME FAULT MODE EXPECT: EXPECT is a python condition over the
# pktgen JSON `d` (in addition to: no bad payload, exit 0, teardown clean).
run_fault() {
  local name=$1 fault=$2 mode=$3 expect=$4; shift 4
  local tag=f-$fault
  local NETBACK=$NETBACK_SAN  # the sanitized backend, for nb_start
  nb_start "$tag" --fault "$fault" --fault-after 3000 "$@" || { fail "$name" "netback did not start"; return; }
  local nb=$NB_PID
  timeout 120 "$PKTGEN_SAN" --platform "sim:$RUN/$tag.sock" --role gen --count 0 --seconds 5 \
    --size 60-3000 --mode "$mode" --json "$RUN/$tag-gen.json" >"$RUN/$tag-gen.log" 2>&1
  local rc=$?
  nb_stop $nb
  local nbrc=$?
  local ok cond="$expect and d['bad_payload'] == 0 and d['foreign'] == 0"
  ok=$(json "$RUN/$tag-gen.json" "$cond" 2>/dev/null || echo 0)
  local injected td
  injected=$(json "$RUN/$tag.json" "d['totals']['faults_injected']" 2>/dev/null || echo 0)
  td=$(grep -o 'teardown: .*' "$RUN/$tag-gen.log" | tail -1)
  local still
  still=$(echo "$td" | sed -nE 's/.* ([0-9]+) still mapped.*/\1/p')
  if ((rc == 0 && nbrc == 0 && ok == 1 && injected >= 1 && ${still:-1} == 0)) &&
    sanitizer_clean "$RUN/$tag-gen.log" "$RUN/$tag.log"; then
    pass "$name" "$(json "$RUN/$tag-gen.json" "'backend_errors=%d link_downs=%d reconnects=%d spurious=%d delayed_eois=%d received=%d' % (d['backend_errors'], d['link_downs'], d['reconnects'], d['spurious_events'], d['delayed_eois'], d['received'])") ($td)"
  else
    fail "$name" "pktgen exit $rc netback exit $nbrc expectation=$ok injected=$injected ($td) logs $RUN/$tag*"
    grep -hE 'ERROR: AddressSanitizer|runtime error|error:' "$RUN/$tag-gen.log" "$RUN/$tag.log" | head -5
  fi
}

check_faults() {
  # Protocol violations: counted, the device disconnects and reconnects.
  local violation="d['backend_errors'] >= 1 and d['link_downs'] >= 1 and d['reconnects'] >= 1"
  run_fault fault-bad-tx-rsp-id bad-tx-rsp-id poll "$violation"
  run_fault fault-dup-tx-rsp dup-tx-rsp poll "$violation"
  run_fault fault-rsp-prod-overflow rsp-prod-overflow poll "$violation"
  run_fault fault-bad-rx-rsp bad-rx-rsp poll "$violation"
  run_fault fault-rx-rsp-bad-id rx-rsp-bad-id poll "$violation"
  # An event storm is not a protocol violation: it must cost bounded wake-ups.
  run_fault fault-event-storm event-storm event \
    "d['spurious_events'] >= 1 and d['delayed_eois'] >= 1 and d['backend_errors'] == 0 and d['received'] > 0"
  # Late TX responses: the transmit path still never reaps.
  run_fault fault-late-tx-rsp late-tx-rsp event \
    "d['tx_reaped_in_xmit'] == 0 and d['backend_errors'] == 0 and d['received'] > 0"
  # Backend reset during traffic (Closing, Closed, InitWait): link down, up.
  run_fault fault-reconnect reconnect poll \
    "d['link_downs'] >= 1 and d['reconnects'] >= 1 and d['backend_errors'] == 0"
  # The backend stops answering RX: no crash, no hang, clean teardown.
  run_fault fault-stall-rx stall-rx poll "d['backend_errors'] == 0" --rx-stall-timeout 1
}

# ---- event mode under sustained traffic: the transmit path consumed no
# responses, far fewer than one notification per packet at bursts of 32
check_event_mode() {
  local name=event-mode
  nb_start ev --mode loopback || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  timeout 300 "$PKTGEN" --platform "sim:$RUN/ev.sock" --role gen --count 300000 --size 60 \
    --mode event --json "$RUN/ev-gen.json" --quiet >"$RUN/ev-gen.log" 2>&1
  local rc=$?
  nb_stop $nb
  local ok
  ok=$(json "$RUN/ev-gen.json" "d['received'] == 300000 and d['tx_reaped_in_xmit'] == 0 and d['notifies'] < 0.25 * d['sent'] and d['events'] > 0 and d['bad_payload'] == 0")
  local line
  line=$(json "$RUN/ev-gen.json" "'notifies/packet %.4f, events/packet %.4f, spurious %d of %d events (%.3f%%), delayed EOIs %d, tx reaped in xmit %d' % (d['notifies']/d['sent'], d['events']/d['sent'], d['spurious_events'], d['events'], 100.0*d['spurious_events']/max(1,d['events']), d['delayed_eois'], d['tx_reaped_in_xmit'])")
  if ((rc == 0 && ok == 1)); then
    pass $name "$line"
  else
    fail $name "exit $rc: $line (log $RUN/ev-gen.log)"
  fi
}

# ---- the seeds' target over xpv-netback: TX-heavy load in event mode until 50,000 events; the
# default rule (only the handler reaps, arm() leaves notified responses to their event) keeps
# spurious events under 0.05% (the real-Xen seed-experiment check judges the same on Linux netback)
check_event_50k() {
  local name=event-mode-50k-events
  nb_start e5 --mode sink || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  timeout 300 "$PKTGEN" --platform "sim:$RUN/e5.sock" --role tx --mode event --events 50000 \
    --seconds 240 --size 60 --json "$RUN/e5-tx.json" --quiet >"$RUN/e5-tx.log" 2>&1
  local rc=$?
  nb_stop $nb
  local ok line
  ok=$(json "$RUN/e5-tx.json" "d['events'] >= 50000 and d['tx_reaped_in_xmit'] == 0 and d['spurious_events'] < 0.0005 * d['events']")
  line=$(json "$RUN/e5-tx.json" "'%d frames, %d events, spurious %d (%.4f%%), delayed EOIs %d, tx reaped in xmit %d' % (d['sent'], d['events'], d['spurious_events'], 100.0*d['spurious_events']/max(1,d['events']), d['delayed_eois'], d['tx_reaped_in_xmit'])")
  if ((rc == 0 && ok == 1)); then
    pass $name "$line"
  else
    fail $name "exit $rc: $line (log $RUN/e5-tx.log)"
  fi
}

# ---- a TX window in poll mode: the poll loop reaps what was answered (it stalled after the first
# frame when only a full ring made the transmit path reclaim)
check_tx_window_poll() {
  local name=tx-window-poll
  nb_start tw --mode sink || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  timeout 60 "$PKTGEN" --platform "sim:$RUN/tw.sock" --role tx --mode poll --window 1 --count 5000 \
    --seconds 30 --size 60 --json "$RUN/tw-tx.json" --quiet >"$RUN/tw-tx.log" 2>&1
  local rc=$?
  nb_stop $nb
  local sent
  sent=$(json "$RUN/tw-tx.json" "d['sent']")
  if ((rc == 0 && sent == 5000)); then
    pass $name "5000 frames one at a time in poll mode"
  else
    fail $name "exit $rc, sent ${sent:-?} of 5000 in 30 s (log $RUN/tw-tx.log)"
  fi
}

# ---- zero-copy transmit from the queue's own granted pages
check_zero_copy() {
  local name=zero-copy-tx
  nb_start zc --mode loopback || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  timeout 120 "$PKTGEN" --platform "sim:$RUN/zc.sock" --role gen --count 100000 --size 60-4096 \
    --zero-copy --json "$RUN/zc-gen.json" --quiet >"$RUN/zc-gen.log" 2>&1
  local rc=$?
  nb_stop $nb
  local ok
  ok=$(json "$RUN/zc-gen.json" "d['received'] == 100000 and d['bad_payload'] == 0 and d['backend_errors'] == 0")
  if ((rc == 0 && ok == 1)); then pass $name "100000 packets sent from granted pages, verified"; else fail $name "exit $rc (log $RUN/zc-gen.log)"; fi
}

# ---- the example against xpv-netback's source mode (RX only), and sink
check_source_sink() {
  local name=source-mode
  nb_start src --mode source --source-size 1500 --source-count 50000 || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  timeout 120 "$PKTGEN" --platform "sim:$RUN/src.sock" --role sink --seconds 4 \
    --json "$RUN/src-gen.json" --quiet >"$RUN/src-gen.log" 2>&1
  local rc=$?
  nb_stop $nb
  local ok
  ok=$(json "$RUN/src-gen.json" "d['received'] == 50000 and d['bad_payload'] == 0 and d['foreign'] == 0")
  if ((rc == 0 && ok == 1)); then pass $name "50000 generated packets received and verified"; else fail $name "exit $rc received $(json "$RUN/src-gen.json" "d['received']") (log $RUN/src-gen.log)"; fi
}

check_loopback_million
check_too_many_queues
check_backend_restart
check_backend_sigkill_rounds
check_event_mode
check_event_50k
check_tx_window_poll
check_zero_copy
check_source_sink
check_faults
