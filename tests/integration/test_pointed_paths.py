#!/usr/bin/env python3
"""test_pointed_paths.py - never destroy what the user points at (issue 45).

Two of a run's files that are one file (engine/master/master.c master_check_paths(),
io/pathset.h): every pair the issue names is refused before anything is
opened for writing, exit 1, one message naming both options, no task run,
and the directory byte-identical afterwards (the aliased file included):
--status and --summary-json naming the DAG or the rescue log (default and
-r), -o/-e naming the rescue log, -o/-e naming --status/--summary-json's
file, --status and --summary-json naming one file; the same through a
symbolic link, through other spellings (./x, sub/../x) and through a hard
link; a rank's stdio file (DAG.out.0), an event log (--jobstate-log), a
forward destination of the DAG (-F, -f), a --per-task-stdio file.  -o and
-e naming one file is still allowed (one descriptor).  Before, each of
these ran every task and replaced the DAG or the rescue log with JSON, or
lost the task output, with exit 0.

Outputs checked at start: --status '' and --summary-json '' are refused at
option parsing naming the option (before, every task ran and the write
failed at the end, exit 0); a --status file that cannot be written at the
end (its directory removed by a task) makes the exit status 1 (before: 0).

One rescue log, two DAGs: a run holds the lock of the rescue log it writes
(-r), so a second run of another DAG with the same -r is refused while the
first runs (message naming the rescue log), none of its tasks run, and the
first run ends well; once it ended the log is free again.  A run refused
after taking the lock leaves no rescue log where there was none.

The tools: pmc-dag dot and pmc-dag from-wfcommons refuse -o naming their
input (another spelling, a hard link), the input untouched; pmc-plot
refuses -o naming one of its record files.
"""

import json
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

TASKS = """TASK A /bin/touch {dir}/ran.A
TASK B /bin/touch {dir}/ran.B
EDGE A B
"""

OLD_RESCUE = "# rescue log of an earlier run\n"


def snapshot(folder):
    """{relative path: bytes, or ('link', target), or ('dir',)} of a tree."""
    state = {}
    for root, dirs, files in os.walk(folder):
        for d in dirs:
            state[os.path.relpath(os.path.join(root, d), folder)] = ("dir",)
        for f in files:
            p = os.path.join(root, f)
            if os.path.islink(p):
                state[os.path.relpath(p, folder)] = ("link", os.readlink(p))
                continue
            with open(p, "rb") as fh:
                state[os.path.relpath(p, folder)] = fh.read()
    return state


def tool(argv, cwd):
    return subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60, universal_newlines=True)


