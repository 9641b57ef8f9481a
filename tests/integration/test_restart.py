#!/usr/bin/env python3
"""test_restart.py - SIGKILL mid-way, then restart from the rescue file (case d).

A DAG of 60 tasks of 0.2 s in 4 chains (pmc-gendag --shape chain) is
started; once the rescue file holds at least 8 complete DONE records the run
is killed with SIGKILL: the pmc-hybrid process itself with 1 rank, the
mpiexec process group with 4 ranks (`mpiexec -n 4 --ranks-are-hosts`: four
node agents, three of them remote, each with its own per-rank stdio files;
the restart must run tasks on at least two ranks), and with them every
rank, which hydra starts in a session of its own.  Once every process of
the killed run is gone and the DAG is no longer locked, the DONE set on
disk (a torn last line does not count) is the snapshot.  The same
command is run again and must exit 0 with stat="ok"; no task of the snapshot
may run again, every other task runs exactly once successfully in dependency
order, and the final rescue file lists all 60 tasks.

Killed with 4 ranks and restarted with 1, the restart merges the killed
run's per-rank files of ranks 1-3 too: every task DONE at the kill has its
successful record in the restart's output (and, as always, no per-rank
file is left).

Records that started before the restart (output of the killed run that the
restart merges from the per-rank files, which COMPAT.md opens in append
mode) are not counted as runs of the second execution.
"""

import os
import signal
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

NTASKS = 60
KILL_AFTER = 8  # DONE records


class Restart(pmcrun.TestCase):
    def kill_and_restart(self, ranks, restart_ranks=None):
        dag_path = self.path("chains.dag")
        pmcrun.gendag(["--shape", "chain", "--width", "4", "--tasks", str(NTASKS), "--runtime",
                       "0.2"], dag_path)
        dag = pmcrun.parse_dag(dag_path)
        rescue = dag_path + ".rescue"
        args = ["--host-cpus", "16", dag_path]

        proc = self.start_pmc(args, ranks=ranks, ranks_are_hosts=ranks > 1)
        deadline = time.monotonic() + 60
        done = set()
        while time.monotonic() < deadline and proc.poll() is None:
            done = pmcrun.parse_rescue(rescue, complete_only=True).done_set
            if len(done) >= KILL_AFTER:
                break
            time.sleep(0.01)
        if proc.poll() is not None:
            first = pmcrun.finish(proc)
            self.fail("the first run ended (exit %s) before %d tasks were DONE in the rescue "
                      "file (it had %d)\n%s" % (proc.returncode, KILL_AFTER, len(done),
                                                first.describe()))
        if len(done) < KILL_AFTER:
            pmcrun.kill_session(proc)
            first = pmcrun.finish(proc, timeout=5)
            self.fail("no %d DONE records in the rescue file after 60 s (had %d)\n%s"
                      % (KILL_AFTER, len(done), first.describe()))
        # every process of the run, mpiexec's ranks too (hydra puts them in
        # sessions of their own, and they outlive mpiexec by some ms): the
        # snapshot must be the rescue log's last state, and the restart
        # must not meet the killed run's lock on the DAG
        tree = pmcrun.descendant_pids(proc.pid) + [proc.pid]
        if ranks == 1:
            os.kill(proc.pid, signal.SIGKILL)
        else:
            pmcrun.kill_session(proc)
        proc.wait(timeout=10)
        if not pmcrun.wait_pids_gone(tree, timeout=10):
            self.fail("processes of the killed run are still alive 10 s after SIGKILL")
        if not pmcrun.wait_unlocked(dag_path, timeout=10):
            self.fail("the DAG is still locked 10 s after every process of the killed run "
                      "ended")
        snapshot = pmcrun.parse_rescue(rescue, complete_only=True).done_set
        pmcrun.finish(proc, timeout=5)
        self.assertLess(len(snapshot), NTASKS, "every task was DONE before the kill")

        again = restart_ranks or ranks
        res = self.run_pmc(args, ranks=again, ranks_are_hosts=again > 1)
        problems = pmcrun.success_problems(res, dag, skipped=snapshot, since=res.started)
        if again < ranks:  # the killed run's per-rank files of ranks the restart lacks
            ok = {r.name for r in res.tasks if r.status == 0}
            lost = sorted(snapshot - ok)
            if lost:
                problems.append("%d tasks DONE at the kill have no record in the restart's "
                                "output, e.g. %s" % (len(lost), lost[:3]))
        elif ranks > 1:
            fresh = [r for r in res.tasks if r.start >= res.started - pmcrun.ORDER_TOLERANCE]
            slots = pmcrun.slot_counts(fresh)
            if len(slots) < 2:
                problems.append("the restart ran tasks on rank(s) %s only, of %d hosts"
                                % (sorted(slots), ranks))
        self.check(problems, res, "ranks=%d, %d tasks DONE at the kill" % (ranks, len(snapshot)))

    def test_kill_restart_ranks1(self):
        self.kill_and_restart(1)

    def test_kill_restart_ranks4(self):
        self.kill_and_restart(4)

    def test_kill_restart_with_fewer_ranks(self):
        self.kill_and_restart(4, restart_ranks=1)


if __name__ == "__main__":
    pmcrun.main()
