#!/usr/bin/env python3
"""test_lifecycle.py - host scripts, wall time, signals, DAG lock (issue "host
scripts, wall time, signals, lock").

What the PMC manual (HOST SCRIPTS, --max-wall-time, -n/--nolock,
--no-sleep-on-recv, environment aliases) and COMPAT.md (messages; "the
summary is printed on every exit path ... wall time, SIGTERM/SIGINT/
SIGUSR1"; per-rank files merged at the end of every orderly run) promise:

  * host_script_success: --host-script S (1 rank; 2 ranks on this one host),
    and PMC_HOST_SCRIPT=S (1 rank): S ran exactly once, finished before the
    first task started (its own timestamp before every task's, and its
    marker's mtime not after the first record's start), the run succeeds.
  * host_script_failure: S exits 3 (1 and 2 ranks): exit 1, "Host script
    failed with status 3" (or "exitcode 3"), "Aborting workflow", no task
    ran, a cluster-summary with stat="failed".
  * host_script_background_child: S starts `sleep N &` and exits 0: after
    the run that child is gone within 30 s (the host script's process group
    gets SIGTERM, then SIGKILL after 3 s).
  * host_script_timeout: S hangs (a 600 s sleep), with the limit set to 2 s
    by PMC_HOST_SCRIPT_TIMEOUT (PMC's 60 s otherwise; the unit test
    test_hostscript.cc checks the default): the run ends, no earlier than 2 s
    after its start, with "Host script timed out after 2 seconds", exit 1, no
    task ran, and the script's sleep is gone.
  * signal_during_host_script / wall_time_during_host_script: S hangs with
    the default 60 s limit; SIGTERM to pmc-hybrid, or --max-wall-time 0.05
    (3 s, counted from the process's start): the run ends within 12 s
    ("Caught signal: SIGTERM" or "Max wall time of 0.050 minutes reached",
    then "Host script stopped"), exit 1, no task ran, the sleep is gone
    (both waited for the script's 60 s before).
  * max_wall_time: --max-wall-time 0.05 (3 s) and PMC_MAX_WALL_TIME=0.05 on
    four tasks `sh -c 'echo started; ...; sleep N; ...'` (N > 600 s): the
    run ends no earlier than 2.9 s and within 30 s of the wall time (a
    generous bound: only the end matters, the tasks would run for ten
    minutes), exit 1, "Aborting workflow", one cluster-summary
    stat="failed" on stdout, the per-rank DAG.out.0/DAG.err.0 merged away and
    the tasks' "started" lines on stdout, and no `sleep N` process left (N
    is unique to the test process, checked through /proc).
  * signals: the same run, SIGTERM / SIGINT / SIGUSR1 / SIGHUP sent to
    pmc-hybrid (1 rank) once every task has started: same expectations,
    the end within 30 s of the signal.
  * stop_waits_for_tasks_without_spinning: --max-wall-time 0.05 (3 s),
    and the batch job's end (SLURM_JOB_END_TIME 183-184 s ahead,
    --drain-margin 180), stop a task that ignores SIGTERM once it started
    (it touches a file); pmc-hybrid waits the 4 s kill
    grace for it, exit 1, using at most 1 s of CPU over the run (its
    threads and the task, from wait4): a master that polled without
    sleeping once the stop time had passed used a core until the end.
  * sighup_under_nohup: started by nohup, SIGHUP does not stop the run
    (exit 0, no "Caught signal").
  * tasks_get_default_signals: a task reads its own signal state from
    /proc/self/status: nothing blocked and nothing ignored, for a plain run
    (pmc-hybrid ignores SIGPIPE and SIGXFSZ itself) and for one started
    under nohup behind a shell that ignores SIGQUIT and SIGUSR2 (ignored
    signals inherited by pmc-hybrid; SIGHUP stays ignored in pmc-hybrid),
    and for 2 ranks behind that shell (the task started by a rank that
    started MPI first, whatever MPICH and UCX set at their start).
  * orphans_of_tasks_come_to_pmc_hybrid: a task leaves a `sleep 30` in its
    group (killed as it ends) and a daemon in a session of its own (setsid)
    that outlives it by 0.3 s: the daemon's parent is then pmc-hybrid (a
    child subreaper), not PID 1, and once the next task of 0.8 s has ended
    neither is left, not even as a zombie (1 rank and 2 ranks).
  * sigterm_mpiexec: mpiexec -n 2, SIGTERM to mpiexec: the run ends within
    30 s, a cluster-summary stat="failed" is printed, no task is left.
  * dag_lock: while a run holds the DAG (a task waiting for a release
    file), a second run on the same DAG, and one through a hard link to it
    (same file), fail with exit 1 and "lock" in the message while the
    first still runs (within 30 s, not waiting for the lock),
    and start no task (they use the default rescue file and stdio, so that
    touching those before the lock would break the first run); a run
    through the hard link with -n (and its own -r and -o) proceeds and
    succeeds while the first still runs; the first run then succeeds with
    an intact rescue file.  (The -n run uses a hard link
    so that its per-rank DAG.out.R files do not collide with the first
    run's.)
  * no_sleep_on_recv: --no-sleep-on-recv is accepted (1 and 2 ranks).

Runs here write stdout/stderr to files (not pipes), so a process left
behind cannot hold a pipe open and the exit time of pmc-hybrid itself is
measured; left-over processes are looked for before the run's session is
killed.  Time bounds are generous (a loaded machine must not fail them):
each says only that a run ended, or a process went, long before it would
have without the behaviour under test; none is a performance figure.
"""

