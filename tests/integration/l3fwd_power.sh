#!/bin/bash
# l3fwd-power over net_xenpv against xpv-netback in bridge mode: DPDK's own
# power-aware application (built from Debian's dpdk-doc sources by
# examples/meson.build).
# Sourced by tests/integration/pmd.sh, which sets EAL, PMD_SO and TP_MAC.
#
# l3fwd-power (DPDK 22.11 examples/l3fwd-power/main.c), what the checks rely on:
# - --interrupt-only (main_intr_loop): after 300 empty polls of its queues it
#   enables their rx interrupts, sleeps in rte_epoll_wait() with a 10 ms
#   timeout, disables them and polls again. It logs "lcore N is waked up from
#   rx interrupt on port P queue Q" only when rte_epoll_wait() returned an
#   event, never on the timeout; "lcore N sleeps until interrupt triggers" only
#   on the first sleep after such a wake-up.
# - It forwards through rte_eth_tx_buffer() (sent when 32 frames are held) and
#   flushes that buffer at the top of its loop when 100 us passed since the last
#   flush. Between the last frame of a burst and sleeping it runs that loop at
#   least 290 times (empty polls 11..299 each wait 1 us), so nothing stays in
#   the buffer across a sleep: every frame of a round must be back before the
#   round's idle gap, and the checks count exactly, round by round.
# - --pmd-mgmt=monitor|pause (main_telemetry_loop): a plain poll loop that
#   flushes the same way; rte_power_ethdev_pmgmt_queue_enable() adds an RX
#   callback that sleeps on the PMD's get_monitor_addr() address (monitor, needs
#   WAITPKG or MONITORX in the CPU) or pauses (pause) after empty polls. When
#   that call fails, l3fwd-power exits with
#   "rte_power_ethdev_pmgmt_queue_enable: err=E".
# - It opens one TX queue per lcore and the RX queues of --config: with
#   pmd.sh's -l 0-1 and --config (0,0,1) that is 1 RX and 2 TX queues, which
#   net_xenpv serves on one netif queue. Lcore 1 (the thread named
#   rte-worker-1) serves the queue; the main lcore has none and waits in
#   rte_eal_mp_wait_lcore(). The worker's CPU time says whether the queue
#   sleeps.

L3FWD=$BUILD/examples/l3fwd-power  # examples/meson.build builds it from dpdk-doc's sources
L3FWD_ROUNDS=20    # traffic, then idle, this many times
L3FWD_ROUND_N=512  # frames per round: 16 bursts of 32
L3FWD_GAP_MS=400   # idle after each round

L3FWD_EAL=("${EAL[@]}")  # pmd.sh's: -l 0-1

# The thread id of the lcore thread named $2 of process $1 (empty if none).
l3fwd_thread() {
  local t
  for t in /proc/$1/task/*; do
    [[ $(cat "$t/comm" 2>/dev/null) == "$2" ]] && { echo "${t##*/}"; return 0; }
  done
  return 1
}

l3fwd_present() {
  [[ -x $L3FWD ]] || { echo "$L3FWD was not built (it needs /usr/share/dpdk/examples/l3fwd-power: package dpdk-doc)"; return 1; }
}

# l3fwd_start NAME SOCK [l3fwd-power mode options...]: l3fwd-power on
# net_xenpv (queue 0 on lcore 1, its only one), log $RUN/NAME.log; sets L3_PID. Returns
# non-zero when it did not reach its main loop (it may have exited on purpose).
l3fwd_start() {
  local name=$1 sock=$2; shift 2
  stdbuf -oL -eL "$L3FWD" "${L3FWD_EAL[@]}" --file-prefix "xpvit$$$name" --vdev "net_xenpv0,backend=sim:$sock" \
    --log-level=user1:info --log-level=lib.power:debug -- -p 0x1 -P --config="(0,0,1)" --parse-ptype \
    "$@" >"$RUN/$name.log" 2>&1 &
  L3_PID=$!
  PIDS+=("$L3_PID")
  wait_log "$RUN/$name.log" "entering main [a-z]+ loop on lcore 1" "$L3_PID" 400
}

