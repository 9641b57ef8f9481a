#!/usr/bin/env python3
"""faults.py - injected faults: full disks, failed syncs, file size and
descriptor limits, hostile tasks, huge output, failed allocations (issue 13).

Every case runs the real pmc-hybrid in a fresh directory and demands: a
clear message, no hang (each run is bounded), nothing lost (the rescue log
parses, every task DONE in it ran, and a rerun without the fault completes
exactly the rest; output that could not be merged is kept for the rerun),
no leaked processes (none of the run's sessions survives it) and no
descriptor growth (pmc-hybrid's open descriptors, sampled while it runs,
stay bounded).

Faults come from resource limits (RLIMIT_FSIZE, RLIMIT_NOFILE) or from
libpmcfault.so (faultshim.c), preloaded into pmc-hybrid only:

  rescue-enospc      the rescue log's writes hit a full disk (short write,
                     then ENOSPC) after 40 records
  rescue-efbig       the same with EFBIG
  rescue-eio         its fdatasync fails with EIO after 3 batches
  rewrite-enospc     the start-up rewrite (PATH.tmp) hits ENOSPC: no task
                     runs and the old log stays byte-identical
  output-enospc      -o hits ENOSPC during the final merge; the per-rank
                     files stay, and the rerun merges them
  task-output-enospc a rank's output file (wf.dag.out.0) hits ENOSPC after
                     600 bytes: the task whose block was cut fails and is
                     not DONE, every DONE task's output and record are in -o
  task-output-pool   the same with --launch-threads 1 (the pool writes it)
  task-output-rank1  the same for rank 1's file under mpiexec -n 2
  task-record-enospc --per-task-stdio: one task's record cannot be written
                     to its .out file: that task fails, the run exits 1
  close-rank-output  closing the rank's wf.dag.out.0 fails with EIO (a
                     network file system's failed write-back): exit 1
  close-rank-output-2  the same for rank 1's wf.dag.out.1 (mpiexec -n 2)
  close-output       closing -o fails with EIO: exit 1
  close-forward      closing a -F destination at an eviction (--maxfds 4)
                     fails with EIO: exit 1
  jobstate-enospc    jobstate.log hits ENOSPC: the tasks run, exit 1
  fsize-limit        RLIMIT_FSIZE 24 MB for everything: task output
                     overflows the per-rank file
  emfile             RLIMIT_NOFILE from 16 to 256: each run ends cleanly
  daemon             tasks that leave a background process behind, with and
                     without the task's stdout
  closed-stdio       tasks that close their stdout, their stderr, or both
  big-stdout         one task writes --big-mb MB (default 200) to stdout:
                     it all arrives in -o; pmc-hybrid's memory stays small
  malloc             the Nth allocation of pmc-hybrid's own code fails, N
                     over every allocation of a small run (--malloc-step
                     samples), once and from N on, with 1 rank and with
                     mpiexec -n 2 --ranks-are-hosts: every run must end
                     (exit 0 or 1, no hang, no crash)

Usage: faults.py --bin build/pmc-hybrid --shim build/tests/reliability/libpmcfault.so
                 [-k CASE ...] [--big-mb 200] [--malloc-step 1] [--malloc-timeout 20]
Exit status 0 when every case holds.  Python 3 standard library only.
"""

import argparse
import errno
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import relutil  # noqa: E402

ARGS = None
FD_BOUND = 64  # descriptors pmc-hybrid may hold at once in these small runs


class Run:
    """One pmc-hybrid run: exit status, output, time, descriptors, leftovers."""

    def __init__(self, work, args, env=None, preexec=None, timeout=60, ranks=1, tag="run",
                 wrap=()):
        argv = [ARGS.bin] + args
        if ranks > 1:
            argv = [ARGS.mpiexec, "-n", str(ranks), ARGS.bin, "--ranks-are-hosts"] + args
        argv = list(wrap) + argv
        self.out_path = os.path.join(work, tag + ".stdout")
        self.err_path = os.path.join(work, tag + ".stderr")
        t0 = time.monotonic()
        proc = relutil.start(argv, work, self.out_path, self.err_path,
                             env=relutil.clean_env(env), preexec=preexec)
        self.max_fds, self.max_rss_kb, sessions = 0, 0, {proc.pid}
        self.timed_out = False
        while proc.poll() is None:
            if time.monotonic() - t0 > timeout:
                self.timed_out = True
                break
            sessions |= self.sessions_of(proc.pid)
            fds, rss = self.engine_usage(proc.pid)
            self.max_fds = max(self.max_fds, fds)
            self.max_rss_kb = max(self.max_rss_kb, rss)
            time.sleep(0.02)
        self.elapsed = time.monotonic() - t0
        time.sleep(0.3)  # what is alive now outlives the run
        self.leftovers = [p for p, (st, _, sid) in relutil.processes().items()
                          if st != "Z" and sid in sessions and p != proc.pid]
        relutil.kill_tree(proc.pid)
        for pid in self.leftovers:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        proc.wait()
        self.rc = proc.returncode
        with open(self.err_path, "rb") as f:
            self.stderr = f.read().decode("utf-8", "replace")
        with open(self.out_path, "rb") as f:
            self.stdout = f.read(1 << 20).decode("utf-8", "replace")

    @staticmethod
    def sessions_of(root):
        procs = relutil.processes()
        tree = relutil.process_tree(root, procs)
        return {procs[p][2] for p in tree if p in procs}

    @staticmethod
    def engine_usage(root):
        """Most descriptors held, and the largest VmHWM (kB), of the
        pmc-hybrid processes among root and its children."""
        fds = rss = 0
        for pid in [root] + [p for p, (_, pp, _) in relutil.processes().items() if pp == root]:
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    if b"pmc-hybrid" not in f.read().split(b"\0")[0]:
                        continue
                fds = max(fds, len(os.listdir("/proc/%d/fd" % pid)))
                with open("/proc/%d/status" % pid) as f:
                    m = re.search(r"VmHWM:\s+(\d+) kB", f.read())
                if m:
                    rss = max(rss, int(m.group(1)))
            except OSError:
                pass
        return fds, rss

    def describe(self):
        tail = "\n".join(self.stderr.strip().splitlines()[-12:])
        state = "timed out" if self.timed_out else "exit %s" % self.rc
        return "%s after %.1f s; stderr:\n%s" % (state, self.elapsed, tail)


