#!/usr/bin/env python3
"""check-layers.py - fail when an include crosses the stack the wrong way,
reaches into another module's internals, or MPI appears outside the
transport (docs/design.md section 7).

The stack, bottom up; each folder may include only itself and the folders
named after it:

    io/                the base, the DAG model, the formats   io/
    sched/             pure policy over the model             io/ sched/
    engine/host/       topology, CPU binding, GPUs, batch end io/ sched/
    engine/transport/  messages between threads and ranks     io/ sched/
    engine/exec/       a task's process                       + host/ transport/
    engine/node/       the node agent                         + exec/ host/ transport/
    engine/master/     the master                             + transport/
    engine/*.c         main, options, host scripts            everything
    tools/*.c          user tools                             io/

A header named *_internal.h belongs to its folder, and so does a test
hook header *_testing.h: no file of io/, sched/, engine/ or tools/ outside
that folder may include it (tests/ may include the hooks).

Only the transport calls MPI: outside TRANSPORT (below), no file of io/,
sched/ or engine/ may include <mpi.h> or contain the text MPI_ (comments
included, so that `grep -rl MPI_ engine/` names the transport alone).

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
BASE = {"io", "sched"}
ENGINE = ("engine/host", "engine/transport", "engine/exec", "engine/node", "engine/master")
ALLOWED = {
    "io": {"io"},
    "sched": BASE,
    "engine/host": BASE | {"engine/host"},
    "engine/transport": BASE | {"engine/transport"},
    "engine/exec": BASE | {"engine/host", "engine/transport", "engine/exec"},
    "engine/node": BASE | {"engine/host", "engine/transport", "engine/exec", "engine/node"},
    "engine/master": BASE | {"engine/transport", "engine/master"},
    "engine": BASE | set(ENGINE) | {"engine"},
    "tools": {"io"},
}
LAYERS = ("io", "sched", "engine", "bench", "tests", "tools")

# The transport: the only files that may call MPI.
TRANSPORT = {"engine/transport/" + n for n in ("comm_mpi.c", "comm.h", "transport.c", "transport.h")}

PRIVATE = ("_internal.h", "_testing.h")  # headers private to their folder
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


def layer_of(path):
    """The layer a file, or an included path, belongs to ("engine/node",
    "io", ...); None when it is none of ours."""
    parts = path.split("/")
    if len(parts) < 2 or parts[0] not in LAYERS:
        return None
    if parts[0] == "engine" and len(parts) > 2:
        return "engine/" + parts[1]
    return parts[0]


def check_include(rel, n, layer, target, problems):
    other = layer_of(target)
    if other is None:
        return
    if other not in ALLOWED[layer]:
        problems.append(
            "%s:%d: %s/ includes %s (%s/ may include only %s)"
            % (rel, n, layer, target, layer, ", ".join(sorted(x + "/" for x in ALLOWED[layer])))
        )
    elif target.endswith(PRIVATE) and os.path.dirname(target) != os.path.dirname(rel):
        problems.append("%s:%d: includes %s, internal to %s/" % (rel, n, target, os.path.dirname(target)))


def check_file(root, rel, layer, problems):
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    rel = rel.replace(os.sep, "/")
    for n, line in enumerate(lines, 1):
        m = INCLUDE.match(line)
        if m:
            check_include(rel, n, layer, m.group(1), problems)
        if layer != "tools" and rel not in TRANSPORT and MPI.search(line):
            problems.append(
                "%s:%d: MPI outside the transport (%s): %s"
                % (rel, n, ", ".join(sorted(TRANSPORT)), line.strip())
            )


def check(root):
    problems = []
    for folder in ("io", "sched", "engine"):
        for rel in sources(root, folder):
            check_file(root, rel, layer_of(rel.replace(os.sep, "/")), problems)
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
