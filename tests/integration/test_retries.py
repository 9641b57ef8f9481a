#!/usr/bin/env python3
"""test_retries.py - -t/--tries on the command line and per task (case b).

  * flaky_succeeds: with -t 3, a task that fails twice then succeeds (a
    shell script counting its attempts in a file) makes the run succeed with
    three cluster-task records for it (status 256, 256, 0, each attempt
    starting after the previous one ended), one "Task NAME failed with
    exitcode 1" line on stderr per failed attempt, and its child run after
    the successful attempt.  The summary says succeeded=2, submitted=4 and
    failed + extra = 2 (see pmcrun.summary_problems).
  * task_tries_overrides_up: the task option -t 3 wins over the default of 1.
  * task_tries_overrides_down: the task option -t 1 wins over -t 3.
  * always_fails: with -t 2, /bin/false is tried twice, the run exits 1 with
    stat="failed", its descendants never run, an unrelated task still runs,
    and the rescue file lists only that unrelated task.
"""

import os
import re
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

FLAKY = """#!/bin/sh
# flaky.sh COUNTFILE N: fail on the first N attempts, then succeed.
n=$(cat "$1" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$1"
test "$n" -gt "$2"
"""


def failed_lines(res, name):
    return re.findall(r"Task %s failed with exitcode (\d+)" % re.escape(name), res.stderr)


class Retries(pmcrun.TestCase):
    def flaky_dag(self, task_opts, failures):
        self.write("flaky.sh", FLAKY, 0o755)
        return self.write_dag("retry.dag", """
            TASK flaky {opts} /bin/sh {tmp}/flaky.sh {tmp}/flaky.count {n}
            TASK after /bin/true
            EDGE flaky after
            """.format(opts=task_opts, tmp=self.tmp, n=failures))

    def attempts(self):
        try:
            with open(self.path("flaky.count")) as f:
                return int(f.read())
        except OSError:
            return 0

    def expect_success_after(self, res, dag_path, failures):
        dag = pmcrun.parse_dag(dag_path)
        problems = []
        if res.timed_out or res.returncode != 0:
            problems.append("exit status %s, expected 0" % res.returncode)
        problems += res.output.problems
        flaky = sorted(res.records_of("flaky"), key=lambda r: r.start)
        want = [256] * failures + [0]
        if [r.status for r in flaky] != want:
            problems.append("flaky statuses %s, expected %s" % ([r.status for r in flaky], want))
        for prev, nxt in zip(flaky, flaky[1:]):
            if nxt.start < prev.end - pmcrun.ORDER_TOLERANCE:
                problems.append("a retry started before the previous attempt ended")
        if [r.status for r in res.records_of("after")] != [0]:
            problems.append("after: records %s" % [r.status for r in res.records_of("after")])
        if self.attempts() != failures + 1:
            problems.append("the script ran %d times, expected %d" % (self.attempts(),
                                                                      failures + 1))
        lines = failed_lines(res, "flaky")
        if lines != ["1"] * failures:
            problems.append("stderr has %s 'Task flaky failed with exitcode N' lines, expected "
                            "%d with exitcode 1" % (lines, failures))
        problems += pmcrun.summary_problems(res, 2, "ok", succeeded=2, failed_attempts=failures)
        problems += pmcrun.order_problems(dag, res.tasks)
        problems += pmcrun.record_problems(dag, res.tasks)
        done = pmcrun.parse_rescue(dag_path + ".rescue").done_set
        if done != {"flaky", "after"}:
            problems.append("rescue DONE set %s" % sorted(done))
        return problems

    def test_flaky_succeeds(self):
        dag = self.flaky_dag("", 2)
        res = self.run_pmc(["-t", "3", "--host-cpus", "2", dag])
        self.check(self.expect_success_after(res, dag, 2), res)

    def test_task_tries_overrides_up(self):
        dag = self.flaky_dag("-t 3", 2)
        res = self.run_pmc(["--host-cpus", "2", dag])
        self.check(self.expect_success_after(res, dag, 2), res)

    def test_task_tries_overrides_down(self):
        dag = self.flaky_dag("-t 1", 1)
        res = self.run_pmc(["-t", "3", "--host-cpus", "2", dag])
        problems = []
        if res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        statuses = [r.status for r in res.records_of("flaky")]
        if statuses != [256]:
            problems.append("flaky statuses %s, expected [256] (task -t 1 beats -t 3)"
                            % statuses)
        if self.attempts() != 1:
            problems.append("the script ran %d times, expected 1" % self.attempts())
        if res.records_of("after"):
            problems.append("the child of a failed task ran")
        problems += pmcrun.summary_problems(res, 2, "failed", succeeded=0, failed_attempts=1)
        self.check(problems, res)

    def test_always_fails(self):
        dag_path = self.write_dag("fail.dag", """
            TASK bad /bin/false
            TASK child /bin/touch {tmp}/ran.child
            TASK grandchild /bin/touch {tmp}/ran.grandchild
            TASK other /bin/true
            EDGE bad child
            EDGE child grandchild
            """.format(tmp=self.tmp))
        res = self.run_pmc(["-t", "2", "--host-cpus", "2", dag_path])
        problems = []
        if res.timed_out or res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        problems += res.output.problems
        statuses = [r.status for r in res.records_of("bad")]
        if statuses != [256, 256]:
            problems.append("bad: statuses %s, expected [256, 256]" % statuses)
        for name in ("child", "grandchild"):
            if res.records_of(name) or os.path.exists(self.path("ran." + name)):
                problems.append("%s ran although its ancestor failed" % name)
        if [r.status for r in res.records_of("other")] != [0]:
            problems.append("the unrelated task 'other' did not run once successfully")
        lines = failed_lines(res, "bad")
        if lines != ["1", "1"]:
            problems.append("stderr has %s 'Task bad failed with exitcode N' lines, expected "
                            "two with exitcode 1" % lines)
        problems += pmcrun.summary_problems(res, 4, "failed", succeeded=1, failed_attempts=2)
        rescue = pmcrun.parse_rescue(dag_path + ".rescue")
        problems += rescue.problems
        if rescue.done_set != {"other"}:
            problems.append("rescue DONE set %s, expected ['other']" % sorted(rescue.done_set))
        self.check(problems, res)


if __name__ == "__main__":
    pmcrun.main()
