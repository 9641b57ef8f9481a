#!/usr/bin/env python3
"""test_events.py - Pegasus event logs: jobstate.log (--jobstate-log) and
DAG.dagman.out (--monitord-hack) (docs/compat-notes.md, "Outputs", Pegasus
event logs).

jobstate.log lines are "TS NAME STATE SEQ.0 - - SEQ" (SUBMIT, EXECUTE,
JOB_TERMINATED), "TS NAME JOB_SUCCESS 0 - - SEQ" and "TS NAME JOB_FAILURE
CODE - - SEQ", besides "TS INTERNAL *** ... ***"; DAG.dagman.out lines are
"mm/dd/yy hh:mm:ss Event: ULOG_STATE for Condor Node NAME (SEQ.0)" and
"Node NAME job proc (SEQ.0) failed with status CODE.".  --monitord-hack
turns on --per-task-stdio (as in PMC), so the [cluster-task] records are read
from the NAME.out.NNN files beside the DAG.

  * execute_is_real_start, 1 rank and `mpiexec -n 2` (the agent on rank 1):
    --host-cpus 1, six independent `sleep 0.3` tasks (they wait in the
    node's queue) and a task `exit 3` tried twice (-t 2):
      - every line of jobstate.log is well formed, one SUBMIT per attempt
        with a sequence number of its own, each EXECUTE and JOB_TERMINATED
        after the SUBMIT of its sequence number;
      - each EXECUTE's time is within 50 ms of the start= of that attempt's
        [cluster-task] record (the agent's real start, not the time the task
        was sent), also for the last sleep task, which waited >= 1 s;
      - both attempts of the failing task end with "JOB_FAILURE 3" (the exit
        code, not the wait status 768);
      - DAG.dagman.out has the same ULOG_SUBMIT / ULOG_EXECUTE lines (same
        sequence numbers), each ULOG_EXECUTE's second within 1 s of the
        record's start, and "failed with status 3" for the failing task.
  * stop_with_queued_tasks: --host-cpus 1, six `sleep 1` tasks with -t 2,
    stopped while some of them wait at the node: by --max-wall-time 0.05 (3
    s, so that a slow start still runs a task first; 1 rank and mpiexec -n 2) and by SIGTERM (to pmc-hybrid, 1 rank; to rank 0,
    the master, and to mpiexec, 2 ranks) once the second task has its
    EXECUTE.  The run exits 1 (not checked for SIGTERM to mpiexec: MPICH's
    hydra then exits 0 although rank 0 exits 1) with one cluster-summary
    stat="failed"; in jobstate.log and in DAG.dagman.out no sequence number
    has two SUBMITs, every EXECUTE has exactly one SUBMIT with its sequence
    number, no task has more SUBMITs than EXECUTEs + 1 (a task handed back
    unstarted is not submitted again), some task ran and some task was
    handed back without an EXECUTE.  The same with -m 1 (1 rank and mpiexec
    -n 2) and a first task (-p 10) that fails after 0.1 s: the tasks queued
    at the node come back unstarted (DRAIN) and are not submitted again.
"""

import os
import re
import signal
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

EXECUTE_TOLERANCE = 0.050  # seconds between EXECUTE and the record's start

JOBSTATE_RE = re.compile(r"^(\d+\.\d+) (\S+) (\S+) (\S+) - - (\d+)$")
INTERNAL_RE = re.compile(r"^\d+\.\d+ INTERNAL \*\*\* .* \*\*\*$")
DAGMAN_EVENT_RE = re.compile(
    r"^(\d\d/\d\d/\d\d \d\d:\d\d:\d\d) Event: ULOG_(\w+) for Condor Node (\S+) \((\d+)\.0\)$")
DAGMAN_FAILED_RE = re.compile(r"Node (\S+) job proc \((\d+)\.0\) failed with status (-?\d+)\.")


class Event:
    def __init__(self, ts, name, state, seq, code=None):
        self.ts, self.name, self.state, self.seq, self.code = ts, name, state, seq, code


