#!/usr/bin/env python3
"""kill_campaign.py - kill -9 pmc-hybrid again and again; prove it loses no
finished work and reruns only what was in flight (issue 13, docs/design.md
section 6).

The workflow: N tiny tasks in layers (each task has one or two parents in
the layer before), each appending its name to a ledger file with O_APPEND
and printing it.  pmc-hybrid runs it (1 rank, or `mpiexec -n 2
--ranks-are-hosts`); the campaign kills the whole session with SIGKILL at K
moments and restarts the same command each time, until a run exits 0.

Kill moments, in rotation:
  random   a random time into the run (scaled so that K kills fit the work);
  startup  0-30 ms after the launch (MPI start-up, DAG load, rescue read);
  rewrite  as soon as PATH.rescue.tmp exists: the start-up rewrite of the
           rescue log (PATH.tmp, fsync, rename) is under way;
  commit   right after the rescue log has grown: during a group-commit burst;
  merge    once every task is DONE (the rescue log holds every record) or
           -o has begun: during the shutdown and the final stdio merge; the
           report counts the kills that came while -o was being written.

After each kill (every process of the session gone) the campaign takes a
snapshot of the ledger and of the rescue log's complete DONE records, and
checks:
  1. the rescue log parses: only complete DONE records of known tasks, at
     most a torn last line (and a restart never fails on it);
  2. DONE never goes back: every task DONE at kill k is DONE at kill k+1;
  3. no task DONE at a kill ever runs again (ledger entries after it);
  4. no task runs twice within one run;
  5. reruns caused by kill k (tasks started in run k that were not DONE at
     the kill) <= the tasks in flight: what the master had handed to the
     node agents and not yet recorded.  Its hard bound is the master's flow
     control: per host, cpus + a prefetch window of
     max(PLACEMENT_PREFETCH_MIN, cpus) 1-CPU tasks (sched/placement.h), plus
     RESULT_BATCH (engine/node/agent_internal.h) records the master took but the
     rescue writer had not written yet, plus every task of the run that
     started after the writer's last write() (the rescue log's mtime, laid
     against a timeline of the ledger's size): the writer's backlog is
     bounded by time, not by count, and a slow fdatasync holds it back (CI
     saw kills rerun 118 and 512 tasks against a bound of ~130 with other
     tests running; a disk kept busy by dd reproduces reruns of 250-900
     here, each within this bound).  A writer that wrote nothing for
     WRITER_SILENT_S while tasks started is a problem of its own.  Only
     --host-cpus of them run at once; the
     rest are queued at the agent or finished with their results batched
     (up to RESULT_BATCH, RESULT_DELAY_BUSY_MS), so the report also counts
     the kills whose reruns stayed within the slots (docs/reliability.md);
  6. dependency order in the ledger: every entry of a task follows an
     entry of each of its parents;
and at the end: the last run exits 0; every task ran to success at least
once (ledger) and is DONE in the rescue log; the ledger holds exactly
N + sum of reruns entries; the -o files of the runs (each run has its own,
out.RUN) hold, between them, a successful [cluster-task] record and the
output line of every task: nothing is lost by the merge of the per-rank
files that killed runs leave behind.  (One -o for all runs would not do:
each run truncates -o at start, as PMC does, so a run killed after its
merge loses that -o to the restart; see docs/reliability.md.)

--arrays: the workflow is task arrays instead (relutil.ledger_array_dag():
about N instances in five arrays joined by every edge form, fan-out,
one-to-one, K-to-one, fan-in and barrier, and three plain tasks; each
instance checks its PMC_TASK_INDEX and appends NAME[i] to the ledger); the
rescue log may hold range records (DONE a[0-99], counted as their
instances) and the same checks hold per instance, plus: every instance is
DONE exactly once in the final rescue log.

Usage:
  kill_campaign.py --bin build/pmc-hybrid [--tasks 100000] [--kills 100]
                   [--ranks 1|2] [--host-cpus 4] [--seed S] [--json OUT]
                   [--arrays]
Exit status 0 when every check holds and at least --min-kills kills were
made, else 1 (each problem printed).  Python 3 standard library only.
"""

