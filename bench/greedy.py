#!/usr/bin/env python3
"""bench/greedy.py - the zero-overhead greedy schedule of a PMC DAG.

    python3 bench/greedy.py --slots 8 WORKFLOW.dag [...]

An achievable reference for the real-workflow figures of bench/run (issue
10): what a scheduler with no overhead at all (launching, reaping, messages
and task start-up cost nothing) makes of the same DAG with the same policy
as pmc-hybrid, on one host of S CPUs ("slots"):

- list scheduling, event-driven: whenever CPUs are free (at time 0 and each
  time tasks end), the ready tasks are looked at in dispatch order and each
  one that fits the free CPUs (and memory, when a capacity is given) starts;
- dispatch order (PMC manual, -p): larger priority first; equal priorities
  in the order the tasks became ready, and tasks that became ready at the
  same moment in DAG order (roots in TASK order; the children released by
  tasks ending together in the order of their TASK lines);
- PMC's deferral rule: a task that does not fit the free CPUs now keeps its
  place while the tasks behind it that do fit start (sched/placement.h);
- a task asking more than S CPUs is counted at S (it runs alone);
- a task's duration is X of its "/bin/sleep X" command (GNU sleep: several
  arguments add up, suffixes s, m, h, d), 0 for any other command.

It is a reference, not a bound: greedy list scheduling is not optimal (a
different order can be shorter), but it is what an overhead-free
pmc-hybrid would do.  Times are kept as integer nanoseconds so that tasks
ending together are seen together.

DAG lines (COMPAT.md): "TASK name [options] command...", "EDGE parent
child"; options -c/--request-cpus N (a decimal, rounded up, at least 1),
-m/--request-memory MB (rounded up), -p/--priority N; the other options of
io/dagfile.c (-t, -f, -F, -g, --time-limit) are read and ignored.
Python 3 standard library only; bench/run imports it.
"""

import argparse
import heapq
import math
import os
import sys

from decimal import Decimal, InvalidOperation

# The integration tests' reference splitter of DAG lines (COMPAT.md quoting),
# which the engine's parser is checked against: one copy of the grammar.
sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
from pmcrun import split_words  # noqa: E402

# Options of a TASK line (io/dagfile.c): each takes a value, "-x V" or "--long=V".
TASK_OPTIONS = {"-m": "--request-memory", "-c": "--request-cpus", "-t": "--tries",
                "-p": "--priority", "-f": "--pipe-forward", "-F": "--file-forward",
                "-g": "--request-gpus", None: "--time-limit"}
LONG_OF = {**{k: v for k, v in TASK_OPTIONS.items() if k}, **{v: v for v in TASK_OPTIONS.values()}}

SLEEP_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


class DagError(Exception):
    pass


def sleep_ns(argv):
    """Nanoseconds /bin/sleep argv[1:] sleeps; 0 when argv is not a sleep."""
    if not argv or argv[0].rsplit("/", 1)[-1] != "sleep":
        return 0
    total = Decimal(0)
    for a in argv[1:]:
        unit = a[-1] if a and a[-1] in "smhd" else ""
        try:
            total += Decimal(a[:len(a) - len(unit)]) * SLEEP_UNITS[unit]
        except InvalidOperation:
            raise DagError(f"sleep: bad duration {a!r}") from None
    return int((total * 1_000_000_000).to_integral_value())


class Dag:
    """Tasks in TASK order: names, dur_ns, cpus, memory_mb, priority;
    edges as index pairs (duplicates removed, first occurrence kept)."""

    def __init__(self):
        self.names, self.dur_ns, self.cpus, self.memory_mb, self.priority = [], [], [], [], []
        self.index = {}
        self.edges = []

    def add_task(self, name, dur_ns, cpus=1, memory_mb=0, priority=0):
        if name in self.index:
            raise DagError(f"duplicate task {name}")
        self.index[name] = len(self.names)
        self.names.append(name)
        self.dur_ns.append(dur_ns)
        self.cpus.append(cpus)
        self.memory_mb.append(memory_mb)
        self.priority.append(priority)

    def add_edge(self, parent, child):
        for t in (parent, child):
            if t not in self.index:
                raise DagError(f"EDGE names unknown task {t}")
        self.edges.append((self.index[parent], self.index[child]))

    def __len__(self):
        return len(self.names)


