#!/bin/bash
# net_xenpv's idle_sleep device argument, through Debian's testpmd over xpv-netback's bridge:
# an idle forwarding lcore sleeps instead of spinning, and traffic still arrives whole.
# Sourced by tests/integration/run.sh after pmd.sh (EAL, PKTGEN, TP_MAC) and
# testpmd_session.sh (ts_start, ts_cmd, read_xstats).

# idle_cpu_pct PID SECONDS: the CPU time PID's threads took over SECONDS of wall time, in % of
# one CPU (/proc/PID/stat fields 14 and 15, utime and stime, summed over the process).
idle_cpu_pct() {
  local t0 t1 w0 w1
  t0=$(awk '{ print $14 + $15 }' "/proc/$1/stat") w0=$EPOCHREALTIME
  sleep "$2"
  t1=$(awk '{ print $14 + $15 }' "/proc/$1/stat") w1=$EPOCHREALTIME
  python3 -c "print('%.0f' % (100.0 * ($t1 - $t0) / $(getconf CLK_TCK) / ($w1 - $w0)))"
}

# idle_gen NAME PKTGEN_ARGS...: xpv-pktgen's gen role (UDP to testpmd) against the socket
# RUN/NAME.sock; sets GEN_RC (its exit status), GEN_GOT (frames back), GEN_BAD (damaged or out
# of order) and GEN_SECS (its seconds) from RUN/NAME-gen.json.
idle_gen() {
  local name=$1
  shift
  timeout 300 "$PKTGEN" --platform "sim:$RUN/$name.sock" --role gen --proto udp --dst-mac $TP_MAC \
    "$@" --json "$RUN/$name-gen.json" --quiet >"$RUN/$name-gen.log" 2>&1
  GEN_RC=$?
  GEN_GOT=$(json "$RUN/$name-gen.json" "d['received']" 2>/dev/null || echo 0)
  GEN_BAD=$(json "$RUN/$name-gen.json" "d['bad_payload'] + d['out_of_order']" 2>/dev/null || echo 1)
  GEN_SECS=$(json "$RUN/$name-gen.json" "d['seconds']" 2>/dev/null || echo "?")
}

# idle_forwarding NAME US: xpv-netback's bridge on RUN/tpNAME.sock and testpmd (macswap) on it
# with idle_sleep=US, forwarding started; NB_PID is the netback's. Returns 1 with IDLE_ERR saying
# what did not start (nothing left running).
idle_forwarding() {
  nb_start "tp$1" --mode bridge || { IDLE_ERR="netback did not start"; return 1; }
  if ! ts_start "tp-$1" "net_xenpv0,backend=sim:$RUN/tp$1.sock,idle_sleep=$2" --forward-mode=macswap; then
    IDLE_ERR="testpmd with idle_sleep=$2 did not start (log $TS_LOG)"
    nb_stop $NB_PID
    return 1
  fi
  ts_cmd "start"
}

# idle_session NAME DEVARGS: testpmd (macswap) on the bridge, forwarding started, idle for 3 s;
# sets IDLE_CPU (its CPU % over those seconds). Returns 1 when testpmd did not come up.
idle_session() {
  ts_start "$1" "net_xenpv0,backend=sim:$RUN/tpidle.sock$2" --forward-mode=macswap || return 1
  ts_cmd "start"
  sleep 0.5  # the forwarding lcore is polling
  IDLE_CPU=$(idle_cpu_pct "$TS_PID" 3)
}

# ---- idle_sleep=200: an idle lcore sleeps (the forwarding lcore alone would take a whole CPU
# spinning), every sleep counted in rx_q0_idle_sleeps, and 100000 frames forwarded with none
# lost or damaged (a sleep only delays what arrives meanwhile: the ring holds it).
check_pmd_idle_sleep() {
  local name=pmd-idle-sleep
  nb_start tpidle --mode bridge || { fail $name "netback did not start"; return; }
  local nb=$NB_PID spin_cpu
  # The same session without the argument first: what the lcore costs when it spins.
  if ! idle_session tp-spin ""; then
    fail $name "testpmd did not start (log $TS_LOG)"
    nb_stop $nb
    return
  fi
  spin_cpu=$IDLE_CPU
  ts_quit
  if ! idle_session tp-idle ",idle_sleep=200"; then
    fail $name "testpmd with idle_sleep=200 did not start (log $TS_LOG)"
    nb_stop $nb
    return
  fi
  local idle_cpu=$IDLE_CPU sleeps_idle
  read_xstats
  sleeps_idle=$(xstat rx_q0_idle_sleeps)
  idle_gen tpidle --count 100000 --size 60-1500 --window 128
  local rc=$GEN_RC got=$GEN_GOT bad=$GEN_BAD
  read_xstats
  local sleeps_after rx
  sleeps_after=$(xstat rx_q0_idle_sleeps) rx=$(xstat rx_good_packets)
  ts_quit
  nb_stop $nb
  # Spinning, the forwarding lcore takes a whole CPU; sleeping up to 200 us after 64 empty polls, a
  # small part of one. Half a CPU is far from both.
  if ((rc == 0 && got == 100000 && bad == 0 && ${sleeps_idle:-0} > 100 && ${idle_cpu:-100} < 50 &&
    ${sleeps_after:-0} >= ${sleeps_idle:-0})); then
    pass $name "idle 3 s: testpmd took ${idle_cpu}% of a CPU with idle_sleep=200 (${spin_cpu}% without), $sleeps_idle sleeps counted; then 100000 UDP frames of 60..1500 bytes reflected, all verified ($rx received, $sleeps_after sleeps in all)"
  else
    fail $name "exit $rc, $got of 100000 back, $bad bad; idle CPU ${idle_cpu}% (without idle_sleep ${spin_cpu}%), sleeps $sleeps_idle idle, $sleeps_after in all (logs $RUN/tpidle-gen.log $TS_LOG)"
  fi
}

