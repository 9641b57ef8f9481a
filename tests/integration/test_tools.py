#!/usr/bin/env python3
"""test_tools.py - system tests of the user tools and of what gets installed.

  * pmc-dag check: every parser error of a DAG with one error of each kind is
    reported with its line, nothing else is, the exit status is 1 and no task
    runs; cycles (each of two) and tasks larger than a --host-cpus /
    --host-memory shape are reported; every shared workload checks ok.
  * pmc-dag stats --json and dot on every workflow of ../shared/workloads:
    tasks, edges, levels, widths, roots, leaves, the -c histogram and the
    critical path (tasks and sleep seconds) equal an independent count made
    here from the TASK/EDGE lines; the DOT graph has one node per task and one
    edge per EDGE (or, aggregated, node and edge labels that add up to the
    DAG's tasks and edges).
  * pmc-dag from-wfcommons on the hand-written instances of tests/data
    (schema 1.5 and 1.4): the DAG says what the JSON says, and pmc-hybrid
    runs it to success; JSON and reference errors name the line or field and
    leave no output file.
  * pmc-plot: a valid SVG (xml.etree) for the records of a real workflow run
    (the smallest shared workload, --host-cpus 4) and for 2,000 generated
    records, drawn box by box and aggregated; a PNG; no records is an error.
  * man pages: each renders without warnings with `man --warnings -l` (or,
    without man-db, `groff -man -Tutf8 -ww`; with neither the test fails and
    says to install man-db); every option of each tool's --help is in its page.
  * `cmake --install` of the build directory holding --bin into a temporary
    prefix installs bin/pmc-hybrid, pmc-dag, pmc-gendag, pmc-plot and the four
    man pages (and the pegasus-mpi-cluster links when the build has
    PMC_INSTALL_PMC_NAME=ON).

pmc-dag is found next to --bin; pmc-plot in the source tree (tools/).

    python3 tests/integration/test_tools.py --bin build/pmc-hybrid
"""

import collections
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

TOOL_TIMEOUT = 120  # seconds for one tool run
MAN_PAGES = ("pmc-hybrid.1", "pmc-dag.1", "pmc-plot.1", "pmc-gendag.1")


def pmc_dag_path():
    return os.path.join(os.path.dirname(pmcrun.CONFIG.bin), "pmc-dag")


def pmc_plot_path():
    return os.path.join(pmcrun.CONFIG.source_dir, "tools", "pmc-plot")


def tool(argv, cwd=None, timeout=TOOL_TIMEOUT):
    """Run a tool; returns the CompletedProcess with text stdout/stderr."""
    return subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout, universal_newlines=True)


def describe(proc):
    return "command: %s\nexit %d\nstderr:\n%s\nstdout:\n%s" % (
        " ".join(proc.args), proc.returncode, proc.stderr[-3000:], proc.stdout[-3000:])


# ------------------------------------------------ an independent DAG count


