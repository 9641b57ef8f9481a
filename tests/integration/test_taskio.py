#!/usr/bin/env python3
"""test_taskio.py - task output, I/O forwarding and the monitoring logs (issue "task I/O").

What the PMC manual (TASK STDIO, --per-task-stdio, I/O FORWARDING and its
caveats, --jobstate-log, --monitord-hack, --no-resource-log) and COMPAT.md
("Task stdio", "Other files", messages) promise:

  * big_output: 32 tasks at once (--host-cpus 32) each print 10,000 lines
    "NAME I": in the merged stdout (1 rank, and 2 ranks with --ranks-are-hosts:
    two agents' per-rank files merged, both ran tasks) and in the -o FILE every
    task's 10,000 lines form one complete block, in order, immediately
    followed by that task's [cluster-task] line, and nothing is duplicated;
    with --per-task-stdio each NAME.out.000 (next to the DAG) holds exactly
    the task's lines followed by its own record, NAME.err.000 exists, and no
    task line reaches stdout.
  * per_task_stdio_retry: with --per-task-stdio a task tried twice (-t 2,
    fails once) leaves NAME.out.000 (attempt 1, record status 256) and
    NAME.out.001 (attempt 2, status 0), no NAME.out.002.
  * capture_files_of_the_slots_used: three tasks one after another
    (--host-cpus 8, TMPDIR a folder of the test's): the last one finds
    exactly two files of that folder open in pmc-hybrid (its own slot's
    stdout and stderr captures), not those of the slots the table holds.
  * capture_files_lent_once: 40 tasks one after another, then one that
    reads the watchdog's voluntary context switches (/proc/PID/status of
    pmc-hybrid's child "pmc-watchdog"): fewer than 20, since a slot's
    capture files are lent to it once (engine/exec/watchdog.h), not at every
    use of the slot (a message, and a wake-up, per task).
  * dev_null_stdout: -o /dev/null: exit 0, stdout holds only the
    cluster-summary, /dev/null is still a character device.
  * pipe_forward: 40 tasks (every 8th exiting 1 after writing) write 200
    lines each to -f OUT=DEST through the descriptor number in $OUT: DEST
    keeps its header line (appended, never truncated), every successful
    task's 200 lines appear once as one contiguous block in order, a failing
    task contributes nothing (1 rank, and 2 ranks with --ranks-are-hosts:
    data forwarded from a remote agent over MPI, both ranks ran tasks).
  * file_forward: -F SRC=DEST, the task writes SRC: the data lands in DEST
    (after its header) once per task and SRC is deleted.
  * file_forward_directory: SRC is a directory: stderr "Task NAME: SRC is not
    a file", the task fails, the run exits 1.
  * forward_unwritable_dest: DEST under a regular file (pipe and file
    forwarding): "Task NAME failed due to collective I/O errors", the task
    fails (not DONE, counted failed), an unrelated task succeeds, exit 1.
  * failed_forward_leaves_none_of_its_blocks: -f A=ok.txt -f B=blocker/x.txt
    with blocker a regular file: the attempt fails, ok.txt is cut back; the
    retry (which removes blocker) leaves one record in each file.
  * forward_to_the_runs_own_files_is_refused: -f to -o, DAG.out.0, the
    rescue log and the DAG fail their tasks, naming the file; the files are
    untouched; a forward beside them arrives.
  * pipe_after_many_file_forwards: a -f pipe after 300 -F files forwards
    200 KB whole, without and with a launcher pool.
  * forward_past_the_task_limit: a task forwards 1 GiB + 1 byte through a
    pipe: it fails with 256 and "forwarded more than 1024 MB", its DEST is
    never written; a small forward beside it arrives.
  * pipe_writers_large_and_cut_off: 16 tasks write 150-173 KB each through
    a pipe (more than it holds, so it must be read while they run) and 8
    write without end until their 0.3 s time limit stops them: every byte
    of the first arrives, nothing of the others, which fail with 124.
  * maxfds: --maxfds 1, 20 tasks each forwarding to one of 10 files and to a
    common file: every line arrives exactly once in the right files.
  * jobstate_log: --jobstate-log on a 3-task DAG (one task exits 3) in a
    subdirectory: jobstate.log is written next to the DAG (not in the working
    directory): "TS INTERNAL *** PMC_STARTED ***", per task SUBMIT,
    EXECUTE, JOB_TERMINATED (SEQ.0 - - SEQ) and JOB_SUCCESS 0 / JOB_FAILURE 3
    (- - SEQ) in that order with one SEQ per task, "*** PMC_FINISHED 1 ***"
    last; every line matches one of these shapes; a second run appends
    another such block after the unchanged first one.
  * monitord_hack: --monitord-hack writes DAG.dagman.out: every line starts
    "mm/dd/yy hh:mm:ss" within the run, "** PID = P" (P = pmc-hybrid's pid),
    "Parsing DAGNAME ...", per task ULOG_SUBMIT, ULOG_EXECUTE,
    ULOG_JOB_TERMINATED events "for Condor Node NAME (SEQ.0)" in order and
    "Node NAME job proc (SEQ.0) completed successfully." / "failed with
    status 3.", the last line "**** condor_scheduniv_exec.0.0
    (condor_DAGMAN) pid P EXITING WITH STATUS 1" (0 for a successful DAG);
    NAME.out.000 files exist (it implies --per-task-stdio).
  * resource_log: DAG.resource exists by default: lines
    "float,int,int,int,HOST" where HOST is the records' hostname (no "*"
    totals: PMC's lines only), timestamps within the run, free CPUs/memory within
    the --host-cpus/--host-memory given, some line shows CPUs in use, the
    last line of the host shows it all free again; --no-resource-log: no
    file.
"""

import datetime
import os
import re
import stat
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

LINES = """#!/bin/sh
# lines.sh NAME: print 10,000 lines "NAME I".
i=0
while [ $i -lt 10000 ]; do echo "$1 $i"; i=$((i+1)); done
"""

PIPE = """#!/bin/sh
# pipe.sh NAME STATUS: write 200 lines to the forwarded descriptor $OUT, exit STATUS.
i=0
while [ $i -lt 200 ]; do echo "data from $1 line $i" >&$OUT; i=$((i+1)); done
exit "$2"
"""

FLAKY = """#!/bin/sh
# flaky.sh COUNTFILE: print the attempt number; fail on the first attempt.
n=$(cat "$1" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$1"
echo "attempt $n"
test "$n" -gt 1
"""

NTASKS = 32
NLINES = 10000