class Case:
    def __init__(self, name):
        self.name = name
        self.work = tempfile.mkdtemp(prefix="pmc-fault-%s-" % name)
        self.problems = []
        self.figures = {}

    def path(self, name):
        return os.path.join(self.work, name)

    def fail(self, text):
        self.problems.append(text)

    def check_run(self, r, want_rc, message=None, what="run"):
        """No hang, the exit status, the message, no leftovers, bounded fds."""
        if r.timed_out:
            self.fail("%s hangs: %s" % (what, r.describe()))
            return False
        if r.rc not in want_rc:
            self.fail("%s: exit %s, expected %s: %s" % (what, r.rc, want_rc, r.describe()))
        if message and not re.search(message, r.stderr):
            self.fail("%s: no message matching %r: %s" % (what, message, r.describe()))
        if r.leftovers:
            self.fail("%s: %d processes outlive it" % (what, len(r.leftovers)))
        if r.max_fds > FD_BOUND:
            self.fail("%s: pmc-hybrid held %d descriptors (bound %d)" % (what, r.max_fds, FD_BOUND))
        return True

    def ledger_dag(self, ntasks, **kw):
        dag = self.path("wf.dag")
        parents = relutil.ledger_dag(dag, ntasks, self.path("ledger"), **kw)
        return dag, set(parents)

    def check_rescue(self, dag, names):
        """The rescue log parses and every DONE task ran; returns DONE."""
        snap = relutil.Rescue(dag + ".rescue")
        if snap.bad:
            self.fail("rescue log has bad lines %s" % snap.bad[:3])
        ran, _ = relutil.read_ledger(self.path("ledger"))
        never = snap.done_set - set(ran)
        if never:
            self.fail("%d tasks DONE never ran: %s" % (len(never), sorted(never)[:3]))
        if snap.done_set - names:
            self.fail("rescue log names unknown tasks")
        return snap.done_set

    def rerun_completes(self, dag, names, done, args=None):
        """A rerun without the fault exits 0, runs exactly the tasks not DONE."""
        _, pos = relutil.read_ledger(self.path("ledger"))
        r = Run(self.work, (args or []) + ["--host-cpus", "4", "--no-progress", dag], tag="rerun")
        if not self.check_run(r, (0,), what="rerun"):
            return r
        ran, _ = relutil.read_ledger(self.path("ledger"), pos)
        again = set(ran) & done
        if again:
            self.fail("rerun ran %d DONE tasks again: %s" % (len(again), sorted(again)[:3]))
        if sorted(ran) != sorted(names - done):
            self.fail("rerun ran %d tasks, expected the %d not DONE"
                      % (len(ran), len(names - done)))
        final = relutil.Rescue(dag + ".rescue")
        if final.done_set != names:
            self.fail("after the rerun %d of %d tasks are DONE" % (len(final.done_set), len(names)))
        return r


def shim_env(**kw):
    env = {"LD_PRELOAD": ARGS.shim}
    env.update({k: str(v) for k, v in kw.items()})
    return env


# ---- rescue log and -o ---------------------------------------------------------


def case_rescue_write(c, err_no, message):
    dag, names = c.ledger_dag(400, stdout=False)
    after = 40 * len("DONE t0000000\n") + 5  # 40 records, then a torn one
    r = Run(c.work, ["--host-cpus", "4", "--no-progress", dag], timeout=60,
            env=shim_env(PMC_FAULT_WRITE_PATH="wf.dag.rescue", PMC_FAULT_WRITE_AFTER=after,
                         PMC_FAULT_WRITE_ERRNO=err_no))
    c.check_run(r, (1,), "Rescue log failed: .*wf.dag.rescue: write failed: " + message)
    if 'stat="failed"' not in r.stdout:
        c.fail("no [cluster-summary stat=\"failed\"] record")
    snap = relutil.Rescue(dag + ".rescue")
    c.figures["done_at_failure"] = len(snap.done)
    c.figures["torn_tail"] = snap.torn.decode(errors="replace")
    if len(snap.done) != 40 or snap.torn != b"DONE ":
        c.fail("rescue log after the failure: %d records, torn %r (expected 40, 'DONE ')"
               % (len(snap.done), snap.torn))
    done = c.check_rescue(dag, names)
    c.rerun_completes(dag, names, done)


