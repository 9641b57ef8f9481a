#!/usr/bin/env python3
"""test_resources.py - resource-based scheduling (issue "resource-based scheduling").

What the PMC manual (RESOURCE-BASED SCHEDULING, task options -c/-m/-p,
--strict-limits, --keep-affinity) and COMPAT.md (task environment,
--set-affinity, --master-only, "No host is capable" message) promise:

  * cpu_accounting: --host-cpus 4, 24 tasks of -c 1/2/3 that write their own
    start and end times (date +%s.%N) around a 0.3 s sleep: at no moment do
    the CPUs of the running tasks add up to more than 4 (a task occupies
    [start, end]); and the host is used (some moment has >= 3 CPUs busy).
  * memory_accounting: the same with --host-memory 1000 --host-cpus 16 and
    tasks of -m 300/500/700: never more than 1000 MB in use, >= 800 at some
    moment.
  * insufficient_cpus / insufficient_memory: a task of -c 5 with --host-cpus
    4, a task of -m 2000 with --host-memory 1000: exit 1, stderr has "FATAL
    ERROR: No host is capable of running task NAME", no task ran (marker
    files), no cluster-task record, the rescue file is not created (cpus) or
    not changed (memory, where one exists beforehand).
  * priority_order: --host-cpus 1, five independent tasks of priority 0, 10,
    -3, 10, 7 (file order) run by priority, highest first, FIFO among equals;
    with -v -v the "Scheduling task NAME" lines come in the same order.
  * priority_deferral: --host-cpus 2; L (-c 1, 1 s) and a short R start
    first; R gates H (-p 10, -c 2) and M (-p 1, -c 1).  H cannot fit while L
    runs, so the lower-priority M starts first (while L is still running) and
    H starts after L ends.
  * priority_past_the_window: --host-cpus 2, P (-p 50, 0.1 s) gates X
    (-p 100, 0.01 s), beside 100 tasks of 0.2 s at the default priority,
    most of them queued at the node when X becomes ready: X starts before
    any more than 8 of them start after P's end (it went past the node's
    prefetch window to the front of its queue; it waited behind 33 before;
    1 here, plain or under ThreadSanitizer, with or without a launcher
    pool: a CPU frees every 0.1 s, so each 0.1 s of delay on a loaded
    machine adds one).
  * staged_tasks_wait_behind_no_long_task: --host-cpus 2 --launch-threads
    2, L (-p 10, 3 s) and six tasks of 0.15 s: once both CPUs are busy the
    agent stages the short tasks in the launcher pool, and whichever task
    ends first starts the oldest (engine/node/agent_stage.c): every short task
    ends before L (none waits behind it), at most 2 CPUs are ever busy, and
    the Engine CPU line counts staged starts.
  * launchers_to_spare_wait_for_their_own_tasks: --host-cpus 2
    --launch-threads 3 (launchers to spare: they wait for their own tasks,
    and exits wake the agent less often): 3,000 /bin/true all succeed,
    most waited for by their launcher, none taking over 1 s (an exit seen
    late); the staged tasks wait behind no long task; montage-small runs
    in order.
  * staged_task_that_cannot_execute: the same host, L (-p 10, 3 s), s0 (-p
    9, 0.3 s), X (-p 8, a program that does not exist), s1..s3 (0.1 s): X
    and s1 are staged while L and s0 run; s0's end starts X, which fails;
    the CPU it gave back starts s1, the staged one, before s2 and s3 (one
    of them still queued); X's record has a non-zero status, the run exits 1, every other
    task succeeded once, all before L ended, never more than 2 CPUs busy.
  * staging_keeps_priority_order: the same host with --host-memory 1000;
    r1 (0.3 s) and r2 (1.5 s; -p 20) run first; A (-p 10, -m 100) fits
    the CPU r1 frees, so no task of -p 1 (no memory: stageable) starts
    before it.
  * staged_task_time_limit_counts_from_its_start: the same host, l1 and
    l2 (1.2 s) run; T (0.5 s, --time-limit 1) is staged meanwhile and runs
    after them, within its limit from its own start: it succeeds.
  * staged_tasks_cancelled_at_an_abort: the same host, 20 tasks of 0.4 s
    that log each start; SIGTERM once 4 are DONE: the run fails within
    20 s, it had started tasks staged, at most 3 records of killed tasks
    (the 2 running, and one a reaper may start as the abort begins: the
    staged ones are cancelled, not started and killed; fails without
    that), every DONE task had started, some had not; the restart runs
    the rest, each task once in all or twice when the abort killed it.
  * no_staging_beyond_the_cpus: --host-cpus twice the CPUs this process may
    use, 60 /bin/true: more tasks in flight than CPUs, so nothing is staged
    (0 staged starts), and the run succeeds.
  * spread_ranks4: mpiexec -n 4 --ranks-are-hosts (four hosts of 8 CPUs on
    this machine), 40 tasks of 0.2 s: every rank (slot=0..3) ran at least
    one task, and each record's hostname= is "HOSTNAME:SLOT".  (Without
    --ranks-are-hosts the four ranks are one host: test_hosts.py.)
  * environment_ranks1 / environment_ranks2: PMC_TASK, PMC_MEMORY, PMC_CPUS,
    PMC_RANK, PMC_HOST_RANK as seen by the task (defaults 0 MB and 1 CPU);
    with 2 ranks and --ranks-are-hosts PMC_RANK equals the slot= of the
    task's record, PMC_HOST_RANK is 0 (one agent per host) and tasks ran on
    both ranks.
  * set_affinity: --set-affinity (the host's real CPUs; this test needs two
    that this process may use): a -c 2 task's Cpus_allowed_list has exactly
    2 CPUs and PMC_AFFINITY names the same CPUs; a -c 1 task gets exactly 1
    CPU.
  * set_affinity_refuses_host_cpus: --set-affinity with --host-cpus 2, or
    with PMC_HOST_CPUS=2, is refused as in PMC: exit 1, stderr has
    "--set-affinity cannot be used with --host-cpus", no task ran, no
    record; --host-cpus 0 (detect) is accepted.
  * inherited_affinity: pmc-hybrid started with the CPU affinity {first CPU}
    (what `taskset -c 0` does; set through sched_setaffinity in the child
    before exec): without --keep-affinity a task may use every CPU this test
    may use; with --keep-affinity only the first one.
  * strict_limits: --strict-limits: a -m 64 task that builds a 200 MB shell
    string fails, the same with -m 1024 succeeds, a -m 5000 task's
    `ulimit -v` prints 5120000; without --strict-limits all succeed and
    `ulimit -v` prints the inherited limit.
  * master_only: mpiexec -n 2 --master-only: every task ran on rank 1 (the
    host's agent; slot=1, none on rank 0).
"""

