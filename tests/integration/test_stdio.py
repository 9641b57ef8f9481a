#!/usr/bin/env python3
"""test_stdio.py - task stdout/stderr and the per-rank files (case g).

Four tasks print three lines each with pauses in between while running at
the same time, one task writes to stdout and stderr, one prints text without
a final newline.  With -o FILE -e FILE, and without (default: pmc-hybrid's
own stdout/stderr), each with 1 rank, 4 ranks with --ranks-are-hosts (four
agents' per-rank files merged; at least two ranks ran tasks) and 4 ranks in
PMC's launch shape (one host: rank 1 runs every task, slot=1):
  * each task's output is contiguous (never interleaved with another task's)
    and immediately followed by its own cluster-task line;
  * every record starts at column 0, even after output without a newline;
  * stderr text lands in the -e FILE (or pmc-hybrid's stderr);
  * with -o, no task output appears on pmc-hybrid's stdout, and exactly one
    cluster-summary is printed (on stdout or in FILE);
  * after the successful run the per-rank DAG.out.R / DAG.err.R files are
    gone, every task is DONE and the run exits 0.
One file under two names (-o log -e ./log; -e log with stdout sent to log
by the shell): every block and record whole, stderr text there too.  -o
naming a per-rank file (io.dag.out.7): every record once, no self-copy.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

MULTI = ("a", "b", "c", "d")


def dag_text():
    lines = ['TASK multi_%s /bin/sh -c "echo %s-1; sleep 0.1; echo %s-2; sleep 0.1; echo %s-3"'
             % (x, x, x, x) for x in MULTI]
    lines.append('TASK both /bin/sh -c "echo err-line 1>&2; echo out-line"')
    lines.append('TASK nonl /bin/sh -c "printf no-newline"')
    return "\n".join(lines) + "\n"


EXPECTED = {"multi_%s" % x: ["%s-1" % x, "%s-2" % x, "%s-3" % x] for x in MULTI}
EXPECTED["both"] = ["out-line"]


def block_problems(text, where):
    """Each task's lines directly precede its record in text."""
    out = pmcrun.parse_output(text)
    problems = ["%s: %s" % (where, p) for p in out.problems]
    lines = out.lines
    for name, want in EXPECTED.items():
        recs = [r for r in out.tasks if r.name == name]
        if len(recs) != 1:
            problems.append("%s: %d records for %s" % (where, len(recs), name))
            continue
        i = recs[0].lineno - 1
        got = lines[max(0, i - len(want)):i]
        if got != want:
            problems.append("%s: the %d lines before %s's record are %r, expected %r"
                            % (where, len(want), name, got, want))
    if not any(line.startswith("no-newline") for line in lines):
        problems.append("%s: output without newline ('no-newline') is missing" % where)
    return problems, out


