#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""xpv benchmark report: reads what scripts/bench.sh measured, writes
latest.json, report.md and PNG plots (gnuplot), prints the summary table.

    python3 bench/report.py --logs build/bench-logs --out bench/results
    python3 bench/report.py --rate TESTPMD_LOG Rx-pps        (one run's median)
    python3 bench/report.py --nbprof CALLGRIND NETBACK_JSON tx|rx
    python3 bench/report.py --wakeup PKTGEN_JSON L3FWD_LOG   (one wake-up run)

Every number comes from the logs of the run; nothing here is a result.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgprof  # noqa: E402

# The targets (the brief's, in one place).
TARGET_RATIO_64 = 1.0
TARGET_INSTR_B32 = 100
# A spinning application (testpmd, xpv-fwd before it sleeps) mostly polls an
# empty ring; under TCG every instruction of it is CPU taken from netback.
TARGET_IDLE_POLL_INSTR = 60
TARGET_SPURIOUS_PCT = 0.05
TARGET_NOTIFIES_PER_PKT = 1 / 16
TARGET_TCP_ON_OFF = 2.0     # TCP through the domU, offloads on / off (real Xen)
TARGET_TCP_ON_KERNEL = 1.0  # ... offloads on / the kernel bridge
TARGET_SG_RATIO_64 = 1.0   # 64-byte xenpv/memif with static grants (issue 12; aiming for 1.5)
# xpv-netback's instructions per packet with static grants over those with a grant
# copy per buffer (same run, TX and RX each; issue 12: "at most half of today's")
TARGET_NB_STATIC_OVER_COPY = 0.5
# Regression guard: instructions per packet (deterministic under callgrind for
# one build) may not rise by more than this over the previous report in the
# output folder (the committed bench/results/latest.json by default), even
# while under TARGET_INSTR_B32: the offloads took TX from 94 to 111 unseen
# until the target was missed.
INSTR_RISE_ALLOWED = 1.0
SIZES = (64, 256, 1500)
BURSTS = (1, 8, 32)


# ---------------------------------------------------------------------------
# Parsing.

def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def pps_samples(log, field, warm=1):
    """testpmd's per-second rates of one field, forwarding seconds only.

    Leading zeros (before forwarding or the link came up) are dropped, then
    `warm` samples (the first covers the start, partly idle; the next ones
    the ramp-up), and the last one (it may overlap the stop of the peer)."""
    vals = [int(x) for x in re.findall(re.escape(field) + r":\s+(\d+)", read(log))]
    i = 0
    while i < len(vals) and vals[i] == 0:
        i += 1
    return vals[i + max(1, warm):-1]


def median_mpps(samples):
    return statistics.median(samples) / 1e6 if samples else None


def xstats(log):
    """The last value testpmd printed for each xstat (cumulative)."""
    out = {}
    for name, val in re.findall(r"^\s+((?:rx_|tx_)?q\d+_[a-z_]+)\s+(\d+)\s+\d+\s*$", read(log), re.M):
        out[name] = int(val)
    return out


def forward_totals(log):
    """testpmd's final per-port totals (RX-packets, TX-packets)."""
    t = read(log)
    m = re.search(r"Forward statistics for port 0.*?RX-packets:\s+(\d+).*?TX-packets:\s+(\d+)", t, re.S)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def fmt(v, spec=".3f", none="n/a"):
    if v is None:
        return none
    return format(v, spec)


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


# ---------------------------------------------------------------------------
# One-liners for scripts/bench.sh's progress output.

def cmd_rate(log, field, warm=1):
    s = pps_samples(log, field, warm)
    if not s:
        print("no samples")
        return 1
    print(f"{median_mpps(s):.3f} Mpps (median of {len(s)} per-second samples, "
          f"min {min(s) / 1e6:.3f}, max {max(s) / 1e6:.3f})")
    return 0


def nb_packets(nbjson, direction):
    d = load_json(nbjson) or {}
    t = d.get("totals", {})
    return t.get("tx_packets" if direction == "tx" else "rx_packets", 0)


def nb_copies(nbjson):
    """xpv-netback's copies by memcpy (static grants) and by grant copy."""
    t = (load_json(nbjson) or {}).get("totals", {})
    return {"static_grant_copies": t.get("static_grant_copies"), "grant_copies": t.get("grant_copies")}


def nbprof_md(R):
    """xpv-netback's instructions per packet with and without static grants."""
    L = ["### xpv-netback's worker per packet: static grants against grant copies", "",
         "callgrind inside the worker's ring handling (`Queue::tx_action`, `Queue::service`), 64-byte frames, "
         "testpmd txonly -> sink (TX) and source -> rxonly (RX); static grants: the frontend registered its "
         "buffer pools and xpv-netback copies with memcpy; grant copy: `--no-static-grants` (Linux netback's "
         "answer), a grant copy per buffer. Target: with static grants at most "
         f"{TARGET_NB_STATIC_OVER_COPY:g} of the grant-copy figure, each direction.", ""]
    st, cp = R.get("nbprof") or {}, R.get("nbprof_copy") or {}
    if not st and not cp:
        return L + ["not run in this bench.", ""]
    L += ["| direction | static grants | grant copy | ratio | copies by memcpy / grant copy (static run) | "
          "(grant-copy run) |", "|---|---:|---:|---:|---|---|"]
    for d in ("tx", "rx"):
        a, b = st.get(d), cp.get(d)
        pa, pb = (a or {}).get("per_packet"), (b or {}).get("per_packet")
        def cps(x):
            c = (x or {}).get("copies") or {}
            return f"{fmt(c.get('static_grant_copies'), ',')} / {fmt(c.get('grant_copies'), ',')}"
        L.append(f"| {d.upper()} | {fmt(pa, '.0f')} | {fmt(pb, '.0f')} | "
                 f"{fmt(pa / pb if pa is not None and pb else None, '.2f')} | {cps(a)} | {cps(b)} |")
    L.append("")
    for d in ("tx", "rx"):
        for label, x in (("static grants", st.get(d)), ("grant copy", cp.get(d))):
            if x:
                top = ", ".join(f"`{f['function']}` {f['per_packet']:.0f}" for f in x["functions_self"][:6])
                L.append(f"- {d.upper()}, {label}: {x['per_packet']:.0f} instructions per packet. Top (self): {top}.")
    return L + [""]


def nb_static_over_copy(R, d):
    a, b = (R.get("nbprof") or {}).get(d), (R.get("nbprof_copy") or {}).get(d)
    return (a["per_packet"], b["per_packet"]) if a and b else (None, None)


def wakeup_run(pktgen_json, l3fwd_log):
    """First frame in to first frame out, per round of xpv-pktgen --rounds
    (its first round, the cold start, left out): median and p99 in us, and
    how many of l3fwd-power's sleeps ended on an rx interrupt."""
    d = load_json(pktgen_json) or {}
    rounds = d.get("rounds", [])[1:]
    lat = sorted((r["first_rx"] - r["first_tx"]) * 1e6 for r in rounds if r["first_rx"] and r["first_tx"])
    p99 = lat[min(len(lat) - 1, max(0, -(-99 * len(lat) // 100) - 1))] if lat else None  # nearest rank
    return {"rounds": len(rounds), "median_us": statistics.median(lat) if lat else None, "p99_us": p99,
            "max_us": lat[-1] if lat else None,
            "frames_lost": sum(r["sent"] - r["received"] for r in rounds),
            "wake_ups": read(l3fwd_log).count("waked up from rx interrupt")}


def cmd_wakeup(pktgen_json, l3fwd_log):
    w = wakeup_run(pktgen_json, l3fwd_log)
    print(f"first frame in to first frame out: median {fmt(w['median_us'], '.0f')} us, "
          f"p99 {fmt(w['p99_us'], '.0f')} us, max {fmt(w['max_us'], '.0f')} us over {w['rounds']} rounds; "
          f"{w['wake_ups']} wake-ups on an rx interrupt logged; {w['frames_lost']} frames lost")
    return 0


def cmd_nbprof(out, nbjson, direction):
    n = nb_packets(nbjson, direction)
    if not n or not os.path.exists(out):
        print("no packets or no profile")
        return 1
    p = cgprof.profile(out, n, top=3)
    top = ", ".join(f"{f['function']} {f['per_packet']:.0f}" for f in p["functions_self"][:3])
    print(f"{p['per_packet']:.0f} instructions/packet over {n} packets (top: {top})")
    return 0


# ---------------------------------------------------------------------------
# The whole report.

def machine_info(root, build):
    def pkgver(p):
        return sh(f"dpkg-query -W -f='${{Version}}' {p} 2>/dev/null")
    lscpu = sh("lscpu")

    def lscpu_field(k):
        m = re.search(r"^" + re.escape(k) + r":\s+(.*)$", lscpu, re.M)
        return m.group(1).strip() if m else ""
    mem = re.search(r"MemTotal:\s+(\d+)", read("/proc/meminfo"))
    perf = sh("perf stat -x, -e instructions true 2>&1 >/dev/null | head -1")
    return {
        "hostname": platform.node(),
        "kernel": platform.release(),
        "cpu_model": lscpu_field("Model name"),
        "cpus": os.cpu_count(),
        "hypervisor": lscpu_field("Hypervisor vendor"),
        "mem_total_mib": int(mem.group(1)) // 1024 if mem else None,
        "os": sh(". /etc/os-release 2>/dev/null && echo $PRETTY_NAME"),
        "dpdk": pkgver("dpdk"),
        "libbenchmark": pkgver("libbenchmark-dev"),
        "valgrind": sh("valgrind --version"),
        "gxx": sh("g++ --version | head -1"),
        "meson": sh("meson --version"),
        "python": platform.python_version(),
        "gnuplot": sh("gnuplot --version"),
        "perf_counters": "unavailable" if ("not supported" in perf or not perf) else "available",
        "git_commit": sh(f"git -C {root} rev-parse --short HEAD"),
        "git_dirty_files": len([x for x in sh(f"git -C {root} status --porcelain").splitlines() if x]),
        "build_type": sh(f"meson introspect --buildoptions {build} 2>/dev/null | python3 -c "
                         "'import json,sys; print([o[\"value\"] for o in json.load(sys.stdin) "
                         "if o[\"name\"]==\"buildtype\"][0])'"),
    }


def collect(logs, root):
    runs = []
    with open(os.path.join(logs, "manifest.jsonl")) as f:
        for line in f:
            if line.strip():
                runs.append(json.loads(line))
    R = {"throughput": {}, "series_64": {}, "callgrind": {}, "profiles": {}, "micro": {},
         "events": {}, "mq": {}, "nbprof": {}, "e2e": None, "load": {}, "wakeup": {}, "seed": {},
         "tcp": {}, "sgrants": None, "windows": {}, "nbprof_copy": {}}
    for r in runs:
        k = r["kind"]
        if k == "sgrants-windows":
            R["sgrants"] = load_windows(load_json(r["file"]))
            continue
        if k == "windows":  # throughput at 256 and 1500 bytes (bench/alternate.py)
            R["windows"][int(r["size"])] = load_windows(load_json(r["file"]))
            continue
        if k == "throughput":
            size = int(r["size"])
            s = pps_samples(r["log"], r["field"], int(r.get("warm", 1)))
            key = f"{r['setup']}_{r['dir']}"
            entry = {"mpps": median_mpps(s), "samples": len(s), "zero_seconds": sum(1 for x in s if x == 0),
                     "min_mpps": min(s) / 1e6 if s else None,
                     "max_mpps": max(s) / 1e6 if s else None, "log": os.path.basename(r["log"])}
            if r["setup"] == "xenpv":
                xs = xstats(r["log"])
                entry["ring_full"] = xs.get("q0_ring_full")
                entry["notifies"] = xs.get("q0_notifies")
                entry["tx_packets"] = xs.get("tx_q0_packets")
                entry["rx_packets"] = xs.get("rx_q0_packets")
                nb = load_json(r.get("netback", "")) or {}
                entry["netback_totals"] = nb.get("totals")
            R["throughput"].setdefault(size, {})[key] = entry
            if size == 64:
                R["series_64"][key] = s
        elif k == "callgrind":
            p = cgprof.profile(r["out"], int(r["packets"]), root=root, top=12)
            if r["dir"] == "rx-empty":  # receive calls that find nothing: per call
                R["rx_empty"] = p
            else:
                R["callgrind"][(r["dir"], int(r["burst"]), int(r["size"]))] = p
        elif k == "micro":
            d = load_json(r["out"]) or {}
            for b in d.get("benchmarks", []):
                if b.get("aggregate_name") != "median":
                    continue
                m = re.match(r"BM_(Tx|Rx)/burst:(\d+)/size:(\d+)", b.get("run_name", b["name"]))
                if not m:
                    continue
                R["micro"][(m.group(1).lower(), int(m.group(2)), int(m.group(3)))] = {
                    "tsc_per_pkt": b.get("tsc_per_pkt"), "ns_per_pkt": b.get("ns_per_pkt"),
                    "tsc_per_pkt_raw": b.get("tsc_per_pkt_raw"), "timer_tsc": b.get("timer_tsc"),
                    "tsc_ghz": b.get("tsc_ghz"), "discarded_calls": b.get("discarded_calls"),
                }
            R["micro_context"] = d.get("context", {})
        elif k == "event":
            pg = load_json(r["pktgen"]) or {}
            nb = (load_json(r.get("netback", "")) or {}).get("totals", {})
            tx = pg.get("tx_packets") or 0
            ev = pg.get("events")
            R["events"][r["name"]] = {
                "args": r.get("args", ""),
                "ok": r.get("rc") == "0" and bool(pg),
                "seconds": pg.get("seconds"),
                "pps": pg.get("pps"),
                "tx_packets": tx,
                "rx_packets": pg.get("rx_packets"),
                "events": ev,
                "spurious_events": pg.get("spurious_events"),
                "delayed_eois": pg.get("delayed_eois"),
                "notifies": pg.get("notifies"),
                "ring_full": pg.get("ring_full"),
                "tx_reaped_in_xmit": pg.get("tx_reaped_in_xmit"),
                "events_per_pkt": ev / tx if tx and ev is not None else None,
                "notifies_per_pkt": pg["notifies"] / tx if tx and "notifies" in pg else None,
                "spurious_pct": 100.0 * pg["spurious_events"] / ev if ev else (0.0 if ev == 0 else None),
                "netback_events": nb.get("events"),
                "netback_spurious_events": nb.get("spurious_events"),
                "netback_notifies": nb.get("notifies_sent"),
                "netback_faults_injected": nb.get("faults_injected"),
            }
        elif k == "mq":
            nq = int(r["queues"])
            s = pps_samples(r["log"], "Rx-pps", int(r.get("warm", 1)))
            xs = xstats(r["log"])
            perq = [xs.get(f"rx_q{q}_packets") for q in range(nq)]
            notif = sum(xs.get(f"q{q}_notifies", 0) for q in range(nq))
            txp = sum(xs.get(f"tx_q{q}_packets", 0) for q in range(nq))
            R["mq"][nq] = {"mpps": median_mpps(s), "samples": len(s),
                           "min_mpps": min(s) / 1e6 if s else None, "max_mpps": max(s) / 1e6 if s else None,
                           "zero_seconds": sum(1 for x in s if x == 0),
                           "per_queue_rx_packets": perq,
                           "notifies_per_pkt": notif / txp if txp else None,
                           "ring_full": sum(xs.get(f"q{q}_ring_full", 0) for q in range(nq)),
                           "spurious_events": sum(xs.get(f"q{q}_spurious_events", 0) for q in range(nq))}
        elif k == "nbprof":
            # variant static (the default; older manifests have none) or copy (--no-static-grants)
            n = nb_packets(r["netback"], r["dir"])
            if n and os.path.exists(r["out"]):
                into = R["nbprof_copy"] if r.get("variant") == "copy" else R["nbprof"]
                into[r["dir"]] = dict(cgprof.profile(r["out"], n, root=root, top=10),
                                      copies=nb_copies(r["netback"]))
        elif k == "seed":
            pg = load_json(r["pktgen"]) or {}
            if r.get("rc") == "0" and pg:
                R["seed"].setdefault(r["name"], {})[int(r["pair"])] = pg
        elif k == "tcp":
            sk, tx = load_json(r["sink"]) or {}, load_json(r["tx"]) or {}
            if r.get("rc") == "0" and sk and tx and tx.get("seconds"):
                R["tcp"].setdefault(r["name"], {})[int(r["pair"])] = {
                    "gbit": 8.0 * sk["tcp_payload_rx"] / tx["seconds"] / 1e9,
                    "sink_pps": sk["received"] / tx["seconds"],
                    "tx_pps": tx["sent"] / tx["seconds"],
                    "loss_pct": 100.0 * sk["tcp_gap_bytes"] / max(1, sk["tcp_gap_bytes"] + sk["tcp_payload_rx"]),
                    "bad": sk["tcp_bad_checksum"] + sk["bad_payload"] + sk["out_of_order"],
                    "lro": sk["rx_lro_packets"]}
        elif k == "e2e":
            if r.get("log"):
                text = read(r["log"]).splitlines()
                lines = [l for l in text if "pps" in l]
                # The seed-experiment check's table, as it logged it.
                seed = [l.split("seed table: ", 1)[1] for l in text if "seed table: " in l]
                tcp = [l for l in text if "CHECK tcp-through-domu " in l]
                R["e2e"] = {"lines": lines, "mtime": r.get("mtime"), "seed": seed, "tcp": tcp}
            else:
                R["e2e"] = None
        elif k == "e2e_tcp":
            # This bench's own real-Xen TCP rounds (scripts/bench.sh, xentcp_step).
            text = read(r["log"]).splitlines() if r.get("log") else []
            tcp = [l for l in text if "CHECK tcp-through-domu " in l]
            win = [l for l in text if "CHECK tcp-windows PASS" in l]
            R["e2e_tcp"] = ({"tcp": tcp, "rounds": r.get("rounds"), "windows": win[-1] if win else None}
                            if tcp else None)
        elif k == "load":
            R["load"][r["when"]] = r["loadavg"]
        elif k == "wakeup":
            R["wakeup"][r["name"]] = dict(wakeup_run(r["pktgen"], r["l3fwd"]), gap_ms=int(r["gap_ms"]),
                                          ok=r.get("rc") == "0")
    return R


def xen_tcp_figures(tcp_line):
    """The real-Xen TCP figures of one tcp-through-domu line: on/off and on/kernel ratios, each with
    the text the report shows. The on/kernel ones are the medians of the rounds' ratios when the
    check ran more than one round (one round's ratio can flip on a noisy machine)."""
    def mbit(label):
        m = re.search(label + r" ([0-9.]+) Mbit/s", tcp_line)
        return float(m.group(1)) if m else None
    t_k, t_off, t_on = mbit("kernel bridge"), mbit("offloads off"), mbit("offloads on")

    def over_kernel(v, note=""):
        """A way's Mbit/s over the kernel bridge's, and the text the report shows for it."""
        k = v / t_k if v is not None and t_k else None
        return k, f"{fmt(k, '.2f')} ({fmt(v, '.0f')} / {fmt(t_k, '.0f')} Mbit/s{note})"
    on_off = t_on / t_off if t_on is not None and t_off else None
    on_k, on_k_shown = over_kernel(t_on)
    # xpv-fwd, which sleeps on RX interrupts where testpmd spins.
    f_off, f_on = mbit(r"\(sleeps on RX interrupts\) off"), mbit(r"Mbit/s, on")
    f_on_off = f_on / f_off if f_on is not None and f_off else None
    f_on_k, f_on_k_shown = over_kernel(f_on)
    # The on/kernel targets: the medians of the check's alternating rounds when it ran more
    # than one (one round's ratio can flip on a noisy machine), else its one round.
    # (Logs before zero-copy joined the rounds have three runs a round and two medians.)
    # (Logs before idle_sleep joined them have four runs a round and three medians; logs
    # before its testpmd ran with zerocopy=1 too call the fifth "testpmd idle_sleep=50"; the
    # value is the check's TCP_IDLE_SLEEP.)
    m = re.search(r"(\d+) rounds, kernel bridge/testpmd on/xpv-fwd on(?:/xpv-fwd zero-copy)?"
                  r"(?:/testpmd idle_sleep=\d+(?: zero-copy)?)? Mbit/s: ([0-9./ ]+), "
                  r"medians of the rounds' ratios: testpmd on/kernel ([0-9.]+), xpv-fwd on/kernel ([0-9.]+)"
                  r"(?:, xpv-fwd zero-copy/kernel ([0-9.]+))?"
                  r"(?:, testpmd idle_sleep=\d+(?: zero-copy)?/kernel ([0-9.]+))?", tcp_line)
    sleep_zc = re.search(r"testpmd idle_sleep=\d+ zero-copy/kernel", tcp_line) is not None
    sleep_us = re.search(r"testpmd on with idle_sleep=(\d+)", tcp_line)
    sleep_us = sleep_us.group(1) if sleep_us else "50"
    # xpv-fwd with zerocopy=1 (received into the granted pages, sent on by their grants).
    z_on_k, z_on_k_shown = over_kernel(mbit(r"xpv-fwd on with zerocopy=1"))
    # testpmd with idle_sleep (its lcore sleeps when idle instead of spinning), and zerocopy=1.
    s_on_k, s_on_k_shown = over_kernel(mbit(r"testpmd on with idle_sleep=\d+(?: zerocopy=1)?"))
    # The same testpmd waiting in Xen (idle_wait=xen): one run, in the first round only (logs
    # before it joined the check have none).
    x_on = mbit(r"testpmd on with idle_sleep=\d+ zerocopy=1 idle_wait=xen")
    x_on_k, x_on_k_shown = over_kernel(x_on, ", one run of the first round")
    if x_on is None:
        x_on_k_shown = "n/a (not in this tcp-through-domu line)"
    if m and int(m.group(1)) > 1:
        on_k, f_on_k = float(m.group(3)), float(m.group(4))
        per = m.group(2).strip().split()
        runs = ("kernel/testpmd/xpv-fwd/zero-copy/testpmd idle_sleep" + (" zero-copy" if sleep_zc else "")
                if m.group(6) else
                "kernel/testpmd/xpv-fwd/zero-copy" if m.group(5) else "kernel/testpmd/xpv-fwd")
        on_k_shown = f"{fmt(on_k, '.2f')} (median of {len(per)} rounds; {runs} Mbit/s: {', '.join(per)})"
        f_on_k_shown = f"{fmt(f_on_k, '.2f')} (median of {len(per)} rounds, as above)"
        if m.group(5):
            z_on_k = float(m.group(5))
            z_on_k_shown = f"{fmt(z_on_k, '.2f')} (median of {len(per)} rounds, as above)"
        if m.group(6):
            s_on_k = float(m.group(6))
            s_on_k_shown = f"{fmt(s_on_k, '.2f')} (median of {len(per)} rounds, as above)"
    return {"t_k": t_k, "t_off": t_off, "t_on": t_on, "on_off": on_off, "on_k": on_k, "on_k_shown": on_k_shown,
            "f_off": f_off, "f_on": f_on, "f_on_off": f_on_off, "f_on_k": f_on_k, "f_on_k_shown": f_on_k_shown,
            "z_on_k": z_on_k, "z_on_k_shown": z_on_k_shown, "s_on_k": s_on_k, "s_on_k_shown": s_on_k_shown,
            "x_on_k": x_on_k, "x_on_k_shown": x_on_k_shown, "s_zc": sleep_zc, "s_us": sleep_us}


# check tcp-windows's ways (e2e/xen/checks/tcp.sh) and the on/kernel figures they judge.
TCP_WINDOW_WAYS = {"testpmd-on": "on_k", "fwd-on": "f_on_k", "fwd-zc": "z_on_k", "testpmd-sleep": "s_on_k",
                   "testpmd-xwait": "x_on_k"}


def xen_tcp_windows(line):
    """check tcp-windows's PASS line judged by the same rule as bench/alternate.py's windows
    (window_pairs against the kernel-bridge windows around each): per DPDK way, {"judged": the
    median of its steady pairs (None with fewer than WINDOW_MIN_STEADY), "steady", "pairs",
    "all": the median of all its pairs}; {} without a line."""
    m = re.search(r"Mbit/s in order: (.*)$", line or "")
    if not m:
        return {}
    windows = [{"setup": x.split()[0], "mbit": float(x.split()[1])} for x in m.group(1).split(", ") if len(x.split()) == 2]
    out = {}
    for way, v in window_pairs(windows, base="kernel", rate="mbit").items():
        steady = [p["ratio"] for p in v if p["steady"]]
        out[way] = {"judged": median(steady) if len(steady) >= WINDOW_MIN_STEADY else None, "steady": len(steady),
                    "pairs": len(v), "all": median([p["ratio"] for p in v])}
    return out


def xen_tcp_judged(R):
    """The real-Xen TCP figures the targets judge: xen_tcp_figures of the tcp-through-domu line;
    the on/kernel ratios from check tcp-windows's alternating windows when this bench ran it
    (each DPDK window against the kernel-bridge windows around it), else the rounds' medians."""
    X = xen_tcp_figures((xen_tcp_lines(R) or [""])[-1])
    W = xen_tcp_windows((R.get("e2e_tcp") or {}).get("windows"))
    X["windows"] = bool(W)
    if not W:
        return X
    for way, key in TCP_WINDOW_WAYS.items():
        w = W.get(way)
        X[key] = w["judged"] if w else None
        X[key + "_shown"] = (f"{fmt(w['judged'], '.2f')} (median of {w['steady']} steady of {w['pairs']} alternating "
                             f"windows against the kernel bridge; all pairs {w['all']:.2f})" if w else "n/a (not in the windows)")
    X["s_zc"] = True  # the windows' testpmd-sleep runs with zerocopy=1
    return X


def summarise(R, machine, started, failed):
    J = {"generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
         "bench_seconds": int(datetime.datetime.now().timestamp()) - started if started else None,
         "failed_measurements": failed, "machine": machine, "load_average": R["load"]}
    # Throughput: the windows' figures (bench/alternate.py): each setup's median rate, and
    # xenpv/memif per direction judged on the steady pairs; the target takes the slower one.
    J["throughput_windows"] = {}
    for size in SIZES:
        S = throughput_windows(R, size)
        J["throughput_windows"][str(size)] = S
        m = (S or {}).get("median_mpps", {})
        r = (S or {}).get("ratio_by_setup", {})
        xt, xr, ma = m.get("xenpv_tx"), m.get("xenpv_rx"), m.get("memif_a2b")
        J[f"xenpv_tx_mpps_{size}"] = xt
        J[f"xenpv_rx_mpps_{size}"] = xr
        J[f"memif_a2b_mpps_{size}"] = ma
        J[f"xenpv_mpps_{size}"] = slower(xt, xr)
        J[f"memif_mpps_{size}"] = ma
        J[f"ratio_tx_{size}"] = r.get("xenpv_tx")
        J[f"ratio_rx_{size}"] = r.get("xenpv_rx")
        J[f"ratio_{size}"] = slower(r.get("xenpv_tx"), r.get("xenpv_rx"))
    # The single 64-byte runs (per-second rates and xstats; no ratio is judged on them).
    t = R["throughput"].get(64, {})
    for k in ("xenpv_tx", "xenpv_rx", "memif_a2b", "memif_b2a"):
        J[f"run_{k}_mpps_64"] = (t.get(k) or {}).get("mpps")
    for d in ("tx", "rx"):
        J[f"xenpv_{d}_ring_full_64"] = (t.get(f"xenpv_{d}") or {}).get("ring_full")
    # Per-packet cost.
    for (d, b, s), p in sorted(R["callgrind"].items()):
        J[f"{d}_instr_per_pkt_b{b}" + ("" if s == 64 else f"_s{s}")] = round(p["per_packet"], 2)
    # An idle poll: a receive call on an empty, stocked ring (a spinning application's loop).
    J["rx_empty_instr_per_call"] = round(R["rx_empty"]["per_packet"], 1) if R.get("rx_empty") else None
    for (d, b, s), m in sorted(R["micro"].items()):
        sfx = "" if s == 64 else f"_s{s}"
        J[f"{d}_tsc_cycles_per_pkt_b{b}{sfx}"] = round(m["tsc_per_pkt"], 2) if m["tsc_per_pkt"] is not None else None
        J[f"{d}_ns_per_pkt_b{b}{sfx}"] = round(m["ns_per_pkt"], 3) if m["ns_per_pkt"] is not None else None
    anym = next(iter(R["micro"].values()), None)
    J["tsc_ghz"] = round(anym["tsc_ghz"], 4) if anym and anym.get("tsc_ghz") else None
    # Events.
    ev = R["events"].get("event") or {}
    late = R["events"].get("event-late-tx-rsp") or {}
    J["events_per_pkt"] = ev.get("events_per_pkt")
    J["spurious_pct"] = ev.get("spurious_pct")
    J["notifies_per_pkt"] = ev.get("notifies_per_pkt")
    J["delayed_eois"] = ev.get("delayed_eois")
    J["event_mode_pps"] = ev.get("pps")
    J["late_tx_rsp_events_per_pkt"] = late.get("events_per_pkt")
    J["late_tx_rsp_spurious_pct"] = late.get("spurious_pct")
    J["late_tx_rsp_notifies_per_pkt"] = late.get("notifies_per_pkt")
    J["late_tx_rsp_delayed_eois"] = late.get("delayed_eois")
    J["late_tx_rsp_pps"] = late.get("pps")
    J["event_runs"] = R["events"]
    # Multi-queue.
    for nq, m in sorted(R["mq"].items()):
        J[f"mq_mpps_q{nq}"] = m["mpps"]
        J[f"mq_notifies_per_pkt_q{nq}"] = m["notifies_per_pkt"]
        J[f"mq_per_queue_rx_packets_q{nq}"] = m["per_queue_rx_packets"]
    # What bounds throughput.
    for d, p in R["nbprof"].items():
        J[f"netback_{d}_instr_per_pkt"] = round(p["per_packet"], 1)
    for d, p in R["nbprof_copy"].items():
        J[f"netback_{d}_copy_instr_per_pkt"] = round(p["per_packet"], 1)
    for n, w in R["wakeup"].items():
        k = n.replace("-", "_")
        J[f"{k}_median_us"], J[f"{k}_p99_us"] = w["median_us"], w["p99_us"]
    J["wakeup_runs"] = R["wakeup"]
    J["e2e_xen_pps_lines"] = R["e2e"]["lines"] if R["e2e"] else None
    J["e2e_xen"] = ("not run" if R["e2e"] is None else
                    "not run (e2e.log has no line containing 'pps')" if not R["e2e"]["lines"] else "ran")
    J["throughput"] = {str(k): v for k, v in R["throughput"].items()}
    J["throughput_series_64_pps"] = R["series_64"]
    J["profiles"] = {f"{d}_b{b}_s{s}": {k: p[k] for k in ("per_packet", "functions_self",
                                                          "function_by_source", "lines")}
                     for (d, b, s), p in R["callgrind"].items() if b == 32}
    J["netback_profiles"] = {d: {k: p[k] for k in ("per_packet", "functions_self", "lines", "copies")}
                             for d, p in R["nbprof"].items()}
    J["netback_copy_profiles"] = {d: {k: p[k] for k in ("per_packet", "functions_self", "lines", "copies")}
                                  for d, p in R["nbprof_copy"].items()}
    # Targets.
    def tgt(name, value, op, limit, shown, met=None):
        if met is None:
            met = None if value is None else (value >= limit if op == ">=" else
                                              value <= limit if op == "<=" else value < limit)
        return {"target": name, "value": value, "op": op, "limit": limit, "shown": shown, "met": met}
    sp_vals = [x for x in (ev.get("spurious_pct"), late.get("spurious_pct")) if x is not None]
    nt_vals = [x for x in (ev.get("notifies_per_pkt"), late.get("notifies_per_pkt")) if x is not None]
    # TCP through the domU on real Xen (the e2e check's figures): this bench's own rounds when it
    # ran them, else the last make e2e-xen's line (one round).
    X = xen_tcp_judged(R)
    t_k, t_off, t_on, on_off, on_k, on_k_shown = (X[k] for k in ("t_k", "t_off", "t_on", "on_off", "on_k", "on_k_shown"))
    f_off, f_on, f_on_off, f_on_k, f_on_k_shown = (X[k] for k in ("f_off", "f_on", "f_on_off", "f_on_k", "f_on_k_shown"))
    z_on_k, z_on_k_shown, s_on_k, s_on_k_shown = (X[k] for k in ("z_on_k", "z_on_k_shown", "s_on_k", "s_on_k_shown"))
    nb_targets = []
    for d in ("tx", "rx"):
        nb_s, nb_c = nb_static_over_copy(R, d)
        nb_r = nb_s / nb_c if nb_s is not None and nb_c else None
        nb_targets.append(tgt(f"xpv-netback {d.upper()} instructions/packet, static grants / grant copy", nb_r,
                              "<=", TARGET_NB_STATIC_OVER_COPY,
                              f"{fmt(nb_r, '.2f')} ({fmt(nb_s, '.0f')} / {fmt(nb_c, '.0f')})"))
    SG = sgrants_summary(R) or {}
    sg_ratio, sg_copy = SG.get("ratio_static"), SG.get("ratio_copy")
    J["sgrants"] = SG or None
    J["targets"] = [
        tgt("64-byte throughput xenpv/memif (median of steady alternating pairs)", J["ratio_64"], ">=",
            TARGET_RATIO_64, f"{fmt(J['ratio_64'], '.3f')} (TX {fmt(J['ratio_tx_64'], '.3f')}, RX "
            f"{fmt(J['ratio_rx_64'], '.3f')}; medians {fmt(J['xenpv_mpps_64'])} / {fmt(J['memif_mpps_64'])} Mpps)"),
        tgt("TX instructions/packet, burst 32", J.get("tx_instr_per_pkt_b32"), "<=", TARGET_INSTR_B32,
            fmt(J.get("tx_instr_per_pkt_b32"), ".1f")),
        tgt("RX instructions/packet, burst 32", J.get("rx_instr_per_pkt_b32"), "<=", TARGET_INSTR_B32,
            fmt(J.get("rx_instr_per_pkt_b32"), ".1f")),
        tgt("RX instructions per idle poll (empty ring)", J.get("rx_empty_instr_per_call"), "<=",
            TARGET_IDLE_POLL_INSTR, fmt(J.get("rx_empty_instr_per_call"), ".1f")),
        tgt("spurious events, % of events (event mode; also late-tx-rsp)",
            max(sp_vals) if len(sp_vals) == 2 else None, "<", TARGET_SPURIOUS_PCT,
            f"{fmt(ev.get('spurious_pct'), '.4f')}% (late-tx-rsp {fmt(late.get('spurious_pct'), '.4f')}%)"),
        tgt("notifies/packet, burst 32 (event mode; also late-tx-rsp)",
            max(nt_vals) if len(nt_vals) == 2 else None, "<=", TARGET_NOTIFIES_PER_PKT,
            f"{fmt(ev.get('notifies_per_pkt'), '.4f')} (late-tx-rsp {fmt(late.get('notifies_per_pkt'), '.4f')})"),
        tgt("64-byte xenpv/memif with static grants (median of steady alternating pairs)", sg_ratio, ">=",
            TARGET_SG_RATIO_64, f"{fmt(sg_ratio, '.3f')} (grant copies: {fmt(sg_copy, '.3f')})"),
        *nb_targets,
        tgt("TCP through a PV domU (real Xen), offloads on / off", on_off, ">=", TARGET_TCP_ON_OFF,
            f"{fmt(on_off, '.2f')} ({fmt(t_on, '.0f')} / {fmt(t_off, '.0f')} Mbit/s)"),
        tgt("TCP through a PV domU (real Xen), offloads on / kernel bridge", on_k, ">=", TARGET_TCP_ON_KERNEL,
            on_k_shown),
        tgt("TCP through a PV domU (real Xen), xpv-fwd (RX interrupts) offloads on / off", f_on_off, ">=",
            TARGET_TCP_ON_OFF, f"{fmt(f_on_off, '.2f')} ({fmt(f_on, '.0f')} / {fmt(f_off, '.0f')} Mbit/s)"),
        tgt("TCP through a PV domU (real Xen), xpv-fwd (RX interrupts) offloads on / kernel bridge", f_on_k, ">=",
            TARGET_TCP_ON_KERNEL, f_on_k_shown),
        tgt("TCP through a PV domU (real Xen), xpv-fwd zerocopy=1 offloads on / kernel bridge", z_on_k, ">=",
            TARGET_TCP_ON_KERNEL, z_on_k_shown),
        tgt(f"TCP through a PV domU (real Xen), testpmd idle_sleep={X['s_us']}" + (" zerocopy=1" if X["s_zc"] else "")
            + " offloads on / kernel bridge", s_on_k, ">=",
            TARGET_TCP_ON_KERNEL, s_on_k_shown),
        # The same testpmd waiting in Xen (idle_wait=xen).
        tgt(f"TCP through a PV domU (real Xen), testpmd idle_sleep={X['s_us']} zerocopy=1 idle_wait=xen offloads "
            "on / kernel bridge", X["x_on_k"], ">=", TARGET_TCP_ON_KERNEL, X["x_on_k_shown"]),
    ]
    return J


# ---------------------------------------------------------------------------
# Plots (gnuplot).

def has_data(path, cols):
    """Whether a data file has at least one number in the given columns."""
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                for c in cols:
                    if len(parts) > c - 1 and parts[c - 1] not in ("NaN",):
                        try:
                            float(parts[c - 1])
                            return True
                        except ValueError:
                            pass
    except OSError:
        pass
    return False


def gnuplot(script, tmp):
    path = os.path.join(tmp, "plot.gp")
    with open(path, "w") as f:
        f.write(script)
    r = subprocess.run(["gnuplot", path], capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write("report: gnuplot failed: " + r.stderr[-500:] + "\n")
        return False
    return True


HEAD = ("set terminal pngcairo noenhanced size 900,480 font 'DejaVu Sans,10'\n"
        "set style data histograms\nset style histogram clustered gap 1\n"
        "set style fill solid 0.85 border -1\nset boxwidth 0.9\nset grid ytics\n"
        "set key top right\n")


def num(v):
    return "NaN" if v is None else repr(float(v))


def plots(J, R, out):
    made = []
    if not shutil.which("gnuplot"):
        sys.stderr.write("report: gnuplot not found: no plots\n")
        return made
    with tempfile.TemporaryDirectory() as tmp:
        # Throughput per size: the windows' rates.
        dat = os.path.join(tmp, "tp.dat")
        with open(dat, "w") as f:
            for s in SIZES:
                W = throughput_doc(R, s)
                cols = []
                for k in ("xenpv_tx", "xenpv_rx", "memif_a2b"):
                    v = [w["mpps"] for w in (W or {}).get("windows", []) if w["setup"] == k]
                    cols += [num(median(v)), num(min(v) if v else None), num(max(v) if v else None)]
                f.write(f"{s}B " + " ".join(cols) + "\n")
        png = os.path.join(out, "throughput.png")
        if has_data(dat, (2, 5, 8)) and gnuplot(HEAD + f"set output '{png}'\nset title 'Throughput: median of the one-second windows, bars from the slowest to the fastest (same 2 cores)'\n"
                   "set style histogram errorbars gap 1 lw 1\n"
                   "set ylabel 'Mpps'\nset yrange [0:*]\nset xlabel 'frame size'\n"
                   "set key outside bottom center horizontal maxrows 2\nset xrange [-0.6:2.6]\n"
                   f"plot '{dat}' using 2:3:4:xtic(1) title 'xenpv TX (testpmd txonly -> netback sink)', "
                   "'' using 5:6:7 title 'xenpv RX (netback source -> testpmd rxonly)', "
                   "'' using 8:9:10 title 'memif server -> client'\n", tmp):
            made.append("throughput.png")
        # 64-byte per-second series.
        series = R["series_64"]
        if series:
            lines = []
            for i, (k, v) in enumerate(sorted(series.items())):
                p = os.path.join(tmp, f"s{i}.dat")
                with open(p, "w") as f:
                    for j, x in enumerate(v, 1):
                        f.write(f"{j} {x / 1e6}\n")
                lines.append(f"'{p}' using 1:2 with linespoints title '{k.replace('_', ' ')}'")
            png = os.path.join(out, "throughput_64_series.png")
            if gnuplot("set terminal pngcairo noenhanced size 900,420 font 'DejaVu Sans,10'\n"
                       f"set output '{png}'\nset title '64-byte frames: per-second rates (noise of this machine)'\n"
                       "set xlabel 'second'\nset ylabel 'Mpps'\nset yrange [0:*]\nset grid\n"
                       "set key outside right\nplot " + ", ".join(lines) + "\n", tmp):
                made.append("throughput_64_series.png")
        # Instructions per packet.
        dat = os.path.join(tmp, "instr.dat")
        with open(dat, "w") as f:
            for b in BURSTS:
                f.write(f"{b} {num(J.get(f'tx_instr_per_pkt_b{b}'))} {num(J.get(f'rx_instr_per_pkt_b{b}'))}\n")
        png = os.path.join(out, "datapath_instructions.png")
        if has_data(dat, (2, 3)) and gnuplot(HEAD + f"set output '{png}'\nset title 'Library data path: instructions per packet (callgrind, 64-byte frames)'\n"
                   "set ylabel 'instructions / packet'\nset xlabel 'burst'\nset yrange [0:*]\nset xrange [-0.6:2.6]\n"
                   f"set arrow from graph 0, first {TARGET_INSTR_B32} to graph 1, first {TARGET_INSTR_B32} nohead lc rgb 'red' lw 2 dt 2\n"
                   f"set label 'target at burst 32: {TARGET_INSTR_B32}' at graph 0.72, first {TARGET_INSTR_B32 * 1.06} tc rgb 'red'\n"
                   f"plot '{dat}' using 2:xtic(1) title 'TX (Queue::transmit)', '' using 3 title 'RX (Queue::receive)'\n", tmp):
            made.append("datapath_instructions.png")
        # TSC cycles per packet.
        if R["micro"]:
            dat = os.path.join(tmp, "cyc.dat")
            with open(dat, "w") as f:
                for b in BURSTS:
                    f.write(f"{b} {num(J.get(f'tx_tsc_cycles_per_pkt_b{b}'))} {num(J.get(f'rx_tsc_cycles_per_pkt_b{b}'))}\n")
            png = os.path.join(out, "datapath_cycles.png")
            if has_data(dat, (2, 3)) and gnuplot(HEAD + f"set output '{png}'\nset title 'Library data path: TSC cycles per packet (Google Benchmark, median of repetitions)'\n"
                       "set ylabel 'TSC cycles / packet'\nset xlabel 'burst'\nset yrange [0:*]\nset xrange [-0.6:2.6]\n"
                       f"plot '{dat}' using 2:xtic(1) title 'TX', '' using 3 title 'RX'\n", tmp):
                made.append("datapath_cycles.png")
        # Where the instructions go at burst 32.
        prof = [(d, R["callgrind"].get((d, 32, 64))) for d in ("tx", "rx")]
        prof = [(d, p) for d, p in prof if p]
        if prof:
            dat = os.path.join(tmp, "prof.dat")
            with open(dat, "w") as f:
                for d, p in prof:
                    for e in p["function_by_source"][:8]:
                        label = f"{d.upper()} {e['function'].split('::')[-1]} [{os.path.basename(e['source'])}]"[:70]
                        f.write(f"\"{label}\" {e['per_packet']:.2f}\n")
            png = os.path.join(out, "datapath_profile.png")
            if gnuplot("set terminal pngcairo noenhanced size 900,560 font 'DejaVu Sans,9'\n"
                       f"set output '{png}'\nset title 'Burst 32: instructions per packet by function [source of inlined code]'\n"
                       "set style fill solid 0.85 border -1\nset yrange [*:*] reverse\nset grid xtics\n"
                       "set xlabel 'instructions / packet'\nset ytics nomirror\nunset key\nset offsets 0,0,0.5,0.5\n"
                       f"plot '{dat}' using ($2*0.5):0:($2*0.5):(0.4):yticlabels(1) with boxxyerrorbars lc rgb '#4477aa'\n", tmp):
                made.append("datapath_profile.png")
        # Events.
        evs = [(n, e) for n, e in sorted(R["events"].items()) if e.get("tx_packets")]
        if evs:
            dat = os.path.join(tmp, "ev.dat")
            with open(dat, "w") as f:
                for n, e in evs:
                    f.write(f"{n} {num(e['events_per_pkt'])} {num(e['notifies_per_pkt'])} {num(e['spurious_pct'])}\n")
            png = os.path.join(out, "events.png")
            if gnuplot("set terminal pngcairo noenhanced size 1000,400 font 'DejaVu Sans,10'\n"
                       f"set output '{png}'\nset style data histograms\nset style fill solid 0.85 border -1\n"
                       "set boxwidth 0.8\nset grid ytics\nunset key\nset yrange [0:*]\nset xtics rotate by -15\n"
                       "set multiplot layout 1,3 title 'Event mode, sustained traffic (xpv-pktgen --mode event, bursts of 32)'\n"
                       f"set title 'events per packet'\nplot '{dat}' using 2:xtic(1) lc rgb '#4477aa'\n"
                       f"set title 'notifies per packet (target <= 1/16)'\n"
                       f"set arrow 1 from graph 0, first {TARGET_NOTIFIES_PER_PKT} to graph 1, first {TARGET_NOTIFIES_PER_PKT} nohead lc rgb 'red' lw 2 dt 2\n"
                       f"set yrange [0:{TARGET_NOTIFIES_PER_PKT * 1.3}]\n"
                       f"plot '{dat}' using 3:xtic(1) lc rgb '#228833'\nunset arrow 1\n"
                       f"set title 'spurious events, % of events (target < {TARGET_SPURIOUS_PCT})'\n"
                       f"set arrow 2 from graph 0, first {TARGET_SPURIOUS_PCT} to graph 1, first {TARGET_SPURIOUS_PCT} nohead lc rgb 'red' lw 2 dt 2\n"
                       f"set yrange [0:{TARGET_SPURIOUS_PCT * 1.5}<*]\n"
                       f"plot '{dat}' using 4:xtic(1) lc rgb '#aa3377'\nunset multiplot\n", tmp):
                made.append("events.png")
        # Multi-queue.
        if R["mq"]:
            dat = os.path.join(tmp, "mq.dat")
            with open(dat, "w") as f:
                for nq, m in sorted(R["mq"].items()):
                    f.write(f"{nq} {num(m['mpps'])} {num(m['min_mpps'])} {num(m['max_mpps'])}\n")
            png = os.path.join(out, "multiqueue.png")
            if has_data(dat, (2,)) and gnuplot(HEAD + f"set output '{png}'\nset title 'Multi-queue: testpmd io over net_xenpv, xpv-netback loopback (64-byte frames)'\n"
                       "set ylabel 'Mpps (median per-second Rx-pps)'\nset xlabel 'queues'\nset yrange [0:*]\nunset key\n"
                       f"set xrange [-0.6:{len(R['mq']) - 0.4}]\n"
                       "set style histogram errorbars gap 1 lw 1\n"
                       f"plot '{dat}' using 2:3:4:xtic(1) lc rgb '#ee7733'\n", tmp):
                made.append("multiqueue.png")
    return made


# ---------------------------------------------------------------------------
# Markdown.

def no_rise_targets(J, prev):
    """One target per direction and burst: no rise in instructions per packet
    over the previous report `prev` (its latest.json; None: no rows)."""
    rows = []
    for d in ("tx", "rx"):
        for b in (1, 32):  # the per-call cost and the target's burst
            key = f"{d}_instr_per_pkt_b{b}"
            last, now = (prev or {}).get(key), J.get(key)
            if last is None:
                continue
            limit = round(last + INSTR_RISE_ALLOWED, 2)
            rows.append({"target": f"{d.upper()} instructions/packet, burst {b}: no rise over the last report",
                         "value": now, "op": "<=", "limit": limit,
                         "shown": f"{fmt(now, '.1f')} (last report {last:.1f})",
                         "met": None if now is None else now <= limit})
    return rows


def met_word(m):
    return "n/a (not measured)" if m is None else ("**met**" if m else "**missed**")


def profile_md(p, title, budget=None):
    L = [f"**{title}: {p['per_packet']:.1f} instructions per packet**"
         + (f" (target {budget}, over by {p['per_packet'] - budget:.1f})" if budget and p['per_packet'] > budget else ""),
         "", "| function (self) | instr/packet | share | inclusive |", "|---|---:|---:|---:|"]
    for f in p["functions_self"][:8]:
        L.append(f"| `{f['function']}` | {f['per_packet']:.1f} | {100 * f['per_packet'] / p['per_packet']:.0f}% | "
                 f"{f['inclusive_per_packet']:.1f} |")
    L += ["", "| function [where the code comes from, inlined headers included] | instr/packet |", "|---|---:|"]
    for f in p["function_by_source"][:10]:
        L.append(f"| `{f['function']}` [{f['source']}] | {f['per_packet']:.1f} |")
    L += ["", "| hottest source lines | instr/packet | code |", "|---|---:|---|"]
    for ln in p["lines"][:10]:
        code = ln["text"].replace("|", "\\|")[:90]
        L.append(f"| {ln['source']}:{ln['line']} | {ln['per_packet']:.1f} | `{code}` |")
    return "\n".join(L) + "\n"


def share(p, pred):
    return sum(f["per_packet"] for f in p["function_by_source"] if pred(f))


def analysis_datapath(R):
    """What limits the per-packet cost, in words drawn from the profiles."""
    out = []
    for d, entry in (("tx", "Queue::transmit"), ("rx", "Queue::receive")):
        p = R["callgrind"].get((d, 32, 64))
        if not p:
            continue
        tot = p["per_packet"]
        if tot <= TARGET_INSTR_B32:
            out.append(f"- {d.upper()} at burst 32: {tot:.1f} instructions per packet, within the target.")
            continue
        fns = p["functions_self"]
        top = ", ".join(f"`{f['function']}` {f['per_packet']:.1f}" for f in fns[:4])
        mem = sum(f["per_packet"] for f in fns if "memcpy" in f["function"] or "memmove" in f["function"])
        hdr = {}
        for f in p["function_by_source"]:
            src = f["source"]
            if src.startswith("/usr/include/c++"):
                hdr["C++ library inlines (unique_ptr, atomic, span, algorithm)"] = \
                    hdr.get("C++ library inlines (unique_ptr, atomic, span, algorithm)", 0) + f["per_packet"]
            elif src.endswith(".h") and not src.startswith("bench/"):
                hdr[src] = hdr.get(src, 0) + f["per_packet"]
        hdrs = ", ".join(f"{k} {v:.1f}" for k, v in sorted(hdr.items(), key=lambda kv: -kv[1])[:5])
        cb = sum(f["per_packet"] for f in p["function_by_source"] if f["source"].startswith("bench/")) + \
            sum(f["per_packet"] for f in fns if "CountingSink" in f["function"] and f["function"].startswith("xpv::Queue::receive<"))
        b1 = R["callgrind"].get((d, 1, 64))
        per_call = (b1["per_packet"] - tot) * 32 / 31 if b1 else None
        s = (f"- **{d.upper()} at burst 32: {tot:.1f} instructions per packet, target {TARGET_INSTR_B32}: missed.** "
             f"Self cost by function: {top}. Copying the frame is not the cost: memcpy is {mem:.1f} per packet. "
             f"Code inlined from headers: {hdrs}.")
        if per_call is not None and per_call > 0:
            s += (f" The fixed cost per call (from burst 1 vs burst 32) is about {per_call:.0f} instructions, "
                  f"{per_call / 32:.1f} per packet at burst 32, so the excess is per-packet work, not per-burst overhead.")
        if d == "rx" and cb:
            s += f" (The benchmark's own receive callback is {cb:.1f} of it.)"
        out.append(s)
        out += [f"  - {a}" for a in advice(d, p)]
    return "\n".join(out)


def advice(d, p):
    """Where the excess comes from, as rules over the profile (each rule
    speaks only when its code shows up in the measured profile)."""
    by_src = {}
    for f in p["function_by_source"]:
        by_src[f["source"]] = by_src.get(f["source"], 0) + f["per_packet"]
    fself = {f["function"]: f["per_packet"] for f in p["functions_self"]}
    lines = p.get("all_lines", [])

    def lsum(*needles):
        return sum(ln["per_packet"] for ln in lines if any(n in ln["text"] for n in needles))
    out = []
    up = sum(v for k, v in by_src.items() if k.endswith("unique_ptr.h"))
    if up >= 3:
        out.append(f"`std::unique_ptr` dereferences cost {up:.1f} per packet: the connection's pools "
                   "(`c.tx_pool->`, `c.rx_pool->`) are reloaded through their owning pointers on every use, "
                   "because the relaxed-atomic counter updates and the memcpy keep the compiler from keeping "
                   "them in registers. Copying the raw pointers into locals once per burst removes this.")
    at = sum(v for k, v in by_src.items() if k.endswith("atomic_base.h") or k.endswith("/atomic"))
    if at >= 3:
        out.append(f"Atomic loads/stores cost {at:.1f} per packet: every per-packet counter update "
                   "(`count(...)`: packets, bytes) is an atomic load plus store, and the `broken_` flag is "
                   "re-read per packet. Summing the counters in locals and storing once per burst, and reading "
                   "`broken_` once per burst, removes most of it.")
    if d == "tx":
        ht = fself.get("xpv::QueueImpl::handle_tx_responses", 0)
        if ht >= 10:
            out.append(f"Reaping TX responses (`QueueImpl::handle_tx_responses`, {ht:.1f} per packet) checks and "
                       "frees one response at a time (range check, `tx_slots[id]` lookup and reset, counter, "
                       "pool push).")
        gather = lsum("filled", "seg_off", "chunk")
        if gather >= 10:
            out.append(f"The multi-segment gather loop (`filled`/`seg_off`/`chunk` lines, {gather:.1f} per packet) "
                       "runs for every single-segment frame too: a fast path for one segment that fits a page "
                       "(one memcpy, one request) skips it.")
        zc = lsum("zero_copy", "locate(")
        if zc >= 3:
            out.append(f"Zero-copy detection (`zero_copy`, `tx_pool->locate`) costs {zc:.1f} per packet even "
                       "though the frames are not in the pool.")
        pre = lsum("len += p.segs", "uint64_t len = 0", "p.nsegs; ++i")
        if pre >= 5:
            out.append(f"Summing segment lengths before the copy costs {pre:.1f} per packet (done again by the copy).")
    else:
        st = lsum("c.frags[", "c.staged[", "asm_")
        if st >= 10:
            out.append(f"Every response is staged twice before delivery (fragment FIFO `frags[]`, packet FIFO "
                       f"`staged[]`, the `asm_*` reassembly state: {st:.1f} per packet on those lines) and read "
                       "back in `receive`: for the common one-slot packet without extras, delivering straight "
                       "from the copied response would skip both FIFOs.")
        rf = fself.get("xpv::QueueImpl::refill_rx", 0)
        if rf >= 5:
            out.append(f"Refilling (`QueueImpl::refill_rx`, {rf:.1f} per packet) posts one request at a time "
                       "(pool pop, grant lookup, request write, `rx_posted[]`).")
    return out


def seed_md(R):
    """The seeds' experiment: handler-only TX reaping against reaping in the
    transmit path too, over xpv-netback (this run) and over Linux netback (the
    last make e2e-xen's table)."""
    L = ["## 3b. The seeds' experiment: who consumes TX responses", "",
         "xpv-pktgen `--role tx --mode event` (60-byte frames as fast as the ring takes them; it sleeps on the "
         "queue's event fds when the ring is full) against xpv-netback `--mode sink`: the default (only the event "
         "handler consumes TX responses) and `--experiment-reap-tx-in-transmit` (the transmit path consumes them "
         "too while notifications are armed, Linux netfront's rule before its fix). Alternating pairs in one run; "
         "medians over the pairs, and the median of the per-pair throughput ratios.", ""]
    runs = R.get("seed") or {}
    if not runs:
        return L + ["not run in this bench.", ""]
    L += ["| reaping | pairs | packets/s (median) | events (median) | spurious share (median) | delayed EOIs (median) | TX reaped in xmit (median) |",
          "|---|---:|---:|---:|---:|---:|---:|"]
    for name in ("handler-only", "reap-in-xmit"):
        ps = runs.get(name, {})
        if not ps:
            continue
        v = list(ps.values())
        L.append(f"| {name} | {len(v)} | {fmt(median([x['pps'] for x in v]), ',.0f')} | "
                 f"{fmt(median([x['events'] for x in v]), ',.0f')} | "
                 f"{fmt(median([100.0 * x['spurious_events'] / max(1, x['events']) for x in v]), '.3f')}% | "
                 f"{fmt(median([x['delayed_eois'] for x in v]), ',.0f')} | {fmt(median([x['tx_reaped_in_xmit'] for x in v]), ',.0f')} |")
    a, b = runs.get("handler-only", {}), runs.get("reap-in-xmit", {})
    ratios = [a[p]["pps"] / b[p]["pps"] for p in a if p in b and b[p].get("pps")]
    if ratios:
        L += ["", f"Throughput, handler-only / reap-in-transmit: median of {len(ratios)} pair ratio(s) "
              f"{fmt(median(ratios), '.1f')}x (pairs: {', '.join(fmt(r, '.1f') for r in ratios)})."]
    L += [""]
    seed = (R.get("e2e") or {}).get("seed") or []
    if seed:
        L += ["Against Linux netback (the last `make e2e-xen`, check seed-experiment; the kernel netfront's row "
              "is af_packet txonly, with the events of /proc/interrupts where the guest kernel has no per-device statistics):", ""] + seed + [""]
    else:
        L += ["Against Linux netback: no seed table in build/e2e-xen/e2e.log (make e2e-xen not run with the "
              "seed-experiment check).", ""]
    return L


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


# The static-grants step's setups (bench/alternate.py's names) and their names in the report, memif first.
SG_SETUPS = (("memif_a2b", "memif a2b"), ("xenpv_tx", "xenpv TX, static grants"),
             ("xenpv-copy_tx", "xenpv TX, grant copy"), ("xenpv_rx", "xenpv RX, static grants"),
             ("xenpv-copy_rx", "xenpv RX, grant copy"))
SG_KEYS = [k for k, _ in SG_SETUPS]
# A xenpv window is judged when the memif windows right before and after it agree within this
# factor: both in one of this VM's speed spells (their rates 3x apart; one spell's memif windows
# within 15% of each other). A pair whose memif windows disagree straddles a change of spell.
WINDOW_STEADY = 1.25
WINDOW_MIN_STEADY = 3  # fewer steady pairs than this for a setup: no judged ratio


def load_windows(doc):
    """bench/alternate.py's JSON with each xenpv setup's netback totals read in; None if absent."""
    if not doc or not doc.get("windows"):
        return None
    doc = dict(doc)
    doc["totals"] = {k: (load_json(path) or {}).get("totals") or {} for k, path in (doc.get("netback") or {}).items()}
    return doc


def window_pairs(windows, base="memif_a2b", rate="mpps"):
    """Each window of another setup with the BASE windows right before and right after it (memif
    for bench/alternate.py's, the kernel bridge for check tcp-windows's): its RATE over their
    mean, and whether the two BASE windows agree (steady: one speed spell). Keyed by the setups
    that ran."""
    pairs = {w["setup"]: [] for w in windows if w["setup"] != base}
    for i in range(1, len(windows) - 1):
        w, before, after = windows[i], windows[i - 1], windows[i + 1]
        if w["setup"] not in pairs or before["setup"] != base or after["setup"] != base:
            continue
        m1, m2 = before[rate], after[rate]
        if not (m1 > 0 and m2 > 0):
            continue
        pairs[w["setup"]].append({"ratio": w[rate] / ((m1 + m2) / 2), "steady": max(m1, m2) <= WINDOW_STEADY * min(m1, m2)})
    return pairs


def slower(a, b):
    return min(a, b) if a is not None and b is not None else None


def windows_summary(W):
    """One bench/alternate.py run judged: per xenpv setup, the median over its steady pairs of
    its window's rate over its memif windows' mean (None with fewer than WINDOW_MIN_STEADY of
    them), the median over all its pairs, and each setup's median rate."""
    windows = W["windows"]
    pairs = window_pairs(windows)
    keys = ["memif_a2b", *pairs]
    steady = {k: [p["ratio"] for p in v if p["steady"]] for k, v in pairs.items()}
    return {"size": W.get("size", 64), "seconds": W.get("seconds"), "warm": W.get("warm"), "rounds": W.get("rounds"),
            "windows": {k: sum(1 for w in windows if w["setup"] == k) for k in keys},
            "median_mpps": {k: median([w["mpps"] for w in windows if w["setup"] == k]) for k in keys},
            "ratio_by_setup": {k: median(v) if len(v) >= WINDOW_MIN_STEADY else None for k, v in steady.items()},
            "steady_pairs": {k: len(v) for k, v in steady.items()}, "pairs": {k: len(v) for k, v in pairs.items()},
            "ratio_all_pairs": {k: median([p["ratio"] for p in v]) for k, v in pairs.items()}}


def sgrants_summary(R):
    """The static-grants step judged (windows_summary); then, with static grants and with grant
    copies, the slower direction."""
    W = R.get("sgrants")
    if not W:
        return None
    S = windows_summary(W)
    for k in SG_KEYS:  # a setup that did not run: no figures
        S["median_mpps"].setdefault(k, None)
        S["windows"].setdefault(k, 0)
        if k != "memif_a2b":
            for f in ("ratio_by_setup", "ratio_all_pairs"):
                S[f].setdefault(k, None)
            for f in ("steady_pairs", "pairs"):
                S[f].setdefault(k, 0)
    judged = S["ratio_by_setup"]
    totals = W.get("totals") or {}
    S.update({"ratio_static": slower(judged["xenpv_tx"], judged["xenpv_rx"]),
              "ratio_copy": slower(judged["xenpv-copy_tx"], judged["xenpv-copy_rx"]),
              "copies": {k: ((totals.get(k) or {}).get("static_grant_copies"), (totals.get(k) or {}).get("grant_copies"))
                         for k in SG_KEYS[1:]}})
    return S


def throughput_doc(R, size):
    """The windows that judge the throughput at SIZE bytes (bench/alternate.py's JSON): the
    static-grants step's at 64 (its xenpv_tx and xenpv_rx are xpv-netback's default), their own
    at 256 and 1500; None if none ran."""
    return R.get("sgrants") if size == 64 else R.get("windows", {}).get(size)


def throughput_windows(R, size):
    """throughput_doc(R, SIZE) summarised (windows_summary); None if none ran."""
    W = throughput_doc(R, size)
    return windows_summary(W) if W else None


def sgrants_md(R):
    """Static grants on and off against memif (issue 12's target)."""
    L = ["## 3d. Static grants (netif.h control ring: ADD_GREF_MAPPING)", "",
         "64-byte frames, testpmd over net_xenpv against `xpv-netback --busy-poll` (TX: txonly -> sink, RX: "
         "source -> rxonly) with static grants (the frontend registers its buffer pools; xpv-netback copies with "
         "memcpy into the mapped pages) and without (`--no-static-grants`: a grant copy per buffer, Linux "
         "netback's answer), against memif a2b. This VM runs in spells of seconds to a minute at two or three "
         "speeds (memif as much as xenpv: the host places its two vCPUs closer or farther apart), so every "
         "setup is started once and they take turns forwarding "
         "(`bench/alternate.py`): short windows, each xenpv window between two memif windows. A pair is that "
         "window's rate over the mean of its two memif windows; it is steady when those two agree within "
         f"{int(round((WINDOW_STEADY - 1) * 100))}% (one spell). Judged: per setup the median of its steady pairs "
         f"(at least {WINDOW_MIN_STEADY}), then the slower direction.", ""]
    S = sgrants_summary(R)
    if not S:
        return L + ["not run in this bench.", ""]
    m = S["median_mpps"]
    L += [f"Windows of {fmt(S['seconds'], 'g')} s after {fmt(S['warm'], 'g')} s of warm-up, {S['rounds']} rounds.", "",
          "| setup | Mpps (median of its windows) | over memif (median of steady pairs) | steady / all pairs "
          "| over memif (median of all pairs) | copies by memcpy / grant copy (netback) |",
          "|---|---:|---:|---:|---:|---|",
          f"| memif a2b | {fmt(m['memif_a2b'])} ({S['windows']['memif_a2b']}) | - | - | - | - |"]
    for k, label in SG_SETUPS[1:]:
        a, b = S["copies"][k]
        L.append(f"| {label} | {fmt(m[k])} ({S['windows'][k]}) | {fmt(S['ratio_by_setup'][k], '.3f')} | "
                 f"{S['steady_pairs'][k]} / {S['pairs'][k]} | {fmt(S['ratio_all_pairs'][k], '.3f')} | "
                 f"{fmt(a, ',.0f')} / {fmt(b, ',.0f')} |")
    L += ["", f"xenpv/memif: {fmt(S['ratio_static'], '.3f')} with static grants, "
          f"{fmt(S['ratio_copy'], '.3f')} with grant copies (the slower direction).", ""]
    return L


def xen_tcp_lines(R):
    """The tcp-through-domu line(s) the TCP targets judge: this bench's real-Xen rounds
    (scripts/bench.sh, step 6) when it ran them, else the last make e2e-xen's."""
    return ((R.get("e2e_tcp") or {}).get("tcp") or (R.get("e2e") or {}).get("tcp") or [])


def tcp_md(R):
    """TCP with and without offloads: over xpv-netback (this run) and through a
    PV domU on real Xen (the last make e2e-xen's tcp-through-domu check)."""
    L = ["## 3c. TCP offloads", "",
         "Over xpv-netback's bridge: xpv-pktgen `--proto tcp` from one guest to another whose sink recomputes "
         "every IPv4/TCP checksum and checks every byte by its sequence number. The sender goes as fast as its "
         "ring takes frames; goodput is the stream bytes received intact over the sender's seconds; loss is what "
         "the bridge dropped (a full inbox or RX queue: the sender is not paced). Medians over alternating rounds.", ""]
    runs = R.get("tcp") or {}
    cases = [("seg1500", "1514-byte segments, full checksums"),
             ("seg1500-csum", "1514-byte segments, partial checksums (csum_blank)"),
             ("tso64k", "64 KiB TSO packets, cut by netback for a sink without GSO"),
             ("tso64k-lro", "64 KiB TSO packets, whole to a sink with LRO")]
    if runs:
        L += ["| case | rounds | goodput Gbit/s | sink packets/s | sender packets/s | loss | bad |",
              "|---|---:|---:|---:|---:|---:|---:|"]
        for name, what in cases:
            v = list((runs.get(name) or {}).values())
            if not v:
                continue
            L.append(f"| {what} | {len(v)} | {fmt(median([x['gbit'] for x in v]), '.2f')} | "
                     f"{fmt(median([x['sink_pps'] for x in v]), ',.0f')} | {fmt(median([x['tx_pps'] for x in v]), ',.0f')} | "
                     f"{fmt(median([x['loss_pct'] for x in v]), '.2f')}% | {sum(x['bad'] for x in v)} |")
        base = median([x["gbit"] for x in (runs.get("seg1500") or {}).values()])
        best = median([x["gbit"] for x in (runs.get("tso64k-lro") or {}).values()])
        if base and best:
            L += ["", f"TSO out and LRO in against 1514-byte segments: {best / base:.1f}x the goodput."]
        L += [""]
    else:
        L += ["not run in this bench.", ""]
    tcp = xen_tcp_lines(R)
    us = xen_tcp_figures((tcp or [""])[-1])["s_us"]
    own = bool((R.get("e2e_tcp") or {}).get("tcp"))
    where = (f"this bench's run of check tcp-through-domu alone, {R['e2e_tcp'].get('rounds') or '?'} rounds"
             if own else "the last `make e2e-xen`, check tcp-through-domu, one round (this bench ran none: --no-xen, "
             "--quick or a failed run)")
    L += [f"Through a PV domU on real Xen ({where}: iperf3 between two "
          "of dom0's network namespaces whose only path is the domU; the target: offloads on at least 2x offloads "
          "off and at least the kernel bridge, the on/kernel ratios judged on the medians of the rounds):", ""]
    L += (["    " + l.strip() for l in tcp] if tcp else ["not measured (no real-Xen run in this bench, none in "
                                                         "build/e2e-xen/e2e.log)."]) + [""]
    win = (R.get("e2e_tcp") or {}).get("windows")
    if win:
        L += ["The on/kernel targets are judged on check tcp-windows (this bench's run): the kernel bridge on vifs 2 "
              "and 3 and a DPDK way on vifs 4 and 5 (dom0's second pair of bridges between the same namespaces) are "
              "both ready and take turns, iperf3 for a few seconds each, every DPDK window between two kernel-bridge "
              "windows; a pair is that window over the mean of the two, steady when those agree within 25% (one of "
              "the VM's speed spells, as for memif in section 3d); per way the median of the steady pairs (at least "
              "3). Between its windows testpmd is stopped (its lcore waits, it does not poll) and xpv-fwd sleeps on "
              "RX interrupts, so each window has the domU to itself:", "", "    " + win.strip(), ""]
    L += ["testpmd busy-polls the domU's one vCPU, and dom0's netback does its copies on the same two "
          "physical CPUs (QEMU's), so testpmd takes CPU time from netback whether packets come or not; "
          "the kernel bridge measured beside a busy loop in the domU (the last figure) shows what that costs "
          "the kernel. xpv-fwd (examples/xpv-fwd.cc, in the dpdk-pmd-xenpv package) forwards with the same "
          "offloads but sleeps on RX interrupts when idle, as l3fwd-power does; the share of the vCPU it "
          f"used is in the line above. testpmd with the device argument idle_sleep={us} (\"testpmd on with "
          f"idle_sleep={us}\") is the same testpmd whose forwarding lcore sleeps after 64 empty polls in a row, until "
          f"a packet arrives or {us} us pass, instead of spinning, and (since the run says \"zerocopy=1\") forwards the pages netback filled by their "
          "grants, as xpv-fwd zero-copy does; \"idle_wait=xen\" is that testpmd again with its sleeps spent with the "
          "vCPU blocked in Xen (SCHEDOP_poll on its RX ports) instead of the guest kernel. The line ends with the CPU time Xen accounted to dom0 and to the domU "
          "over each run (xl list), in % of one physical CPU: when the two add up to all the physical CPUs, "
          "the path is bound by CPU, and the domU's share is what its forwarding costs dom0. Last, where packets "
          "were lost: TCP's retransmits, netback's drops to and from the domU, testpmd's TX-dropped (its engines "
          "run with `set fwd ... retry`: a full TX ring makes them wait up to 50 ms instead of dropping a 64 KiB "
          "TSO packet, some 45 segments) and xpv-fwd's drops (it holds back what a full ring did not take).", ""]
    return L


def write_md(J, R, made, out):
    m = J["machine"]
    L = ["# xpv benchmarks", "",
         f"Generated by `make bench` (scripts/bench.sh, bench/report.py) on {J['generated']}, "
         f"in {J['bench_seconds']} s; commit {m['git_commit']}"
         + (f" with {m['git_dirty_files']} uncommitted file(s)" if m["git_dirty_files"] else "") + ". "
         "All numbers below were measured in that one run; timings on this machine are noisy "
         "(a shared 2-core VM: the load average is recorded below), so only ratios measured in the same "
         "run mean something. Instruction counts (callgrind) are deterministic.", "",
         "## Targets", "", "| target | measured | limit | result |", "|---|---|---|---|"]
    for t in J["targets"]:
        lim = f"{t['op']} {t['limit']:.4g}" if not isinstance(t["limit"], str) else t["limit"]
        if "notifies" in t["target"]:
            lim = f"{t['op']} 1/16 ({t['limit']:.4f})"
        L.append(f"| {t['target']} | {t['shown']} | {lim} | {met_word(t['met'])} |")
    if J["failed_measurements"]:
        L += ["", f"**{J['failed_measurements']} measurement(s) failed in this run** (see the bench output)."]
    L += ["", "## Machine", "",
          f"- {m['cpu_model']}, {m['cpus']} CPUs, {m['hypervisor'] or 'no'} hypervisor, {m['mem_total_mib']} MiB; "
          f"{m['os']}, Linux {m['kernel']}",
          f"- DPDK {m['dpdk']}, g++ {m['gxx'].split()[-1] if m['gxx'] else '?'}, {m['valgrind']}, "
          f"Google Benchmark {m['libbenchmark']}, meson {m['meson']}, build type {m['build_type'] or '?'}",
          f"- hardware performance counters: {m['perf_counters']} (so cycles are TSC cycles at "
          f"{fmt(J.get('tsc_ghz'), '.3f')} GHz, instructions come from callgrind)",
          f"- load average at start / end: {J['load_average'].get('start', '?')} / {J['load_average'].get('end', '?')}",
          ""]

    # Throughput.
    L += ["## 1. Throughput", "",
          "dpdk-testpmd (Debian's, `-d librte_net_xenpv.so`) over net_xenpv against xpv-netback "
          "`--busy-poll`, against two testpmd processes over a net_memif pair. Same two cores for both: "
          "the forwarding lcore of the frontend testpmd (or of the memif server) on core 1, xpv-netback "
          "(or the memif client's forwarding lcore) on core 0; the main lcores mostly sleep.", "",
          "Why source/sink and not loopback: each direction of the frontend's data path is measured on "
          "its own (TX: testpmd `txonly` -> netback `sink`; RX: netback `source` -> testpmd `rxonly`), "
          "exactly like memif `txonly` -> `rxonly`, one producer and one consumer on two cores. Loopback "
          "would put the frontend's TX and RX on one core against the backend doing both copies on the "
          "other, and its rate would depend on how many packets `--tx-first` put in flight. The backend "
          "busy-polls so that neither side sleeps or needs notifications, as a memif peer never does.", "",
          "This VM runs in spells of seconds to a minute at two or three speeds (memif as much as xenpv), so "
          "the setups take turns in one-second windows (`bench/alternate.py`; at 64 bytes the static-grants "
          "step's windows, section 3d, whose xenpv setups with static grants are xpv-netback's default): "
          "each xenpv window between two memif (server txonly -> client rxonly) windows. A rate is the median "
          "of a setup's windows (testpmd's `Tx-pps`, or the receiver's `Rx-pps`, since the last "
          f"`show port stats`); a ratio is the median of the steady pairs (section 3d: the memif windows "
          f"around it within {int(round((WINDOW_STEADY - 1) * 100))}% of each other, at least {WINDOW_MIN_STEADY}); the "
          "target takes the slower direction.", "",
          "| frame | xenpv TX Mpps | xenpv RX Mpps | memif Mpps | TX over memif | RX over memif | ratio (slower) | steady / all pairs TX, RX |",
          "|---|---:|---:|---:|---:|---:|---:|---|"]
    for s in SIZES:
        S = J["throughput_windows"].get(str(s)) or {}
        sp, ap = S.get("steady_pairs", {}), S.get("pairs", {})
        L.append(f"| {s} B | {fmt(J[f'xenpv_tx_mpps_{s}'])} | {fmt(J[f'xenpv_rx_mpps_{s}'])} | "
                 f"{fmt(J[f'memif_a2b_mpps_{s}'])} | {fmt(J[f'ratio_tx_{s}'])} | {fmt(J[f'ratio_rx_{s}'])} | "
                 f"{fmt(J[f'ratio_{s}'])} | {sp.get('xenpv_tx', 0)} / {ap.get('xenpv_tx', 0)}, "
                 f"{sp.get('xenpv_rx', 0)} / {ap.get('xenpv_rx', 0)} |")
    L += [""]
    if "throughput.png" in made:
        L += ["![throughput](throughput.png)", ""]
    t64 = R["throughput"].get(64, {})
    if t64:
        tx = t64.get("xenpv_tx") or {}
        rf, txp = tx.get("ring_full"), tx.get("tx_packets")
        L += ["One run of each at 64 bytes (not compared with each other: runs tens of seconds apart fall in "
              "different spells), the median of its per-second rates: " + ", ".join(
                  f"{k.replace('_', ' ')} {fmt((t64.get(k) or {}).get('mpps'))}" for k in ("xenpv_tx", "xenpv_rx", "memif_a2b", "memif_b2a"))
              + " Mpps; TX ring-full stops per 1000 packets: "
              + (f"{1000 * rf / txp:.1f}" if rf is not None and txp else "n/a") + ".", ""]
    if "throughput_64_series.png" in made:
        L += ["![64-byte per-second rates](throughput_64_series.png)", ""]
    # What bounds throughput.
    L += ["### What bounds xenpv throughput", ""]
    tx64 = (R["throughput"].get(64, {}).get("xenpv_tx") or {})
    if tx64.get("ring_full") is not None and tx64.get("tx_packets"):
        bursts = tx64["tx_packets"] / 32
        L.append(f"- In the 64-byte TX run the frontend's transmit stopped on a full TX ring (or no free slot) "
                 f"{tx64['ring_full']:,} times while it sent {tx64['tx_packets']:,} packets, "
                 f"{tx64['ring_full'] / bursts:.2f} stops per burst of 32: "
                 + ("the frontend often waits for the backend to free ring slots (backend-bound)."
                    if tx64["ring_full"] > 0.2 * bursts else
                    "the ring was rarely full, so the frontend side (testpmd + PMD + library) is the slower one."))
    lib_tx = R["micro"].get(("tx", 32, 64))
    lib_rx = R["micro"].get(("rx", 32, 64))
    for d, lib in (("tx", lib_tx), ("rx", lib_rx)):
        rate = J.get(f"xenpv_{d}_mpps_64")
        if rate and lib and lib.get("ns_per_pkt"):
            L.append(f"- {d.upper()}: at {rate:.3f} Mpps the forwarding core spends {1e3 / rate:.0f} ns per packet; "
                     f"the library's own share (ideal backend, burst 32) is {lib['ns_per_pkt']:.0f} ns "
                     f"({100 * lib['ns_per_pkt'] * rate / 1e3:.0f}%).")
    for d, name in (("tx", "sink"), ("rx", "source")):
        p = R["nbprof"].get(d)
        lib = R["callgrind"].get((d, 32, 64))
        if p:
            top = ", ".join(f"`{f['function']}` {f['per_packet']:.0f}" for f in p["functions_self"][:6])
            L.append(f"- xpv-netback `{name}` (busy-poll, worker's ring handling only, under callgrind): "
                     f"{p['per_packet']:.0f} instructions per packet"
                     + (f", against {lib['per_packet']:.0f} for the library's {d.upper()} path" if lib else "")
                     + f". Top: {top}.")
    rxp = R["nbprof"].get("rx")
    if rxp:
        fill = sum(f["per_packet"] for f in rxp["functions_self"] if "source_fill" in f["function"])
        if fill:
            L.append(f"- In the RX direction the packets come from xpv-netback's `source` mode, which numbers every "
                     f"frame and copies its ramp payload from a table (`source_fill`, {fill:.0f} instructions per "
                     "packet), where testpmd `txonly` on the memif side sends a prepared template: the RX-way "
                     "comparison measures the generators as well as the data paths.")
    locks = {}
    for d, p in R["nbprof"].items():
        locks[d] = sum(f["per_packet"] for f in p["functions_self"]
                       if "mutex" in f["function"] or "_grant" in f["function"] or "Hypervisor::copy" in f["function"])
    if locks:
        L.append("- The simulated hypervisor's grant copy (`sim::Hypervisor::copy`, `acquire_grant`/`release_grant`, "
                 "a spinlock per group of active grant entries, like Xen's active-entry lock, and the checks Xen "
                 "makes) costs the backend "
                 + ", ".join(f"{v:.0f} instructions per packet in {d.upper()}" for d, v in sorted(locks.items()))
                 + "; the frame it copies was written (TX) or is read (RX) by the frontend's core, so every "
                 "packet's cache lines cross between the two cores.")
    L += ["", "The memif pair is two DPDK processes copying through one shared region; the xenpv setup pays, per "
          "packet, the PMD's mbuf copy into a granted page, the library's ring work, and the simulated dom0's "
          "grant copy and response. The lines above name the half that is the heavier one in this run.", ""]

    # Per-packet cost.
    L += ["## 2. Library data path, per packet", "",
          "One live queue (`QueueImpl` over an in-process simulated hypervisor, as the fuzz target sets it up), "
          "poll mode, with an *ideal backend* (bench/ideal_backend.h): the public `ring::BackRing` on the "
          "queue's own ring pages answers every TX request and fills RX buffers between bursts, never notifies, "
          "keeps `req_event` far ahead (so the frontend never notifies either) and copies no data. Its cost is "
          "outside the measurement: callgrind collects only inside `xpv::Queue::transmit` / "
          "`xpv::Queue::receive_raw` (everything they call included; `--toggle-collect`, counters zeroed "
          "after a warm-up of 4 ring cycles), Google Benchmark times only the frontend call (serialised TSC, "
          "the timer's own cost subtracted, median of repetitions). TX responses are reaped inside "
          "`transmit` when the ring runs short (poll mode), so their cost is included, amortised. "
          "64-byte frames unless noted; the RX figures include the benchmark's minimal receive callback.", "",
          "| path | burst | instructions/packet | TSC cycles/packet | ns/packet |", "|---|---:|---:|---:|---:|"]
    for d in ("tx", "rx"):
        for b in BURSTS:
            L.append(f"| {d.upper()} | {b} | {fmt(J.get(f'{d}_instr_per_pkt_b{b}'), '.1f')} | "
                     f"{fmt(J.get(f'{d}_tsc_cycles_per_pkt_b{b}'), '.0f')} | {fmt(J.get(f'{d}_ns_per_pkt_b{b}'), '.1f')} |")
        L.append(f"| {d.upper()}, 1500-byte frames | 32 | {fmt(J.get(f'{d}_instr_per_pkt_b32_s1500'), '.1f')} | "
                 f"{fmt(J.get(f'{d}_tsc_cycles_per_pkt_b32_s1500'), '.0f')} | {fmt(J.get(f'{d}_ns_per_pkt_b32_s1500'), '.1f')} |")
    L.append(f"| RX, idle poll (empty ring), per call | 32 | {fmt(J.get('rx_empty_instr_per_call'), '.1f')} | | |")
    L += [""]
    for f in ("datapath_instructions.png", "datapath_cycles.png", "datapath_profile.png"):
        if f in made:
            L += [f"![{f}]({f})", ""]
    L += ["### Where the instructions go (burst 32, callgrind, by function)", "", analysis_datapath(R), ""]
    for d in ("tx", "rx"):
        p = R["callgrind"].get((d, 32, 64))
        if p:
            L += [profile_md(p, f"{d.upper()}, burst 32, 64-byte frames", TARGET_INSTR_B32)]

    # Events.
    L += ["## 3. Event mode under sustained traffic", "",
          "xpv-pktgen `--role gen --mode event` (a window of 256 frames in flight, bursts of 32; it sleeps on the "
          "queue's event fds whenever a pass found nothing to do) against xpv-netback loopback (its workers sleep "
          "on their event channels: the Linux netback situation), pktgen on core 1, netback on core 0; then the "
          "same with `--fault late-tx-rsp --fault-arg 1` (every TX response held back 1 ms after the first 1000). "
          "Per packet = per frame transmitted (each also comes back once).", "",
          "| run | pps | events/packet | spurious events | spurious % of events | notifies/packet | delayed EOIs | TX ring full | backend: events / spurious / notifies sent |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for n, e in sorted(R["events"].items()):
        L.append(f"| {n} | {fmt(e['pps'], ',.0f')} | {fmt(e['events_per_pkt'], '.4f')} | {fmt(e['spurious_events'], ',')} | "
                 f"{fmt(e['spurious_pct'], '.4f')} | {fmt(e['notifies_per_pkt'], '.4f')} | {fmt(e['delayed_eois'], ',')} | "
                 f"{fmt(e['ring_full'], ',')} | {fmt(e['netback_events'], ',')} / {fmt(e['netback_spurious_events'], ',')} / "
                 f"{fmt(e['netback_notifies'], ',')} |")
    L += [""]
    if "events.png" in made:
        L += ["![events](events.png)", ""]

    # Multi-queue.
    L += ["## 4. Multi-queue", "",
          "testpmd `io --tx-first`, `--rxq N --txq N`, one forwarding lcore (core 1) for all queues, over net_xenpv "
          "against xpv-netback loopback on core 0 (one worker per queue; they sleep on event channels here, since N "
          "busy-polling workers on one core would measure the scheduler). 64-byte frames; the rate is the median "
          "per-second `Rx-pps` of the port.", "",
          "| queues | Mpps (median) | slowest / fastest second | seconds with no packet | packets received per queue | notifies/packet | TX ring-full stops |",
          "|---:|---:|---|---:|---|---:|---:|"]
    for nq, mq in sorted(R["mq"].items()):
        L.append(f"| {nq} | {fmt(mq['mpps'])} | {fmt(mq['min_mpps'])} / {fmt(mq['max_mpps'])} | {mq['zero_seconds']} | "
                 f"{', '.join(fmt(x, ',') for x in mq['per_queue_rx_packets'])} | "
                 f"{fmt(mq['notifies_per_pkt'], '.4f')} | {fmt(mq['ring_full'], ',')} |")
    L += [""]
    stalls = [f"{nq} queue(s): {mq['zero_seconds']}" for nq, mq in sorted(R["mq"].items()) if mq["zero_seconds"]]
    stalls += [f"{k} {s} B: {e['zero_seconds']}" for s, t in sorted(R["throughput"].items())
               for k, e in sorted(t.items()) if e.get("zero_seconds")]
    if stalls:
        L += ["**Stalls:** per-second samples with no packet at all, after forwarding had started: "
              + "; ".join(stalls) + ". Either the machine took the cores away for a whole second or a "
              "notification was lost; the raw logs are in build/bench-logs/.", ""]
    if "multiqueue.png" in made:
        L += ["![multi-queue](multiqueue.png)", ""]

    # The seeds' experiment.
    L += seed_md(R)
    L += tcp_md(R)
    L += sgrants_md(R)
    L += nbprof_md(R)

    # Real Xen.
    L += ["## 5. Real Xen (`make e2e-xen`)", ""]
    if R["e2e"] is None:
        L += ["not run (build/e2e-xen/e2e.log is absent).", ""]
    elif not R["e2e"]["lines"]:
        L += [f"not run: build/e2e-xen/e2e.log (written {R['e2e']['mtime']}) has no line containing \"pps\" "
              "(no throughput figure from real Xen yet).", ""]
    else:
        L += [f"Lines containing \"pps\" in build/e2e-xen/e2e.log (written {R['e2e']['mtime']}), verbatim:", "", "```"]
        L += R["e2e"]["lines"] + ["```", ""]

    # Wake-up latency.
    L += ["## 6. Wake-up latency from sleep", "",
          "l3fwd-power `--interrupt-only` (Debian's DPDK example; one lcore on core 1, which serves the queue "
          "and sleeps in `rte_epoll_wait()` after 300 empty polls) over net_xenpv against xpv-netback in bridge "
          "mode; xpv-pktgen (event mode) sends rounds of one burst of 32 UDP frames, waits until all are back, "
          "then idles. Per round: the first frame's time from xpv-pktgen's transmit to its forwarded copy back "
          "(first frame in to first frame out of l3fwd-power, plus the two trips through netback). *asleep*: "
          "50 ms idle between rounds, so each burst finds l3fwd-power asleep; *awake*: no idle, it is still "
          "polling: the same path without the wake-up. The difference is the cost of waking on the event. "
          "A wake-up that missed the event would wait for l3fwd-power's 10 ms epoll timeout.", "",
          "| run | idle between rounds | rounds | median us | p99 us | max us | wake-ups on an rx interrupt | frames lost |",
          "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for n, w in sorted(R["wakeup"].items()):
        L.append(f"| {n} | {w['gap_ms']} ms | {w['rounds']} | {fmt(w['median_us'], '.0f')} | {fmt(w['p99_us'], '.0f')} | "
                 f"{fmt(w['max_us'], '.0f')} | {w['wake_ups']} | {w['frames_lost']} |")
    if not R["wakeup"]:
        L.append("| not run | | | | | | | |")
    L += [""]

    L += ["## Reproducing", "",
          f"`make bench` ({J['bench_seconds']} s for scripts/bench.sh in this run). Raw logs: `build/bench-logs/` (testpmd, xpv-netback, xpv-pktgen logs, "
          "callgrind dumps: `callgrind_annotate build/bench-logs/cg-tx-b32-s64.callgrind`). "
          "The benchmark sources are in `bench/`.", ""]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(L))


def terminal_table(J):
    print()
    print("=" * 78)
    print(" xpv benchmarks (one run; see bench/results/report.md)")
    print("=" * 78)
    print(f" {'throughput (Mpps)':20} {'xenpv TX':>9} {'xenpv RX':>9} {'memif':>9} {'TX/memif':>9} {'RX/memif':>9}   (windows)")
    for s in SIZES:
        print(f" {str(s) + '-byte frames':20} {fmt(J[f'xenpv_tx_mpps_{s}']):>9} {fmt(J[f'xenpv_rx_mpps_{s}']):>9} "
              f"{fmt(J[f'memif_a2b_mpps_{s}']):>9} {fmt(J[f'ratio_tx_{s}']):>9} {fmt(J[f'ratio_rx_{s}']):>9}")
    print()
    print(f" {'library data path':20} {'burst 1':>9} {'burst 8':>9} {'burst 32':>9}   (instructions | TSC cycles per packet)")
    for d in ("tx", "rx"):
        print(f" {d.upper() + ' instructions':20} " + " ".join(f"{fmt(J.get(f'{d}_instr_per_pkt_b{b}'), '.1f'):>9}" for b in BURSTS))
        print(f" {d.upper() + ' TSC cycles':20} " + " ".join(f"{fmt(J.get(f'{d}_tsc_cycles_per_pkt_b{b}'), '.0f'):>9}" for b in BURSTS))
    print(f" {'RX idle poll':20} {fmt(J.get('rx_empty_instr_per_call'), '.1f'):>9} instructions per empty receive call")
    print()
    for n, e in sorted(J["event_runs"].items()):
        print(f" {n:20} events/pkt {fmt(e['events_per_pkt'], '.4f')}  spurious {fmt(e['spurious_pct'], '.4f')}%  "
              f"notifies/pkt {fmt(e['notifies_per_pkt'], '.4f')}  delayed EOIs {fmt(e['delayed_eois'], ',')}")
    mq = "  ".join(f"{q} queue(s) {fmt(J.get(f'mq_mpps_q{q}'))}" for q in (1, 2, 4))
    print(f" {'multi-queue (Mpps)':20} {mq}")
    nb = "  ".join(f"{d.upper()} {fmt(J.get(f'netback_{d}_instr_per_pkt'), '.0f')} "
                   f"(grant copy {fmt(J.get(f'netback_{d}_copy_instr_per_pkt'), '.0f')})" for d in ("tx", "rx"))
    print(f" {'netback instr/pkt':20} {nb}")
    for n, w in sorted(J.get("wakeup_runs", {}).items()):
        print(f" {n:20} first frame in to out: median {fmt(w['median_us'], '.0f')} us, p99 {fmt(w['p99_us'], '.0f')} us")
    print(f" {'real Xen (e2e-xen)':20} {J['e2e_xen']}")
    for l in J["e2e_xen_pps_lines"] or []:
        print(f"   {l}")
    print()
    print(f" {'target':58} {'result':>18}")
    for t in J["targets"]:
        res = "n/a" if t["met"] is None else ("MET" if t["met"] else "MISSED")
        print(f" {t['target'][:58]:58} {res:>18}")
        print(f"   measured {t['shown']}, limit {t['op']} {t['limit']:.4g}")
    print("=" * 78)


def main():
    ap = argparse.ArgumentParser(description="xpv benchmark report")
    ap.add_argument("--rate", nargs=2, metavar=("LOG", "FIELD"))
    ap.add_argument("--warm", type=int, default=1, help="with --rate: samples of warm-up to drop")
    ap.add_argument("--nbprof", nargs=3, metavar=("CALLGRIND", "NETBACK_JSON", "DIR"))
    ap.add_argument("--wakeup", nargs=2, metavar=("PKTGEN_JSON", "L3FWD_LOG"))
    ap.add_argument("--sgrants-table", metavar="MANIFEST", help="print the static-grants table of a bench's logs")
    ap.add_argument("--nbprof-table", metavar="MANIFEST",
                    help="print xpv-netback's per-packet instructions with and without static grants")
    ap.add_argument("--logs")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--build", default="build")
    ap.add_argument("--bench-bin", default="")
    ap.add_argument("--started", type=int, default=0)
    ap.add_argument("--failed", type=int, default=0)
    a = ap.parse_args()
    if a.rate:
        return cmd_rate(*a.rate, warm=a.warm)
    if a.nbprof:
        return cmd_nbprof(*a.nbprof)
    if a.wakeup:
        return cmd_wakeup(*a.wakeup)
    if a.sgrants_table:
        print("\n".join(sgrants_md(collect(os.path.dirname(a.sgrants_table), a.root))))
        return 0
    if a.nbprof_table:
        print("\n".join(nbprof_md(collect(os.path.dirname(a.nbprof_table), a.root))))
        return 0
    if not a.logs:
        ap.error("--logs is required")
    R = collect(a.logs, a.root)
    prev = load_json(os.path.join(a.out, "latest.json"))  # before this run replaces it
    J = summarise(R, machine_info(a.root, a.build), a.started, a.failed)
    J["targets"] += no_rise_targets(J, prev)
    os.makedirs(a.out, exist_ok=True)
    for f in os.listdir(a.out):
        if f.endswith(".png"):
            os.remove(os.path.join(a.out, f))
    made = plots(J, R, a.out)
    J["plots"] = made
    tmp = os.path.join(a.out, "latest.json.tmp")
    with open(tmp, "w") as f:
        json.dump(J, f, indent=1, sort_keys=False, default=str)
        f.write("\n")
    os.replace(tmp, os.path.join(a.out, "latest.json"))
    write_md(J, R, made, a.out)
    terminal_table(J)
    return 0


if __name__ == "__main__":
    sys.exit(main())
