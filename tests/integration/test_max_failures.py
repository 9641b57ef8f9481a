#!/usr/bin/env python3
"""test_max_failures.py - -m/--max-failures stops submitting (case c).

30 independent tasks that each sleep 0.1 s and exit 1, run with
--host-cpus 1 (one task at a time) and -m 2: pmc-hybrid must stop starting
tasks after the second failure, so exactly 2 tasks run (counted both from
the records and from marker files the tasks create; the node holds its
starts after each failure until the master answers, as PMC starts nothing
after the Mth failure; before that the node's queued tasks kept starting),
print
"Max failures reached: DAG prematurely aborted", exit 1, and print a
summary with stat="failed" whose counts match the records.  A second case
runs the same DAG without -m and expects all 30 to run (so the first case
proves -m, not some other stop).  With 4 CPUs (1 rank, and 2 ranks each its
own host) at most M + CPUs - 1 tasks run: those running at the Mth failure.
Ten tasks whose program is missing (they fail as they start), -m 1, one
CPU: one record.
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
        if len(res.tasks) != 2 or self.ran() != 2:
            problems.append("%d task records and %d tasks started, expected 2: one CPU runs "
                            "one task at a time, and nothing starts after the second "
                            "failure" % (len(res.tasks), self.ran()))
        if any(r.status != 256 for r in res.tasks):
            problems.append("statuses %s, expected all 256" % [r.status for r in res.tasks])
        problems += pmcrun.summary_problems(res, NTASKS, "failed")
        self.check(problems, res)

    def test_stops_after_a_missing_program(self):
        """Tasks whose program is missing fail as they start, on the agent's
        own thread (--launch-threads 0, or one usable CPU) or a launcher's
        (the default elsewhere): with -m
        1 on one CPU only the first one starts (the agent's start loop went on
        through the queue before)."""
        dag = self.write_dag("missing.dag", "\n".join(
            "TASK x%02d %s/no-such-program-%02d" % (i, self.tmp, i) for i in range(10)))
        res = self.run_pmc(["-m", "1", "--host-cpus", "1", dag])
        problems = [] if res.returncode == 1 else ["exit %s" % res.returncode]
        if len(res.tasks) != 1:
            problems.append("%d task records, expected 1" % len(res.tasks))
        self.check(problems, res)

    def test_stops_with_what_runs(self):
        """-m 2 on 4 CPUs, 1 rank and 2 ranks (each its own host): the tasks
        running at the second failure finish, nothing else starts (a node
        holds its starts after a failure that counts until the master
        answers), so at most 2 + 3 tasks run on 4 CPUs, 2 + 7 on 8."""
        for ranks in (1, 2):
            with self.subTest(ranks=ranks):
                for f in os.listdir(self.tmp):
                    if f.startswith("ran.") or f.endswith(".rescue"):
                        os.unlink(self.path(f))
                dag = self.make_dag()
                res = self.run_pmc(["-m", "2", "--host-cpus", "4", dag], ranks=ranks,
                                   ranks_are_hosts=ranks > 1)
                most = 2 + 4 * ranks - 1
                problems = [] if res.returncode == 1 else ["exit %s" % res.returncode]
                if self.ran() > most or len(res.tasks) != self.ran():
                    problems.append("%d tasks started, %d records: at most %d may run"
                                    % (self.ran(), len(res.tasks), most))
                problems += pmcrun.summary_problems(res, NTASKS, "failed")
                self.check(problems, res, "%d ranks" % ranks)

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