def case_rescue_enospc(c):
    case_rescue_write(c, errno.ENOSPC, "No space left on device")


def case_rescue_efbig(c):
    case_rescue_write(c, errno.EFBIG, "File too large")


def case_rescue_eio(c):
    dag, names = c.ledger_dag(400, stdout=False)
    r = Run(c.work, ["--host-cpus", "4", "--no-progress", dag], timeout=60,
            env=shim_env(PMC_FAULT_SYNC_PATH="wf.dag.rescue", PMC_FAULT_SYNC_AFTER=3))
    c.check_run(r, (1,), "Rescue log failed: .*fdatasync failed: Input/output error")
    done = c.check_rescue(dag, names)
    c.figures["done_at_failure"] = len(done)
    c.rerun_completes(dag, names, done)


def case_rewrite_enospc(c):
    dag, names = c.ledger_dag(300, stdout=False)
    first = Run(c.work, ["--host-cpus", "4", "--no-progress", "--max-wall-time", "0.01", dag],
                timeout=60, tag="first")
    c.check_run(first, (0, 1), what="first run")
    with open(dag + ".rescue", "rb") as f:
        before = f.read()
    _, pos = relutil.read_ledger(c.path("ledger"))
    r = Run(c.work, ["--host-cpus", "4", "--no-progress", dag], timeout=60,
            env=shim_env(PMC_FAULT_WRITE_PATH="wf.dag.rescue.tmp", PMC_FAULT_WRITE_AFTER=100))
    c.check_run(r, (1,), "wf.dag.rescue.tmp: write failed: No space left on device")
    with open(dag + ".rescue", "rb") as f:
        if f.read() != before:
            c.fail("the rescue log changed although its rewrite failed")
    if os.path.exists(dag + ".rescue.tmp"):
        c.fail("PATH.tmp left behind")
    ran, _ = relutil.read_ledger(c.path("ledger"), pos)
    if ran:
        c.fail("%d tasks ran although the rescue log could not be rewritten" % len(ran))
    c.figures["done_before"] = len(relutil.Rescue(dag + ".rescue").done)
    c.rerun_completes(dag, names, c.check_rescue(dag, names))


def case_output_enospc(c):
    dag, names = c.ledger_dag(300, stdout=True)
    out = c.path("out.txt")
    r = Run(c.work, ["--host-cpus", "4", "--no-progress", "-o", out, dag], timeout=60,
            env=shim_env(PMC_FAULT_WRITE_PATH="out.txt", PMC_FAULT_WRITE_AFTER=4096))
    c.check_run(r, (1,), "out.txt.*No space left on device|No space left on device.*out.txt")
    left = relutil_stdio_files(dag)
    c.figures["per_rank_files_kept"] = len(left)
    if not left:
        c.fail("the per-rank stdio files are gone although the merge failed: output lost")
    done = c.check_rescue(dag, names)
    if done != names:
        c.fail("%d of %d tasks DONE: the tasks themselves succeeded" % (len(done), len(names)))
    r2 = Run(c.work, ["--host-cpus", "4", "--no-progress", "-o", out, dag], tag="rerun")
    c.check_run(r2, (0,), what="rerun")
    with open(out, "rb") as f:
        data = f.read().decode(errors="replace")
    lines = set(data.split("\n"))
    missing = [t for t in names if t not in lines]
    if missing:
        c.fail("after the rerun -o lacks the output of %d tasks, e.g. %s"
               % (len(missing), sorted(missing)[:3]))


