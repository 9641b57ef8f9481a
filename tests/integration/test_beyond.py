#!/usr/bin/env python3
"""test_beyond.py - what PMC never had (issue "Beyond PMC"): GPUs, per-task
time limits, the batch job's end, threaded tasks.

  * gpus_exclusive: --host-gpus 4, 12 tasks of -g 1 / -g 2 that print their
    CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, ZE_AFFINITY_MASK, PMC_GPUS
    and their start/end times: every task sees its -g count of distinct ids
    in 0..3, the four variables agree, no two tasks that ran at the same
    time share an id (from the tasks' own timestamps), the GPUs in use at
    once reach 4, each record says gpus=N, the summary gpus=4, and the
    resource log has a sixth column of free GPUs.
  * gpus_follow_the_inherited_variable: with ROCR_VISIBLE_DEVICES=2,3 (and
    HIP_VISIBLE_DEVICES=0), CUDA_VISIBLE_DEVICES=5,7 (and ROCR=0),
    HIP_VISIBLE_DEVICES=4,6 or ZE_AFFINITY_MASK=0,1 inherited, a -g 1 task
    sees one of the ids in that variable and PMC_GPUS, and none of the
    other visibility variables but an inherited ROCR_VISIBLE_DEVICES when
    the ids are CUDA's (they count within it); a task without -g sees what
    was inherited.
  * gpus_too_many: a -g 5 task on --host-gpus 4 aborts at start with PMC's
    "FATAL ERROR: No host is capable of running task", runs nothing.
  * gpus_per_host: mpiexec -n 2 --ranks-are-hosts --host-gpus 1 (two
    "hosts" of one GPU each): two -g 1 tasks of 1 s overlap in time, each on
    its own rank, each seeing id 0.
  * time_limit_alone: one `sleep 20` task with --time-limit 1 and nothing
    else in the run ends in < 8 s with status 31744 (with a pool the agent
    arms the limit as it hands the launch over: nothing else wakes it);
  * time_limit_of_a_failed_launch_ends_with_it: --host-cpus 1, a pool: a
    task with --time-limit 1 that cannot execute, then one of 2.5 s with no
    limit in the same slot: the second succeeds (the limit, armed as the
    first was handed to the pool, went with it).
  * time_limit: a `sleep 60` task with --time-limit 1 ends in < 3 s with
    "Task NAME exceeded its time limit of 1 s", record status 31744 (exit
    code 124); with -t 2 it is tried twice; a task that ignores SIGTERM is
    killed after --kill-grace 1; the run's --task-time-limit applies to a
    task without its own; nothing of the session is left running.
  * time_limit_grace_reaches_what_a_wrapper_runs: a wrapper shell that
    dies of SIGTERM at once leaves its program the rest of --kill-grace
    (its line is written, its stdout is in the block); a program that
    ignores SIGTERM is killed at the grace's end; with and without a pool.
  * abort_grace_reaches_what_a_wrapper_runs: the same at a SIGTERM to
    pmc-hybrid; the run ends when the group is empty.
  * batch_end: SLURM_JOB_END_TIME 20 s ahead with --drain-margin 15 on a DAG
    of `sleep 30` tasks: the run stops within ~5 s+grace, says why, summary
    stat="failed", the rescue log parses and holds no task of the DAG, and
    a rerun without the variable completes the rest (on shorter tasks).
  * batch_end_long_past: a stop time before the machine booted stops the
    run at once.
  * thread_env: a -c 3 task sees OMP_NUM_THREADS=3 (and MKL/OPENBLAS); a
    value the user set is kept; --no-thread-env sets none; with
    --set-affinity OMP_PLACES lists exactly the task's CPUs (PMC_AFFINITY)
    and OMP_PROC_BIND=close.
  * hwloc_env: a task sees HWLOC_COMPONENTS as pmc-hybrid found it: unset
    when it was (pmc-hybrid sets it only while MPI starts, to keep hwloc's
    GPU components out of MPICH's topology: unit test test_transport), the
    user's value when set, an empty one too.
"""

import os
import re
import sys
import time
from unittest import mock

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

GPU_VARS = ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK", "PMC_GPUS")


