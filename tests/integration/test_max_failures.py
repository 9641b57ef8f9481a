#!/usr/bin/env python3
"""test_max_failures.py - -m/--max-failures stops submitting (case c).

30 independent tasks that each sleep 0.1 s and exit 1, run with
--host-cpus 1 (one task at a time) and -m 2: pmc-hybrid must stop starting
tasks after the second failure, so fewer than 30 tasks ever run (counted
both from the records and from marker files the tasks create), print
"Max failures reached: DAG prematurely aborted", exit 1, and print a
summary with stat="failed" whose counts match the records.  A second case
runs the same DAG without -m and expects all 30 to run (so the first case
proves -m, not some other stop).
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

NTASKS = 30


class MaxFailures(pmcrun.TestCase):
    def make_dag(self):
        lines = ['TASK f%02d /bin/sh -c "touch %s/ran.%02d; sleep 0.1; exit 1"'
                 % (i, self.tmp, i) for i in range(NTASKS)]
        return self.write_dag("many.dag", "\n".join(lines))

    def ran(self):
        return len([f for f in os.listdir(self.tmp) if f.startswith("ran.")])

    def test_stops_after_two(self):
        dag = self.make_dag()
        res = self.run_pmc(["-m", "2", "--host-cpus", "1", dag])
        problems = []
        if res.timed_out or res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        problems += res.output.problems
        if "Max failures reached: DAG prematurely aborted" not in res.stderr:
            problems.append("stderr lacks 'Max failures reached: DAG prematurely aborted'")
        if len(res.tasks) < 2:
            problems.append("only %d task records, expected at least 2" % len(res.tasks))
        if len(res.tasks) >= NTASKS or self.ran() >= NTASKS:
            problems.append("%d task records and %d tasks started: -m 2 did not stop the "
                            "submission" % (len(res.tasks), self.ran()))
        if any(r.status != 256 for r in res.tasks):
            problems.append("statuses %s, expected all 256" % [r.status for r in res.tasks])
        problems += pmcrun.summary_problems(res, NTASKS, "failed")
        self.check(problems, res)

    def test_without_m_all_run(self):
        dag = self.make_dag()
        res = self.run_pmc(["--host-cpus", "4", dag])
        problems = []
        if res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        if len(res.tasks) != NTASKS or self.ran() != NTASKS:
            problems.append("%d records, %d started, expected %d"
                            % (len(res.tasks), self.ran(), NTASKS))
        if "Max failures reached" in res.stderr:
            problems.append("'Max failures reached' without -m")
        problems += pmcrun.summary_problems(res, NTASKS, "failed", succeeded=0,
                                            failed_attempts=NTASKS)
        self.check(problems, res)


if __name__ == "__main__":
    pmcrun.main()
