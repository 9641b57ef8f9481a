#!/usr/bin/env python3
"""test_gendag.py - system tests of tools/pmc-gendag (needs no pmc-hybrid).

Checks, for every shape and a few sizes: the output is a valid DAG (parsed
with the COMPAT.md rules of pmcrun.parse_dag, acyclic, tasks before the
edges naming them), the header's counts are the real ones, the size is what
--tasks asked for (exact where the shape allows it, at most N otherwise),
every TASK has its "#@" line, priorities fall (down) or rise (up) along every
edge, the shape's structure (montage, epigenomics, seismology stage counts
and fan-ins; layered parents), runtimes in /bin/sleep's 3-decimal form,
determinism by seed, bad options (one error line naming the option, exit 1,
no output file left), a 1,000,000-task layered DAG, and that every DAG in
examples/ is byte-identical to what the command in examples/README.md makes.

    python3 tests/integration/test_gendag.py --gendag build/pmc-gendag
"""

import collections
import os
import re
import shlex
import subprocess
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

SLEEP_RE = re.compile(r"^/bin/sleep \d+\.\d{3}$")


def gen(args, timeout=60):
    """Run the generator to stdout; returns (returncode, stdout, stderr)."""
    proc = subprocess.run([pmcrun.CONFIG.gendag] + list(args), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def header_counts(text):
    m = re.search(r"^# (\d+) tasks, (\d+) edges$", text, re.M)
    return (int(m.group(1)), int(m.group(2))) if m else None


def transformation(name):
    return name.rsplit("_ID", 1)[0]


class GendagCase(pmcrun.TestCase):
    needs_bin = False

    def setUp(self):
        if not os.access(pmcrun.CONFIG.gendag, os.X_OK):
            self.fail("pmc-gendag not found: %s (pass --gendag or set PMC_TEST_GENDAG)"
                      % pmcrun.CONFIG.gendag)
        super().setUp()

    def generate(self, args, name="g.dag"):
        """Generate into the temp dir and parse; returns (dag, text)."""
        path = self.path(name)
        pmcrun.gendag(args, path)
        with open(path) as f:
            text = f.read()
        try:
            dag = pmcrun.parse_dag(path)
        except pmcrun.DagError as e:
            self.fail("%s: invalid DAG: %s" % (" ".join(args), e))
        return dag, text

    def structure_problems(self, args, dag, text, exact):
        """Generic checks; returns problems."""
        problems = []
        n = int(args[args.index("--tasks") + 1])
        counts = header_counts(text)
        if counts != (len(dag.tasks), len(set(dag.edges))):
            problems.append("header says %s, file has %d tasks and %d edges"
                            % (counts, len(dag.tasks), len(set(dag.edges))))
        if len(dag.edges) != len(set(dag.edges)):
            problems.append("duplicate EDGE lines")
        if exact and len(dag.tasks) != n:
            problems.append("%d tasks, asked for %d" % (len(dag.tasks), n))
        if len(dag.tasks) > n:
            problems.append("%d tasks, more than --tasks %d" % (len(dag.tasks), n))
        for task in dag.tasks.values():
            if task.pegasus_id is None:
                problems.append("%s has no #@ line" % task.name)
                break
            if not SLEEP_RE.match(" ".join(task.argv)):
                problems.append("%s: command %r" % (task.name, task.argv))
                break
        prio = {t.name: t.priority for t in dag.tasks.values()}
        for parent, child in dag.edges:
            if prio[parent] <= prio[child]:
                problems.append("priority does not fall along %s -> %s" % (parent, child))
                break
        return problems


class Shapes(GendagCase):
    def test_sizes(self):
        exact = {"seismology", "layered", "independent", "chain", "diamond"}
        for shape in ("montage", "epigenomics", "seismology", "layered", "independent",
                      "chain", "diamond"):
            for n in (30, 200, 1234):
                args = ["--shape", shape, "--tasks", str(n)]
                with self.subTest(case=" ".join(args)):
                    dag, text = self.generate(args)
                    problems = self.structure_problems(args, dag, text, shape in exact)
                    if shape not in exact and len(dag.tasks) < 0.9 * n:
                        problems.append("only %d tasks for --tasks %d" % (len(dag.tasks), n))
                    self.check(problems, case=" ".join(args))

    def test_montage(self):
        for bands in (1, 3):
            args = ["--shape", "montage", "--tasks", "600", "--width", str(bands)]
            with self.subTest(case=" ".join(args)):
                dag, _ = self.generate(args)
                kinds = collections.Counter(transformation(n) for n in dag.tasks)
                parents = dag.parents()
                problems = []
                for single in ("mConcatFit", "mBgModel", "mImgtbl", "mAdd"):
                    if kinds[single] != bands:
                        problems.append("%d %s, expected %d" % (kinds[single], single, bands))
                if kinds["mViewer"] != bands + (bands > 1):
                    problems.append("%d mViewer" % kinds["mViewer"])
                if kinds["mProject"] != kinds["mBackground"] or kinds["mProject"] < 10:
                    problems.append("mProject/mBackground: %s" % kinds)
                if kinds["mDiffFit"] < 2 * kinds["mProject"]:
                    problems.append("too few mDiffFit: %s" % kinds)
                for name, ps in parents.items():
                    kind = transformation(name)
                    pk = sorted(set(transformation(p) for p in ps))
                    want = {"mProject": [], "mDiffFit": ["mProject"],
                            "mConcatFit": ["mDiffFit"], "mBgModel": ["mConcatFit"],
                            "mBackground": ["mBgModel", "mProject"], "mImgtbl": ["mBackground"],
                            "mAdd": ["mBackground", "mImgtbl"]}.get(kind)
                    if want is not None and pk != want:
                        problems.append("%s has parents of kinds %s" % (name, pk))
                    if kind in ("mDiffFit", "mBackground") and len(ps) != 2:
                        problems.append("%s has %d parents" % (name, len(ps)))
                self.check(problems[:10], case=" ".join(args))

    def test_epigenomics(self):
        args = ["--shape", "epigenomics", "--tasks", "300", "--width", "3"]
        dag, _ = self.generate(args)
        kinds = collections.Counter(transformation(n) for n in dag.tasks)
        pipes = kinds["map"]
        want = {"fastqSplit": 3, "filterContams": pipes, "sol2sanger": pipes,
                "fast2bfq": pipes, "mapMerge": 4, "maqIndex": 1, "pileup": 1}
        problems = ["%d %s, expected %d" % (kinds[k], k, v)
                    for k, v in want.items() if kinds[k] != v]
        sinks = set(dag.tasks) - set(p for p, _ in dag.edges)
        if [transformation(s) for s in sinks] != ["pileup"]:
            problems.append("sinks: %s" % sorted(sinks))
        cpus = {transformation(t.name): t.cpus for t in dag.tasks.values()}
        if cpus["map"] != 2 or cpus["pileup"] != 2:
            problems.append("map/pileup should request 2 CPUs: %s" % cpus)
        self.check(problems, case=" ".join(args))

    def test_seismology(self):
        dag, _ = self.generate(["--shape", "seismology", "--tasks", "101"])
        parents = dag.parents()
        sink = [n for n in dag.tasks if parents[n]]
        self.assertEqual(len(sink), 1)
        self.assertEqual(transformation(sink[0]), "wrapper_siftSTFByMisfit")
        self.assertEqual(len(parents[sink[0]]), 100)

    def test_layered(self):
        for w, k in ((10, 1), (10, 3), (4, 9)):
            args = ["--shape", "layered", "--tasks", "95", "--width", str(w),
                    "--edges-per-task", str(k)]
            with self.subTest(case=" ".join(args)):
                dag, text = self.generate(args)
                names = list(dag.tasks)
                layer = {name: i // w for i, name in enumerate(names)}
                parents = dag.parents()
                problems = self.structure_problems(args, dag, text, True)
                for name in names:
                    ps = parents[name]
                    want = 0 if layer[name] == 0 else min(k, w)
                    if len(set(ps)) != want or len(ps) != want:
                        problems.append("%s has parents %s, expected %d" % (name, ps, want))
                    if any(layer[p] != layer[name] - 1 for p in ps):
                        problems.append("%s has a parent outside the previous layer" % name)
                self.check(problems[:10], case=" ".join(args))

    def test_chain_and_diamond(self):
        dag, _ = self.generate(["--shape", "chain", "--tasks", "12", "--width", "3"])
        parents = dag.parents()
        self.assertEqual(sum(1 for n in dag.tasks if not parents[n]), 3)
        self.assertTrue(all(len(p) <= 1 for p in parents.values()))
        _, text = self.generate(["--shape", "diamond", "--tasks", "4", "--command", "echo",
                                 "--plain"])
        body = [line for line in text.splitlines() if line and not line.startswith("#")]
        self.assertEqual(body, ['TASK A /bin/echo "I am A"', 'TASK B /bin/echo "I am B"',
                                'TASK C /bin/echo "I am C"', 'TASK D /bin/echo "I am D"',
                                "EDGE A B", "EDGE A C", "EDGE B D", "EDGE C D"])

    def test_commands_and_priorities(self):
        base = ["--shape", "layered", "--tasks", "40", "--width", "5"]
        for extra, pattern in ((["--command", "true"], r"^/bin/true$"),
                               (["--command", "false"], r"^/bin/false$"),
                               (["--command", "echo"], r'^/bin/echo I am task_ID\d{7}$'),
                               (["--runtime", "0.25"], r"^/bin/sleep 0\.250$"),
                               (["--runtime-scale", "0.01"], r"^/bin/sleep \d+\.\d{3}$")):
            with self.subTest(case=" ".join(extra)):
                dag, _ = self.generate(base + extra)
                bad = [t.argv for t in dag.tasks.values()
                       if not re.match(pattern, " ".join(t.argv))]
                self.assertEqual(bad, [])
        dag, _ = self.generate(base + ["--priorities", "up"])
        self.assertTrue(all(dag.tasks[p].priority < dag.tasks[c].priority for p, c in dag.edges))
        _, text = self.generate(base + ["--priorities", "none"])
        self.assertNotIn(" -p ", text)
        _, text = self.generate(base + ["--plain"])
        self.assertNotIn("#@", text)
        self.assertNotIn(" -c ", text)

    def test_priorities_of_a_deep_dag_stay_in_range(self):
        """A chain of 300M tasks with --priorities down starts at -p 20 +
        10 x 299,999,999, past the DAG's int32 -p: the generator clamps it
        to 2147483647 (pmc-hybrid refused the DAG).  Only the first lines
        are read."""
        args = ["--shape", "chain", "--tasks", "300000000", "--priorities", "down"]
        with subprocess.Popen([pmcrun.CONFIG.gendag] + args, stdout=subprocess.PIPE) as proc:
            prio = None
            for line in proc.stdout:
                if line.startswith(b"TASK "):
                    prio = int(line.split()[line.split().index(b"-p") + 1])
                    break
            proc.kill()
        self.assertEqual(prio, 2147483647)

    def test_deterministic(self):
        args = ["--shape", "layered", "--tasks", "500", "--edges-per-task", "2"]
        a, b = gen(args)[1], gen(args)[1]
        self.assertEqual(a, b, "same options gave different output")
        c = gen(args + ["--seed", "2"])[1]
        self.assertNotEqual(a, c, "--seed 2 changed nothing")
        d = gen(args + ["--command", "true"])[1]
        edges = lambda t: [l for l in t.splitlines() if l.startswith("EDGE")]  # noqa: E731
        self.assertEqual(edges(a), edges(d), "--command changed the edges")

    def test_million_tasks(self):
        args = ["--shape", "layered", "--tasks", "1000000", "--width", "1000", "--command",
                "true"]
        tasks = edges = 0
        with subprocess.Popen([pmcrun.CONFIG.gendag] + args, stdout=subprocess.PIPE) as proc:
            for line in proc.stdout:
                if line.startswith(b"TASK "):
                    tasks += 1
                elif line.startswith(b"EDGE "):
                    edges += 1
            self.assertEqual(proc.wait(timeout=120), 0)
        self.assertEqual((tasks, edges), (1000000, 999000))


class BadOptions(GendagCase):
    CASES = [
        (["--tasks", "10"], "--shape"),
        (["--shape", "montage"], "--tasks"),
        (["--shape", "blob", "--tasks", "10"], "--shape"),
        (["--shape", "layered", "--tasks", "0"], "--tasks"),
        (["--shape", "layered", "--tasks", "abc"], "--tasks"),
        (["--shape", "layered", "--tasks", "-5"], "--tasks"),
        (["--shape", "layered", "--tasks", "10x"], "--tasks"),
        (["--shape", "layered", "--tasks", "99999999999"], "--tasks"),
        (["--shape", "layered", "--tasks"], "--tasks"),
        (["--shape", "layered", "--tasks", "10", "--width", "0"], "--width"),
        (["--shape", "layered", "--tasks", "10", "--edges-per-task", "0"], "--edges-per-task"),
        (["--shape", "layered", "--tasks", "10", "--edges-per-task", "100000"],
         "--edges-per-task"),
        (["--shape", "montage", "--tasks", "10", "--edges-per-task", "2"], "--edges-per-task"),
        (["--shape", "seismology", "--tasks", "10", "--width", "2"], "--width"),
        (["--shape", "layered", "--tasks", "10", "--seed", "x"], "--seed"),
        (["--shape", "layered", "--tasks", "10", "--runtime-scale", "-1"], "--runtime-scale"),
        (["--shape", "layered", "--tasks", "10", "--runtime-scale", "nan"], "--runtime-scale"),
        (["--shape", "layered", "--tasks", "10", "--runtime", "inf"], "--runtime"),
        (["--shape", "layered", "--tasks", "10", "--command", "rm"], "--command"),
        (["--shape", "layered", "--tasks", "10", "--command", "true", "--runtime", "1"],
         "--runtime"),
        (["--shape", "layered", "--tasks", "10", "--priorities", "sideways"], "--priorities"),
        (["--shape", "layered", "--tasks", "10", "--bogus"], "--bogus"),
        (["--shape", "layered", "--tasks", "10", "extra"], "extra"),
        (["--shape", "montage", "--tasks", "5"], "--tasks"),
        (["--shape", "montage", "--tasks", "20", "--width", "3"], "--tasks"),
        (["--shape", "epigenomics", "--tasks", "8"], "--tasks"),
        (["--shape", "epigenomics", "--tasks", "20", "--width", "4"], "--tasks"),
        (["--shape", "seismology", "--tasks", "1"], "--tasks"),
        (["--shape", "diamond", "--tasks", "2"], "--tasks"),
        (["--shape", "layered", "--tasks", "10", "-o", "/nonexistent-dir/x.dag"], "--output"),
    ]

    def test_bad_options(self):
        for args, option in self.CASES:
            with self.subTest(case=" ".join(args)):
                rc, out, err = gen(args)
                lines = [line for line in err.splitlines() if line.strip()]
                self.assertEqual(rc, 1, "exit status")
                self.assertEqual(out, "", "output written")
                self.assertEqual(len(lines), 1, "expected one error line: %r" % err)
                self.assertIn(option, lines[0])
                self.assertTrue(lines[0].startswith("pmc-gendag: "), lines[0])

    def test_no_partial_file(self):
        out = self.path("x.dag")
        rc, _, _ = gen(["--shape", "diamond", "--tasks", "2", "-o", out])
        self.assertEqual(rc, 1)
        self.assertFalse(os.path.exists(out), "a file was left after an error")

    def test_help(self):
        rc, out, err = gen(["--help"])
        self.assertEqual((rc, err), (0, ""))
        self.assertIn("--shape", out)


class Examples(GendagCase):
    def test_examples_regenerate(self):
        """Every examples/*.dag is made, byte for byte, by a command in
        examples/README.md."""
        folder = os.path.join(pmcrun.CONFIG.source_dir, "examples")
        with open(os.path.join(folder, "README.md")) as f:
            readme = f.read()
        commands = {}
        for line in readme.splitlines():
            line = line.strip()
            if line.startswith("pmc-gendag ") and " -o examples/" in line:
                argv = shlex.split(line)
                commands[argv[argv.index("-o") + 1]] = argv[1:]
        dags = sorted(f for f in os.listdir(folder) if f.endswith(".dag"))
        self.assertTrue(dags, "no DAGs in examples/")
        for dag in dags:
            with self.subTest(case="examples/" + dag):
                argv = commands.get("examples/" + dag)
                self.assertIsNotNone(argv, "README.md has no command for examples/" + dag)
                out = self.path(dag)
                i = argv.index("-o")
                del argv[i:i + 2]
                pmcrun.gendag(argv, out)
                with open(out, "rb") as a, open(os.path.join(folder, dag), "rb") as b:
                    self.assertTrue(a.read() == b.read(), "examples/%s differs from what "
                                    "its README command generates" % dag)


if __name__ == "__main__":
    pmcrun.main()