def parse_dag(lines):
    dag = Dag()
    edges = []
    for line in lines:
        w = split_words(line)
        if not w or w[0].startswith("#"):
            continue
        if w[0] == "TASK":
            if len(w) < 3:
                raise DagError(f"TASK without a command: {line.strip()}")
            name, i, cpus, mem, prio = w[1], 2, 1, 0, 0
            while i < len(w) and w[i].startswith("-"):
                if w[i].startswith("--") and "=" in w[i]:
                    word, val = w[i].split("=", 1)
                    step = 1
                else:
                    word, val = w[i], (w[i + 1] if i + 1 < len(w) else None)
                    step = 2
                opt = LONG_OF.get(word)
                if opt is None:
                    raise DagError(f"task {name}: unknown option {word}")
                if val is None:
                    raise DagError(f"task {name}: {opt} needs a value")
                i += step
                try:
                    if opt == "--request-cpus":
                        cpus = max(1, math.ceil(Decimal(val)))
                    elif opt == "--request-memory":
                        mem = math.ceil(Decimal(val))
                    elif opt == "--priority":
                        prio = int(val)
                except (InvalidOperation, ValueError):
                    raise DagError(f"task {name}: bad value {val!r} for {opt}") from None
            if i >= len(w):
                raise DagError(f"task {name}: no command")
            dag.add_task(name, sleep_ns(w[i:]), cpus, mem, prio)
        elif w[0] == "EDGE":
            if len(w) != 3:
                raise DagError(f"bad EDGE line: {line.strip()}")
            edges.append((w[1], w[2]))
    seen = set()
    for p, c in edges:  # EDGE lines may come before their TASK lines
        if (p, c) not in seen:
            seen.add((p, c))
            dag.add_edge(p, c)
    return dag


def read_dag(path):
    with open(path) as f:
        return parse_dag(f)


def greedy_schedule(dag, slots, memory_mb=None, dur_ns=None):
    """The zero-overhead greedy schedule on one host of `slots` CPUs (and
    memory_mb MB, None: unlimited), with the DAG's durations or dur_ns (a
    list in task order, e.g. measured ones).  Returns (makespan_ns, start_ns
    list)."""
    dur = dag.dur_ns if dur_ns is None else dur_ns
    if slots < 1:
        raise ValueError("slots must be >= 1")
    n = len(dag)
    need = [min(c, slots) for c in dag.cpus]
    mneed = ([min(m, memory_mb) for m in dag.memory_mb] if memory_mb is not None
             else [0] * n)
    children = [[] for _ in range(n)]
    indeg = [0] * n
    for p, c in dag.edges:
        children[p].append(c)
        indeg[c] += 1
    # The ready list, kept sorted by (-priority, ready sequence): a heap
    # would do for the head, but deferral scans past the head, so a sorted
    # list; ready lists stay short enough for the shared workloads.
    ready = []
    seq = 0

    def release(ts):
        nonlocal seq
        for t in sorted(ts):  # DAG order among tasks ready at the same moment
            ready.append((-dag.priority[t], seq, t))
            seq += 1

    release(t for t in range(n) if indeg[t] == 0)
    ready.sort()
    free, mfree = slots, (memory_mb if memory_mb is not None else 0)
    running = []  # heap of (end_ns, task)
    start = [None] * n
    now, done = 0, 0
    while True:
        # Start every ready task that fits, in order, deferring the others.
        if ready and free > 0:
            keep = []
            for item in ready:
                t = item[2]
                if need[t] <= free and mneed[t] <= mfree:
                    free -= need[t]
                    mfree -= mneed[t]
                    start[t] = now
                    heapq.heappush(running, (now + dur[t], t))
                else:
                    keep.append(item)
            ready = keep
        if not running:
            break
        # Advance to the next end; every task ending then ends together.
        now = running[0][0]
        released = []
        while running and running[0][0] == now:
            _, t = heapq.heappop(running)
            done += 1
            free += need[t]
            mfree += mneed[t]
            for c in children[t]:
                indeg[c] -= 1
                if indeg[c] == 0:
                    released.append(c)
        if released:
            release(released)
            ready.sort()
    if done != n:
        raise DagError(f"the DAG has a cycle: {n - done} of {n} tasks never become ready")
    return (max((start[t] + dur[t] for t in range(n)), default=0), start)


def greedy_makespan(dag, slots, memory_mb=None, dur_ns=None):
    """Makespan in seconds of greedy_schedule()."""
    return greedy_schedule(dag, slots, memory_mb, dur_ns)[0] / 1e9


def main(argv=None):
    ap = argparse.ArgumentParser(description="zero-overhead greedy makespan of PMC DAGs")
    ap.add_argument("--slots", type=int, default=8, help="CPUs of the host (default 8)")
    ap.add_argument("--memory", type=int, default=None,
                    help="memory of the host, MB (default: unlimited)")
    ap.add_argument("dags", nargs="+")
    a = ap.parse_args(argv)
    for path in a.dags:
        dag = read_dag(path)
        print(f"{path}: tasks={len(dag)} slots={a.slots} "
              f"makespan_s={greedy_makespan(dag, a.slots, a.memory):.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