def parse_jobstate(path):
    """[Event] of jobstate.log and the problems with its lines."""
    text = pmcrun.read_text(path)
    if text is None:
        return [], ["%s does not exist" % path]
    events, problems = [], []
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line or INTERNAL_RE.match(line):
            continue
        m = JOBSTATE_RE.match(line)
        if not m:
            problems.append("jobstate.log:%d: malformed line %r" % (lineno, line))
            continue
        ts, name, state, field, seq = m.groups()
        seq = int(seq)
        if state in ("SUBMIT", "EXECUTE", "JOB_TERMINATED"):
            if field != "%d.0" % seq:
                problems.append("jobstate.log:%d: %s with %s, expected %d.0"
                                % (lineno, state, field, seq))
            events.append(Event(float(ts), name, state, seq))
        elif state in ("JOB_SUCCESS", "JOB_FAILURE"):
            events.append(Event(float(ts), name, state, seq, int(field)))
        else:
            problems.append("jobstate.log:%d: unknown state %s" % (lineno, state))
    return events, problems


def parse_dagman(path):
    """[Event] of DAG.dagman.out (ts: epoch second of the local date) and
    {seq: status} of its "failed with status" lines."""
    text = pmcrun.read_text(path)
    if text is None:
        return [], {}, ["%s does not exist" % path]
    events, failed = [], {}
    for line in text.split("\n"):
        m = DAGMAN_EVENT_RE.match(line)
        if m:
            when, state, name, seq = m.groups()
            ts = time.mktime(time.strptime(when, "%m/%d/%y %H:%M:%S"))
            events.append(Event(ts, name, state, int(seq)))
            continue
        m = DAGMAN_FAILED_RE.search(line)
        if m:
            failed[int(m.group(2))] = int(m.group(3))
    return events, failed, []


def per_task_records(folder):
    """The [cluster-task] records of the NAME.out.NNN files in folder (and
    the problems parsing them)."""
    records, problems = [], []
    for f in sorted(os.listdir(folder)):
        if re.match(r"^.+\.out\.\d{3}$", f):
            out = pmcrun.parse_output(pmcrun.read_text(os.path.join(folder, f)) or "")
            records += out.tasks
            problems += ["%s: %s" % (f, p) for p in out.problems]
    return records, problems


def submit_problems(events, what, submit="SUBMIT", execute="EXECUTE"):
    """The SUBMIT/EXECUTE rules of a stopped or finished run; returns
    (problems, {name: (submits, executes)})."""
    problems = []
    per_task = {}
    seen = {}
    for e in events:
        if e.state == submit:
            if e.seq in seen:
                problems.append("%s: sequence number %d submitted twice (%s, %s)"
                                % (what, e.seq, seen[e.seq], e.name))
            seen[e.seq] = e.name
        if e.state in (submit, execute):
            per_task.setdefault(e.name, ([], []))[e.state == execute].append(e)
    for name, (subs, execs) in sorted(per_task.items()):
        for x in execs:
            match = [s for s in subs if s.seq == x.seq]
            if len(match) != 1:
                problems.append("%s: %s %s (seq %d) has %d %s lines with its sequence number"
                                % (what, name, execute, x.seq, len(match), submit))
            elif match[0].ts > x.ts:
                problems.append("%s: %s %s before its %s" % (what, name, execute, submit))
        if len(subs) > len(execs) + 1:
            problems.append("%s: %s has %d %s lines and %d %s lines: a task handed back "
                            "unstarted was submitted again"
                            % (what, name, len(subs), submit, len(execs), execute))
    return problems, per_task


