#!/bin/bash
# make soak: a bounded soak over xpv-netback, outside make test.
#   scripts/soak.sh [--build DIR] [--minutes N] [--reconnect-every S] [--queues Q]
# Two guests on xpv-netback --mode bridge: a reflector and a generator, Q queues each (default
# 4), frames of mixed sizes 60..9000 (IPv4/UDP, every payload verified), while the backend
# reconnects each vif every S seconds (default 60) for N minutes (default 10). Every 10 s it
# samples, for the three processes, resident memory, open file descriptors and mappings; and
# the generator's progress. At the end it asserts:
#  - everything the generator received was intact and in order (no bad payload, no frame
#    behind a later one), and every vif reconnected about once per S seconds;
#  - only frames in flight at reconnects were lost (a few windows per queue per reconnect,
#    and under 1% of those sent);
#  - resident memory, file descriptors and mappings are flat: after the first reconnects, the
#    peaks of the second half of the samples are no higher than those of the first half
#    (resident memory within --rss-slack-kb, default 2048);
#  - the library's teardown accounting: every granted page returned.
# Prints one "CHECK soak PASS|FAIL ..." line and keeps its samples in $RUN/soak.tsv.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD=build
MINUTES=10
EVERY=60
QUEUES=4
RSS_SLACK_KB=2048
while (($#)); do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --minutes) MINUTES=$2; shift 2 ;;
    --reconnect-every) EVERY=$2; shift 2 ;;
    --queues) QUEUES=$2; shift 2 ;;
    --rss-slack-kb) RSS_SLACK_KB=$2; shift 2 ;;
    *) echo "soak.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
for v in MINUTES EVERY QUEUES RSS_SLACK_KB; do
  [[ ${!v} =~ ^[0-9]+$ && ${!v} -gt 0 ]] || { echo "soak.sh: --${v,,} needs a positive number" >&2; exit 2; }
done
NETBACK=$BUILD/src/netback/xpv-netback
PKTGEN=$BUILD/examples/xpv-pktgen
for b in "$NETBACK" "$PKTGEN"; do
  [[ -x $b ]] || { echo "CHECK soak FAIL $b is missing (make build)"; exit 1; }
done
RUN=$(mktemp -d /tmp/xpv-soak.XXXXXX)
chmod 755 "$RUN"
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done' EXIT
SECS=$((MINUTES * 60))
WINDOW=256

"$NETBACK" --socket "$RUN/nb.sock" --mode bridge --fault reconnect --fault-every "$EVERY" \
  --fault-arg $((SECS / EVERY + 2)) --stats-file "$RUN/nb.json" --stats-interval 10 \
  >"$RUN/nb.log" 2>&1 &
NB=$!
PIDS+=("$NB")
for _ in $(seq 200); do grep -q "listening on" "$RUN/nb.log" 2>/dev/null && break; sleep 0.05; done
grep -q "listening on" "$RUN/nb.log" || { echo "CHECK soak FAIL xpv-netback did not start: $(tail -n 2 "$RUN/nb.log")"; exit 1; }

"$PKTGEN" --platform "sim:$RUN/nb.sock" --role reflect --queues "$QUEUES" --seconds $((SECS + 30)) \
  --json "$RUN/refl.json" >"$RUN/refl.log" 2>&1 &
REFL=$!
PIDS+=("$REFL")
line=""
for _ in $(seq 200); do
  line=$(grep -m1 "connected: domain" "$RUN/refl.log" 2>/dev/null) && break
  sleep 0.05
done
mac=$(sed -nE 's/.* mac ([0-9a-fA-F:]+) .*/\1/p' <<<"$line")
[[ -n $mac ]] || { echo "CHECK soak FAIL the reflector did not connect: $(tail -n 2 "$RUN/refl.log")"; exit 1; }
"$PKTGEN" --platform "sim:$RUN/nb.sock" --role gen --queues "$QUEUES" --count 0 --seconds "$SECS" \
  --size 60-9000 --proto udp --dst-mac "$mac" --window "$WINDOW" --expect-loss \
  --json "$RUN/gen.json" >"$RUN/gen.log" 2>&1 &
GEN=$!
PIDS+=("$GEN")

# sample PID: "rss_kb fds mappings" of a running process.
sample() {
  local rss fds maps
  rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null) || return 1
  fds=$(ls "/proc/$1/fd" 2>/dev/null | wc -l)
  maps=$(wc -l <"/proc/$1/maps" 2>/dev/null)
  echo "${rss:-0} $fds $maps"
}
echo -e "t\tnetback\treflector\tgenerator\tgen_progress" >"$RUN/soak.tsv"
t0=$SECONDS
while kill -0 "$GEN" 2>/dev/null; do
  sleep 10
  kill -0 "$GEN" 2>/dev/null || break
  echo -e "$((SECONDS - t0))\t$(sample "$NB")\t$(sample "$REFL")\t$(sample "$GEN")\t$(grep -E '^xpv-pktgen: [0-9]+s sent' "$RUN/gen.log" | tail -n1 | cut -d' ' -f2-)" >>"$RUN/soak.tsv"