import argparse
import fcntl
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import relutil  # noqa: E402

RECORD_RE = re.compile(rb"^\[cluster-task name=([^,]+), .*status=(-?\d+),", re.M)


class Campaign:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.work = args.workdir or tempfile.mkdtemp(prefix="pmc-kill-")
        os.makedirs(self.work, exist_ok=True)
        self.dag = os.path.join(self.work, "wf.dag")
        self.ledger = os.path.join(self.work, "ledger")
        self.rescue = self.dag + ".rescue"
        self.outs = []  # the -o file of each run
        if args.arrays:
            self.parents = relutil.ledger_array_dag(self.dag, args.tasks, self.ledger)
        else:
            self.parents = relutil.ledger_dag(self.dag, args.tasks, self.ledger, seed=args.seed)
        self.names = set(self.parents)
        self.slots = args.host_cpus * args.ranks
        self.bound = args.rerun_bound
        self.problems = []
        self.kills = []  # one dict per kill
        self.runs = 0
        self.ledger_pos = 0
        self.seen = set()  # tasks with a ledger entry so far
        self.done_prev = set()
        self.entries = 0
        self.rate = 1000.0  # tasks/s, refined as the campaign goes
        self.ledger_timeline = []  # (wall clock s, ledger size) of this run, as it grew
        self.merge_attempts = 0
        # the log's size once every task is DONE; range records of arrays
        # make it smaller, so there only -o's start says that the merge began
        self.rescue_full = (float("inf") if args.arrays
                            else sum(len("DONE %s\n" % t) for t in self.names))

    def argv(self):
        a = self.args
        opts = ["--host-cpus", str(a.host_cpus), "-o", self.out_path(self.runs), "--no-progress",
                "--launch-threads", str(a.launch_threads), self.dag]
        if a.ranks == 1:
            return [a.bin] + opts
        return [a.mpiexec, "-n", str(a.ranks), a.bin, "--ranks-are-hosts"] + opts

    def problem(self, text):
        self.problems.append(text)
        print("PROBLEM: " + text, flush=True)

    # ---- one run ------------------------------------------------------------

    def out_path(self, run):
        return os.path.join(self.work, "out.%d" % run)

    def launch(self):
        self.runs += 1
        self.outs.append(self.out_path(self.runs))
        errp = os.path.join(self.work, "stderr.%d" % self.runs)
        proc = relutil.start(self.argv(), self.work, os.path.join(self.work, "stdout.%d" % self.runs),
                             errp, env=relutil.clean_env())
        return proc, errp, time.monotonic()

    def pick_kind(self, remaining):
        k = len(self.kills) - self.merge_kills()
        if k >= self.args.kills or remaining == 0:  # then let the run reach its end
            return "merge" if self.merge_attempts < self.args.merge_kills else None
        return ("random", "commit", "random", "rewrite", "random", "startup")[k % 6]

    def merge_kills(self):
        return sum(1 for x in self.kills if x["kind"] == "merge")

    def wait_moment(self, proc, kind, t0):
        """Wait for the kill moment of `kind`; False if the run ended first."""
        size0 = os.path.getsize(self.rescue) if os.path.exists(self.rescue) else 0
        full_at_start = size0 >= self.rescue_full
        todo = max(1, len(self.names) - len(self.done_prev))
        kills_left = max(1, self.args.kills - len(self.kills))
        if kind == "random":
            deadline = t0 + self.rng.uniform(0.02, todo / self.rate / kills_left + 0.05)
        elif kind == "startup":
            deadline = t0 + self.rng.uniform(0.0, 0.03)
        elif kind == "merge":
            self.merge_attempts += 1
            deadline = t0 + self.args.run_timeout
        elif kind == "rewrite":  # kill anyway if the moment does not come
            deadline = t0 + 0.15
        else:
            deadline = t0 + 0.3
        tmp = self.rescue + ".tmp"
        self.ledger_timeline = [(time.time(), self.ledger_pos)]
        while proc.poll() is None:
            now = time.monotonic()
            self.sample_ledger()
            if now >= deadline:
                return True
            if kind == "rewrite" and os.path.exists(tmp):
                return True
            if kind == "commit":
                try:
                    if os.path.getsize(self.rescue) > size0 and now - t0 > 0.02:
                        return True
                except OSError:
                    pass
            if kind == "merge":  # every record written, or -o (written by the merge) begun
                try:
                    if not full_at_start and os.path.getsize(self.rescue) >= self.rescue_full:
                        return True
                    if os.path.getsize(self.outs[-1]) > 0:
                        return True
                except OSError:
                    pass
                if now >= deadline - 1.0:
                    return False
            time.sleep(0.0005 if kind != "random" else 0.002)
        return False

    def sample_ledger(self):
        """Note the ledger's size, with the wall clock, when it has grown: a
        timeline of task starts that the kill check lays the rescue log's
        mtime against."""
        try:
            size = os.path.getsize(self.ledger)
        except OSError:
            return
        if size > self.ledger_timeline[-1][1]:
            self.ledger_timeline.append((time.time(), size))

    def kill(self, proc, kind, t0, errp):
        t_kill = time.monotonic()
        wall_kill = time.time()  # against the rescue log's mtime
        tmp_seen = os.path.exists(self.rescue + ".tmp")
        try:
            out_size = os.path.getsize(self.outs[-1])
        except OSError:
            out_size = 0
        if not relutil.kill_session(proc.pid):
            self.problem("kill %d: processes of the session survive SIGKILL" % len(self.kills))
        proc.wait()
        self.wait_dag_unlocked("kill %d (%s)" % (len(self.kills) + 1, kind))
        snap = self.read_rescue()
        ledger_start = self.ledger_pos  # where this run's entries begin
        started, self.ledger_pos = relutil.read_ledger(self.ledger, self.ledger_pos)
        self.check_snapshot(snap, started, "kill %d (%s)" % (len(self.kills) + 1, kind))
        done = snap.done_set
        lost = [t for t in set(started) if t not in done]
        elapsed = t_kill - t0
        if elapsed > 0.2 and started:
            self.rate = 0.7 * self.rate + 0.3 * (len(started) / elapsed)
        unwritten_s, after_write = self.writer_backlog(started, ledger_start, wall_kill)
        rec = {"kind": kind, "at_s": round(elapsed, 4), "started": len(started),
               "done": len(done), "reruns": len(lost), "torn": snap.torn != b"",
               "tmp_seen": tmp_seen, "out_bytes": out_size, "stderr": errp,
               "unwritten_s": round(unwritten_s, 4), "started_after_write": after_write}
        self.kills.append(rec)
        bound = self.bound + after_write
        if unwritten_s > WRITER_SILENT_S and after_write:
            self.problem("kill %d (%s): the rescue writer wrote nothing for the last %.1f s "
                         "of the run while %d tasks started" % (len(self.kills), kind,
                                                                unwritten_s, after_write))
        rec["bound"] = bound
        if len(lost) > bound:
            self.problem("kill %d (%s): %d tasks started in the run were not DONE at the kill, "
                         "more than can be in flight (%d): e.g. %s"
                         % (len(self.kills), kind, len(lost), bound,
                            ", ".join(sorted(lost)[:5])))

    def writer_backlog(self, started, ledger_start, wall_kill):
        """What the rescue writer may hold back at the kill (point 5 of the
        module's docstring): (seconds since its last write(), tasks of this
        run that started after that write).  The last write() is the log's
        mtime: write() sets it and fdatasync() leaves it alone, on a coarse
        clock that is never later than the write.  What was written survives
        SIGKILL (the page cache keeps it); what the run finished since waited
        for a writer stuck in a slow fdatasync.  A task that started before
        that write and was not DONE was in flight then, which the
        flow-control bound covers.  `started` are this run's ledger names from
        byte `ledger_start` on; the timeline's sample at or before the write
        counts as 'before', so a task whose start falls between two samples
        counts as after (the safe side)."""
        try:
            written = os.stat(self.rescue).st_mtime_ns / 1e9
        except FileNotFoundError:
            written = 0.0
        since = written if written else self.ledger_timeline[0][0]  # no log: since the launch
        unwritten_s = max(0.0, wall_kill - since)
        size_then = ledger_start
        for t, size in self.ledger_timeline:
            if t > written:
                break
            size_then = size
        pos, after = ledger_start, 0
        for name in started:
            if pos >= size_then:
                after += 1
            pos += len(name.encode()) + 1
        return unwritten_s, after

    def wait_dag_unlocked(self, where, seconds=5.0):
        """Wait until the killed run's lock on the DAG (an OFD lock, which
        the kernel drops when the last thread of its holder has exited) is
        gone, so that the restart does not meet it; a problem when it
        outlives the session by `seconds`.  A CI run saw a restart refused
        90 ms after a kill; the likely cause, not reproduced, is a zombie
        leader whose other thread was still exiting (docs/reliability.md)."""
        deadline = time.monotonic() + seconds
        with open(self.dag, "rb+") as f:
            while True:
                try:
                    fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    fcntl.lockf(f, fcntl.LOCK_UN)
                    return
                except OSError:
                    if time.monotonic() >= deadline:
                        self.problem("%s: the DAG is still locked %.0f s after every process of "
                                     "the killed run ended" % (where, seconds))
                        return
                    time.sleep(0.002)

    def read_rescue(self):
        return relutil.Rescue(self.rescue, ranges=self.args.arrays)

    def check_snapshot(self, snap, started, where):
        if snap.bad:
            self.problem("%s: rescue log has bad lines %s" % (where, snap.bad[:3]))
        done = snap.done_set
        unknown = done - self.names
        if unknown:
            self.problem("%s: rescue log names unknown tasks %s" % (where, sorted(unknown)[:3]))
        lost = self.done_prev - done
        if lost:
            self.problem("%s: %d DONE records of the previous run are gone, e.g. %s"
                         % (where, len(lost), sorted(lost)[:3]))
        again = [t for t in started if t in self.done_prev]
        if again:
            self.problem("%s: %d tasks DONE at the previous kill ran again: %s"
                         % (where, len(again), sorted(set(again))[:5]))
        if len(set(started)) != len(started):
            dup = sorted({t for t in started if started.count(t) > 1})[:5]
            self.problem("%s: tasks ran twice within one run: %s" % (where, dup))
        for t in started:
            if t not in self.names:
                self.problem("%s: ledger names unknown task %r" % (where, t))
                continue
            missing = [p for p in self.parents[t] if p not in self.seen]
            if missing:
                self.problem("%s: %s ran before its parent(s) %s" % (where, t, missing))
            self.seen.add(t)
        self.entries += len(started)
        self.done_prev = done

    # ---- the campaign --------------------------------------------------------

    def run(self):
        t_start = time.monotonic()
        final = None
        while True:
            if time.monotonic() - t_start > self.args.max_seconds:
                self.problem("campaign did not finish within %ds" % self.args.max_seconds)
                break
            proc, errp, t0 = self.launch()
            kind = self.pick_kind(len(self.names) - len(self.done_prev))
            if kind and self.wait_moment(proc, kind, t0):
                self.kill(proc, kind, t0, errp)
                continue
            try:
                proc.wait(timeout=self.args.run_timeout)
            except Exception:
                self.problem("run %d did not end within %ds" % (self.runs, self.args.run_timeout))
                relutil.kill_session(proc.pid)
                proc.wait()
            relutil.kill_session(proc.pid)
            with open(errp, "rb") as f:
                err = f.read().decode("utf-8", "replace")
            if proc.returncode != 0:
                self.problem("run %d exited %s (a restart must never fail):\n%s"
                             % (self.runs, proc.returncode, err[-3000:]))
                break
            final = err
            break
        self.finish(final, time.monotonic() - t_start)

    def finish(self, final_err, seconds):
        snap = self.read_rescue()
        started, self.ledger_pos = relutil.read_ledger(self.ledger, self.ledger_pos)
        self.check_snapshot(snap, started, "final run")
        if final_err is not None:
            missing = self.names - snap.done_set
            if missing or snap.torn:
                self.problem("final rescue log: %d tasks not DONE (e.g. %s), torn %r"
                             % (len(missing), sorted(missing)[:3], snap.torn[:40]))
            twice = len(snap.done) - len(snap.done_set)
            if self.args.arrays and twice:
                self.problem("final rescue log: %d DONE records of tasks DONE already" % twice)
            never = self.names - self.seen
            if never:
                self.problem("%d tasks never ran (ledger), e.g. %s" % (len(never), sorted(never)[:3]))
            self.check_output()
        reruns = sum(k["reruns"] for k in self.kills)
        if final_err is not None and self.entries != len(self.names) + reruns:
            self.problem("ledger holds %d entries, expected %d tasks + %d reruns"
                         % (self.entries, len(self.names), reruns))
        if len(self.kills) - self.merge_kills() < self.args.min_kills:
            self.problem("only %d kills were made before the end (at least %d wanted): the "
                         "work ran out" % (len(self.kills) - self.merge_kills(),
                                           self.args.min_kills))
        self.report(seconds, reruns)

    def check_output(self):
        """Every task's successful record and output line are in the -o file
        of some run.  (Each run truncates its -o at start and merges the
        per-rank files, which a killed run leaves behind, so a killed run's
        output appears in the -o of the next run that reaches its merge; a
        run killed after its merge keeps its -o.)"""
        ok, lines = set(), set()
        for path in self.outs:
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                continue  # killed before it opened -o
            ok |= {m.group(1).decode() for m in RECORD_RE.finditer(data) if m.group(2) == b"0"}
            lines |= set(data.decode("utf-8", "replace").split("\n"))
        missing = self.names - ok
        if missing:
            self.problem("no -o holds a successful [cluster-task] record of %d tasks, e.g. %s"
                         % (len(missing), sorted(missing)[:5]))
        silent = [t for t in self.names if t not in lines]
        if silent:
            self.problem("no -o holds the output line of %d tasks, e.g. %s"
                         % (len(silent), sorted(silent)[:5]))

    def report(self, seconds, reruns):
        by_kind = {}
        for k in self.kills:
            by_kind.setdefault(k["kind"], []).append(k)
        per_kill = [k["reruns"] for k in self.kills]
        summary = {
            "machine": relutil.machine(), "tasks": len(self.names), "ranks": self.args.ranks,
            "host_cpus": self.args.host_cpus, "slots": self.slots, "bound": self.bound,
            "seed": self.args.seed, "arrays": self.args.arrays, "kills": len(self.kills),
            "runs": self.runs,
            "kills_by_kind": {k: len(v) for k, v in sorted(by_kind.items())},
            "rewrite_kills_with_tmp_seen": sum(1 for k in self.kills
                                               if k["kind"] == "rewrite" and k["tmp_seen"]),
            "torn_tails_at_kill": sum(1 for k in self.kills if k["torn"]),
            "merge_kills_with_output_begun": sum(1 for k in self.kills
                                                 if k["kind"] == "merge" and k["out_bytes"]),
            "reruns_total": reruns, "reruns_max_per_kill": max(per_kill) if per_kill else 0,
            "kills_with_reruns_within_slots": sum(1 for r in per_kill if r <= self.slots),
            "reruns_mean_per_kill": round(reruns / len(per_kill), 2) if per_kill else 0,
            "unwritten_s_max": max((k["unwritten_s"] for k in self.kills), default=0),
            "bound_max": max((k["bound"] for k in self.kills), default=self.bound),
            "ledger_entries": self.entries, "seconds": round(seconds, 1),
            "problems": len(self.problems),
        }
        print("kill campaign: %d tasks%s, %d rank(s), --host-cpus %d (slots %d), seed %d"
              % (summary["tasks"], " (task arrays)" if self.args.arrays else "", self.args.ranks, self.args.host_cpus, self.slots,
                 self.args.seed))
        print("  kills survived: %d (%s) over %d runs in %.1f s"
              % (len(self.kills), ", ".join("%s %d" % kv for kv in
                                           summary["kills_by_kind"].items()),
                 self.runs, seconds))
        print("  rewrite kills with PATH.tmp present: %d; merge kills with -o begun: %d; "
              "torn rescue tails seen at a kill: %d"
              % (summary["rewrite_kills_with_tmp_seen"], summary["merge_kills_with_output_begun"],
                 summary["torn_tails_at_kill"]))
        print("  reruns: %d in all, max %d per kill (in-flight bound %d), mean %.2f; "
              "%d of %d kills reran at most the %d slots"
              % (reruns, summary["reruns_max_per_kill"], self.bound,
                 summary["reruns_mean_per_kill"], summary["kills_with_reruns_within_slots"],
                 len(per_kill), self.slots))
        print("  rescue writer at the kills: last write() up to %.3f s before a kill; "
              "bound with its backlog up to %d"
              % (summary["unwritten_s_max"], summary["bound_max"]))
        print("  ledger entries: %d = %d tasks + %d reruns" % (self.entries, len(self.names),
                                                              self.entries - len(self.names)))
        print("  problems: %d" % len(self.problems))
        if self.args.json:
            summary["kill_log"] = self.kills
            summary["problem_list"] = self.problems
            with open(self.args.json, "w") as f:
                json.dump(summary, f, indent=1)


