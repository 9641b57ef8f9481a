#!/usr/bin/env python3
"""test_arrays.py - task arrays run by pmc-hybrid (issue 50, docs/task-arrays.md).

Every case runs twice: with 1 rank and with `mpiexec -n 4 --ranks-are-hosts`
(four node agents).  The tasks are rec.sh, which appends one line to a
ledger file: the words it was given (the instance's name, then its other
arguments after %{INDEX} was replaced), its PMC_TASK_INDEX ("-" when it is
not set, as for a plain task) and its start and end times.

  * forms: one DAG with every edge form, fan-out (pre -> a[*]), one-to-one
    aligned from each range's first index (a[3-10] -> b[100-107]),
    K-to-one (b[i] -> c[i/2]), barrier (c[*] -> d[*]), fan-in (d[*] -> mid),
    fan-out again (mid -> e[*]) and an array without edges: every instance
    runs exactly once with its argv (%{INDEX} replaced, %%{INDEX} kept as
    %{INDEX}) and PMC_TASK_INDEX, plain tasks without it; each child starts
    after each of its parents ended (the ledger's times); the -o records,
    jobstate.log (JOB_SUCCESS) and the rescue log (one line per instance or
    a range line per run of them) name every instance NAME[i] once.
  * rerun: a rescue log written by hand with some instances DONE, singles
    and ranges: the run starts exactly the others, in order, and the final
    rescue log holds every instance once.
  * retry: with -t 2 an instance that fails its first attempt succeeds on
    its second (two records, statuses 256 then 0), its child runs after it.
  * always_fails: an instance that fails both tries fails the run (exit 1,
    stat="failed"): it is not DONE, its one-to-one child never runs, the
    other instances and their children run and are DONE, --summary-json
    names it among the failed tasks.
  * task_records_failed: --task-records failed on a plain DAG and on an
    array: -o holds the records of the failed attempts only and the output
    of every task; the summary counts every task.
  * bad_input: reversed and empty ranges, huge bounds, too many instances,
    mismatched one-to-one ranges, K not dividing, %{INDEX} in a plain task,
    plain tasks named like an array or its instances, a pair that is no
    edge form: pmc-hybrid exits 1 with one message naming FILE:LINE, starts
    no task and writes no rescue log.  (tests/unit/test_dagarray.cc and
    test_tools.py check the same input through the parser and pmc-dag.)
"""

import json
import os
import re
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

RANKS = (1, 4)

REC = """#!/bin/sh
# rec.sh LEDGER NAP WORDS...: after NAP seconds, append one line
# "WORDS idx=I start=S end=E" to LEDGER (I: $PMC_TASK_INDEX, "-" unset).
ledger=$1; nap=$2; shift 2
start=$(date +%s.%N)
sleep "$nap"
echo "$* idx=${PMC_TASK_INDEX--} start=$start end=$(date +%s.%N)" >> "$ledger"
"""

FLAKY = """#!/bin/sh
# flaky.sh DIR I FAILING...: count the attempts of index I in DIR/count.I
# and log "r[I] ATTEMPT" to DIR/attempts; fail the first attempt when I is
# one of FAILING.
dir=$1; i=$2; shift 2
n=$(cat "$dir/count.$i" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$dir/count.$i"
echo "r[$i] $n" >> "$dir/attempts"
for f in "$@"; do
    if [ "$f" = "$i" ] && [ "$n" -eq 1 ]; then exit 1; fi
done
exit 0
"""

LEDGER_RE = re.compile(r"^(.*) idx=(\S*) start=(\d+\.\d+) end=(\d+\.\d+)$")
RANGE_RE = re.compile(r"^(.+)\[(0|[1-9]\d*)-(0|[1-9]\d*)\]$")


class Entry:
    def __init__(self, words, idx, start, end):
        self.name, self.argv = words[0], words[1:]
        self.idx, self.start, self.end = idx, float(start), float(end)


def read_ledger(path):
    """[Entry] of the ledger, and the problems with its lines."""
    text = pmcrun.read_text(path) or ""
    entries, problems = [], []
    for line in text.splitlines():
        m = LEDGER_RE.match(line)
        if not m:
            problems.append("malformed ledger line %r" % line)
            continue
        entries.append(Entry(m.group(1).split(" "), m.group(2), m.group(3), m.group(4)))
    return entries, problems