done
wait "$GEN"
GEN_RC=$?
kill -INT "$REFL" 2>/dev/null
wait "$REFL"
REFL_RC=$?
kill -TERM "$NB" 2>/dev/null
wait "$NB"
NB_RC=$?
PIDS=()

python3 - "$RUN" "$EVERY" "$SECS" "$QUEUES" "$WINDOW" "$RSS_SLACK_KB" "$GEN_RC" "$REFL_RC" "$NB_RC" <<'EOF'
import json, sys
run, every, secs, queues, window, slack = sys.argv[1], *map(int, sys.argv[2:7])
gen_rc, refl_rc, nb_rc = map(int, sys.argv[7:10])
problems = []
try:
    g = json.load(open(run + "/gen.json"))
    r = json.load(open(run + "/refl.json"))
    nb = json.load(open(run + "/nb.json"))
except (OSError, ValueError) as e:
    print("CHECK soak FAIL no results (%s); logs in %s" % (e, run))
    sys.exit(1)
if gen_rc or refl_rc or nb_rc:
    problems.append("exit codes generator %d reflector %d netback %d" % (gen_rc, refl_rc, nb_rc))
for k in ("bad_payload", "out_of_order", "foreign", "stalled"):
    if g.get(k, 0):
        problems.append("%s %d" % (k, g[k]))
# Every vif reconnects every `every` seconds: both guests see about secs/every reconnects.
want = secs // every - 1
for name, d in (("generator", g), ("reflector", r)):
    if d["reconnects"] < want:
        problems.append("%s reconnected %d times (want at least %d)" % (name, d["reconnects"], want))
    if d["teardown_returned"] != d["teardown_pages"] or d["teardown_still_mapped"]:
        problems.append("%s teardown: %d pages, %d returned, %d still mapped" % (
            name, d["teardown_pages"], d["teardown_returned"], d["teardown_still_mapped"]))
# Loss only at reconnects: while a guest is away the generator loses what it has in flight (a
# window per queue), and after 1 s of silence the next window: a few windows per reconnect.
bound = (g["reconnects"] + r["reconnects"] + 2) * queues * window * 4
if g["lost"] > bound or g["lost"] > 0.01 * g["sent"]:
    problems.append("lost %d frames, more than %d (4 windows per queue per reconnect) or 1%% of those sent" % (
        g["lost"], bound))
if g["received"] < 0.5 * g["sent"]:
    problems.append("received %d of %d" % (g["received"], g["sent"]))
if nb["totals"]["fatal_errors"]:
    problems.append("netback fatal errors %d" % nb["totals"]["fatal_errors"])
# Flat: after every guest reconnected once, the highest resident memory, fds and mappings of
# the second half of the samples against those of the first half (a process's memory swings
# with what is queued at the moment of the sample; a leak raises the peaks).
rows = [l.rstrip("\n").split("\t") for l in open(run + "/soak.tsv")][1:]
rows = [(int(x[0]), [list(map(int, c.split())) for c in x[1:4]]) for x in rows if len(x) >= 4 and all(x[1:4])]
rows = [row for row in rows if row[0] >= every + 20]
flat = "no samples"
if len(rows) < 4:
    problems.append("too few samples to judge flatness (%d after the first reconnects)" % len(rows))
else:
    first, second = rows[:len(rows) // 2], rows[len(rows) // 2:]
    notes = []
    for i, name in enumerate(("netback", "reflector", "generator")):
        a = [max(row[1][i][k] for row in first) for k in range(3)]
        b = [max(row[1][i][k] for row in second) for k in range(3)]
        notes.append("%s rss %d/%d kB fds %d/%d maps %d/%d" % (name, a[0], b[0], a[1], b[1], a[2], b[2]))
        if b[0] - a[0] > slack or b[1] > a[1] or b[2] > a[2]:
            problems.append("%s grows: peak rss %d -> %d kB, fds %d -> %d, mappings %d -> %d" % (
                name, a[0], b[0], a[1], b[1], a[2], b[2]))
    flat = "peaks of %ds..%ds / %ds..%ds: %s" % (first[0][0], first[-1][0], second[0][0], second[-1][0],
                                                "; ".join(notes))
summary = ("%d min, %d queues, 60..9000-byte UDP frames through the bridge, reconnects every %ds "
           "(generator %d, reflector %d): %d sent, %d received intact and in order, %d lost at reconnects, "
           "%.0f Mbit/s; %s; teardown %d/%d pages returned" % (
               secs // 60, queues, every, g["reconnects"], r["reconnects"], g["sent"], g["received"],
               g["lost"], g.get("mbit_s", 0), flat, g["teardown_returned"], g["teardown_pages"]))
if problems:
    print("CHECK soak FAIL %s; %s (logs and samples in %s)" % ("; ".join(problems), summary, run))
    sys.exit(1)
print("CHECK soak PASS %s (samples in %s/soak.tsv)" % (summary, run))
EOF