def read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def block_problems(text, names, where):
    """Each task's NLINES lines directly precede its record, nothing
    duplicated."""
    out = pmcrun.parse_output(text)
    problems = ["%s: %s" % (where, p) for p in out.problems[:5]]
    lines = out.lines
    for name in names:
        recs = [r for r in out.tasks if r.name == name]
        if len(recs) != 1:
            problems.append("%s: %d records for %s, expected 1" % (where, len(recs), name))
            continue
        if recs[0].status != 0:
            problems.append("%s: %s has status %d" % (where, name, recs[0].status))
        i = recs[0].lineno - 1
        got = lines[max(0, i - NLINES):i]
        want = ["%s %d" % (name, k) for k in range(NLINES)]
        if got != want:
            bad = next((k for k in range(min(len(got), NLINES)) if got[k] != want[k]), len(got))
            problems.append("%s: the %d lines before %s's record are not its complete output "
                            "in order (first difference at line %d of the block: %r)"
                            % (where, NLINES, name, bad, got[bad] if bad < len(got) else None))
    task_lines = sum(1 for line in lines if re.match(r"^io\d\d \d+$", line))
    if task_lines != len(names) * NLINES:
        problems.append("%s: %d task output lines, expected %d"
                        % (where, task_lines, len(names) * NLINES))
    return problems


def failed_summary_problems(res, tasks, succeeded, failed):
    """The summary of a failed run.  A task failed by I/O forwarding may
    have a record with status=0 (the manual: "you may get a zero kickstart
    record even when PMC marks the task failed"), so its failure is judged
    by the summary and the rescue file, not by the record."""
    if len(res.summaries) != 1:
        return ["%d cluster-summary records, expected 1" % len(res.summaries)]
    s = res.summaries[0]
    problems = []
    want = {"stat": "failed", "tasks": str(tasks), "succeeded": str(succeeded)}
    for key, value in want.items():
        if s.get(key) != value:
            problems.append("cluster-summary %s=%s, expected %s" % (key, s.get(key), value))
    if int(s.get("failed", 0)) + int(s.get("extra", 0)) != failed:
        problems.append("cluster-summary failed=%s + extra=%s, expected %d failed attempts"
                        % (s.get("failed"), s.get("extra"), failed))
    return problems


