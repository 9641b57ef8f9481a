"""relutil.py - helpers shared by the reliability tests (Python 3 stdlib).

  * sessions: every pmc-hybrid run starts in a session of its own; killing
    "the engine" means SIGKILL to its whole process tree at once (the
    engine, or mpiexec with its hydra proxy and the ranks, which each call
    setsid(), and the tasks, which sit in process groups of their own):
    kill_tree() stops every member, then kills them all;
  * rescue logs: complete DONE records and the torn tail, read the way the
    contract in io/rescue.h describes;
  * DAG writing for the ledger workflows of the kill campaign and the rank
    loss test: every task appends its name to a ledger file (O_APPEND, one
    write(2) of a short line, so lines of concurrent tasks never mix).

Nothing here writes outside the directories the caller passes.
"""

import os
import random
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
# one /proc reader
from pmcrun import process_tree, processes, session_pids, stat_fields, wait_session_gone  # noqa: E402,F401


def threads_exiting(pid):
    """True while a thread of pid other than a zombie leader is still on
    its way out (e.g. finishing an fdatasync): the process's files, and
    the locks on them, are released only when its last thread is gone
    (the likely cause of a DAG lock met 90 ms after a kill in CI; not
    reproduced, docs/reliability.md)."""
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return False
    for tid in tids:
        fields = stat_fields("/proc/%d/task/%s/stat" % (pid, tid))
        if fields and fields[0] not in ("Z", "X"):
            return True
    return False


def kill_tree(root, timeout=10.0):
    """SIGKILL the process tree of root as if at one instant: root, its
    descendants, and every process in a session one of them leads or
    belongs to.  (mpiexec's hydra proxy and each MPI rank call setsid(), so
    killing mpiexec's session or process group alone leaves the ranks
    running for a while; tasks put themselves in process groups of their
    own.)  Every member is stopped with SIGSTOP first, which keeps it from
    forking, and the tree is walked again until it no longer grows; then all
    get SIGKILL, repeated until none is alive.  True when none is left."""
    members, sessions = {root}, set()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        procs = processes()
        grown = False
        for pid, (state, ppid, sid) in sorted(procs.items()):
            if pid in members:
                sessions.add(sid)
            elif state != "Z" and (ppid in members or sid in sessions):
                members.add(pid)
                grown = True
        for pid in members:
            if pid in procs and procs[pid][0] != "Z":
                try:
                    os.kill(pid, signal.SIGSTOP)
                except OSError:
                    pass
        if not grown:
            break
    while time.monotonic() < deadline:
        procs = processes()
        alive = [pid for pid, (state, _, sid) in procs.items()
                 if (state != "Z" or threads_exiting(pid)) and (pid in members or sid in sessions)]
        if not alive:
            return True
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.005)
    return False


def kill_session(sid, timeout=10.0):
    """kill_tree() of the session leader sid (see there)."""
    return kill_tree(sid, timeout)


def start(argv, cwd, stdout_path, stderr_path, env=None, preexec=None):
    """Start argv in a new session, stdio to files.  Returns the Popen."""
    out = open(stdout_path, "wb")
    err = open(stderr_path, "wb")
    try:
        return subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                start_new_session=True, env=env, preexec_fn=preexec)
    finally:
        out.close()
        err.close()


