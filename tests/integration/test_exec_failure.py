#!/usr/bin/env python3
"""test_exec_failure.py - a task that cannot be started vs. one that exits 1 (case f).

One DAG holds: a task whose executable does not exist (and a child of it),
a task that exits 1, and a task that succeeds.  With 1 and with 4 ranks the
run must exit 1 with stat="failed"; the missing executable gives a record
with status=32512 (127 << 8, the shell's convention) and a message on stderr
that names the program or the task and says "could not" or "No such file";
the task exiting 1 gives status=256 and "Task NAME failed with exitcode 1";
the child of the unstartable task never runs; the good task still runs and
is the only DONE record in the rescue file.  The 4-rank run uses
--ranks-are-hosts (four node agents), and its three records must come from
at least two ranks, so that results also travel back over MPI.
"""

import os
import re
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

MISSING = "/nonexistent/pmc-no-such-program"


class ExecFailure(pmcrun.TestCase):
    def test_exec_failure(self):
        for ranks in (1, 4):
            case = "ranks=%d" % ranks
            with self.subTest(case=case):
                sub = os.path.join(self.tmp, case)
                os.mkdir(sub)
                dag_path = os.path.join(sub, "exec.dag")
                with open(dag_path, "w") as f:
                    f.write("TASK nope %s --flag\n" % MISSING)
                    f.write("TASK child /bin/touch %s/ran.child\n" % sub)
                    f.write('TASK one /bin/sh -c "exit 1"\n')
                    f.write("TASK fine /bin/true\n")
                    f.write("EDGE nope child\n")
                res = pmcrun.run(["--host-cpus", "4", dag_path], ranks=ranks, cwd=sub,
                                 timeout=60, ranks_are_hosts=ranks > 1)
                problems = self.problems(res, dag_path, sub)
                slots = pmcrun.slot_counts(res.tasks)
                if ranks > 1 and len(slots) < 2:
                    problems.append("every record from rank(s) %s, expected at least two of "
                                    "the %d hosts" % (sorted(slots), ranks))
                self.check(problems, res, case)

    def problems(self, res, dag_path, sub):
        problems = []
        if res.timed_out or res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        problems += res.output.problems
        got = {n: [r.status for r in res.records_of(n)] for n in ("nope", "child", "one", "fine")}
        want = {"nope": [32512], "child": [], "one": [256], "fine": [0]}
        for name in want:
            if got[name] != want[name]:
                problems.append("%s: statuses %s, expected %s" % (name, got[name], want[name]))
        if os.path.exists(os.path.join(sub, "ran.child")):
            problems.append("the child of the unstartable task ran")
        msg = [l for l in res.stderr.splitlines()
               if re.search(r"could not|no such file", l, re.I) and
               (MISSING in l or "nope" in l)]
        if not msg:
            problems.append("no stderr line names %s (or task nope) and says 'could not' or "
                            "'No such file'" % MISSING)
        if not re.search(r"Task one failed with exitcode 1\b", res.stderr):
            problems.append("stderr lacks 'Task one failed with exitcode 1'")
        problems += pmcrun.summary_problems(res, 4, "failed", succeeded=1, failed_attempts=2)
        rescue = pmcrun.parse_rescue(dag_path + ".rescue")
        if rescue.done_set != {"fine"}:
            problems.append("rescue DONE set %s, expected ['fine']" % sorted(rescue.done_set))
        return problems


if __name__ == "__main__":
    pmcrun.main()
