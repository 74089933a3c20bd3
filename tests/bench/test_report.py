#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Checks of bench/report.py's statistics on made-up rounds (no bench run needed).

Prints one 'CHECK bench-report:<test> PASS|FAIL ...' line per test (scripts/run-tests.sh counts them).
    tests/bench/test_report.py
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "..", "bench"), os.path.join(HERE, "..", "support")]
import check_lines  # noqa: E402
import report  # noqa: E402


def windows(*rounds, first_memif=50):
    """{"sgrants": bench/alternate.py's windows} from rounds of (tx, memif, rx, memif, copy_tx, memif,
    copy_rx, memif) rates, the run opening with a memif window of FIRST_MEMIF; None leaves a window out."""
    keys = ["xenpv_tx", "memif_a2b", "xenpv_rx", "memif_a2b", "xenpv-copy_tx", "memif_a2b", "xenpv-copy_rx",
            "memif_a2b"]
    w = [{"setup": "memif_a2b", "round": 1, "mpps": first_memif}]
    for i, r in enumerate(rounds):
        w += [{"setup": k, "round": i + 1, "mpps": v} for k, v in zip(keys, r) if v is not None]
    return {"sgrants": {"seconds": 1, "warm": 0.3, "rounds": len(rounds), "windows": w, "totals": {}}}


FAST = (60, 50, 55, 50, 30, 50, 20, 50)  # tx 1.2, rx 1.1, copy_tx 0.6, copy_rx 0.4 of memif's 50
SLOW = (18, 15, 16.5, 15, 9, 15, 6, 15)  # the same ratios in a slow spell


class StaticGrantsWindows(unittest.TestCase):
    def test_each_window_is_set_against_the_memif_windows_around_it(self):
        # Spells change from round to round: the medians of the windows (36.5 against 50 for TX)
        # mix the spells; each window against its memif neighbours gives 1.2 in every round.
        S = report.sgrants_summary(windows(FAST, SLOW[:-1] + (50,), FAST, SLOW[:-1] + (50,), FAST))
        self.assertAlmostEqual(S["ratio_by_setup"]["xenpv_tx"], 1.2)
        self.assertAlmostEqual(S["ratio_by_setup"]["xenpv_rx"], 1.1)
        self.assertAlmostEqual(S["ratio_static"], 1.1)
        self.assertAlmostEqual(S["ratio_copy"], 0.4)

    def test_a_pair_straddling_a_change_of_spell_is_not_judged(self):
        # The spell changes during the TX window of rounds 2 and 3 (memif 50 before it, 15 after):
        # those pairs are not steady; TX is judged on rounds 1, 4 and 5.
        change = (18, 15, 16.5, 15, 9, 15, 6, 50)
        S = report.sgrants_summary(windows(FAST, change, change, FAST, FAST))
        self.assertEqual(S["steady_pairs"]["xenpv_tx"], 3)
        self.assertEqual(S["pairs"]["xenpv_tx"], 5)
        self.assertAlmostEqual(S["ratio_by_setup"]["xenpv_tx"], 1.2)
        self.assertAlmostEqual(S["ratio_by_setup"]["xenpv_rx"], 1.1)  # its pairs are all steady
        self.assertEqual(S["steady_pairs"]["xenpv_rx"], 5)
        # The straddling pairs (18 over the mean of 50 and 15: 0.55) are still shown over all pairs.
        self.assertAlmostEqual(report.median([p["ratio"] for p in report.window_pairs(
            windows(FAST, change, change, change, FAST)["sgrants"]["windows"])["xenpv_tx"]]), 18 / 32.5)

    def test_too_few_steady_pairs_give_no_judged_ratio(self):
        change = (18, 15, 16.5, 15, 9, 15, 6, 50)
        S = report.sgrants_summary(windows(change, change, FAST))
        self.assertEqual(S["steady_pairs"]["xenpv_tx"], 1)
        self.assertIsNone(S["ratio_by_setup"]["xenpv_tx"])
        self.assertIsNone(S["ratio_static"])
        self.assertIn("| xenpv TX, static grants | 18.000 (3) | n/a | 1 / 3 |",
                      "\n".join(report.sgrants_md(windows(change, change, FAST))))

    def test_a_window_without_memif_on_both_sides_is_no_pair(self):
        # Round 2's memif window after TX is missing (the run stopped there).
        S = report.sgrants_summary(windows(FAST, (60, None, 55, 50, 30, 50, 20, 50), FAST, FAST))
        self.assertEqual(S["pairs"]["xenpv_tx"], 3)
        self.assertEqual(S["pairs"]["xenpv_rx"], 3)
        self.assertIsNone(report.sgrants_summary({"sgrants": None}))


