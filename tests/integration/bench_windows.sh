#!/bin/bash
# make bench's windows driver (bench/alternate.py) through real processes: one round of short
# windows as the static-grants step runs them, one at 1500 bytes as the throughput step does, and
# a start that fails half-way. What make bench relies on: every setup
# forwards in its own window and in the mode it names, the windows come in the order the report
# pairs them, and nothing it started outlives it. Sourced by tests/integration/run.sh after
# pmd.sh (or pmd_session_alone): PMD_SO, NETBACK.

# alt_leftovers TAG: processes of the driver's run TAG still alive (its file prefixes and sockets
# carry the driver's pid, its logs folder TAG).
alt_leftovers() { pgrep -af -- "$RUN/$1" | grep -v pgrep; }

check_bench_windows() {
  local name=bench-windows dir=$RUN/alt-ok out=$RUN/alt-ok.json
  mkdir -p "$dir"
  timeout -k 10 240 python3 bench/alternate.py --pmd "$PMD_SO" --netback "$NETBACK" --logs "$dir" \
    --out "$out" --rounds 1 --seconds 0.3 --warm 0.2 >"$RUN/alt-ok.log" 2>&1
  local rc=$?
  local left
  left=$(alt_leftovers alt-ok)
  ((rc == 0)) || { fail $name "bench/alternate.py exited $rc: $(tail -3 "$RUN/alt-ok.log" | tr '\n' ' ')"; return; }
  [[ -z $left ]] || { fail $name "processes left running: $left"; return; }
  local verdict
  verdict=$(python3 - "$out" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
order = ["memif_a2b", "xenpv_tx", "memif_a2b", "xenpv_rx", "memif_a2b", "xenpv-copy_tx", "memif_a2b",
         "xenpv-copy_rx", "memif_a2b"]
got = [w["setup"] for w in d["windows"]]
if got != order:
    sys.exit(f"windows {got}, expected {order}")
slow = [w for w in d["windows"] if not w["mpps"] > 0.01]
if slow:
    sys.exit(f"windows without traffic: {slow}")
t = {k: json.load(open(p))["totals"] for k, p in d["netback"].items()}
# Each 64-byte frame is one copy, by memcpy or by grant copy: the counts are checked against the
# frames netback moved, not against a rate (a loaded machine moves fewer in a window). With static
# grants every TX frame is copied by memcpy; on RX only the ring of buffers the frontend posted at
# connect, before its pools were registered, may have been filled by grant copy (256: one ring).
for k in ("xenpv_tx", "xenpv_rx", "xenpv-copy_tx", "xenpv-copy_rx"):
    frames = t[k]["tx_packets"] if k.endswith("_tx") else t[k]["rx_packets"]
    by_memcpy, by_grant_copy = t[k]["static_grant_copies"], t[k]["grant_copies"]
    if k.startswith("xenpv-copy"):  # --no-static-grants: grant copies only
        ok = frames > 0 and by_memcpy == 0 and by_grant_copy == frames
    else:
        ok = frames > 0 and by_memcpy + by_grant_copy == frames and by_grant_copy <= (256 if k == "xenpv_rx" else 0)
    if not ok:
        sys.exit(f"{k}: {frames} frames, {by_memcpy} copies by memcpy, {by_grant_copy} grant copies")
print(" ".join(f"{w['setup']} {w['mpps']:.2f}" for w in d["windows"]) + "; copies by memcpy / grant copy: " +
      ", ".join(f"{k} {t[k]['static_grant_copies']}/{t[k]['grant_copies']}" for k in t))
EOF
  ) || { fail $name "$verdict"; return; }
  pass $name "9 windows in order, Mpps: $verdict (every frame copied once: with static grants by memcpy, but for at most the RX ring posted before registration; with --no-static-grants by grant copy); nothing left running"
}

