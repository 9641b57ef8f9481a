#!/usr/bin/env python3
"""test_pointed_vanish.py - outputs that vanish while the run goes, and a
lost stdout, fail the run (issue 45, "Never destroy what the user points
at"; docs/reliability.md, "What the user points at").

Each vanishing case runs a DAG of six tasks (`echo NAME; echo NAME-err >&2;
sleep 0.5`, on 2 CPUs: about 1.5 s) and acts on one output once the first
DONE record is in the rescue log, while tasks still run:

  * rescue_deleted: the rescue log is deleted.  Exit 1, "The rescue log
    PATH was deleted during the run: it is written again there", and the
    file at its path lists all six tasks (the writer wrote it again with
    every task done so far, and appended the rest); a rerun runs nothing.
  * rescue_replaced: another file is renamed over the rescue log.  Exit 1,
    "The rescue log PATH was deleted or replaced during the run: progress
    since then is not recorded there", and the file at the path is still
    the one put there, byte for byte.
  * output_deleted (-o, then -e): the file is deleted.  Exit 1, "The -o
    file PATH was deleted or replaced during the run: the task output is
    not merged into it"; it is not made again, the ranks' file keeps every
    task's output, and a rerun (nothing to run) merges it into a new -o /
    -e and exits 0.
  * output_replaced: another file is renamed over -o.  Exit 1, the same
    message, the file put there is left as it was.
  * jobstate_deleted: --jobstate-log's file is deleted.  Exit 1,
    "jobstate.log was deleted or replaced during the run".

A lost stdout (SIGPIPE is ignored, so a closed pipe gives EPIPE):

  * stdout_reader_gone: -o holds the task output; stdout, where only the
    [cluster-summary] record goes, is a pipe whose reader is closed before
    the run starts.  Exit 1 and "Output lost: ..." (before issue 45: "Error
    writing cluster-summary: Broken pipe", "Workflow succeeded", exit 0).
  * head_one: `pmc-hybrid wf.dag | head -1`.  The test reads the first
    line of stdout and closes its end after the merge wrote the task output
    and before the summary: pmc-hybrid's stderr is a pipe the test fills
    while the tasks run, so that its first log line after the merge (the
    statistics) waits until the test has closed stdout and drains stderr.
    Exit 1 and "Output lost: ..." (before: exit 0, "Workflow succeeded",
    7 of 8 tasks' output gone).

Every case: no "Workflow succeeded", [cluster-summary stat="failed"] where
stdout can be read.
"""

import os
import select
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

NTASKS = 6
WAIT = 60  # seconds: generous bounds on a noisy machine, never a timing assertion


def names(n=NTASKS):
    return ["t%d" % i for i in range(1, n + 1)]