l3fwd_stop() {
  kill -INT "$L3_PID" 2>/dev/null
  local i
  for i in $(seq 100); do kill -0 "$L3_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$L3_PID" 2>/dev/null
  wait "$L3_PID" 2>/dev/null
}


# l3fwd_sample PID TID LOG OUT: every 10 ms, one line "t cpu_ticks wake_ups"
# (CLOCK_MONOTONIC seconds, the thread's utime + stime, "waked up" lines in
# LOG so far) until PID exits.
l3fwd_sample() {
  python3 - "$@" <<'EOF' &
import os, sys, time
pid, tid, log, out = sys.argv[1:]
stat = "/proc/%s/task/%s/stat" % (pid, tid)
wakes, pos = 0, 0
with open(out, "w") as o:
    while os.path.exists(stat):
        try:
            f = open(stat).read().rsplit(")", 1)[1].split()
        except OSError:
            break
        with open(log, "rb") as lf:
            lf.seek(pos)
            chunk = lf.read()
        # whole lines only
        end = chunk.rfind(b"\n") + 1
        wakes += chunk[:end].count(b"waked up from rx interrupt")
        pos += end
        # fields 14 and 15 of stat (utime, stime); [0] here is field 3
        o.write("%.6f %d %d\n" % (time.monotonic(), int(f[11]) + int(f[12]), wakes))
        o.flush()
        time.sleep(0.01)
EOF
  SAMPLER_PID=$!
  PIDS+=("$SAMPLER_PID")
  wait_log "$4" . "$SAMPLER_PID" 300  # its first sample is taken
}

# l3fwd_rounds_report GEN_JSON SAMPLES N: per round: frames back, wake-ups
# logged between its first frame out and its last frame back; the lcore's
# CPU time over the idle gaps (from 50 ms into each gap to its end: l3fwd-power
# is asleep by then), and the wake-ups logged there. Prints "ok|bad <details>".
l3fwd_rounds_report() {
  python3 - "$@" <<'EOF'
import json, os, statistics, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[3])
s = [tuple(map(float, l.split())) for l in open(sys.argv[2]) if l.strip()]
hz = os.sysconf("SC_CLK_TCK")
def at_or_before(t):
    b = [x for x in s if x[0] <= t]
    return b[-1] if b else None
def at_or_after(t):
    a = [x for x in s if x[0] >= t]
    return a[0] if a else None
rounds = d.get("rounds", [])
bad = []
if len(rounds) != n:
    bad.append("%d rounds of %d ran" % (len(rounds), n))
no_wake, short, lat = [], [], []
idle_ticks = idle_s = gap_wakes = 0.0
for i, r in enumerate(rounds, 1):
    if r["received"] != r["sent"] or r["lost"]:
        short.append("round %d: %d of %d back, %d lost" % (i, r["received"], r["sent"], r["lost"]))
    b, a = at_or_before(r["first_tx"]), at_or_after(r["last_rx"])
    if b is None or a is None or a[2] - b[2] < 1:
        no_wake.append(i)
    lat.append((r["first_rx"] - r["first_tx"]) * 1e6)
    g0, g1 = at_or_after(r["gap_start"] + 0.05), at_or_before(r["gap_end"])
    if g0 and g1 and g1[0] > g0[0]:
        idle_ticks += g1[1] - g0[1]
        idle_s += g1[0] - g0[0]
        gap_wakes += g1[2] - g0[2]
cpu = 100.0 * idle_ticks / hz / idle_s if idle_s else -1
if short:
    bad.append("frames missing: " + "; ".join(short[:5]))
if no_wake:
    bad.append("no wake-up logged in %d of %d rounds (rounds %s)" % (len(no_wake), len(rounds), ",".join(map(str, no_wake[:20]))))
