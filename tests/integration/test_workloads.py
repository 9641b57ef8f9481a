#!/usr/bin/env python3
"""test_workloads.py - real workflows run to success (acceptance case a).

Every DAG in the shared workloads directory (real Pegasus workflows whose
tasks sleep for their recorded runtime / 1000) and in examples/ is copied to
a fresh temporary directory and run with --host-cpus 16:

  * ranks1: 1 rank (no mpiexec; rank 0 is master and agent);
  * ranks4: `mpiexec -n 4 --ranks-are-hosts`: four hosts (node agents on
    ranks 0..3) on this machine, tasks and results over MPI; at least two
    ranks ran tasks;
  * launchers (workloads only): 1 rank with --launch-threads 2: tasks are
    spawned by two launcher threads (engine/exec/launcher.h), not the agent's
    (by default a host of fewer than 8 CPUs gets one per CPU and one to
    spare, none on a single usable CPU, one per 2 CPUs from 8 on);
  * launch_threads_default (examples' montage-small): the pool a host gets
    without --launch-threads, named by the agent's -v line;
  * ranks4_one_host (workloads only): `mpiexec -n 4` in PMC's launch shape:
    the four ranks are one host, rank 1 is its agent and runs every task
    (slot=1), ranks 2 and 3 wait idle, and the summary counts the host once
    (cpus=16).

Each run must: exit 0, print one cluster-summary with stat="ok" and counts
that match the records, print exactly one successful cluster-task record per
task (with id=, app=, cpus=, memory= as the DAG says), record every task DONE
in the rescue file, start no task before all its parents ended, and leave no
per-rank stdio files.

A missing workloads directory is a failure, not a skip, unless
PMC_ALLOW_NO_WORKLOADS=1.  Each DAG is a subTest named "NAME ranks=R[ one host]".

    python3 tests/integration/test_workloads.py --bin build/pmc-hybrid \\
        --workloads ../shared/workloads [-k ranks1]
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

HOST_CPUS = "16"
TIMEOUT = 180  # seconds per workflow run


class Workloads(pmcrun.TestCase):
    def run_dags(self, folder, ranks, one_host=False, extra=()):
        """Run every DAG of folder; ranks > 1 are hosts of their own unless
        one_host (PMC's launch shape)."""
        dags = sorted(f for f in os.listdir(folder) if f.endswith(".dag"))
        self.assertTrue(dags, "no .dag files in %s" % folder)
        for name in dags:
            case = "%s ranks=%d%s" % (name, ranks, " one host" if one_host else "")
            with self.subTest(case=case):
                sub = os.path.join(self.tmp, "%s.%d%s" % (name, ranks, ".one" if one_host else ""))
                os.mkdir(sub)
                dag_path = os.path.join(sub, name)
                pmcrun.shutil.copyfile(os.path.join(folder, name), dag_path)
                dag = pmcrun.parse_dag(dag_path)
                hosts = ranks > 1 and not one_host
                res = pmcrun.run(["--host-cpus", HOST_CPUS] + list(extra) + [dag_path],
                                 ranks=ranks, cwd=sub,
                                 timeout=TIMEOUT, ranks_are_hosts=hosts)
                problems = pmcrun.success_problems(res, dag)
                slots = pmcrun.slot_counts(res.tasks)
                if hosts and len(slots) < 2:
                    problems.append("only rank(s) %s ran tasks on %d hosts"
                                    % (sorted(slots), ranks))
                if one_host:
                    if set(slots) - {1}:
                        problems.append("tasks per slot %s: on one host of %d ranks rank 1 "
                                        "(its agent) runs every task" % (slots, ranks))
                    if res.summaries and res.summaries[0].get("cpus") != HOST_CPUS:
                        problems.append("cluster-summary cpus=%s, expected %s (one host)"
                                        % (res.summaries[0].get("cpus"), HOST_CPUS))
                self.check(problems, res, case)

    def test_workloads_ranks1(self):
        self.run_dags(self.require_workloads(), 1)

    def test_workloads_launchers(self):
        self.run_dags(self.require_workloads(), 1, extra=("--launch-threads", "2"))

    def test_launch_threads_default(self):
        """Without --launch-threads a host gets, from its --host-cpus and
        the CPUs this machine lets it run on (engine/exec/launcher.h): none on
        one usable CPU, one launcher per CPU and one to spare while the
        smaller of the two is below 8, one per 2 CPUs of it from 8 on; and
        runs montage-small with them; the agent's -v line names the pool;
        a rank bound to one CPU gets none with --keep-affinity, the default
        pool without (its binding is widened to every CPU, as PMC does).
        launcher_default_threads itself is unit-tested; this checks that
        the engine passes it the right two counts."""
        usable = len(os.sched_getaffinity(0))
        src = os.path.join(pmcrun.CONFIG.source_dir, "examples", "montage-small.dag")

        def by_default(cpus, usable):
            n = min(cpus, usable)
            if usable <= 1:
                return 0
            if n < 8:
                return cpus + 1 if cpus < 64 else 0
            return min(n // 2, 64)

        def line(cpus, n):
            return "%d CPUs, %d launch threads%s" % (cpus, n, "" if n else " (the agent thread")

        one_cpu = min(os.sched_getaffinity(0))
        for cpus, extra, bound, want in (
                ("4", (), False, line(4, by_default(4, usable))),
                ("24", (), False, line(24, by_default(24, usable))),
                # a rank bound to one core (mpiexec -bind-to core, taskset)
                # that keeps its binding: its threads share that core, so
                # no pool, however many CPUs the host has
                ("24", ("--keep-affinity",), True, line(24, 0)),
                # ... while by default the binding is widened to every CPU
                # (PMC's reset), and the pool with it
                ("24", (), True, line(24, by_default(24, usable))),
                ("24", ("--launch-threads", "0"), False, "24 CPUs, 0 launch threads"),
                ("4", ("--launch-threads", "2"), False, "4 CPUs, 2 launch threads")):
            case = "--host-cpus %s %s%s" % (cpus, " ".join(extra), " bound to one CPU" if bound else "")
            with self.subTest(case=case):
                sub = os.path.join(self.tmp, "default.%s.%d.%d" % (cpus, len(extra), bound))
                os.mkdir(sub)
                dag_path = os.path.join(sub, "montage-small.dag")
                pmcrun.shutil.copyfile(src, dag_path)
                pin = (lambda: os.sched_setaffinity(0, {one_cpu})) if bound else None
                res = pmcrun.run(["-v", "--host-cpus", cpus] + list(extra) + [dag_path],
                                 cwd=sub, timeout=TIMEOUT, preexec=pin)
                problems = pmcrun.success_problems(res, pmcrun.parse_dag(dag_path))
                if "[debug] Rank 0: " + want not in res.stderr:
                    problems.append("no debug line 'Rank 0: %s'" % want)
                self.check(problems, res, case)

    def test_workloads_ranks4(self):
        self.run_dags(self.require_workloads(), 4)

    def test_workloads_ranks4_one_host(self):
        self.run_dags(self.require_workloads(), 4, one_host=True)

    def test_examples_ranks1(self):
        self.run_dags(os.path.join(pmcrun.CONFIG.source_dir, "examples"), 1)

    def test_examples_ranks4(self):
        self.run_dags(os.path.join(pmcrun.CONFIG.source_dir, "examples"), 4)


if __name__ == "__main__":
    pmcrun.main()
