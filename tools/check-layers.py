#!/usr/bin/env python3
"""check-layers.py - fail when an include crosses the stack the wrong way or
MPI appears outside the transport (docs/design.md section 7, issue 9).

The stack, bottom up; each folder may include only the folders below it:

    io/      the base, the DAG model, the formats   may include: io/
    sched/   pure policy over the model             may include: io/, sched/
    engine/  the runtime                            may include: everything
    tools/*.c  user tools                           may include: io/

Only the transport calls MPI: outside TRANSPORT (below), no file of io/,
sched/ or engine/ may include <mpi.h> or contain the text MPI_ (comments
included, so that `grep -l MPI_ engine/` names the transport alone).

Usage: tools/check-layers.py [ROOT]
ROOT is the source tree (default: the parent of this script's folder).
Prints one line per violation, "PATH:LINE: what is wrong", and exits 1 when
there is any, 0 when there is none, 2 when ROOT does not look like the tree.
Standard library only; reads files, writes nothing.
"""

import os
import re
import sys

# Which of our folders each layer may include.
ALLOWED = {
    "io": {"io"},
    "sched": {"io", "sched"},
    "engine": {"io", "sched", "engine"},
    "tools": {"io"},
}
LAYERS = ("io", "sched", "engine", "bench", "tests", "tools")

# The transport: the only files that may call MPI.
TRANSPORT = {"engine/comm.c", "engine/comm.h", "engine/transport.c", "engine/transport.h"}

SOURCE_EXT = (".c", ".h", ".cc", ".cpp", ".hpp")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
MPI = re.compile(r"\bMPI_|<mpi\.h>")


def sources(root, folder, recurse=True):
    """Relative paths of the C/C++ sources under root/folder, sorted."""
    top = os.path.join(root, folder)
    out = []
    for dirpath, dirnames, filenames in os.walk(top):
        if not recurse:
            dirnames[:] = []
        for name in filenames:
            if name.endswith(SOURCE_EXT):
                out.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(out)


def check_file(root, rel, layer, problems):
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    rel = rel.replace(os.sep, "/")
    for n, line in enumerate(lines, 1):
        m = INCLUDE.match(line)
        if m:
            top = m.group(1).split("/", 1)[0]
            if "/" in m.group(1) and top in LAYERS and top not in ALLOWED[layer]:
                problems.append(
                    "%s:%d: %s/ includes %s (%s/ may include only %s)"
                    % (rel, n, layer, m.group(1), layer, ", ".join(sorted(x + "/" for x in ALLOWED[layer])))
                )
        if layer != "tools" and rel not in TRANSPORT and MPI.search(line):
            problems.append(
                "%s:%d: MPI outside the transport (%s): %s"
                % (rel, n, ", ".join(sorted(TRANSPORT)), line.strip())
            )


def check(root):
    problems = []
    for layer in ("io", "sched", "engine"):
        for rel in sources(root, layer):
            check_file(root, rel, layer, problems)
    for rel in sources(root, "tools", recurse=False):
        check_file(root, rel, "tools", problems)
    return problems


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if len(argv) > 2 or not all(os.path.isdir(os.path.join(root, d)) for d in ("io", "sched", "engine")):
        sys.stderr.write("usage: check-layers.py [ROOT]  (ROOT holds io/, sched/ and engine/)\n")
        return 2
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print("check-layers: %d wrong-way include(s) or MPI use(s); see docs/design.md section 7" % len(problems))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