def gpu_task(name, gpus, secs, out):
    """A task that records its GPU variables and its own start/end times."""
    show = " ".join("%s=$%s" % (v, v) for v in GPU_VARS)
    return ('TASK %s -g %d /bin/sh -c "s=$(date +%%s.%%N); sleep %s; '
            'echo %s $s $(date +%%s.%%N) rank=$PMC_RANK %s >> %s"'
            % (name, gpus, secs, name, show, out))


def parse_gpu_lines(path):
    rows = []
    with open(path) as f:
        for line in f:
            w = line.split()
            kv = dict(x.split("=", 1) for x in w[3:])
            rows.append({"name": w[0], "start": float(w[1]), "end": float(w[2]), **kv})
    return rows


def file_lines(path):
    """The lines of path ([] when it does not exist)."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().splitlines()


def file_words(path):
    """The white-space separated words of path ([] when it does not exist)."""
    return " ".join(file_lines(path)).split()


def timed_out_problems(res, name, limit):
    """What is wrong with task name's end by its time limit of `limit`
    seconds (as written in the message): the log's message, and every
    record's status 124 << 8."""
    problems = []
    msg = "Task %s exceeded its time limit of %s s" % (name, limit)
    if msg not in res.stderr:
        problems.append("stderr lacks %r" % msg)
    for r in res.records_of(name):
        if r.status != 124 << 8:
            problems.append("%s: record status %s, expected %d" % (name, r.status, 124 << 8))
    return problems


