#!/usr/bin/env python3
"""Unit tests of bench/peer/peer.py's own parts (no Kernel Tuner needed): the chance line's
random-search figures against an independent computation, the peer cache, and how a table
becomes Kernel Tuner's space. Usage: test_peer.py R3_SOURCE_DIR"""

import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(sys.argv.pop(1) if len(sys.argv) > 1 else ".", "bench", "peer"))
import peer  # noqa: E402


def exact_median(points, good):
    """The median draws random search without replacement needs, from the distribution itself:
    P(the first good one at draw k) summed until it reaches 1/2."""
    total = 0.0
    for k in range(1, points - good + 2):
        # the first k - 1 draws all bad, the k-th good
        before = math.comb(points - good, k - 1) / math.comb(points, k - 1)
        total += before * good / (points - k + 1)
        if total >= 0.5 - 1e-12:
            return k
    raise AssertionError("the distribution does not sum to 1")


class RandomSearchChance(unittest.TestCase):
    def test_random_search_median_is_the_exact_one(self):
        for points, good in ((10, 3), (396, 15), (396, 3), (1776, 18), (50, 50)):
            own, _, _ = peer.random_search_chance(points, good, 1, 20, budget=10**6,
                                                  resamples=10)
            self.assertEqual(own, exact_median(points, good), (points, good))

    def test_a_median_past_the_budget_is_censored_to_budget_plus_one(self):
        own, lowest, (low, high) = peer.random_search_chance(2652, 1, 11, 20, budget=500,
                                                             resamples=50)
        self.assertEqual(own, 501)
        self.assertEqual(lowest, 501)
        self.assertEqual((low, high), (501, 501))

    def test_the_best_of_many_medians_falls_below_random_search_s_own(self):
        own, lowest, (low, high) = peer.random_search_chance(396, 15, 11, 20, budget=500,
                                                             resamples=400)
        self.assertEqual(own, 18)
        self.assertLess(high, own)
        self.assertLessEqual(low, lowest)
        self.assertLessEqual(lowest, high)

    def test_one_strategy_of_many_runs_has_its_median_near_random_search_s(self):
        own, lowest, _ = peer.random_search_chance(396, 15, 1, 401, budget=500, resamples=200)
        self.assertLessEqual(abs(lowest - own), 2)

    def test_no_configuration_within_the_threshold_gives_no_line(self):
        self.assertIsNone(peer.random_search_chance(396, 0, 11, 20, budget=500))


class Cache(unittest.TestCase):
    def test_traces_keep_their_stack_and_survive_a_reload(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "cache.json")
            cache = peer.PeerCache(path, "1.0")
            cache.put("a", [1.0, None, 0.5], "stack A")
            cache.put("b", [2.0], "stack B", write=False)
            self.assertEqual(peer.PeerCache(path, "1.0").get("b"), None)  # not written yet
            cache.write()
            again = peer.PeerCache(path, "1.0")
            self.assertEqual(again.get("a"), ([1.0, None, 0.5], "stack A"))
            self.assertEqual(again.get("b"), ([2.0], "stack B"))
            self.assertIsNone(again.get("c"))

    def test_a_trace_kept_before_stacks_were_recorded_reads_with_none(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "cache.json")
            with open(path, "w") as f:
                json.dump({"old": [3.0, 1.0]}, f)
            self.assertEqual(peer.PeerCache(path, "1.0").get("old"), ([3.0, 1.0], ""))

    def test_without_a_file_traces_are_kept_in_memory(self):
        cache = peer.PeerCache(None, "1.0")
        cache.put("a", [1.0], "stack")
        self.assertEqual(cache.get("a"), ([1.0], "stack"))


class TableProblem(unittest.TestCase):
    def test_the_space_is_every_combination_within_the_constraints(self):
        with tempfile.TemporaryDirectory() as tmp:
            table = os.path.join(tmp, "t.csv")
            with open(table, "w") as f:
                f.write("# a table\nX,Y,time\n1,1,4.0\n1,2,2.0\n2,1,fail\n2,2,1.5\n4,1,3.0\n"
                        "8,1,5.0\n")
            with open(os.path.join(tmp, "t.constraints"), "w") as f:
                f.write("# known\nX*Y<=8\n")
            problem = peer.table_problem(table, ["X>=1"], tmp)
            self.assertEqual(problem.constraints, ["X>=1", "X*Y<=8"])
            # X in {1,2,4,8}, Y in {1,2}: (8,2) breaks the constraint; (2,1) failed; (4,2) is
            # missing from the table, so it fails too
            self.assertEqual(len(problem.space_times), 7)
            self.assertEqual(sorted(t for t in problem.space_times if t is not None),
                             [1.5, 2.0, 3.0, 4.0, 5.0])
            self.assertEqual(problem.space_times.count(None), 2)
            self.assertEqual(problem.optimum, 1.5)
            with open(problem.cache) as f:
                cache = json.load(f)
            self.assertEqual(cache["cache"]["2,1"]["time"], "RuntimeFailedConfig")
            self.assertEqual(cache["cache"]["4,2"]["time"], "RuntimeFailedConfig")
            self.assertNotIn("8,2", cache["cache"])


