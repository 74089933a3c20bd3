#!/bin/bash
# SPDX-License-Identifier: MIT
# The e2e harness's request to dom0 (xpv_dom0 in e2e/xen/checks/lib.sh), run against stand-ins
# of the xenstore tools: a "dom0" that answers a request some seconds after it was written, a
# watch that prints a line per change, and a read that logs when it ran. What a measurement
# relies on: while dom0 runs an iperf3 stream for tcp-windows or tcp-through-domu
# (tcp_dom0_iperf in e2e/xen/checks/tcp.sh), no process of the harness starts in the domU (each
# takes the PV domU's vCPU for tens of milliseconds, from a DPDK lcore more than from the kernel
# bridge's softirq: docs/measurements.md, run PF). And the answer still comes when the watch has
# ended. Prints "CHECK <name> PASS|FAIL ..." lines (scripts/run-tests.sh, suite e2e-lib).
set -u
cd "$(dirname "$0")/../.."

ANSWER_AFTER=4  # seconds "dom0" takes to answer

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/bin" "$T/store" "$T/run"
export STUB=$T

# xenstore-read PATH: the value stored at PATH; each call is logged with its time.
cat >"$T/bin/xenstore-read" <<'EOF'
#!/bin/bash
echo "$EPOCHREALTIME $1" >>"$STUB/reads"
f=$STUB/store/${1//\//_}
[[ -f $f ]] || exit 1
cat "$f"
EOF
# xenstore-write PATH VALUE; a request ("SEQ ACTION ARGS...") makes "dom0" answer it later.
cat >"$T/bin/xenstore-write" <<'EOF'
#!/bin/bash
printf '%s' "$2" >"$STUB/store/${1//\//_}"
[[ $1 == data/xpv/req ]] || exit 0
echo "$EPOCHREALTIME" >"$STUB/asked"
seq=${2%% *}
(
    sleep "$ANSWER_AFTER"
    echo "dom0 ran: ${2#* }" >"$STUB/store/data_xpv_out"
    echo "$EPOCHREALTIME" >"$STUB/answered"
    echo "$seq 0" >"$STUB/store/data_xpv_resp"
    echo data/xpv/resp >>"$STUB/events"
) </dev/null >/dev/null 2>&1 &
EOF
# xenstore-watch PATH: a line at once (armed), then one per change; with $STUB/watch-dies, the
# armed line only (a watch that ended).
cat >"$T/bin/xenstore-watch" <<'EOF'
#!/bin/bash
echo "$1"
[[ -e $STUB/watch-dies ]] && exit 0
touch "$STUB/events"
exec tail -n 0 -f "$STUB/events"
EOF
chmod +x "$T/bin/"*
export ANSWER_AFTER PATH=$T/bin:$PATH

# shellcheck source=/dev/null
. e2e/xen/checks/lib.sh
# shellcheck source=/dev/null
. e2e/xen/checks/tcp.sh
XPV_RUN_DIR=$T/run

# ask NAME COMMAND...: runs COMMAND (a request to "dom0") and sets OUT, RC, TOOK (seconds) and
# DURING (the reads between 0.5 s after the request and the answer).
ask() {
    rm -f "$T/reads" "$T/asked" "$T/answered" "$T/events" "$T/store/"*
    local t0=$EPOCHREALTIME
    OUT=$("$@")
    RC=$?
    TOOK=$(python3 -c "print('%.1f' % ($EPOCHREALTIME - $t0))")
    DURING=$(python3 - "$T" <<'EOF'
import sys
t = sys.argv[1]
try:
    asked = float(open(t + "/asked").read())
    answered = float(open(t + "/answered").read())
except OSError:
    print(-1)
    sys.exit()
reads = [float(l.split()[0]) for l in open(t + "/reads")]
print(sum(1 for r in reads if asked + 0.5 < r < answered))
EOF
)
}

check() {  # NAME CONDITION-STATUS DETAIL
    if (($2 == 0)); then echo "CHECK $1 PASS $3"; else echo "CHECK $1 FAIL $3"; fi
}

# The default: the answer is read every XPV_RPC_POLL (2) seconds while dom0 works. This is what
# the tcp checks must not do; it shows that the count below sees such reads.
ask xpv_dom0 iperf 3 c 1
[[ $RC == 0 && $OUT == "dom0 ran: iperf 3 c 1" && $DURING -ge 1 ]]
check rpc-default-reads-while-dom0-works $? "rc $RC, output '$OUT', $DURING reads in the ${ANSWER_AFTER} s dom0 took, answer after $TOOK s"

# tcp_dom0_iperf: no read while dom0 runs the stream, and the answer as soon as the watch fires.
ask tcp_dom0_iperf 3 c 1
[[ $RC == 0 && $OUT == "dom0 ran: iperf 3 c 1" && $DURING == 0 ]] &&
    python3 -c "import sys; sys.exit(0 if $TOOK < $ANSWER_AFTER + 1.5 else 1)"
check rpc-iperf-starts-no-process-while-dom0-works $? "rc $RC, output '$OUT', $DURING reads in the ${ANSWER_AFTER} s dom0 took, answer after $TOOK s"

# A watch that ended: the answer still comes, by reads once a second.
touch "$T/watch-dies"
ask tcp_dom0_iperf 3 c 1
rm -f "$T/watch-dies"
[[ $RC == 0 && $OUT == "dom0 ran: iperf 3 c 1" ]] &&
    python3 -c "import sys; sys.exit(0 if $TOOK < $ANSWER_AFTER + 2.5 else 1)"
check rpc-iperf-answered-when-the-watch-ended $? "rc $RC, output '$OUT', answer after $TOOK s"