# make bench's throughput windows at 1500 bytes (--size, --setups xenpv_tx,xenpv_rx): only the
# setups asked for take turns with memif, and every one of them forwards 1500-byte frames
# (xpv-netback's byte and packet totals, memif's receiver's RX-bytes over RX-packets).
check_bench_windows_size() {
  local name=bench-windows-size dir=$RUN/alt-size out=$RUN/alt-size.json
  mkdir -p "$dir"
  timeout -k 10 240 python3 bench/alternate.py --pmd "$PMD_SO" --netback "$NETBACK" --logs "$dir" \
    --out "$out" --rounds 1 --seconds 0.3 --warm 0.2 --size 1500 --setups xenpv_tx,xenpv_rx \
    >"$RUN/alt-size.log" 2>&1
  local rc=$? left verdict
  left=$(alt_leftovers alt-size)
  ((rc == 0)) || { fail $name "bench/alternate.py exited $rc: $(tail -3 "$RUN/alt-size.log" | tr '\n' ' ')"; return; }
  [[ -z $left ]] || { fail $name "processes left running: $left"; return; }
  verdict=$(python3 - "$out" "$dir/alternate-memif-b.testpmd.log" 2>&1 <<'EOF2'
import json, re, sys
d = json.load(open(sys.argv[1]))
order = ["memif_a2b", "xenpv_tx", "memif_a2b", "xenpv_rx", "memif_a2b"]
got = [w["setup"] for w in d["windows"]]
if got != order or d.get("size") != 1500:
    sys.exit(f"size {d.get('size')}, windows {got}, expected 1500 and {order}")
if any(not w["mpps"] > 0.01 for w in d["windows"]):
    sys.exit(f"windows without traffic: {d['windows']}")
t = {k: json.load(open(p))["totals"] for k, p in d["netback"].items()}
sizes = {"xenpv_tx": t["xenpv_tx"]["tx_bytes"] / t["xenpv_tx"]["tx_packets"],
         "xenpv_rx": t["xenpv_rx"]["rx_bytes"] / t["xenpv_rx"]["rx_packets"]}
stats = re.findall(r"RX-packets:\s+(\d+)\s+RX-missed:\s+\d+\s+RX-bytes:\s+(\d+)", open(sys.argv[2]).read())
p, b = map(int, stats[-1])
sizes["memif_a2b"] = b / p
if any(abs(v - 1500) > 0.5 for v in sizes.values()):
    sys.exit(f"bytes per frame {sizes}, expected 1500")
print(" ".join(f"{w['setup']} {w['mpps']:.2f}" for w in d["windows"]))
EOF2
  ) || { fail $name "$verdict"; return; }
  pass $name "5 windows in order, Mpps: $verdict; 1500 bytes a frame in xenpv TX, RX and memif; nothing left running"
}

# A setup that cannot start (here xpv-netback is not a netback): a message naming it, exit 1,
# and the memif pair already started is stopped.
check_bench_windows_failed_start() {
  local name=bench-windows-failed-start dir=$RUN/alt-bad
  mkdir -p "$dir"
  timeout -k 10 120 python3 bench/alternate.py --pmd "$PMD_SO" --netback /bin/false --logs "$dir" \
    --out "$RUN/alt-bad.json" --rounds 1 >"$RUN/alt-bad.log" 2>&1
  local rc=$? left
  left=$(alt_leftovers alt-bad)
  if ((rc != 1)); then
    fail $name "exit status $rc, expected 1: $(tail -3 "$RUN/alt-bad.log" | tr '\n' ' ')"
  elif ! grep -q "alternate-xenpv_tx: xpv-netback did not start" "$RUN/alt-bad.log"; then
    fail $name "no message naming the setup: $(tail -3 "$RUN/alt-bad.log" | tr '\n' ' ')"
  elif [[ -n $left ]]; then
    fail $name "processes left running: $left"
  else
    pass $name "exit 1: $(tail -1 "$RUN/alt-bad.log"); the memif pair stopped"
  fi
}
