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


def rounds(*rs):
    """{"sgrants": {pair: {key: {"mpps": x}}}} from (memif, tx, rx, copy_tx, copy_rx) tuples."""
    keys = ["memif_a2b", "xenpv_tx", "xenpv_rx", "xenpv-copy_tx", "xenpv-copy_rx"]
    return {"sgrants": {i + 1: {k: {"mpps": v} for k, v in zip(keys, r) if v is not None}
                        for i, r in enumerate(rs)}}


class StaticGrantsRatio(unittest.TestCase):
    def test_slowed_runs_in_either_direction_do_not_decide(self):
        # This VM halves a run now and then (whole runs, memif too). Of five rounds, two have TX
        # slowed and one RX: each direction's median is parity. Taking the slower direction
        # inside each round first would give three slowed rounds of five, and 0.5.
        S = report.sgrants_summary(rounds((50, 50, 50, 20, 10), (50, 25, 50, 20, 10),
                                          (50, 50, 25, 20, 10), (50, 25, 50, 20, 10),
                                          (48, 48, 48, 20, 10)))
        self.assertAlmostEqual(S["ratio_static"], 1.0)
        self.assertAlmostEqual(S["ratio_by_setup"]["xenpv_tx"], 1.0)
        self.assertAlmostEqual(S["ratio_by_setup"]["xenpv_rx"], 1.0)

    def test_the_slower_direction_is_judged(self):
        S = report.sgrants_summary(rounds((50, 45, 40, 20, 10), (50, 45, 40, 20, 10),
                                          (50, 45, 40, 20, 10)))
        self.assertAlmostEqual(S["ratio_by_setup"]["xenpv_tx"], 0.9)
        self.assertAlmostEqual(S["ratio_static"], 0.8)
        self.assertAlmostEqual(S["ratio_copy"], 0.2)

    def test_each_run_is_set_against_the_memif_run_of_its_round(self):
        # A slow memif round goes with the xenpv runs right after it: parity in every round.
        S = report.sgrants_summary(rounds((50, 50, 50, 20, 10), (20, 20, 20, 8, 4),
                                          (20, 20, 20, 8, 4)))
        self.assertAlmostEqual(S["ratio_static"], 1.0)
        self.assertAlmostEqual(S["median_mpps"]["memif_a2b"], 20)

    def test_a_missing_run_leaves_its_round_out(self):
        S = report.sgrants_summary(rounds((50, 40, 40, 20, 10), (None, 50, 50, 20, 10),
                                          (50, 40, None, 20, 10)))
        self.assertAlmostEqual(S["ratio_by_setup"]["xenpv_tx"], 0.8)
        self.assertAlmostEqual(S["ratio_by_setup"]["xenpv_rx"], 0.8)
        self.assertIsNone(report.sgrants_summary({"sgrants": {}}))


def speeds(**per_second):
    """{"sgrants": {1: {key: {"per_second": [pps...]}}}}, one round; copy_tx / copy_rx stand for the
    keys xenpv-copy_tx / xenpv-copy_rx (no keyword argument can have a "-")."""
    return {"sgrants": {1: {k.replace("copy_", "xenpv-copy_"): {"per_second": v} for k, v in per_second.items()}}}


class StaticGrantsSpeedForSpeed(unittest.TestCase):
    def test_each_speed_is_set_against_memifs_at_that_speed(self):
        # memif fast for 3 s and slow for 3; xenpv TX fast for 2 and slow for 4. Run against run,
        # the medians (12.5 and 9) would say 0.72; speed for speed it is 1.2 and 1.5.
        V = report.sgrants_speeds(speeds(memif_a2b=[20e6, 20e6, 20e6, 5e6, 5e6, 5e6],
                                         xenpv_tx=[24e6, 24e6, 7.5e6, 7.5e6, 7.5e6, 7.5e6]))
        self.assertAlmostEqual(V["xenpv_tx"]["fast_over_memif"], 1.2)
        self.assertAlmostEqual(V["xenpv_tx"]["slow_over_memif"], 1.5)
        self.assertEqual((V["xenpv_tx"]["n_fast"], V["xenpv_tx"]["n_slow"]), (2, 4))
        self.assertAlmostEqual(V["memif_a2b"]["fast"], 20.0)

    def test_a_setup_seen_at_one_speed_is_not_split(self):
        # Its seconds all within 2x of each other: which speed it ran at is unknown, so it is not
        # set against memif's fast or slow part.
        V = report.sgrants_speeds(speeds(memif_a2b=[20e6, 5e6], xenpv_rx=[9e6, 12e6, 10e6]))
        self.assertTrue(V["xenpv_rx"]["one_speed"])
        self.assertIsNone(V["xenpv_rx"]["fast_over_memif"])
        self.assertIsNone(V["xenpv_rx"]["slow_over_memif"])
        self.assertIn("| xenpv RX, static grants | one speed only |",
                      "\n".join(report.sgrants_md(speeds(memif_a2b=[20e6, 5e6], xenpv_rx=[9e6, 12e6]))))


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

    def test_one_round_is_its_own_figures(self):
        one = self.LINE.replace("3 rounds", "1 rounds")
        X = report.xen_tcp_figures(one)
        self.assertAlmostEqual(X["on_k"], 0.60)
        self.assertAlmostEqual(X["s_on_k"], 0.80)


if __name__ == "__main__":
    sys.exit(check_lines.run(unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__]),
                             "bench-report"))