def case_task_output(c, args, fault_path, after, where, ranks=1, close_fails=False):
    """A task's output (its block in the rank's file, or its record in its
    --per-task-stdio file) hits a full disk: that task fails and is not
    DONE, the run stops with exit 1 naming the full disk (also when the
    file's close then fails too: close_fails), every DONE task's output
    and successful record are in `where` (-o, or the task's own files),
    and a rerun without the fault completes the rest."""
    dag, names = c.ledger_dag(200, stdout=True)
    out = c.path("out.txt")
    argv = ["--host-cpus", "4", "--no-progress", "-o", out] + args
    faults = {"PMC_FAULT_CLOSE_PATH": fault_path} if close_fails else {}
    r = Run(c.work, argv + [dag], timeout=60, ranks=ranks,
            env=shim_env(PMC_FAULT_WRITE_PATH=fault_path, PMC_FAULT_WRITE_AFTER=after, **faults))
    c.check_run(r, (1,), r"Task t\d+ failed: its output could not be written to "
                         r"(its --per-task-stdio files|\S+wf.dag.out.\d or \S+wf.dag.err.\d): "
                         r"No space left on device")
    if 'stat="failed"' not in r.stdout:
        c.fail("no [cluster-summary stat=\"failed\"] record")
    done = c.check_rescue(dag, names)
    c.figures["done_at_failure"] = len(done)
    if done == names:
        c.fail("every task is DONE although a task's output was lost")
    # A block starts the file, follows a newline, or follows the zeros of a
    # block reserved before it whose write then failed (taskio.h: a block
    # cut short leaves zeros in its place; seen when the failing task's
    # thread wrote after the others had filled the 600 bytes).
    lost = [t for t in sorted(done) if not re.search(
        r"(^|\n|\x00)%s\n\[cluster-task name=%s, .*status=0," % (t, t), where(c, t))]
    if lost:
        c.fail("%d DONE tasks lack their output or record, e.g. %s" % (len(lost), lost[:3]))
    c.rerun_completes(dag, names, done, args)


def rank_output(c, _task):
    with open(c.path("out.txt"), "rb") as f:
        return f.read().decode(errors="replace")


def own_output(c, task):
    return "".join(open(c.path(f), errors="replace").read() for f in os.listdir(c.work)
                   if re.match(re.escape(task) + r"\.out\.\d+$", f))


def case_task_output_enospc(c):
    case_task_output(c, [], "wf.dag.out.0", 600, rank_output)


def case_task_output_pool(c):
    case_task_output(c, ["--launch-threads", "1"], "wf.dag.out.0", 600, rank_output)


def case_task_output_rank1(c):
    """Rank 1's agent (mpiexec -n 2 --ranks-are-hosts) aborts on its own:
    it waits for the master's ABORT before it stops receiving."""
    case_task_output(c, [], "wf.dag.out.1", 600, rank_output, ranks=2)


def case_task_record_enospc(c):
    case_task_output(c, ["--per-task-stdio"], "t0000070.out.000", 0, own_output)


def case_task_record_enospc_close_eio(c):
    """The record's write fails (ENOSPC), then its file's close (EIO): the
    message names the write's error, the first one."""
    case_task_output(c, ["--per-task-stdio"], "t0000070.out.000", 0, own_output,
                     close_fails=True)


CUT_DAG = """TASK big /bin/sh -c "head -c 200000 /dev/zero | tr '\\\\0' x; exit 0"
TASK small /bin/sh -c "head -c 10000 /dev/zero | tr '\\\\0' y; echo"
EDGE small big
"""
CUT_HELD_DAG = """TASK big -p 10 /bin/sh -c "head -c 200000 /dev/zero | tr '\\\\0' x; exit 0"
TASK b2 /bin/echo b2
TASK b3 /bin/echo b3
"""


def run_in_small_tmpdir(c, args, tag, fill=False):
    """pmc-hybrid with a 64 KiB tmpfs as $TMPDIR, in a mount namespace of
    its own (unshare), filled before the run when asked."""
    tmp = c.path("tmpfs-" + tag)
    os.mkdir(tmp)
    script = ('mount -t tmpfs -o size=64k none "$0" && %sTMPDIR="$0" exec "$@"'
              % ('{ dd if=/dev/zero of="$0/fill" bs=4k 2>/dev/null; true; } && ' if fill else ""))
    wrap = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, tmp]
    return Run(c.work, args, wrap=wrap, tag=tag)


def case_capture_full(c):
    """$TMPDIR, where a task's output waits until the task ends, is full (a
    64 KiB tmpfs, run_in_small_tmpdir()).  With and without a launcher pool:
    - a task that writes 200 KB to stdout and ignores the failed writes
      (exit 0) fails with status 256 and 'its output may be cut short',
      and is not DONE, while its parent (10 KB, run first: two at once
      could fill the tmpfs together) succeeds; a rerun with room runs it
      to success;
    - in a $TMPDIR full from the start, a task whose every write failed
      (nothing kept) fails the same way;
    - with -m 1 on one CPU, that failure holds the node like any other:
      the two other tasks never start (with a pool, the reaper would
      have started a staged one before the block showed the failure)."""
    for threads in ("0", "2"):
        dag = c.path("cut%s.dag" % threads)
        with open(dag, "w") as f:
            f.write(CUT_DAG)
        args = ["--no-progress", "--host-cpus", "2", "--launch-threads", threads]
        r = run_in_small_tmpdir(c, args + [dag], "cut" + threads)
        c.check_run(r, (1,), r"Task big failed: its output may be cut short: the file system "
                             r"of its capture files")
        statuses = dict(re.findall(r"\[cluster-task name=(\w+), .*?status=(\d+),", r.stdout))
        if statuses != {"big": "256", "small": "0"}:
            c.fail("--launch-threads %s: record statuses %s, expected big 256, small 0"
                   % (threads, statuses))
        done = relutil.Rescue(dag + ".rescue").done_set
        if done != {"small"}:
            c.fail("--launch-threads %s: DONE %s, expected small only" % (threads, sorted(done)))
        again = Run(c.work, args + [dag], tag="rerun" + threads)
        c.check_run(again, (0,), what="rerun")
        if not re.search(r"\[cluster-task name=big, .*status=0,", again.stdout):
            c.fail("--launch-threads %s: the rerun's big did not succeed" % threads)

        full = c.path("full%s.dag" % threads)
        with open(full, "w") as f:
            f.write('TASK report /bin/sh -c "echo result=42; echo done >&2; exit 0"\n')
        r = run_in_small_tmpdir(c, args + [full], "full" + threads, fill=True)
        c.check_run(r, (1,), r"Task report failed: its output may be cut short", what="full")
        if relutil.Rescue(full + ".rescue").done_set:
            c.fail("--launch-threads %s: a task whose output was all lost is DONE" % threads)

        held = c.path("held%s.dag" % threads)
        with open(held, "w") as f:
            f.write(CUT_HELD_DAG)
        r = run_in_small_tmpdir(c, ["--no-progress", "--host-cpus", "1", "-m", "1",
                                    "--launch-threads", "1" if threads == "2" else "0", held],
                                "held" + threads)
        c.check_run(r, (1,), r"Max failures reached", what="-m 1")
        ran = sorted(re.findall(r"\[cluster-task name=(\w+),", r.stdout))
        if ran != ["big"]:
            c.fail("-m 1 (--launch-threads %s): ran %s, expected big only"
                   % ("1" if threads == "2" else "0", ran))


