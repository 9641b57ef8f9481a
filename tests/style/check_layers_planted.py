#!/usr/bin/env python3
"""check_layers_planted.py - show that tools/check-layers.py catches what it
is for (ctest layers.includes.planted).

Copies io/, sched/, engine/ and tools/ of the source tree into a temporary
folder, checks that the checker passes on the untouched copy, then plants
one violation at a time in a fresh copy and checks that the checker exits 1
and names the planted file:
  - a file of io/ includes "engine/..."  (and, separately, "sched/...")
  - a file of sched/ includes "engine/..."
  - a tool includes "sched/..."
  - a file of engine/ outside the transport includes <mpi.h>, or calls MPI_
  - engine/host/ includes engine/exec/, engine/transport/ includes
    engine/node/, engine/master/ includes engine/node/ (wrong way or across)
  - engine/main.c includes engine/node/agent_internal.h (another module's
    internals), engine/hostscript.c includes engine/exec/launcher_testing.h
    (another module's test hooks)
  - a call cycle between the files of one folder: io/error.c, which
    io/dag.c calls, calls dag_lookup() of io/dag.c; engine/node/agent_env.c,
    which agent_task.c calls, calls agent__launch() of agent_task.c (each
    a function appended at the end of the file, where the checker must
    name it).
Each case is reported on its own line; the exit status is 1 when any case
fails (so every failure is seen), 0 otherwise.

Usage: check_layers_planted.py CHECKER ROOT
"""

import os
import shutil
import subprocess
import sys
import tempfile

FOLDERS = ("io", "sched", "engine", "tools")


def first(root, folder, ext):
    names = sorted(n for n in os.listdir(os.path.join(root, folder)) if n.endswith(ext))
    return folder + "/" + names[0]


def copy_tree(root, dest):
    for d in FOLDERS:
        shutil.copytree(os.path.join(root, d), os.path.join(dest, d), ignore=shutil.ignore_patterns("__pycache__"))


def run(checker, root):
    p = subprocess.run([sys.executable, checker, root], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=60)
    return p.returncode, p.stdout


def plant(path, line, at_end):
    """Put line after the file's first line (inside its banner or after its
    first include: the checker must not care where), or at_end after its
    last line; returns the line's number."""
    with open(path) as f:
        lines = f.read().rstrip("\n").split("\n")
    n = len(lines) if at_end else 1
    lines.insert(n, line)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return n + 1


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: check_layers_planted.py CHECKER ROOT\n")
        return 2
    checker, root = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    cases = [
        (first(root, "io", ".h"), '#include "engine/exec/spawn.h"'),
        (first(root, "io", ".c"), '#include "sched/ready_queue.h"'),
        (first(root, "sched", ".h"), '#include "engine/master/master.h"'),
        (first(root, "tools", ".c"), '#include "sched/hosts.h"'),
        (first(root, "engine", ".c"), "#include <mpi.h>"),
        (first(root, "engine", ".h"), "static inline void f(void) { MPI_Barrier(MPI_COMM_WORLD); }"),
        (first(root, "engine/host", ".c"), '#include "engine/exec/spawn.h"'),
        (first(root, "engine/transport", ".h"), '#include "engine/node/agent.h"'),
        (first(root, "engine/master", ".c"), '#include "engine/node/agent.h"'),
        ("engine/main.c", '#include "engine/node/agent_internal.h"'),
        ("engine/hostscript.c", '#include "engine/exec/launcher_testing.h"'),
    ]
    # (file, a function appended to it that closes a call cycle)
    calls = [
        ("io/error.c", "void planted_cycle(void) { dag_lookup(0, 0); }"),
        ("engine/node/agent_env.c", "void agent__planted(struct agent *a) { agent__launch(a, 0, 0, 0); }"),
    ]
    failed = 0
    with tempfile.TemporaryDirectory(prefix="pmc-layers-") as tmp:
        clean = os.path.join(tmp, "clean")
        copy_tree(root, clean)
        rc, out = run(checker, clean)
        ok = rc == 0
        failed += not ok
        print("%s untouched copy: exit %d, expected 0%s" % ("ok  " if ok else "FAIL", rc, "" if ok else "\n" + out))
        planted = [(rel, line, False) for rel, line in cases] + [(rel, line, True) for rel, line in calls]
        for i, (rel, line, at_end) in enumerate(planted):
            tree = os.path.join(tmp, "case%d" % i)
            copy_tree(root, tree)
            n = plant(os.path.join(tree, rel), line, at_end)
            rc, out = run(checker, tree)
            where = "%s:%d" % (rel, n)
            ok = rc == 1 and (where + ":") in out
            failed += not ok
            print("%s %s planted in %s: exit %d, expected 1 naming %s%s"
                  % ("ok  " if ok else "FAIL", line, rel, rc, where, "" if ok else "\n" + out))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
