#!/bin/bash
# Hostile xenstore values (issue 10, section 5): for each xs-* fault of
# xpv-netback, the frontend (xpv-pktgen, and testpmd over net_xenpv for the
# mac) logs a clear refusal or fallback naming the key, and never crashes or
# hangs (every run bounded by a timeout); the reattach fault changes the
# vif's mac between connections (section 1). Then net_xenpv's device
# arguments and log type. Sourced by tests/integration/run.sh (the pmd part
# after pmd.sh set EAL); about a minute in all.

# hx_run NAME FAULT SECONDS [netback options...]: xpv-pktgen --role gen for
# SECONDS against xpv-netback with --fault FAULT; sets HX_RC (pktgen's exit
# status), HX_LOG and HX_JSON.
hx_run() {
  local name=$1 fault=$2 secs=$3; shift 3
  local tag=hx-$name
  HX_LOG=$RUN/$tag-gen.log
  HX_JSON=$RUN/$tag-gen.json
  HX_RC=255
  rm -f "$HX_JSON"
  nb_start "$tag" --fault "$fault" "$@" || return 1
  local nb=$NB_PID
  timeout -k 5 $((secs + 30)) "$PKTGEN" --platform "sim:$RUN/$tag.sock" --role gen --count 0 \
    --seconds "$secs" --size 60-1500 --json "$HX_JSON" >"$HX_LOG" 2>&1
  HX_RC=$?
  nb_stop $nb
  return 0
}

# hx_json EXPR: over pktgen's JSON, or 0.
hx_json() { json "$HX_JSON" "$1" 2>/dev/null || echo 0; }

# hx_expect NAME WHAT REGEX COND: pktgen neither crashed (signal) nor hung
# (timeout), its log matches REGEX, and the python condition COND over its
# JSON `d` holds ("" for none).
hx_expect() {
  local name=$1 what=$2 re=$3 cond=$4
  local line
  line=$(grep -m1 -E "$re" "$HX_LOG")
  if ((HX_RC >= 124)); then
    fail "$name" "xpv-pktgen exit $HX_RC (crash or hang) (log $HX_LOG)"
  elif [[ -z $line ]]; then
    fail "$name" "no log line matching '$re' (exit $HX_RC, log $HX_LOG)"
  elif [[ -n $cond && $(hx_json "$cond") != 1 ]]; then
    fail "$name" "logged '$line' but '$cond' does not hold (exit $HX_RC, log $HX_LOG)"
  else
    pass "$name" "$what: '$line' (exit $HX_RC)"
  fi
}

check_hostile_xenstore() {
  local up="d['received'] > 0"
  hx_run bad-mac xs-bad-mac 1 || { fail xs-bad-mac "netback did not start"; }
  if ((HX_RC == 1)); then
    hx_expect xs-bad-mac "refused" "/mac is '00:16:3e:zz:.*not a MAC address" ""
  else
    fail xs-bad-mac "xpv-pktgen exit $HX_RC, expected 1 (cannot connect) (log $HX_LOG)"
  fi
  hx_run mc-mac xs-multicast-mac 1 || { fail xs-multicast-mac "netback did not start"; }
  if ((HX_RC == 1)); then
    hx_expect xs-multicast-mac "refused" "/mac is '01:16:3e:.*multicast.*refusing the vif" ""
  else
    fail xs-multicast-mac "xpv-pktgen exit $HX_RC, expected 1 (cannot connect) (log $HX_LOG)"
  fi
  hx_run mq0 xs-max-queues-zero 2 && hx_expect xs-max-queues-zero "fell back to 1 queue" \
    "multi-queue-max-queues is '0'.*using 1" "$up"
  hx_run mqhuge xs-max-queues-huge 2 && hx_expect xs-max-queues-huge "clamped" \
    "multi-queue-max-queues is '4294967295'.*using 16" "$up"
  hx_run mtu xs-bad-mtu 2 && hx_expect xs-bad-mtu "fell back to 1500" \
    "/mtu is '4294967295'.*using 1500" "$up"
  hx_run feat xs-feature-garbage 2 && hx_expect xs-feature-garbage "treated as off" \
    "feature-sg is 'yes'.*treated as absent" "$up and d['backend_errors'] == 0"
  if grep -qE "feature-split-event-channels is '2'" "$HX_LOG" &&
    grep -qE "feature-ctrl-ring is ' 1'" "$HX_LOG"; then
    pass xs-feature-garbage-each "every garbage feature key named (split-event-channels '2', ctrl-ring ' 1')"
  else
    fail xs-feature-garbage-each "not every garbage feature key was named (log $HX_LOG)"
  fi
  # Backend states that go backwards or are no XenbusState: the frontend
  # closes and connects again, traffic resumes.
  local again="d['reconnects'] >= 1 and $up"
  hx_run back xs-state-backwards 4 --fault-after 2000 &&
    hx_expect xs-state-backwards "closed and reconnected" "switched to InitWait" "$again"
  hx_run undef xs-state-undefined 4 --fault-after 2000 &&
    hx_expect xs-state-undefined "read as Unknown, reconnected" \
      "holds '99', not a XenbusState.*read as Unknown" "$again"
  # Keys gone when the frontend reads them: refused naming the key; they
  # come back and the frontend connects again by itself.
  hx_run vanish xs-keys-vanish 5 --fault-after 2000 &&
    hx_expect xs-keys-vanish "refused, then reconnected" "does not offer feature-rx-copy" "$again"
  # Section 1: network-detach, network-attach with another mac, twice.
  hx_run reattach reattach 6 --fault-after 2000 --fault-arg 2 --mac 00:16:3e:00:00:11 \
    --reattach-mac 00:16:3e:00:00:21 &&
    hx_expect reattach-mac "new mac seen" "mac 00:16:3e:00:00:11 -> 00:16:3e:00:00:21" \
      "d['reconnects'] >= 2 and $up"
  if grep -qE "mac 00:16:3e:00:00:21 -> 00:16:3e:00:00:11" "$HX_LOG"; then
    pass reattach-mac-back "the second round's mac seen too (00:16:3e:00:00:21 -> :11)"
  else
    fail reattach-mac-back "no 'mac 00:16:3e:00:00:21 -> 00:16:3e:00:00:11' in $HX_LOG"
  fi
}