class Count:
    """What a DAG file holds, counted here from its TASK and EDGE lines
    (first words only: the shared workloads need no quoting rules)."""

    def __init__(self, path):
        self.tasks, self.cpus, self.sleep = [], {}, {}
        edges = set()
        with open(path) as f:
            for line in f:
                w = line.split()
                if not w or w[0].startswith("#"):
                    continue
                if w[0] == "TASK":
                    self.tasks.append(w[1])
                    i, cpus = 2, 1
                    while w[i].startswith("-"):
                        if w[i] == "-c":
                            cpus = int(-(-float(w[i + 1]) // 1))
                        i += 2
                    self.cpus[w[1]] = cpus
                    if w[i].rsplit("/", 1)[-1] == "sleep" and len(w) == i + 2:
                        self.sleep[w[1]] = float(w[i + 1])
                elif w[0] == "EDGE":
                    edges.add((w[1], w[2]))
        self.edges = edges
        self._levels()

    def _levels(self):
        children = collections.defaultdict(list)
        indeg = dict.fromkeys(self.tasks, 0)
        for p, c in self.edges:
            children[p].append(c)
            indeg[c] += 1
        self.roots = sum(1 for t in self.tasks if indeg[t] == 0)
        self.leaves = sum(1 for t in self.tasks if not children[t])
        level = dict.fromkeys(self.tasks, 0)
        finish = {}
        start = dict.fromkeys(self.tasks, 0.0)
        ready = [t for t in self.tasks if indeg[t] == 0]
        while ready:
            t = ready.pop()
            finish[t] = start[t] + self.sleep.get(t, 0.0)
            for c in children[t]:
                level[c] = max(level[c], level[t] + 1)
                start[c] = max(start[c], finish[t])
                indeg[c] -= 1
                if indeg[c] == 0:
                    ready.append(c)
        self.levels = max(level.values()) + 1
        self.width = [0] * self.levels
        for t in self.tasks:
            self.width[level[t]] += 1
        self.critical_seconds = max(finish.values())


# --------------------------------------------------------------- pmc-dag


class DagTool(pmcrun.TestCase):
    needs_bin = False

    def setUp(self):
        super().setUp()
        self.dag_tool = pmc_dag_path()
        if not os.access(self.dag_tool, os.X_OK):
            self.fail("pmc-dag not found next to --bin: %s" % self.dag_tool)

    def pmc_dag(self, *args):
        return tool([self.dag_tool] + list(args), cwd=self.tmp)


class Check(DagTool):
    def test_every_parser_error_with_its_line(self):
        marker = self.path("task-ran")
        dag = self.write("bad.dag", "\n".join([
            "# one error of each kind; the lines are counted below",  # 1
            "TASK A /bin/echo A",                                      # 2
            "TASK B -c abc /bin/echo B",                               # 3: bad value
            'TASK C /bin/echo "unterminated',                          # 4: quote
            "TASK A /bin/echo again",                                  # 5: duplicate
            "TASKX D /bin/echo D",                                     # 6: unknown record
            "EDGE A Z",                                                # 7: unknown task
            "EDGE A B",                                                # 8: fine (B stubbed)
            "EDGE B C",                                                # 9: fine (C stubbed)
            "TASK E -m",                                               # 10: needs a value
            "TASK F /usr/bin/touch %s" % marker,                       # 11: fine
            "EDGE F F",                                                # 12: self edge
            "EDGE A",                                                  # 13: one name
            "TASK G",                                                  # 14: no executable
            "EDGE A F",                                                # 15: fine
        ]) + "\n")
        proc = self.pmc_dag("check", dag)
        want = {3: "bad value 'abc'", 4: "unterminated", 5: "duplicate task A",
                6: "unknown record TASKX", 7: "unknown task Z", 10: "needs a value",
                12: "to itself", 13: "EDGE needs a parent and a child", 14: "no executable"}
        problems = []
        if proc.returncode != 1:
            problems.append("exit status %d, expected 1" % proc.returncode)
        seen = {}
        for line in proc.stderr.splitlines():
            m = re.match(re.escape(dag) + r":(\d+): (.*)$", line)
            if m:
                seen.setdefault(int(m.group(1)), []).append(m.group(2))
        for lineno, text in sorted(want.items()):
            got = seen.pop(lineno, [])
            if len(got) != 1 or text not in got[0]:
                problems.append("line %d: expected one error with %r, got %r" % (lineno, text, got))
        for lineno, got in sorted(seen.items()):
            problems.append("line %d: unexpected error(s) %r" % (lineno, got))
        if "%s: %d problems" % (dag, len(want)) not in proc.stderr:
            problems.append("no '%d problems' line" % len(want))
        if os.path.exists(marker):
            problems.append("check ran a task")
        self.check(problems, case=describe(proc))

    def test_cycles_and_host_shape(self):
        dag = self.write_dag("cyc.dag", """
            TASK A /bin/true
            TASK B /bin/true
            TASK C /bin/true
            TASK D -c 8 /bin/true
            TASK E -m 5000 /bin/true
            EDGE A B
            EDGE B C
            EDGE C A
            EDGE D E
            EDGE E D
        """)
        proc = self.pmc_dag("check", "--host-cpus", "4", "--host-memory", "4096", dag)
        problems = [] if proc.returncode == 1 else ["exit %d, expected 1" % proc.returncode]
        for text in ("%s: cycle: A -> B -> C -> A" % dag, "%s: cycle: D -> E -> D" % dag,
                     "%s:4: task D requests 8 CPUs" % dag, "%s:5: task E requests 5000 MB" % dag,
                     "%s: 4 problems" % dag):
            if text not in proc.stderr:
                problems.append("missing %r" % text)
        ok = self.pmc_dag("check", "--host-cpus", "8", "--host-memory", "5000",
                          self.write_dag("fits.dag", "TASK D -c 8 -m 5000 /bin/true"))
        if ok.returncode != 0 or "ok: 1 tasks, 0 edges, 1 levels" not in ok.stdout:
            problems.append("a task that fits the host: " + describe(ok))
        self.check(problems, case=describe(proc))

    def test_cycles_of_long_names(self):
        """Two cycles, the first of 300-character names, whose message cannot
        hold both names: the second cycle is still found (check stopped at
        the first: it could not find the edge the cut message named)."""
        a, b = "A" * 300, "B" * 300
        dag = self.write_dag("long.dag", "\n".join(
            ["TASK %s /bin/true" % n for n in (a, b, "C", "D")] +
            ["EDGE %s %s" % e for e in ((a, b), (b, a), ("C", "D"), ("D", "C"))]))
        proc = self.pmc_dag("check", dag)
        problems = [] if proc.returncode == 1 else ["exit %d, expected 1" % proc.returncode]
        for text in ("%s: cycle: %s" % (dag, a), "%s: cycle: C -> D -> C" % dag,
                     "%s: 2 problems" % dag):
            if text not in proc.stderr:
                problems.append("missing %r" % text[:80])
        self.check(problems, case=describe(proc))

    def test_workloads_check_ok(self):
        folder = self.require_workloads()
        for name in sorted(f for f in os.listdir(folder) if f.endswith(".dag")):
            with self.subTest(dag=name):
                path = os.path.join(folder, name)
                count = Count(path)
                proc = self.pmc_dag("check", path)
                want = "%s: ok: %d tasks, %d edges, %d levels" % (
                    path, len(count.tasks), len(count.edges), count.levels)
                self.assertEqual((proc.returncode, proc.stdout.strip()), (0, want),
                                 describe(proc))


class Stats(DagTool):
    def test_stats_json_on_every_workload(self):
        folder = self.require_workloads()
        for name in sorted(f for f in os.listdir(folder) if f.endswith(".dag")):
            with self.subTest(dag=name):
                path = os.path.join(folder, name)
                count = Count(path)
                proc = self.pmc_dag("stats", "--json", path)
                self.assertEqual(proc.returncode, 0, describe(proc))
                s = json.loads(proc.stdout)
                cpus = collections.Counter(count.cpus.values())
                got = {"tasks": s["tasks"], "edges": s["edges"], "levels": s["levels"],
                       "roots": s["roots"], "leaves": s["leaves"],
                       "width": s["width"]["per_level"], "max width": s["width"]["max"],
                       "cpus": {b["value"]: b["tasks"] for b in s["cpus"]},
                       "critical path tasks": s["critical_path"]["tasks"],
                       "runtime known": s["critical_path"]["runtime_known"]}
                want = {"tasks": len(count.tasks), "edges": len(count.edges),
                        "levels": count.levels, "roots": count.roots, "leaves": count.leaves,
                        "width": count.width, "max width": max(count.width),
                        "cpus": dict(cpus), "critical path tasks": count.levels,
                        "runtime known": len(count.sleep)}
                self.assertEqual(got, want)
                self.assertAlmostEqual(s["critical_path"]["seconds"], count.critical_seconds,
                                       places=6)
                # the path given is a chain of edges whose sleeps add up
                chain = s["critical_path"]["path"]
                self.assertTrue(all(e in count.edges for e in zip(chain, chain[1:])), chain)
                self.assertAlmostEqual(sum(count.sleep.get(t, 0.0) for t in chain),
                                       count.critical_seconds, places=6)
                self.assertAlmostEqual(s["work_seconds"], sum(count.sleep.values()), places=6)
                text = self.pmc_dag("stats", path)
                self.assertEqual(text.returncode, 0, describe(text))
                self.assertIn("tasks           %d\n" % len(count.tasks), text.stdout)

    def test_stats_rejects_a_bad_dag(self):
        dag = self.write_dag("bad.dag", "TASK A /bin/true\nEDGE A B")
        proc = self.pmc_dag("stats", dag)
        self.assertEqual(proc.returncode, 1, describe(proc))
        self.assertIn("%s:2: EDGE names unknown task B" % dag, proc.stderr)


DOT_NODE = re.compile(r'^\s+"((?:[^"\\]|\\.)*)" \[fillcolor=')
DOT_EDGE = re.compile(r'^\s+"((?:[^"\\]|\\.)*)" -> "((?:[^"\\]|\\.)*)";$')
DOT_GROUP = re.compile(r'^\s+g(\d+) \[label="[^"]*?(\d+) tasks?"')
DOT_GROUP_EDGE = re.compile(r'^\s+g(\d+) -> g(\d+) \[label="(\d+)"')


class Dot(DagTool):
    def dot_problems(self, text):
        """Structure every DOT file must have; renders it when Graphviz is
        installed."""
        problems = []
        if not text.startswith("digraph ") or not text.rstrip().endswith("}"):
            problems.append("not a digraph { ... }")
        if text.count("{") != text.count("}"):
            problems.append("unbalanced braces")
        if shutil.which("dot"):
            proc = subprocess.run(["dot", "-Tsvg"], input=text, universal_newlines=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
            if proc.returncode != 0:
                problems.append("dot -Tsvg failed: %s" % proc.stderr[:500])
        return problems

    def test_dot_on_every_workload(self):
        folder = self.require_workloads()
        for name in sorted(f for f in os.listdir(folder) if f.endswith(".dag")):
            with self.subTest(dag=name):
                path = os.path.join(folder, name)
                count = Count(path)
                out = self.path(name + ".dot")
                proc = self.pmc_dag("dot", "--cluster-levels", path, "-o", out)
                self.assertEqual(proc.returncode, 0, describe(proc))
                with open(out) as f:
                    text = f.read()
                problems = self.dot_problems(text)
                lines = text.splitlines()
                nodes = [m.group(1) for m in map(DOT_NODE.match, lines) if m]
                edges = {m.groups() for m in map(DOT_EDGE.match, lines) if m}
                if sorted(nodes) != sorted(count.tasks):
                    problems.append("%d nodes for %d tasks" % (len(nodes), len(count.tasks)))
                if edges != count.edges:
                    problems.append("%d edges for %d EDGE pairs" % (len(edges), len(count.edges)))
                if text.count("subgraph cluster_level_") != count.levels:
                    problems.append("not one cluster per level")
                self.check(problems, case=name)

    def test_dot_aggregates_big_dags(self):
        folder = self.require_workloads()
        path = os.path.join(folder, "montage-2mass-05d.dag")
        if not os.path.exists(path):
            self.skipTest("no montage-2mass-05d.dag")
        count = Count(path)
        proc = self.pmc_dag("dot", "--max-tasks", "500", path)
        self.assertEqual(proc.returncode, 0, describe(proc))
        lines = proc.stdout.splitlines()
        groups = [int(m.group(2)) for m in map(DOT_GROUP.match, lines) if m]
        edges = [int(m.group(3)) for m in map(DOT_GROUP_EDGE.match, lines) if m]
        problems = self.dot_problems(proc.stdout)
        if sum(groups) != len(count.tasks) or not 2 <= len(groups) <= 500:
            problems.append("%d groups holding %d tasks" % (len(groups), sum(groups)))
        # every edge joins two levels, so no edge is inside a group
        if sum(edges) != len(count.edges):
            problems.append("group edges stand for %d edges, not %d" % (sum(edges),
                                                                       len(count.edges)))
        self.check(problems, case=proc.stdout[:2000])


# ------------------------------------------------------------ task arrays


class Arrays(DagTool):
    """pmc-dag on task arrays (docs/task-arrays.md): check and stats count
    the instances, dot draws an array as one node, check reports bad array
    input with its line; pmc-gendag writes sweep and mapreduce both ways."""

    def test_check_stats_dot_of_gendag_arrays(self):
        problems = []
        for shape, width in (("sweep", None), ("mapreduce", "5")):
            extra = ["--width", width] if width else []
            plain, arrays = self.path(shape + ".dag"), self.path(shape + "-arrays.dag")
            for out, more in ((plain, []), (arrays, ["--arrays"])):
                pmcrun.gendag(["--shape", shape, "--tasks", "601", "--command", "echo"] + extra +
                              more, out)
            count = Count(plain)
            stats = json.loads(self.pmc_dag("stats", "--json", arrays).stdout)
            want_instances = len(count.tasks) - 1  # all but the one plain task
            if (stats["tasks"], stats["arrays"], stats["instances"]) != (1, 2, want_instances):
                problems.append("%s: stats %r" % (shape, {k: stats[k] for k in (
                    "tasks", "arrays", "instances", "array_edges")}))
            proc = self.pmc_dag("check", arrays)
            if proc.returncode != 0 or "2 arrays of %d instances" % want_instances \
                    not in proc.stdout:
                problems.append("%s: check: %s" % (shape, describe(proc)))
            dot = self.pmc_dag("dot", arrays).stdout
            problems += Dot.dot_problems(self, dot)
            first = want_instances // 2 if shape == "sweep" else want_instances // 6 * 5
            if dot.count("shape=box3d") != 2 or "\\n%d instances" % first not in dot:
                problems.append("%s: dot has not one node per array:\n%s" % (shape, dot))
        self.check(problems)

    def test_check_reports_bad_arrays_with_lines(self):
        dag = self.write_dag("bad-arrays.dag", """
            TASK a[0-3] /bin/true
            TASK b[0-4] -c 16 /bin/true
            TASK c[5-1] /bin/true
            EDGE a[i] b[i]
            TASK a[2] /bin/true
            TASK m[0-9] /bin/true
            TASK r[0-2] /bin/true
            EDGE m[i] r[i/3]
            TASK p /bin/echo %{INDEX}
        """)
        proc = self.pmc_dag("check", "--host-cpus", "8", dag)
        problems = [] if proc.returncode == 1 else ["exit %d, expected 1" % proc.returncode]
        for text in ("%s:3: task c[5-1]: reversed array range" % dag,
                     "%s:4: EDGE a[i] b[i]: one-to-one needs equal ranges" % dag,
                     "%s:5: task a[2] is named like an instance of the array a" % dag,
                     "%s:8: EDGE m[i] r[i/3]: K-to-one needs 3 x 3 instances" % dag,
                     "%s:9: task p: %%{INDEX} in a plain task" % dag,
                     "%s:2: array b requests 16 CPUs per instance" % dag,
                     "%s: 6 problems" % dag):
            if text not in proc.stderr:
                problems.append("missing %r" % text)
        self.check(problems, case=describe(proc))

    def test_cycle_through_arrays_is_reported_and_broken(self):
        dag = self.write_dag("cyc-arrays.dag", """
            TASK a[0-3] /bin/true
            TASK b[0-3] /bin/true
            TASK t /bin/true
            EDGE a[i] b[i]
            EDGE b[*] t
            EDGE t a[*]
        """)
        proc = self.pmc_dag("check", dag)
        problems = [] if proc.returncode == 1 else ["exit %d, expected 1" % proc.returncode]
        for text in ("%s: cycle: t -> a[*] -> b[*] -> t" % dag, "%s: 1 problem" % dag):
            if text not in proc.stderr:
                problems.append("missing %r" % text)
        self.check(problems, case=describe(proc))


# --------------------------------------------------------- from-wfcommons


class WfCommons(DagTool):
    needs_bin = True

    def convert(self, sample, *extra):
        src = os.path.join(pmcrun.CONFIG.source_dir, "tests", "data", sample)
        out = self.path(sample.replace(".json", ".dag"))
        proc = self.pmc_dag("from-wfcommons", src, "-o", out, *extra)
        self.assertEqual(proc.returncode, 0, describe(proc))
        return out

    def test_schema_1_5_converts_and_runs(self):
        path = self.convert("wfcommons-1.5-sample.json")
        dag = pmcrun.parse_dag(path)
        got = {n: (t.cpus, t.memory, t.priority, t.argv, t.pegasus_id)
               for n, t in dag.tasks.items()}
        want = {"split_fasta_ID0000001": (1, 50, 30, ["/bin/sleep", "0.013"], "1"),
                "blastall_ID0000002": (2, 600, 20, ["/bin/sleep", "0.150"], "2"),
                "blastall_ID0000003": (1, 300, 20, ["/bin/sleep", "0.140"], "3"),
                "blastall_ID0000004": (2, 0, 20, ["/bin/sleep", "0.121"], "4"),
                "cat_blast_ID0000005": (1, 0, 10, ["/bin/sleep", "0.030"], "5"),
                "cat_ID0000006": (1, 0, 10, ["/bin/sleep", "0.005"], "6")}
        self.assertEqual(got, want)
        edges = sorted(dag.edges)
        self.assertEqual(len(edges), len(set(edges)), "an edge written twice")
        self.assertEqual(len(edges), 9)
        res = self.run_pmc(["--host-cpus", "4", path])
        self.check(pmcrun.success_problems(res, dag), res)

    def test_schema_1_4_converts_and_runs(self):
        path = self.convert("wfcommons-1.4-sample.json", "--scale", "0.01")
        dag = pmcrun.parse_dag(path)
        self.assertEqual(sorted(dag.edges), [
            ("mDiffFit_ID0000003", "mAdd_ID0000004"),
            ("mProject_ID0000001", "mDiffFit_ID0000003"),
            ("mProject_ID0000002", "mDiffFit_ID0000003")])
        self.assertEqual(dag.tasks["mAdd_ID0000004"].cpus, 4)
        self.assertEqual(dag.tasks["mProject_ID0000001"].memory, 100)
        self.assertEqual(dag.tasks["mProject_ID0000002"].argv, ["/bin/sleep", "0.225"])
        res = self.run_pmc(["--host-cpus", "4", path])
        self.check(pmcrun.success_problems(res, dag), res)

    def test_errors_name_the_line_or_field(self):
        cases = [
            ("syntax.json", '{"workflow": {"tasks": [\n  {"name": "a",}\n]}}\n',
             r"syntax\.json:2:\d+: "),
            ("unknown.json", json.dumps({"schemaVersion": "1.4", "workflow": {"tasks": [
                {"name": "a", "parents": [], "children": ["b"]}]}}),
             r"unknown\.json: workflow\.tasks\[0\]\.children\[0\]: unknown task b"),
            ("runtime.json", json.dumps({"schemaVersion": "1.5", "workflow": {
                "specification": {"tasks": [{"name": "a", "id": "1", "parents": [],
                                             "children": []}]},
                "execution": {"tasks": [{"id": "1", "runtimeInSeconds": "slow"}]}}}),
             r"runtime\.json: workflow\.execution\.tasks\[0\]\.runtimeInSeconds: not a"),
            ("cycle.json", json.dumps({"schemaVersion": "1.4", "workflow": {"tasks": [
                {"name": "a", "parents": ["b"]}, {"name": "b", "parents": ["a"]}]}}),
             r"cycle\.json: the converted DAG is not valid: cycle: "),
            ("notwf.json", "[1, 2]", r"notwf\.json: not a JSON object"),
            # more than -c or -m takes: an error, not a silent clamp
            ("cores.json", json.dumps({"schemaVersion": "1.5", "workflow": {
                "specification": {"tasks": [{"name": "a", "id": "1", "parents": [],
                                             "children": []}]},
                "execution": {"tasks": [{"id": "1", "coreCount": 1e10}]}}}),
             r"cores\.json: workflow\.execution\.tasks\[0\]: 1e\+10 cores: more than -c"),
            ("memory.json", json.dumps({"schemaVersion": "1.5", "workflow": {
                "specification": {"tasks": [{"name": "a", "id": "1", "parents": [],
                                             "children": []}]},
                "execution": {"tasks": [{"id": "1", "memoryInBytes": 1e19}]}}}),
             r"memory\.json: workflow\.execution\.tasks\[0\]: 1e\+19 bytes of memory: more"),
        ]
        problems = []
        for name, text, pattern in cases:
            src = self.write(name, text)
            out = self.path(name + ".dag")
            proc = self.pmc_dag("from-wfcommons", src, "-o", out)
            if proc.returncode != 1 or not re.search(pattern, proc.stderr):
                problems.append("%s: exit %d, stderr %r, expected /%s/" % (
                    name, proc.returncode, proc.stderr.strip(), pattern))
            left = [f for f in os.listdir(self.tmp) if f.startswith(name + ".dag")]
            if left:
                problems.append("%s: output left behind: %s" % (name, left))
        self.check(problems)


# ---------------------------------------------------------------- pmc-plot


class Plot(pmcrun.TestCase):
    def setUp(self):
        super().setUp()
        self.plot = pmc_plot_path()
        if not os.access(self.plot, os.X_OK):
            self.fail("pmc-plot not found or not executable: %s" % self.plot)

    def plot_ok(self, args):
        proc = tool([self.plot] + args, cwd=self.tmp)
        if proc.returncode != 0 and "needs matplotlib" in proc.stderr:
            self.fail("pmc-plot needs matplotlib: apt-get install python3-matplotlib "
                      "(tools/bootstrap.sh installs it)\n" + describe(proc))
        self.assertEqual(proc.returncode, 0, describe(proc))
        return proc

    def assert_svg(self, path, min_rects=0):
        root = ET.parse(path).getroot()  # raises on invalid XML
        self.assertTrue(root.tag.endswith("svg"), root.tag)
        return root

    def test_real_workflow_records(self):
        folder = self.require_workloads()
        dags = [os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".dag")]
        smallest = min(dags, key=lambda p: len(Count(p).tasks))
        dag = self.copy_dag(smallest)
        res = self.run_pmc(["--host-cpus", "4", "-o", "out.txt", dag])
        self.assertEqual(res.returncode, 0, res.describe())
        with open(self.path("stdout.txt"), "w") as f:
            f.write(res.stdout)
        self.plot_ok(["out.txt", "stdout.txt", "-o", "run.svg", "--by", "transformation",
                      "--title", os.path.basename(smallest)])
        root = self.assert_svg(self.path("run.svg"))
        text = " ".join(t for t in root.itertext())
        self.assertIn(os.path.basename(smallest), text)
        self.assertIn("%d tasks" % len(Count(smallest).tasks), text)
        self.plot_ok(["out.txt", "stdout.txt", "-o", "run.png", "--by", "status"])
        with open(self.path("run.png"), "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def generated(self, n):
        """n records of a run on 4 hosts x 8 CPUs, tasks back to back, 1 in
        97 failed, among lines of task output."""
        lines = []
        for i in range(n):
            lane, k = i % 32, i // 32
            start = pmcrun.datetime.datetime.fromtimestamp(
                1700000000.0 + k * 0.5 + lane * 0.01, pmcrun.datetime.timezone.utc)
            iso = start.isoformat(timespec="milliseconds")
            status = 256 if i % 97 == 0 else 0
            lines.append('[cluster-task id=%d, name=t%d_ID%07d, start="%s", duration=0.400, '
                         'status=%d, app="/bin/app%d", hostname="node%d", slot=%d, cpus=1, '
                         'memory=0]' % (i + 1, i % 5, i + 1, iso, status, i % 3, lane // 8,
                                        lane // 8))
            lines.append("output of task %d" % i)
        return self.write("gen.txt", "\n".join(lines) + "\n")

    def test_generated_2k_records(self):
        records = self.generated(2000)
        self.plot_ok([records, "-o", "boxes.svg", "--cpus", "32"])
        self.assert_svg(self.path("boxes.svg"))
        self.plot_ok([records, "-o", "agg.svg", "--max-boxes", "1000", "--bins", "200"])
        root = self.assert_svg(self.path("agg.svg"))
        self.assertIn("aggregated", " ".join(root.itertext()))

    def test_no_records_is_an_error(self):
        empty = self.write("empty.txt", "no records here\n")
        proc = tool([self.plot, empty, "-o", self.path("x.svg")], cwd=self.tmp)
        self.assertEqual(proc.returncode, 1, describe(proc))
        self.assertIn("no [cluster-task] records", proc.stderr)
        self.assertFalse(os.path.exists(self.path("x.svg")))

    def test_non_finite_duration_is_skipped(self):
        """A record with duration=nan or inf is reported and skipped like any
        malformed record (the plot's axes cannot hold it: a traceback before)."""
        good = ('[cluster-task name=a, start="2026-11-27T10:00:00.000+00:00", duration=1.000, '
                'status=0, app="/bin/x", hostname="h", slot=0, cpus=1, memory=0]\n')
        bad = [good.replace("name=a", "name=" + n).replace("duration=1.000", "duration=" + d)
               for n, d in (("b", "nan"), ("c", "inf"))]
        records = self.write("nan.txt", good + "".join(bad))
        proc = self.plot_ok([records, "-o", "nan.svg"])
        self.assertEqual(proc.stderr.count("malformed cluster-task record skipped"), 2,
                         describe(proc))
        self.assert_svg(self.path("nan.svg"))


# -------------------------------------------------------------- man pages


def roff_text(path):
    """The page's source with \\- as - and font escapes removed, to look
    options up without line breaks or hyphenation in the way."""
    with open(path) as f:
        text = f.read()
    text = text.replace("\\-", "-")
    return re.sub(r"\\f[BIRP]|\\e", "", text)


def help_options(argv):
    proc = tool(argv)
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", proc.stdout)) - {"--help"}


class ManPages(pmcrun.TestCase):
    def man_dir(self):
        return os.path.join(pmcrun.CONFIG.source_dir, "docs", "man")

    def test_pages_render_without_warnings(self):
        if shutil.which("man"):
            how = "man"
        elif shutil.which("groff"):
            how = "groff"
        else:
            self.fail("neither man nor groff is installed: apt-get install man-db "
                      "(which brings groff-base) to check the man pages")
        problems = []
        for page in MAN_PAGES:
            path = os.path.join(self.man_dir(), page)
            if how == "man":
                argv = ["man", "--warnings", "-l", path]
            else:
                argv = ["groff", "-man", "-Tutf8", "-ww", path]
            env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8")
            proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, universal_newlines=True, env=env,
                                  timeout=60)
            if proc.returncode != 0 or proc.stderr.strip():
                problems.append("%s: exit %d: %s" % (" ".join(argv), proc.returncode,
                                                      proc.stderr.strip()[:1000]))
            for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "EXIT STATUS", "EXAMPLES",
                            "SEE ALSO"):
                if section not in proc.stdout:
                    problems.append("%s: no %s section" % (page, section))
        self.check(problems)

    def test_pages_cover_every_option(self):
        bindir = os.path.dirname(pmcrun.CONFIG.bin)
        dag_tool = os.path.join(bindir, "pmc-dag")
        cases = {
            "pmc-hybrid.1": help_options([pmcrun.CONFIG.bin, "--help"]),
            "pmc-gendag.1": help_options([os.path.join(bindir, "pmc-gendag"), "--help"]),
            "pmc-plot.1": help_options([pmc_plot_path(), "--help"]),
            "pmc-dag.1": set().union(*(help_options([dag_tool, cmd, "--help"]) for cmd in
                                       ("check", "stats", "dot", "from-wfcommons"))),
        }
        problems = []
        for page, options in cases.items():
            if len(options) < 3:
                problems.append("%s: could not read the options from --help" % page)
            text = roff_text(os.path.join(self.man_dir(), page))
            missing = sorted(o for o in options if o not in text)
            if missing:
                problems.append("%s lacks %s" % (page, ", ".join(missing)))
        for name in ("PMC_HOST_CPUS", "PMC_HOST_MEMORY", "PMC_HOST_SCRIPT", "PMC_MAX_WALL_TIME",
                     "PMC_RANKS_ARE_HOSTS", "PMC_TASK", "PMC_MEMORY", "PMC_CPUS", "PMC_RANK",
                     "PMC_HOST_RANK", "PMC_AFFINITY", ".rescue", "jobstate.log", ".dagman.out"):
            if name not in roff_text(os.path.join(self.man_dir(), "pmc-hybrid.1")):
                problems.append("pmc-hybrid.1 lacks %s" % name)
        self.check(problems)


# ------------------------------------------------------------------ install


class Install(pmcrun.TestCase):
    def test_cmake_install_into_a_prefix(self):
        build = os.path.dirname(pmcrun.CONFIG.bin)
        cache = os.path.join(build, "CMakeCache.txt")
        if not os.path.exists(cache):
            self.fail("%s is not a CMake build directory (no CMakeCache.txt)" % build)
        cmake = shutil.which("cmake")
        if not cmake:
            self.fail("cmake not found on PATH")
        prefix = self.path("prefix")
        proc = tool([cmake, "--install", build, "--prefix", prefix], timeout=300)
        self.assertEqual(proc.returncode, 0, describe(proc))
        problems = []
        for exe in ("pmc-hybrid", "pmc-dag", "pmc-gendag", "pmc-plot"):
            path = os.path.join(prefix, "bin", exe)
            if not os.access(path, os.X_OK):
                problems.append("bin/%s not installed (or not executable)" % exe)
        for page in MAN_PAGES:
            if not os.path.isfile(os.path.join(prefix, "share", "man", "man1", page)):
                problems.append("share/man/man1/%s not installed" % page)
        with open(cache) as f:
            pmc_name = re.search(r"^PMC_INSTALL_PMC_NAME:BOOL=(ON|TRUE|1|YES)$", f.read(),
                                 re.M | re.I)
        if pmc_name:
            for link, target in (("bin/pegasus-mpi-cluster", "pmc-hybrid"),
                                 ("share/man/man1/pegasus-mpi-cluster.1", "pmc-hybrid.1")):
                path = os.path.join(prefix, link)
                if not os.path.islink(path) or os.readlink(path) != target:
                    problems.append("%s is not a link to %s" % (link, target))
        installed = os.path.join(prefix, "bin", "pmc-dag")
        if os.access(installed, os.X_OK):
            ran = tool([installed, "--help"])
            if ran.returncode != 0:
                problems.append("installed pmc-dag --help: " + describe(ran))
        self.check(problems, case=describe(proc))


if __name__ == "__main__":
    pmcrun.main()