def rescue_instances(path):
    """The names DONE in the rescue log at path, a range line NAME[A-B]
    given as NAME[A] .. NAME[B] (no plain task can be named so next to
    arrays), and the problems with its lines."""
    rescue = pmcrun.parse_rescue(path)
    names = []
    for word in rescue.done:
        m = RANGE_RE.match(word)
        if m:
            first, last = int(m.group(2)), int(m.group(3))
            if first > last:
                rescue.problems.append("reversed range line DONE %s" % word)
            names += ["%s[%d]" % (m.group(1), i) for i in range(first, last + 1)]
        else:
            names.append(word)
    return names, rescue.problems


def instances(name, first, last):
    return ["%s[%d]" % (name, i) for i in range(first, last + 1)]


def jobstate_successes(path):
    """Names with a JOB_SUCCESS line in jobstate.log."""
    names = []
    for line in (pmcrun.read_text(path) or "").splitlines():
        f = line.split()
        if len(f) >= 3 and f[2] == "JOB_SUCCESS":
            names.append(f[1])
    return names


def once_problems(what, names, expected):
    """names (a list) holds each of expected exactly once and nothing else."""
    problems = []
    counts = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    missing = sorted(n for n in expected if n not in counts)
    twice = sorted(n for n, c in counts.items() if c > 1)
    unknown = sorted(n for n in counts if n not in expected)
    if missing:
        problems.append("%s: %d missing, e.g. %s" % (what, len(missing), missing[:6]))
    if twice:
        problems.append("%s: more than once: %s" % (what, twice[:6]))
    if unknown:
        problems.append("%s: unexpected names %s" % (what, unknown[:6]))
    return problems


def order_problems(entries, edges):
    """Every edge (parent, child) whose two tasks are in the ledger: the
    child started after the parent ended."""
    by_name = {e.name: e for e in entries}
    problems = []
    for parent, child in edges:
        p, c = by_name.get(parent), by_name.get(child)
        if p and c and c.start < p.end:
            problems.append("%s started %.3f s before its parent %s ended"
                            % (child, p.end - c.start, parent))
    return problems[:20]


def both_ranks(cls):
    """test_NAME_ranks1 and test_NAME_ranks4 for every case_NAME(ranks)."""
    for attr in [a for a in vars(cls) if a.startswith("case_")]:
        for ranks in RANKS:
            def test(self, attr=attr, ranks=ranks):
                getattr(self, attr)(ranks)
            test.__name__ = "test_%s_ranks%d" % (attr[5:], ranks)
            setattr(cls, test.__name__, test)
    return cls