GRACE_LEADER = """trap 'sleep 0.2; exit 143' TERM
sh -c "trap '' TERM; exec sleep 30" &
wait
"""


def case_grace_end_during_reap(c):
    """A task's first process ends in its grace (0.2 s after SIGTERM) and
    leaves a process that ignores SIGTERM; its reaper, a launcher thread,
    is slow to reap it (every blocking waitid sleeps 600 ms first: the
    shim), so the grace ends (--kill-grace 0.5) while the pool holds the
    task and the agent's SIGKILL is refused.  The task comes back
    lingering and must get that SIGKILL then: the run ends, nothing is
    left (before: it waited for the group for ever).  At a time-out, and
    at the abort of --max-wall-time."""
    lead = c.path("lead.sh")
    with open(lead, "w") as f:
        f.write(GRACE_LEADER)
    for what, task_opts, run_opts, message in (
            ("time-out", "--time-limit 0.3 ", [], r"Task x exceeded its time limit of 0.3 s"),
            ("abort", "", ["--max-wall-time", "0.02"], r"Max wall time")):
        dag = c.path("grace-%s.dag" % what)
        with open(dag, "w") as f:
            f.write("TASK x %s/bin/sh %s\n" % (task_opts, lead))
        r = Run(c.work, ["--no-progress", "--host-cpus", "2", "--launch-threads", "2",
                         "--kill-grace", "0.5"] + run_opts + [dag], timeout=20,
                env=shim_env(PMC_FAULT_REAP_DELAY_MS=600), tag=what)
        c.check_run(r, (1,), message, what=what)
        if "faultshim: delaying reaps" not in r.stderr:
            c.fail("%s: the shim did not delay a reap" % what)


def lost_at_the_end(c, dag, names, args, env, message, lost, ranks=1, rerun_args=None):
    """Every task succeeds, but output is lost when a file is closed or a
    log is written: the run must say so and exit 1 (stat="failed"), the
    rescue log stays consistent and lists exactly the tasks whose output
    was not lost (lost(r): the names whose output was, from the run r),
    and a rerun without the fault exits 0, running exactly those."""
    r = Run(c.work, ["--host-cpus", "4", "--no-progress"] + args + [dag], timeout=60, env=env,
            ranks=ranks)
    c.check_run(r, (1,), message)
    if 'stat="failed"' not in r.stdout:
        c.fail("no [cluster-summary stat=\"failed\"] record: %s" % r.stdout[-300:])
    done = c.check_rescue(dag, names)
    gone = lost(r)
    c.figures["done"], c.figures["lost"] = len(done), len(gone)
    if done != names - gone:
        c.fail("%d tasks DONE, expected the %d whose output was not lost (%d DONE of those lost, "
               "%d not DONE of the others)" % (len(done), len(names - gone), len(done & gone),
                                                len(names - gone - done)))
    if gone and not re.search(r"Task output lost: %d tasks \(\w+(, \.\.\.)?\) will run again"
                              % len(gone), r.stderr):
        c.fail("no \"Task output lost: %d tasks ... will run again\" in its log" % len(gone))
    c.rerun_completes(dag, names, done, rerun_args)


def ran_on_slot(r, slot):
    """The tasks whose [cluster-task] records say rank `slot` ran them."""
    return set(re.findall(r"\[cluster-task name=(\w+),.*slot=%d," % slot, r.stdout))


