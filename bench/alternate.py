#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Static grants against memif in alternating one-second windows (issue 12's comparison).

    python3 bench/alternate.py --pmd SO --netback BIN --logs DIR --out FILE.json [--rounds N]
                               [--seconds S] [--warm S] [--size BYTES] [--setups NAME,...]

This 2-core VM runs in spells: for seconds to a minute at a time every setup (memif too)
forwards at a third of its usual rate, with no steal time in the guest (the host places the
two vCPUs apart: a cache line's round trip between them takes 5x longer). Runs of eight
seconds a few tens of seconds apart fall in different spells as often as not, so a ratio of
two such runs measures the spells. Here every setup is started once and kept:
memif (a txonly server and an rxonly client) and four xenpv setups (testpmd over net_xenpv
against its own `xpv-netback --busy-poll`: TX to a sink and RX from a source, with static
grants and with `--no-static-grants`). Only one forwards at a time. A round is

    memif, xenpv TX, memif, xenpv RX, memif, TX grant copy, memif, RX grant copy, (memif ...)

each window WARM seconds of warm-up and SECONDS measured, so that every xenpv window has a
memif window right before and right after it, a second or two away. Frames are --size bytes
(64 by default); --setups picks xenpv setups by name (make bench's throughput step at 256 and
1500 bytes runs xenpv_tx,xenpv_rx: xpv-netback's default, static grants).

A window's rate is testpmd's own "Throughput (since last show)" of `show port stats`: one
at the end of the warm-up, the next SECONDS later. Between its windows a testpmd is stopped
(`stop`: its forwarding lcore waits, it does not poll) and its xpv-netback is paused with
SIGSTOP, so that the setup forwarding has both cores.

Writes FILE.json: {"size", "seconds", "warm", "rounds", "windows": [{"setup", "round", "start",
"mpps"}...] in the order they ran, "netback": {setup: its --stats-file}}. bench/report.py
judges it. Exits 1 with a message naming what failed; every process it started is stopped.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

EAL = ["--no-huge", "-m", "1024", "--no-pci", "--no-shconf"]
PROMPT = b"testpmd> "
# (setup, xpv-netback mode, testpmd forwarding mode, rate field, extra xpv-netback arguments)
XENPV_SETUPS = (("xenpv_tx", "sink", "txonly", "Tx-pps", []),
                ("xenpv_rx", "source", "rxonly", "Rx-pps", []),
                ("xenpv-copy_tx", "sink", "txonly", "Tx-pps", ["--no-static-grants"]),
                ("xenpv-copy_rx", "source", "rxonly", "Rx-pps", ["--no-static-grants"]))


class Failed(Exception):
    pass


class Testpmd:
    """An interactive dpdk-testpmd on cores 0 and 1, driven through its stdin a command at a time."""

    def __init__(self, name, logs, main_lcore, eal, app):
        self.name, self.log = name, os.path.join(logs, name + ".testpmd.log")
        self.out = open(self.log, "wb")
        # Line-buffered: a command's output is in the log before its next prompt.
        self.p = subprocess.Popen(
            ["stdbuf", "-oL", "dpdk-testpmd", "-l", "0,1", "--main-lcore", str(main_lcore), *EAL,
             "--file-prefix", f"xpvalt{os.getpid()}-{name}", *eal, "--", "-i", "--total-num-mbufs=32768", *app],
            stdin=subprocess.PIPE, stdout=self.out, stderr=subprocess.STDOUT)
        self.wait_prompt(0, 120)

    def text_from(self, offset):
        with open(self.log, "rb") as f:
            f.seek(offset)
            return f.read()

    def wait_prompt(self, offset, secs):
        """Until the log has a prompt after OFFSET."""
        deadline = time.monotonic() + secs
        while PROMPT not in self.text_from(offset):
            if self.p.poll() is not None:
                raise Failed(f"{self.name}: testpmd exited ({self.p.returncode}); see {self.log}")
            if time.monotonic() > deadline:
                raise Failed(f"{self.name}: testpmd gave no prompt in {secs} s; see {self.log}")
            time.sleep(0.01)

    def cmd(self, command, secs=30):
        before = os.path.getsize(self.log)
        try:
            self.p.stdin.write(command.encode() + b"\n")
            self.p.stdin.flush()
        except BrokenPipeError:
            raise Failed(f"{self.name}: testpmd is gone (writing '{command}'); see {self.log}") from None
        self.wait_prompt(before, secs)
        return self.text_from(before).decode(errors="replace")

    def pps(self, field):
        """FIELD of `show port stats 0`: packets a second since the last `show port stats 0`."""
        out = self.cmd("show port stats 0")
        m = re.search(field + r":\s+(\d+)", out)
        if not m:
            raise Failed(f"{self.name}: no {field} in `show port stats 0`; see {self.log}")
        return int(m.group(1))

    def quit(self):
        """Quits; SIGKILL after 20 s. A memif peer whose partner left may crash on its way out
        (DPDK 22.11): the exit status is not judged."""
        if self.p.poll() is None:
            try:
                self.p.stdin.write(b"quit\n")
                self.p.stdin.flush()
            except (BrokenPipeError, ValueError):
                pass
            try:
                self.p.wait(20)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.out.close()


class Netback:
    """xpv-netback on core 0, busy-polling; paused (SIGSTOP) while its setup is not measured."""

    def __init__(self, name, path, logs, run, size, args):
        self.name = name
        self.sock = os.path.join(run, name + ".sock")
        self.stats = os.path.join(logs, name + ".netback.json")
        self.log = os.path.join(logs, name + ".netback.log")
        if os.path.exists(self.sock):
            os.unlink(self.sock)
        with open(self.log, "wb") as out:
            self.p = subprocess.Popen(["taskset", "-c", "0", path, "--socket", self.sock, "--stats-file",
                                       self.stats, "--busy-poll", "--source-size", str(size), *args],
                                      stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while b"listening on" not in open(self.log, "rb").read():
            if self.p.poll() is not None or time.monotonic() > deadline:
                raise Failed(f"{name}: xpv-netback did not start; see {self.log}")
            time.sleep(0.05)

    def pause(self):
        self.p.send_signal(signal.SIGSTOP)

    def resume(self):
        self.p.send_signal(signal.SIGCONT)

    def stop(self):
        """SIGTERM (it writes its --stats-file on the way out); SIGKILL after 15 s."""
        if self.p.poll() is None:
            self.resume()
            self.p.terminate()
            try:
                self.p.wait(15)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def window(start, stop, sampler, warm, seconds):
    """Starts a setup, measures it for SECONDS after WARM, stops it; its rate in packets a second."""
    start()
    try:
        time.sleep(warm)
        sampler()  # the measured interval starts here
        time.sleep(seconds)
        return sampler()
    finally:
        stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pmd", required=True, help="librte_net_xenpv.so where EAL loads it")
    ap.add_argument("--netback", required=True, help="the xpv-netback binary")
    ap.add_argument("--logs", required=True, help="folder for the processes' logs")
    ap.add_argument("--run", help="folder for sockets (default: --logs)")
    ap.add_argument("--out", required=True, help="the windows, as JSON")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--seconds", type=float, default=1.0, help="measured seconds per window")
    ap.add_argument("--warm", type=float, default=0.3, help="warm-up seconds per window")
    ap.add_argument("--size", type=int, default=64, help="frame bytes (60 to 1514)")
    ap.add_argument("--setups", default=",".join(s[0] for s in XENPV_SETUPS),
                    help="xenpv setups, comma-separated, in their turn's order (default: all)")
    a = ap.parse_args()
    if a.rounds < 1 or a.seconds <= 0 or a.warm < 0:
        ap.error("--rounds wants at least 1, --seconds more than 0, --warm at least 0")
    if not 60 <= a.size <= 1514:
        ap.error(f"--size {a.size}: want 60 to 1514 bytes (an Ethernet frame without its FCS)")
    known = {s[0]: s for s in XENPV_SETUPS}
    names = [n for n in a.setups.split(",") if n]
    unknown = [n for n in names if n not in known]
    if unknown or not names or len(set(names)) != len(names):
        ap.error(f"--setups '{a.setups}': want distinct names of {', '.join(known)}")
    setups = [known[n] for n in names]
    run = a.run or a.logs
    # bench.sh's clean-up sends SIGTERM: stop what was started on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    testpmds, netbacks, windows = [], {}, []
    try:
        sock = os.path.join(run, "alternate-memif.sock")
        if os.path.exists(sock):
            os.unlink(sock)
        memif = f"socket={sock},socket-abstract=no"
        # The server (txonly) forwards on core 1, the client (rxonly) on core 0.
        ma = Testpmd("alternate-memif-a", a.logs, 0, ["--vdev", f"net_memif0,role=server,{memif}"],
                     ["--forward-mode=txonly", f"--txpkts={a.size}"])
        testpmds.append(ma)
        mb = Testpmd("alternate-memif-b", a.logs, 1, ["--vdev", f"net_memif0,role=client,{memif}"],
                     ["--forward-mode=rxonly", f"--txpkts={a.size}"])
        testpmds.append(mb)
        xenpv = {}
        for setup, mode, fwd, field, extra in setups:
            nb = Netback(f"alternate-{setup}", a.netback, a.logs, run, a.size, ["--mode", mode, *extra])
            netbacks[setup] = nb
            tp = Testpmd(f"alternate-{setup}", a.logs, 0, ["-d", a.pmd, "--vdev", f"net_xenpv0,backend=sim:{nb.sock}"],
                         [f"--forward-mode={fwd}", f"--txpkts={a.size}"])
            testpmds.append(tp)
            nb.pause()
            xenpv[setup] = (nb, tp, field)

        def memif_start():
            mb.cmd("start")
            ma.cmd("start")

        def memif_stop():
            ma.cmd("stop")
            mb.cmd("stop")

        t0 = time.monotonic()

        def measure(setup, rnd, start, stop, sampler):
            t = time.monotonic() - t0
            pps = window(start, stop, sampler, a.warm, a.seconds)
            if pps <= 0:
                raise Failed(f"{setup}: no packets in round {rnd}'s window; see its logs in {a.logs}")
            windows.append({"setup": setup, "round": rnd,
                            "start": round(t, 3), "mpps": pps / 1e6})

        def memif_window(rnd):
            measure("memif_a2b", rnd, memif_start, memif_stop, lambda: mb.pps("Rx-pps"))

        memif_window(1)
        for rnd in range(1, a.rounds + 1):
            for setup, (nb, tp, field) in xenpv.items():
                def start(nb=nb, tp=tp):
                    nb.resume()
                    tp.cmd("start")

                def stop(nb=nb, tp=tp):
                    tp.cmd("stop")
                    nb.pause()
                measure(setup, rnd, start, stop, lambda tp=tp, field=field: tp.pps(field))
                memif_window(rnd)
        status = 0
    except Failed as e:
        print(f"alternate: {e}", file=sys.stderr)
        status = 1
    finally:
        for nb in netbacks.values():
            nb.resume()  # a frontend closing says goodbye to its backend
        for tp in reversed(testpmds):
            tp.quit()
        for nb in netbacks.values():
            nb.stop()
    with open(a.out + ".tmp", "w") as f:
        json.dump({"size": a.size, "seconds": a.seconds, "warm": a.warm, "rounds": a.rounds, "windows": windows,
                   "netback": {k: nb.stats for k, nb in netbacks.items()}}, f, indent=1)
    os.replace(a.out + ".tmp", a.out)
    return status


if __name__ == "__main__":
    sys.exit(main())
