#!/bin/bash
# The control path of net_xenpv under stress: port stop/reset/configure/start
# while xpv-netback restarts under traffic, and one LSC event per link change.
# Sourced by tests/integration/run.sh after pmd.sh and conformance.sh (uses
# EAL, NETBACK, ts_start/ts_cmd/ts_quit).

# restarter NAME MODE PERIOD ROUNDS PID: kills xpv-netback NAME (PID) and starts it again
# (on the same socket) every PERIOD seconds; ROUNDS times; its pids in
# $RUN/NAME.pids, restarts counted in $RUN/NAME.restarts.
restarter() {
  local name=$1 mode=$2 period=$3 rounds=$4 pid=$5 i
  for ((i = 1; i <= rounds; i++)); do
    sleep "$period"
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    sleep 0.2
    "$NETBACK" --socket "$RUN/$name.sock" --mode "$mode" >>"$RUN/$name.log" 2>&1 &
    pid=$!
    echo "$pid" >>"$RUN/$name.pids"
    echo "$i" >"$RUN/$name.restarts"
  done
}

# ---- 200 rounds of stop / reset / start (configure) with forwarding, while
# the backend restarts: no hang (bounded), traffic afterwards, no mbuf lost
check_control_reset_loop() {
  local name=ctl-reset-loop rounds=200
  nb_start ctl --mode loopback || { fail $name "netback did not start"; return; }
  : >"$RUN/ctl.pids"
  if ! ts_start tp-ctl "net_xenpv0,backend=sim:$RUN/ctl.sock" --forward-mode=io --disable-link-check; then
    fail $name "testpmd did not start (log $RUN/tp-ctl.log)"
    nb_stop $NB_PID
    return
  fi
  disown "$NB_PID"  # the restarter kills it: no "Killed" report in the log
  restarter ctl loopback 1 8 $NB_PID &
  local rs=$!
  # All rounds in one write: testpmd runs them back to back. A reset waits
  # for the control callback, which runs whenever the backend's state moved
  # (our own stop wrote Closing/Closed just before).
  local i cmds=""
  for ((i = 0; i < rounds; i++)); do
    cmds+="port stop 0"$'\n'"port reset 0"$'\n'"port start 0"$'\n'"start tx_first"$'\n'"stop"$'\n'
  done
  local prompts0
  prompts0=$(grep -o 'testpmd> ' "$TS_LOG" | wc -l)
  printf '%s' "$cmds" >&8
  local want=$((prompts0 + 5 * rounds)) done=0
  for ((i = 0; i < 1200; i++)); do  # at most 120 s
    (($(grep -o 'testpmd> ' "$TS_LOG" | wc -l) >= want)) && { done=1; break; }
    kill -0 "$TS_PID" 2>/dev/null || break
    sleep 0.1
  done
  wait $rs
  local hung=""
  ((done)) || hung="testpmd stuck after $(($(grep -o 'testpmd> ' "$TS_LOG" | wc -l) - prompts0)) of $((5 * rounds)) commands"
  local restarts resets
  restarts=$(cat "$RUN/ctl.restarts" 2>/dev/null || echo 0)
  resets=$(grep -c "Resetting ports" "$TS_LOG")
  # Afterwards (the backend up again): the port works and every mbuf is back.
  local fwd=0 size="" avail=""
  if [[ -z $hung ]]; then
    for i in 1 2 3; do
      ts_cmd "port stop 0"
      ts_cmd "port start 0"
      has "Fail" || break
      sleep 1
    done
    ts_cmd "clear port stats 0"
    ts_cmd "start tx_first"
    sleep 1
    ts_cmd "stop"
    fwd=$(sed -nE 's/.*RX-packets: ([0-9]+).*/\1/p' <<<"$TS_OUT" | tail -1)
    ts_cmd "port stop 0"
    ts_cmd "dump_mempool mb_pool_0"
    size=$(sed -nE 's/^\s*size=([0-9]+)/\1/p' <<<"$TS_OUT" | tail -1)
    local cached common
    cached=$(sed -nE 's/^\s*total_cache_count=([0-9]+)/\1/p' <<<"$TS_OUT" | tail -1)
    common=$(sed -nE 's/^\s*common_pool_count=([0-9]+)/\1/p' <<<"$TS_OUT" | tail -1)
    [[ -n $cached && -n $common ]] && avail=$((cached + common))
    ts_quit
  else
    kill -KILL "$TS_PID" 2>/dev/null
    wait "$TS_PID" 2>/dev/null
  fi
  local p
  for p in $(cat "$RUN/ctl.pids"); do PIDS+=("$p"); kill -TERM "$p" 2>/dev/null; done
  nb_stop $NB_PID 2>/dev/null
  if [[ -z $hung ]] && ((${fwd:-0} > 1000)) && [[ -n $size && $size == "$avail" ]]; then
    pass $name "$rounds rounds of port stop/reset/start/forward ($resets resets) while xpv-netback restarted $restarts times: no hang; then forwarded $fwd packets; $avail of $size mbufs back in the pool"
  else
    fail $name "${hung:-no hang}; restarts $restarts resets $resets; forwarded afterwards ${fwd:-0}; pool size '$size' available '$avail' (logs $TS_LOG $RUN/ctl.log)"
  fi
}

# ---- one LSC event per link change: K backend restarts under txonly give
# 2K events (down, up), while the application and telemetry keep reading the
# link status. Each restart waits for its two events (robust on a loaded box:
# a restart during a reconnect would merge two outages into one).
check_control_lsc_count() {
  local name=ctl-lsc-count restarts=4
  nb_start ctll --mode sink || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  if ! ts_start tp-ctll "net_xenpv0,backend=sim:$RUN/ctll.sock" --forward-mode=txonly; then
    fail $name "testpmd did not start (log $RUN/tp-ctll.log)"
    nb_stop $nb
    return
  fi
  ts_cmd "start"
  local events=() r i before
  before=$(grep -c "link state change event" "$TS_LOG")
  for ((r = 1; r <= restarts; r++)); do
    sleep 0.5
    kill -KILL $nb 2>/dev/null
    wait $nb 2>/dev/null
    sleep 0.2
    "$NETBACK" --socket "$RUN/ctll.sock" --mode sink >>"$RUN/ctll.log" 2>&1 &
    nb=$!
    PIDS+=("$nb")
    # Until both events of this restart came (a lost one: ~20 s, then the
    # count is short), reading the link status meanwhile.
    for ((i = 0; i < 100; i++)); do
      (($(grep -c "link state change event" "$TS_LOG") >= before + 2 * r)) && break
      ts_cmd "show port info 0"
      telemetry "/ethdev/link_status,0" >/dev/null
      sleep 0.1
    done
  done
  sleep 1  # a late duplicate would show here
  local got
  got=$(($(grep -c "link state change event" "$TS_LOG") - before))
  ts_cmd "show port info 0"
  local up=0
  has "Link status: up" && up=1
  ts_cmd "stop"
  ts_quit
  nb_stop $nb
  if ((got == 2 * restarts && up)); then
    pass $name "$restarts backend restarts: $got LSC events (one per change), link up at the end"
  else
    fail $name "$restarts backend restarts gave $got LSC events ($((2 * restarts)) expected), link up at the end: $up (log $TS_LOG)"
  fi
}

check_control_reset_loop
check_control_lsc_count
