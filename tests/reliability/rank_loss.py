#!/usr/bin/env python3
"""rank_loss.py - kill -9 one node agent rank of `mpiexec -n 4 pmc-hybrid
--ranks-are-hosts` mid-run (issue 13, docs/design.md section 6).

MPICH cannot survive a dead rank (docs/reliability.md, "Rank loss", and
mpi_survive.c), so the promise is: the whole job ends within a bounded
time, the rescue log is consistent, and a rerun completes only the rest.

The workflow: N tasks in layers, each sleeping a little and appending its
name to a ledger.  Once the rescue log holds a tenth of the tasks, one rank
other than 0 (picked at random; its pid found through PMI_RANK in the
environment of the rank processes) gets SIGKILL, as from the OOM killer.
Checks:
  1. mpiexec exits, non-zero, within --bound seconds of the kill, and every
     rank process is gone by then (hydra's proxy SIGKILLs the other ranks);
  2. the rescue log parses: complete DONE records of known tasks, at most a
     torn last line; every DONE task ran (is in the ledger);
  3. the same command run again exits 0, runs no task that was DONE at the
     kill, runs every other task exactly once, and leaves every task DONE;
     dependency order holds in the ledger.
Task processes of the killed job that outlive it (they sit in process
groups of their own, which hydra does not signal) are counted and reported,
then killed before the rerun; orphans.py is the test that they do not
exist.

Usage: rank_loss.py --bin build/pmc-hybrid [--mpiexec mpiexec] [--tasks 1200]
                    [--ranks 4] [--rounds 1] [--seed S]
Exit status 0 when every check holds.  Python 3 standard library only.
"""

import argparse
import os
import random
import shutil
import signal
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import relutil  # noqa: E402


def rank_pids(root):
    """{rank: pid} of the MPI processes under root (PMI_RANK in their
    environment, parent a hydra proxy)."""
    procs = relutil.processes()
    tree = relutil.process_tree(root, procs)
    ranks = {}
    for pid in tree:
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                env = f.read().split(b"\0")
            with open("/proc/%d/cmdline" % procs[pid][1], "rb") as f:
                parent = f.read()
        except OSError:
            continue
        if b"hydra_pmi_proxy" not in parent:
            continue
        for e in env:
            if e.startswith(b"PMI_RANK="):
                ranks[int(e[9:])] = pid
    return ranks


def job_sessions(root):
    """Sessions of root's process tree (mpiexec, proxy, ranks, tasks)."""
    procs = relutil.processes()
    tree = relutil.process_tree(root, procs)
    return {procs[p][2] for p in tree if p in procs}


def alive_in(sessions):
    return [pid for pid, (st, _, sid) in relutil.processes().items()
            if st != "Z" and sid in sessions]