def size_windows(size, *rounds):
    """bench/alternate.py's windows at SIZE bytes with xenpv_tx and xenpv_rx only, from rounds of
    (tx, memif, rx, memif) rates, the run opening with a memif window of 50."""
    keys = ["xenpv_tx", "memif_a2b", "xenpv_rx", "memif_a2b"]
    w = [{"setup": "memif_a2b", "round": 1, "mpps": 50}]
    for i, r in enumerate(rounds):
        w += [{"setup": k, "round": i + 1, "mpps": v} for k, v in zip(keys, r)]
    return {"size": size, "seconds": 1, "warm": 0.3, "rounds": len(rounds), "windows": w, "totals": {}}


def bench(**over):
    """What report.collect starts from, with OVER's entries."""
    R = {"throughput": {}, "series_64": {}, "callgrind": {}, "profiles": {}, "micro": {}, "events": {}, "mq": {},
         "nbprof": {}, "e2e": None, "load": {}, "wakeup": {}, "seed": {}, "tcp": {}, "sgrants": None,
         "windows": {}, "nbprof_copy": {}}
    R.update(over)
    return R


class ThroughputWindows(unittest.TestCase):
    def test_each_size_is_judged_on_its_own_windows_not_on_the_single_runs(self):
        # The single 64-byte runs caught memif in a slow spell (8 against 5.8 Mpps: 1.38); the
        # windows say 1.1 (the slower direction, RX). 256 bytes: windows of their own, TX 0.9 and
        # RX 0.8 of memif whatever the spell.
        single = {64: {"xenpv_tx": {"mpps": 8.0}, "xenpv_rx": {"mpps": 8.1}, "memif_a2b": {"mpps": 5.8},
                       "memif_b2a": {"mpps": 6.0}}}
        R = bench(throughput=single, sgrants=windows(FAST, FAST, SLOW[:-1] + (50,), FAST)["sgrants"],
                  windows={256: size_windows(256, (45, 50, 40, 50), (45, 50, 40, 50), (13.5, 15, 12, 15),
                                             (13.5, 15, 12, 15), (13.5, 15, 12, 15))})
        J = report.summarise(R, {}, None, [])
        self.assertAlmostEqual(J["ratio_64"], 1.1)
        self.assertAlmostEqual(J["ratio_tx_64"], 1.2)
        self.assertAlmostEqual(J["ratio_tx_256"], 0.9)
        self.assertAlmostEqual(J["ratio_rx_256"], 0.8)
        self.assertAlmostEqual(J["ratio_256"], 0.8)
        self.assertIsNone(J["ratio_1500"])  # no windows ran at 1500 bytes: no ratio
        self.assertEqual(J["run_memif_a2b_mpps_64"], 5.8)  # the single runs are shown, not judged
        t = next(t for t in J["targets"] if t["target"].startswith("64-byte throughput"))
        self.assertAlmostEqual(t["value"], 1.1)
        self.assertTrue(t["met"])


