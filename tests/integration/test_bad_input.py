#!/usr/bin/env python3
"""test_bad_input.py - bad DAGs, rescue files and options are refused (case e).

Each case runs pmc-hybrid once in a directory that already holds a rescue
file (or, for the unreadable-rescue case, a rescue path it cannot read) and
expects: exit 1; no task ran (no cluster-task record, no marker file made by
a task); the existing rescue file byte-identical; and one clear message on
stderr naming the file and line (DAG and rescue errors: exactly one
non-blank line, containing "NAME:LINE" or, for whole-file errors, "NAME") or
the option (command-line errors: at most two lines, message and usage hint).
Command-line errors must also write nothing at all (COMPAT.md), so the
directory must be unchanged.

DAG cases: duplicate task, EDGE to an unknown task, self edge, cycle, TASK
without executable (with and without options), bad task option value
(-c abc), unknown record (TASKX), empty DAG, a task array with a reversed
range, %{INDEX} in a plain task.  Rescue cases: a DONE naming an
unknown task, an unreadable rescue file (chmod 000; as root, which can read
anything, the rescue path is a directory instead).  A rescue path
that is not a rescue log (-r naming the DAG or an output file, -s -r and -o
naming the DAG, -r naming a FIFO): refused, nothing changed.  Command-line
cases: missing DAG file, unknown option, -t 0.
"""

import os
import stat
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

GOOD_TASKS = """TASK A /bin/touch {tmp}/ran.A
TASK B /bin/touch {tmp}/ran.B
TASK C /bin/touch {tmp}/ran.C
"""

OLD_RESCUE = "# rescue file of an earlier run\nDONE A\n"

# name, DAG text (after GOOD_TASKS, which is lines 1-3), line to name or None
DAG_CASES = [
    ("duplicate-task", "TASK B /bin/touch {tmp}/ran.B2\n", 4),
    ("edge-unknown-task", "EDGE A B\nEDGE B Z\n", 5),
    ("self-edge", "EDGE A B\nEDGE C C\n", 5),
    ("cycle", "EDGE A B\nEDGE B C\nEDGE C A\n", None),
    ("task-without-executable", "TASK D\n", 4),
    ("task-options-without-executable", "TASK D -c 2 -p 3\n", 4),
    ("bad-task-option-value", "TASK D -c abc /bin/touch {tmp}/ran.D\n", 4),
    ("unknown-record", "\nTASKX D /bin/touch {tmp}/ran.D\n", 5),
    ("task-array-reversed", "TASK sim[9-0] /bin/touch {tmp}/ran.sim%{{INDEX}}\n", 4),
    ("index-token-in-plain-task", "TASK D /bin/touch {tmp}/ran.D%{{INDEX}}\n", 4),
]


def snapshot(folder):
    """{relative path: bytes, or 'dir' with its mode} of a directory tree."""
    state = {}
    for root, dirs, files in os.walk(folder):
        for d in dirs:
            p = os.path.join(root, d)
            state[os.path.relpath(p, folder)] = ("dir", os.stat(p).st_mode)
        for f in files:
            p = os.path.join(root, f)
            mode = os.lstat(p).st_mode
            if not stat.S_ISREG(mode):  # a FIFO would block open()
                state[os.path.relpath(p, folder)] = ("special", mode)
                continue
            try:
                with open(p, "rb") as fh:
                    state[os.path.relpath(p, folder)] = fh.read()
            except OSError:
                state[os.path.relpath(p, folder)] = ("unreadable", os.stat(p).st_mode)
    return state