# ---- idle_sleep=1000000 (the longest, a second) with frames one at a time: each frame reaches
# testpmd while its lcore sleeps (it polled 64 times in vain since the last one) and must end
# that sleep, not wait out the second. A sleep on the queue's event channel (armed as for Rx
# interrupts) ends when the frame arrives: counted in rx_q0_idle_sleeps_woken. A plain timed
# sleep never ends early: the frames would take up to a second each, and nothing would be
# counted; a sleep that cannot take the second (ppoll's EINVAL) would not sleep at all.
check_pmd_idle_wake() {
  local name=pmd-idle-wake n=2000
  idle_forwarding wake 1000000 || { fail $name "$IDLE_ERR"; return; }
  local nb=$NB_PID
  idle_gen tpwake --count $n --window 1
  local rc=$GEN_RC got=$GEN_GOT bad=$GEN_BAD secs=$GEN_SECS
  read_xstats
  local sleeps woken
  sleeps=$(xstat rx_q0_idle_sleeps) woken=$(xstat rx_q0_idle_sleeps_woken)
  ts_quit
  nb_stop $nb
  # Most frames find the lcore asleep (a round trip through xpv-netback outlasts 64 empty
  # polls); half of them is far from none.
  if ((rc == 0 && got == n && bad == 0 && ${woken:-0} >= n / 2)); then
    pass $name "$n UDP frames one at a time through testpmd with idle_sleep=1000000: $woken of $sleeps sleeps ended by a frame, all $n back and verified in $secs s"
  else
    fail $name "exit $rc, $got of $n back, $bad bad; sleeps $sleeps, ended by a frame ${woken:-none} (logs $RUN/tpwake-gen.log $TS_LOG)"
  fi
}

# ---- What an idle sleep costs in system calls. On Xen each one is a trip through the
# hypervisor that the vCPU pays while it forwards nothing (the profiles of issue 11: two thirds
# of the forwarder's vCPU in the evtchn device's read, the unmask and ppoll). A sleep that no
# event ends needs one: the ppoll. Reading the event channel before it (ppoll on the
# level-triggered fd returns at once when an event fired) and after it (ppoll said nothing
# fired) finds nothing. strace counts the system calls of the forwarding lcore's thread alone
# (rte-worker-1) while testpmd idles with idle_sleep=1000.
check_pmd_idle_syscalls() {
  local name=pmd-idle-syscalls
  idle_forwarding sys 1000 || { fail $name "$IDLE_ERR"; return; }
  local nb=$NB_PID
  sleep 0.5
  local t tid=
  for t in /proc/"$TS_PID"/task/*; do
    [[ $(<"$t/comm") == rte-worker-1 ]] && tid=${t##*/}
  done
  if [[ -z $tid ]]; then
    fail $name "testpmd (pid $TS_PID) has no thread named rte-worker-1 (log $TS_LOG)"
    ts_quit
    nb_stop $nb
    return
  fi
  read_xstats
  local s0 s1
  s0=$(xstat rx_q0_idle_sleeps)
  # -p TID attaches that thread alone; one line per system call it made.
  timeout -s INT 2 strace -qq -p "$tid" -o "$RUN/tpsys.strace" 2>"$RUN/tpsys.strace-err"
  read_xstats
  s1=$(xstat rx_q0_idle_sleeps)
  ts_quit
  nb_stop $nb
  local calls sleeps=$((${s1:-0} - ${s0:-0})) by
  calls=$(grep -cE '^[a-z_0-9]+\(' "$RUN/tpsys.strace")
  by=$(sed -nE 's/^([a-z_0-9]+)\(.*/\1/p' "$RUN/tpsys.strace" | sort | uniq -c | sort -rn |
    awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1 }')
  # strace stops the thread at each call, so fewer sleeps fit in the 2 s than without it; a
  # few hundred are plenty. 1.2 a sleep leaves room for the calls of a sleep that strace's
  # attach or detach cut in two, not for a second call in every sleep.
  if ((sleeps >= 200 && calls * 10 <= sleeps * 12)); then
    pass $name "idle testpmd with idle_sleep=1000: $calls system calls for $sleeps sleeps in 2 s of its forwarding lcore ($by)"
  else
    fail $name "idle testpmd with idle_sleep=1000: $calls system calls for $sleeps sleeps in 2 s of its forwarding lcore (${by:-none}; want at least 200 sleeps and at most 1.2 calls each; strace output $RUN/tpsys.strace, errors $RUN/tpsys.strace-err)"
  fi
}
