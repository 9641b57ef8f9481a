#!/usr/bin/env python3
"""test_rescue_failure.py - a rescue log that cannot be written stops the run.

  * write_error_stops_dispatch: the rescue log already lists 20,000 finished
    tasks (so it is far larger than anything else the run writes), and the
    run gets RLIMIT_FSIZE = that size + 300 bytes, so appending DONE records
    fails with EFBIG after a few tasks.  pmc-hybrid must report the failed
    log, stop dispatching (fewer than all remaining tasks submitted), print
    the summary with stat="failed", exit 1, and leave a log whose complete
    records are all valid.  A rerun without the limit then finishes the
    workflow and runs none of the tasks the log recorded.
"""

import os
import resource
import signal
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

DONE_BEFORE = 20000
REMAINING = 60


def name(i):
    return "task_with_a_rather_long_name_%06d" % i


class RescueFailure(pmcrun.TestCase):
    def make_dag(self):
        lines = ["TASK %s /bin/true" % name(i) for i in range(DONE_BEFORE)]
        lines += ["TASK %s /bin/sleep 0.05" % name(i)
                  for i in range(DONE_BEFORE, DONE_BEFORE + REMAINING)]
        dag = self.write("big.dag", "\n".join(lines) + "\n")
        rescue = self.write("big.dag.rescue",
                            "".join("DONE %s\n" % name(i) for i in range(DONE_BEFORE)))
        return dag, rescue

    def run_limited(self, dag, limit):
        def limit_fsize():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        # UCX (MPICH's transport) sizes shared-memory files at start-up; a
        # single rank needs none of them, so keep it to the self transport.
        return pmcrun.run(["--host-cpus", "2", dag], cwd=self.tmp, preexec=limit_fsize,
                          env={"UCX_TLS": "self"})

    def test_write_error_stops_dispatch(self):
        dag, rescue = self.make_dag()
        limit = os.path.getsize(rescue) + 300
        res = self.run_limited(dag, limit)
        problems = []
        if res.timed_out or res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        if "Rescue log failed" not in res.stderr or "File too large" not in res.stderr:
            problems.append("stderr does not report the failed rescue log (EFBIG)")
        problems += pmcrun.summary_problems(res, DONE_BEFORE + REMAINING, "failed")
        submitted = len(res.tasks)
        if submitted >= REMAINING:
            problems.append("all %d remaining tasks ran: dispatch did not stop" % submitted)
        log = pmcrun.parse_rescue(rescue, complete_only=True)
        problems += log.problems
        recorded = log.done_set
        if len(recorded) < DONE_BEFORE:
            problems.append("the rewritten log lost finished tasks (%d < %d)"
                            % (len(recorded), DONE_BEFORE))
        self.check(problems, res)

        again = self.run_pmc(["--host-cpus", "2", dag])
        problems = []
        if again.returncode != 0:
            problems.append("rerun exit status %s, expected 0" % again.returncode)
        new_records = [r for r in again.tasks if r.start >= again.started - 0.5]
        rerun = {r.name for r in new_records} & recorded
        if rerun:
            problems.append("the rerun ran tasks the log recorded: %s" % sorted(rerun)[:5])
        final = pmcrun.parse_rescue(rescue).done_set
        if len(final) != DONE_BEFORE + REMAINING:
            problems.append("final log has %d tasks, expected %d"
                            % (len(final), DONE_BEFORE + REMAINING))
        self.check(problems, again)


if __name__ == "__main__":
    pmcrun.main()