WRITER_SILENT_S = 10.0  # the longest the rescue writer may write nothing while tasks run


def engine_define(src, header, name, default):
    """The value of `#define NAME N` in engine/HEADER (a path relative to
    engine/; default if absent)."""
    try:
        with open(os.path.join(src, "engine", header)) as f:
            m = re.search(r"#define\s+%s\s+(\d+)" % name, f.read())
            if m:
                return int(m.group(1))
    except OSError:
        pass
    return default


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.abspath(os.path.join(here, "..", ".."))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", default=os.path.join(src, "build", "pmc-hybrid"))
    p.add_argument("--mpiexec", default="mpiexec")
    p.add_argument("--tasks", type=int, default=100000)
    p.add_argument("--kills", type=int, default=100)
    p.add_argument("--min-kills", type=int, default=None,
                   help="fail when fewer kills (not counting merge kills) were made "
                        "(default: --kills)")
    p.add_argument("--ranks", type=int, default=1, choices=(1, 2, 3, 4))
    p.add_argument("--host-cpus", type=int, default=4)
    p.add_argument("--launch-threads", type=int, default=0,
                   help="pmc-hybrid's launcher pool (0: the agent thread starts the tasks)")
    p.add_argument("--rerun-bound", type=int, default=None,
                   help="most reruns allowed per kill, before the tasks started after the "
                        "rescue writer's last write are added (default: hosts x (host-cpus + "
                        "max(PLACEMENT_PREFETCH_MIN, host-cpus)) + RESULT_BATCH, read from "
                        "the sources' headers)")
    p.add_argument("--merge-kills", type=int, default=2,
                   help="after the --kills kills, try this many kills during the final merge")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--arrays", action="store_true",
                   help="a workflow of task arrays (relutil.ledger_array_dag())")
    p.add_argument("--workdir", default=None, help="keep everything here")
    p.add_argument("--json", default=None, help="write the figures and the kill log here")
    p.add_argument("--max-seconds", type=int, default=3600)
    p.add_argument("--run-timeout", type=int, default=600)
    args = p.parse_args()
    if args.seed is None:
        args.seed = random.randrange(1 << 30)
    args.bin = os.path.abspath(args.bin)  # runs start in their own directories
    if args.min_kills is None:
        args.min_kills = args.kills
    if args.rerun_bound is None:
        window = max(engine_define(src, "../sched/placement.h", "PLACEMENT_PREFETCH_MIN", 64),
                     args.host_cpus)
        args.rerun_bound = (args.ranks * (args.host_cpus + window)
                            + engine_define(src, "agent_internal.h", "RESULT_BATCH", 24))
    if not os.access(args.bin, os.X_OK):
        print("pmc-hybrid not found: %s" % args.bin)
        return 1
    c = Campaign(args)
    try:
        c.run()
    finally:
        if args.workdir is None and not c.problems:
            shutil.rmtree(c.work, ignore_errors=True)
        elif c.problems:
            print("work directory kept: %s" % c.work)
    return 1 if c.problems else 0


if __name__ == "__main__":
    sys.exit(main())
