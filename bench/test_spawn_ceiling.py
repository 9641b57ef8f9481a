#!/usr/bin/env python3
"""Tests of bench/spawn_ceiling (ctest: bench.spawn_ceiling): every task
runs, -s shares the tasks among that many spawner processes, -t among that
many threads of one process, never more than PARALLEL at once; failures
and bad arguments give their exit statuses.  Each task appends its parent's pid
to a file, so the file shows how many ran and which spawner started each.

    python3 bench/test_spawn_ceiling.py BUILD/bench/spawn_ceiling
"""

import collections
import os
import subprocess
import sys
import tempfile
import time
import unittest

EXE = None  # the spawn_ceiling under test (argv[1])


class SpawnCeiling(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="spawn-ceiling-")
        self.log = os.path.join(self.tmp.name, "ppids")

    def tearDown(self):
        self.tmp.cleanup()

    def run_exe(self, *args, program=None):
        """Run spawn_ceiling ARGS PROGRAM (default: a task appending its
        parent's pid to the log); also keeps the spawn_ceiling's own pid."""
        prog = ["/bin/sh", "-c", f'echo $PPID >> "{self.log}"'] if program is None else program
        p = subprocess.Popen([EXE, *map(str, args), *prog], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.pid = p.pid
        out, err = p.communicate(timeout=60)
        return subprocess.CompletedProcess(p.args, p.returncode, out, err)

    def fields(self, p):
        return dict(w.split("=", 1) for w in p.stdout.split())

    def parents(self):
        with open(self.log) as f:
            return collections.Counter(line.strip() for line in f)

    def test_one_spawner_runs_every_task(self):
        p = self.run_exe(25, 3)
        self.assertEqual(p.returncode, 0, p.stderr)
        f = self.fields(p)
        self.assertEqual((f["tasks"], f["parallel"], f["spawners"], f["failed"]), ("25", "3", "1", "0"))
        self.assertGreater(float(f["tasks_per_s"]), 0)
        self.assertEqual(self.parents(), {str(self.pid): 25}, "spawn_ceiling started all 25")

    def test_spawners_share_the_tasks(self):
        p = self.run_exe("-s", 3, 25, 4)
        self.assertEqual(p.returncode, 0, p.stderr)
        f = self.fields(p)
        self.assertEqual((f["tasks"], f["parallel"], f["spawners"]), ("25", "4", "3"))
        by_parent = self.parents()
        self.assertEqual(sorted(by_parent.values()), [8, 8, 9], by_parent)
        self.assertNotIn(str(self.pid), by_parent, "the forked spawners started them")

    def test_threads_share_the_tasks_in_one_process(self):
        # each task appends its parent's pid and how many tasks are alive
        # (one file each in a folder while it runs), then sleeps
        alive = os.path.join(self.tmp.name, "alive")
        os.mkdir(alive)
        task = (f'touch "{alive}/$$"; echo "$PPID $(ls "{alive}" | wc -l)" >> "{self.log}"; '
                f'sleep 0.3; rm "{alive}/$$"')
        p = subprocess.Popen([EXE, "-t", "3", "12", "4", "/bin/sh", "-c", task],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while not os.path.exists(self.log) and time.monotonic() < deadline:
            time.sleep(0.01)
        threads = 0  # named "spawner" (a sanitizer's runtime adds threads of its own)
        while threads < 3 and time.monotonic() < deadline and p.poll() is None:
            threads = 0
            for t in os.listdir(f"/proc/{p.pid}/task"):
                try:
                    with open(f"/proc/{p.pid}/task/{t}/comm") as comm:
                        threads += comm.read().strip() == "spawner"
                except OSError:  # a thread that just ended
                    pass
            if threads < 3:
                time.sleep(0.01)

        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        f = dict(w.split("=", 1) for w in out.split())
        self.assertEqual((f["tasks"], f["parallel"], f["spawners"], f["threads"], f["failed"]),
                         ("12", "4", "1", "3", "0"))
        self.assertEqual(threads, 3, "3 spawning threads")
        with open(self.log) as log:
            rows = [line.split() for line in log]
        self.assertEqual(collections.Counter(r[0] for r in rows), {str(p.pid): 12})
        self.assertLessEqual(max(int(r[1]) for r in rows), 4, "at most PARALLEL alive")

    def test_failed_tasks_are_counted(self):
        for args in ((5, 2), ("-s", 2, 5, 2), ("-t", 2, 5, 2)):
            with self.subTest(args=args):
                p = self.run_exe(*args, program=["/bin/false"])
                self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
                self.assertEqual(self.fields(p)["failed"], "5")

    def test_spawn_failure_prints_no_figures(self):
        for args in ((5, 2), ("-s", 2, 5, 2), ("-t", 2, 5, 2)):
            with self.subTest(args=args):
                p = self.run_exe(*args, program=["/nonexistent/program"])
                self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
                self.assertEqual(p.stdout, "")
                self.assertIn("/nonexistent/program", p.stderr)

    def test_bad_arguments_give_exit_2(self):
        for args in (("-s", 0, 5, 2), ("-s", 3, 5, 2), ("-s", "x", 5, 2), (0, 2), (5,), (),
                     ("-t", 0, 5, 2), ("-t", 3, 5, 2), ("-s", 2, "-t", 2, 5, 2)):
            with self.subTest(args=args):
                p = self.run_exe(*args, program=[])
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertIn("spawn_ceiling", p.stderr)
                self.assertFalse(os.path.exists(self.log))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_spawn_ceiling.py SPAWN_CEILING")
    EXE = os.path.abspath(sys.argv.pop(1))
    unittest.main()