import os
import re
import resource
import signal
import socket
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

STAMP = """#!/bin/sh
# stamp.sh DIR NAME SECONDS: record this task's start and end around a sleep.
date +%s.%N > "$1/$2.start"
sleep "$3"
date +%s.%N > "$1/$2.end"
"""

ENV = """#!/bin/sh
# env.sh DIR NAME [SECONDS]: record the PMC_* variables, then sleep.
printf '%s|%s|%s|%s|%s\\n' "${PMC_TASK-UNSET}" "${PMC_MEMORY-UNSET}" "${PMC_CPUS-UNSET}" \\
    "${PMC_RANK-UNSET}" "${PMC_HOST_RANK-UNSET}" > "$1/$2.env"
sleep "${3:-0}"
"""

AFFINITY = """#!/bin/sh
# affinity.sh DIR NAME: record this process's CPU list and PMC_AFFINITY.
cat /proc/self/status > "$1/$2.status"
printf '%s\\n' "${PMC_AFFINITY-UNSET}" > "$1/$2.affinity"
"""

ALLOC = """#!/bin/sh
# alloc.sh: hold a 200 MB string in the shell.
x=$(head -c 200000000 /dev/zero | tr '\\000' a)
echo "allocated ${#x}"
"""


def read_float(path):
    try:
        with open(path) as f:
            return float(f.read().strip())
    except (OSError, ValueError):
        return None


def expand_cpus(text):
    """'0-2,5' -> {0, 1, 2, 5}; None if text is not a CPU list."""
    cpus = set()
    try:
        for part in text.strip().split(","):
            if "-" in part:
                lo, hi = part.split("-")
                cpus.update(range(int(lo), int(hi) + 1))
            else:
                cpus.add(int(part))
    except ValueError:
        return None
    return cpus


def allowed_cpus(status_text):
    m = re.search(r"^Cpus_allowed_list:\s*(\S+)\s*$", status_text or "", re.M)
    return expand_cpus(m.group(1)) if m else None


def peak_usage(intervals):
    """intervals: [(name, start, end, amount)].  The largest sum of amounts
    of intervals containing one moment (some interval's start), and the
    names involved."""
    best, who = 0, []
    for _, s, _, _ in intervals:
        active = [(n, a) for n, s2, e2, a in intervals if s2 <= s <= e2]
        total = sum(a for _, a in active)
        if total > best:
            best, who = total, active
    return best, who


