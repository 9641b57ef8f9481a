#!/usr/bin/env python3
"""check-layers.py - fail when an include crosses the stack the wrong way,
reaches into another module's internals, MPI appears outside the
transport (docs/design.md section 7), or the .c files of one folder call
each other in a cycle.

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

Calls: within each folder of io/, sched/ and engine/ (engine/ itself and
each of its sub-folders apart), the files must be in an order in which
each calls only those after it.  A file refers to another when it names a
function the other defines with external linkage (a call, or the function
passed as a pointer), read from the sources with comments and strings
blanked: a definition is a line that begins at column 0 with a return type
and a name, and whose parameter list is followed by "{" (clang-format's
layout); a name a file defines itself is its own, and a name two files
define (two backends of one header) is a reference to both.  Every
reference inside a strongly connected set of files is reported, at its
first line.  Calls between folders need an include of the callee's
header, which the include order above already checks.

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


# Calls (see the banner): comments and literals, definitions, names.
BLANKED = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
DEFINITION = re.compile(r"^(static\s+)?[A-Za-z_][\w \t*]*?\b(\w+)\s*\([^;{}]*\)\s*\{", re.M)
NAME = re.compile(r"\b[A-Za-z_]\w*\b")


def c_text(root, rel):
    """The file's text with comments, strings and characters blanked (lines kept)."""
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        return BLANKED.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), f.read())


def call_edges(root, folder):
    """{file: {callee file: (line, name)}}: the first reference of each
    .c file of folder (not its sub-folders) to a function another defines."""
    files = [r for r in sources(root, folder, recurse=False) if r.endswith(".c")]
    texts = {r: c_text(root, r) for r in files}
    owners, own = {}, {}  # owners: every file that defines the name (backends)
    for r, text in texts.items():
        own[r] = set()
        for m in DEFINITION.finditer(text):
            own[r].add(m.group(2))  # a file calls its own definition
            if not m.group(1):
                owners.setdefault(m.group(2), []).append(r)
    edges = {r: {} for r in files}
    for r, text in texts.items():
        for m in NAME.finditer(text):
            if m.group(0) in own[r]:
                continue
            for o in owners.get(m.group(0), ()):
                if o != r and o not in edges[r]:
                    edges[r][o] = (text.count("\n", 0, m.start()) + 1, m.group(0))
    return edges


def cycles(edges):
    """The strongly connected sets of more than one file (Tarjan's
    algorithm, iterative), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                scc = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    scc.append(w)
                    if w == v:
                        break
                if len(scc) > 1:
                    out.append(sorted(scc))
    return out


def check_calls(root, problems):
    folders = ["io", "sched", "engine"]
    folders += sorted("engine/" + d for d in os.listdir(os.path.join(root, "engine"))
                      if os.path.isdir(os.path.join(root, "engine", d)))
    for folder in folders:
        edges = call_edges(root, folder)
        for scc in cycles(edges):
            names = ", ".join(os.path.basename(r) for r in scc)
            for r in scc:
                for callee, (line, name) in sorted(edges[r].items()):
                    if callee in scc:
                        problems.append("%s:%d: calls %s of %s, in a call cycle among %s"
                                        % (r, line, name, os.path.basename(callee), names))


def check(root):
    problems = []
    check_calls(root, problems)
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
        print("check-layers: %d wrong-way include(s), MPI use(s) or call(s) in a cycle; "
              "see docs/design.md section 7" % len(problems))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