class PointedPaths(pmcrun.TestCase):
    def case_dir(self, name, dag_text=TASKS):
        """A fresh directory with w.dag (tasks that leave ran.* markers), a
        rescue log w.dag.rescue, r.rescue, data files st.json and x.json,
        and a subdirectory sub."""
        folder = self.path(name)
        os.mkdir(folder)
        os.mkdir(os.path.join(folder, "sub"))
        for f, text in (("w.dag", dag_text.format(dir=folder)), ("w.dag.rescue", OLD_RESCUE),
                        ("r.rescue", OLD_RESCUE), ("st.json", '{"mine": 1}\n'),
                        ("x.json", '{"mine": 2}\n')):
            with open(os.path.join(folder, f), "w") as fh:
                fh.write(text)
        return folder

    def refused_problems(self, res, folder, before, names):
        problems = []
        if res.timed_out or res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        ran = sorted(f for f in os.listdir(folder) if f.startswith("ran."))
        if ran or res.tasks:
            problems.append("tasks ran: %s, %d records" % (ran, len(res.tasks)))
        lines = pmcrun.stderr_lines(res)
        if not any(all(n in line for n in names) for line in lines):
            problems.append("no stderr line names all of %s" % names)
        after = snapshot(folder)
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        if changed:
            problems.append("files created or changed: %s" % ", ".join(changed))
        return problems

    def run_refused(self, name, args, names, setup=None, dag_text=TASKS):
        folder = self.case_dir(name, dag_text)
        if setup:
            setup(folder)
        before = snapshot(folder)
        res = pmcrun.run(["--host-cpus", "2"] + args + ["w.dag"], cwd=folder, timeout=60)
        self.check(self.refused_problems(res, folder, before, names), res, name)

    def test_aliasing_outputs_are_refused(self):
        """Every pair the issue names, the same spelling."""
        cases = [
            ("status-dag", ["--status", "w.dag"], ["--status w.dag", "the DAG"]),
            ("summary-dag", ["--summary-json", "w.dag"], ["--summary-json w.dag", "the DAG"]),
            ("status-rescue", ["--status", "w.dag.rescue"],
             ["--status w.dag.rescue", "the rescue log", "name the same file"]),
            ("summary-rescue", ["--summary-json", "w.dag.rescue"],
             ["--summary-json w.dag.rescue", "the rescue log"]),
            ("status-r", ["-r", "r.rescue", "--status", "r.rescue"],
             ["--status r.rescue and the rescue log (-r) name the same file r.rescue"]),
            ("summary-r", ["-r", "r.rescue", "--summary-json", "r.rescue"],
             ["--summary-json r.rescue", "the rescue log (-r)"]),
            ("o-rescue", ["-o", "w.dag.rescue"], ["-o w.dag.rescue", "the rescue log"]),
            ("e-rescue", ["-e", "w.dag.rescue"], ["-e w.dag.rescue", "the rescue log"]),
            ("o-r", ["-r", "r.rescue", "-o", "r.rescue"], ["-o r.rescue", "the rescue log (-r)"]),
            ("o-status", ["--status", "st.json", "-o", "st.json"], ["--status st.json and -o name the same file st.json"]),
            ("e-status", ["--status", "st.json", "-e", "st.json"], ["--status st.json and -e"]),
            ("o-summary", ["--summary-json", "st.json", "-o", "st.json"],
             ["--summary-json st.json and -o"]),
            ("e-summary", ["--summary-json", "st.json", "-e", "st.json"],
             ["--summary-json st.json and -e"]),
            ("status-summary", ["--status", "st.json", "--summary-json", "st.json"],
             ["--summary-json st.json and --status"]),
            ("o-rank-file", ["-o", "w.dag.out.0"], ["rank 0's stdout file", "-o"]),
            ("status-jobstate", ["--jobstate-log", "--status", "jobstate.log"],
             ["the jobstate log (--jobstate-log)", "--status"]),
        ]
        for name, args, names in cases:
            with self.subTest(case=name):
                self.run_refused(name, args, names)

    def test_aliasing_through_other_names(self):
        """A symbolic link, ./x, sub/../x, an absolute path, a hard link."""

        def symlink(target, name):
            return lambda folder: os.symlink(target, os.path.join(folder, name))

        def hardlink(target, name):
            return lambda folder: os.link(os.path.join(folder, target),
                                          os.path.join(folder, name))

        cases = [
            ("symlink-rescue", ["--status", "lnk"], symlink("w.dag.rescue", "lnk"),
             ["--status lnk", "the rescue log"]),
            ("symlink-dag", ["--summary-json", "lnk"], symlink("w.dag", "lnk"),
             ["--summary-json lnk", "the DAG"]),
            ("dot-slash", ["--status", "./w.dag.rescue"], None,
             ["--status ./w.dag.rescue", "the rescue log"]),
            ("dot-dot", ["--summary-json", "sub/../w.dag"], None,
             ["--summary-json sub/../w.dag", "the DAG"]),
            ("dot-dot-new", ["--status", "sub/../new.json", "-o", "./new.json"], None,
             ["--status sub/../new.json and -o name the same file ./new.json"]),
            ("hardlink-rescue", ["--status", "hl"], hardlink("w.dag.rescue", "hl"),
             ["--status hl", "the rescue log"]),
            ("hardlink-dag-o", ["-o", "hl"], hardlink("w.dag", "hl"), ["-o hl", "the DAG"]),
        ]
        for name, args, setup, names in cases:
            with self.subTest(case=name):
                self.run_refused(name, args, names, setup)
        with self.subTest(case="absolute"):
            absolute = os.path.join(self.path("absolute"), "w.dag.rescue")
            self.run_refused("absolute", ["--status", absolute],
                             ["--status " + absolute, "the rescue log"])

    def test_forward_and_per_task_files_are_refused_before_any_task(self):
        """The DAG's forward destinations and --per-task-stdio files are
        compared with the run's files before the first task."""
        fwd = TASKS + "TASK C -F {dir}/in.txt=st.json /bin/true\nEDGE B C\n"
        pipe = TASKS + "TASK C -f X=./w.dag.rescue /bin/true\n"
        cases = [("forward-F", ["--status", "st.json"], fwd,
                  ["w.dag:4: task C's -F destination st.json and --status"]),
                 ("forward-f", [], pipe,
                  ["task C's -f destination ./w.dag.rescue", "the rescue log"]),
                 ("per-task", ["--per-task-stdio", "--summary-json", "B.out.000"], TASKS,
                  ["--summary-json B.out.000", "--per-task-stdio files of task B"])]
        for name, args, dag_text, names in cases:
            with self.subTest(case=name):
                self.run_refused(name, args, names, dag_text=dag_text)

    def test_o_and_e_naming_one_file_still_run(self):
        folder = self.case_dir("o-e")
        os.unlink(os.path.join(folder, "w.dag.rescue"))
        res = pmcrun.run(["--host-cpus", "2", "-o", "log", "-e", "./log", "w.dag"], cwd=folder,
                         timeout=60)
        problems = [] if res.returncode == 0 else ["exit status %s" % res.returncode]
        ran = sorted(f for f in os.listdir(folder) if f.startswith("ran."))
        if ran != ["ran.A", "ran.B"]:
            problems.append("tasks that ran: %s" % ran)
        log = pmcrun.parse_output(pmcrun.read_text(os.path.join(folder, "log")) or "")
        if sorted(t.name for t in log.tasks) != ["A", "B"]:
            problems.append("log holds records of %s" % [t.name for t in log.tasks])
        self.check(problems, res)

    def test_empty_output_paths_are_refused_at_once(self):
        for opt, name in (("--status", "--status"), ("--summary-json", "--summary-json"),
                          ("-o", "-o/--stdout"), ("-r", "-r/--rescue")):
            with self.subTest(option=opt):
                folder = self.case_dir("empty" + opt.replace("-", "_"))
                before = snapshot(folder)
                res = pmcrun.run(["--host-cpus", "2", opt, "", "w.dag"], cwd=folder, timeout=60)
                self.check(self.refused_problems(
                    res, folder, before, ["invalid value for %s: ''" % name, "must name a file"]),
                    res, opt)

    def test_status_that_cannot_be_written_at_the_end_fails_the_run(self):
        """Checked at start, then gone (a task removes its directory): the
        last write fails and so does the run."""
        for opt in ("--status", "--summary-json"):
            with self.subTest(option=opt):
                folder = self.case_dir("end" + opt.replace("-", "_"),
                                       "TASK A /bin/rm -rf {dir}/out\n")
                os.unlink(os.path.join(folder, "w.dag.rescue"))
                os.mkdir(os.path.join(folder, "out"))
                res = pmcrun.run(["--host-cpus", "2", opt, "out/s.json", "w.dag"], cwd=folder,
                                 timeout=60)
                problems = []
                if res.timed_out or res.returncode != 1:
                    problems.append("exit status %s, expected 1" % res.returncode)
                if "Cannot write out/s.json.tmp" not in res.stderr:
                    problems.append("stderr lacks 'Cannot write out/s.json.tmp'")
                if [s.get("stat") for s in res.summaries] != ["failed"]:
                    problems.append("cluster-summary %s, expected stat=failed"
                                    % [s.get("stat") for s in res.summaries])
                self.check(problems, res, opt)

    def wait_locked(self, path, proc, timeout=30.0):
        """Wait until path exists and is locked by another process (the
        first run's lock of its rescue log)."""
        import fcntl
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with open(path, "rb+") as f:
                    try:
                        fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        fcntl.lockf(f, fcntl.LOCK_UN)
                    except OSError:
                        return True
            except FileNotFoundError:
                pass
            time.sleep(0.02)
        return False

    def test_one_rescue_log_two_dags(self):
        """-r r.rescue w.dag and -r r.rescue w2.dag at once: the second is
        refused while the first holds the log; afterwards it is free."""
        folder = self.path("two")
        os.mkdir(folder)
        for name, prefix in (("w.dag", "a"), ("w2.dag", "b")):
            with open(os.path.join(folder, name), "w") as f:
                for i in range(3):
                    f.write("TASK {p}{i} /bin/sh -c 'touch {d}/ran.{p}{i}; sleep 1'\n".format(
                        p=prefix, i=i, d=folder))
                f.write("EDGE {p}0 {p}1\nEDGE {p}1 {p}2\n".format(p=prefix))
        rescue = os.path.join(folder, "r.rescue")
        first = pmcrun.start(["--host-cpus", "2", "-r", "r.rescue", "w.dag"], cwd=folder)
        self.addCleanup(pmcrun.kill_session, first)
        problems = []
        if not self.wait_locked(rescue, first):
            problems.append("the first run never held a lock on r.rescue")
        second = pmcrun.run(["--host-cpus", "2", "-r", "r.rescue", "w2.dag"], cwd=folder,
                            timeout=60)
        res = pmcrun.finish(first, timeout=60)
        if second.timed_out or second.returncode != 1:
            problems.append("second run: exit status %s, expected 1" % second.returncode)
        want = "the rescue log r.rescue is locked by another pmc-hybrid run"
        if want not in second.stderr:
            problems.append("second run: stderr lacks %r" % want)
        ran_b = sorted(f for f in os.listdir(folder) if f.startswith("ran.b"))
        if ran_b or second.tasks:
            problems.append("second run's tasks ran: %s" % ran_b)
        if res.returncode != 0:
            problems.append("first run: exit status %s, expected 0" % res.returncode)
        done = pmcrun.parse_rescue(rescue).done_set
        if done != {"a0", "a1", "a2"}:
            problems.append("r.rescue lists %s, expected a0, a1, a2" % sorted(done))
        self.check(problems, second, "second run")
        # the log is free once the first run ended (-s: w2.dag's tasks are others)
        third = pmcrun.run(["--host-cpus", "2", "-s", "-r", "r.rescue", "w2.dag"], cwd=folder,
                           timeout=60)
        self.assertEqual(third.returncode, 0, third.describe())
        self.assertEqual(pmcrun.parse_rescue(rescue).done_set, {"b0", "b1", "b2"})

    def test_refused_run_leaves_no_rescue_log(self):
        """The lock creates a missing rescue log; a run refused after that
        (an output that cannot be opened) removes it again."""
        folder = self.case_dir("no-rescue")
        os.unlink(os.path.join(folder, "w.dag.rescue"))
        before = snapshot(folder)
        res = pmcrun.run(["--host-cpus", "2", "-o", "nodir/out.txt", "w.dag"], cwd=folder,
                         timeout=60)
        problems = self.refused_problems(res, folder, before, ["nodir/out.txt"])
        self.check(problems, res)

    # ------------------------------------------------------------- the tools

    def pmc_dag(self):
        return os.path.join(os.path.dirname(pmcrun.CONFIG.bin), "pmc-dag")

    def tool_refused(self, argv, folder, names):
        before = snapshot(folder)
        proc = tool(argv, folder)
        problems = []
        if proc.returncode == 0:
            problems.append("exit status 0")
        if not all(n in proc.stderr for n in names):
            problems.append("stderr %r lacks %s" % (proc.stderr.strip(), names))
        after = snapshot(folder)
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        if changed:
            problems.append("files created or changed: %s" % ", ".join(changed))
        return problems

    def test_tools_refuse_output_that_is_input(self):
        folder = self.case_dir("tools")
        os.link(os.path.join(folder, "w.dag"), os.path.join(folder, "hl.dag"))
        wf = os.path.join(folder, "wf.json")
        with open(wf, "w") as f:
            json.dump({"schemaVersion": "1.4", "workflow": {"tasks": [
                {"name": "a", "parents": [], "children": ["b"], "runtimeInSeconds": 1},
                {"name": "b", "parents": ["a"], "children": [], "runtimeInSeconds": 2}]}}, f)
        records = os.path.join(folder, "run.svg")
        with open(records, "w") as f:
            f.write('[cluster-task id=1, name=a, start="2026-01-01T00:00:00.000+00:00", '
                    'duration=1.000, status=0, app="/bin/a", hostname="n", slot=0, cpus=1, '
                    'memory=0]\n')
        cases = [
            ("dot", [self.pmc_dag(), "dot", "w.dag", "-o", "./w.dag"],
             ["-o ./w.dag and the DAG name the same file w.dag"]),
            ("dot hard link", [self.pmc_dag(), "dot", "w.dag", "-o", "hl.dag"],
             ["-o hl.dag", "the DAG"]),
            ("from-wfcommons", [self.pmc_dag(), "from-wfcommons", "wf.json", "-o", "wf.json"],
             ["-o wf.json and the WfCommons instance"]),
            ("pmc-plot", [os.path.join(pmcrun.CONFIG.source_dir, "tools", "pmc-plot"),
                          "run.svg", "-o", "sub/../run.svg"],
             ["-o sub/../run.svg and the input run.svg name the same file"]),
        ]
        for name, argv, names in cases:
            with self.subTest(case=name):
                self.check(self.tool_refused(argv, folder, names), None, name)


if __name__ == "__main__":
    pmcrun.main()