class Events(pmcrun.TestCase):
    # ------------------------------------------------------ EXECUTE time

    def test_execute_is_real_start(self):
        for ranks in (1, 2):
            with self.subTest(ranks=ranks):
                folder = self.path("exec%d" % ranks)
                os.mkdir(folder)
                dag_path = os.path.join(folder, "ev.dag")
                with open(dag_path, "w") as f:
                    for i in range(6):
                        f.write("TASK t%d /bin/sleep 0.3\n" % i)
                    f.write('TASK f -t 2 /bin/sh -c "exit 3"\n')
                res = pmcrun.run(["--host-cpus", "1", "--jobstate-log", "--monitord-hack",
                                  dag_path], ranks=ranks, cwd=folder, timeout=60)
                self.check(self.execute_problems(res, folder, dag_path, ranks), res,
                           "ranks=%d" % ranks)

    def execute_problems(self, res, folder, dag_path, ranks):
        problems = []
        if res.timed_out or res.returncode != 1:
            problems.append("exit status %s, expected 1 (task f fails)" % res.returncode)
        records, more = per_task_records(folder)
        problems += more
        problems += pmcrun.summary_problems(res, 7, "failed", succeeded=6, failed_attempts=2,
                                            records=records)
        agent = str(1 if ranks > 1 else 0)
        if any(r.fields.get("slot") != agent for r in records):
            problems.append("records on slots %s, expected all on %s"
                            % (pmcrun.slot_counts(records), agent))
        events, more = parse_jobstate(os.path.join(folder, "jobstate.log"))
        problems += more
        more, per_task = submit_problems(events, "jobstate.log")
        problems += more
        by_seq = {}
        for e in events:
            by_seq.setdefault(e.seq, {}).setdefault(e.state, []).append(e)
        for seq, states in sorted(by_seq.items()):
            for state in ("SUBMIT", "EXECUTE", "JOB_TERMINATED"):
                if len(states.get(state, [])) != 1:
                    problems.append("seq %d: %d %s lines, expected 1"
                                    % (seq, len(states.get(state, [])), state))
            ends = states.get("JOB_SUCCESS", []) + states.get("JOB_FAILURE", [])
            if len(ends) != 1:
                problems.append("seq %d: %d JOB_SUCCESS/JOB_FAILURE lines" % (seq, len(ends)))
            if states.get("SUBMIT") and states.get("JOB_TERMINATED") and \
                    states["JOB_TERMINATED"][0].ts < states["SUBMIT"][0].ts:
                problems.append("seq %d: JOB_TERMINATED before SUBMIT" % seq)
        # EXECUTE vs. the records' start, attempt by attempt in time order
        last_wait = 0.0
        for name in ["t%d" % i for i in range(6)] + ["f"]:
            recs = sorted((r for r in records if r.name == name), key=lambda r: r.start)
            subs, execs = per_task.get(name, ([], []))
            execs = sorted(execs, key=lambda e: e.ts)
            want = 2 if name == "f" else 1
            if len(recs) != want or len(execs) != want or len(subs) != want:
                problems.append("%s: %d records, %d SUBMIT, %d EXECUTE lines, expected %d each"
                                % (name, len(recs), len(subs), len(execs), want))
                continue
            for r, x in zip(recs, execs):
                if abs(x.ts - r.start) > EXECUTE_TOLERANCE:
                    problems.append("%s (seq %d): EXECUTE at %.3f, %.3f s from the record's "
                                    "start %.3f" % (name, x.seq, x.ts, x.ts - r.start, r.start))
            sub = min(s.ts for s in subs)
            last_wait = max(last_wait, execs[0].ts - sub)
        if last_wait < 1.0:
            problems.append("no task waited 1 s between SUBMIT and EXECUTE (longest %.3f s): "
                            "the tasks did not queue at the node" % last_wait)
        fails = [e for e in events if e.state == "JOB_FAILURE"]
        if [(e.name, e.code) for e in fails] != [("f", 3), ("f", 3)]:
            problems.append("JOB_FAILURE lines %s, expected two 'f JOB_FAILURE 3'"
                            % [(e.name, e.code) for e in fails])
        if any(e.state == "JOB_SUCCESS" and e.code != 0 for e in events):
            problems.append("a JOB_SUCCESS line with a code other than 0")
        # DAG.dagman.out
        devents, failed, more = parse_dagman(dag_path + ".dagman.out")
        problems += more
        more, dper_task = submit_problems(devents, "dagman.out", "SUBMIT", "EXECUTE")
        problems += more
        for name, (subs, execs) in per_task.items():
            dsubs, dexecs = dper_task.get(name, ([], []))
            if sorted(e.seq for e in dsubs) != sorted(e.seq for e in subs) or \
                    sorted(e.seq for e in dexecs) != sorted(e.seq for e in execs):
                problems.append("%s: dagman.out ULOG_SUBMIT/ULOG_EXECUTE seqs %s/%s, "
                                "jobstate.log %s/%s" % (
                                    name, [e.seq for e in dsubs], [e.seq for e in dexecs],
                                    [e.seq for e in subs], [e.seq for e in execs]))
            recs = sorted((r for r in records if r.name == name), key=lambda r: r.start)
            for r, x in zip(recs, sorted(dexecs, key=lambda e: e.ts)):
                if abs(x.ts - int(r.start)) > 1:
                    problems.append("%s: ULOG_EXECUTE at %s, record start %.3f"
                                    % (name, time.strftime("%H:%M:%S", time.localtime(x.ts)),
                                       r.start))
        f_seqs = sorted(e.seq for e in per_task.get("f", ([], []))[0])
        if sorted(s for s, code in failed.items() if code == 3) != f_seqs or \
                any(code != 3 for code in failed.values()):
            problems.append("dagman.out 'failed with status' lines %s, expected status 3 for "
                            "f's sequence numbers %s" % (failed, f_seqs))
        return problems

    # ------------------------------------------------- stop while queued

    def test_stop_with_queued_tasks(self):
        # term: None, "proc" (pmc-hybrid or mpiexec) or "rank0" (the master)
        cases = (("--max-wall-time, 1 rank", ["--max-wall-time", "0.05"], 1, None),
                 ("--max-wall-time, mpiexec -n 2", ["--max-wall-time", "0.05"], 2, None),
                 ("SIGTERM, 1 rank", [], 1, "proc"),
                 ("SIGTERM to rank 0, mpiexec -n 2", [], 2, "rank0"),
                 ("SIGTERM to mpiexec, 2 ranks", [], 2, "proc"),
                 ("-m 1, 1 rank", ["-m", "1"], 1, None),
                 ("-m 1, mpiexec -n 2", ["-m", "1"], 2, None))
        for i, (case, opts, ranks, term) in enumerate(cases):
            with self.subTest(case=case):
                folder = self.path("stop%d" % i)
                os.mkdir(folder)
                dag_path = os.path.join(folder, "stop.dag")
                with open(dag_path, "w") as f:
                    if "-m" in opts:  # its failure stops the run (PMC's -m)
                        f.write('TASK bad -p 10 /bin/sh -c "sleep 0.1; exit 1"\n')
                    for k in range(6):
                        f.write("TASK q%d -t 2 /bin/sleep 1\n" % k)
                jobstate = os.path.join(folder, "jobstate.log")
                proc = pmcrun.start(opts + ["--host-cpus", "1", "--jobstate-log",
                                            "--monitord-hack", dag_path],
                                    ranks=ranks, cwd=folder)
                self.addCleanup(pmcrun.kill_session, proc)
                problems = []
                if term:
                    deadline = time.monotonic() + 30
                    while (pmcrun.read_text(jobstate) or "").count(" EXECUTE ") < 2:
                        if proc.poll() is not None or time.monotonic() > deadline:
                            problems.append("the second task never got its EXECUTE line")
                            break
                        time.sleep(0.01)
                    if term == "rank0":
                        pid = pmcrun.rank_processes(proc.pid).get(0)
                        if pid is None:
                            problems.append("rank 0 not found under mpiexec")
                        else:
                            os.kill(pid, signal.SIGTERM)
                    else:
                        proc.send_signal(signal.SIGTERM)
                res = pmcrun.finish(proc, timeout=60)
                hydra = term == "proc" and ranks > 1
                problems += self.stop_problems(res, folder, dag_path, check_rc=not hydra)
                self.check(problems, res, case)

    def stop_problems(self, res, folder, dag_path, check_rc=True):
        problems = []
        if res.timed_out or (check_rc and res.returncode != 1):
            problems.append("exit status %s, expected 1" % res.returncode)
        stats = [s.get("stat") for s in res.summaries]
        if stats != ["failed"]:
            problems.append("cluster-summary stat= %s, expected one 'failed'" % stats)
        events, more = parse_jobstate(os.path.join(folder, "jobstate.log"))
        problems += more
        devents, _, more = parse_dagman(dag_path + ".dagman.out")
        problems += more
        for what, evs in (("jobstate.log", events), ("dagman.out", devents)):
            more, per_task = submit_problems(evs, what)
            problems += more
            ran = [n for n, (s, x) in per_task.items() if x]
            handed_back = [n for n, (s, x) in per_task.items() if s and not x]
            if not ran:
                problems.append("%s: no task has an EXECUTE line" % what)
            if not handed_back:
                problems.append("%s: every task has an EXECUTE line: the stop found no task "
                                "waiting at the node (per task SUBMIT/EXECUTE: %s)"
                                % (what, {n: (len(s), len(x)) for n, (s, x) in per_task.items()}))
        return problems


if __name__ == "__main__":
    pmcrun.main()