class RealXenTcpWindows(unittest.TestCase):
    @staticmethod
    def way(name, rate, kernel):
        """A way's windows as the check orders them: a kernel-bridge window, then each of its
        windows followed by one."""
        w = [f"kernel {kernel[0]}"]
        for k in kernel[1:]:
            w += [f"{name} {rate}", f"kernel {k}"]
        return w

    # testpmd-on 0.70 in 4 steady pairs of 6 (the kernel bridge doubles for two windows),
    # fwd-on 2 steady of 6 (n/a), fwd-zc 1.04 and testpmd-sleep 0.96 in every pair.
    WINDOWS = ("CHECK tcp-windows PASS windows of 3s after 1s, the kernel bridge (vifs 2, 3) and a DPDK way (vifs "
               "4, 5) taking turns, TcpInCsumErrors 0 in each: testpmd-on/kernel 0.70 (4 of 6 pairs steady; all "
               "pairs 0.70); CPU dom0%/domU% (medians of the windows): kernel 140/42; Mbit/s in order: " + ", ".join(
                   way.__func__("testpmd-on", 70.0, [100.0] * 5 + [200.0, 100.0])
                   + way.__func__("fwd-on", 90.0, [100.0, 100.0, 100.0, 300.0, 100.0, 300.0, 100.0])
                   + way.__func__("fwd-zc", 104.0, [100.0] * 7) + way.__func__("testpmd-sleep", 96.0, [100.0] * 7)))

    def test_the_windows_judge_the_on_kernel_targets_over_the_rounds(self):
        # The rounds' medians (RealXenTcpFigures.LINE: 0.60, 0.90, 0.95, 0.85) give way to the
        # windows'; a way with too few steady pairs is not judged (n/a), not judged on its rounds.
        R = {"e2e_tcp": {"tcp": [RealXenTcpFigures.LINE], "rounds": "3", "windows": self.WINDOWS}}
        X = report.xen_tcp_judged(R)
        self.assertAlmostEqual(X["on_k"], 0.70)
        self.assertIsNone(X["f_on_k"])
        self.assertAlmostEqual(X["z_on_k"], 1.04)
        self.assertAlmostEqual(X["s_on_k"], 0.96)
        self.assertIn("median of 4 steady of 6 alternating windows", X["on_k_shown"])
        self.assertAlmostEqual(X["on_off"], 3.0)  # on/off: the check's one round, as before
        J = report.summarise(bench(e2e_tcp=R["e2e_tcp"]), {}, None, [])
        t = {x["target"]: x for x in J["targets"]}
        self.assertFalse(t["TCP through a PV domU (real Xen), offloads on / kernel bridge"]["met"])
        self.assertIsNone(t["TCP through a PV domU (real Xen), xpv-fwd (RX interrupts) offloads on / kernel bridge"]["met"])
        self.assertTrue(t["TCP through a PV domU (real Xen), xpv-fwd zerocopy=1 offloads on / kernel bridge"]["met"])

    def test_without_windows_the_rounds_are_judged(self):
        X = report.xen_tcp_judged({"e2e_tcp": {"tcp": [RealXenTcpFigures.LINE], "rounds": "3", "windows": None}})
        self.assertAlmostEqual(X["on_k"], 0.60)
        self.assertAlmostEqual(X["f_on_k"], 0.90)
        self.assertFalse(X["windows"])


class RealXenTcpLine(unittest.TestCase):
    E2E = "CHECK tcp-through-domu PASS ... 1 rounds, kernel bridge/testpmd on/xpv-fwd on/xpv-fwd zero-copy ..."
    OWN = "CHECK tcp-through-domu PASS ... 5 rounds, kernel bridge/testpmd on/xpv-fwd on/xpv-fwd zero-copy ..."

    def test_the_bench_judges_its_own_rounds_over_make_tests_one(self):
        R = {"e2e": {"tcp": [self.E2E]}, "e2e_tcp": {"tcp": [self.OWN], "rounds": "5"}}
        self.assertEqual(report.xen_tcp_lines(R), [self.OWN])

    def test_without_its_own_run_the_last_e2e_line_is_judged(self):
        self.assertEqual(report.xen_tcp_lines({"e2e": {"tcp": [self.E2E]}, "e2e_tcp": None}), [self.E2E])
        self.assertEqual(report.xen_tcp_lines({"e2e": None}), [])