class VanishTest(pmcrun.TestCase):

    def setUp(self):
        super().setUp()
        self.dag = self.write_dag("wf.dag", "\n".join(
            "TASK %s /bin/sh -c 'echo %s; echo %s-err >&2; sleep 0.5'" % (t, t, t)
            for t in names()))
        self.rescue = self.dag + ".rescue"

    def wait_first_done(self, proc):
        """Wait until the rescue log holds a DONE record (the run is under
        way, tasks still run), or fail."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            text = pmcrun.read_text(self.rescue) or ""
            if "DONE " in text:
                return
            if proc.poll() is not None:
                break
            time.sleep(0.01)
        res = pmcrun.finish(proc)
        self.fail("no DONE record in %s while the run went\n%s" % (self.rescue, res.describe()))

    def run_and(self, args, act):
        """Start pmc-hybrid with args, act() once the first DONE is in the
        rescue log, and return the run's Result."""
        proc = self.start_pmc(["--host-cpus", "2", "--no-progress"] + args + [self.dag])
        self.wait_first_done(proc)
        act()
        return pmcrun.finish(proc, timeout=WAIT)

    def failed_problems(self, res, message):
        """A run that must fail: exit 1, message on stderr, no success."""
        problems = []
        if res.timed_out:
            problems.append("timed out")
        if res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        if message not in res.stderr:
            problems.append("no %r on stderr" % message)
        if "Workflow succeeded" in res.stderr:
            problems.append("\"Workflow succeeded\" on stderr")
        if 'stat="failed"' not in res.stdout:
            problems.append("no [cluster-summary stat=\"failed\"] on stdout")
        return problems

    def replace_with(self, path, text):
        """Rename a new file holding text over path."""
        other = self.write("other.tmp", text)
        os.rename(other, path)

    # ---- the rescue log

    def test_rescue_deleted(self):
        res = self.run_and([], lambda: os.unlink(self.rescue))
        problems = self.failed_problems(
            res, "The rescue log %s was deleted during the run: it is written again there"
            % self.rescue)
        rescue = pmcrun.parse_rescue(self.rescue)
        problems += rescue.problems
        if sorted(rescue.done_set) != names():
            problems.append("the rescue log lists %s, expected every task"
                            % sorted(rescue.done_set))
        self.check(problems, res)
        again = self.run_pmc(["--host-cpus", "2", "--no-progress", self.dag])
        if again.returncode != 0 or again.tasks:
            self.fail("the rerun must run nothing and exit 0\n" + again.describe())

    def test_rescue_replaced(self):
        mine = "# the user's file\nDONE t1\n"
        res = self.run_and([], lambda: self.replace_with(self.rescue, mine))
        problems = self.failed_problems(
            res, "The rescue log %s was deleted or replaced during the run: progress since then "
            "is not recorded there" % self.rescue)
        if pmcrun.read_text(self.rescue) != mine:
            problems.append("the file renamed over the rescue log was changed: %r"
                            % pmcrun.read_text(self.rescue))
        self.check(problems, res)

    # ---- -o and -e

    def check_output_deleted(self, option, stream):
        out = self.path("task.%s" % stream)
        res = self.run_and([option, out], lambda: os.unlink(out))
        problems = self.failed_problems(
            res, "The %s file %s was deleted or replaced during the run: the task output is not "
            "merged into it" % (option, out))
        if os.path.exists(out):
            problems.append("%s was made again" % out)
        kept = pmcrun.read_text("%s.%s.0" % (self.dag, stream)) or ""
        for t in names():
            if ("%s-err" % t if stream == "err" else "\n%s\n" % t) not in "\n" + kept:
                problems.append("%s.%s.0 does not keep %s's output" % (self.dag, stream, t))
        self.check(problems, res, case=option)
        again = self.run_pmc(["--host-cpus", "2", "--no-progress", option, out, self.dag])
        merged = pmcrun.read_text(out) or ""
        if again.returncode != 0 or any(t not in merged for t in names()):
            self.fail("the rerun must exit 0 and merge every task's output into %s: %r\n%s"
                      % (out, merged[:300], again.describe()))

    def test_output_deleted(self):
        self.check_output_deleted("-o", "out")

    def test_error_output_deleted(self):
        self.check_output_deleted("-e", "err")

    def test_output_replaced(self):
        out = self.path("task.out")
        mine = "the user's file\n"
        res = self.run_and(["-o", out], lambda: self.replace_with(out, mine))
        problems = self.failed_problems(
            res, "The -o file %s was deleted or replaced during the run" % out)
        if pmcrun.read_text(out) != mine:
            problems.append("the file renamed over -o was changed: %r" % pmcrun.read_text(out))
        self.check(problems, res)

    def test_jobstate_deleted(self):
        log = self.path("jobstate.log")
        res = self.run_and(["--jobstate-log"], lambda: os.unlink(log))
        self.check(self.failed_problems(
            res, "%s was deleted or replaced during the run" % log), res)

    # ---- a lost stdout

    def popen(self, args, stdout, stderr):
        argv = pmcrun.command(["--host-cpus", "2", "--no-progress"] + args + [self.dag])
        proc = subprocess.Popen(argv, cwd=self.tmp, env=pmcrun.run_env(), stdin=subprocess.DEVNULL,
                                stdout=stdout, stderr=stderr, start_new_session=True)
        proc.argv, proc.t0 = argv, time.monotonic()
        self.addCleanup(pmcrun.kill_session, proc)
        return proc

    def lost_problems(self, rc, stderr):
        problems = []
        if rc != 1:
            problems.append("exit status %s, expected 1" % rc)
        if "Output lost: " not in stderr:
            problems.append("no \"Output lost: \" on stderr")
        if "Workflow succeeded" in stderr:
            problems.append("\"Workflow succeeded\" on stderr")
        return problems

    def test_stdout_reader_gone(self):
        r, w = os.pipe()
        os.close(r)  # the reader is gone before the run starts
        try:
            proc = self.popen(["-o", self.path("task.out")], w, subprocess.PIPE)
        finally:
            os.close(w)
        try:
            _, err = proc.communicate(timeout=WAIT)
        except subprocess.TimeoutExpired:
            pmcrun.kill_session(proc)
            self.fail("timed out")
        err = err.decode("utf-8", "replace")
        problems = self.lost_problems(proc.returncode, err)
        if "stdout" not in err:
            problems.append("the message does not name stdout")
        self.check(problems, case="stdout_reader_gone: stderr:\n" + err)

    def test_head_one(self):
        n = 8
        self.dag = self.write_dag("wf.dag", "\n".join(
            "TASK %s /bin/sh -c 'echo line-%s; sleep 0.3'" % (t, t) for t in names(n)))
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            proc = self.popen([], out_w, err_w)
        finally:
            os.close(out_w)
        err = b""
        try:
            # the run has started (its tasks take about 1.2 s): fill its
            # stderr, so that its next log line waits for the test
            deadline = time.monotonic() + WAIT
            while b"Starting workflow" not in err and time.monotonic() < deadline:
                if select.select([err_r], [], [], 1)[0]:
                    chunk = os.read(err_r, 65536)
                    if not chunk:
                        break
                    err += chunk
            self.assertIn(b"Starting workflow", err, "the run did not start")
            # a writer of its own (not O_NONBLOCK on err_w, whose file
            # description pmc-hybrid's stderr shares)
            fill = os.open("/proc/self/fd/%d" % err_w, os.O_WRONLY | os.O_NONBLOCK)
            try:
                for size in (4096, 1):
                    try:
                        while True:
                            os.write(fill, b"#" * size)
                    except BlockingIOError:
                        pass
            finally:
                os.close(fill)
            # head -1: the first line of the merged task output, then close
            first = b""
            while b"\n" not in first:
                ready = select.select([out_r], [], [], WAIT)[0]
                self.assertTrue(ready, "no task output on stdout")
                chunk = os.read(out_r, 4096)
                self.assertTrue(chunk, "stdout closed before a line came")
                first += chunk
            self.assertTrue(first.startswith(b"line-t"), first[:100])
        finally:
            os.close(out_r)
            os.close(err_w)
        with os.fdopen(err_r, "rb") as f:  # lets pmc-hybrid log again, to its end
            err = f.read()
        try:
            proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            pmcrun.kill_session(proc)
            self.fail("timed out")
        text = err.decode("utf-8", "replace").replace("#", "")
        self.check(self.lost_problems(proc.returncode, text), case="head_one: stderr:\n" + text)


if __name__ == "__main__":
    pmcrun.main()