def case_close_rank_output(c):
    dag, names = c.ledger_dag(100, stdout=True)
    lost_at_the_end(c, dag, names, [], shim_env(PMC_FAULT_CLOSE_PATH="wf.dag.out.0"),
                    r"Task output may be lost: closing \S*wf.dag.out.0 failed: "
                    r"Input/output error", lambda r: names)


def case_close_rank_output_2(c):
    """Two hosts (--ranks-are-hosts): only the tasks rank 1 ran lost their
    output; rank 0's stay DONE."""
    dag, names = c.ledger_dag(100, stdout=True)

    def lost(r):
        ones, zeros = ran_on_slot(r, 1), ran_on_slot(r, 0)
        if not ones or not zeros or ones | zeros != names:
            c.fail("rank 0 ran %d tasks and rank 1 %d, of %d: both must run some"
                   % (len(zeros), len(ones), len(names)))
        return ones
    lost_at_the_end(c, dag, names, [], shim_env(PMC_FAULT_CLOSE_PATH="wf.dag.out.1"),
                    r"closing \S*wf.dag.out.1 failed: Input/output error", lost, ranks=2)


def case_close_output(c):
    dag, names = c.ledger_dag(100, stdout=True)
    out = ["-o", c.path("out.txt")]
    lost_at_the_end(c, dag, names, out, shim_env(PMC_FAULT_CLOSE_PATH="out.txt"),
                    r"Task output may be lost: closing \S*out.txt failed: Input/output error",
                    lambda r: names, rerun_args=out)


def case_close_forward(c):
    """Forwarded files (-F) to 30 destinations through --maxfds 4: the
    close at an eviction fails once.  Which destination failed is not
    told, so the 30 tasks that forward run again; 10 that do not stay
    DONE."""
    dag = c.path("wf.dag")
    names, forwarders = set(), set()
    with open(dag, "w") as f:
        for i in range(30):
            n = "t%07d" % i
            forwarders.add(n)
            f.write("TASK %s -F %s=%s /bin/sh -c 'echo %s >> %s; echo %s > %s'\n"
                    % (n, c.path("src." + n), c.path("dest/lost.%d" % i if i == 3 else
                                                      "dest/%s" % n),
                       n, c.path("ledger"), n, c.path("src." + n)))
        for i in range(30, 40):
            f.write("TASK t%07d /bin/sh -c 'echo t%07d >> %s'\n" % (i, i, c.path("ledger")))
            names.add("t%07d" % i)
    names |= forwarders
    lost_at_the_end(c, dag, names, ["--maxfds", "4"], shim_env(PMC_FAULT_CLOSE_PATH="lost.3"),
                    r"Forwarded output may be lost: \S*lost.3: Input/output error",
                    lambda r: forwarders, rerun_args=["--maxfds", "4"])


def case_jobstate_enospc(c):
    dag, names = c.ledger_dag(100, stdout=False)
    lost_at_the_end(c, dag, names, ["--jobstate-log"],
                    shim_env(PMC_FAULT_WRITE_PATH="jobstate.log", PMC_FAULT_WRITE_AFTER=2000),
                    r"jobstate.log: \S*jobstate.log: .*No space left on device",
                    lambda r: set())  # Pegasus's log lost lines, no task its output


def relutil_stdio_files(dag):
    folder, base = os.path.split(dag)
    return [f for f in os.listdir(folder) if re.match(re.escape(base) + r"\.(out|err)\.\d+$", f)]


def case_fsize_limit(c):
    limit = 24 << 20
    dag = c.path("wf.dag")
    with open(dag, "w") as f:
        for i in range(40):
            f.write("TASK big%02d /bin/sh -c \"head -c 1048576 /dev/zero\"\n" % i)

    def pre():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    r = Run(c.work, ["--host-cpus", "4", "--no-progress", "-o", c.path("out.txt"), dag],
            timeout=120, preexec=pre)
    c.check_run(r, (0, 1), "File too large|failed with exitcode")
    c.figures["exit"] = r.rc
    c.figures["messages"] = sorted(set(re.findall(r"\[(?:fatal|error)\] ([^:\n]{0,60})",
                                                   r.stderr)))[:4]
    snap = relutil.Rescue(dag + ".rescue")
    if snap.bad:
        c.fail("rescue log has bad lines")


# ---- descriptors ------------------------------------------------------------------


def case_emfile(c):
    dag, names = c.ledger_dag(200, stdout=True)
    outcomes = {}
    for n in (24, 32, 48, 64, 128, 256):  # below ~20 MPI_Init_thread itself aborts
        for f in (dag + ".rescue", c.path("out.txt")):
            if os.path.exists(f):
                os.unlink(f)

        def pre(n=n):
            resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
        r = Run(c.work, ["--host-cpus", "4", "--no-progress", "-o", c.path("out.txt"), dag],
                timeout=15, preexec=pre, tag="nofile%d" % n)
        c.check_run(r, (0, 1), what="RLIMIT_NOFILE %d" % n)
        if r.rc == 1 and not re.search(r"Too many open files|descriptors", r.stderr):
            c.fail("RLIMIT_NOFILE %d: exit 1 without a message about descriptors: %s"
                   % (n, r.describe()))
        if r.rc == 0:
            c.check_rescue(dag, names)
            if relutil.Rescue(dag + ".rescue").done_set != names:
                c.fail("RLIMIT_NOFILE %d: exit 0 but not every task DONE" % n)
        first = re.search(r"\[(?:fatal|error)\] (.{0,70})", r.stderr)
        outcomes[n] = "exit %s%s" % (r.rc, (": " + first.group(1)) if first and r.rc else "")
    c.figures["outcomes"] = outcomes