class BadInput(pmcrun.TestCase):
    def refused(self, res, names, single_line=True, before=None, rescue=None,
                rescue_bytes=None):
        """Problems of a run that should have refused its input."""
        problems = []
        if res.timed_out or res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        if res.tasks:
            problems.append("%d cluster-task records: a task ran" % len(res.tasks))
        ran = [f for f in os.listdir(self.tmp) if f.startswith("ran.")]
        if ran:
            problems.append("tasks ran: %s" % ", ".join(sorted(ran)))
        lines = pmcrun.stderr_lines(res)
        if not lines:
            problems.append("nothing on stderr")
        elif single_line and len(lines) != 1:
            problems.append("%d lines on stderr, expected one message" % len(lines))
        elif not single_line and len(lines) > 2:
            problems.append("%d lines on stderr, expected a message and a usage hint"
                            % len(lines))
        if lines and not any(all(n in line for n in names) for line in lines):
            problems.append("no stderr line names %s" % " and ".join(repr(n) for n in names))
        if rescue is not None:
            try:
                with open(rescue, "rb") as f:
                    now = f.read()
            except OSError as e:
                now = "unreadable: %s" % e
            if now != rescue_bytes:
                problems.append("the existing rescue file changed: %r" % now[:200])
        if before is not None:
            after = snapshot(self.tmp)
            changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
            if changed:
                problems.append("files created or changed: %s" % ", ".join(changed))
        return problems

    def test_dag_errors(self):
        for name, extra, line in DAG_CASES:
            with self.subTest(case=name):
                sub = os.path.join(self.tmp, name)
                os.mkdir(sub)
                dag = os.path.join(sub, "bad.dag")
                with open(dag, "w") as f:
                    f.write((GOOD_TASKS + extra).format(tmp=self.tmp))
                with open(dag + ".rescue", "w") as f:
                    f.write(OLD_RESCUE)
                res = pmcrun.run(["--host-cpus", "2", dag], cwd=sub, timeout=60)
                where = ["bad.dag:%d" % line] if line else ["bad.dag"]
                if name == "cycle":
                    where.append("cycle")
                if name == "task-array-reversed":
                    where.append("reversed array range")
                self.check(self.refused(res, where, rescue=dag + ".rescue",
                                        rescue_bytes=OLD_RESCUE.encode()), res, name)

    def test_empty_dag(self):
        dag = self.write("empty.dag", "# no tasks at all\n\n   \n")
        self.write("empty.dag.rescue", OLD_RESCUE)
        res = self.run_pmc(["--host-cpus", "2", dag], timeout=60)
        self.check(self.refused(res, ["empty.dag"], rescue=dag + ".rescue",
                                rescue_bytes=OLD_RESCUE.encode()), res)

    def test_rescue_unknown_task(self):
        dag = self.write("wf.dag", GOOD_TASKS.format(tmp=self.tmp))
        text = "DONE A\nDONE NOSUCHTASK\n"
        self.write("wf.dag.rescue", text)
        res = self.run_pmc(["--host-cpus", "2", dag], timeout=60)
        self.check(self.refused(res, ["wf.dag.rescue:2"], rescue=dag + ".rescue",
                                rescue_bytes=text.encode()), res)

    def test_rescue_unreadable(self):
        dag = self.write("wf.dag", GOOD_TASKS.format(tmp=self.tmp))
        rescue = dag + ".rescue"
        if os.geteuid() == 0:  # root reads mode-000 files: use a directory
            os.mkdir(rescue)
            self.write("wf.dag.rescue/keep", "DONE A\n")
        else:
            self.write("wf.dag.rescue", OLD_RESCUE, mode=0)
        before = snapshot(self.tmp)
        res = self.run_pmc(["--host-cpus", "2", dag], timeout=60)
        problems = self.refused(res, ["wf.dag.rescue"])
        after = snapshot(self.tmp)
        if before.get("wf.dag.rescue") != after.get("wf.dag.rescue") or \
                before.get("wf.dag.rescue/keep") != after.get("wf.dag.rescue/keep"):
            problems.append("the rescue path changed")
        self.check(problems, res)

    def test_rescue_path_not_a_rescue_log(self):
        """-r naming the DAG, -r naming an output file, -s -r naming the DAG,
        -o naming the DAG, and -r naming a FIFO: refused at once, nothing
        changed (the first two were replaced by a rescue log, exit 0; the
        FIFO blocked the run in open())."""
        dag = self.write("wf.dag", GOOD_TASKS.format(tmp=self.tmp))
        out = self.write("out.txt", "hello\n[cluster-task name=A, status=0]\n")
        os.mkfifo(self.path("fifo"))
        # (each refused with one line before anything is opened)
        same = "name the same file"  # io/pathset.h, test_pointed_paths.py
        cases = [("-r DAG", ["-r", dag], ["the rescue log (-r)", "the DAG", same], True),
                 ("-r output", ["-r", out], ["out.txt:1", "not a rescue log"], True),
                 ("-s -r DAG", ["-s", "-r", dag], ["the rescue log (-r)", "the DAG", same],
                  True),
                 ("-o DAG", ["-o", dag], ["-o %s and the DAG" % dag, same], True),
                 ("-r FIFO", ["-r", self.path("fifo")], ["fifo", "not a regular file"], True)]
        for case, opts, names, one_line in cases:
            with self.subTest(case=case):
                before = snapshot(self.tmp)
                res = self.run_pmc(opts + ["--host-cpus", "2", dag], timeout=20)
                problems = self.refused(res, names, before=before)
                if not one_line:
                    problems = [p for p in problems if "lines on stderr" not in p]
                self.check(problems, res, case)

    def test_missing_dag(self):
        self.write("other.dag.rescue", OLD_RESCUE)
        before = snapshot(self.tmp)
        res = self.run_pmc(["--host-cpus", "2", self.path("nosuch.dag")], timeout=60)
        self.check(self.refused(res, ["nosuch.dag"], before=before), res)

    def test_command_line_errors(self):
        cases = [("unknown-option", ["--bogus-option"], ["--bogus-option"]),
                 ("tries-zero", ["-t", "0"], ["-t"]),  # "--tries" contains "-t" too
                 ("tries-zero-long", ["--tries", "0"], ["--tries"])]
        for name, opts, names in cases:
            with self.subTest(case=name):
                sub = os.path.join(self.tmp, name)
                os.mkdir(sub)
                dag = os.path.join(sub, "wf.dag")
                with open(dag, "w") as f:
                    f.write(GOOD_TASKS.format(tmp=self.tmp))
                with open(dag + ".rescue", "w") as f:
                    f.write(OLD_RESCUE)
                before = snapshot(self.tmp)
                res = pmcrun.run(opts + ["--host-cpus", "2", dag], cwd=sub, timeout=60)
                problems = self.refused(res, names, single_line=False, before=before)
                self.check(problems, res, name)


if __name__ == "__main__":
    pmcrun.main()