class RealXenTcpFigures(unittest.TestCase):
    LINE = ("CHECK tcp-through-domu PASS iperf3 TCP 10s nsa -> domU -> nsb, TcpInCsumErrors 0 in each: kernel "
            "bridge 1000.0 Mbit/s; net_xenpv offloads off 200.0 Mbit/s; offloads on 600.0 Mbit/s (port 0 LRO "
            "packets 1); on/off 3.00, on/kernel 0.60; xpv-fwd (sleeps on RX interrupts) off 250.0 Mbit/s, on "
            "900.0 Mbit/s (LRO packets 1); 3 rounds, kernel bridge/testpmd on/xpv-fwd on/xpv-fwd zero-copy/"
            "testpmd idle_sleep=50 zero-copy Mbit/s: 1000.0/600.0/900.0/950.0/800.0 1000.0/700.0/800.0/1100.0/"
            "900.0 1000.0/500.0/1000.0/900.0/850.0, medians of the rounds' ratios: testpmd on/kernel 0.60, "
            "xpv-fwd on/kernel 0.90, xpv-fwd zero-copy/kernel 0.95, testpmd idle_sleep=50 zero-copy/kernel 0.85; "
            "testpmd on with idle_sleep=50 zerocopy=1 800.0 Mbit/s (sleeps 5000, packets kept in their pages 90 "
            "of 100, sent by their grants 90), on/kernel 0.80; xpv-fwd on with zerocopy=1 950.0 Mbit/s")
    # What the check printed before testpmd's idle_sleep run took zerocopy=1 too.
    LINE_COPYING = (LINE.replace("idle_sleep=50 zero-copy", "idle_sleep=50")
                    .replace("idle_sleep=50 zerocopy=1", "idle_sleep=50"))

    def test_each_way_is_judged_on_the_median_of_its_rounds(self):
        X = report.xen_tcp_figures(self.LINE)
        self.assertAlmostEqual(X["on_off"], 3.0)
        self.assertAlmostEqual(X["on_k"], 0.60)
        self.assertAlmostEqual(X["f_on_k"], 0.90)
        self.assertAlmostEqual(X["z_on_k"], 0.95)
        self.assertAlmostEqual(X["s_on_k"], 0.85)
        self.assertIn("median of 3 rounds; kernel/testpmd/xpv-fwd/zero-copy/testpmd idle_sleep zero-copy",
                      X["on_k_shown"])
        self.assertTrue(X["s_zc"])

    def test_a_line_whose_idle_sleep_run_copied_is_judged_and_named_so(self):
        X = report.xen_tcp_figures(self.LINE_COPYING)
        self.assertAlmostEqual(X["s_on_k"], 0.85)
        self.assertAlmostEqual(X["z_on_k"], 0.95)
        self.assertFalse(X["s_zc"])
        self.assertIn("zero-copy/testpmd idle_sleep Mbit/s", X["on_k_shown"])

    def test_a_line_from_before_idle_sleep_has_no_such_figure(self):
        old = self.LINE_COPYING.replace("/testpmd idle_sleep=50 Mbit/s", " Mbit/s").replace(
            ", testpmd idle_sleep=50/kernel 0.85", "").split("; testpmd on with")[0]
        old = old.replace("/800.0 ", " ").replace("/900.0 ", " ").replace("/850.0,", ",")
        X = report.xen_tcp_figures(old)
        self.assertIsNone(X["s_on_k"])
        self.assertAlmostEqual(X["z_on_k"], 0.95)
        self.assertAlmostEqual(X["on_k"], 0.60)

    def test_the_idle_sleep_the_check_ran_with_is_read_and_named(self):
        X = report.xen_tcp_figures(self.LINE.replace("idle_sleep=50", "idle_sleep=10000"))
        self.assertAlmostEqual(X["s_on_k"], 0.85)
        self.assertTrue(X["s_zc"])
        self.assertEqual(X["s_us"], "10000")
        self.assertEqual(report.xen_tcp_figures(self.LINE)["s_us"], "50")

    # What the check prints since testpmd waiting in Xen (idle_wait=xen) joined its first round.
    LINE_XWAIT = LINE.replace(
        "on/kernel 0.80; xpv-fwd on with zerocopy=1",
        "on/kernel 0.80, CPU 120/45; testpmd on with idle_sleep=50 zerocopy=1 idle_wait=xen 1100.0 Mbit/s "
        "(sleeps 900, in Xen 900, ended by a packet 40), on/kernel 1.10, CPU 118/40; xpv-fwd on with zerocopy=1")

    def test_the_wait_in_xen_is_judged_on_its_one_run_and_leaves_the_others_alone(self):
        X = report.xen_tcp_figures(self.LINE_XWAIT)
        self.assertAlmostEqual(X["x_on_k"], 1.10)
        self.assertIn("(1100 / 1000 Mbit/s, one run of the first round)", X["x_on_k_shown"])
        self.assertAlmostEqual(X["s_on_k"], 0.85)
        self.assertAlmostEqual(X["z_on_k"], 0.95)
        one = report.xen_tcp_figures(self.LINE_XWAIT.replace("3 rounds", "1 rounds"))
        self.assertAlmostEqual(one["s_on_k"], 0.80)  # the idle_sleep run's own figure, not the wait's
        self.assertAlmostEqual(one["x_on_k"], 1.10)
        J = report.summarise(bench(e2e_tcp={"tcp": [self.LINE_XWAIT], "rounds": "3", "windows": None}), {}, None, [])
        t = [x for x in J["targets"] if "idle_wait=xen" in x["target"]]
        self.assertEqual(len(t), 1)
        self.assertTrue(t[0]["met"])

    def test_a_line_from_before_the_wait_in_xen_has_no_such_figure(self):
        X = report.xen_tcp_figures(self.LINE)
        self.assertIsNone(X["x_on_k"])
        self.assertIn("n/a", X["x_on_k_shown"])

    def test_one_round_is_its_own_figures(self):
        one = self.LINE.replace("3 rounds", "1 rounds")
        X = report.xen_tcp_figures(one)
        self.assertAlmostEqual(X["on_k"], 0.60)
        self.assertAlmostEqual(X["s_on_k"], 0.80)


if __name__ == "__main__":
    sys.exit(check_lines.run(unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__]),
                             "bench-report"))