# ---- hostile tasks ----------------------------------------------------------------


def case_daemon(c):
    dag = c.path("wf.dag")
    with open(dag, "w") as f:
        f.write("TASK quiet /bin/sh -c \"sleep 30 </dev/null >/dev/null 2>&1 & echo quiet\"\n")
        f.write("TASK holder /bin/sh -c \"(sleep 30 &) ; echo holder\"\n")
        f.write("TASK setsid /bin/sh -c \"setsid sleep 30 </dev/null >/dev/null 2>&1 & echo s\"\n")
        f.write("TASK after /bin/echo after\nEDGE quiet after\nEDGE holder after\n")
    r = Run(c.work, ["--host-cpus", "4", "--no-progress", "-o", c.path("out.txt"), dag],
            timeout=20)
    c.figures["seconds"] = round(r.elapsed, 2)
    c.figures["daemons_left"] = len(r.leftovers)
    c.check_run(r, (0,))
    if r.elapsed > 10:
        c.fail("pmc-hybrid waited %.1f s for its tasks' background processes" % r.elapsed)


def case_closed_stdio(c):
    dag = c.path("wf.dag")
    with open(dag, "w") as f:
        f.write("TASK no_out /bin/sh -c \"exec 1>&-; echo to-stderr >&2\"\n")
        f.write("TASK no_err /bin/sh -c \"exec 2>&-; echo to-stdout\"\n")
        f.write("TASK neither /bin/sh -c \"exec 1>&- 2>&-; true\"\n")
        f.write("TASK after /bin/echo after\nEDGE no_out after\nEDGE neither after\n")
    out = c.path("out.txt")
    r = Run(c.work, ["--host-cpus", "4", "--no-progress", "-o", out, "-e", c.path("err.txt"), dag],
            timeout=30)
    c.check_run(r, (0,))
    with open(out) as f:
        data = f.read()
    for t in ("no_out", "no_err", "neither", "after"):
        if not re.search(r"\[cluster-task name=%s, .*status=0," % t, data):
            c.fail("no successful record of %s in -o" % t)
    if "to-stdout" not in data:
        c.fail("lost the output of no_err")


def case_big_stdout(c):
    mb = ARGS.big_mb
    dag = c.path("wf.dag")
    with open(dag, "w") as f:
        f.write("TASK big /bin/sh -c \"head -c %d /dev/zero | tr '\\\\0' x\"\n" % (mb << 20))
        f.write("TASK small /bin/echo small\n")
    out = c.path("out.txt")
    t0 = time.monotonic()
    r = Run(c.work, ["--host-cpus", "4", "--no-progress", "-o", out, dag], timeout=600)
    c.check_run(r, (0,))
    size = os.path.getsize(out) if os.path.exists(out) else 0
    c.figures["mb"] = mb
    c.figures["seconds"] = round(time.monotonic() - t0, 1)
    c.figures["out_bytes"] = size
    if size < (mb << 20):
        c.fail("-o holds %d bytes, less than the %d MB written" % (size, mb))
    with open(out, "rb") as f:
        f.seek(mb << 19)
        if f.read(4096) != b"x" * 4096:
            c.fail("-o does not hold the task's bytes in the middle")
    os.unlink(out)  # do not keep GBs around
    for f in relutil_stdio_files(dag):
        os.unlink(os.path.join(c.work, f))
    c.figures["max_fds"] = r.max_fds
    c.figures["engine_peak_rss_mb"] = round(r.max_rss_kb / 1024, 1)
    if r.max_rss_kb > 256 * 1024:
        c.fail("pmc-hybrid's resident memory reached %d MB for %d MB of output"
               % (r.max_rss_kb >> 10, mb))


# ---- allocations ------------------------------------------------------------------


def count_allocs(c, dag, ranks):
    report = c.path("count.%d" % ranks)
    Run(c.work, ["--host-cpus", "4", "--no-progress", "-s", dag], ranks=ranks,
        env=shim_env(PMC_FAULT_MALLOC_NTH=1 << 40, PMC_FAULT_REPORT=report), tag="count")
    counts = []
    with open(report) as f:
        for line in f:
            counts.append(int(line.split()[3]))
    return max(counts) if counts else 0