# TX completions waiting must not wake an idle queue: at most one stray
# wake-up per gap on average (a storm of empty wake-ups is thousands).
if gap_wakes > len(rounds):
    bad.append("%d wake-ups in the idle gaps (nothing arrived there)" % gap_wakes)
if idle_s < 0.5 * n * 0.3:
    bad.append("only %.1f s of idle gaps sampled" % idle_s)
elif not 0 <= cpu < 5:
    bad.append("lcore thread used %.1f%% of a core in the idle gaps" % cpu)
wakes = s[-1][2] if s else 0
print("%s %d rounds of %d frames, %d back (%d bad, %d out of order); wake-ups logged %d (%d in %.1f s of idle gaps), lcore CPU in the gaps %.1f%% of a core; first frame back after %.0f us median (not a limit: see make bench)%s" % (
    "bad" if bad else "ok", len(rounds), rounds[0]["sent"] if rounds else 0, d["received"], d["bad_payload"], d["out_of_order"],
    wakes, gap_wakes, idle_s, cpu, statistics.median(lat) if lat else -1, ": " + "; ".join(bad) if bad else ""))
EOF
}

# ---- --interrupt-only: 20 rounds of (traffic, idle); every round wakes the
# lcore on the queue's event (not on l3fwd-power's 10 ms timeout), every
# frame comes back, and the lcore sleeps through the gaps
check_l3fwd_power_interrupt() {
  local name=pmd-l3fwd-power-interrupt out
  out=$(l3fwd_present) || { fail $name "$out"; return; }
  nb_start l3br1 --mode bridge || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  if ! l3fwd_start l3-intr "$RUN/l3br1.sock" --interrupt-only; then
    fail $name "l3fwd-power did not reach its main loop (log $RUN/l3-intr.log)"
    l3fwd_stop; nb_stop $nb; return
  fi
  # lcore 1 serves the queue: the thread rte-worker-1.
  local tid
  tid=$(l3fwd_thread $L3_PID rte-worker-1) || {
    fail $name "no thread named rte-worker-1 in l3fwd-power ($L3_PID)"
    l3fwd_stop; nb_stop $nb; return
  }
  l3fwd_sample $L3_PID $tid "$RUN/l3-intr.log" "$RUN/l3-intr.samples"
  # 1.1.1.1 routes to port 0: l3fwd-power sends every frame back out of its
  # only port, towards 02:00:00:00:00:00, which the bridge floods to us.
  timeout 120 "$PKTGEN" --platform "sim:$RUN/l3br1.sock" --role gen --proto udp --dst-mac $TP_MAC \
    --dst-ip 1.1.1.1 --count $L3FWD_ROUND_N --rounds $L3FWD_ROUNDS --gap-ms $L3FWD_GAP_MS \
    --size 60-1400 --window 32 --mode event --json "$RUN/l3-intr-gen.json" --quiet >"$RUN/l3-intr-gen.log" 2>&1
  local rc=$?
  sleep 0.05
  l3fwd_stop
  wait "$SAMPLER_PID" 2>/dev/null
  nb_stop $nb
  local report
  report=$(l3fwd_rounds_report "$RUN/l3-intr-gen.json" "$RUN/l3-intr.samples" $L3FWD_ROUNDS 2>&1)
  if ((rc == 0)) && [[ $report == ok* ]]; then
    pass $name "l3fwd-power --interrupt-only:${report#ok}"
  else
    fail $name "xpv-pktgen exit $rc; ${report#bad } (logs $RUN/l3-intr.log $RUN/l3-intr-gen.log)"
  fi
}

# The CPU can sleep on an address (what --pmd-mgmt=monitor needs): WAITPKG
# (umonitor/umwait) or AMD's MONITORX, as rte_cpu_get_intrinsics_support() sees.
cpu_can_monitor() { grep -qwE 'waitpkg|mwaitx' /proc/cpuinfo; }

