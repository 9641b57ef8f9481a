#!/usr/bin/env python3
"""test_outputs.py - every output is opened or checked before any task starts
(docs/compat-notes.md, "Outputs").

Each case runs a DAG of three tasks (a, b, c) that touch marker files, with
a rescue file "\\nDONE a" (PMC's style, which a run that starts rewrites as
"DONE a\\n") and one output that cannot be opened: a path in a missing
directory ("No such file or directory"), a path that is a directory ("Is a
directory"), or, as the unprivileged user nobody (65534), a path in a
read-only (0555) directory ("Permission denied").  Every case must: exit 1,
name the path and the reason on stderr, run no task (no marker file, no
[cluster-task] record), leave the rescue file byte-identical and leave no
PATH.tmp behind; and print `[cluster-summary stat="failed" ...]` on stdout,
except where noted.

  * missing_directory / is_a_directory: -o, -e ("Unable to open PATH:
    REASON"), -r in a missing directory ("Unable to write the rescue log
    PATH.tmp: REASON"; -r PATH is not created), --status and --summary-json
    ("Unable to open PATH.tmp: ..." for a missing directory, "Unable to open
    PATH: Is a directory").
  * startup_errors: -r naming a directory, and DAG.rescue being a directory,
    fail while the rescue log is read, before the run starts: exit 1,
    "PATH: Is a directory" on stderr, no cluster-summary at all.
  * logs_beside_the_dag: DAG.resource (on by default), jobstate.log
    (--jobstate-log), DAG.dagman.out (--monitord-hack) as directories:
    "Unable to open PATH: Is a directory"; the same directories are ignored
    when their log is off (--no-resource-log; no --jobstate-log or
    --monitord-hack): the run succeeds, b and c run, a does not, and the
    rescue file is rewritten ("DONE a\\n" first).
  * per_rank_files: DAG.out.0 a directory (1 rank), DAG.err.1 a directory
    (mpiexec -n 2: the agent on rank 1), DAG.out.2 a directory (mpiexec -n 3
    --ranks-are-hosts: a remote agent): "Unable to open PATH: Is a
    directory", the summary still printed by rank 0.
  * read_only_directory (as nobody; the temp dirs are made traversable, the
    DAG's directory is 0555, the rescue file root's 0644): the first output
    the run checks names "Permission denied": DAG.resource by default;
    DAG.rescue.tmp with --no-resource-log; jobstate.log, DAG.dagman.out and
    -o DIR/out with --no-resource-log -r ELSEWHERE; DAG.out.0 (1 rank) and
    DAG.out.1 (mpiexec -n 2) with --no-resource-log -r ELSEWHERE; -r
    ELSEWHERE is not created.  MPICH's singleton and mpiexec start as
    nobody with the caller's environment (HOME=/root is not needed).
"""

import os
import re
import stat
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

RESCUE = b"\nDONE a"  # PMC's style: rewritten as b"DONE a\n" by a run that starts
NOBODY = 65534
ENOENT = "No such file or directory"
EISDIR = "Is a directory"
EACCES = "Permission denied"


