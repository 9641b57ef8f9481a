#!/usr/bin/env python3
"""orphans.py - no task process may outlive its pmc-hybrid (issue 13,
"no leak of processes").

Each task runs in a process group of its own (so that the agent can signal
the whole task), so nobody but the agent signals it.  An orderly end (a
signal pmc-hybrid handles, --max-wall-time, a failed run) terminates every
task: TERM, grace, KILL.  But when the engine itself dies without cleaning
up -- SIGKILL from the OOM killer or a user, or hydra's proxy killing every
rank after one rank died (rank_loss.py) -- its tasks are re-parented to
init and go on running: a restart then runs the same task a second time
while the first still writes its outputs.

Cases (each a DAG of `sleep 60` tasks, checked 1 s after the event):
  sigterm    1 rank, pmc-hybrid gets SIGTERM: no task left (control case);
  sigkill    1 rank, the engine process alone gets SIGKILL: no task left;
  rank-loss  mpiexec -n 4 --ranks-are-hosts, one rank other than 0 gets
             SIGKILL; hydra kills the other ranks: no task of any rank left.
In each case what the running tasks wrote so far survives: in the rank
files, with a note naming each task after a SIGKILL (the watchdog saves
their capture files), or in the blocks of the orderly end after SIGTERM.
The last two are caught by each agent's watchdog (engine/exec/watchdog.h), a
process in a session of its own that kills the recorded task process
groups when its agent's process dies (docs/reliability.md, "Orphaned
tasks").  Every leftover process is killed before the test ends.

Usage: orphans.py --bin build/pmc-hybrid [--mpiexec mpiexec] [-k CASE]
Exit status 0 when no case leaves a process behind.
"""

import argparse
import os
import re
import shutil
import signal
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import relutil  # noqa: E402
from rank_loss import job_sessions, rank_pids  # noqa: E402

SLOTS = 4


def write_dag(path, n):
    with open(path, "w") as f:
        for i in range(n):
            f.write("TASK s%02d /bin/sh -c \"echo begun s%02d; echo begun-err s%02d >&2; "
                    "sleep 60; echo s%02d\"\n" % (i, i, i, i))


def running_tasks(sessions):
    """Pids of `sleep 60` processes in the given sessions."""
    found = []
    for pid, (state, _, sid) in relutil.processes().items():
        if state == "Z" or sid not in sessions:
            continue
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if f.read().split(b"\0")[:2] == [b"sleep", b"60"]:
                    found.append(pid)
        except OSError:
            pass
    return found


def alive(pids):
    procs = relutil.processes()
    return [p for p in pids if p in procs and procs[p][0] != "Z"]


def describe(pids):
    out = []
    for pid in pids:
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                out.append("%d (%s)" % (pid, f.read().replace(b"\0", b" ").decode().strip()))
        except OSError:
            pass
    return ", ".join(out)


def wait_for(pred, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    return pred()


def read_all(work, names):
    """The text of the files of work whose names start with one of names."""
    text = ""
    for f in sorted(os.listdir(work)):
        if f.startswith(names):
            with open(os.path.join(work, f), errors="replace") as fh:
                text += fh.read()
    return text


def output_problems(name, work, want):
    """What the running tasks wrote before the end (`begun NAME` on stdout,
    `begun-err NAME` on stderr) must be in the rank files or pmc-hybrid's
    own stdout/stderr: at least `want` tasks of each; after a SIGKILL each
    with the watchdog's note naming it (engine/exec/watchdog.h)."""
    out = read_all(work, ("wf.dag.out.", "out"))
    err = read_all(work, ("wf.dag.err.", "err"))
    problems = []
    begun = sorted(set(re.findall(r"^begun (s\d+)$", out, re.M)))
    begun_err = sorted(set(re.findall(r"^begun-err (s\d+)$", err, re.M)))
    if len(begun) < want or len(begun_err) < want:
        problems.append("the output of %d and the stderr of %d tasks survived, expected %d"
                        % (len(begun), len(begun_err), want))
    for task in begun if name != "sigterm" else ():
        note = "pmc-hybrid: task %s cut short" % task
        if note not in out or note not in err:
            problems.append("no note for %s in its rank's out and err files" % task)
    return "; ".join(problems) or None


def case(name, args, work):
    dag = os.path.join(work, "wf.dag")
    ranks = 4 if name == "rank-loss" else 1
    write_dag(dag, 2 * SLOTS * ranks)
    opts = ["--host-cpus", str(SLOTS), "--no-progress", "--launch-threads",
            str(args.launch_threads), dag]
    if ranks == 1:
        argv = [args.bin] + opts
    else:
        argv = [args.mpiexec, "-n", str(ranks), args.bin, "--ranks-are-hosts"] + opts
    proc = relutil.start(argv, work, os.path.join(work, "out"), os.path.join(work, "err"),
                         env=relutil.clean_env())
    want = SLOTS * ranks
    sessions = set()

    def started():
        sessions.update(job_sessions(proc.pid))
        return len(running_tasks(sessions)) >= want
    if not wait_for(started, 30):
        relutil.kill_tree(proc.pid)
        return "only %d of %d tasks started" % (len(running_tasks(sessions)), want)
    tasks = running_tasks(sessions)
    if name == "sigterm":
        os.kill(proc.pid, signal.SIGTERM)
    elif name == "sigkill":
        os.kill(proc.pid, signal.SIGKILL)
    else:
        os.kill(rank_pids(proc.pid)[2], signal.SIGKILL)
    try:
        proc.wait(timeout=60)
    except Exception:
        relutil.kill_tree(proc.pid)
        return "pmc-hybrid did not end within 60 s"
    time.sleep(1.0)
    left = alive(tasks)
    text = describe(left)
    for pid in left:  # re-parented to init: kill them here
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    relutil.kill_tree(proc.pid)
    for sid in sessions:
        relutil.kill_tree(sid, timeout=2)
    if left:
        return ("%d of %d task processes outlive pmc-hybrid (exit %s) by 1 s: %s"
                % (len(left), len(tasks), proc.returncode, text[:300]))
    return output_problems(name, work, want)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.abspath(os.path.join(here, "..", ".."))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", default=os.path.join(src, "build", "pmc-hybrid"))
    p.add_argument("--mpiexec", default="mpiexec")
    p.add_argument("-k", dest="cases", action="append",
                   choices=("sigterm", "sigkill", "rank-loss"))
    p.add_argument("--launch-threads", type=int, default=0,
                   help="pmc-hybrid's launcher pool: tasks die with the thread that "
                        "spawned them, a launcher's as well as the agent's")
    args = p.parse_args()
    args.bin = os.path.abspath(args.bin)
    if not os.access(args.bin, os.X_OK) or shutil.which(args.mpiexec) is None:
        print("need an executable --bin (%s) and --mpiexec (%s)" % (args.bin, args.mpiexec))
        return 1
    failed = 0
    for name in args.cases or ("sigterm", "sigkill", "rank-loss"):
        work = tempfile.mkdtemp(prefix="pmc-orphans-")
        t0 = time.monotonic()
        why = case(name, args, work)
        print("%-10s %s (%.1f s)" % (name, "FAILED: " + why if why else "ok",
                                     time.monotonic() - t0), flush=True)
        failed += why is not None
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