# ---- net_xenpv: a bad mac from xenstore fails the probe with the message,
# multicast/zero mac= and repeated keys are refused, and the log type is
# pmd.net.xenpv.
check_hostile_pmd() {
  local name=pmd-xs-bad-mac
  nb_start hxp --fault xs-multicast-mac || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  timeout 60 dpdk-testpmd "${EAL[@]}" --file-prefix "xpvit$$hx" \
    --vdev "net_xenpv0,backend=sim:$RUN/hxp.sock" -- --total-num-mbufs=8192 -a \
    >"$RUN/hxp-tp.log" 2>&1 </dev/null
  local rc=$?
  nb_stop $nb
  if ((rc < 124)) && grep -qF "failed to initialize net_xenpv0" "$RUN/hxp-tp.log" &&
    grep -qE "/mac is '01:16:3e:.*multicast" "$RUN/hxp-tp.log"; then
    pass $name "probe refused: $(grep -m1 -oE "[^ ]*/mac is .*" "$RUN/hxp-tp.log")"
  else
    fail $name "testpmd exit $rc; no refusal naming the mac key (log $RUN/hxp-tp.log)"
  fi

  name=pmd-devargs-hostile
  local bad=0 details="" c
  local cases=(
    "mac=01:00:5e:00:00:01|mac='01:00:5e:00:00:01': a multicast address"
    "mac=ff:ff:ff:ff:ff:ff|mac='ff:ff:ff:ff:ff:ff': a multicast address"
    "mac=00:00:00:00:00:00|mac='00:00:00:00:00:00': all-zero"
    "vif=0,vif=1|device argument 'vif' is given more than once"
    "queues=1,mac=02:00:00:00:00:01,queues=2|device argument 'queues' is given more than once"
  )
  for c in "${cases[@]}"; do
    local arg=${c%%|*} want=${c#*|}
    timeout 60 dpdk-testpmd "${EAL[@]}" --file-prefix "xpvit$$hd" --vdev "net_xenpv0,$arg" -- \
      --total-num-mbufs=8192 -a >"$RUN/hx-devargs.log" 2>&1 </dev/null
    if ! grep -qF "failed to initialize net_xenpv0" "$RUN/hx-devargs.log" ||
      ! grep -qF "$want" "$RUN/hx-devargs.log"; then
      bad=$((bad + 1))
      details+=" [$arg: wanted '$want', got: $(grep -m1 'net_xenpv0:' "$RUN/hx-devargs.log")]"
    fi
  done
  if ((bad == 0)); then
    pass $name "${#cases[@]} device arguments refused (multicast/zero mac, a key given twice), each naming the key"
  else
    fail $name "$bad case(s) wrong:$details"
  fi

  # The log type: pmd.net.xenpv, as DPDK drivers name theirs. The driver's
  # info lines need pmd.net.xenpv:info; :debug adds the library's debug lines
  # (the handshake's phases).
  name=pmd-log-type
  nb_start hxl || { fail $name "netback did not start"; return; }
  nb=$NB_PID
  local lvl out=""
  for lvl in notice info debug; do
    timeout 60 dpdk-testpmd "${EAL[@]}" --file-prefix "xpvit$$hl" --log-level="pmd.net.xenpv:$lvl" \
      --vdev "net_xenpv0,backend=sim:$RUN/hxl.sock" -- --total-num-mbufs=8192 -a \
      >"$RUN/hxl-$lvl.log" 2>&1 </dev/null
  done
  nb_stop $nb
  local probe="net_xenpv: net_xenpv0: vif 0 of domain" phase="net_xenpv: vif 0: phase"
  if grep -q "RTE_LOG_DEFAULT_LOGTYPE" "$RUN"/hxl-*.log; then
    out="a log line names RTE_LOG_DEFAULT_LOGTYPE"
  elif grep -qF "$probe" "$RUN/hxl-notice.log"; then
    out="info lines shown at notice"
  elif ! grep -qF "$probe" "$RUN/hxl-info.log"; then
    out="--log-level=pmd.net.xenpv:info does not show '$probe'"
  fi
  if [[ -z $out ]]; then
    pass $name "--log-level=pmd.net.xenpv:info shows '$probe', notice does not"
  else
    fail $name "$out (logs $RUN/hxl-*.log)"
  fi
  name=pmd-log-type-debug
  if grep -qF "$phase" "$RUN/hxl-info.log"; then
    fail $name "debug lines shown at info (log $RUN/hxl-info.log)"
  elif ! grep -qF "$phase" "$RUN/hxl-debug.log"; then
    fail $name "--log-level=pmd.net.xenpv:debug does not show the library's debug lines ('$phase') (log $RUN/hxl-debug.log)"
  else
    pass $name "--log-level=pmd.net.xenpv:debug adds the library's debug lines: '$(grep -m1 -F "$phase" "$RUN/hxl-debug.log")'"
  fi
}

# ---- net_xenpv: a vif that comes back with another mac (xl network-detach,
# then network-attach mac=...): the port's mac follows, as testpmd's `show
# port info` and dpdk-telemetry.py's /ethdev/info both report, and the
# driver says so in its log.
check_pmd_reattach_mac() {
  local name=pmd-reattach-mac old=00:16:3e:00:00:11 new=00:16:3e:00:00:21
  nb_start hxr --fault reattach --fault-after 3000 --fault-arg 1 --mac $old \
    --reattach-mac $new || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  ts_start hxr-tp "net_xenpv0,backend=sim:$RUN/hxr.sock" --forward-mode=txonly ||
    { fail $name "testpmd did not start (log $TS_LOG)"; nb_stop $nb; return; }
  ts_cmd "show port info 0"
  local before
  before=$(sed -nE 's/^MAC address: *([0-9A-Fa-f:]+).*/\1/p' <<<"$TS_OUT" | tr 'A-F' 'a-f')
  ts_cmd "start"
  local i
  for ((i = 0; i < 300; i++)); do
    (($(grep -c "link state change event" "$TS_LOG") >= 2)) && break
    sleep 0.1
  done
  local lsc
  lsc=$(grep -c "link state change event" "$TS_LOG")
  ts_cmd "show port info 0"
  local after tele
  after=$(sed -nE 's/^MAC address: *([0-9A-Fa-f:]+).*/\1/p' <<<"$TS_OUT" | tr 'A-F' 'a-f')
  tele=$(telemetry "/ethdev/info,0" | python3 -c 'import json,sys; print(json.load(sys.stdin)["/ethdev/info"]["mac_addr"].lower())' 2>/dev/null)
  ts_cmd "stop"
  ts_quit
  nb_stop $nb
  local logged
  logged=$(grep -m1 -oE "the backend's mac is now $new \(was $old\)[^;]*; [a-z' ]+" "$TS_LOG")
  if [[ $before == "$old" && $after == "$new" && $tele == "$new" && $lsc -ge 2 && -n $logged ]]; then
    pass $name "port MAC $before -> $after after the re-attach ($lsc LSC events); telemetry /ethdev/info says $tele; logged '$logged'"
  else
    fail $name "port MAC before '$before', after '$after', telemetry '$tele', $lsc LSC events, log line '${logged:-none}' (log $TS_LOG)"
  fi
}