def as_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def read_bytes(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


class Outputs(pmcrun.TestCase):
    def case_dir(self, name):
        """A fresh directory holding w.dag (tasks a, b, c touching
        MARKERS/ran.NAME) and w.dag.rescue (RESCUE).  Returns (dir, dag,
        markers)."""
        folder = self.path(re.sub(r"[^A-Za-z0-9.]+", "_", name).strip("_"))
        os.mkdir(folder)
        markers = folder + ".markers"
        os.mkdir(markers)
        os.chmod(markers, 0o777)  # writable by a task run as nobody
        dag = os.path.join(folder, "w.dag")
        with open(dag, "w") as f:
            for t in "abc":
                f.write("TASK %s /bin/touch %s/ran.%s\n" % (t, markers, t))
        with open(dag + ".rescue", "wb") as f:
            f.write(RESCUE)
        return folder, dag, markers

    def failed_problems(self, res, folder, dag, markers, message, summary=True,
                        rescue=RESCUE, absent=()):
        problems = []
        if res.timed_out or res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        if message not in res.stderr:
            problems.append("stderr lacks %r" % message)
        if summary:
            stats = [s.get("stat") for s in res.summaries]
            if stats != ["failed"]:
                problems.append("cluster-summary stat= %s on stdout, expected one 'failed'"
                                % stats)
        elif res.summaries:
            problems.append("%d cluster-summary records, expected none (a start-up error)"
                            % len(res.summaries))
        problems += res.output.problems
        if res.tasks:
            problems.append("%d cluster-task records: %s"
                            % (len(res.tasks), [r.name for r in res.tasks]))
        ran = sorted(os.listdir(markers))
        if ran:
            problems.append("tasks ran: %s" % ran)
        if rescue is not None:
            got = read_bytes(dag + ".rescue")
            if got != rescue:
                problems.append("rescue file changed from %r to %r" % (rescue, got))
        for path in (dag + ".rescue.tmp",) + tuple(absent):
            if os.path.lexists(path):
                problems.append("%s exists after the failed run" % path)
        return problems

    def one(self, name, args, message, ranks=1, hosts=False, summary=True, setup=None,
            absent=()):
        """Run case `name`: setup(folder, dag) prepares the bad output and
        returns the path it made unopenable; args and message may use
        {path}, {dag} and {dir}."""
        with self.subTest(case=name):
            folder, dag, markers = self.case_dir(name)
            path = setup(folder, dag) if setup else None
            fmt = {"path": path, "dag": dag, "dir": folder}
            argv = [a.format(**fmt) for a in args] + [dag]
            res = pmcrun.run(argv, ranks=ranks, cwd=folder, timeout=60, ranks_are_hosts=hosts)
            self.check(self.failed_problems(res, folder, dag, markers, message.format(**fmt),
                                            summary=summary,
                                            absent=[a.format(**fmt) for a in absent]),
                       res, name)

    # ------------------------------------------------------------ cases

    def test_missing_directory(self):
        missing = lambda folder, dag: os.path.join(folder, "nodir", "file")  # noqa: E731
        self.one("-o", ["-o", "{path}"], "Unable to open {path}: " + ENOENT, setup=missing)
        self.one("-e", ["-e", "{path}"], "Unable to open {path}: " + ENOENT, setup=missing)
        self.one("-r", ["-r", "{path}"], "Unable to write the rescue log {path}.tmp: " + ENOENT,
                 setup=missing, absent=["{path}"])
        self.one("--status", ["--status", "{path}"], "Unable to open {path}.tmp: " + ENOENT,
                 setup=missing)
        self.one("--summary-json", ["--summary-json", "{path}"],
                 "Unable to open {path}.tmp: " + ENOENT, setup=missing)

    def test_is_a_directory(self):
        def a_dir(folder, dag):
            path = os.path.join(folder, "adir")
            os.mkdir(path)
            return path
        for opt in ("-o", "-e", "--status", "--summary-json"):
            self.one(opt, [opt, "{path}"], "Unable to open {path}: " + EISDIR, setup=a_dir)

    def test_startup_errors(self):
        def a_dir(folder, dag):
            path = os.path.join(folder, "adir")
            os.mkdir(path)
            return path

        def rescue_dir(folder, dag):
            os.unlink(dag + ".rescue")
            os.mkdir(dag + ".rescue")
            return dag + ".rescue"
        with self.subTest(case="-r DIR"):
            folder, dag, markers = self.case_dir("-r DIR")
            path = a_dir(folder, dag)
            res = pmcrun.run(["-r", path, dag], cwd=folder, timeout=60)
            self.check(self.failed_problems(res, folder, dag, markers, "%s: %s" % (path, EISDIR),
                                            summary=False), res, "-r DIR")
        with self.subTest(case="DAG.rescue is a directory"):
            folder, dag, markers = self.case_dir("rescue is dir")
            path = rescue_dir(folder, dag)
            res = pmcrun.run([dag], cwd=folder, timeout=60)
            problems = self.failed_problems(res, folder, dag, markers, "%s: %s" % (path, EISDIR),
                                            summary=False, rescue=None)
            if not os.path.isdir(path) or os.listdir(path):
                problems.append("the rescue directory was changed")
            self.check(problems, res, "DAG.rescue is a directory")

    def test_logs_beside_the_dag(self):
        logs = (("DAG.resource", lambda d: d + ".resource", [], ["--no-resource-log"]),
                ("jobstate.log", lambda d: os.path.join(os.path.dirname(d), "jobstate.log"),
                 ["--jobstate-log"], []),
                ("DAG.dagman.out", lambda d: d + ".dagman.out", ["--monitord-hack"], []))
        for name, where, on, off in logs:
            def setup(folder, dag, where=where):
                os.mkdir(where(dag))
                return where(dag)
            self.one(name, on, "Unable to open {path}: " + EISDIR, setup=setup)
            case = "%s is a directory, log off" % name
            with self.subTest(case=case):
                folder, dag, markers = self.case_dir(case)
                setup(folder, dag)
                res = pmcrun.run(off + ["--host-cpus", "2", dag], cwd=folder, timeout=60)
                problems = []
                if res.timed_out or res.returncode != 0:
                    problems.append("exit status %s, expected 0" % res.returncode)
                ran = sorted(os.listdir(markers))
                if ran != ["ran.b", "ran.c"]:
                    problems.append("markers %s, expected ran.b and ran.c (a was DONE)" % ran)
                got = read_bytes(dag + ".rescue") or b""
                if not got.startswith(b"DONE a\n") or sorted(got.split(b"\n")) != \
                        [b"", b"DONE a", b"DONE b", b"DONE c"]:
                    problems.append("rescue file %r, expected DONE a, b, c (rewritten)" % got)
                self.check(problems, res, case)

    def test_per_rank_files(self):
        def rank_dir(kind):
            def setup(folder, dag):
                os.mkdir(dag + kind)
                return dag + kind
            return setup
        self.one("DAG.out.0, 1 rank", [], "Unable to open {path}: " + EISDIR,
                 setup=rank_dir(".out.0"))
        self.one("DAG.err.1, mpiexec -n 2", [], "Unable to open {path}: " + EISDIR, ranks=2,
                 setup=rank_dir(".err.1"))
        self.one("DAG.out.2, mpiexec -n 3 --ranks-are-hosts", [],
                 "Unable to open {path}: " + EISDIR, ranks=3, hosts=True,
                 setup=rank_dir(".out.2"))

    def test_rank_file_deleted_during_the_run(self):
        """A task deletes the rank's output files before the merge: the
        run fails, naming them, instead of merging them as "no output"
        (the -o file empty, exit 0); and the tasks of this run are taken
        out of the rescue log, so that the rerun runs them again, while
        the task done in an earlier run keeps its record."""
        dag_path = self.write("del.dag",
                              "TASK early /bin/true\n"
                              "TASK a /bin/echo hello\n"
                              "TASK cleanup /bin/sh -c \"rm -f %s.out.* %s.err.*\"\n"
                              "EDGE early a\n"
                              "EDGE a cleanup\n" % (self.path("del.dag"), self.path("del.dag")))
        self.write("del.dag.rescue", "DONE early\n")
        res = pmcrun.run(["-o", self.path("out.txt"), dag_path], cwd=self.tmp, timeout=60)
        problems = []
        if res.timed_out or res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        for k in ("out", "err"):
            want = "Task output lost: %s.%s.0 was deleted during the run" % (dag_path, k)
            if want not in res.stderr:
                problems.append("stderr lacks %r" % want)
        want = "Task output lost: 2 tasks (a, ...) will run again, their records taken out of %s" \
            % (dag_path + ".rescue")
        if want not in res.stderr:
            problems.append("stderr lacks %r" % want)
        with open(dag_path + ".rescue") as f:
            rescue = f.read()
        if rescue != "DONE early\n":
            problems.append("rescue log %r, expected only the earlier run's 'DONE early'" % rescue)
        self.check(problems, res)

    # ------------------------------------------------ read-only as nobody

    def traversable_problems(self):
        """Every directory above the temp dir and the binary must be
        searchable by nobody."""
        problems = []
        for start in (self.tmp, os.path.dirname(os.path.realpath(pmcrun.CONFIG.bin))):
            path = os.path.dirname(start) if start == self.tmp else start
            while True:
                mode = os.stat(path).st_mode
                if not mode & stat.S_IXOTH:
                    problems.append("%s (mode %o) is not searchable by others" %
                                    (path, stat.S_IMODE(mode)))
                if path == "/":
                    break
                path = os.path.dirname(path)
        return problems

    def test_read_only_directory(self):
        if os.geteuid() != 0:
            self.fail("this test runs pmc-hybrid as nobody and must itself run as root "
                      "(CI does)")
        problems = self.traversable_problems()
        if problems:
            self.fail("nobody cannot reach the test's files: %s" % "; ".join(problems))
        os.chmod(self.tmp, 0o755)  # mkdtemp made it 0700
        elsewhere = self.path("elsewhere")
        os.mkdir(elsewhere)
        os.chmod(elsewhere, 0o777)
        quiet = ["--no-resource-log", "-r", os.path.join(elsewhere, "{case}.rescue")]
        cases = (
            ("default", [], 1, "Unable to open {dag}.resource: "),
            ("--no-resource-log", ["--no-resource-log"], 1,
             "Unable to write the rescue log {dag}.rescue.tmp: "),
            ("--jobstate-log", quiet + ["--jobstate-log"], 1,
             "Unable to open {dir}/jobstate.log: "),
            ("--monitord-hack", quiet + ["--monitord-hack"], 1,
             "Unable to open {dag}.dagman.out: "),
            ("-o", quiet + ["-o", "{dir}/out.txt"], 1, "Unable to open {dir}/out.txt: "),
            ("DAG.out.0", quiet, 1, "Unable to open {dag}.out.0: "),
            ("DAG.out.1 mpiexec -n 2", quiet, 2, "Unable to open {dag}.out.1: "),
        )
        for i, (name, args, ranks, message) in enumerate(cases):
            case = "ro%d" % i
            with self.subTest(case=name):
                folder, dag, markers = self.case_dir(case)
                os.chmod(folder, 0o555)
                fmt = {"dag": dag, "dir": folder, "case": case}
                argv = [a.format(**fmt) for a in args] + [dag]
                res = pmcrun.run(argv, ranks=ranks, cwd=elsewhere, timeout=60, preexec=as_nobody)
                problems = self.failed_problems(
                    res, folder, dag, markers, message.format(**fmt) + EACCES,
                    absent=[os.path.join(elsewhere, case + ".rescue")])
                if sorted(os.listdir(folder)) != ["w.dag", "w.dag.rescue"]:
                    problems.append("the read-only directory now holds %s"
                                    % sorted(os.listdir(folder)))
                self.check(problems, res, "as nobody, " + name)
                os.chmod(folder, 0o755)


if __name__ == "__main__":
    pmcrun.main()
