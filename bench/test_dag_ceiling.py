#!/usr/bin/env python3
"""Tests of bench/dag_ceiling on tiny DAGs written to a temporary directory
(ctest: bench.dag_ceiling): the tasks really run, and append lines to a file
whose order shows what ran when.

    python3 bench/test_dag_ceiling.py BUILD/bench/dag_ceiling
"""

import os
import subprocess
import sys
import tempfile
import unittest

EXE = None  # the dag_ceiling under test (argv[1])


class DagCeiling(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="dag-ceiling-")
        self.dir = self.tmp.name
        self.log = os.path.join(self.dir, "order")

    def tearDown(self):
        self.tmp.cleanup()

    def sh(self, script):
        """A TASK command running script with /bin/sh; $L is the order file."""
        return f'/bin/sh -c "L={self.log}; {script}"'

    def run_dag(self, text, slots):
        path = os.path.join(self.dir, "wf.dag")
        with open(path, "w") as f:
            f.write(text.strip() + "\n")
        p = subprocess.run([EXE, path, str(slots)], capture_output=True, text=True, timeout=30)
        return p, path

    def order(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return f.read().split()

    def result(self, p):
        """The key=value pairs of dag_ceiling's one stdout line."""
        line = p.stdout.strip()
        self.assertRegex(line, r"^tasks=\d+ slots=\d+ makespan_s=[\d.]+ tasks_per_s=[\d.]+ "
                               r"failed=\d+$")
        return dict(w.split("=") for w in line.split())

    def test_diamond_order(self):
        # a -> b, a -> c, b -> d, c -> d on 4 slots: a sleeps before writing,
        # so b or c started early would write first; d writes at once.
        p, _ = self.run_dag(f"""
TASK a {self.sh('sleep 0.1; echo a >> $L')}
TASK b {self.sh('sleep 0.1; echo b >> $L')}
TASK c {self.sh('sleep 0.1; echo c >> $L')}
TASK d {self.sh('echo d >> $L')}
EDGE a b
EDGE a c
EDGE b d
EDGE c d
""", 4)
        self.assertEqual(p.returncode, 0, p.stderr)
        o = self.order()
        self.assertEqual((o[0], sorted(o[1:3]), o[3]), ("a", ["b", "c"], "d"))
        self.assertEqual(self.result(p)["tasks"], "4")

    def test_priority_order_one_slot(self):
        p, _ = self.run_dag(f"""
TASK p1 -p 1 {self.sh('echo 1 >> $L')}
TASK p5 -p 5 {self.sh('echo 5 >> $L')}
TASK p3 -p 3 {self.sh('echo 3 >> $L')}
""", 1)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.order(), ["5", "3", "1"])

    def test_equal_priorities_in_dag_order(self):
        # Roots with equal priority in TASK order; a child made ready later
        # with a higher priority goes before the roots still waiting.
        p, _ = self.run_dag(f"""
TASK z {self.sh('echo z >> $L')}
TASK y {self.sh('echo y >> $L')}
TASK x {self.sh('echo x >> $L')}
TASK w -p 9 {self.sh('echo w >> $L')}
EDGE z w
""", 1)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.order(), ["z", "w", "y", "x"])

    def test_cpus_run_alone_and_deferral(self):
        # 2 slots: a (-p 9) starts; b (-c 2) does not fit the one free CPU
        # and keeps its place while c (-p 1) starts beside a; b runs alone
        # after both; e asks 4 CPUs, is counted at 2 and runs alone too.
        def task(name, opts):
            return f"TASK {name} {opts} " + self.sh(
                f"echo {name}+ >> $L; sleep 0.2; echo {name}- >> $L")
        p, _ = self.run_dag("\n".join([task("a", "-p 9"), task("b", "-c 2 -p 5"),
                                       task("c", "-p 1"), task("e", "-c 4 -p 0")]), 2)
        self.assertEqual(p.returncode, 0, p.stderr)
        o = self.order()
        self.assertEqual(sorted(o[:2]), ["a+", "c+"])
        self.assertEqual(sorted(o[2:4]), ["a-", "c-"])
        self.assertEqual(o[4:], ["b+", "b-", "e+", "e-"])

    def test_failing_task(self):
        # The failure is named, its child never runs, the other branch does.
        p, _ = self.run_dag(f"""
TASK bad /bin/false
TASK after {self.sh('echo after >> $L')}
TASK other {self.sh('echo other >> $L')}
EDGE bad after
""", 2)
        self.assertEqual(p.returncode, 1)
        self.assertIn("task bad (line 1) exited 1", p.stderr)
        self.assertEqual(self.order(), ["other"])
        self.assertEqual(self.result(p)["failed"], "1")

    def test_spawn_failure(self):
        p, _ = self.run_dag("TASK nope /nonexistent/program\nTASK ok /bin/true", 2)
        self.assertEqual(p.returncode, 1)
        self.assertIn("task nope (line 1): cannot spawn /nonexistent/program", p.stderr)
        self.assertEqual(self.result(p)["failed"], "1")

    def test_bad_dag_line(self):
        p, path = self.run_dag("TASK a /bin/true\nTASK b -x 1 /bin/true\n", 2)
        self.assertEqual(p.returncode, 2)
        self.assertIn(f"{path}:2:", p.stderr)
        self.assertEqual(p.stdout, "")

    def test_usage(self):
        for args in ([], ["x.dag"], ["x.dag", "0"], ["x.dag", "2x"], ["x.dag", "1", "2"]):
            p = subprocess.run([EXE, *args], capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn("usage", p.stderr)

    def test_makespan_covers_the_sleeps(self):
        p, _ = self.run_dag("\n".join(f"TASK s{i} /bin/sleep 0.2" for i in range(4)), 2)
        self.assertEqual(p.returncode, 0, p.stderr)
        r = self.result(p)
        self.assertEqual((r["tasks"], r["slots"], r["failed"]), ("4", "2", "0"))
        self.assertGreaterEqual(float(r["makespan_s"]), 0.4)
        self.assertLess(float(r["makespan_s"]), 5.0)  # not serialised beyond reason
        self.assertAlmostEqual(float(r["tasks_per_s"]), 4 / float(r["makespan_s"]), delta=0.1)


if __name__ == "__main__":
    if len(sys.argv) < 2 or not os.access(sys.argv[1], os.X_OK):
        sys.exit("usage: test_dag_ceiling.py DAG_CEILING [unittest args]")
    EXE = os.path.abspath(sys.argv.pop(1))
    unittest.main()
