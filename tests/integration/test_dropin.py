#!/usr/bin/env python3
"""test_dropin.py - the last drop-in details (issue 46), run as a PMC user
would, in PMC's launch shape (`mpiexec -n N` on one host, --host-cpus);
docs/compat-notes.md says what matches PMC.

  * affinity_without_set_affinity: mpiexec -n 8 --host-cpus 8, tasks of -c
    1, 2, 4 and 8 (each twice) that record PMC_AFFINITY, their own
    Cpus_allowed_list (/proc/self/status) and their start and end around a
    0.3 s sleep: every task gets PMC_AFFINITY in PMC's form (ids,
    comma-separated, "0,1,2,3"), as many distinct ids as its -c, all in
    0..7 (the logical slots of --host-cpus 8, as PMC numbers them, on a
    machine of fewer CPUs); tasks that ran at the same time have disjoint
    lists; no task is bound (its Cpus_allowed_list is every CPU this test
    may use, more than one).  PMC's worker sets PMC_AFFINITY whenever the
    task has CPUs and binds only with --set-affinity; before, the variable
    was missing without --set-affinity.
  * affinity_of_staged_tasks: one rank, the machine's CPUs (detected),
    --launch-threads 3 (launchers to spare: tasks are staged in the pool
    and started by whichever task ends, engine/node/agent_stage.c): 40 tasks of
    -c 1 sleeping 0.05 s each get one id, a CPU this test may use, never
    the id of a task running at the same time; the Engine CPU line counts
    staged starts (so the staged path is the one checked).
  * affinity_with_set_affinity: one rank, the machine's CPUs: tasks of -c 1
    and -c 2 (twice each) are bound to exactly the CPUs PMC_AFFINITY names
    (PMC's comma form), concurrent ones disjoint.
  * resource_log_lines: mpiexec -n 3 -s sleep.dag --host-cpus 4
    --host-memory 100 on one task (-c 3 -m 5, sleep 1): sleep.dag.resource
    has exactly PMC's three lines, "TS,4,4,100,HOST", "TS,1,1,95,HOST",
    "TS,4,4,100,HOST" (HOST the records' hostname), timestamps in order,
    the second not after the task's start + 1 s and the third not before
    its end - 0.5 s; no "*" totals line (before: 6 lines).
  * host_script_lines: -v, --host-script S (S writes a marker and leaves a
    background sleep in its group), mpiexec -n 2: the log has PMC's worker
    lines naming rank 1 (the host's agent): "Worker 1: Launching host
    script S", "Worker 1: Host script exited with status 0 (0)", "Worker 1:
    Using task stdout file: DAG.out.1", "... stderr file: DAG.err.1",
    "Worker 1: Starting...", "Worker 1: Terminating host script process
    group with SIGTERM"; with one rank the same lines name rank 0; a script
    that exits 3: "Worker 1: Host script failed with status 3", exit 1.
  * priority_order_on_one_cpu: --host-cpus 1, 30 ready tasks of priorities
    10, 3, 0, -1, -5 (with ties) in shuffled file order, each appending its
    name to a sequence file: the sequence is the priority order, highest
    first, ties in file (ready) order, with 1 rank and with mpiexec -n 2;
    the [cluster-task] start times give the same order.
"""

import os
import random
import re
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

AFFINITY = """#!/bin/sh
# aff.sh DIR NAME SECONDS: record PMC_AFFINITY, this process's CPUs and its
# start and end around a sleep.
date +%s.%N > "$1/$2.start"
printf '%s\\n' "${PMC_AFFINITY-UNSET}" > "$1/$2.affinity"
grep '^Cpus_allowed_list:' /proc/self/status > "$1/$2.status"
sleep "$3"
date +%s.%N > "$1/$2.end"
"""

HOST_SCRIPT = """#!/bin/sh
# host.sh: mark that it ran, leave a sleep behind in its group, exit 0.
touch "DIR/host-script.ran"
sleep 30 &
echo $! > "DIR/host-script.child"
exit 0
"""

ID_LIST = re.compile(r"^\d+(,\d+)*$")  # PMC's form: "0,1,2,3"


def read(path):
    text = pmcrun.read_text(path)
    return text.strip() if text is not None else None