class Beyond(pmcrun.TestCase):
    # ----------------------------------------------------------------- GPUs

    def test_gpus_exclusive(self):
        out = self.path("gpus.txt")
        tasks = [gpu_task("g%02d" % i, 1 + i % 2, 0.4, out) for i in range(12)]
        dag = self.write_dag("g.dag", "\n".join(tasks))
        res = self.run_pmc(["--host-gpus", "4", "--host-cpus", "8", dag])
        problems = []
        if res.returncode != 0:
            problems.append("exit status %s" % res.returncode)
        rows = parse_gpu_lines(out) if os.path.exists(out) else []
        if len(rows) != 12:
            problems.append("%d tasks reported, expected 12" % len(rows))
        for r in rows:
            want = 1 + int(r["name"][1:]) % 2
            ids = r["CUDA_VISIBLE_DEVICES"].split(",") if r["CUDA_VISIBLE_DEVICES"] else []
            if len(ids) != want or len(set(ids)) != want or any(i not in "0123" for i in ids):
                problems.append("%s: CUDA_VISIBLE_DEVICES=%r for -g %d"
                                % (r["name"], r["CUDA_VISIBLE_DEVICES"], want))
            if any(r[v] != r["CUDA_VISIBLE_DEVICES"] for v in GPU_VARS):
                problems.append("%s: the GPU variables differ: %s"
                                % (r["name"], {v: r[v] for v in GPU_VARS}))
            r["ids"] = set(ids)
        peak = 0
        for a in rows:
            at_once = [b for b in rows if b["start"] <= a["start"] < b["end"]]
            used = [i for b in at_once for i in b["ids"]]
            if len(used) != len(set(used)):
                problems.append("at %.3f tasks %s share GPU ids"
                                % (a["start"], [b["name"] for b in at_once]))
            peak = max(peak, len(used))
        if peak != 4:
            problems.append("at most %d GPUs in use at once, expected 4" % peak)
        for rec in res.tasks:
            want = str(1 + int(rec.name[1:]) % 2)
            if rec.fields.get("gpus") != want:
                problems.append("%s: record gpus=%r, expected %s"
                                % (rec.name, rec.fields.get("gpus"), want))
        if not res.summaries or res.summaries[0].get("gpus") != "4":
            problems.append("the summary does not count 4 GPUs: %s" % res.summaries)
        with open(dag + ".resource") as f:
            resource = [line.rstrip("\n").split(",") for line in f]
        if not resource or any(len(r) != 6 for r in resource) or resource[0][5] != "4":
            problems.append("resource log lines lack the free-GPU column: %s" % resource[:3])
        self.check(problems, res)

    def test_gpus_follow_the_inherited_variable(self):
        """A -g task's ids go in the visibility variable the host's ids came
        from, and the other inherited ones are left out: ROCm's HIP counts
        CUDA_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES within the devices
        ROCR_VISIBLE_DEVICES leaves, so a ROCR id put there too named another
        GPU or none.  A task without -g keeps what was inherited."""
        allvars = ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                   "ZE_AFFINITY_MASK")
        cases = (("ROCR_VISIBLE_DEVICES", {"ROCR_VISIBLE_DEVICES": "2,3",
                                           "HIP_VISIBLE_DEVICES": "0"}, "23"),
                 ("CUDA_VISIBLE_DEVICES", {"CUDA_VISIBLE_DEVICES": "5,7",
                                           "ROCR_VISIBLE_DEVICES": "0"}, "57"),
                 ("HIP_VISIBLE_DEVICES", {"HIP_VISIBLE_DEVICES": "4,6"}, "46"),
                 ("ZE_AFFINITY_MASK", {"ZE_AFFINITY_MASK": "0,1"}, "01"))
        show = " ".join("%s=${%s-unset}" % (v, v) for v in allvars + ("PMC_GPUS",))
        for i, (var, inherited, ids) in enumerate(cases):
            with self.subTest(var=var):
                out = self.path("vars%d.txt" % i)
                dag = self.write_dag("v%d.dag" % i, "\n".join(
                    'TASK %s %s /bin/sh -c "echo %s %s >> %s"' % (n, g, n, show, out)
                    for n, g in (("gpu", "-g 1"), ("cpu", ""))))
                env = {v: inherited.get(v) for v in allvars}
                res = self.run_pmc(["--host-cpus", "2", dag], env=env)
                rows = {}
                if os.path.exists(out):
                    with open(out) as f:
                        for line in f:
                            w = line.split()
                            rows[w[0]] = dict(x.split("=", 1) for x in w[1:])
                problems = [] if res.returncode == 0 else ["exit %s" % res.returncode]
                gpu, cpu = rows.get("gpu", {}), rows.get("cpu", {})
                want = {v: "unset" for v in allvars}
                got = gpu.get(var, "")
                if len(got) != 1 or got not in ids or gpu.get("PMC_GPUS") != got:
                    problems.append("-g 1 task: %s=%r, PMC_GPUS=%r" % (var, got,
                                                                      gpu.get("PMC_GPUS")))
                want[var] = got
                if var in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"):
                    want["ROCR_VISIBLE_DEVICES"] = inherited.get("ROCR_VISIBLE_DEVICES", "unset")
                if {v: gpu.get(v) for v in allvars} != want:
                    problems.append("-g 1 task sees %s, expected %s"
                                    % ({v: gpu.get(v) for v in allvars}, want))
                kept = {v: inherited.get(v, "unset") for v in allvars}
                if {v: cpu.get(v) for v in allvars} != kept:
                    problems.append("task without -g sees %s, expected the inherited %s"
                                    % ({v: cpu.get(v) for v in allvars}, kept))
                self.check(problems, res, var)

    def test_gpus_too_many(self):
        dag = self.write_dag("g.dag", """
            TASK big -g 5 /bin/sh -c "touch %s/ran"
            TASK small /bin/sh -c "touch %s/ran"
        """ % (self.tmp, self.tmp))
        res = self.run_pmc(["--host-gpus", "4", dag])
        problems = []
        if res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        if "FATAL ERROR: No host is capable of running task big" not in res.stderr:
            problems.append("stderr lacks PMC's 'No host is capable' message for big")
        if os.path.exists(self.path("ran")):
            problems.append("a task ran")
        self.check(problems, res)

    def test_gpus_per_host(self):
        out = self.path("gpus.txt")
        dag = self.write_dag("g.dag", "\n".join(gpu_task("h%d" % i, 1, 1.0, out)
                                                for i in range(2)))
        res = self.run_pmc(["--ranks-are-hosts", "--host-gpus", "1", "--host-cpus", "2", dag],
                           ranks=2)
        problems = []
        if res.returncode != 0:
            problems.append("exit status %s" % res.returncode)
        rows = parse_gpu_lines(out) if os.path.exists(out) else []
        if len(rows) != 2:
            problems.append("%d tasks reported" % len(rows))
        else:
            a, b = rows
            if {a["rank"], b["rank"]} != {"0", "1"}:
                problems.append("ranks %s, expected one task per rank" % [a["rank"], b["rank"]])
            if a["CUDA_VISIBLE_DEVICES"] != "0" or b["CUDA_VISIBLE_DEVICES"] != "0":
                problems.append("ids %r %r, expected 0 on each host"
                                % (a["CUDA_VISIBLE_DEVICES"], b["CUDA_VISIBLE_DEVICES"]))
            if not (a["start"] < b["end"] and b["start"] < a["end"]):
                problems.append("the two tasks did not overlap: GPUs are not per host")
        self.check(problems, res)

    # ---------------------------------------------------------- time limits

    def test_time_limit(self):
        dag = self.write_dag("t.dag", """
            TASK slow --time-limit 1 /bin/sleep 60
            TASK twice -t 2 --time-limit 0.5 /bin/sleep 60
            TASK stubborn --time-limit 0.5 /bin/sh -c "trap '' TERM; sleep 60; sleep 60"
            TASK dflt /bin/sleep 60
            TASK quick --time-limit 5 /bin/true
        """)
        t0 = time.monotonic()
        proc = self.start_pmc(["--host-cpus", "5", "--kill-grace", "1", "--task-time-limit",
                               "1.5", dag])
        try:
            proc.wait(timeout=60)
        except Exception:
            pass
        wall = time.monotonic() - t0
        # before any clean-up kills them; a process the engine killed may
        # still be dying as the engine exits (SIGKILL is delivered and acted
        # on asynchronously: stubborn's sleep, a member of the group whose
        # leader was reaped), so only what outlives a short wait was left
        # running; a task left behind sleeps for a minute
        left = [] if pmcrun.wait_session_gone(proc.pid, timeout=3) else pmcrun.session_pids(proc.pid)
        res = pmcrun.finish(proc)
        problems = []
        if left:
            problems.append("processes left running after the run: %s" % left)
        if res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        if wall > 6:
            problems.append("the run took %.1f s: limits of 0.5-1.5 s + 1 s grace" % wall)
        for name, limit in (("slow", "1"), ("twice", "0.5"), ("stubborn", "0.5"),
                            ("dflt", "1.5")):
            problems += timed_out_problems(res, name, limit)
        if len(res.records_of("twice")) != 2:
            problems.append("twice ran %d times, expected 2" % len(res.records_of("twice")))
        stub = res.records_of("stubborn")
        if stub and not (1.3 <= stub[0].duration <= 3.0):
            problems.append("stubborn lasted %.2f s: TERM at 0.5 s, KILL after 1 s grace"
                            % stub[0].duration)
        quick = res.records_of("quick")
        if not quick or quick[0].status != 0:
            problems.append("quick (under its limit) did not succeed")
        self.check(problems, res)

    def wrapper_tasks(self):
        """A DAG of two tasks whose first process, a shell waiting for
        its program, dies of SIGTERM at once: `wrapped`, whose program
        takes 0.4 s after SIGTERM to write a line to a file and to its
        stdout; and `stuck`, whose program ignores SIGTERM (--time-limit
        0.5 s each).  The DAG's path and the file's."""
        marker = self.path("graceful.txt")
        # the trap kills its own sleep, which may have lost the SIGTERM
        # (one that lands between the sleep's fork and its exec)
        self.write("prog.sh", 'trap \'kill -9 $! 2>/dev/null; sleep 0.4; echo graceful >> "$1"; '
                              'echo bye-from-prog; '
                              'exit 0\' TERM\necho started >> "$1"\nsleep 30 &\nwait\n')
        self.write("stub.sh", "trap '' TERM\nsleep 30\n")
        dag = self.write_dag("wrap.dag", """
            TASK wrapped --time-limit 0.5 /bin/sh -c "/bin/sh %s %s & wait"
            TASK stuck --time-limit 0.5 /bin/sh -c "/bin/sh %s & wait"
            """ % (self.path("prog.sh"), marker, self.path("stub.sh")))
        return dag, marker

    def test_time_limit_grace_reaches_what_a_wrapper_runs(self):
        """A task's grace is its group's, not its first process's: when a
        wrapper shell dies of the SIGTERM at once, its program still gets
        --kill-grace (8 s) to end (before: SIGKILL at once, no line);
        the task ends when its group is empty (its program's stdout in its
        block, before its record), or at the grace's end with SIGKILL
        (stuck); nothing is left running.  On the agent's path and the
        pool's.  `wrapped` ends once pmc-hybrid, a child subreaper, has
        reaped its program's zombie (before, PID 1 did: up to ~2 s on the
        CI VM, and once 8 s late under load), well before the grace ends."""
        dag, marker = self.wrapper_tasks()
        for threads in ("0", "2"):
            if os.path.exists(marker):
                os.unlink(marker)
            proc = self.start_pmc(["--host-cpus", "2", "--launch-threads", threads,
                                   "--kill-grace", "8", dag])
            try:
                proc.wait(timeout=60)
            except Exception:
                pass
            left = ([] if pmcrun.wait_session_gone(proc.pid, timeout=3)
                    else pmcrun.session_pids(proc.pid))
            res = pmcrun.finish(proc)
            case = "%s (--launch-threads %s)" % (self.id(), threads)
            problems = ["processes left running after the run: %s" % left] if left else []
            if res.returncode != 1:
                problems.append("exit status %s, expected 1" % res.returncode)
            for name in ("wrapped", "stuck"):
                problems += timed_out_problems(res, name, "0.5")
            lines = file_words(marker)
            if lines != ["started", "graceful"]:
                problems.append("the program's file holds %s, expected started and graceful: "
                                "its grace was cut short" % lines)
            wrapped, stuck = res.records_of("wrapped"), res.records_of("stuck")
            if wrapped and not 0.85 <= wrapped[0].duration <= 4.0:
                problems.append("wrapped lasted %.2f s: TERM at 0.5 s, its program ends 0.4 s "
                                "later, long before the 8 s grace" % wrapped[0].duration)
            if stuck and not 8.3 <= stuck[0].duration <= 10.5:
                problems.append("stuck lasted %.2f s: TERM at 0.5 s, KILL after 8 s"
                                % stuck[0].duration)
            out = res.stdout
            bye, rec = out.find("bye-from-prog"), out.find("name=wrapped,")
            if bye < 0 or rec < 0 or bye > rec:
                problems.append("wrapped's program's last line is not in its block before "
                                "its record (at %d, record at %d)" % (bye, rec))
            self.check(problems, res, case)

    def test_abort_grace_reaches_what_a_wrapper_runs(self):
        """SIGTERM to pmc-hybrid: the running tasks' groups get SIGTERM,
        and a wrapper's program its grace (--kill-grace 8) to end; the run
        ends when the groups are empty, long before the grace."""
        dag, marker = self.wrapper_tasks()
        # without wrap.dag's time limit, which would race the signal
        self.write_dag("one.dag", file_lines(dag)[0].replace(" --time-limit 0.5", ""))
        proc = self.start_pmc(["--host-cpus", "2", "--kill-grace", "8", self.path("one.dag")])
        deadline = time.monotonic() + 20
        while not os.path.exists(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not os.path.exists(marker):
            pmcrun.kill_session(proc)
            self.fail("the wrapped program did not start within 20 s\n%s"
                      % pmcrun.finish(proc, timeout=10).describe())
        t0 = time.monotonic()
        proc.send_signal(15)
        try:
            proc.wait(timeout=30)
        except Exception:
            pass
        took = time.monotonic() - t0
        res = pmcrun.finish(proc)
        problems = []
        lines = file_words(marker)
        if lines != ["started", "graceful"]:
            problems.append("the program's file holds %s, expected started and graceful" % lines)
        if took > 4.0:
            problems.append("the run took %.1f s after SIGTERM: its grace is 8 s, but its task "
                            "ended 0.4 s after the signal" % took)
        if "Caught signal" not in res.stderr:
            problems.append("no 'Caught signal' in the log")
        self.check(problems, res)

    def test_time_limit_of_a_failed_launch_ends_with_it(self):
        """With a pool a limit is armed as the launch is handed over: a
        launch that cannot execute must take it along, or the slot's next
        task (no limit, 2.5 s; -m 10, so not staged into another slot) is
        ended by it."""
        dag = self.write_dag("reuse.dag", """
            TASK bad -p 10 --time-limit 1 /no/such/program
            TASK next -p 1 -m 10 /bin/sleep 2.5
            """)
        res = self.run_pmc(["--host-cpus", "1", "--launch-threads", "2", "--kill-grace", "1", dag])
        problems = []
        if res.returncode != 1:
            problems.append("exit status %s, expected 1 (bad fails)" % res.returncode)
        if [r.status for r in res.records_of("next")] != [0]:
            problems.append("next: statuses %s, expected [0]"
                            % [r.status for r in res.records_of("next")])
        if "Task next exceeded its time limit" in res.stderr:
            problems.append("next was ended by a time limit it does not have")
        self.check(problems, res)

    def test_time_limit_alone(self):
        """One task with a limit and nothing else in the run: nothing but
        the agent's own deadline wakes it (with a launcher pool it arms
        the limit as it hands the launch over, and no start wakes it)."""
        dag = self.write_dag("alone.dag", "TASK slow --time-limit 1 /bin/sleep 20\n")
        t0 = time.monotonic()
        res = self.run_pmc(["--kill-grace", "1", dag])
        wall = time.monotonic() - t0
        problems = []
        if res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        if wall > 8:
            problems.append("the run took %.1f s: a limit of 1 s + 1 s grace" % wall)
        problems += timed_out_problems(res, "slow", "1")
        if len(res.records_of("slow")) != 1:
            problems.append("slow ran %d times, expected once" % len(res.records_of("slow")))
        self.check(problems, res)

    def test_task_time_limit_below_a_millisecond(self):
        """--task-time-limit 0.0004 is a limit of 1 ms, rounded up as the
        DAG's --time-limit is: it was rounded to 0 ms, which means none, so
        the task ran to its end and succeeded."""
        dag = self.write_dag("tiny.dag", "TASK tiny /bin/sleep 20\n")
        res = self.run_pmc(["--kill-grace", "1", "--task-time-limit", "0.0004", dag])
        problems = []
        if res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        problems += timed_out_problems(res, "tiny", "0.001")
        self.check(problems, res)

    # ------------------------------------------------------ batch job's end

    def test_batch_end(self):
        names = ["b%d" % i for i in range(4)]
        dag = self.write_dag("b.dag", "\n".join("TASK %s /bin/sleep 30" % n for n in names))
        env = {"SLURM_JOB_END_TIME": str(int(time.time()) + 20)}
        t0 = time.monotonic()
        res = self.run_pmc(["--host-cpus", "2", "--drain-margin", "15", "--kill-grace", "1",
                            dag], env=env, timeout=60)
        wall = time.monotonic() - t0
        problems = []
        if res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        if wall > 9:
            problems.append("stopped after %.1f s, expected ~5 s + grace" % wall)
        if "SLURM_JOB_END_TIME" not in res.stderr:
            problems.append("the log does not say where the end came from")
        if not res.summaries or res.summaries[0].get("stat") != "failed":
            problems.append("no stat=failed summary")
        rescue = pmcrun.parse_rescue(dag + ".rescue")
        problems += rescue.problems
        if rescue.done:
            problems.append("rescue log holds %s" % sorted(rescue.done))
        self.check(problems, res, "first allocation")
        # the next allocation, with time to spare: the same DAG completes
        with open(dag, "w") as f:
            f.write("\n".join("TASK %s /bin/sleep 0.1" % n for n in names) + "\n")
        res = self.run_pmc(["--host-cpus", "2", dag])
        if res.returncode != 0 or len(res.tasks) != 4:
            self.check(["rerun: exit %s, %d records" % (res.returncode, len(res.tasks))], res)

    def test_batch_end_long_past(self):
        """A stop time before the machine booted (the monotonic clock's
        zero): the run stops at once, as for any past stop time (it used to
        run on: a stop time at or below 0 counted as none)."""
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        dag = self.write_dag("p.dag", "TASK p0 /bin/sleep 30\nTASK p1 /bin/sleep 30\n")
        env = {"SLURM_JOB_END_TIME": str(int(time.time()) + 100)}
        res = self.run_pmc(["--host-cpus", "2", "--drain-margin", str(int(uptime) + 10000),
                            "--kill-grace", "1", dag], env=env, timeout=20)
        problems = [] if res.returncode == 1 else ["exit status %s, expected 1" % res.returncode]
        if res.elapsed > 5:
            problems.append("stopped after %.1f s, expected at once" % res.elapsed)
        if res.tasks:
            problems.append("%d tasks ran" % len(res.tasks))
        self.check(problems, res)

    # ------------------------------------------------------- threaded tasks

    def test_thread_env(self):
        show = "OMP=$OMP_NUM_THREADS MKL=$MKL_NUM_THREADS OPENBLAS=$OPENBLAS_NUM_THREADS"
        dag = self.write_dag("c.dag", 'TASK c3 -c 3 /bin/sh -c "echo %s"' % show)
        res = self.run_pmc(["--host-cpus", "4", dag])
        problems = []
        if "OMP=3 MKL=3 OPENBLAS=3" not in res.stdout:
            problems.append("a -c 3 task did not see 3 threads: %r" % res.stdout[:200])
        res = self.run_pmc(["-s", "--host-cpus", "4", dag], env={"OMP_NUM_THREADS": "7"})
        if "OMP=7 MKL=3" not in res.stdout:
            problems.append("the user's OMP_NUM_THREADS=7 was not kept: %r" % res.stdout[:200])
        res = self.run_pmc(["-s", "--no-thread-env", "--host-cpus", "4", dag])
        if "OMP= MKL= OPENBLAS=" not in res.stdout:
            problems.append("--no-thread-env still set thread variables: %r"
                            % res.stdout[:200])
        # bound: OMP_PLACES lists exactly the CPUs of PMC_AFFINITY
        ncpu = len(os.sched_getaffinity(0))
        dag = self.write_dag("p.dag", 'TASK p -c %d /bin/sh -c "echo A=$PMC_AFFINITY '
                             'P=$OMP_PLACES B=$OMP_PROC_BIND"' % ncpu)
        res = self.run_pmc(["--set-affinity", dag])
        m = re.search(r"A=(\S+) P=(\S+) B=(\S+)", res.stdout)
        if not m:
            problems.append("--set-affinity: no bound task output: %r" % res.stdout[:200])
        else:
            cpus = set()
            for part in m.group(1).split(","):
                lo, _, hi = part.partition("-")
                cpus.update(range(int(lo), int(hi or lo) + 1))
            places = {int(x.strip("{}")) for x in m.group(2).split(",")}
            if places != cpus or len(cpus) != ncpu or m.group(3) != "close":
                problems.append("PMC_AFFINITY=%s but OMP_PLACES=%s OMP_PROC_BIND=%s"
                                % m.groups())
        self.check(problems, res)

    def test_hwloc_env(self):
        dag = self.write_dag("h.dag", 'TASK h /bin/sh -c "echo H=${HWLOC_COMPONENTS-unset}."')
        problems = []
        with mock.patch.dict(os.environ):
            os.environ.pop("HWLOC_COMPONENTS", None)
            res = self.run_pmc([dag])
        if res.returncode != 0 or "H=unset." not in res.stdout:
            problems.append("without HWLOC_COMPONENTS: exit %s, the task printed %r (expected "
                            "H=unset.)" % (res.returncode, res.stdout[:200]))
        for value in ("-nosuch", ""):
            res = self.run_pmc(["-s", dag], env={"HWLOC_COMPONENTS": value})
            if res.returncode != 0 or "H=%s." % value not in res.stdout:
                problems.append("with HWLOC_COMPONENTS=%r: exit %s, the task printed %r"
                                % (value, res.returncode, res.stdout[:200]))
        self.check(problems, res)


if __name__ == "__main__":
    pmcrun.main()