class Stdio(pmcrun.TestCase):
    def test_stdio(self):
        for files in (True, False):
            for ranks, hosts in ((1, False), (4, True), (4, False)):
                case = "%s ranks=%d%s" % ("-o/-e files" if files else "default stdio", ranks,
                                          " ranks-are-hosts" if hosts else "")
                with self.subTest(case=case):
                    sub = os.path.join(self.tmp, "%s.%d%s" % ("files" if files else "std", ranks,
                                                              ".hosts" if hosts else ""))
                    os.mkdir(sub)
                    self.check(self.one_case(sub, files, ranks, hosts), self.last, case)

    def one_case(self, sub, files, ranks, hosts):
        dag_path = os.path.join(sub, "io.dag")
        with open(dag_path, "w") as f:
            f.write(dag_text())
        dag = pmcrun.parse_dag(dag_path)
        out_file, err_file = os.path.join(sub, "task.out"), os.path.join(sub, "task.err")
        opts = ["-o", out_file, "-e", err_file] if files else []
        res = self.last = pmcrun.run(opts + ["--host-cpus", "8", dag_path], ranks=ranks,
                                     cwd=sub, timeout=60, ranks_are_hosts=hosts)
        problems = []
        if res.timed_out or res.returncode != 0:
            problems.append("exit status %s, expected 0" % res.returncode)
        if files:
            try:
                with open(out_file) as f:
                    text = f.read()
                with open(err_file) as f:
                    err_text = f.read()
            except OSError as e:
                return problems + ["-o/-e file missing: %s" % e]
            if "a-1" in res.stdout or "out-line" in res.stdout:
                problems.append("task output on pmc-hybrid's stdout despite -o")
            summaries = len(res.summaries) + len(pmcrun.parse_output(text).summaries)
            if summaries != 1:
                problems.append("%d cluster-summary records in stdout and -o FILE" % summaries)
        else:
            text, err_text = res.stdout, res.stderr
            if len(res.summaries) != 1:
                problems.append("%d cluster-summary records on stdout" % len(res.summaries))
        where = "-o FILE" if files else "stdout"
        more, out = block_problems(text, where)
        problems += more
        if "err-line" not in err_text:
            problems.append("'err-line' (task stderr) missing from %s"
                            % ("-e FILE" if files else "stderr"))
        if any(r.status != 0 for r in out.tasks) or len(out.tasks) != len(dag):
            problems.append("records: %s" % [(r.name, r.status) for r in out.tasks])
        problems += pmcrun.order_problems(dag, out.tasks)
        slots = pmcrun.slot_counts(out.tasks)
        if hosts and len(slots) < 2:
            problems.append("only rank(s) %s ran tasks on %d hosts" % (sorted(slots), ranks))
        if ranks > 1 and not hosts and set(slots) != {1}:
            problems.append("tasks per slot %s, expected all on rank 1 (the host's agent)"
                            % slots)
        left = pmcrun.stdio_leftovers(dag_path)
        if left:
            problems.append("per-rank stdio files left after a successful run: %s"
                            % ", ".join(left))
        done = pmcrun.parse_rescue(dag_path + ".rescue").done_set
        if done != set(dag.tasks):
            problems.append("rescue DONE set %s" % sorted(done))
        return problems

    def test_one_file_under_two_names(self):
        """-o log -e ./log, and -e log with pmc-hybrid's stdout sent to log
        by the shell: one file under two names gets one descriptor, so
        stderr never writes over stdout's blocks and records (two
        descriptors, each at its own offset, did)."""
        cases = (("-o log -e ./log", ["-o", "log", "-e", "./log"], ()),
                 ("-e log >log", ["-e", "log"], ("/bin/sh", "-c", 'exec "$@" >log', "sh")))
        for case, opts, wrap in cases:
            with self.subTest(case=case):
                sub = os.path.join(self.tmp, "two-names-%d" % len(opts))
                os.mkdir(sub)
                dag_path = os.path.join(sub, "io.dag")
                with open(dag_path, "w") as f:
                    f.write(dag_text())
                res = self.last = pmcrun.run(opts + ["--host-cpus", "8", dag_path], cwd=sub,
                                             timeout=60, wrap=wrap)
                with open(os.path.join(sub, "log")) as f:
                    text = f.read()
                problems = [] if res.returncode == 0 else ["exit %s" % res.returncode]
                more, out = block_problems(text, "log")
                problems += more
                if "err-line" not in text:
                    problems.append("'err-line' (task stderr) is missing from log")
                if len(out.tasks) != len(EXPECTED) + 1:
                    problems.append("%d records in log" % len(out.tasks))
                self.check(problems, res, case)

    def test_o_names_a_per_rank_file(self):
        """-o io.dag.out.7, a name the per-rank files use: the merge does not
        copy the file into itself (it grew until the disk was full), every
        record is in it once, and it stays."""
        dag_path = os.path.join(self.tmp, "io.dag")
        with open(dag_path, "w") as f:
            f.write(dag_text())
        out = os.path.join(self.tmp, "io.dag.out.7")
        res = self.last = pmcrun.run(["-o", out, "--host-cpus", "8", dag_path], cwd=self.tmp,
                                     timeout=60)
        problems = [] if res.returncode == 0 else ["exit %s" % res.returncode]
        size = os.path.getsize(out) if os.path.exists(out) else -1
        if not 0 < size < 1 << 16:
            problems.append("-o holds %d bytes" % size)
        else:
            with open(out) as f:
                more, parsed = block_problems(f.read(), "-o")
            problems += more
            if len(parsed.tasks) != len(EXPECTED) + 1:
                problems.append("%d records in -o" % len(parsed.tasks))
        self.check(problems, res)


if __name__ == "__main__":
    pmcrun.main()