def expand_cpus(text):
    """'0-2,5' -> {0, 1, 2, 5}; None if text is not a CPU list."""
    cpus = set()
    try:
        for part in text.strip().split(","):
            lo, _, hi = part.partition("-")
            cpus.update(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        return None
    return cpus


class Dropin(pmcrun.TestCase):
    # ------------------------------------------------------------ affinity

    def affinity_dag(self, name, sizes, seconds):
        """A DAG of tasks t0, t1, ... of -c sizes[i] running aff.sh."""
        self.write("aff.sh", AFFINITY, 0o755)
        lines = ["TASK t%d -c %d /bin/sh %s/aff.sh %s t%d %s"
                 % (i, c, self.tmp, self.tmp, i, seconds) for i, c in enumerate(sizes)]
        return self.write(name, "\n".join(lines) + "\n")

    def affinity_problems(self, sizes, ids_within, bound):
        """Per task: PMC_AFFINITY in PMC's form, len == -c, distinct ids in
        ids_within; bound: Cpus_allowed == those ids, else unbound (every
        CPU this test may use); tasks that overlapped in time: disjoint."""
        problems, spans = [], []
        mine = os.sched_getaffinity(0)
        for i, c in enumerate(sizes):
            name = "t%d" % i
            env = read(self.path(name + ".affinity"))
            status = read(self.path(name + ".status"))
            start = read(self.path(name + ".start"))
            end = read(self.path(name + ".end"))
            if None in (env, status, start, end):
                problems.append("%s (-c %d) left no record (affinity %r, status %r)"
                                % (name, c, env, status))
                continue
            if not ID_LIST.match(env):
                problems.append("%s (-c %d): PMC_AFFINITY=%r is not PMC's comma-separated ids"
                                % (name, c, env))
                continue
            ids = [int(x) for x in env.split(",")]
            if len(ids) != c or len(set(ids)) != c:
                problems.append("%s (-c %d): PMC_AFFINITY=%s names %d distinct ids of %d"
                                % (name, c, env, len(set(ids)), len(ids)))
            if not set(ids) <= ids_within:
                problems.append("%s: PMC_AFFINITY=%s outside %s" % (name, env, sorted(ids_within)))
            allowed = expand_cpus(status.split(":", 1)[1])
            if bound and allowed != set(ids):
                problems.append("%s: bound to %s, PMC_AFFINITY=%s" % (name, status, env))
            if not bound and (allowed is None or not mine <= allowed or len(allowed) < 2):
                problems.append("%s: %s but no --set-affinity: it should run unbound (on %s)"
                                % (name, status, sorted(mine)))
            spans.append((name, float(start), float(end), set(ids)))
        for k, (a, s1, e1, ids1) in enumerate(spans):
            for b, s2, e2, ids2 in spans[k + 1:]:
                if s1 < e2 and s2 < e1 and ids1 & ids2:
                    problems.append("%s and %s ran at the same time with ids %s and %s"
                                    % (a, b, sorted(ids1), sorted(ids2)))
        return problems[:30]

    def need_two_cpus(self):
        if len(os.sched_getaffinity(0)) < 2:
            self.skipTest("this process may use only CPUs %s; 2 needed"
                          % sorted(os.sched_getaffinity(0)))

    def test_affinity_without_set_affinity(self):
        self.need_two_cpus()
        sizes = [1, 2, 4, 8, 1, 2, 4, 8]
        dag = self.affinity_dag("wf.dag", sizes, 0.3)
        res = self.run_pmc(["--host-cpus", "8", dag], ranks=8)
        problems = [] if res.returncode == 0 else ["exit %d" % res.returncode]
        problems += self.affinity_problems(sizes, set(range(8)), bound=False)
        self.check(problems, res)

    def test_affinity_of_staged_tasks(self):
        self.need_two_cpus()
        sizes = [1] * 40
        dag = self.affinity_dag("wf.dag", sizes, 0.05)
        res = self.run_pmc(["--launch-threads", "3", dag])
        problems = [] if res.returncode == 0 else ["exit %d" % res.returncode]
        m = re.search(r"(\d+) staged starts", res.stderr)
        if not m or int(m.group(1)) == 0:
            problems.append("no staged starts counted (%s): the staged path was not run"
                            % (m.group(0) if m else "no Engine CPU line"))
        problems += self.affinity_problems(sizes, os.sched_getaffinity(0), bound=False)
        self.check(problems, res)

    def test_affinity_with_set_affinity(self):
        self.need_two_cpus()
        sizes = [1, 2, 1, 2]
        dag = self.affinity_dag("wf.dag", sizes, 0.2)
        res = self.run_pmc(["--set-affinity", dag])
        problems = [] if res.returncode == 0 else ["exit %d" % res.returncode]
        problems += self.affinity_problems(sizes, os.sched_getaffinity(0), bound=True)
        self.check(problems, res)

    # -------------------------------------------------------- resource log

    def test_resource_log_lines(self):
        dag = self.write_dag("sleep.dag", "TASK s -c 3 -m 5 /bin/sleep 1")
        res = self.run_pmc(["-s", dag, "--host-cpus", "4", "--host-memory", "100"], ranks=3)
        problems = [] if res.returncode == 0 else ["exit %d" % res.returncode]
        text = pmcrun.read_text(dag + ".resource") or ""
        lines = text.splitlines()
        records = res.tasks
        if len(records) != 1:
            problems.append("%d [cluster-task] records, expected 1" % len(records))
            self.check(problems, res)
        host = records[0].fields.get("hostname")
        want = ["4,4,100,%s" % host, "1,1,95,%s" % host, "4,4,100,%s" % host]
        got = [line.split(",", 1)[1] if "," in line else line for line in lines]
        if got != want:
            problems.append("sleep.dag.resource has %d lines %r, expected PMC's 3: %r"
                            % (len(lines), lines, want))
        else:
            ts = [float(line.split(",", 1)[0]) for line in lines]
            if ts != sorted(ts):
                problems.append("timestamps out of order: %s" % ts)
            if ts[1] > records[0].start + 1.0:
                problems.append("the task's line (%.3f) comes over 1 s after its start (%.3f)"
                                % (ts[1], records[0].start))
            if ts[2] < records[0].end - 0.5:
                problems.append("the line after the task (%.3f) comes before its end (%.3f)"
                                % (ts[2], records[0].end))
        self.check(problems, res)

    # -------------------------------------------------- host script lines

    def test_host_script_lines(self):
        script = self.write("host.sh", HOST_SCRIPT.replace("DIR", self.tmp), 0o755)
        dag = self.write_dag("wf.dag", "TASK a /bin/true")
        for ranks, worker in ((2, 1), (1, 0)):
            with self.subTest(ranks=ranks):
                res = self.run_pmc(["-v", "--host-script", script, dag], ranks=ranks)
                problems = [] if res.returncode == 0 else ["exit %d" % res.returncode]
                if not os.path.exists(self.path("host-script.ran")):
                    problems.append("the host script did not run")
                w = "Worker %d: " % worker
                for line in ("Launching host script " + script,
                             "Host script exited with status 0 (0)",
                             "Using task stdout file: %s.out.%d" % (dag, worker),
                             "Using task stderr file: %s.err.%d" % (dag, worker),
                             "Starting...",
                             "Terminating host script process group with SIGTERM"):
                    if w + line not in res.stderr:
                        problems.append("the log lacks PMC's line %r" % (w + line))
                child = read(self.path("host-script.child"))
                if child and os.path.exists("/proc/%s" % child):
                    stat = pmcrun.read_text("/proc/%s/stat" % child) or ""
                    if "(sleep)" in stat and " Z " not in stat:
                        problems.append("the host script's sleep (pid %s) outlived the run"
                                        % child)
                if os.path.exists(self.path("host-script.ran")):
                    os.unlink(self.path("host-script.ran"))
                self.check(problems, res)
        failing = self.write("fail.sh", "#!/bin/sh\nexit 3\n", 0o755)
        res = self.run_pmc(["--host-script", failing, dag], ranks=2)
        problems = [] if res.returncode == 1 else ["exit %d, expected 1" % res.returncode]
        if "Worker 1: Host script failed with status 3" not in res.stderr:
            problems.append("the log lacks 'Worker 1: Host script failed with status 3'")
        self.check(problems, res)

    # ---------------------------------------------------------- priorities

    def test_priority_order_on_one_cpu(self):
        rng = random.Random(46)
        prios = [rng.choice([10, 3, 0, 0, -1, -5]) for _ in range(30)]
        seq = self.path("seq.txt")
        lines = ['TASK t%02d -p %d /bin/sh -c "echo t%02d >> %s"' % (i, p, i, seq)
                 for i, p in enumerate(prios)]
        dag = self.write("wf.dag", "\n".join(lines) + "\n")
        # highest first, ties in file (ready) order
        want = ["t%02d" % i for i in sorted(range(30), key=lambda i: (-prios[i], i))]
        for ranks in (1, 2):
            with self.subTest(ranks=ranks):
                if os.path.exists(seq):
                    os.unlink(seq)
                res = self.run_pmc(["-s", "--host-cpus", "1", dag], ranks=ranks)
                problems = [] if res.returncode == 0 else ["exit %d" % res.returncode]
                got = (pmcrun.read_text(seq) or "").split()
                if got != want:
                    problems.append("start order %s, expected the priority order %s"
                                    % (" ".join(got), " ".join(want)))
                start = {r.name: r.start for r in res.tasks}  # to the millisecond
                for x, y in zip(want, want[1:]):
                    if x in start and y in start and start[x] > start[y]:
                        problems.append("[cluster-task] %s started at %.3f, after %s (%.3f)"
                                        % (x, start[x], y, start[y]))
                self.check(problems, res)


if __name__ == "__main__":
    pmcrun.main()