import glob
import math
import os
import re
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

STAMP = """#!/bin/sh
# stamp.sh DIR NAME: record this task's start.
date +%s.%N > "$1/$2.start"
"""

HOLD = """#!/bin/sh
# hold.sh DIR: note the start (with $RUNTAG), then wait (at most 60 s) for DIR/release.$RUNTAG.
echo "$RUNTAG" >> "$1/starts"
n=0
while [ ! -e "$1/release.$RUNTAG" ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n+1)); done
"""


def unique_sleep(case):
    """A sleep duration that names this test process and case."""
    return "%d.%06d" % (600 + case, os.getpid() % 1000000)


def sleep_pids(duration):
    """Live (non-zombie) processes whose command line is `sleep DURATION`."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                cmd = f.read().split(b"\0")
        except OSError:
            continue
        if pmcrun.stat_fields("/proc/%s/stat" % entry)[:1] in ([], ["Z"]):
            continue
        if cmd and cmd[-1] == b"":
            cmd.pop()
        if len(cmd) == 2 and os.path.basename(cmd[0]) == b"sleep" and \
                cmd[1] == duration.encode():
            pids.append(int(entry))
    return pids


def kill_sleeps(duration):
    for pid in sleep_pids(duration):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def wait_sleeps_gone(duration, timeout):
    deadline = time.monotonic() + timeout
    while True:
        left = sleep_pids(duration)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


def pid_alive(pid, duration):
    state = pmcrun.stat_fields("/proc/%d/stat" % pid)[:1]
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmd = f.read()
    except OSError:
        return False
    return state not in ([], ["Z"]) and duration.encode() in cmd


class Lifecycle(pmcrun.TestCase):
    # ------------------------------------------------------------ running

    def launch(self, args, ranks=1, env=None, tag="run", wrap=()):
        """Start pmc-hybrid (behind the wrap command, if any) in its own
        session with stdout/stderr going to files TAG.stdout / TAG.stderr
        in the temp dir."""
        argv = list(wrap) + pmcrun.command(args, ranks)
        out = open(self.path(tag + ".stdout"), "wb")
        err = open(self.path(tag + ".stderr"), "wb")
        started = time.time()
        proc = subprocess.Popen(argv, cwd=self.tmp, env=pmcrun.run_env(env),
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                start_new_session=True)
        out.close()
        err.close()
        proc.argv, proc.started, proc.t0, proc.tag = argv, started, time.monotonic(), tag
        self.addCleanup(pmcrun.kill_session, proc)
        return proc

    def wait_run(self, proc, timeout=pmcrun.RUN_TIMEOUT):
        """Wait for pmc-hybrid (or mpiexec) to exit, without killing what it
        left behind; Result.elapsed is the time from launch to exit."""
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            pmcrun.kill_session(proc)
            proc.wait()
        elapsed = time.monotonic() - proc.t0
        proc.exited = time.monotonic()
        with open(self.path(proc.tag + ".stdout"), "rb") as f:
            out = f.read().decode("utf-8", "replace")
        with open(self.path(proc.tag + ".stderr"), "rb") as f:
            err = f.read().decode("utf-8", "replace")
        return pmcrun.Result(proc.argv, proc.returncode, out, err, elapsed, timed_out,
                             proc.started)

    def run_to_end(self, args, ranks=1, env=None, tag="run", timeout=pmcrun.RUN_TIMEOUT):
        return self.wait_run(self.launch(args, ranks, env, tag), timeout)

    def wait_for(self, predicate, timeout, proc=None):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            if proc is not None and proc.poll() is not None:
                return predicate()
            time.sleep(0.02)
        return predicate()

    # -------------------------------------------------------- host scripts

    def marker_dag(self, names=("t1", "t2", "t3")):
        self.write("stamp.sh", STAMP, 0o755)
        return self.write("hs.dag", "".join("TASK %s /bin/sh %s/stamp.sh %s %s\n"
                                            % (n, self.tmp, self.tmp, n) for n in names))

    def test_host_script_success(self):
        script = self.write("hs.sh", "#!/bin/sh\ndate +%%s.%%N > %s/hs.stamp\n"
                            "echo run >> %s/hs.count\nexit 0\n" % (self.tmp, self.tmp), 0o755)
        cases = (("--host-script, 1 rank", ["--host-script", script], None, 1),
                 ("PMC_HOST_SCRIPT, 1 rank", [], {"PMC_HOST_SCRIPT": script}, 1),
                 ("--host-script, 2 ranks", ["--host-script", script], None, 2))
        for i, (case, opts, env, ranks) in enumerate(cases):
            with self.subTest(case=case):
                for f in os.listdir(self.tmp):
                    if f.startswith(("hs.", "t1.", "t2.", "t3.")) and f != "hs.sh":
                        os.unlink(self.path(f))
                dag_path = self.marker_dag()
                res = self.run_to_end(opts + ["--host-cpus", "4", dag_path], ranks, env,
                                      tag="ok%d" % i)
                problems = pmcrun.success_problems(res, pmcrun.parse_dag(dag_path))
                count = (pmcrun.read_text(self.path("hs.count")) or "").split()
                if len(count) != 1:
                    problems.append("the host script ran %d times, expected once (one host)"
                                    % len(count))
                try:
                    hs = float(pmcrun.read_text(self.path("hs.stamp")))
                    mtime = os.stat(self.path("hs.stamp")).st_mtime
                except (TypeError, ValueError, OSError):
                    problems.append("the host script's stamp file is missing")
                    self.check(problems, res, case)
                    continue
                for n in ("t1", "t2", "t3"):
                    try:
                        ts = float(pmcrun.read_text(self.path(n + ".start")))
                    except (TypeError, ValueError):
                        continue  # reported by success_problems if it did not run
                    if ts <= hs:
                        problems.append("task %s started %.3fs before the host script wrote "
                                        "its marker" % (n, hs - ts))
                if res.tasks:
                    first = min(r.start for r in res.tasks)
                    if mtime > first + pmcrun.ORDER_TOLERANCE:
                        problems.append("the host script's marker (mtime) is %.3fs younger than "
                                        "the first task's start" % (mtime - first))
                self.check(problems, res, case)

    def test_host_script_failure(self):
        script = self.write("hs.sh", "#!/bin/sh\nexit 3\n", 0o755)
        dag_path = self.write_dag("fail.dag", """
            TASK m1 /bin/touch {t}/ran.m1
            TASK m2 /bin/touch {t}/ran.m2
            """.format(t=self.tmp))
        for ranks in (1, 2):
            with self.subTest(ranks=ranks):
                res = self.run_to_end(["--host-script", script, dag_path], ranks,
                                      tag="fail%d" % ranks, timeout=60)
                problems = []
                if res.timed_out or res.returncode != 1:
                    problems.append("exit status %s, expected 1" % res.returncode)
                if not re.search(r"Host script failed with (status|exitcode) 3\b", res.stderr):
                    problems.append("stderr lacks 'Host script failed with status 3'")
                if "Aborting workflow" not in res.stderr:
                    problems.append("stderr lacks 'Aborting workflow'")
                ran = sorted(f for f in os.listdir(self.tmp) if f.startswith("ran."))
                if ran or res.tasks:
                    problems.append("tasks ran after the host script failed: %s %s"
                                    % (ran, [r.name for r in res.tasks]))
                if len(res.summaries) != 1 or res.summaries[0].get("stat") != "failed":
                    problems.append("expected one cluster-summary with stat=\"failed\", got %s"
                                    % [s.get("stat") for s in res.summaries])
                self.check(problems, res, "ranks=%d" % ranks)

    def test_host_script_background_child(self):
        dur = unique_sleep(1)
        self.addCleanup(kill_sleeps, dur)
        script = self.write("hs.sh", "#!/bin/sh\nsleep %s </dev/null >/dev/null 2>&1 &\n"
                            "echo $! > %s/hs.child\nexit 0\n" % (dur, self.tmp), 0o755)
        dag_path = self.marker_dag(("t1",))
        proc = self.launch(["--host-script", script, dag_path])
        res = self.wait_run(proc, timeout=60)
        problems = pmcrun.success_problems(res, pmcrun.parse_dag(dag_path))
        try:
            child = int(pmcrun.read_text(self.path("hs.child")))
        except (TypeError, ValueError):
            problems.append("the host script did not record its child's pid")
            child = None
        if child is not None:
            gone = self.wait_for(lambda: not pid_alive(child, dur), 30)
            if not gone:
                problems.append("the host script's background child (pid %d, sleep %s) still "
                                "runs 30 s after the run ended" % (child, dur))
        self.check(problems, res)

    def test_host_script_timeout(self):
        dur = unique_sleep(2)
        self.addCleanup(kill_sleeps, dur)
        script = self.write("hs.sh", "#!/bin/sh\nsleep %s </dev/null >/dev/null 2>&1\nexit 0\n"
                            % dur, 0o755)
        dag_path = self.write_dag("hang.dag", "TASK m1 /bin/touch %s/ran.m1" % self.tmp)
        res = self.run_to_end(["--host-script", script, dag_path],
                              env={"PMC_HOST_SCRIPT_TIMEOUT": "2"}, timeout=120)
        problems = []
        if res.timed_out or res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        if res.elapsed < 2:
            problems.append("the run ended after %.1fs, before the 2 s host script limit"
                            % res.elapsed)
        if "Host script timed out after 2 seconds" not in res.stderr:
            problems.append("stderr lacks 'Host script timed out after 2 seconds'")
        if os.path.exists(self.path("ran.m1")) or res.tasks:
            problems.append("a task ran although the host script never finished")
        left = wait_sleeps_gone(dur, 10)
        if left:
            problems.append("the hanging host script's sleep (pid %s) survived the run" % left)
        self.check(problems, res)

    def host_script_stopped(self, args, send_signal, message):
        """A host script that hangs (a 600 s sleep, the limit at its 60 s
        default) is stopped by a signal or the wall time: the run ends within
        a few seconds, says why, exits 1, runs no task and leaves no sleep."""
        dur = unique_sleep(30 + send_signal)
        self.addCleanup(kill_sleeps, dur)
        script = self.write("hs.sh", "#!/bin/sh\ntouch %s/hs.started\nsleep %s </dev/null "
                            ">/dev/null 2>&1\nexit 0\n" % (self.tmp, dur), 0o755)
        dag_path = self.write_dag("hang.dag", "TASK m1 /bin/touch %s/ran.m1" % self.tmp)
        proc = self.launch(args + ["--host-script", script, dag_path], tag="hs%d" % send_signal)
        problems = []
        if not self.wait_for(lambda: os.path.exists(self.path("hs.started")), 30, proc):
            problems.append("the host script never started")
        if send_signal:
            os.kill(proc.pid, signal.SIGTERM)
        res = self.wait_run(proc, timeout=60)
        if res.timed_out or res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        if res.elapsed > 12:
            problems.append("the run ended after %.1f s: the host script held it" % res.elapsed)
        for text in (message, "Host script stopped"):
            if text not in res.stderr:
                problems.append("stderr lacks %r" % text)
        if os.path.exists(self.path("ran.m1")) or res.tasks:
            problems.append("a task ran although the host script never finished")
        left = wait_sleeps_gone(dur, 10)
        if left:
            problems.append("the host script's sleep (pid %s) survived the run" % left)
        return problems, res

    def test_signal_during_host_script(self):
        self.check(*self.host_script_stopped([], True, "Caught signal: SIGTERM"))

    def test_wall_time_during_host_script(self):
        problems, res = self.host_script_stopped(["--max-wall-time", "0.05"], False,
                                                 "Max wall time of 0.050 minutes reached")
        if res.elapsed < 2.9:
            problems.append("the run ended after %.1f s, before its 3 s wall time"
                            % res.elapsed)
        self.check(problems, res)

    # ------------------------------------------------- wall time and signals

    def long_dag(self, dur, names=("w1", "w2", "w3", "w4")):
        return self.write("long.dag", "".join(
            "TASK %s /bin/sh -c 'echo started %s; touch %s/started.%s; sleep %s; echo never %s'\n"
            % (n, n, self.tmp, n, dur, n) for n in names))

    def all_started(self, names=("w1", "w2", "w3", "w4")):
        return all(os.path.exists(self.path("started." + n)) for n in names)

    def abort_problems(self, res, dag_path, dur, since_end, limit=30.0, check_rc=True,
                       merged=True, names=("w1", "w2", "w3", "w4")):
        """An aborted run: ended within `limit` s (since_end: seconds from the
        reference moment to the exit), exit 1, message, failed summary,
        per-rank files merged, no sleep left."""
        problems = []
        if res.timed_out:
            problems.append("the run did not end (killed after %.0fs)" % res.elapsed)
        elif since_end > limit:
            problems.append("the run ended %.1fs after the abort was due, expected <= %.0fs"
                            % (since_end, limit))
        if check_rc and res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        if check_rc and "Aborting workflow" not in res.stderr:
            problems.append("stderr lacks 'Aborting workflow'")
        stats = [s.get("stat") for s in res.summaries]
        if stats != ["failed"]:
            problems.append("cluster-summary stats on stdout %s, expected ['failed']" % stats)
        if merged:
            left = pmcrun.stdio_leftovers(dag_path)
            if left:
                problems.append("per-rank stdio files not merged: %s" % ", ".join(left))
            for n in names:
                if not re.search(r"^started %s$" % n, res.stdout, re.M):
                    problems.append("task output 'started %s' not merged into stdout" % n)
        left = wait_sleeps_gone(dur, 10.0)
        if left:
            problems.append("%d task process(es) 'sleep %s' left running (pids %s)"
                            % (len(left), dur, left))
        return problems

    def test_max_wall_time(self):
        for i, (case, opts, env) in enumerate((
                ("--max-wall-time 0.05", ["--max-wall-time", "0.05"], None),
                ("PMC_MAX_WALL_TIME=0.05", [], {"PMC_MAX_WALL_TIME": "0.05"}))):
            with self.subTest(case=case):
                dur = unique_sleep(10 + i)
                self.addCleanup(kill_sleeps, dur)
                for f in os.listdir(self.tmp):
                    if f.startswith("started."):
                        os.unlink(self.path(f))
                dag_path = self.long_dag(dur)
                res = self.run_to_end(opts + ["--host-cpus", "4", dag_path], env=env,
                                      tag="wall%d" % i, timeout=60)
                # since_end: from when the 3 s wall time was due; the output
                # of each task that started (all four, unless the machine
                # is slow to start them) is merged
                started = [n for n in ("w1", "w2", "w3", "w4")
                           if os.path.exists(self.path("started." + n))]
                problems = self.abort_problems(res, dag_path, dur, res.elapsed - 3.0,
                                               names=started)
                if not started:
                    problems.append("no task started within the 3 s wall time")
                if not res.timed_out and res.elapsed < 2.9:
                    problems.append("the run ended after %.1fs, before its 3 s wall time"
                                    % res.elapsed)
                self.check(problems, res, case)
                kill_sleeps(dur)

    def test_stopped_task_that_exits_0_is_not_done(self):
        """A task that the engine stops (SIGTERM to pmc-hybrid, or the wall
        time) and that traps the signal and exits 0 may have cut its work
        short: it counts as killed by SIGTERM (status 15), is not DONE in
        the rescue log (the next run runs it again), and its forwarded data
        is dropped as a failed task's.  It was DONE, with only its partial
        output forwarded."""
        for i, (case, opts) in enumerate((("SIGTERM", []),
                                          ("--max-wall-time", ["--max-wall-time", "0.05"]))):
            with self.subTest(case=case):
                # The trap kills its sleep: a SIGTERM to the group that
                # lands in the sleep's child between its fork and its exec
                # is taken by the shell's handler there and lost, and the
                # sleep would keep the group for the whole grace (status 9:
                # once in CI; 1 in 300 tries of a stand-alone probe that
                # signals the group as the marker appears, 2-core Intel VM)
                dag_path = self.write("stop%d.dag" % i, (
                    "TASK trapper -f A=%s/fwd%d.txt /bin/sh -c "
                    "\"trap 'kill -9 $! 2>/dev/null; echo partial >&$A; exit 0' TERM; "
                    "sleep 60 & touch %s/started.trap%d; wait; echo all-work >&$A\"\n")
                    % (self.tmp, i, self.tmp, i))
                proc = self.launch(opts + ["--kill-grace", "5", dag_path], tag="stop%d" % i)
                started = self.wait_for(lambda: os.path.exists(self.path("started.trap%d" % i)),
                                        30, proc)
                if started and not opts:
                    os.kill(proc.pid, signal.SIGTERM)
                res = self.wait_run(proc, timeout=60)
                problems = [] if started else ["the task never started"]
                if res.timed_out or res.returncode != 1:
                    problems.append("exit status %s, expected 1" % res.returncode)
                status = [r.status for r in res.records_of("trapper")]
                if status != [signal.SIGTERM]:
                    problems.append("trapper's records' statuses %s, expected [%d] (SIGTERM)"
                                    % (status, signal.SIGTERM))
                done = pmcrun.parse_rescue(dag_path + ".rescue").done_set
                if done:
                    problems.append("rescue DONE %s, expected none" % sorted(done))
                if os.path.exists(self.path("fwd%d.txt" % i)):
                    problems.append("the stopped task's forwarded data was written")
                self.check(problems, res, case)

    def test_stop_waits_for_tasks_without_spinning(self):
        # Each stop comes 3-4 s after the launch, so that the task has
        # started on a slow machine (a sanitizer build beside other tests)
        for i, (case, opts, env) in enumerate((
                ("--max-wall-time 0.05", ["--max-wall-time", "0.05"], None),
                ("the batch job's end", ["--drain-margin", "180"], 183))):
            with self.subTest(case=case):
                if env is not None:  # the job's end, at least env s from now
                    # whole seconds: rounded up, or the stop can come at once
                    env = {"SLURM_JOB_END_TIME": str(math.ceil(time.time()) + env)}
                dur = unique_sleep(30 + i)
                self.addCleanup(kill_sleeps, dur)
                started = self.path("deaf%d.started" % i)
                dag_path = self.write("deaf%d.dag" % i,
                                      "TASK deaf /bin/sh -c 'trap \"\" TERM; touch %s; sleep %s'\n"
                                      % (started, dur))
                proc = self.launch(opts + ["--host-cpus", "1", "--kill-grace", "4", dag_path], env=env,
                                   tag="deaf%d" % i)
                # wait4: the rusage of pmc-hybrid's threads and of the task
                # it reaped (sh and sleep, ~0 CPU)
                deadline, status, usage = time.monotonic() + 60, None, None
                while status is None and time.monotonic() < deadline:
                    pid, st, ru = os.wait4(proc.pid, os.WNOHANG)
                    if pid == proc.pid:
                        status, usage = st, ru
                    else:
                        time.sleep(0.05)
                if status is None:
                    self.fail("%s: the run did not end within 60 s" % case)
                proc.returncode = os.waitstatus_to_exitcode(status)
                elapsed = time.monotonic() - proc.t0
                cpu = usage.ru_utime + usage.ru_stime
                problems = []
                if not os.path.exists(started):
                    problems.append("the task never started: the stop came first")
                if elapsed < 3.9:
                    problems.append("ended after %.1f s, before the task's 4 s kill grace"
                                    % elapsed)
                if proc.returncode != 1:
                    problems.append("exit status %s, expected 1" % proc.returncode)
                # the stop (3-4 s) and the grace (4 s): a master that polls
                # without sleeping takes a whole core for those 4 s
                if cpu > 1.0:
                    problems.append("pmc-hybrid used %.2f s of CPU in a %.1f s run that only "
                                    "waited for a task" % (cpu, elapsed))
                with open(self.path("deaf%d.stderr" % i)) as f:
                    self.assertEqual(problems, [], "%s; stderr:\n%s" % (case, f.read()))
                kill_sleeps(dur)

    def signal_case(self, sig, ranks, case_no):
        dur = unique_sleep(20 + case_no)
        self.addCleanup(kill_sleeps, dur)
        for f in os.listdir(self.tmp):
            if f.startswith("started."):
                os.unlink(self.path(f))
        dag_path = self.long_dag(dur)
        proc = self.launch(["--host-cpus", "4", dag_path], ranks, tag="sig%d" % case_no)
        if not self.wait_for(self.all_started, 30, proc):
            res = self.wait_run(proc, timeout=5)
            return ["not every task started within 30 s (or the run ended early)"], res
        sent = time.monotonic()
        os.kill(proc.pid, sig)
        res = self.wait_run(proc, timeout=60)
        since = proc.exited - sent
        if ranks == 1:
            problems = self.abort_problems(res, dag_path, dur, since)
        else:
            # mpiexec: no claim on its exit status, messages or merging
            problems = self.abort_problems(res, dag_path, dur, since, check_rc=False,
                                           merged=False)
        kill_sleeps(dur)
        return problems, res

    def test_signals(self):
        for i, sig in enumerate((signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGHUP)):
            with self.subTest(signal=sig.name):
                problems, res = self.signal_case(sig, 1, i)
                self.check(problems, res, sig.name)

    def test_sighup_under_nohup(self):
        """Under nohup SIGHUP stays ignored: the run goes on to its end
        (MPI's UCX installs a SIGHUP handler of its own at load time,
        over nohup's SIG_IGN; pmc-hybrid reads the disposition first)."""
        dag_path = self.write("hup.dag", "TASK a /bin/sh -c 'touch started.a; sleep 1.5'\n")
        proc = self.launch(["--host-cpus", "1", dag_path], tag="nohup", wrap=("nohup",))
        problems = []
        if not self.wait_for(lambda: os.path.exists(self.path("started.a")), 30, proc):
            problems.append("the task did not start within 30 s")
        os.kill(proc.pid, signal.SIGHUP)
        res = self.wait_run(proc, timeout=60)
        if res.returncode != 0:
            problems.append("exit status %s, expected 0: SIGHUP stopped a nohup run"
                            % res.returncode)
        if "Caught signal" in res.stderr:
            problems.append("the log says it caught a signal")
        self.check(problems, res, "SIGHUP under nohup")

    def test_tasks_get_default_signals(self):
        dag_path = self.write("sig.dag", "TASK sig /bin/grep -E '^Sig(Blk|Ign)' /proc/self/status\n")
        want = ["SigBlk:\t0000000000000000", "SigIgn:\t0000000000000000"]
        ignoring = ("/bin/sh", "-c", 'trap "" QUIT USR2; exec "$@"', "sh", "nohup")
        for tag, ranks, wrap in (("plain", 1, ()), ("ignoring", 1, ignoring),
                                 ("mpi", 2, ignoring)):
            with self.subTest(case=tag):
                if os.path.exists(dag_path + ".rescue"):
                    os.unlink(dag_path + ".rescue")
                res = self.wait_run(self.launch(["--host-cpus", "1", dag_path], ranks=ranks,
                                                tag=tag, wrap=wrap))
                lines = [x for x in res.stdout.splitlines() if x.startswith("Sig")]
                problems = [] if res.returncode == 0 else ["exit %s" % res.returncode]
                if lines != want:
                    problems.append("the task's signal state is %r, expected %r"
                                    % (lines, want))
                self.check(problems, res, tag)

    def test_orphans_of_tasks_come_to_pmc_hybrid(self):
        self.write("a.sh", 'sleep 30 &\necho $! > "$1/sleep"\n'
                           'setsid /bin/sh "$1/daemon.sh" "$1" &\n'
                           'while [ ! -s "$1/daemon" ]; do sleep 0.01; done\n')
        self.write("daemon.sh", 'echo $$ > "$1/daemon"\nsleep 0.3\n'
                                'cut -d" " -f4 /proc/$$/stat > "$1/ppid"\n')
        self.write("c.sh", 'read ppid < "$1/ppid"\n'
                           '[ "$ppid" = "$PPID" ] || { echo "the daemon\'s parent: $ppid, '
                           'not pmc-hybrid ($PPID)"; exit 1; }\n'
                           'for f in sleep daemon; do read p < "$1/$f"\n'
                           '  if [ -e /proc/$p ]; then echo "$f ($p) is left: '
                           '$(cat /proc/$p/stat)"; exit 2; fi\ndone\necho reaped\n')
        dag_path = self.write_dag("orphans.dag", """
            TASK a /bin/sh {0}/a.sh {0}
            TASK b /bin/sleep 0.8
            TASK c /bin/sh {0}/c.sh {0}
            EDGE a b
            EDGE b c
            """.format(self.tmp))
        for ranks in (1, 2):
            with self.subTest(ranks=ranks):
                for f in ("sleep", "daemon", "ppid", "orphans.dag.rescue"):
                    if os.path.exists(self.path(f)):
                        os.unlink(self.path(f))
                res = self.run_to_end(["--host-cpus", "1", dag_path], ranks=ranks,
                                      tag=str(ranks), timeout=60)
                problems = [] if res.returncode == 0 else ["exit %s" % res.returncode]
                if "reaped" not in res.stdout:
                    problems.append("task c did not find both orphans reaped")
                self.check(problems, res, "%d rank(s)" % ranks)

    def test_sigterm_mpiexec(self):
        problems, res = self.signal_case(signal.SIGTERM, 2, 5)
        self.check(problems, res, "SIGTERM to mpiexec -n 2")

    # ------------------------------------------------------------- DAG lock

    def test_dag_lock(self):
        self.write("hold.sh", HOLD, 0o755)
        dag_path = self.write("lock.dag", "TASK hold /bin/sh %s/hold.sh %s\n"
                              % (self.tmp, self.tmp))
        link = self.path("link.dag")
        os.link(dag_path, link)
        starts = lambda: (pmcrun.read_text(self.path("starts")) or "").split()  # noqa: E731

        first = self.launch([dag_path], env={"RUNTAG": "1"}, tag="first")
        problems = []
        if not self.wait_for(lambda: "1" in starts(), 30, first):
            self.addCleanup(lambda: open(self.path("release.1"), "w").close())
            res = self.wait_run(first, timeout=5)
            self.check(["the first run's task did not start within 30 s"], res)

        for tag, path in (("same", dag_path), ("link", link)):
            # default rescue file and stdio: touching them before taking the
            # lock would show in the first run's results
            res = self.run_to_end([path], env={"RUNTAG": tag}, tag=tag, timeout=30)
            where = "second run on %s" % ("the same path" if tag == "same" else "a hard link")
            if res.timed_out or res.returncode != 1:
                problems.append("%s: exit status %s, expected 1" % (where, res.returncode))
            elif res.elapsed >= 30:
                problems.append("%s: took %.1fs to fail, expected < 30 s (no wait for the lock)"
                                % (where, res.elapsed))
            if "lock" not in res.stderr.lower():
                problems.append("%s: no message about the lock on stderr: %r"
                                % (where, res.stderr.strip()[-300:]))
            if tag in starts():
                problems.append("%s: started the task although the DAG is locked" % where)
        if first.poll() is not None:
            problems.append("the first run ended (exit %s) while it should hold the lock"
                            % first.returncode)

        nolock = self.launch(["-n", "-r", self.path("other.rescue"), "-o",
                              self.path("other.out"), link], env={"RUNTAG": "3"}, tag="nolock")
        if not self.wait_for(lambda: "3" in starts(), 30, nolock):
            problems.append("with -n a second run did not start its task within 30 s")
        elif first.poll() is not None:
            problems.append("the first run ended before the -n run started its task")
        open(self.path("release.3"), "w").close()
        res3 = self.wait_run(nolock, timeout=60)
        if res3.timed_out or res3.returncode != 0:
            problems.append("-n run: exit status %s, expected 0\n%s"
                            % (res3.returncode, res3.describe(8)))
        if pmcrun.parse_rescue(self.path("other.rescue")).done_set != {"hold"}:
            problems.append("-n run: other.rescue does not say DONE hold")
        recs = pmcrun.parse_output(pmcrun.read_text(self.path("other.out")) or "").tasks
        if [(r.name, r.status) for r in recs] != [("hold", 0)]:
            problems.append("-n run: other.out records %s, expected hold with status 0"
                            % [(r.name, r.status) for r in recs])

        open(self.path("release.1"), "w").close()
        res1 = self.wait_run(first, timeout=60)
        problems += ["first run: %s" % p
                     for p in pmcrun.success_problems(res1, pmcrun.parse_dag(dag_path))]
        if starts().count("1") != 1:
            problems.append("the first run's task started %d times" % starts().count("1"))
        self.check(problems, res1)

    # ---------------------------------------------------------------- misc

    def test_thread_names(self):
        """The engine's threads carry names (top -H, perf, gdb): the node
        agent, its launchers, the rescue log's writer; with two ranks the
        MPI progress thread too."""
        for ranks, want in ((1, {"pmc-agent", "pmc-launch", "pmc-rescue"}),
                            (2, {"pmc-agent", "pmc-launch", "pmc-progress"})):
            with self.subTest(ranks=ranks):
                dag_path = self.write_dag("names%d.dag" % ranks, "TASK a /bin/sleep 2\n")
                proc = self.launch(["--launch-threads", "1", dag_path], ranks, tag="names%d" % ranks)
                seen = set()

                def names():
                    for pid in [proc.pid] + pmcrun.descendant_pids(proc.pid):
                        for comm in glob.glob("/proc/%d/task/*/comm" % pid):
                            name = pmcrun.read_text(comm)  # None: that thread just ended
                            if name is not None:
                                seen.add(name.strip())
                    return want <= seen

                self.assertTrue(self.wait_for(names, 10, proc), "threads seen: %s" % sorted(seen))
                res = self.wait_run(proc)
                self.check(pmcrun.success_problems(res, pmcrun.parse_dag(dag_path)), res,
                           "ranks=%d" % ranks)

    def test_engine_cpu_line(self):
        """The end of a run reports the engine's own CPU by thread: the
        master, the rescue writer, the node agent with its CPU per task and
        the tasks it reported, the launchers and how many threads they were
        (none without a pool)."""
        tasks = "".join("TASK t%d /bin/true\n" % i for i in range(12))
        pat = re.compile(r"Engine CPU: master ([\d.]+) ms, rescue writer ([\d.]+) ms, node agent "
                         r"([\d.]+) ms \(([\d.]+) us per task, (\d+) tasks\), launchers ([\d.]+) ms "
                         r"\((\d+) threads\)")
        for pool in (0, 1, 3):
            with self.subTest(launch_threads=pool):
                dag_path = self.write_dag("cpu%d.dag" % pool, tasks)
                res = self.run_pmc(["--launch-threads", str(pool), dag_path])
                self.check(pmcrun.success_problems(res, pmcrun.parse_dag(dag_path)), res)
                m = pat.search(res.stderr)
                self.assertIsNotNone(m, res.describe())
                master, writer, agent, per_task, ntasks, launchers = (
                    float(m.group(1)), float(m.group(2)), float(m.group(3)), float(m.group(4)),
                    int(m.group(5)), float(m.group(6)))
                self.assertEqual(ntasks, 12)
                self.assertEqual(int(m.group(7)), pool)
                self.assertGreater(agent, 0)
                self.assertGreater(writer, 0, "the rescue writer wrote 12 records")  # µs resolution
                self.assertGreater(master, 0)
                self.assertAlmostEqual(per_task * 12 / 1e3, agent, delta=0.0012)  # both as rounded
                if pool:
                    self.assertGreater(launchers, 0, "the launcher started every task")
                else:
                    self.assertEqual(launchers, 0)

    def test_no_sleep_on_recv(self):
        dag_path = self.write_dag("small.dag", """
            TASK a /bin/echo a
            TASK b /bin/echo b
            TASK c /bin/echo c
            EDGE a b
            EDGE a c
            """)
        for ranks in (1, 2):
            with self.subTest(ranks=ranks):
                res = self.run_to_end(["-s", "--no-sleep-on-recv", dag_path], ranks,
                                      tag="nosleep%d" % ranks, timeout=60)
                self.check(pmcrun.success_problems(res, pmcrun.parse_dag(dag_path)), res,
                           "ranks=%d" % ranks)


if __name__ == "__main__":
    pmcrun.main()
