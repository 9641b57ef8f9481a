#!/usr/bin/env python3
"""Unit tests of bench/greedy.py on tiny DAGs whose greedy schedule is
worked out by hand in each test (ctest: bench.greedy).

    python3 bench/test_greedy.py
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import greedy  # noqa: E402


def dag(text):
    return greedy.parse_dag(text.strip().splitlines())


def schedule(text, slots, memory_mb=None):
    d = dag(text)
    mk, start = greedy.greedy_schedule(d, slots, memory_mb)
    return mk / 1e9, {d.names[t]: s / 1e9 for t, s in enumerate(start)}


class Parse(unittest.TestCase):
    def test_options_and_durations(self):
        d = dag("""
# a comment
TASK a -c 1.5 -m 100 -p 7 /bin/sleep 0.25
TASK b --request-cpus=2 --priority=-3 /bin/sleep 0.5 1
TASK c -t 3 -f x=y --time-limit=9 echo 5
TASK d "/bin/sleep" 2m
TASK e sleep 0.001
EDGE a b
EDGE a b
""")
        self.assertEqual(d.names, ["a", "b", "c", "d", "e"])
        self.assertEqual(d.cpus, [2, 2, 1, 1, 1])
        self.assertEqual(d.memory_mb, [100, 0, 0, 0, 0])
        self.assertEqual(d.priority, [7, -3, 0, 0, 0])
        self.assertEqual(d.dur_ns, [250_000_000, 1_500_000_000, 0, 120_000_000_000, 1_000_000])
        self.assertEqual(d.edges, [(0, 1)])  # the duplicate EDGE counts once

    def test_errors(self):
        for text in ("TASK a -x 1 /bin/sleep 1", "TASK a -c", "TASK a -c 2", "TASK a -c two sleep 1"):
            with self.assertRaises(greedy.DagError, msg=text):
                dag(text)

    def test_unknown_task_and_cycle(self):
        with self.assertRaises(greedy.DagError):
            dag("TASK a /bin/sleep 1\nEDGE a b")
        with self.assertRaises(greedy.DagError):
            schedule("TASK a /bin/sleep 1\nTASK b /bin/sleep 1\nEDGE a b\nEDGE b a", 2)


class Schedule(unittest.TestCase):
    def test_chain(self):
        # a(1) -> b(2) -> c(3): 6 s whatever the slots.
        text = """
TASK a /bin/sleep 1
TASK b /bin/sleep 2
TASK c /bin/sleep 3
EDGE a b
EDGE b c
"""
        for slots in (1, 8):
            mk, st = schedule(text, slots)
            self.assertEqual(mk, 6.0)
            self.assertEqual(st, {"a": 0, "b": 1, "c": 3})

    def test_diamond(self):
        # a(1) -> b(2), c(3) -> d(1).  8 slots: b and c side by side, d at
        # 1 + 3 = 4, end 5.  1 slot: a 0-1, b 1-3, c 3-6, d 6-7.
        text = """
TASK a /bin/sleep 1
TASK b /bin/sleep 2
TASK c /bin/sleep 3
TASK d /bin/sleep 1
EDGE a b
EDGE a c
EDGE b d
EDGE c d
"""
        mk, st = schedule(text, 8)
        self.assertEqual((mk, st), (5.0, {"a": 0, "b": 1, "c": 1, "d": 4}))
        mk, st = schedule(text, 1)
        self.assertEqual((mk, st), (7.0, {"a": 0, "b": 1, "c": 3, "d": 6}))

    def test_two_cpu_task_deferred(self):
        # 2 slots, all roots, one priority.  t=0: a (1 CPU) starts, b needs 2
        # and 1 is free: deferred, c takes the last CPU.  t=1: c ends, b
        # still does not fit, d does (1-2).  t=2: a and d end, b runs 2-3.
        # (Strict order without deferral would give a 0-2, b 2-3, c, d 3-4.)
        mk, st = schedule("""
TASK a -c 1 /bin/sleep 2
TASK b -c 2 /bin/sleep 1
TASK c -c 1 /bin/sleep 1
TASK d -c 1 /bin/sleep 1
""", 2)
        self.assertEqual((mk, st), (3.0, {"a": 0, "b": 2, "c": 0, "d": 1}))

    def test_task_larger_than_host(self):
        # -c 4 on 2 slots is counted at 2: it runs alone, then b.
        mk, st = schedule("TASK a -c 4 /bin/sleep 1\nTASK b /bin/sleep 1", 2)
        self.assertEqual((mk, st), (2.0, {"a": 0, "b": 1}))

    def test_priorities(self):
        # 1 slot.  Ready at 0: b (p 5), d (p 1), a (p 0): b 0-2, d 2-3,
        # a 3-4; c (p 10) becomes ready at 4 and runs 4-5.
        mk, st = schedule("""
TASK a -p 0 /bin/sleep 1
TASK b -p 5 /bin/sleep 2
TASK c -p 10 /bin/sleep 1
TASK d -p 1 /bin/sleep 1
EDGE a c
""", 1)
        self.assertEqual((mk, st), (5.0, {"b": 0, "d": 2, "a": 3, "c": 4}))

    def test_ready_order_among_equal_priorities(self):
        # 1 slot, one priority.  Ready at 0 in DAG order r1, r2, r3; x (child
        # of r1) becomes ready at 1, behind r2 and r3: r1 0-1, r2 1-4,
        # r3 4-5, x 5-6.
        mk, st = schedule("""
TASK r1 /bin/sleep 1
TASK r2 /bin/sleep 3
TASK x /bin/sleep 1
TASK r3 /bin/sleep 1
EDGE r1 x
""", 1)
        self.assertEqual((mk, st), (6.0, {"r1": 0, "r2": 1, "r3": 4, "x": 5}))

    def test_tasks_ending_together(self):
        # 2 slots: a and b (0.1 s) end together at 0.1, which frees both
        # CPUs at once for c (-c 2, lower priority): 0.1-0.3, exactly.
        mk, st = schedule("""
TASK a /bin/sleep 0.1
TASK b /bin/sleep 0.1
TASK c -c 2 -p -1 /bin/sleep 0.2
""", 2)
        self.assertEqual((mk, st), (0.3, {"a": 0, "b": 0, "c": 0.1}))

    def test_memory(self):
        # 4 slots but 100 MB: a and b (60 MB each) cannot run together.
        text = "TASK a -m 60 /bin/sleep 1\nTASK b -m 60 /bin/sleep 1"
        self.assertEqual(schedule(text, 4)[0], 1.0)
        self.assertEqual(schedule(text, 4, memory_mb=100)[0], 2.0)

    def test_other_durations(self):
        # The diamond on 8 slots with b lasting 4 instead of 2: d at 5, end 6.
        d = dag("TASK a /bin/sleep 1\nTASK b /bin/sleep 2\nTASK c /bin/sleep 3\n"
                "TASK d /bin/sleep 1\nEDGE a b\nEDGE a c\nEDGE b d\nEDGE c d")
        secs = [1, 4, 3, 1]
        self.assertEqual(greedy.greedy_makespan(d, 8, dur_ns=[x * 10**9 for x in secs]), 6.0)
        self.assertEqual(greedy.greedy_makespan(d, 8), 5.0)

    def test_zero_duration_and_empty(self):
        self.assertEqual(schedule("TASK a /bin/true\nTASK b echo\nEDGE a b", 1)[0], 0.0)
        self.assertEqual(schedule("", 8)[0], 0.0)


if __name__ == "__main__":
    unittest.main()
