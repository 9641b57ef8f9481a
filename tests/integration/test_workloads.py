#!/usr/bin/env python3
"""test_workloads.py - real workflows run to success (acceptance case a).

Every DAG in the shared workloads directory (real Pegasus workflows whose
tasks sleep for their recorded runtime / 1000) and in examples/ is copied to
a fresh temporary directory and run with 1 rank (no mpiexec) and with
`mpiexec -n 4`, both with --host-cpus 16.  Each run must: exit 0, print one
cluster-summary with stat="ok" and counts that match the records, print
exactly one successful cluster-task record per task (with id=, app=, cpus=,
memory= as the DAG says), record every task DONE in the rescue file, start
no task before all its parents ended, and leave no per-rank stdio files.

A missing workloads directory is a failure, not a skip, unless
PMC_ALLOW_NO_WORKLOADS=1.  Each DAG is a subTest named "NAME ranks=R".

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
    def run_dags(self, folder, ranks):
        dags = sorted(f for f in os.listdir(folder) if f.endswith(".dag"))
        self.assertTrue(dags, "no .dag files in %s" % folder)
        for name in dags:
            case = "%s ranks=%d" % (name, ranks)
            with self.subTest(case=case):
                sub = os.path.join(self.tmp, "%s.%d" % (name, ranks))
                os.mkdir(sub)
                dag_path = os.path.join(sub, name)
                pmcrun.shutil.copyfile(os.path.join(folder, name), dag_path)
                dag = pmcrun.parse_dag(dag_path)
                res = pmcrun.run(["--host-cpus", HOST_CPUS, dag_path], ranks=ranks, cwd=sub,
                                 timeout=TIMEOUT)
                self.check(pmcrun.success_problems(res, dag), res, case)

    def test_workloads_ranks1(self):
        self.run_dags(self.require_workloads(), 1)

    def test_workloads_ranks4(self):
        self.run_dags(self.require_workloads(), 4)

    def test_examples_ranks1(self):
        self.run_dags(os.path.join(pmcrun.CONFIG.source_dir, "examples"), 1)

    def test_examples_ranks4(self):
        self.run_dags(os.path.join(pmcrun.CONFIG.source_dir, "examples"), 4)


if __name__ == "__main__":
    pmcrun.main()