class RankLoss:
    def __init__(self, args, work, round_no):
        self.args, self.work = args, work
        self.rng = random.Random(args.seed + round_no)
        self.dag = os.path.join(work, "wf.dag")
        self.ledger = os.path.join(work, "ledger")
        self.rescue = self.dag + ".rescue"
        self.parents = relutil.ledger_dag(self.dag, args.tasks, self.ledger, width=40,
                                          seed=args.seed + round_no, stdout=False,
                                          sleep=args.task_seconds)
        self.names = set(self.parents)
        self.problems = []
        self.figures = {}

    def argv(self):
        return [self.args.mpiexec, "-n", str(self.args.ranks), self.args.bin,
                "--ranks-are-hosts", "--host-cpus", str(self.args.host_cpus), "--no-progress",
                self.dag]

    def problem(self, text):
        self.problems.append(text)
        print("PROBLEM: " + text, flush=True)

    def first_run(self):
        env = relutil.clean_env()
        proc = relutil.start(self.argv(), self.work, os.path.join(self.work, "out.1"),
                             os.path.join(self.work, "err.1"), env=env)
        want = max(1, len(self.names) // 10)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if len(relutil.Rescue(self.rescue).done) >= want:
                break
            time.sleep(0.01)
        if proc.poll() is not None:
            self.problem("the run ended (exit %s) before %d tasks were DONE"
                         % (proc.returncode, want))
            return None
        ranks = rank_pids(proc.pid)
        if sorted(ranks) != list(range(self.args.ranks)):
            relutil.kill_tree(proc.pid)
            self.problem("could not find the %d rank processes (found %s)"
                         % (self.args.ranks, sorted(ranks)))
            return None
        victim = self.rng.randrange(1, self.args.ranks)
        sessions = job_sessions(proc.pid)
        done_before = len(relutil.Rescue(self.rescue).done)
        t_kill = time.monotonic()
        os.kill(ranks[victim], signal.SIGKILL)
        try:
            proc.wait(timeout=self.args.bound)
            t_end = time.monotonic() - t_kill
        except Exception:
            t_end = None
        ranks_left = [p for r, p in ranks.items() if p in alive_in(sessions)]
        if t_end is None:
            self.problem("mpiexec still runs %.0f s after rank %d was killed"
                         % (self.args.bound, victim))
        elif proc.returncode == 0:
            self.problem("mpiexec exited 0 after rank %d was killed" % victim)
        if ranks_left:
            self.problem("rank processes %s outlive the job" % ranks_left)
        time.sleep(0.5)  # what is still alive now outlives the job
        orphans = alive_in(sessions)
        relutil.kill_tree(proc.pid)
        for pid in orphans:  # reparented to init: not in proc's tree any more
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        deadline = time.monotonic() + 10
        while alive_in(sessions) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.figures.update({"victim": victim, "done_at_kill": done_before,
                             "end_s": None if t_end is None else round(t_end, 3),
                             "mpiexec_exit": proc.returncode,
                             "orphans_after_0.5s": len(orphans)})
        return True

    def check_rescue(self):
        snap = relutil.Rescue(self.rescue)
        if snap.bad:
            self.problem("rescue log has bad lines %s" % snap.bad[:3])
        unknown = snap.done_set - self.names
        if unknown:
            self.problem("rescue log names unknown tasks %s" % sorted(unknown)[:3])
        ran, self.ledger_pos = relutil.read_ledger(self.ledger)
        never = snap.done_set - set(ran)
        if never:
            self.problem("%d tasks DONE in the rescue log never ran, e.g. %s"
                         % (len(never), sorted(never)[:3]))
        self.figures["done_after_kill"] = len(snap.done_set)
        self.figures["torn_tail"] = snap.torn != b""
        self.ran_before = ran
        return snap.done_set

    def rerun(self, done):
        t0 = time.monotonic()
        proc = relutil.start(self.argv(), self.work, os.path.join(self.work, "out.2"),
                             os.path.join(self.work, "err.2"), env=relutil.clean_env())
        try:
            proc.wait(timeout=self.args.run_timeout)
        except Exception:
            self.problem("the rerun did not end within %ds" % self.args.run_timeout)
        relutil.kill_tree(proc.pid)
        proc.wait()
        self.figures["rerun_s"] = round(time.monotonic() - t0, 2)
        if proc.returncode != 0:
            with open(os.path.join(self.work, "err.2"), errors="replace") as f:
                self.problem("the rerun exited %s:\n%s" % (proc.returncode, f.read()[-2000:]))
        ran, _ = relutil.read_ledger(self.ledger, self.ledger_pos)
        again = sorted(set(ran) & done)
        if again:
            self.problem("%d tasks DONE at the kill ran again: %s" % (len(again), again[:5]))
        rest = self.names - done
        counts = {}
        for t in ran:
            counts[t] = counts.get(t, 0) + 1
        missing = sorted(rest - set(counts))
        twice = sorted(t for t, n in counts.items() if n > 1)
        if missing:
            self.problem("%d tasks not DONE at the kill did not run in the rerun: %s"
                         % (len(missing), missing[:5]))
        if twice:
            self.problem("tasks ran more than once in the rerun: %s" % twice[:5])
        seen = set()
        for t in self.ran_before + ran:
            bad = [p for p in self.parents.get(t, []) if p not in seen]
            if bad:
                self.problem("%s ran before its parent(s) %s" % (t, bad))
                break
            seen.add(t)
        final = relutil.Rescue(self.rescue)
        if final.done_set != self.names or final.torn or final.bad:
            self.problem("after the rerun the rescue log holds %d of %d tasks (torn %r)"
                         % (len(final.done_set & self.names), len(self.names), final.torn[:30]))
        self.figures["rerun_tasks"] = len(ran)

    def run(self):
        if self.first_run():
            done = self.check_rescue()
            self.rerun(done)
        return self.figures


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.abspath(os.path.join(here, "..", ".."))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", default=os.path.join(src, "build", "pmc-hybrid"))
    p.add_argument("--mpiexec", default="mpiexec")
    p.add_argument("--tasks", type=int, default=1200)
    p.add_argument("--task-seconds", type=float, default=0.02)
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--host-cpus", type=int, default=2)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--bound", type=float, default=30.0,
                   help="seconds within which the whole job must end after the kill")
    p.add_argument("--run-timeout", type=int, default=300)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--keep", action="store_true")
    args = p.parse_args()
    if args.seed is None:
        args.seed = random.randrange(1 << 30)
    args.bin = os.path.abspath(args.bin)  # runs start in their own directories
    if not os.access(args.bin, os.X_OK) or shutil.which(args.mpiexec) is None:
        print("need an executable --bin (%s) and --mpiexec (%s)" % (args.bin, args.mpiexec))
        return 1
    print("rank loss: mpiexec -n %d --ranks-are-hosts, %d tasks, seed %d, %s"
          % (args.ranks, args.tasks, args.seed, relutil.machine()))
    failed = 0
    ends = []
    for r in range(args.rounds):
        work = tempfile.mkdtemp(prefix="pmc-rankloss-")
        case = RankLoss(args, work, r)
        fig = case.run()
        print("  round %d: %s" % (r + 1, ", ".join("%s=%s" % kv for kv in sorted(fig.items()))),
              flush=True)
        if fig.get("end_s") is not None:
            ends.append(fig["end_s"])
        if case.problems:
            failed += 1
            print("  work directory kept: %s" % work)
        elif not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if ends:
        print("  job end after the kill: min %.3f s, max %.3f s over %d round(s)"
              % (min(ends), max(ends), len(ends)))
    print("  rounds failed: %d of %d" % (failed, args.rounds))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