class Resources(pmcrun.TestCase):
    def stamped(self, names):
        """[(name, start, end)] from the stamp files; problems for missing."""
        got, problems = [], []
        for name in names:
            s = read_float(self.path(name + ".start"))
            e = read_float(self.path(name + ".end"))
            if s is None or e is None:
                problems.append("%s: missing or bad start/end stamp file" % name)
                continue
            got.append((name, s, e))
        return got, problems

    def ok_run_problems(self, res, dag_path, rescue=True):
        if rescue:
            return pmcrun.success_problems(res, pmcrun.parse_dag(dag_path))
        problems = []
        if res.timed_out or res.returncode != 0:
            problems.append("exit status %s, expected 0" % res.returncode)
        return problems

    # ------------------------------------------------------------ accounting

    def accounting(self, opt, amounts, host_args, cap, min_peak, what):
        self.write("stamp.sh", STAMP, 0o755)
        lines, need = [], {}
        for i in range(24):
            name = "r%02d" % i
            need[name] = amounts[i % len(amounts)]
            lines.append("TASK %s %s %d /bin/sh %s/stamp.sh %s %s 0.3"
                         % (name, opt, need[name], self.tmp, self.tmp, name))
        dag_path = self.write("acct.dag", "\n".join(lines) + "\n")
        res = self.run_pmc(host_args + [dag_path])
        problems = self.ok_run_problems(res, dag_path)
        got, more = self.stamped(need)
        problems += more
        peak, who = peak_usage([(n, s, e, need[n]) for n, s, e in got])
        if peak > cap:
            problems.append("%s in use reached %d > %d: %s running at once"
                            % (what, peak, cap, ", ".join("%s(%d)" % x for x in who)))
        if got and peak < min_peak:
            problems.append("%s in use never reached %d (peak %d): the host was not used"
                            % (what, min_peak, peak))
        self.check(problems, res)

    def test_cpu_accounting(self):
        self.accounting("-c", [1, 2, 3], ["--host-cpus", "4"], 4, 3, "CPUs")

    def test_memory_accounting(self):
        self.accounting("-m", [300, 500, 700],
                        ["--host-memory", "1000", "--host-cpus", "16"], 1000, 800, "memory (MB)")

    # ---------------------------------------------------------- insufficient

    def insufficient(self, opt, host_args, rescue_before):
        dag_path = self.write_dag("big.dag", """
            TASK marker /bin/touch {tmp}/ran.marker
            TASK prev /bin/touch {tmp}/ran.prev
            TASK big {opt} /bin/touch {tmp}/ran.big
            TASK after /bin/touch {tmp}/ran.after
            EDGE marker after
            """.format(tmp=self.tmp, opt=opt))
        rescue = dag_path + ".rescue"
        if rescue_before is not None:
            self.write("big.dag.rescue", rescue_before)
        res = self.run_pmc(host_args + [dag_path], timeout=60)
        problems = []
        if res.timed_out or res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        want = "FATAL ERROR: No host is capable of running task big"
        if want not in res.stderr:
            problems.append("stderr lacks %r" % want)
        ran = sorted(f for f in os.listdir(self.tmp) if f.startswith("ran."))
        if ran:
            problems.append("tasks ran although the workflow cannot run: %s" % ran)
        if res.tasks:
            problems.append("%d cluster-task records" % len(res.tasks))
        if rescue_before is None:
            if os.path.exists(rescue):
                problems.append("rescue file created: %r" % pmcrun.read_text(rescue))
        elif pmcrun.read_text(rescue) != rescue_before:
            problems.append("rescue file changed from %r to %r"
                            % (rescue_before, pmcrun.read_text(rescue)))
        self.check(problems, res)

    def test_insufficient_cpus(self):
        self.insufficient("-c 5", ["--host-cpus", "4"], None)

    def test_insufficient_memory(self):
        self.insufficient("-m 2000", ["--host-memory", "1000", "--host-cpus", "4"],
                          "DONE prev\n")

    # ------------------------------------------------------------ priorities

    def test_priority_order(self):
        prios = [("p0", 0), ("p10a", 10), ("pm3", -3), ("p10b", 10), ("p7", 7)]
        expected = ["p10a", "p10b", "p7", "p0", "pm3"]
        dag_path = self.write("prio.dag", "".join(
            "TASK %s -p %d /bin/sh -c 'echo %s >> %s/order; sleep 0.05'\n"
            % (name, p, name, self.tmp) for name, p in prios))
        res = self.run_pmc(["-v", "-v", "--host-cpus", "1", dag_path])
        problems = self.ok_run_problems(res, dag_path)
        order = (pmcrun.read_text(self.path("order")) or "").split()
        if order != expected:
            problems.append("run order (order file) %s, expected %s" % (order, expected))
        by_start = [r.name for r in sorted(res.tasks, key=lambda r: (r.start, r.lineno))]
        if by_start != expected:
            problems.append("run order (record start) %s, expected %s" % (by_start, expected))
        names = set(expected)
        sched = [n for n in re.findall(r"Scheduling task (\S+)", res.stderr) if n in names]
        if sched != expected:
            problems.append("'Scheduling task NAME' lines (-v -v) in order %s, expected %s"
                            % (sched, expected))
        self.check(problems, res)

    def test_priority_past_the_window(self):
        dag_path = self.write("window.dag", "TASK P -p 50 /bin/sleep 0.1\n"
                              "TASK X -p 100 /bin/sleep 0.01\nEDGE P X\n" + "".join(
                                  "TASK t%03d /bin/sleep 0.2\n" % i for i in range(100)))
        res = self.run_pmc(["--host-cpus", "2", dag_path], timeout=120)
        problems = self.ok_run_problems(res, dag_path)
        rec = {r.name: r for r in res.tasks}
        if "P" in rec and "X" in rec:
            p_end, x_start = rec["P"].start + rec["P"].duration, rec["X"].start
            between = sorted(r.name for r in res.tasks
                             if r.name.startswith("t") and p_end <= r.start < x_start)
            if len(between) > 8:
                problems.append("X (-p 100) became ready at P's end and waited %.2f s while %d "
                                "tasks of priority 0 started: %s" % (
                                    x_start - p_end, len(between), between))
        self.check(problems, res)

    def test_priority_deferral(self):
        self.write("stamp.sh", STAMP, 0o755)
        dag_path = self.write_dag("defer.dag", """
            TASK L -c 1 /bin/sh {tmp}/stamp.sh {tmp} L 1.0
            TASK R -c 1 /bin/sh {tmp}/stamp.sh {tmp} R 0.2
            TASK H -p 10 -c 2 /bin/sh {tmp}/stamp.sh {tmp} H 0.1
            TASK M -p 1 -c 1 /bin/sh {tmp}/stamp.sh {tmp} M 0.1
            EDGE R H
            EDGE R M
            """.format(tmp=self.tmp))
        res = self.run_pmc(["--host-cpus", "2", dag_path])
        problems = self.ok_run_problems(res, dag_path)
        got, more = self.stamped("LRHM")
        problems += more
        t = {n: (s, e) for n, s, e in got}
        if len(t) == 4:
            (ls, le), (hs, he), (ms, me) = t["L"], t["H"], t["M"]
            if not ms < hs:
                problems.append("M (-p 1) started %.3fs after H (-p 10): H was not deferred"
                                % (ms - hs))
            if not ms < le:
                problems.append("M started %.3fs after L ended: it waited for H's CPUs instead "
                                "of running on the free CPU" % (ms - le))
            if not hs > le:
                problems.append("H (-c 2) started %.3fs before L ended on a 2-CPU host"
                                % (le - hs))
        self.check(problems, res)

    # ---------------------------------------------------------- staged tasks

    def staged_run(self, name, tasks, extra=()):
        """Write DAG `name` of tasks [(NAME, OPTIONS, SECONDS)] that stamp
        their start and end around a sleep (SECONDS None: OPTIONS is the
        rest of the line) and run it with --host-cpus 2 and two launchers
        (and extra options): (dag_path, Result).  Staging needs as many
        usable CPUs as --host-cpus."""
        self.need_two_cpus()
        self.write("stamp.sh", STAMP, 0o755)
        lines = []
        for n, opts, secs in tasks:
            cmd = opts if secs is None else " ".join(
                w for w in (opts, "/bin/sh %s/stamp.sh %s %s %s" % (self.tmp, self.tmp, n, secs))
                if w)
            lines.append("TASK %s %s\n" % (n, cmd))
        dag_path = self.write(name, "".join(lines))
        return dag_path, self.run_pmc(["--host-cpus", "2", "--launch-threads", "2", *extra,
                                       dag_path])

    def staged_problems(self, res, names, shorts):
        """The stamps of names: missing ones, more than 2 CPUs busy, a short
        task that ended after L, no staged start counted; and the stamps."""
        got, problems = self.stamped(names)
        t = {n: (s, e) for n, s, e in got}
        peak, who = peak_usage([(n, s, e, 1) for n, s, e in got])
        if peak > 2:
            problems.append("%d tasks of 1 CPU ran at once on 2 CPUs: %s"
                            % (peak, ", ".join(n for n, _ in who)))
        late = [n for n in shorts if n in t and "L" in t and t[n][1] > t["L"][1]]
        if late:
            problems.append("%s ended after L: waited behind it" % ", ".join(late))
        m = re.search(r"(\d+) staged starts", res.stderr)
        if not m or int(m.group(1)) == 0:
            problems.append("no staged start counted in the Engine CPU line")
        return problems, t

    def test_staged_tasks_wait_behind_no_long_task(self):
        shorts = ["s%d" % i for i in range(6)]
        dag_path, res = self.staged_run("staged.dag", [("L", "-p 10", 3)] +
                                        [(n, "", 0.15) for n in shorts])
        problems = self.ok_run_problems(res, dag_path)
        problems += self.staged_problems(res, ["L"] + shorts, shorts)[0]
        self.check(problems, res)

    def test_launchers_to_spare_wait_for_their_own_tasks(self):
        """More launchers than CPUs (3 on --host-cpus 2): all but one wait
        for the task each started in waitid, reap it and start the next
        staged one (launcher_set_own_waits()), over 8 staged tasks per CPU
        whose exits wake the agent only at a low mark or when they cannot
        wait (launcher_set_quiet_exits()).  3,000 /bin/true all succeed,
        most are waited for so (the Engine CPU line's count), the staged
        tasks still wait behind no long task, a DAG with children
        (examples/montage-small.dag) runs in order, and no exit is seen
        late: a first version could leave a submission in the ring while
        the launcher that took its wake-up waited for its own task, and a
        task then seemed to run 1-5 s (about once in 10,000 tasks, so this
        check catches it only now and then).  Bound one per CPU, the
        launchers start tasks that may still use every CPU."""
        self.need_two_cpus()
        dag_path = self.write("spare.dag", "".join("TASK t%04d /bin/true\n" % i
                                                   for i in range(3000)))
        res = self.run_pmc(["--host-cpus", "2", "--launch-threads", "3", dag_path], timeout=300)
        problems = self.ok_run_problems(res, dag_path)
        m = re.search(r"(\d+) waited for by their launcher", res.stderr)
        if not m or int(m.group(1)) < 1500:
            problems.append("%s of 3000 waited for by their launcher, expected most"
                            % (m.group(1) if m else "no count of"))
        slow = sorted((r.duration, r.name) for r in res.tasks if r.duration > 1.0)
        if slow:
            problems.append("%d tasks of /bin/true took over 1 s, the longest %s %.2f s: an "
                            "exit seen late" % (len(slow), slow[-1][1], slow[-1][0]))
        shorts = ["s%d" % i for i in range(6)]
        dag_path, res2 = self.staged_run("spare_staged.dag", [("L", "-p 10", 3)] +
                                         [(n, "", 0.15) for n in shorts],
                                         extra=["--launch-threads", "3"])
        problems += self.ok_run_problems(res2, dag_path)
        problems += self.staged_problems(res2, ["L"] + shorts, shorts)[0]
        src = os.path.join(pmcrun.CONFIG.source_dir, "examples", "montage-small.dag")
        dag_path = self.write("montage.dag", pmcrun.read_text(src))
        res3 = self.run_pmc(["--host-cpus", "2", "--launch-threads", "3", dag_path], timeout=300)
        problems += ["montage-small: " + p for p in self.ok_run_problems(res3, dag_path)]
        # the launchers are bound one per CPU (launcher_create()'s pin), their
        # tasks are not: each of 6 may use every CPU this process may
        self.write("affinity.sh", AFFINITY, 0o755)
        dag_path = self.write("spare_cpus.dag", "".join(
            "TASK a%d /bin/sh %s/affinity.sh %s a%d\n" % (i, self.tmp, self.tmp, i)
            for i in range(6)))
        res4 = self.run_pmc(["--host-cpus", "2", "--launch-threads", "3", dag_path], timeout=60)
        problems += ["affinity: " + p for p in self.ok_run_problems(res4, dag_path)]
        for i in range(6):
            cpus = allowed_cpus(pmcrun.read_text(self.path("a%d.status" % i)))
            if cpus is None or not cpus >= self.need_two_cpus():
                problems.append("task a%d may use CPUs %s, expected at least %s: a launcher's "
                                "binding reached it" % (i, sorted(cpus or []),
                                                        sorted(self.need_two_cpus())))
        self.check(problems, res)

    def test_staged_task_that_cannot_execute(self):
        shorts = ["s0", "s1", "s2", "s3"]
        dag_path, res = self.staged_run("staged_x.dag", [
            ("L", "-p 10", 3), ("s0", "-p 9", 0.3),
            ("X", "-p 8 %s/no-such-program" % self.tmp, None)] +
            [(n, "-p 7", 0.1) for n in shorts[1:]])
        problems, t = self.staged_problems(res, ["L"] + shorts, shorts)
        if res.timed_out or res.returncode != 1:
            problems.append("exit status %s, expected 1 (X failed)" % res.returncode)
        statuses = {}
        for r in res.tasks:
            statuses.setdefault(r.name, []).append(r.status)
        for name in ["L"] + shorts:
            if statuses.get(name) != [0]:
                problems.append("%s: statuses %s, expected [0]" % (name, statuses.get(name)))
        if len(statuses.get("X", [])) != 1 or statuses["X"][0] == 0:
            problems.append("X: statuses %s, expected one failure" % statuses.get("X"))
        after = [n for n in ("s2", "s3") if "s1" in t and n in t and t[n][0] < t["s1"][0]]
        if after:
            problems.append("%s started before s1 (staged first, with X): the CPU X gave back "
                            "did not go to the oldest staged task" % ", ".join(after))
        self.check(problems, res)

    def test_staging_keeps_priority_order(self):
        bs = ["b%d" % i for i in range(4)]
        dag_path, res = self.staged_run("prio_stage.dag", [
            ("r1", "-p 20", 0.3), ("r2", "-p 20", 1.5), ("A", "-p 10 -m 100", 0.2)] +
            [(n, "-p 1", 0.2) for n in bs], extra=["--host-memory", "1000"])
        problems = self.ok_run_problems(res, dag_path)
        got, more = self.stamped(["r1", "r2", "A"] + bs)
        problems += more
        t = {n: (s, e) for n, s, e in got}
        early = [n for n in bs if n in t and "A" in t and t[n][0] < t["A"][0]]
        if early:
            problems.append("%s (-p 1) started before A (-p 10, -m 100, which fits the first "
                            "CPU that frees): staged past it" % ", ".join(early))
        self.check(problems, res)

    def test_staged_task_time_limit_counts_from_its_start(self):
        dag_path, res = self.staged_run("limit_stage.dag", [
            ("l1", "-p 10", 1.2), ("l2", "-p 10", 1.2), ("T", "-p 1 --time-limit 1", 0.5)])
        problems = self.staged_problems(res, ["l1", "l2", "T"], [])[0]
        problems += self.ok_run_problems(res, dag_path, rescue=False)  # pmcrun: no --time-limit
        statuses = sorted((r.name, r.status) for r in res.tasks)
        if statuses != [("T", 0), ("l1", 0), ("l2", 0)]:
            problems.append("records (name, status): %s, expected each once with 0" % statuses)
        if "exceeded its time limit" in res.stderr:
            problems.append("T (0.5 s, staged for ~1.2 s, limit 1 s) was ended by its limit: "
                            "it counted from its staging, not its start")
        self.check(problems, res)

    def test_staged_tasks_cancelled_at_an_abort(self):
        self.need_two_cpus()
        tasks = ["t%02d" % i for i in range(20)]
        dag_path = self.write("abort.dag", "".join(
            "TASK %s /bin/sh -c 'echo run >> %s/%s.ran; sleep 0.4'\n" % (n, self.tmp, n)
            for n in tasks))
        dag = pmcrun.parse_dag(dag_path)
        rescue = dag_path + ".rescue"
        args = ["--host-cpus", "2", "--launch-threads", "2", dag_path]
        proc = self.start_pmc(args)
        deadline = time.monotonic() + 60
        while (time.monotonic() < deadline and proc.poll() is None and
               len(pmcrun.parse_rescue(rescue, complete_only=True).done_set) < 4):
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGTERM)
        first = pmcrun.finish(proc, timeout=30)
        problems = []
        if first.timed_out or first.returncode == 0 or first.elapsed > 20:
            problems.append("the aborted run: exit %s after %.1f s%s, expected a failure "
                            "within 20 s" % (first.returncode, first.elapsed,
                                             " (timed out)" if first.timed_out else ""))
        m = re.search(r"(\d+) staged starts", first.stderr)
        if not m or int(m.group(1)) == 0:
            problems.append("the aborted run started nothing staged")
        done = pmcrun.parse_rescue(rescue, complete_only=True).done_set

        def runs(name):
            return len((pmcrun.read_text(self.path(name + ".ran")) or "").split())

        ran = {n for n in tasks if runs(n)}
        # the 2 running tasks are killed (records with a signal status); a
        # staged task started by a reaper instead of cancelled would be a
        # third and a fourth (one may be popped as the abort begins)
        killed = [r.name for r in first.tasks if r.status != 0]
        if len(killed) > 3:
            problems.append("%d records of killed tasks (%s): staged tasks were started at the "
                            "abort, not cancelled" % (len(killed), ", ".join(killed)))
        if not done <= ran:
            problems.append("DONE in the rescue file but never started: %s"
                            % sorted(done - ran))
        if len(ran) == len(tasks):
            problems.append("every task had started before the abort: nothing was cancelled")
        res = self.run_pmc(args)
        problems += pmcrun.success_problems(res, dag, skipped=done, since=res.started)
        for n in tasks:  # once in all, or twice when the abort killed it
            want = 1 if n in done or n not in ran else 2
            if runs(n) != want:
                problems.append("%s ran %d times, expected %d" % (n, runs(n), want))
        self.check(problems, res)

    def test_no_staging_beyond_the_cpus(self):
        # twice the CPUs this process may use, three tasks per CPU (so the
        # node is full and tasks wait): nothing is staged
        host = 2 * len(os.sched_getaffinity(0))
        dag_path = self.write("over.dag", "".join("TASK t%d /bin/true\n" % i
                                                  for i in range(max(60, 3 * host))))
        res = self.run_pmc(["--host-cpus", str(host), "--launch-threads", "2", dag_path])
        problems = self.ok_run_problems(res, dag_path)
        m = re.search(r"(\d+) staged starts", res.stderr)
        if not m or m.group(1) != "0":
            problems.append("staged starts: %s, expected 0 with --host-cpus %d"
                            % (m.group(1) if m else "no Engine CPU line", host))
        self.check(problems, res)

    # ------------------------------------------------------------- spreading

    def test_spread_ranks4(self):
        dag_path = self.write("spread.dag", "".join(
            "TASK s%02d /bin/sleep 0.2\n" % i for i in range(40)))
        res = self.run_pmc(["--host-cpus", "8", dag_path], ranks=4, ranks_are_hosts=True)
        problems = self.ok_run_problems(res, dag_path)
        problems += pmcrun.spread_problems(res.tasks, 4)
        host = socket.gethostname()
        for r in res.tasks:
            want = "%s:%s" % (host, r.fields.get("slot"))
            if r.fields.get("hostname") != want:
                problems.append("%s: hostname=%r, expected %r (each rank is a host)"
                                % (r.name, r.fields.get("hostname"), want))
        self.check(problems, res)

    # ----------------------------------------------------------- environment

    def env_of(self, name):
        text = pmcrun.read_text(self.path(name + ".env"))
        return None if text is None else text.strip()

    def test_environment_ranks1(self):
        self.write("env.sh", ENV, 0o755)
        dag_path = self.write_dag("env.dag", """
            TASK envtask -m 100 -c 2 /bin/sh {tmp}/env.sh {tmp} envtask
            TASK plain /bin/sh {tmp}/env.sh {tmp} plain
            """.format(tmp=self.tmp))
        res = self.run_pmc(["--host-cpus", "2", dag_path])
        problems = self.ok_run_problems(res, dag_path)
        want = {"envtask": "envtask|100|2|0|0", "plain": "plain|0|1|0|0"}
        for name, line in want.items():
            got = self.env_of(name)
            if got != line:
                problems.append("%s saw PMC_TASK|PMC_MEMORY|PMC_CPUS|PMC_RANK|PMC_HOST_RANK "
                                "= %r, expected %r" % (name, got, line))
        self.check(problems, res)

    def test_environment_ranks2(self):
        self.write("env.sh", ENV, 0o755)
        names = ["e%d" % i for i in range(8)]
        dag_path = self.write("env2.dag", "".join(
            "TASK %s /bin/sh %s/env.sh %s %s 0.3\n" % (n, self.tmp, self.tmp, n) for n in names))
        res = self.run_pmc(["--host-cpus", "4", dag_path], ranks=2, ranks_are_hosts=True)
        problems = self.ok_run_problems(res, dag_path)
        for r in res.tasks:
            slot = r.fields.get("slot")
            want = "%s|0|1|%s|0" % (r.name, slot)
            got = self.env_of(r.name)
            if got != want:
                problems.append("%s (slot=%s) saw %r, expected %r" % (r.name, slot, got, want))
        problems += pmcrun.spread_problems(res.tasks, 2)
        self.check(problems, res)

    # -------------------------------------------------------------- affinity

    def need_two_cpus(self):
        mine = os.sched_getaffinity(0)
        if len(mine) < 2:
            self.skipTest("this process may use only CPUs %s; affinity needs 2" % sorted(mine))
        return mine

    def test_set_affinity(self):
        self.need_two_cpus()
        self.write("affinity.sh", AFFINITY, 0o755)
        dag_path = self.write_dag("aff.dag", """
            TASK two -c 2 /bin/sh {tmp}/affinity.sh {tmp} two
            TASK one -c 1 /bin/sh {tmp}/affinity.sh {tmp} one
            """.format(tmp=self.tmp))
        res = self.run_pmc(["--set-affinity", dag_path])
        problems = self.ok_run_problems(res, dag_path)
        for name, count in (("two", 2), ("one", 1)):
            cpus = allowed_cpus(pmcrun.read_text(self.path(name + ".status")))
            env = (pmcrun.read_text(self.path(name + ".affinity")) or "").strip()
            if cpus is None:
                problems.append("%s: no Cpus_allowed_list recorded" % name)
                continue
            if len(cpus) != count:
                problems.append("%s (-c %d): Cpus_allowed_list %s has %d CPUs, expected %d"
                                % (name, count, sorted(cpus), len(cpus), count))
            if expand_cpus(env) != cpus:
                problems.append("%s: PMC_AFFINITY=%r, expected the CPUs %s"
                                % (name, env, sorted(cpus)))
        self.check(problems, res)

    def test_set_affinity_refuses_host_cpus(self):
        dag_path = self.write("aff.dag", "TASK t -c 1 /bin/touch %s/ran.t\n" % self.tmp)
        cases = (("--host-cpus 2", ["--set-affinity", "--host-cpus", "2"], None, 1),
                 ("PMC_HOST_CPUS=2", ["--set-affinity"], {"PMC_HOST_CPUS": "2"}, 1),
                 ("--host-cpus 0 (detect)", ["--set-affinity", "--host-cpus", "0"], None, 0))
        for case, opts, env, want_rc in cases:
            with self.subTest(case=case):
                for leftover in ("ran.t", "aff.dag.rescue"):
                    if os.path.exists(self.path(leftover)):
                        os.unlink(self.path(leftover))
                res = self.run_pmc(opts + [dag_path], env=env, timeout=60)
                problems = []
                if res.timed_out or res.returncode != want_rc:
                    problems.append("exit status %s, expected %d" % (res.returncode, want_rc))
                ran = os.path.exists(self.path("ran.t"))
                if want_rc:
                    msg = "--set-affinity cannot be used with --host-cpus"
                    if msg not in res.stderr:
                        problems.append("stderr lacks %r" % msg)
                    if ran or res.tasks:
                        problems.append("the task ran although the options were refused")
                elif not ran or [r.status for r in res.tasks] != [0]:
                    problems.append("the task did not run successfully with --host-cpus 0")
                self.check(problems, res, case)

    def test_inherited_affinity(self):
        mine = self.need_two_cpus()
        first = min(mine)
        self.write("affinity.sh", AFFINITY, 0o755)
        for keep in (False, True):
            case = "--keep-affinity" if keep else "default (clear affinity)"
            with self.subTest(case=case):
                name = "keep" if keep else "clear"
                dag_path = self.write("%s.dag" % name, "TASK %s /bin/sh %s/affinity.sh %s %s\n"
                                      % (name, self.tmp, self.tmp, name))
                args = (["--keep-affinity"] if keep else []) + ["--host-cpus", "2", dag_path]
                res = pmcrun.run(args, cwd=self.tmp, timeout=60,
                                 preexec=lambda: os.sched_setaffinity(0, {first}))
                problems = self.ok_run_problems(res, dag_path)
                cpus = allowed_cpus(pmcrun.read_text(self.path(name + ".status")))
                if cpus is None:
                    problems.append("no Cpus_allowed_list recorded")
                elif keep and cpus != {first}:
                    problems.append("with --keep-affinity the task may use CPUs %s, expected "
                                    "only the inherited %s" % (sorted(cpus), [first]))
                elif not keep and not cpus >= mine:
                    problems.append("the inherited affinity {%d} was not cleared: the task may "
                                    "use CPUs %s, expected at least %s"
                                    % (first, sorted(cpus), sorted(mine)))
                self.check(problems, res, case)

    # ---------------------------------------------------------- strict limits

    def test_strict_limits(self):
        self.write("alloc.sh", ALLOC, 0o755)
        dag_path = self.write_dag("limits.dag", """
            TASK small -m 64 /bin/sh {tmp}/alloc.sh
            TASK large -m 1024 /bin/sh {tmp}/alloc.sh
            TASK ulim -m 5000 /bin/sh -c 'ulimit -v > {tmp}/ulimit.out'
            """.format(tmp=self.tmp))
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        inherited = "unlimited" if soft == resource.RLIM_INFINITY else str(soft // 1024)
        for strict in (True, False):
            case = "--strict-limits" if strict else "without --strict-limits"
            with self.subTest(case=case):
                try:
                    os.unlink(self.path("ulimit.out"))
                except OSError:
                    pass
                args = (["--strict-limits"] if strict else []) + [
                    "-s", "--host-memory", "8000", "--host-cpus", "4", dag_path]
                res = self.run_pmc(args)
                problems = []
                want_rc = 1 if strict else 0
                if res.timed_out or res.returncode != want_rc:
                    problems.append("exit status %s, expected %d" % (res.returncode, want_rc))
                status = {r.name: r.status for r in res.tasks}
                if set(status) != {"small", "large", "ulim"}:
                    problems.append("records for %s" % sorted(status))
                if strict and status.get("small") == 0:
                    problems.append("the -m 64 task allocated 200 MB under --strict-limits")
                if not strict and status.get("small") != 0:
                    problems.append("the -m 64 task failed (status %s) without --strict-limits"
                                    % status.get("small"))
                if status.get("large") != 0:
                    problems.append("the -m 1024 task failed (status %s)" % status.get("large"))
                if "allocated 200000000" not in res.stdout:
                    problems.append("no 'allocated 200000000' line on stdout")
                got = (pmcrun.read_text(self.path("ulimit.out")) or "").strip()
                want = "5120000" if strict else inherited
                if got != want:
                    problems.append("the -m 5000 task's ulimit -v printed %r, expected %r"
                                    % (got, want))
                self.check(problems, res, case)

    # ------------------------------------------------------------ master-only

    def test_master_only(self):
        dag_path = self.write("mo.dag", "".join(
            "TASK m%d /bin/sleep 0.1\n" % i for i in range(6)))
        res = self.run_pmc(["--master-only", "--host-cpus", "4", dag_path], ranks=2)
        problems = self.ok_run_problems(res, dag_path)
        on_master = [r.name for r in res.tasks if r.fields.get("slot") == "0"]
        if on_master:
            problems.append("--master-only, yet rank 0 ran %s" % on_master)
        elsewhere = [r.name for r in res.tasks if r.fields.get("slot") != "1"]
        if elsewhere:
            problems.append("tasks %s did not run on rank 1, the host's agent" % elsewhere)
        self.check(problems, res)


if __name__ == "__main__":
    pmcrun.main()