def failing_site(stderr):
    """'function file:line < caller < ...' of the failed allocation."""
    addrs = re.findall(r"pmc-hybrid\(\+(0x[0-9a-f]+)\)", stderr.split("faultshim: failing", 1)[-1])
    if not addrs:
        return "?"
    try:
        out = subprocess.run(["addr2line", "-f", "-s", "-e", ARGS.bin] +
                             ["0x%x" % (int(a, 16) - 1) for a in addrs[:4]],
                             capture_output=True, text=True, timeout=10).stdout.split("\n")
        return " < ".join("%s %s" % (out[i], out[i + 1]) for i in range(0, len(out) - 1, 2))
    except (OSError, subprocess.SubprocessError):
        return " ".join(addrs[:4])


def case_malloc(c):
    dag, names = c.ledger_dag(120, stdout=True)
    bad = {}
    runs = 0
    for ranks in (1, 2):
        total = count_allocs(c, dag, ranks)
        c.figures["allocs_ranks%d" % ranks] = total
        if total == 0:
            c.fail("the shim counted no allocation of pmc-hybrid (ranks %d)" % ranks)
            continue
        for mode in ("once", "from"):
            step = ARGS.malloc_step if mode == "once" else max(ARGS.malloc_step, 7)
            for n in range(1, total + 1, step):
                for f in (dag + ".rescue",):
                    if os.path.exists(f):
                        os.unlink(f)
                r = Run(c.work, ["--host-cpus", "4", "--no-progress", dag], ranks=ranks,
                        timeout=ARGS.malloc_timeout, tag="m",
                        env=shim_env(PMC_FAULT_MALLOC_NTH=n, PMC_FAULT_MALLOC_MODE=mode))
                runs += 1
                outcome = None
                if r.timed_out:
                    outcome = "hang"
                elif r.rc not in (0, 1):
                    outcome = "exit %s" % r.rc
                elif r.leftovers:
                    outcome = "leftover processes"
                if outcome:
                    site = failing_site(r.stderr)
                    key = (outcome, site)
                    bad.setdefault(key, []).append("%s/%d/ranks%d" % (mode, n, ranks))
    c.figures["runs"] = runs
    for (outcome, site), where in sorted(bad.items()):
        c.fail("%s when this allocation fails (%d runs, e.g. %s): %s"
               % (outcome, len(where), ", ".join(where[:3]), site))


CASES = {
    "rescue-enospc": case_rescue_enospc,
    "rescue-efbig": case_rescue_efbig,
    "rescue-eio": case_rescue_eio,
    "rewrite-enospc": case_rewrite_enospc,
    "output-enospc": case_output_enospc,
    "task-output-enospc": case_task_output_enospc,
    "task-output-pool": case_task_output_pool,
    "task-output-rank1": case_task_output_rank1,
    "task-record-enospc": case_task_record_enospc,
    "task-record-enospc-close-eio": case_task_record_enospc_close_eio,
    "capture-full": case_capture_full,
    "grace-end-during-reap": case_grace_end_during_reap,
    "close-rank-output": case_close_rank_output,
    "close-rank-output-2": case_close_rank_output_2,
    "close-output": case_close_output,
    "close-forward": case_close_forward,
    "jobstate-enospc": case_jobstate_enospc,
    "fsize-limit": case_fsize_limit,
    "emfile": case_emfile,
    "daemon": case_daemon,
    "closed-stdio": case_closed_stdio,
    "big-stdout": case_big_stdout,
    "malloc": case_malloc,
}


def main():
    global ARGS
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.abspath(os.path.join(here, "..", ".."))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", default=os.path.join(src, "build", "pmc-hybrid"))
    p.add_argument("--shim", default=os.path.join(src, "build", "tests", "reliability",
                                                  "libpmcfault.so"))
    p.add_argument("--mpiexec", default="mpiexec")
    p.add_argument("-k", dest="cases", action="append", choices=sorted(CASES))
    p.add_argument("--big-mb", type=int, default=200)
    p.add_argument("--malloc-step", type=int, default=1)
    p.add_argument("--malloc-timeout", type=float, default=20)
    p.add_argument("--keep", action="store_true")
    ARGS = p.parse_args()
    ARGS.bin = os.path.abspath(ARGS.bin)
    ARGS.shim = os.path.abspath(ARGS.shim)
    for what, path in (("--bin", ARGS.bin), ("--shim", ARGS.shim)):
        if not os.path.exists(path):
            print("%s not found: %s" % (what, path))
            return 1
    print("faults: %s, %s" % (ARGS.bin, relutil.machine()))
    failed = 0
    for name in ARGS.cases or list(CASES):
        c = Case(name)
        t0 = time.monotonic()
        try:
            CASES[name](c)
        except Exception as e:  # a broken case is a failure, not a crash of the runner
            c.fail("%s: %r" % (type(e).__name__, e))
        figs = ", ".join("%s=%s" % kv for kv in sorted(c.figures.items()))
        print("%-15s %s (%.1f s)%s" % (name, "FAILED" if c.problems else "ok",
                                       time.monotonic() - t0, "  " + figs if figs else ""),
              flush=True)
        for prob in c.problems:
            print("    - " + prob.replace("\n", "\n      "))
        failed += bool(c.problems)
        if c.problems or ARGS.keep:
            print("    work directory: %s" % c.work)
        else:
            shutil.rmtree(c.work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
