#!/bin/bash
# Static grants (issue 12; netif.h control ring, ADD/DEL_GREF_MAPPING) through
# real processes: the same traffic through xpv-netback loopback with static
# grants (the default) and with --no-static-grants (a grant copy per buffer,
# Linux netback's answer). Sourced by tests/integration/run.sh.
#
# XPV_SGRANTS_PACKETS (default 1000000): packets per mode. On this project's
# 2-core VM the default takes about 25 s for both modes.

# sgrants_run TAG NETBACK-ARGS...: one mode; 0 when both processes ran.
sgrants_run() {
  local tag=$1
  shift
  nb_start "$tag" --mode loopback "$@" || return 1
  local nb=$NB_PID
  # 60..9000-byte frames (1 to 3 pages), four patterns that each tell the
  # pages of a frame apart (xpv-pktgen --pattern varied), every byte and
  # every frame's length checked; a window of 64 per queue stays within
  # netback's 1 MiB per-queue RX buffer, so nothing is dropped by design.
  timeout 300 "$PKTGEN" --platform "sim:$RUN/$tag.sock" --role gen --count "$SG_PACKETS" \
    --size 60-9000 --queues 4 --window 64 --pattern varied --json "$RUN/$tag-gen.json" \
    >"$RUN/$tag-gen.log" 2>&1
  local rc=$?
  nb_stop "$nb"
  return $rc
}

# ---- static grants on and off: identical payloads, no grant copy per packet
# when on, every registered page deregistered and returned at teardown
check_static_grants_million() {
  local name=static-grants-on-off SG_PACKETS=${XPV_SGRANTS_PACKETS:-1000000}
  local t0=$SECONDS rc_on rc_off
  sgrants_run sg-on
  rc_on=$?
  sgrants_run sg-off --no-static-grants
  rc_off=$?
  local secs=$((SECONDS - t0)) n=$SG_PACKETS
  # Both modes: every packet back, verified, nothing lost or refused; the
  # frontend's pages all returned (none still mapped by the backend).
  local common="(d['received'] == $n and d['bad_payload'] == 0 and d['foreign'] == 0
    and d['out_of_order'] == 0 and d['lost'] == 0 and d['backend_errors'] + d['tx_errors']
    + d['rx_errors'] + d['tx_dropped'] + d['rx_dropped'] == 0
    and d['teardown_still_mapped'] == 0 and d['teardown_returned'] == d['teardown_pages'])"
  local fe_on fe_off
  # The frontend's per-queue mode: each of the 4 queues ran on static
  # grants (on), or on grant copies (off), on its one connection.
  fe_on=$(json "$RUN/sg-on-gen.json" "($common and [(q['static_grant_connections'],
    q['grant_copy_connections']) for q in d['per_queue']] == [(1, 0)] * 4)" 2>/dev/null || echo 0)
  fe_off=$(json "$RUN/sg-off-gen.json" "($common and [(q['static_grant_connections'],
    q['grant_copy_connections']) for q in d['per_queue']] == [(0, 1)] * 4)" 2>/dev/null || echo 0)
  # xpv-netback: with static grants, at least one memcpy per packet each way
  # and (almost) no grant copy: at most one per 1000 packets (what a queue
  # may copy before its registration is answered), memcpy on every queue;
  # every page mapped by ADD_GREF_MAPPING unmapped by DEL_GREF_MAPPING (the
  # control ring's counters are the vif's). Without: no memcpy, a grant copy
  # per buffer, nothing registered.
  local nb_on nb_off
  nb_on=$(json "$RUN/sg-on.json" "(lambda t, q: t['tx_packets'] == $n and t['rx_packets'] == $n
    and t['fatal_errors'] == 0 and t['static_grant_copies'] >= 2 * $n
    and t['grant_copies'] * 1000 <= $n and t['static_grants_added'] > 0
    and t['static_grants_added'] == t['static_grants_removed']
    and len(q) == 4 and all(x['static_grant_copies'] > 0 for x in q))(d['totals'],
    d['vifs'][0]['per_queue'])" \
    2>/dev/null || echo 0)
  nb_off=$(json "$RUN/sg-off.json" "(lambda t: t['tx_packets'] == $n and t['rx_packets'] == $n
    and t['fatal_errors'] == 0 and t['static_grant_copies'] == 0 and t['grant_copies'] >= 2 * $n
    and t['static_grants_added'] == 0 and t['static_grants_removed'] == 0)(d['totals'])" \
    2>/dev/null || echo 0)
  # The same frames both ways: the same bytes delivered.
  local same
  same=$(python3 - "$RUN/sg-on.json" "$RUN/sg-off.json" <<'EOF' 2>/dev/null || echo 0
import json, sys
a, b = (json.load(open(f))["totals"] for f in sys.argv[1:])
print(int(a["rx_bytes"] == b["rx_bytes"] and a["tx_bytes"] == b["tx_bytes"] and a["rx_bytes"] > 0))
EOF
)
  local kept
  kept=$(cat "$RUN/sg-on-gen.log" "$RUN/sg-off-gen.log" | grep -c "kept (never reused)")
  local summary
  summary=$(python3 - "$RUN/sg-on.json" "$RUN/sg-off.json" "$RUN/sg-on-gen.json" "$n" <<'EOF' 2>/dev/null
import json, sys
on, off = (json.load(open(f))["totals"] for f in sys.argv[1:3])
g = json.load(open(sys.argv[3]))
n = int(sys.argv[4])
print(f"on: {on['static_grant_copies']} memcpy / {on['grant_copies']} grant copies "
      f"({on['grant_copies'] / n:.6f} per packet), {on['static_grants_added']} grants added, "
      f"{on['static_grants_removed']} removed; off: {off['static_grant_copies']} memcpy / "
      f"{off['grant_copies']} grant copies; teardown {g['teardown_returned']}/{g['teardown_pages']} "
      f"pages returned, {g['teardown_still_mapped']} still mapped")
EOF
)
  if ((rc_on == 0 && rc_off == 0 && fe_on == 1 && fe_off == 1 && nb_on == 1 && nb_off == 1 &&
    same == 1 && kept == 0)); then
    pass $name "$n packets each way per mode verified byte by byte, in ${secs} s; $summary"
  else
    fail $name "exit on $rc_on off $rc_off; frontend on $fe_on off $fe_off; netback on $nb_on" \
      "off $nb_off; same bytes $same; 'kept' warnings $kept; $summary (logs $RUN/sg-*)"
  fi
}