@both_ranks
class Arrays(pmcrun.TestCase):
    def rec(self, nap=0.05):
        """The command line of a ledger task (before its words)."""
        if not os.path.exists(self.path("rec.sh")):
            self.write("rec.sh", REC, 0o755)
        return "/bin/sh %s %s %g" % (self.path("rec.sh"), self.path("ledger"), nap)

    def run_dag(self, dag, ranks, opts=()):
        return self.run_pmc(["--host-cpus", "2"] + list(opts) + [dag], ranks=ranks,
                            ranks_are_hosts=ranks > 1)

    def ok_problems(self, res, ntasks):
        problems = []
        if res.timed_out or res.returncode != 0:
            problems.append("exit status %s, expected 0" % res.returncode)
        problems += res.output.problems
        if len(res.summaries) != 1:
            problems.append("%d cluster-summary records" % len(res.summaries))
        else:
            s = res.summaries[0]
            if (s["stat"], s["tasks"]) != ("ok", str(ntasks)):
                problems.append("cluster-summary stat=%s tasks=%s, expected ok and %d"
                                % (s["stat"], s["tasks"], ntasks))
        return problems

    # ---------------------------------------------------------------- forms

    def forms_dag(self):
        rec = self.rec()
        dag = self.write_dag("forms.dag", """
            TASK pre {rec} pre
            TASK a[3-10] -c 1 {rec} a[%{{INDEX}}] x%{{INDEX}}y %%{{INDEX}}
            TASK b[100-107] {rec} b[%{{INDEX}}]
            TASK c[0-3] {rec} c[%{{INDEX}}]
            TASK d[0-2] {rec} d[%{{INDEX}}]
            TASK mid {rec} mid
            TASK e[5-8] {rec} e[%{{INDEX}}]
            TASK f[0-4] {rec} f[%{{INDEX}}]
            EDGE pre a[*]
            EDGE a[i] b[i]
            EDGE b[i] c[i/2]
            EDGE c[*] d[*]
            EDGE d[*] mid
            EDGE mid e[*]
            """.format(rec=rec))
        a, b, c = instances("a", 3, 10), instances("b", 100, 107), instances("c", 0, 3)
        d, e = instances("d", 0, 2), instances("e", 5, 8)
        edges = [("pre", x) for x in a]                      # fan-out
        edges += list(zip(a, b))                             # one-to-one
        edges += [(b[j], c[j // 2]) for j in range(8)]       # K-to-one
        edges += [(x, y) for x in c for y in d]              # barrier
        edges += [(x, "mid") for x in d]                     # fan-in
        edges += [("mid", y) for y in e]                     # fan-out
        names = ["pre", "mid"] + a + b + c + d + e + instances("f", 0, 4)
        return dag, names, edges

    def case_forms(self, ranks):
        dag, names, edges = self.forms_dag()
        out = self.path("out.txt")
        res = self.run_dag(dag, ranks, ["-o", out, "--jobstate-log"])
        problems = self.ok_problems(res, len(names))
        entries, bad = read_ledger(self.path("ledger"))
        problems += bad
        problems += once_problems("ledger", [x.name for x in entries], names)
        for x in entries:
            m = re.match(r"^(.+)\[(\d+)\]$", x.name)
            want_idx = m.group(2) if m else "-"
            if x.idx != want_idx:
                problems.append("%s ran with PMC_TASK_INDEX=%s, expected %s"
                                % (x.name, x.idx, want_idx))
            want_argv = ["x%sy" % want_idx, "%{INDEX}"] if x.name.startswith("a[") else []
            if x.argv != want_argv:
                problems.append("%s ran with arguments %s, expected %s"
                                % (x.name, x.argv, want_argv))
        problems += order_problems(entries, edges)
        recs = pmcrun.parse_output(pmcrun.read_text(out) or "")
        problems += recs.problems
        problems += once_problems("-o records", [r.name for r in recs.tasks], names)
        problems += ["%s: status %d" % (r.name, r.status) for r in recs.tasks if r.status]
        problems += ["%s: app=%s" % (r.name, r.app) for r in recs.tasks if r.app != "/bin/sh"]
        if ranks > 1 and len(pmcrun.slot_counts(recs.tasks)) < 2:
            problems.append("one rank ran every task: %s" % pmcrun.slot_counts(recs.tasks))
        problems += once_problems("jobstate.log JOB_SUCCESS",
                                  jobstate_successes(self.path("jobstate.log")), names)
        done, bad = rescue_instances(dag + ".rescue")
        problems += bad
        problems += once_problems("rescue log", done, names)
        self.check(problems, res, "forms, %d rank(s)" % ranks)

    # ---------------------------------------------------------------- rerun

    def case_rerun(self, ranks):
        rec = self.rec(0.02)
        dag = self.write_dag("rerun.dag", """
            TASK a[0-19] {rec} a[%{{INDEX}}]
            TASK b[0-19] {rec} b[%{{INDEX}}]
            TASK t {rec} t
            EDGE a[i] b[i]
            EDGE b[*] t
            """.format(rec=rec))
        self.write("rerun.dag.rescue", "DONE a[0-9]\nDONE a[12]\nDONE b[0-4]\nDONE b[7]\n")
        a, b = instances("a", 0, 19), instances("b", 0, 19)
        done_before = set(a[:10] + [a[12]] + b[:5] + [b[7]])
        names = a + b + ["t"]
        rest = [n for n in names if n not in done_before]
        res = self.run_dag(dag, ranks, ["--summary-json", self.path("sum.json")])
        problems = self.ok_problems(res, len(names))
        entries, bad = read_ledger(self.path("ledger"))
        problems += bad
        problems += once_problems("ledger (the instances not DONE)", [x.name for x in entries],
                                  rest)
        problems += order_problems(entries, list(zip(a, b)) + [(x, "t") for x in b])
        problems += once_problems("-o records", [r.name for r in res.tasks], rest)
        summary = json.loads(pmcrun.read_text(self.path("sum.json")) or "{}")
        if summary.get("done_before") != len(done_before):
            problems.append("--summary-json done_before=%s, expected %d"
                            % (summary.get("done_before"), len(done_before)))
        done, bad = rescue_instances(dag + ".rescue")
        problems += bad
        problems += once_problems("final rescue log", done, names)
        self.check(problems, res, "rerun, %d rank(s)" % ranks)

    # ---------------------------------------------------------------- retry

    def case_retry(self, ranks):
        self.write("flaky.sh", FLAKY, 0o755)
        rec = self.rec(0.0)
        dag = self.write_dag("retry.dag", """
            TASK r[0-5] /bin/sh {tmp}/flaky.sh {tmp} %{{INDEX}} 2 4
            TASK s[0-5] {rec} s[%{{INDEX}}]
            EDGE r[i] s[i]
            """.format(tmp=self.tmp, rec=rec))
        r, s = instances("r", 0, 5), instances("s", 0, 5)
        res = self.run_dag(dag, ranks, ["-t", "2"])
        problems = self.ok_problems(res, 12)
        for name in r:
            want = [256, 0] if name in ("r[2]", "r[4]") else [0]
            got = [x.status for x in sorted(res.records_of(name), key=lambda x: x.start)]
            if got != want:
                problems.append("%s: record statuses %s, expected %s" % (name, got, want))
        attempts = (pmcrun.read_text(self.path("attempts")) or "").split("\n")
        for i in range(6):
            want = ["r[%d] 1" % i] + (["r[%d] 2" % i] if i in (2, 4) else [])
            got = [x for x in attempts if x.startswith("r[%d] " % i)]
            if got != want:
                problems.append("attempts of r[%d]: %s, expected %s" % (i, got, want))
        entries, bad = read_ledger(self.path("ledger"))
        problems += bad + once_problems("ledger", [x.name for x in entries], s)
        ok = {x.name: x for x in res.tasks if x.status == 0}
        by_name = {x.name: x for x in entries}
        for i in (2, 4):
            child, parent = by_name.get(s[i]), ok.get(r[i])
            if child and parent and child.start < parent.end - pmcrun.ORDER_TOLERANCE:
                problems.append("%s started before the successful retry of %s ended"
                                % (s[i], r[i]))
        done, bad = rescue_instances(dag + ".rescue")
        problems += bad + once_problems("rescue log", done, r + s)
        self.check(problems, res, "retry, %d rank(s)" % ranks)

    # --------------------------------------------------------- always fails

    def case_always_fails(self, ranks):
        rec = self.rec(0.0)
        dag = self.write_dag("fail.dag", """
            TASK f[0-5] /bin/sh -c "echo f[%{{INDEX}}] >> {tmp}/tries; test %{{INDEX}} != 3"
            TASK g[0-5] {rec} g[%{{INDEX}}]
            EDGE f[i] g[i]
            """.format(tmp=self.tmp, rec=rec))
        f, g = instances("f", 0, 5), instances("g", 0, 5)
        res = self.run_dag(dag, ranks, ["-t", "2", "--summary-json", self.path("sum.json")])
        problems = []
        if res.timed_out or res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        problems += res.output.problems
        if [s.get("stat") for s in res.summaries] != ["failed"]:
            problems.append("summaries %s, expected one with stat=failed" % res.summaries)
        tries = (pmcrun.read_text(self.path("tries")) or "").split()
        if tries.count("f[3]") != 2:
            problems.append("f[3] was tried %d times, expected 2" % tries.count("f[3]"))
        got = [x.status for x in res.records_of("f[3]")]
        if got != [256, 256]:
            problems.append("f[3]: record statuses %s, expected [256, 256]" % got)
        if not re.search(r"Task f\[3\] failed with exitcode 1", res.stderr):
            problems.append("no 'Task f[3] failed with exitcode 1' on stderr")
        entries, bad = read_ledger(self.path("ledger"))
        others = [n for n in g if n != "g[3]"]
        problems += bad + once_problems("ledger (children of the good instances)",
                                        [x.name for x in entries], others)
        done, bad = rescue_instances(dag + ".rescue")
        problems += bad + once_problems("rescue log", done,
                                        [n for n in f if n != "f[3]"] + others)
        summary = json.loads(pmcrun.read_text(self.path("sum.json")) or "{}")
        failed = [t.get("name") for t in summary.get("failed_tasks", [])]
        if failed != ["f[3]"]:
            problems.append("--summary-json failed_tasks names %s, expected ['f[3]']" % failed)
        self.check(problems, res, "always fails, %d rank(s)" % ranks)

    # ------------------------------------------------- --task-records failed

    def records_failed_problems(self, res, out_text, failed, outputs, ntasks):
        problems = []
        if res.timed_out or res.returncode != 1:
            problems.append("exit status %s, expected 1 (a task failed)" % res.returncode)
        recs = pmcrun.parse_output(out_text)
        problems += recs.problems
        got = sorted((r.name, r.status) for r in recs.tasks)
        if got != sorted(failed):
            problems.append("records %s, expected only the failed attempts %s"
                            % (got, sorted(failed)))
        lines = out_text.split("\n")
        missing = [o for o in outputs if o not in lines]
        if missing:
            problems.append("output lines missing from -o (each on a line of its own): %s"
                            % missing)
        if len(res.summaries) != 1:  # on stdout, not in -o
            problems.append("%d cluster-summary records, expected 1" % len(res.summaries))
        else:
            s = res.summaries[0]
            want = {"stat": "failed", "tasks": str(ntasks), "submitted": str(ntasks),
                    "succeeded": str(ntasks - len(failed))}
            for key, value in want.items():
                if s.get(key) != value:
                    problems.append("cluster-summary %s=%s, expected %s"
                                    % (key, s.get(key), value))
            if int(s["failed"]) + int(s["extra"]) != len(failed):
                problems.append("cluster-summary failed=%s extra=%s, expected %d failed attempts"
                                % (s["failed"], s["extra"], len(failed)))
        return problems

    def case_task_records_failed_plain(self, ranks):
        dag = self.write_dag("plain.dag", """
            TASK ok1 /bin/echo out-ok1
            TASK ok2 /bin/sh -c "printf no-newline"
            TASK bad /bin/sh -c "echo out-bad; exit 3"
            TASK after /bin/echo out-after
            EDGE ok1 after
            """)
        out = self.path("out.txt")
        res = self.run_dag(dag, ranks, ["-o", out, "--task-records", "failed"])
        text = pmcrun.read_text(out) or ""
        problems = self.records_failed_problems(
            res, text, [("bad", 768)], ["out-ok1", "no-newline", "out-bad", "out-after"], 4)
        done, bad = rescue_instances(dag + ".rescue")
        problems += bad + once_problems("rescue log", done, ["ok1", "ok2", "after"])
        self.check(problems, res, "--task-records failed, plain DAG, %d rank(s)" % ranks)

    def case_task_records_failed_array(self, ranks):
        dag = self.write_dag("arr.dag", """
            TASK w[0-9] /bin/sh -c "echo out-w%{INDEX}; test %{INDEX} != 7"
            TASK t /bin/echo out-t
            EDGE t w[*]
            """)
        out = self.path("out.txt")
        res = self.run_dag(dag, ranks, ["-o", out, "--task-records", "failed"])
        text = pmcrun.read_text(out) or ""
        problems = self.records_failed_problems(
            res, text, [("w[7]", 256)], ["out-t"] + ["out-w%d" % i for i in range(10)], 11)
        done, bad = rescue_instances(dag + ".rescue")
        problems += bad + once_problems("rescue log", done,
                                        ["t"] + [n for n in instances("w", 0, 9) if n != "w[7]"])
        self.check(problems, res, "--task-records failed, array, %d rank(s)" % ranks)

    # ------------------------------------------------------------ bad input

    # name, DAG text after line 1 (TASK A), the line and the message named
    BAD = [
        ("reversed-range", "TASK s[5-4] /bin/touch {tmp}/ran.s%{{INDEX}}\n", 2,
         "task s[5-4]: reversed array range (first > last)"),
        ("empty-range", "TASK s[] /bin/touch {tmp}/ran.s\n", 2, "task s[]: empty array range"),
        ("huge-bound", "TASK s[0-1000000000] /bin/touch {tmp}/ran.s\n", 2,
         "task s[0-1000000000]: index 1000000000 past the maximum 999999999"),
        ("huge-bound-digits", "TASK s[0-99999999999999999999] /bin/touch {tmp}/ran.s\n", 2,
         "task s[0-99999999999999999999]: index 99999999999999999999 past the maximum "
         "999999999"),
        ("too-many-instances",
         "TASK s[0-599999999] /bin/touch {tmp}/ran.s\nTASK t[0-400000000] /bin/touch {tmp}/ran.t\n",
         3, "task t[0-400000000]: more than 1000000000 instances in the DAG"),
        ("one-to-one-mismatch",
         "TASK a[0-3] /bin/touch {tmp}/ran.a\nTASK b[0-4] /bin/touch {tmp}/ran.b\n"
         "EDGE a[i] b[i]\n", 4,
         "EDGE a[i] b[i]: one-to-one needs equal ranges, but the array of line 2 has 4 "
         "instances and that of line 3 5"),
        ("k-not-dividing",
         "TASK m[0-9] /bin/touch {tmp}/ran.m\nTASK r[0-2] /bin/touch {tmp}/ran.r\n"
         "EDGE m[i] r[i/3]\n", 4,
         "EDGE m[i] r[i/3]: K-to-one needs 3 x 3 instances in the parent (line 2), which has 10"),
        ("index-in-plain-task", "TASK p /bin/touch {tmp}/ran.p%{{INDEX}}\n", 2,
         "task p: %{INDEX} in a plain task"),
        ("plain-named-like-instance",
         "TASK sim[0-9] /bin/touch {tmp}/ran.sim\nTASK sim[3] /bin/touch {tmp}/ran.sim3\n", 3,
         "task sim[3] is named like an instance of the array sim of line 2"),
        ("instance-named-before-array",
         "TASK sim[3] /bin/touch {tmp}/ran.sim3\nTASK sim[0-9] /bin/touch {tmp}/ran.sim\n", 3,
         "array sim: the task sim[3] of line 2 is named like one of its instances"),
        ("plain-named-like-array",
         "TASK sim[0-9] /bin/touch {tmp}/ran.sim\nTASK sim /bin/touch {tmp}/ran.simp\n", 3,
         "duplicate name sim: the array sim of line 2"),
        ("no-edge-form",
         "TASK a[0-3] /bin/touch {tmp}/ran.a\nTASK t /bin/touch {tmp}/ran.t\nEDGE a[i] t\n", 4,
         "EDGE a[i] t: not an edge form"),
    ]

    def case_bad_input(self, ranks):
        for name, extra, line, message in self.BAD:
            with self.subTest(case=name):
                sub = os.path.join(self.tmp, name)
                os.mkdir(sub)
                dag = os.path.join(sub, "bad.dag")
                with open(dag, "w") as f:
                    f.write("TASK A /bin/touch {tmp}/ran.A\n".format(tmp=sub)
                            + extra.format(tmp=sub))
                res = pmcrun.run(["--host-cpus", "2", dag], ranks=ranks, cwd=sub, timeout=60,
                                 ranks_are_hosts=ranks > 1)
                problems = []
                if res.timed_out or res.returncode != 1:
                    problems.append("exit status %s, expected 1" % res.returncode)
                if res.tasks:
                    problems.append("%d cluster-task records: a task ran" % len(res.tasks))
                ran = sorted(f for f in os.listdir(sub) if f.startswith("ran."))
                if ran:
                    problems.append("tasks ran: %s" % ", ".join(ran))
                if os.path.exists(dag + ".rescue"):
                    problems.append("a rescue log was written")
                lines = pmcrun.stderr_lines(res)
                want = "bad.dag:%d: %s" % (line, message)
                if not any(want in x for x in lines):
                    problems.append("no stderr line holds %r" % want)
                if len(lines) != 1:
                    problems.append("%d lines on stderr, expected one message" % len(lines))
                self.check(problems, res, "%s, %d rank(s)" % (name, ranks))


if __name__ == "__main__":
    pmcrun.main()