class TaskIO(pmcrun.TestCase):
    def subdir(self, name):
        path = self.path(name)
        os.mkdir(path)
        return path

    # ------------------------------------------------------------ big output

    def big_dag(self, folder):
        script = os.path.join(self.tmp, "lines.sh")
        if not os.path.exists(script):
            self.write("lines.sh", LINES, 0o755)
        names = ["io%02d" % i for i in range(NTASKS)]
        dag_path = os.path.join(folder, "big.dag")
        with open(dag_path, "w") as f:
            f.write("".join("TASK %s /bin/sh %s %s\n" % (n, script, n) for n in names))
        return dag_path, names

    def test_big_output(self):
        for mode, ranks in (("stdout", 1), ("stdout", 2), ("-o FILE", 1),
                            ("--per-task-stdio", 1)):
            case = "%s ranks=%d" % (mode, ranks)
            with self.subTest(case=case):
                folder = self.subdir("big.%s.%d" % (mode.strip("-").split()[0], ranks))
                dag_path, names = self.big_dag(folder)
                out_file = os.path.join(folder, "task.out")
                opts = {"stdout": [], "-o FILE": ["-o", out_file],
                        "--per-task-stdio": ["--per-task-stdio"]}[mode]
                res = pmcrun.run(opts + ["--host-cpus", str(NTASKS), dag_path], ranks=ranks,
                                 cwd=self.tmp, timeout=120, ranks_are_hosts=ranks > 1)
                problems = []
                if ranks > 1:
                    problems += pmcrun.spread_problems(res.tasks, ranks)
                if res.timed_out or res.returncode != 0:
                    problems.append("exit status %s, expected 0" % res.returncode)
                if mode == "stdout":
                    problems += block_problems(res.stdout, names, "stdout")
                    if len(res.summaries) != 1:
                        problems.append("%d cluster-summary records" % len(res.summaries))
                elif mode == "-o FILE":
                    text = read_text(out_file)
                    if text is None:
                        problems.append("-o file %s missing" % out_file)
                    else:
                        problems += block_problems(text, names, "-o FILE")
                    if re.search(r"^io\d\d \d+$", res.stdout, re.M):
                        problems.append("task output on stdout despite -o")
                else:
                    problems += self.per_task_problems(folder, names, res)
                left = pmcrun.stdio_leftovers(dag_path)
                if left:
                    problems.append("per-rank stdio files left: %s" % ", ".join(left))
                self.check(problems, res, case)

    def per_task_problems(self, folder, names, res):
        problems = []
        if re.search(r"^io\d\d \d+$", res.stdout, re.M):
            problems.append("task output on stdout despite --per-task-stdio")
        if len(res.summaries) != 1:
            problems.append("%d cluster-summary records on stdout" % len(res.summaries))
        for name in names:
            path = os.path.join(folder, name + ".out.000")
            text = read_text(path)
            if text is None:
                problems.append("%s missing" % path)
                continue
            if not os.path.exists(os.path.join(folder, name + ".err.000")):
                problems.append("%s.err.000 missing" % name)
            out = pmcrun.parse_output(text)
            want = ["%s %d" % (name, k) for k in range(NLINES)]
            lines = text.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            recs = [(r.name, r.status) for r in out.tasks]
            if lines[:-1] != want:
                problems.append("%s.out.000 does not hold exactly the task's %d lines before "
                                "its last line (%d lines in all)" % (name, NLINES, len(lines)))
            if recs != [(name, 0)] or out.tasks[0].lineno != len(lines):
                problems.append("%s.out.000: records %s, expected only its own record "
                                "(status 0) as the last line" % (name, recs))
            if os.path.exists(os.path.join(folder, name + ".out.001")):
                problems.append("%s.out.001 exists for a task tried once" % name)
        return problems

    def test_per_task_stdio_retry(self):
        self.per_task_stdio_retry("retry.dag")

    def test_per_task_stdio_of_a_task_named_like_the_dag(self):
        """The DAG file is named flaky, like its task: flaky.out.001 is
        that task's second attempt, not the file of a rank 1 that a run
        with more ranks left behind (the merge moved it into stdout and
        deleted it)."""
        self.per_task_stdio_retry("flaky")

    def per_task_stdio_retry(self, dag_name):
        self.write("flaky.sh", FLAKY, 0o755)
        dag_path = self.write_dag(dag_name, """
            TASK flaky -t 2 /bin/sh {tmp}/flaky.sh {tmp}/flaky.count
            """.format(tmp=self.tmp))
        res = self.run_pmc(["--per-task-stdio", dag_path], timeout=60)
        problems = []
        if res.timed_out or res.returncode != 0:
            problems.append("exit status %s, expected 0" % res.returncode)
        for seq, status in (("000", 256), ("001", 0)):
            path = self.path("flaky.out." + seq)
            text = read_text(path)
            if text is None:
                problems.append("flaky.out.%s missing" % seq)
                continue
            lines = [line for line in text.split("\n") if line]
            out = pmcrun.parse_output(text)
            want = "attempt %d" % (int(seq) + 1)
            if not lines or lines[0] != want:
                problems.append("flaky.out.%s starts %r, expected %r"
                                % (seq, lines[0] if lines else None, want))
            if [(r.name, r.status) for r in out.tasks] != [("flaky", status)] or len(lines) != 2:
                problems.append("flaky.out.%s: %r, expected %r and a record with status %d"
                                % (seq, lines, want, status))
            if not os.path.exists(self.path("flaky.err." + seq)):
                problems.append("flaky.err.%s missing" % seq)
        if os.path.exists(self.path("flaky.out.002")):
            problems.append("flaky.out.002 exists after two attempts")
        self.check(problems, res)

    def test_capture_files_of_the_slots_used(self):
        tmpdir = os.path.join(self.tmp, "captures")
        os.mkdir(tmpdir)
        count = "/bin/sh -c 'find /proc/$PPID/fd -lname \"$TMPDIR/*\" | wc -l'"
        dag_path = self.write_dag("slots.dag", """
            TASK a /bin/true
            TASK b /bin/true
            TASK c %s
            EDGE a b
            EDGE b c
            """ % count)
        res = self.run_pmc(["--host-cpus", "8", dag_path], env={"TMPDIR": tmpdir}, timeout=60)
        problems = [] if res.returncode == 0 else ["exit status %s" % res.returncode]
        counts = [x.strip() for x in res.stdout.splitlines() if x.strip().isdigit()]
        if counts != ["2"]:
            problems.append("capture files open in pmc-hybrid as the last task ran: %r, "
                            "expected ['2']" % counts)
        self.check(problems, res)

    def test_capture_files_lent_once(self):
        # the watchdog is the child of pmc-hybrid named pmc-watchdog; it
        # sleeps in recvmsg() between lends
        probe = ("/bin/sh -c 'for c in $(cat /proc/$PPID/task/*/children); do "
                 "[ \"$(cat /proc/$c/comm)\" = pmc-watchdog ] && "
                 "sed -n \"s/^voluntary_ctxt_switches:[[:space:]]*/switches /p\" "
                 "/proc/$c/status; done; exit 0'")
        n = 40
        lines = ["TASK t%d /bin/true" % i for i in range(n)] + ["TASK probe %s" % probe]
        lines += ["EDGE t%d t%d" % (i, i + 1) for i in range(n - 1)] + ["EDGE t%d probe" % (n - 1)]
        dag_path = self.write_dag("lend.dag", "\n".join(lines) + "\n")
        res = self.run_pmc(["--host-cpus", "2", dag_path], timeout=60)
        problems = [] if res.returncode == 0 else ["exit status %s" % res.returncode]
        got = [int(x.split()[1]) for x in res.stdout.splitlines() if x.startswith("switches ")]
        if len(got) != 1:
            problems.append("no watchdog found by the last task: %r" % got)
        elif got[0] >= n // 2:
            problems.append("the watchdog woke %d times over %d tasks in a row: lent each "
                            "slot's capture files more than once" % (got[0], n + 1))
        self.check(problems, res)

    def test_dev_null_stdout(self):
        dag_path = self.write_dag("null.dag", """
            TASK a /bin/echo output of a
            TASK b /bin/sh -c "echo output of b; echo more"
            """)
        res = self.run_pmc(["-o", "/dev/null", dag_path], timeout=60)
        problems = []
        if res.timed_out or res.returncode != 0:
            problems.append("exit status %s, expected 0" % res.returncode)
        lines = [line for line in res.stdout.split("\n") if line.strip()]
        if len(lines) != 1 or not lines[0].startswith("[cluster-summary "):
            problems.append("stdout %r, expected only the cluster-summary line" % lines[:6])
        if len(res.summaries) != 1 or res.summaries[0].get("stat") != "ok":
            problems.append("no stat=\"ok\" cluster-summary on stdout")
        st = os.stat("/dev/null")
        if not stat.S_ISCHR(st.st_mode):
            problems.append("/dev/null is no longer a character device!")
        left = pmcrun.stdio_leftovers(dag_path)
        if left:
            problems.append("per-rank stdio files left: %s" % ", ".join(left))
        self.check(problems, res)

    # --------------------------------------------------------- pipe forwarding

    def test_pipe_forward(self):
        self.write("pipe.sh", PIPE, 0o755)
        for ranks in (1, 2):
            with self.subTest(ranks=ranks):
                folder = self.subdir("pipe.%d" % ranks)
                dest = os.path.join(folder, "dest")
                with open(dest, "w") as f:
                    f.write("HEADER kept\n")
                names = ["pf%02d" % i for i in range(40)]
                failing = {n for i, n in enumerate(names) if i % 8 == 3}
                dag_path = os.path.join(folder, "pipe.dag")
                with open(dag_path, "w") as f:
                    for n in names:
                        f.write("TASK %s -f OUT=%s /bin/sh %s/pipe.sh %s %d\n"
                                % (n, dest, self.tmp, n, 1 if n in failing else 0))
                res = pmcrun.run(["--host-cpus", "8", dag_path], ranks=ranks, cwd=folder,
                                 timeout=120, ranks_are_hosts=ranks > 1)
                problems = []
                if ranks > 1:
                    problems += pmcrun.spread_problems(res.tasks, ranks)
                if res.timed_out or res.returncode != 1:
                    problems.append("exit status %s, expected 1 (some tasks fail)"
                                    % res.returncode)
                status = {r.name: r.status for r in res.tasks}
                for n in names:
                    if (status.get(n) == 0) == (n in failing):
                        problems.append("%s: status %s" % (n, status.get(n)))
                problems += self.forwarded_problems(dest, set(names) - failing, failing, 200,
                                                    "HEADER kept")
                self.check(problems, res, "ranks=%d" % ranks)

    def forwarded_problems(self, dest, good, bad, count, header):
        """dest = header, then one contiguous in-order block of `count`
        "data from NAME line I" lines per good task, nothing from bad."""
        text = read_text(dest)
        if text is None:
            return ["%s missing" % dest]
        lines = text.split("\n")
        problems = []
        if lines[-1] != "":
            problems.append("%s does not end with a newline" % dest)
        lines = lines[:-1] if lines[-1] == "" else lines
        if not lines or lines[0] != header:
            problems.append("%s: first line %r, expected the header %r (truncated?)"
                            % (dest, lines[0] if lines else None, header))
        else:
            lines = lines[1:]
        runs = []  # [name, [indices]]
        for line in lines:
            m = re.match(r"^data from (\S+) line (\d+)$", line)
            if not m:
                problems.append("%s: stray line %r" % (dest, line[:80]))
                continue
            if runs and runs[-1][0] == m.group(1):
                runs[-1][1].append(int(m.group(2)))
            else:
                runs.append([m.group(1), [int(m.group(2))]])
        seen = {}
        for name, idx in runs:
            seen.setdefault(name, []).append(idx)
        for name in sorted(good):
            blocks = seen.get(name, [])
            if len(blocks) != 1 or blocks[0] != list(range(count)):
                problems.append("%s: %s's data appears as %d block(s) of sizes %s, expected one "
                                "block of lines 0..%d in order" % (
                                    dest, name, len(blocks), [len(b) for b in blocks], count - 1))
        for name in sorted(bad):
            if name in seen:
                problems.append("%s: data of the failed task %s was written" % (dest, name))
        for name in sorted(set(seen) - set(good) - set(bad)):
            problems.append("%s: data from unknown task %s" % (dest, name))
        return problems[:30]

    # --------------------------------------------------------- file forwarding

    def test_file_forward(self):
        dest = self.write("fdest", "HEADER file\n")
        names = ["ff%d" % i for i in range(6)]
        dag_path = self.write("ff.dag", "".join(
            "TASK {n} -F {t}/src.{n}={d} /bin/sh -c 'i=0; while [ $i -lt 3 ]; do "
            "echo \"data from {n} line $i\" >> {t}/src.{n}; i=$((i+1)); done'\n"
            .format(n=n, t=self.tmp, d=dest) for n in names))
        res = self.run_pmc(["--host-cpus", "4", dag_path], timeout=60)
        problems = pmcrun.success_problems(res, pmcrun.parse_dag(dag_path))
        problems += self.forwarded_problems(dest, set(names), set(), 3, "HEADER file")
        left = [n for n in names if os.path.exists(self.path("src." + n))]
        if left:
            problems.append("source files not deleted after forwarding: %s" % left)
        self.check(problems, res)

    def test_file_forward_directory(self):
        adir = self.path("adir")
        os.mkdir(adir)
        dest = self.path("fdest")
        dag_path = self.write_dag("ffdir.dag", """
            TASK ffdir -F {src}={dest} /bin/true
            TASK fine /bin/true
            """.format(src=adir, dest=dest))
        res = self.run_pmc([dag_path], timeout=60)
        problems = []
        if res.timed_out or res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        want = "Task ffdir: %s is not a file" % adir
        if want not in res.stderr:
            problems.append("stderr lacks %r" % want)
        status = {r.name: r.status for r in res.tasks}
        if "ffdir" not in status:
            problems.append("no cluster-task record for ffdir")
        problems += failed_summary_problems(res, tasks=2, succeeded=1, failed=1)
        if status.get("fine") != 0:
            problems.append("the unrelated task 'fine': status %s" % status.get("fine"))
        done = pmcrun.parse_rescue(dag_path + ".rescue").done_set
        if done != {"fine"}:
            problems.append("rescue DONE set %s, expected ['fine']" % sorted(done))
        self.check(problems, res)

    def test_forward_unwritable_dest(self):
        regular = self.write("regular", "a regular file\n")
        dag_path = self.write_dag("bad.dag", """
            TASK badpipe -f OUT={reg}/x /bin/sh -c 'echo data >&$OUT'
            TASK badfile -F {t}/src.badfile={reg}/y /bin/sh -c 'echo data > {t}/src.badfile'
            TASK fine /bin/true
            """.format(reg=regular, t=self.tmp))
        res = self.run_pmc(["--host-cpus", "4", dag_path], timeout=60)
        problems = []
        if res.timed_out or res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        status = {r.name: r.status for r in res.tasks}
        for name in ("badpipe", "badfile"):
            want = "Task %s failed due to collective I/O errors" % name
            if want not in res.stderr:
                problems.append("stderr lacks %r" % want)
            if name not in status:
                problems.append("no cluster-task record for %s" % name)
        problems += failed_summary_problems(res, tasks=3, succeeded=1, failed=2)
        if status.get("fine") != 0:
            problems.append("the unrelated task 'fine': status %s" % status.get("fine"))
        if read_text(regular) != "a regular file\n":
            problems.append("the regular file was changed")
        done = pmcrun.parse_rescue(dag_path + ".rescue").done_set
        if done != {"fine"}:
            problems.append("rescue DONE set %s, expected ['fine']" % sorted(done))
        self.check(problems, res)

    def test_failed_forward_leaves_none_of_its_blocks(self):
        """A task's second destination cannot be written (its parent is a
        regular file) after its first was: the first block is cut off
        again, so the retry (-t 2, which removes the blocker) leaves each
        record in each file once.  Before, ok.txt held the first attempt's
        record too."""
        self.write("blocker", "a regular file\n")
        dag_path = self.write_dag("undo.dag", """
            TASK two -t 2 -f A={t}/ok.txt -f B={t}/blocker/x.txt /bin/sh -c 'if [ -e {t}/tried ]; then rm {t}/blocker; else touch {t}/tried; fi; echo record >&$A; echo other >&$B'
            """.format(t=self.tmp))
        res = self.run_pmc(["--host-cpus", "2", dag_path], timeout=60)
        problems = []
        if res.timed_out or res.returncode != 0:
            problems.append("exit status %s, expected 0" % res.returncode)
        if len(res.records_of("two")) != 2:
            problems.append("%d attempts, expected 2" % len(res.records_of("two")))
        if "blocker/x.txt: Not a directory" not in res.stderr:
            problems.append("stderr lacks 'blocker/x.txt: Not a directory'")
        if pmcrun.parse_rescue(dag_path + ".rescue").done_set != {"two"}:
            problems.append("rescue DONE %s" % sorted(pmcrun.parse_rescue(dag_path + ".rescue")
                                                      .done_set))
        if read_text(self.path("ok.txt")) != "record\n":
            problems.append("ok.txt holds %r, expected one record"
                            % read_text(self.path("ok.txt")))
        if read_text(self.path("blocker/x.txt")) != "other\n":
            problems.append("blocker/x.txt holds %r" % read_text(self.path("blocker/x.txt")))
        self.check(problems, res)

    def test_tasks_with_one_file_forward_source_never_run_at_once(self):
        """Three tasks name the same -F source (a DAG that gives one
        scratch file to several tasks): on one node they must run one
        after the other, or the first to end takes the others' data with
        its own and deletes the file, and they succeed forwarding nothing
        (a missing -F file is no error).  Each writes its block in two
        parts 0.2 s apart; a fourth task has a source of its own.  On one
        CPU with a launcher pool, the next task is staged while one runs,
        and the reaper would start it before it reads the file (a window
        too narrow to lose data in a test): none of the three may be
        staged while another holds the file.  There d, queued behind b and
        c, is staged while a runs and starts before them, and one of them
        is staged while d runs: 2 staged starts (3 if b were staged beside
        a and c beside b).  On 4 CPUs d starts while a runs: the tasks that
        wait for the file do not hold the node's queue."""
        for cpus, pool in (("4", []), ("1", ["--launch-threads", "1"])):
            with self.subTest(cpus=cpus, pool=pool):
                self.one_file_forward_source(["--host-cpus", cpus] + pool)

    def one_file_forward_source(self, args):
        for name in ("dest.txt", "own.txt", "shared.dag.rescue"):
            if os.path.exists(self.path(name)):
                os.unlink(self.path(name))
        src = self.path("scratch.out")
        lines = ["TASK %s -F %s=%s/dest.txt /bin/sh -c 'printf %s1 > %s; sleep 0.2; "
                 "printf %s2 >> %s'" % (n, src, self.tmp, n, src, n, src) for n in "abc"]
        lines.append("TASK d -F %s/own.out=%s/own.txt /bin/sh -c 'printf d > %s/own.out'"
                     % (self.tmp, self.tmp, self.tmp))
        dag_path = self.write_dag("shared.dag", "\n".join(lines) + "\n")
        res = self.run_pmc(args + [dag_path], timeout=60)
        problems = []
        if res.timed_out or res.returncode != 0:
            problems.append("exit status %s, expected 0" % res.returncode)
        dest = read_text(self.path("dest.txt")) or ""
        blocks = sorted(dest[i:i + 4] for i in range(0, len(dest), 4))
        if blocks != ["a1a2", "b1b2", "c1c2"]:
            problems.append("dest.txt holds %r, expected a1a2, b1b2 and c1c2 whole" % dest)
        if read_text(self.path("own.txt")) != "d":
            problems.append("own.txt holds %r, expected 'd'" % read_text(self.path("own.txt")))
        # a record's start is stamped after its spawn, its end is start +
        # duration from the spawn: a task seems to end up to a spawn (~1 ms)
        # late; two that ran at once overlap by their 0.2 s sleep
        spans = sorted((r.start, r.start + r.duration, r.name)
                       for n in "abc" for r in res.records_of(n))
        for (s0, e0, n0), (s1, _, n1) in zip(spans, spans[1:]):
            if s1 < e0 - 0.05:
                problems.append("%s started %.3f s before %s ended" % (n1, e0 - s1, n0))
        d_starts = [r.start for r in res.records_of("d")]
        if len(spans) != 3 or len(d_starts) != 1:
            problems.append("%d records of a, b and c and %d of d, expected 3 and 1"
                            % (len(spans), len(d_starts)))
            self.check(problems, res)
        if "--launch-threads" not in args and d_starts[0] > spans[0][1] - 0.1:
            problems.append("d started %.3f s after %s did, at its end: the tasks that wait "
                            "for the file held the queue" % (d_starts[0] - spans[0][0], spans[0][2]))
        if os.path.exists(src):
            problems.append("the source is left behind")
        m = re.search(r"(\d+) staged starts", res.stderr)
        if "--launch-threads" in args and (not m or int(m.group(1)) > 2):
            problems.append("%s staged starts, expected 2 at most (d's, and b's or c's)"
                            % (m.group(1) if m else "no count of"))
        if "--launch-threads" in args and d_starts[0] > spans[1][0]:
            problems.append("d started after %s: it was not staged ahead of the tasks that wait "
                            "for the file" % spans[1][2])
        self.check(problems, res)

    def test_forward_to_the_runs_own_files_is_refused(self):
        """Forward destinations that reach the run's own files (-o, a rank's
        output file, the rescue log, the DAG) under another name (a
        symbolic link: a destination spelled as one of them is refused
        before the first task, test_pointed_paths.py) fail their task with
        the file named, and the files are untouched; before, the data was
        lost (the -o merge, the next block) or corrupted the rescue log and
        the DAG, and the run succeeded."""
        t = self.tmp
        for link, target in (("l.out", "out.txt"), ("l.rank", "own.dag.out.0"),
                             ("l.rescue", "own.dag.rescue"), ("l.dag", "own.dag")):
            os.symlink(target, self.path(link))
        dag_path = self.write_dag("own.dag", """
            TASK a -f A={t}/l.out /bin/sh -c 'echo fwd-a >&$A'
            TASK b -f A={t}/l.rank /bin/sh -c 'echo fwd-b >&$A'
            TASK c -f A={t}/l.rescue /bin/sh -c 'echo fwd-c >&$A'
            TASK d -f A={t}/l.dag /bin/sh -c 'echo TASK injected /bin/true >&$A'
            TASK e -f A={t}/fine.txt /bin/sh -c 'echo fwd-e >&$A'
            """.format(t=t))
        dag_text = read_text(dag_path)
        res = self.run_pmc(["--host-cpus", "2", "-o", self.path("out.txt"), dag_path],
                           timeout=60)
        problems = []
        if res.timed_out or res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        for path, what in (("l.out", "the -o file"), ("l.rank", "a rank's output file"),
                           ("l.rescue", "the rescue log"), ("l.dag", "the DAG file")):
            want = "%s is %s: forwarded data may not go there" % (self.path(path), what)
            if want not in res.stderr:
                problems.append("stderr lacks %r" % want)
        if read_text(dag_path) != dag_text:
            problems.append("the DAG file was changed")
        done = pmcrun.parse_rescue(dag_path + ".rescue").done_set
        if done != {"e"}:
            problems.append("rescue DONE %s, expected ['e']" % sorted(done))
        if "fwd-a" in (read_text(self.path("out.txt")) or ""):
            problems.append("out.txt holds forwarded data")
        if read_text(self.path("fine.txt")) != "fwd-e\n":
            problems.append("fine.txt holds %r" % read_text(self.path("fine.txt")))
        self.check(problems, res)

    def test_pipe_after_many_file_forwards(self):
        """A -f pipe after 300 -F files (which need no descriptor, so a task
        may have any number): its 200 KB, more than the pipe holds, arrive
        whole, with a launcher pool too.  The pool's pipe events number a
        task's pipes in 8 bits, -F files not counted, so the pool reads it
        (LauncherPool.PipeAfterManyFileForwardsIsReadByThePool); a first
        version counted the files, and its pipe event named another
        forward: the task hung."""
        files = " ".join("-F %s/src%d=%s/dst%d" % (self.tmp, k, self.tmp, k) for k in range(300))
        dag_path = self.write("many.dag",
                              "TASK many %s -f OUT=%s/many.out /bin/sh -c "
                              "'head -c 200000 /dev/zero >&$OUT'\n" % (files, self.tmp))
        for pool in ("0", "1"):
            with self.subTest(launch_threads=pool):
                for f in (dag_path + ".rescue", self.path("many.out")):
                    if os.path.exists(f):
                        os.unlink(f)
                res = self.run_pmc(["--launch-threads", pool, "--host-cpus", "2", dag_path],
                                   timeout=60)
                problems = pmcrun.success_problems(res, pmcrun.parse_dag(dag_path))
                size = os.path.getsize(self.path("many.out")) if os.path.exists(
                    self.path("many.out")) else None
                if size != 200000:
                    problems.append("many.out holds %s bytes, expected 200000" % size)
                self.check(problems, res, "--launch-threads %s" % pool)

    def test_forward_past_the_task_limit(self):
        """A task that forwards more than FWD_TASK_MAX (1 GiB, pipes and
        files together; engine/exec/forward.h) fails with status 256 and a
        message naming it and the limit, and nothing of its data reaches
        DEST; a task beside it forwards as usual.  Before the limit, a task
        forwarding 4 GiB + 100 bytes had 100 of them written and counted as
        a success (the data block's u32 length)."""
        dag_path = self.write_dag("limit.dag", """
            TASK huge -f OUT={t}/huge.out /bin/sh -c 'head -c 1073741825 /dev/zero >&$OUT'
            TASK small -f OUT={t}/small.out /bin/sh -c 'echo small >&$OUT'
            """.format(t=self.tmp))
        res = self.run_pmc(["--host-cpus", "2", dag_path], timeout=120)
        problems = []
        if res.timed_out or res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        want = ("Task huge: forwarded more than 1024 MB, the most one task may forward "
                "(-f and -F together): its data is dropped and it fails")
        if want not in res.stderr:
            problems.append("stderr lacks %r" % want)
        status = {r.name: r.status for r in res.tasks}
        if status.get("huge") != 256:
            problems.append("huge: status %s, expected 256" % status.get("huge"))
        if os.path.exists(self.path("huge.out")):
            problems.append("huge.out exists: data of a failed task was written")
        if status.get("small") != 0 or read_text(self.path("small.out")) != "small\n":
            problems.append("the task beside it: status %s" % status.get("small"))
        problems += failed_summary_problems(res, tasks=2, succeeded=1, failed=1)
        self.check(problems, res)

    def test_pipe_writers_large_and_cut_off(self):
        """Tasks writing far more than a pipe holds, some stopped by their
        time limit while their pipe is being read (with launcher threads,
        a launcher may be reading it as the limit's signal comes): each
        task that ended well forwards every byte, in one block; a task
        stopped by its limit forwards nothing and fails with 124."""
        lines, sizes, cut = [], {}, set()
        for i in range(24):
            n = "pw%02d" % i
            if i % 3 == 0:
                cut.add(n)
                # never ends, however fast the pipe: at most ~100 MB/s, so
                # its 0.3 s stay far below the task's forwarding limit
                lines.append("TASK %s --time-limit 0.3 -f OUT=%s/cut.%s /bin/sh -c "
                             "'while :; do head -c 1000000 /dev/zero; sleep 0.01; done "
                             ">&$OUT'\n" % (n, self.tmp, n))
            else:
                sizes[n] = 150000 + 1000 * i
                lines.append("TASK %s -f OUT=%s/big.%s /bin/sh -c "
                             "'head -c %d /dev/zero >&$OUT; echo end >&$OUT'\n"
                             % (n, self.tmp, n, sizes[n]))
        dag_path = self.write("pw.dag", "".join(lines))
        res = self.run_pmc(["--host-cpus", "8", dag_path], timeout=120)
        problems = []
        if res.timed_out or res.returncode != 1:
            problems.append("exit status %s, expected 1 (the cut-off tasks fail)" % res.returncode)
        status = {r.name: r.status for r in res.tasks}
        for n, size in sorted(sizes.items()):
            data = None
            if os.path.exists(self.path("big." + n)):
                with open(self.path("big." + n), "rb") as f:
                    data = f.read()
            if status.get(n) != 0:
                problems.append("%s: status %s, expected 0" % (n, status.get(n)))
            elif data != b"\0" * size + b"end\n":
                problems.append("%s: forwarded %s bytes, expected %d"
                                % (n, None if data is None else len(data), size + 4))
        for n in sorted(cut):
            if status.get(n) != 124 << 8:
                problems.append("%s: status %s, expected %d (its time limit)"
                                % (n, status.get(n), 124 << 8))
            if os.path.exists(self.path("cut." + n)):
                problems.append("%s: a task stopped by its limit forwarded data" % n)
        self.check(problems, res)

    def test_maxfds(self):
        names = ["mf%02d" % i for i in range(20)]
        dag_path = self.write("mf.dag", "".join(
            "TASK {n} -f OUT={t}/mdest.{k} -f ALL={t}/mall /bin/sh -c "
            "'echo \"data from {n} line 0\" >&$OUT; echo \"data from {n} line 0\" >&$ALL'\n"
            .format(n=n, t=self.tmp, k=i % 10) for i, n in enumerate(names)))
        for k in range(10):
            self.write("mdest.%d" % k, "HEADER %d\n" % k)
        self.write("mall", "HEADER all\n")
        res = self.run_pmc(["--maxfds", "1", "--host-cpus", "8", dag_path], timeout=60)
        problems = pmcrun.success_problems(res, pmcrun.parse_dag(dag_path))
        for k in range(10):
            good = {names[k], names[k + 10]}
            problems += self.forwarded_problems(self.path("mdest.%d" % k), good, set(), 1,
                                                "HEADER %d" % k)
        problems += self.forwarded_problems(self.path("mall"), set(names), set(), 1, "HEADER all")
        self.check(problems, res)

    def test_piped_and_quiet_tasks_with_launchers(self):
        """Tasks with a forwarding pipe and quiet tasks on one node with
        launcher threads (engine/exec/launcher.h: the pool watches the pidfds of
        both and reads the pipes while their tasks run, and its reaper
        takes a task's pipes out of the set before closing them, so a
        descriptor number freed and taken again stays watched): every task
        ends and every pipe's data arrives."""
        names = ["pq%03d" % i for i in range(120)]
        lines = []
        for i, n in enumerate(names):
            if i % 2:
                lines.append("TASK %s /bin/true\n" % n)
            else:
                lines.append("TASK {n} -f OUT={t}/pq.out /bin/sh -c "
                             "'echo \"data from {n} line 0\" >&$OUT'\n".format(n=n, t=self.tmp))
        dag_path = self.write("pq.dag", "".join(lines))
        self.write("pq.out", "HEADER pq\n")
        for pool in ("1", "2"):
            with self.subTest(launch_threads=pool):
                rescue = dag_path + ".rescue"
                if os.path.exists(rescue):
                    os.unlink(rescue)
                self.write("pq.out", "HEADER pq\n")
                res = self.run_pmc(["--launch-threads", pool, "--host-cpus", "4", dag_path],
                                   timeout=120)
                problems = pmcrun.success_problems(res, pmcrun.parse_dag(dag_path))
                problems += self.forwarded_problems(self.path("pq.out"), set(names[0::2]), set(),
                                                    1, "HEADER pq")
                self.check(problems, res)

    # ------------------------------------------------------------ jobstate.log

    def event_dag(self, folder, name, failing=True):
        dag_path = os.path.join(folder, name)
        with open(dag_path, "w") as f:
            f.write("TASK A /bin/echo a\nTASK B /bin/echo b\n")
            if failing:
                f.write("TASK C /bin/sh -c 'echo c; exit 3'\n")
            f.write("EDGE A B\n")
        return dag_path

    def jobstate_block_problems(self, lines, res, where):
        """One run's lines of jobstate.log."""
        problems = []
        if not lines:
            return ["%s: no lines" % where]
        lo, hi = res.started - 1.0, res.started + res.elapsed + 1.0
        ts_re = r"(\d+\.\d{6})"
        events = {}  # name -> [(kind, seq, code)]
        for i, line in enumerate(lines):
            m_int = re.match(r"^%s INTERNAL \*\*\* (PMC_STARTED|PMC_FINISHED (\d+)) \*\*\*$"
                             % ts_re, line)
            m_task = re.match(r"^%s (\S+) (SUBMIT|EXECUTE|JOB_TERMINATED) (\d+)\.0 - - (\d+)$"
                              % ts_re, line)
            m_end = re.match(r"^%s (\S+) (JOB_SUCCESS|JOB_FAILURE) (-?\d+) - - (\d+)$"
                             % ts_re, line)
            m = m_int or m_task or m_end
            if not m:
                problems.append("%s: line %d does not match any jobstate.log shape: %r"
                                % (where, i + 1, line))
                continue
            ts = float(m.group(1))
            if not lo <= ts <= hi:
                problems.append("%s: line %d: timestamp %.6f outside the run" % (where, i + 1, ts))
            if m_task:
                if m_task.group(4) != m_task.group(5):
                    problems.append("%s: line %d: %r: SEQ.0 and SEQ differ" % (where, i + 1, line))
                events.setdefault(m_task.group(2), []).append(
                    (m_task.group(3), m_task.group(5), None))
            elif m_end:
                events.setdefault(m_end.group(2), []).append(
                    (m_end.group(3), m_end.group(5), m_end.group(4)))
        if not re.match(r"^\d+\.\d{6} INTERNAL \*\*\* PMC_STARTED \*\*\*$", lines[0]):
            problems.append("%s: first line %r is not PMC_STARTED" % (where, lines[0]))
        if not re.match(r"^\d+\.\d{6} INTERNAL \*\*\* PMC_FINISHED 1 \*\*\*$", lines[-1]):
            problems.append("%s: last line %r is not '*** PMC_FINISHED 1 ***'" % (where, lines[-1]))
        if sum("PMC_STARTED" in line for line in lines) != 1 or \
                sum("PMC_FINISHED" in line for line in lines) != 1:
            problems.append("%s: not exactly one PMC_STARTED and one PMC_FINISHED" % where)
        want_end = {"A": ("JOB_SUCCESS", "0"), "B": ("JOB_SUCCESS", "0"), "C": ("JOB_FAILURE", "3")}
        seqs = {}
        for name, (kind, code) in want_end.items():
            got = events.get(name, [])
            kinds = [k for k, _, _ in got]
            if kinds != ["SUBMIT", "EXECUTE", "JOB_TERMINATED", kind]:
                problems.append("%s: %s's events %s, expected SUBMIT, EXECUTE, JOB_TERMINATED, %s"
                                % (where, name, kinds, kind))
                continue
            if got[3][2] != code:
                problems.append("%s: %s %s has exit code %s, expected %s"
                                % (where, name, kind, got[3][2], code))
            if len({s for _, s, _ in got}) != 1:
                problems.append("%s: %s's lines carry different SEQs %s"
                                % (where, name, [s for _, s, _ in got]))
            seqs[name] = got[0][1]
        if len(set(seqs.values())) != len(seqs):
            problems.append("%s: tasks share SEQ numbers: %s" % (where, seqs))
        unknown = sorted(set(events) - set(want_end))
        if unknown:
            problems.append("%s: events for unknown tasks %s" % (where, unknown))
        return problems

    def test_jobstate_log(self):
        folder = self.subdir("wf")
        dag_path = self.event_dag(folder, "js.dag")
        log = os.path.join(folder, "jobstate.log")
        problems, first, res = [], [], None
        for run in (1, 2):
            res = self.run_pmc(["-s", "--jobstate-log", dag_path], timeout=60)
            where = "run %d" % run
            if res.timed_out or res.returncode != 1:
                problems.append("%s: exit status %s, expected 1" % (where, res.returncode))
            text = read_text(log)
            if text is None:
                problems.append("%s: %s missing" % (where, log))
                break
            if not text.endswith("\n"):
                problems.append("%s: jobstate.log does not end with a newline" % where)
            lines = text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")
            if run == 2 and lines[:len(first)] != first:
                problems.append("run 2 did not append: the first run's lines changed")
            block = lines[len(first):]
            problems += self.jobstate_block_problems(block, res, where)
            first = lines
        if os.path.exists(self.path("jobstate.log")):
            problems.append("jobstate.log written in the working directory, not next to the DAG")
        self.check(problems, res)

    # ------------------------------------------------------------ dagman.out

    def dagman_problems(self, path, res, dag_name, want_tasks, status):
        text = read_text(path)
        if text is None:
            return ["%s missing" % path]
        lines = [line for line in text.split("\n") if line.strip()]
        problems = []
        lo = datetime.datetime.fromtimestamp(int(res.started) - 1)
        hi = datetime.datetime.fromtimestamp(res.started + res.elapsed + 2)
        body = []
        for i, line in enumerate(lines):
            m = re.match(r"^(\d\d/\d\d/\d\d \d\d:\d\d:\d\d) (.*)$", line)
            if not m:
                problems.append("line %d does not start with mm/dd/yy hh:mm:ss: %r"
                                % (i + 1, line))
                body.append(line)
                continue
            when = datetime.datetime.strptime(m.group(1), "%m/%d/%y %H:%M:%S")
            if not lo <= when <= hi:
                problems.append("line %d: time %s outside the run (%s .. %s)"
                                % (i + 1, m.group(1), lo, hi))
            body.append(m.group(2))
        pid = res.summaries[0].get("pid") if res.summaries else None
        pids = [m.group(1) for m in (re.match(r"^\*\* PID = (\d+)$", b) for b in body) if m]
        if pids != [pid]:
            problems.append("'** PID = P' lines give %s, expected [%s] (the summary's pid)"
                            % (pids, pid))
        parsing = [m.group(1) for m in (re.match(r"^Parsing (\S+) \.\.\.$", b) for b in body) if m]
        if len(parsing) != 1 or os.path.basename(parsing[0]) != dag_name:
            problems.append("'Parsing DAGNAME ...' lines name %s, expected %s"
                            % (parsing, dag_name))
        events = {}
        for b in body:
            m = re.match(r"^Event: (ULOG_SUBMIT|ULOG_EXECUTE|ULOG_JOB_TERMINATED) for Condor "
                         r"Node (\S+) \((\d+)\.0\)$", b)
            if m:
                events.setdefault(m.group(2), []).append((m.group(1), m.group(3)))
                continue
            m = re.match(r"^Node (\S+) job proc \((\d+)\.0\) (completed successfully|failed "
                         r"with status (-?\d+))\.$", b)
            if m:
                kind = "ok" if m.group(3).startswith("completed") else "failed %s" % m.group(4)
                events.setdefault(m.group(1), []).append((kind, m.group(2)))
        for name, end in want_tasks.items():
            got = events.get(name, [])
            kinds = [k for k, _ in got]
            want = ["ULOG_SUBMIT", "ULOG_EXECUTE", "ULOG_JOB_TERMINATED", end]
            if kinds != want:
                problems.append("node %s: events %s, expected %s" % (name, kinds, want))
            elif len({s for _, s in got}) != 1:
                problems.append("node %s: different SEQs %s" % (name, [s for _, s in got]))
        unknown = sorted(set(events) - set(want_tasks))
        if unknown:
            problems.append("events for unknown nodes %s" % unknown)
        last = body[-1] if body else None
        want_last = ("**** condor_scheduniv_exec.0.0 (condor_DAGMAN) pid %s EXITING WITH "
                     "STATUS %d" % (pid, status))
        if last != want_last:
            problems.append("last line %r, expected %r" % (last, want_last))
        return problems[:30]

    def test_monitord_hack(self):
        for dag_name, failing in (("md.dag", True), ("mdok.dag", False)):
            with self.subTest(dag=dag_name):
                folder = self.subdir("wf." + dag_name)
                dag_path = self.event_dag(folder, dag_name, failing)
                res = self.run_pmc(["--monitord-hack", dag_path], timeout=60)
                problems = []
                want_rc = 1 if failing else 0
                if res.timed_out or res.returncode != want_rc:
                    problems.append("exit status %s, expected %d" % (res.returncode, want_rc))
                want = {"A": "ok", "B": "ok"}
                if failing:
                    want["C"] = "failed 3"
                problems += self.dagman_problems(dag_path + ".dagman.out", res, dag_name, want,
                                                 want_rc)
                for name in want:
                    if not os.path.exists(os.path.join(folder, name + ".out.000")):
                        problems.append("%s.out.000 missing: --monitord-hack implies "
                                        "--per-task-stdio" % name)
                self.check(problems, res, dag_name)

    # ------------------------------------------------------------ resource log

    def test_resource_log(self):
        names = ["rl%d" % i for i in range(6)]
        for enabled in (True, False):
            case = "default" if enabled else "--no-resource-log"
            with self.subTest(case=case):
                folder = self.subdir("res.%s" % ("on" if enabled else "off"))
                dag_path = os.path.join(folder, "res.dag")
                with open(dag_path, "w") as f:
                    f.write("".join("TASK %s -c 2 -m 300 /bin/sleep 0.3\n" % n for n in names))
                args = ([] if enabled else ["--no-resource-log"]) + [
                    "--host-cpus", "4", "--host-memory", "1000", dag_path]
                res = self.run_pmc(args, timeout=60)
                problems = pmcrun.success_problems(res, pmcrun.parse_dag(dag_path))
                path = dag_path + ".resource"
                if not enabled:
                    if os.path.exists(path):
                        problems.append("%s written despite --no-resource-log" % path)
                else:
                    problems += self.resource_problems(path, res)
                self.check(problems, res, case)

    def resource_problems(self, path, res):
        text = read_text(path)
        if text is None:
            return ["%s missing" % path]
        hosts = {r.fields.get("hostname") for r in res.tasks}
        problems = []
        lo, hi = res.started - 1.0, res.started + res.elapsed + 1.0
        rows = []
        for i, line in enumerate(text.split("\n")[:-1]):
            m = re.match(r"^(\d+(?:\.\d+)?),(\d+),(\d+),(\d+),(\S+)$", line)
            if not m:
                problems.append("line %d is not float,int,int,int,host: %r" % (i + 1, line))
                continue
            ts, slots, cpus, mem, host = (float(m.group(1)), int(m.group(2)), int(m.group(3)),
                                          int(m.group(4)), m.group(5))
            rows.append((ts, slots, cpus, mem, host))
            if not lo <= ts <= hi:
                problems.append("line %d: timestamp %.6f outside the run" % (i + 1, ts))
            if host not in hosts:
                problems.append("line %d: host %r is not a records' hostname %s (PMC's "
                                "lines only: no '*' totals)" % (i + 1, host, sorted(hosts)))
            if cpus > 4 or mem > 1000:
                problems.append("line %d: %d CPUs / %d MB free exceed the host's 4 / 1000"
                                % (i + 1, cpus, mem))
        if not text.endswith("\n"):
            problems.append("%s does not end with a newline" % path)
        host_rows = [r for r in rows if r[4] != "*"]
        if not host_rows:
            problems.append("no line for the host")
        else:
            if not any(r[2] < 4 for r in host_rows):
                problems.append("no line shows CPUs in use (all say %s free)"
                                % sorted({r[2] for r in host_rows}))
            last = host_rows[-1]
            if (last[2], last[3]) != (4, 1000):
                problems.append("the host's last line says %d CPUs / %d MB free, expected 4 / 1000 "
                                "after the run" % (last[2], last[3]))
        return problems[:30]


if __name__ == "__main__":
    pmcrun.main()