def clean_env(extra=None):
    """The environment for a run: no PMC_* option aliases from the caller."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PMC_")}
    if extra:
        env.update(extra)
    return env


RANGE_RE = re.compile(r"^(.+)\[(0|[1-9][0-9]*)-(0|[1-9][0-9]*)\]$")


def expand_range(name):
    """[name] for a task or an instance; NAME[A] .. NAME[B] for the range
    record NAME[A-B] of a rescue log of a DAG with task arrays (no task
    can be named so next to an array: docs/task-arrays.md)."""
    m = RANGE_RE.match(name)
    if not m or int(m.group(2)) > int(m.group(3)):
        return [name]
    return ["%s[%d]" % (m.group(1), i) for i in range(int(m.group(2)), int(m.group(3)) + 1)]


class Rescue:
    """A rescue log as the contract reads it: `done` lists the names of the
    complete records in order (with ranges=True a range record NAME[A-B]
    counts as its instances, expand_range()), `torn` is the unterminated
    last line (b"" when the file ends with a newline), `bad` lists (line,
    bytes) of complete lines that are neither records, blank nor
    comments."""

    def __init__(self, path, ranges=False):
        self.path = path
        self.done, self.bad, self.torn = [], [], b""
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            data = b""
        lines = data.split(b"\n")
        self.torn = lines.pop()  # after the last newline
        for number, raw in enumerate(lines, 1):
            line = raw.strip(b" \t\r\v\f")
            if not line or line.startswith(b"#"):
                continue
            words = line.split()
            if len(words) == 2 and words[0] == b"DONE":
                name = words[1].decode("utf-8", "replace")
                self.done += expand_range(name) if ranges else [name]
            else:
                self.bad.append((number, raw[:60]))

    @property
    def done_set(self):
        return set(self.done)


def ledger_dag(path, ntasks, ledger, width=50, extra_parent=0.3, seed=1, stdout=True,
               sleep=0.0):
    """Write a DAG of ntasks tasks t0000000... in layers of `width`: task i
    (i >= width) has parent i - width and, with probability extra_parent,
    a second one from the layer before.  Each task (after `sleep` seconds,
    if any) appends its name to `ledger` (sh's >> opens with O_APPEND) and,
    when stdout is set, also prints it (so the stdio merge has work).
    Returns {name: [parents]}."""
    rng = random.Random(seed)
    parents = {}
    with open(path, "w") as f:
        f.write("# ledger workflow: %d tasks, width %d\n" % (ntasks, width))
        for i in range(ntasks):
            name = "t%07d" % i
            echo = "; echo %s" % name if stdout else ""
            nap = "sleep %g; " % sleep if sleep else ""
            f.write("TASK %s /bin/sh -c \"%secho %s >> %s%s\"\n"
                    % (name, nap, name, ledger, echo))
            ps = []
            if i >= width:
                ps.append(i - width)
                if rng.random() < extra_parent and i >= 2 * width:
                    other = rng.randrange(i - 2 * width, i - width)
                    if other != i - width:
                        ps.append(other)
            parents[name] = ["t%07d" % p for p in ps]
        for child, ps in parents.items():
            for p in ps:
                f.write("EDGE %s %s\n" % (p, child))
    return parents


def ledger_array_dag(path, ntasks, ledger):
    """Write a DAG of about ntasks instances in task arrays, every edge
    form once: start -> a[*] (fan-out), a[i] -> b[i] (one-to-one), b[i] ->
    c[i/4] (K-to-one), c[*] -> mid (fan-in), mid -> d[*], d[*] -> e[*]
    (barrier), e[*] -> end.  Each instance appends its name NAME[i] to
    `ledger` (badenv-NAME[i] when PMC_TASK_INDEX is not its index) and
    prints it.  Returns {name: [parents]} of every task and instance
    (lists shared between the instances with the same parents)."""
    n1 = max(4, ntasks * 3 // 10 // 4 * 4)
    n2 = max(1, (ntasks - 2 * n1 - n1 // 4 - 3) // 2)
    sizes = {"a": n1, "b": n1, "c": n1 // 4, "d": n2, "e": n2}
    inst = {k: ["%s[%d]" % (k, i) for i in range(n)] for k, n in sizes.items()}
    with open(path, "w") as f:
        f.write("# ledger workflow of task arrays: %d instances and 3 tasks\n"
                % sum(sizes.values()))
        for name in ("start", "mid", "end"):
            f.write("TASK %s /bin/sh -c \"echo %s >> %s; echo %s\"\n" % (name, name, ledger, name))
        for k, n in sizes.items():
            me = "%s[%%{INDEX}]" % k
            f.write("TASK %s[0-%d] /bin/sh -c \"test x$PMC_TASK_INDEX = x%%{INDEX} && echo '%s' "
                    ">> %s || echo 'badenv-%s' >> %s; echo '%s'\"\n"
                    % (k, n - 1, me, ledger, me, ledger, me))
        f.write("EDGE start a[*]\nEDGE a[i] b[i]\nEDGE b[i] c[i/4]\nEDGE c[*] mid\n"
                "EDGE mid d[*]\nEDGE d[*] e[*]\nEDGE e[*] end\n")
    parents = {"start": [], "mid": inst["c"], "end": inst["e"]}
    parents.update({x: ["start"] for x in inst["a"]})
    parents.update({b: [a] for a, b in zip(inst["a"], inst["b"])})
    parents.update({c: inst["b"][4 * j:4 * j + 4] for j, c in enumerate(inst["c"])})
    parents.update({x: ["mid"] for x in inst["d"]})
    parents.update({x: inst["d"] for x in inst["e"]})
    return parents


def read_ledger(path, offset=0):
    """Names appended to the ledger from byte offset on, and the new end.
    A last line without newline (a task killed mid-write) is not a name."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return [], offset
    end = data.rfind(b"\n") + 1
    names = data[:end].decode().split("\n")[:-1] if end else []
    return names, offset + end


def machine():
    """'N CPUs, MODEL' of this machine."""
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "%d CPUs, %s" % (os.cpu_count() or 0, model)