# l3fwd_forward NAME SOCK COUNT: COUNT UDP frames through l3fwd-power; every
# one must come back. Prints the pktgen summary; non-zero exit on loss.
l3fwd_forward() {
  timeout 120 "$PKTGEN" --platform "sim:$2" --role gen --proto udp --dst-mac $TP_MAC --dst-ip 1.1.1.1 \
    --count "$3" --rounds 5 --gap-ms 200 --size 60-1400 --window 32 --mode event --json "$RUN/$1-gen.json" \
    --quiet >"$RUN/$1-gen.log" 2>&1
  local rc=$?
  local got bad
  got=$(json "$RUN/$1-gen.json" "d['received']" 2>/dev/null || echo 0)
  bad=$(json "$RUN/$1-gen.json" "d['bad_payload'] + d['out_of_order'] + d['lost']" 2>/dev/null || echo 1)
  echo "$got of $(($3 * 5)) UDP frames back in 5 rounds with 200 ms idle gaps ($bad lost or bad)"
  ((rc == 0 && got == $3 * 5 && bad == 0))
}

# ---- --pmd-mgmt=pause and =monitor: rte_power_pmd_mgmt's RX callbacks over
# net_xenpv; each forwards everything. Monitor mode sleeps on the address
# get_monitor_addr() gives (the RX ring's response producer) where the CPU can.
check_l3fwd_power_pmd_mgmt() {
  local mode out
  out=$(l3fwd_present) || { fail pmd-l3fwd-power-pause "$out"; fail pmd-l3fwd-power-monitor "$out"; return; }
  for mode in pause monitor; do
    local name=pmd-l3fwd-power-$mode
    nb_start "l3br-$mode" --mode bridge || { fail $name "netback did not start"; continue; }
    local nb=$NB_PID
    if [[ $mode == monitor ]] && ! cpu_can_monitor; then
      # rte_power_pmd_mgmt refuses monitor mode first for the CPU (before it
      # asks the PMD for get_monitor_addr): l3fwd-power must say so and stop.
      l3fwd_start "l3-$mode" "$RUN/l3br-$mode.sock" --pmd-mgmt=$mode
      local i
      for i in $(seq 300); do kill -0 $L3_PID 2>/dev/null || break; sleep 0.1; done
      l3fwd_stop
      nb_stop $nb
      local why
      why=$(grep -m1 -oE "Monitoring intrinsics are not supported" "$RUN/l3-$mode.log")
      if grep -qE "rte_power_ethdev_pmgmt_queue_enable: err=-95" "$RUN/l3-$mode.log" && [[ -n $why ]]; then
        pass $name "NOT EXERCISED: this CPU has neither WAITPKG nor MONITORX (/proc/cpuinfo); l3fwd-power --pmd-mgmt=monitor reports it and exits: \"$why\", queue enable err=-95 (ENOTSUP)"
      else
        fail $name "CPU without WAITPKG/MONITORX, but l3fwd-power did not report it: $(grep -m2 -E 'pmgmt|power|Monitor' "$RUN/l3-$mode.log" | tr '\n' ' ') (log $RUN/l3-$mode.log)"
      fi
      continue
    fi
    if ! l3fwd_start "l3-$mode" "$RUN/l3br-$mode.sock" --pmd-mgmt=$mode; then
      fail $name "l3fwd-power did not reach its main loop: $(grep -m1 -E 'err=|EAL: Error|Cause' "$RUN/l3-$mode.log") (log $RUN/l3-$mode.log)"
      l3fwd_stop; nb_stop $nb; continue
    fi
    out=$(l3fwd_forward "l3-$mode" "$RUN/l3br-$mode.sock" 2000)
    local rc=$?
    l3fwd_stop
    nb_stop $nb
    if ((rc == 0)); then
      pass $name "l3fwd-power --pmd-mgmt=$mode: $out"
    else
      fail $name "l3fwd-power --pmd-mgmt=$mode: $out (logs $RUN/l3-$mode.log $RUN/l3-$mode-gen.log)"
    fi
  done
}