class Criterion(unittest.TestCase):
    def test_a_figure_meets_it_at_the_target_ratio_and_a_significant_p(self):
        self.assertEqual(peer.criterion(0.75, 0.049, 0.75), "met")
        self.assertEqual(peer.criterion(0.10, 1e-30, 0.75), "met")

    def test_a_ratio_above_the_target_or_a_p_at_alpha_misses_and_says_which(self):
        self.assertEqual(peer.criterion(0.80, 4e-6, 0.75), "missed: r3 / best 0.80 > 0.75")
        self.assertEqual(peer.criterion(0.70, 0.05, 0.75), "missed: p 0.05 >= 0.05")
        self.assertEqual(peer.criterion(1.07, 0.2, 0.75),
                         "missed: r3 / best 1.07 > 0.75, p 0.2 >= 0.05")

    def test_without_a_p_the_figure_is_not_judged(self):
        self.assertTrue(peer.criterion(0.5, float("nan"), 0.75).startswith("not judged"))

    def test_the_summary_counts_the_figures_met_and_names_the_others(self):
        verdicts = [("a.csv", "5%", peer.criterion(0.66, 5e-4, 0.75)),
                    ("a.csv", "1%", peer.criterion(0.69, 1e-14, 0.75)),
                    ("b.csv", "5%", peer.criterion(0.80, 4e-6, 0.75)),
                    ("b.csv", "1%", peer.criterion(1.07, 0.004, 0.75))]
        self.assertEqual(
            peer.criterion_summary(verdicts, 0.75),
            "criterion (r3 / best peer <= 0.75, one-sided p < 0.05): met on 2 of 4 figures; "
            "not met: b.csv 5% (missed: r3 / best 0.80 > 0.75); "
            "b.csv 1% (missed: r3 / best 1.07 > 0.75)")
        self.assertEqual(peer.criterion_summary(verdicts[:2], 0.75),
                         "criterion (r3 / best peer <= 0.75, one-sided p < 0.05): met on 2 of 2 "
                         "figures")


class KernelTunerThatDoesNotImport(unittest.TestCase):
    def test_the_run_stops_naming_the_interpreter_and_the_missing_module(self):
        # A Python without Kernel Tuner's dependencies (a pyenv shim's python3 beside Debian's)
        # made every strategy "fail" with the same ModuleNotFoundError, printed as a table.
        for jobs in ("1", "2"):  # in order, and on processes (run_peers_in_parallel)
            with self.subTest(jobs=jobs):
                self.check_stops(jobs)

    def check_stops(self, jobs):
        with tempfile.TemporaryDirectory() as tmp:
            package = os.path.join(tmp, "kt", "kernel_tuner")
            os.makedirs(package)
            with open(os.path.join(package, "__init__.py"), "w") as f:
                f.write("raise ModuleNotFoundError(\"No module named 'r3_absent_module'\")\n")
            os.makedirs(os.path.join(tmp, "pc"))
            table = os.path.join(tmp, "t.csv")
            with open(table, "w") as f:
                f.write("# a table\nX,time\n1,4.0\n2,2.0\n")
            script = os.path.join(os.path.dirname(peer.__file__), "peer.py")
            run = subprocess.run(
                [sys.executable, script, "--kernel-tuner", os.path.join(tmp, "kt"),
                 "--python-constraint", os.path.join(tmp, "pc"), "--seeds", "2",
                 "--strategies", "random_sample,pso", "--jobs", jobs, table],
                capture_output=True, text=True, timeout=60)
            self.assertNotEqual(run.returncode, 0)
            self.assertIn("does not import under " + sys.executable, run.stderr)
            if "numpy" not in run.stderr:  # where numpy is there, the package's own error
                self.assertIn("r3_absent_module", run.stderr)
            self.assertNotIn("failed:", run.stdout)
            self.assertNotIn("Kernel Tuner runs on", run.stderr)  # stopped before any ran


if __name__ == "__main__":
    unittest.main(verbosity=2)
