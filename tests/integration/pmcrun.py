"""pmcrun.py - shared helpers of the pmc-hybrid integration tests.

The integration tests run the real pmc-hybrid binary on DAG files in a fresh
temporary directory and judge what it leaves behind against the PMC manual
(../shared/spec/pegasus-mpi-cluster.1.txt) and COMPAT.md: the
[cluster-task ...] and [cluster-summary ...] records, the rescue file, the
exit status and the log on stderr.  This module holds everything the test
files share:

  * configuration: paths of the binary, the DAG generator, the source tree
    and the shared workloads, from command-line options (when a test file is
    run directly) or from PMC_TEST_* environment variables (set by ctest);
  * running: pmc-hybrid with 1 rank (plain exec) or N ranks (mpiexec -n N),
    each run in its own session with a timeout, the whole session killed with
    SIGKILL when the timeout expires.  N ranks on this machine are one host
    (rank 0 master, rank 1 the agent, the rest idle: PMC's launch shape);
    ranks_are_hosts=True adds --ranks-are-hosts so that each rank is a host
    (tests of several node agents);
  * parsers: DAG files (COMPAT.md quoting rules), rescue files, output
    records (key=value pairs, quoted values, ISO-8601 start times);
  * checks that return a list of problems instead of stopping at the first,
    so that a failure names the case and everything wrong with it.

Every test runs in its own temporary directory (PMC_KEEP_TMP=1 keeps them);
nothing is ever written into the source tree or ../shared.  Python 3
standard library only.
"""

import argparse
import datetime
import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

# Default time limit of one pmc-hybrid run, seconds.
RUN_TIMEOUT = 120

# Slack when comparing a child's start with its parent's end: both records
# are rounded to milliseconds.
ORDER_TOLERANCE = 0.002

# Environment variables that are aliases of pmc-hybrid options: removed from
# the environment of every run so that the caller's shell cannot change it.
PMC_ALIASES = ("PMC_HOST_SCRIPT", "PMC_HOST_MEMORY", "PMC_HOST_CPUS", "PMC_MAX_WALL_TIME",
               "PMC_HOST_GPUS", "PMC_RANKS_ARE_HOSTS")

# ----------------------------------------------------------------- config


class Config:
    """Where things are.  Filled by configure() from options and env."""

    source_dir = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    bin = None
    gendag = None
    workloads = None
    mpiexec = "mpiexec"


CONFIG = Config()


def configure(argv=None):
    """Read --bin/--gendag/--source-dir/--workloads/--mpiexec from argv (or
    PMC_TEST_BIN, PMC_TEST_GENDAG, PMC_TEST_SOURCE_DIR, PMC_TEST_WORKLOADS,
    PMC_TEST_MPIEXEC) and return the arguments left for unittest."""
    env = os.environ
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--bin", default=env.get("PMC_TEST_BIN"))
    parser.add_argument("--gendag", default=env.get("PMC_TEST_GENDAG"))
    parser.add_argument("--source-dir", default=env.get("PMC_TEST_SOURCE_DIR"))
    parser.add_argument("--workloads", default=env.get("PMC_TEST_WORKLOADS"))
    parser.add_argument("--mpiexec", default=env.get("PMC_TEST_MPIEXEC", "mpiexec"))
    args, rest = parser.parse_known_args(argv)
    if args.source_dir:
        CONFIG.source_dir = os.path.abspath(args.source_dir)
    src = CONFIG.source_dir
    CONFIG.bin = os.path.abspath(args.bin or os.path.join(src, "build", "pmc-hybrid"))
    CONFIG.gendag = os.path.abspath(args.gendag or os.path.join(src, "build", "pmc-gendag"))
    CONFIG.workloads = os.path.abspath(
        args.workloads or os.path.join(src, "..", "shared", "workloads"))
    CONFIG.mpiexec = args.mpiexec
    return rest


def main():
    """Entry point of every test file: `python3 test_x.py [--bin PATH ...]
    [unittest options such as -k PATTERN]`."""
    rest = configure(sys.argv[1:])
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


# ------------------------------------------------------------- processes


def stat_fields(path):
    """The fields of a /proc stat file after the command name (state ppid
    pgrp session ...), or [] when it cannot be read (the process is gone)."""
    try:
        with open(path) as f:
            stat = f.read()
    except OSError:
        return []
    return stat[stat.rfind(")") + 2:].split()


def processes():
    """{pid: (state, ppid, sid)} of every process, from /proc/PID/stat."""
    procs = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = stat_fields("/proc/%s/stat" % entry)
        if len(fields) > 3:
            procs[int(entry)] = (fields[0], int(fields[1]), int(fields[3]))
    return procs


def session_pids(sid):
    """Pids of every live (not zombie) process in session sid."""
    return [pid for pid, (st, _, s) in processes().items() if s == sid and st != "Z"]


def process_tree(root, procs):
    """root and every descendant of it (any state) in procs, a
    processes() snapshot."""
    tree, grown = {root}, True
    while grown:
        grown = False
        for pid, (_, ppid, _) in procs.items():
            if ppid in tree and pid not in tree:
                tree.add(pid)
                grown = True
    return tree


def read_text(path):
    """The text of path, or None when it cannot be read."""
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def descendant_pids(root):
    """Pids of every live descendant of process root (from /proc).  MPICH's
    hydra starts its proxy and every rank in a session of its own, so the
    ranks of an mpiexec run are found through the process tree, not the
    session."""
    children = {}
    for pid, (st, ppid, _) in processes().items():
        if st != "Z":
            children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def rank_processes(root):
    """{rank: pid} of the pmc-hybrid processes under process root (mpiexec);
    the rank is PMI_RANK from the process's environment."""
    exe = os.path.realpath(CONFIG.bin)
    found = {}
    for pid in descendant_pids(root):
        try:
            if os.path.realpath(os.readlink("/proc/%d/exe" % pid)) != exe:
                continue
            with open("/proc/%d/environ" % pid, "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        rank = 0
        for item in env:
            if item.startswith(b"PMI_RANK="):
                rank = int(item[len(b"PMI_RANK="):])
        found[rank] = pid
    return found


def kill_session(proc):
    """SIGKILL proc's process group, every other process of its session
    (tasks that made their own groups) and every descendant of proc
    (mpiexec's proxies and ranks, which hydra puts in sessions of their
    own; looked for only while proc has not been reaped, so that its pid
    cannot belong to another process)."""
    tree = descendant_pids(proc.pid) if proc.poll() is None else []
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    for pid in set(session_pids(proc.pid)) | set(tree):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def wait_session_gone(sid, timeout=10.0):
    """Wait until no process of session sid is left; True if none is."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not session_pids(sid):
            return True
        time.sleep(0.02)
    return not session_pids(sid)


def wait_pids_gone(pids, timeout=10.0):
    """Wait until none of pids is alive (a zombie counts as gone: its
    threads have exited and its descriptors are closed); True if none is."""
    deadline = time.monotonic() + timeout
    while True:
        live = [pid for pid in pids
                if (stat_fields("/proc/%d/stat" % pid) or ["Z"])[0] != "Z"]
        if not live or time.monotonic() >= deadline:
            return not live
        time.sleep(0.01)


def wait_unlocked(path, timeout=10.0):
    """Wait until no process holds a lock on file path (the engine's lock
    on its DAG, io/daglock.c, an OFD lock, which a POSIX lock probe meets;
    the kernel drops it once the last descriptor of its holder closes);
    True if none does."""
    deadline = time.monotonic() + timeout
    with open(path, "rb+") as f:
        while True:
            try:
                fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.lockf(f, fcntl.LOCK_UN)
                return True
            except OSError:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.005)


def pool_args(args):
    """["--launch-threads", N] when PMC_TEST_LAUNCH_THREADS=N is set (the
    ctest variants integration.pool.*, N=2: the same suites with tasks
    started by a launcher pool without launchers to spare, the default on
    hosts of 8 CPUs or more, which this 2-CPU machine would otherwise never
    run; integration.agent.*, N=0: by the node agent's own thread) and the
    test did not choose a pool itself; [] otherwise."""
    n = os.environ.get("PMC_TEST_LAUNCH_THREADS")
    if not n or any(str(a).startswith("--launch-threads") for a in args):
        return []
    return ["--launch-threads", n]


def command(args, ranks=1, ranks_are_hosts=False, wrap=()):
    """The argv that runs pmc-hybrid with args on `ranks` MPI ranks.

    By default the ranks of `mpiexec -n N` share this machine, which is one
    host (PMC's launch shape): rank 0 is the master, rank 1 the host's only
    node agent, ranks 2.. wait idle.  ranks_are_hosts=True passes
    --ranks-are-hosts, so that every rank is a host of its own (several node
    agents, remote agents, TASKS/RESULTS over MPI, per-rank stdio files of
    several agents).  wrap: a command each rank runs pmc-hybrid through
    (under mpiexec: it sees PMI_RANK), e.g. one that sets its host name."""
    args = (["--ranks-are-hosts"] if ranks_are_hosts else []) + pool_args(args) + list(args)
    if ranks == 1:
        return list(wrap) + [CONFIG.bin] + args
    return [CONFIG.mpiexec, "-n", str(ranks)] + list(wrap) + [CONFIG.bin] + args


def run_env(extra=None):
    env = dict(os.environ)
    for name in PMC_ALIASES:
        env.pop(name, None)
    for name, value in (extra or {}).items():
        if value is None:  # None: unset it
            env.pop(name, None)
        else:
            env[name] = value
    return env


class Result:
    """What one run produced."""

    def __init__(self, argv, returncode, stdout, stderr, elapsed, timed_out, started):
        self.argv = argv
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.elapsed = elapsed
        self.timed_out = timed_out
        self.started = started  # time.time() just before the launch
        self.output = parse_output(stdout)

    @property
    def tasks(self):
        return self.output.tasks

    @property
    def summaries(self):
        return self.output.summaries

    def records_of(self, name):
        return [r for r in self.output.tasks if r.name == name]

    def describe(self, lines=25):
        """The command, exit status and the ends of stderr and stdout."""
        def tail(text):
            rows = text.splitlines()
            cut = rows[-lines:]
            more = ""
            if len(rows) > len(cut):
                more = "    ... (%d lines before)\n" % (len(rows) - len(cut))
            return more + "".join("    %s\n" % r for r in cut)
        status = "timed out" if self.timed_out else "exit %s" % self.returncode
        return ("command: %s\n%s after %.2fs\nstderr:\n%sstdout:\n%s"
                % (" ".join(self.argv), status, self.elapsed, tail(self.stderr), tail(self.stdout)))


def start(args, ranks=1, cwd=None, env=None, preexec=None, ranks_are_hosts=False, wrap=()):
    """Launch pmc-hybrid without waiting, in a new session (preexec, if
    given, runs in the child before exec, e.g. to set a resource limit).
    Returns the Popen with .argv and .started attributes; finish it with
    finish().  ranks_are_hosts, wrap: see command()."""
    argv = command(args, ranks, ranks_are_hosts, wrap)
    started = time.time()
    proc = subprocess.Popen(argv, cwd=cwd, env=run_env(env), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=preexec)
    proc.argv = argv
    proc.started = started
    proc.t0 = time.monotonic()
    return proc


def finish(proc, timeout=RUN_TIMEOUT):
    """Wait up to timeout seconds for a started run (then kill its session)
    and return its Result.  Leftover processes of the session are killed."""
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_session(proc)
        out, err = proc.communicate()
    elapsed = time.monotonic() - proc.t0
    kill_session(proc)  # stray ranks or tasks must not outlive the test
    return Result(proc.argv, proc.returncode, out.decode("utf-8", "replace"),
                  err.decode("utf-8", "replace"), elapsed, timed_out, proc.started)


def run(args, ranks=1, cwd=None, timeout=RUN_TIMEOUT, env=None, preexec=None,
        ranks_are_hosts=False, wrap=()):
    """Run pmc-hybrid to the end and return its Result."""
    return finish(start(args, ranks, cwd, env, preexec, ranks_are_hosts, wrap), timeout)


def gendag(args, output, timeout=60):
    """Run pmc-gendag with args, writing the DAG to output."""
    argv = [CONFIG.gendag] + list(args) + ["-o", output]
    proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError("%s failed (exit %d): %s" % (" ".join(argv), proc.returncode,
                                                           proc.stderr.decode().strip()))
    return output


# ------------------------------------------------------------ DAG parser


class Task:
    def __init__(self, name, line):
        self.name = name
        self.line = line
        self.argv = []
        self.cpus = 1
        self.memory = 0
        self.tries = 0
        self.priority = 0
        self.pegasus_id = None


class Dag:
    """A parsed DAG file: tasks in file order, edges as (parent, child)."""

    def __init__(self, path):
        self.path = path
        self.tasks = {}
        self.edges = []

    def __len__(self):
        return len(self.tasks)

    def parents(self):
        result = {name: [] for name in self.tasks}
        for parent, child in self.edges:
            result[child].append(parent)
        return result


class DagError(Exception):
    pass


def split_words(text):
    """COMPAT.md argument splitting: white space separates words; ' or "
    opens a run closed by the same character; \\ makes the next character
    literal."""
    words, word, quote, i, have = [], [], None, 0, False
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            word.append(text[i + 1])
            have = True
            i += 2
            continue
        if quote:
            if c == quote:
                quote = None
            else:
                word.append(c)
        elif c in "'\"":
            quote, have = c, True
        elif c.isspace():
            if have:
                words.append("".join(word))
            word, have = [], False
        else:
            word.append(c)
            have = True
        i += 1
    if quote:
        raise DagError("unterminated quote")
    if have:
        words.append("".join(word))
    return words


TASK_OPTIONS = {"-m": "memory", "--request-memory": "memory", "-c": "cpus",
                "--request-cpus": "cpus", "-t": "tries", "--tries": "tries",
                "-p": "priority", "--priority": "priority", "-f": None,
                "--pipe-forward": None, "-F": None, "--file-forward": None}


def _ceil_number(value):
    number = float(value)
    return int(number) if number == int(number) else int(number) + 1


def parse_dag(path):
    """Parse a DAG file the way COMPAT.md describes it; raises DagError
    ("path:line: what") on anything pmc-hybrid must reject."""
    dag = Dag(path)
    pegasus_id = None
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        where = "%s:%d" % (path, lineno)
        if line.startswith("#@"):
            fields = line[2:].split()
            pegasus_id = fields[0] if fields else None
            continue
        if not line or line.startswith("#"):
            continue
        try:
            words = split_words(line)
        except DagError as e:
            raise DagError("%s: %s" % (where, e))
        if words[0] == "TASK":
            if len(words) < 2:
                raise DagError("%s: TASK without a name" % where)
            task = Task(words[1], lineno)
            task.pegasus_id, pegasus_id = pegasus_id, None
            i = 2
            while i < len(words) and words[i].startswith("-"):
                opt, value = words[i], None
                if "=" in opt and opt.startswith("--"):
                    opt, value = opt.split("=", 1)
                if opt not in TASK_OPTIONS:
                    raise DagError("%s: unknown task option %s" % (where, opt))
                if value is None:
                    if i + 1 >= len(words):
                        raise DagError("%s: %s needs a value" % (where, opt))
                    value = words[i + 1]
                    i += 1
                i += 1
                attr = TASK_OPTIONS[opt]
                try:
                    if attr in ("memory", "cpus"):
                        setattr(task, attr, _ceil_number(value))
                    elif attr:
                        setattr(task, attr, int(value))
                except ValueError:
                    raise DagError("%s: bad value for %s: %s" % (where, opt, value))
            task.argv = words[i:]
            if not task.argv:
                raise DagError("%s: TASK %s has no executable" % (where, task.name))
            if task.name in dag.tasks:
                raise DagError("%s: duplicate task %s" % (where, task.name))
            dag.tasks[task.name] = task
        elif words[0] == "EDGE":
            if len(words) != 3:
                raise DagError("%s: EDGE needs a parent and a child" % where)
            for name in words[1:]:
                if name not in dag.tasks:
                    raise DagError("%s: EDGE names unknown task %s" % (where, name))
            if words[1] == words[2]:
                raise DagError("%s: EDGE from %s to itself" % (where, words[1]))
            dag.edges.append((words[1], words[2]))
        else:
            raise DagError("%s: unknown record %s" % (where, words[0]))
    if not dag.tasks:
        raise DagError("%s: no TASK records" % path)
    cycle = find_cycle(dag)
    if cycle:
        raise DagError("%s: cycle: %s" % (path, " -> ".join(cycle)))
    return dag


def find_cycle(dag):
    """One cycle as a list of names (first repeated at the end), or None."""
    children = {name: [] for name in dag.tasks}
    for parent, child in dag.edges:
        children[parent].append(child)
    state = dict.fromkeys(dag.tasks, 0)  # 0 new, 1 on stack, 2 done
    for root in dag.tasks:
        if state[root]:
            continue
        stack = [(root, iter(children[root]))]
        path = [root]
        state[root] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state[nxt] == 1:
                return path[path.index(nxt):] + [nxt]
            elif state[nxt] == 0:
                state[nxt] = 1
                stack.append((nxt, iter(children[nxt])))
                path.append(nxt)
    return None


# --------------------------------------------------------- rescue parser


class Rescue:
    """The DONE records of a rescue file, in order; `complete_only` ignores
    a last line without newline (a torn record)."""

    def __init__(self, done, problems):
        self.done = done
        self.problems = problems

    @property
    def done_set(self):
        return set(self.done)


def parse_rescue(path, complete_only=False):
    try:
        with open(path, "rb") as f:
            data = f.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return Rescue([], ["rescue file %s does not exist" % path])
    lines = data.split("\n")
    if complete_only:
        lines = lines[:-1]  # the part after the last newline is not complete
    done, problems = [], []
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        words = line.split()
        if len(words) == 2 and words[0] == "DONE":
            done.append(words[1])
        else:
            problems.append("%s:%d: not a DONE record: %r" % (path, lineno, raw))
    return Rescue(done, problems)


# -------------------------------------------------------- record parser

ISO_RE = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{3})([+-])(\d\d):(\d\d)$")
KEY_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)=")


class RecordError(Exception):
    pass


def parse_fields(body):
    """'a=1, b="x y", c=z' -> {'a': '1', 'b': 'x y', 'c': 'z'}."""
    fields, i, n = {}, 0, len(body)
    while i < n:
        m = KEY_RE.match(body, i)
        if not m:
            raise RecordError("expected key= at %r" % body[i:i + 20])
        key, i = m.group(1), m.end()
        if i < n and body[i] == '"':
            j = body.find('"', i + 1)
            if j < 0:
                raise RecordError("unterminated quoted value of %s" % key)
            value, i = body[i + 1:j], j + 1
        else:
            j = body.find(",", i)
            j = n if j < 0 else j
            value, i = body[i:j], j
        if key in fields:
            raise RecordError("key %s appears twice" % key)
        fields[key] = value
        if i < n:
            if not body.startswith(", ", i):
                raise RecordError("expected ', ' after %s=%s" % (key, value))
            i += 2
    return fields


def parse_time(text):
    """ISO-8601 local time with milliseconds and numeric offset -> epoch
    seconds (float).  Raises RecordError."""
    m = ISO_RE.match(text)
    if not m:
        raise RecordError("start %r is not YYYY-MM-DDTHH:MM:SS.mmm+HH:MM" % text)
    year, mon, day, hh, mm, ss, ms, sign, oh, om = m.groups()
    offset = (int(oh) * 60 + int(om)) * (1 if sign == "+" else -1)
    tz = datetime.timezone(datetime.timedelta(minutes=offset))
    when = datetime.datetime(int(year), int(mon), int(day), int(hh), int(mm), int(ss),
                             int(ms) * 1000, tzinfo=tz)
    epoch = when.timestamp()
    local = time.localtime(epoch).tm_gmtoff // 60
    if local != offset:
        raise RecordError("start %r: offset is not the local UTC offset (%+03d:%02d)"
                          % (text, int(local / 60), abs(local) % 60))
    return epoch


class TaskRecord:
    """One [cluster-task ...] line."""

    def __init__(self, fields, lineno):
        self.fields = fields
        self.lineno = lineno
        self.name = fields["name"]
        self.id = fields.get("id")
        self.start = parse_time(fields["start"])
        self.duration = float(fields["duration"])
        self.status = int(fields["status"])
        self.app = fields.get("app")

    @property
    def end(self):
        return self.start + self.duration


class Output:
    def __init__(self):
        self.tasks = []
        self.summaries = []
        self.problems = []
        self.lines = []


TASK_FIELDS = ("name", "start", "duration", "status", "app", "hostname", "slot", "cpus", "memory")
SUMMARY_FIELDS = ("stat", "tasks", "submitted", "succeeded", "failed", "extra", "start",
                  "duration", "pid", "app", "runtime", "slots", "cpus")


def parse_output(text):
    """Find the cluster-task and cluster-summary records in text (a stdout
    or an -o file).  Problems: malformed records, missing fields, records
    not starting at column 0."""
    out = Output()
    out.lines = text.split("\n")
    for lineno, line in enumerate(out.lines, 1):
        for kind in ("[cluster-task", "[cluster-summary"):
            pos = line.find(kind)
            if pos > 0:
                out.problems.append("line %d: %s record does not start at column 0: %r"
                                    % (lineno, kind[1:], line[:120]))
            if pos >= 0:
                _parse_record(out, line[pos:], kind[1:], lineno)
    return out


def _parse_record(out, line, kind, lineno):
    try:
        if not line.endswith("]"):
            raise RecordError("does not end with ]")
        fields = parse_fields(line[len(kind) + 2:-1])
        required = TASK_FIELDS if kind == "cluster-task" else SUMMARY_FIELDS
        missing = [k for k in required if k not in fields]
        if missing:
            raise RecordError("missing %s" % ", ".join(missing))
        if kind == "cluster-task":
            out.tasks.append(TaskRecord(fields, lineno))
        else:
            parse_time(fields["start"])
            for key in ("tasks", "submitted", "succeeded", "failed", "extra", "pid", "slots",
                        "cpus"):
                int(fields[key])
            float(fields["duration"])
            float(fields["runtime"])
            out.summaries.append(fields)
    except (RecordError, ValueError, KeyError) as e:
        out.problems.append("line %d: bad %s record (%s): %r" % (lineno, kind, e, line[:160]))


# ---------------------------------------------------------------- checks


def summary_problems(res, tasks, stat, succeeded=None, failed_attempts=None, records=None):
    """The single summary of res says tasks= and stat=, and counts that
    agree with the task records: succeeded = records with status 0,
    submitted = all records, failed + extra = records with another status.
    (PMC counts every failed attempt in failed= and prints extra=0; counting
    only final failures in failed= and the retried attempts in extra= is
    accepted too.)  A failed run has failed >= 1."""
    problems = []
    if len(res.summaries) != 1:
        return ["%d cluster-summary records, expected 1" % len(res.summaries)]
    s = res.summaries[0]
    records = res.tasks if records is None else records
    ok = sum(1 for r in records if r.status == 0)
    bad = len(records) - ok
    if succeeded is not None and ok != succeeded:
        problems.append("%d successful records, expected %d" % (ok, succeeded))
    if failed_attempts is not None and bad != failed_attempts:
        problems.append("%d failed records, expected %d" % (bad, failed_attempts))
    want = {"stat": stat, "tasks": str(tasks), "succeeded": str(ok),
            "submitted": str(len(records))}
    for key, value in want.items():
        if s.get(key) != value:
            problems.append("cluster-summary %s=%s, expected %s" % (key, s.get(key), value))
    failed, extra = int(s["failed"]), int(s["extra"])
    if failed + extra != bad:
        problems.append("cluster-summary failed=%d + extra=%d, expected %d failed attempts"
                        % (failed, extra, bad))
    if stat == "failed" and bad and failed < 1:
        problems.append("cluster-summary failed=0 in a failed run")
    return problems


def order_problems(dag, records):
    """For every edge whose two tasks both ran (successful records), the
    child started after the parent ended (within ORDER_TOLERANCE)."""
    ok = {}
    for r in records:
        if r.status == 0:
            ok[r.name] = r
    problems = []
    for parent, child in dag.edges:
        p, c = ok.get(parent), ok.get(child)
        if p and c and c.start < p.end - ORDER_TOLERANCE:
            problems.append("dependency order: %s started %.3fs before its parent %s ended"
                            % (child, p.end - c.start, parent))
    return problems


def record_problems(dag, records):
    """Record fields agree with the DAG: known name, id= exactly when the
    task had a #@ line, app = executable, cpus and memory as requested."""
    problems = []
    for r in records:
        task = dag.tasks.get(r.name)
        if task is None:
            problems.append("cluster-task record for unknown task %s" % r.name)
            continue
        if r.id != task.pegasus_id:
            problems.append("%s: id=%s, expected %s" % (r.name, r.id, task.pegasus_id))
        if r.app != task.argv[0]:
            problems.append("%s: app=%s, expected %s" % (r.name, r.app, task.argv[0]))
        if r.fields.get("cpus") != str(task.cpus):
            problems.append("%s: cpus=%s, expected %d" % (r.name, r.fields.get("cpus"), task.cpus))
        if r.fields.get("memory") != str(task.memory):
            problems.append("%s: memory=%s, expected %d"
                            % (r.name, r.fields.get("memory"), task.memory))
    return problems


def slot_counts(records):
    """{slot (int): number of records} of the records' slot= fields."""
    counts = {}
    for r in records:
        slot = int(r.fields.get("slot", -1))
        counts[slot] = counts.get(slot, 0) + 1
    return counts


def spread_problems(records, ranks):
    """With --ranks-are-hosts every one of `ranks` ranks (slot=0..ranks-1)
    ran at least one task, and no record names another slot."""
    counts = slot_counts(records)
    problems = []
    missing = [r for r in range(ranks) if not counts.get(r)]
    if missing:
        problems.append("rank(s) %s ran no task although every rank is a host "
                        "(records per slot: %s)" % (missing, counts))
    other = sorted(s for s in counts if not 0 <= s < ranks)
    if other:
        problems.append("records with slot=%s, expected 0..%d" % (other, ranks - 1))
    return problems


def stdio_leftovers(dag_path):
    """Per-rank DAG.out.R / DAG.err.R files next to the DAG."""
    folder, base = os.path.split(dag_path)
    pattern = re.compile(re.escape(base) + r"\.(out|err)\.\d+$")
    return sorted(f for f in os.listdir(folder) if pattern.match(f))


def success_problems(res, dag, rescue_path=None, skipped=frozenset(), since=None):
    """Everything a successful run must satisfy: exit 0, one summary with
    stat="ok" and consistent counts, one successful record per task not in
    `skipped` and none for tasks in skipped, every task DONE in the rescue
    file, dependency order, record fields, no per-rank stdio files left.
    since: ignore records that started before this epoch time (stale ones
    from an earlier, killed run merged from the per-rank files)."""
    problems = []
    if res.timed_out:
        problems.append("timed out after %.0fs" % res.elapsed)
    if res.returncode != 0:
        problems.append("exit status %s, expected 0" % res.returncode)
    problems += res.output.problems
    records = res.tasks
    if since is not None:
        records = [r for r in records if r.start >= since - ORDER_TOLERANCE]
    problems += summary_problems(res, len(dag), "ok", records=records)
    counts = {}
    for r in records:
        counts.setdefault(r.name, []).append(r.status)
    for name in dag.tasks:
        statuses = counts.get(name, [])
        if name in skipped:
            if statuses:
                problems.append("%s was DONE in the rescue file but ran again" % name)
        elif statuses != [0]:
            problems.append("%s: statuses %s, expected one record with status 0"
                            % (name, statuses))
    problems += record_problems(dag, records)
    problems += order_problems(dag, records)
    if rescue_path is None:
        rescue_path = dag.path + ".rescue"
    rescue = parse_rescue(rescue_path)
    problems += rescue.problems
    missing = [n for n in dag.tasks if n not in rescue.done_set]
    if missing:
        problems.append("%d task(s) not DONE in the rescue file, e.g. %s"
                        % (len(missing), ", ".join(missing[:5])))
    unknown = sorted(rescue.done_set - set(dag.tasks))
    if unknown:
        problems.append("rescue file names unknown task(s) %s" % ", ".join(unknown[:5]))
    left = stdio_leftovers(dag.path)
    if left:
        problems.append("per-rank stdio files left after a successful run: %s" % ", ".join(left))
    return _cap(problems)


def _cap(problems, limit=30):
    if len(problems) > limit:
        return problems[:limit] + ["... and %d more problems" % (len(problems) - limit)]
    return problems


def stderr_lines(res):
    return [line for line in res.stderr.splitlines() if line.strip()]


# -------------------------------------------------------------- TestCase


class TestCase(unittest.TestCase):
    """A test with its own temporary directory and helpers."""

    maxDiff = None
    needs_bin = True  # False for tests of the generator alone

    def setUp(self):
        if self.needs_bin and not os.access(CONFIG.bin or "", os.X_OK):
            self.fail("pmc-hybrid binary not found or not executable: %s "
                      "(pass --bin or set PMC_TEST_BIN)" % CONFIG.bin)
        self.tmp = tempfile.mkdtemp(prefix="pmc-it-")
        if os.environ.get("PMC_KEEP_TMP") == "1":
            sys.stderr.write("\n[%s keeps %s]\n" % (self.id(), self.tmp))
        else:
            self.addCleanup(_rmtree, self.tmp)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def write(self, name, text, mode=None):
        path = self.path(name)
        with open(path, "w") as f:
            f.write(text)
        if mode is not None:
            os.chmod(path, mode)
        return path

    def write_dag(self, name, text):
        """Write a DAG (text dedented line by line) into the temp dir."""
        body = "\n".join(line.strip() for line in text.strip("\n").split("\n")) + "\n"
        return self.write(name, body)

    def copy_dag(self, src, name=None):
        dst = self.path(name or os.path.basename(src))
        shutil.copyfile(src, dst)
        os.chmod(dst, 0o644)
        return dst

    def run_pmc(self, args, ranks=1, timeout=RUN_TIMEOUT, env=None, ranks_are_hosts=False,
                wrap=()):
        return run(args, ranks=ranks, cwd=self.tmp, timeout=timeout, env=env,
                   ranks_are_hosts=ranks_are_hosts, wrap=wrap)

    def start_pmc(self, args, ranks=1, env=None, ranks_are_hosts=False, wrap=()):
        proc = start(args, ranks=ranks, cwd=self.tmp, env=env, ranks_are_hosts=ranks_are_hosts,
                     wrap=wrap)
        self.addCleanup(kill_session, proc)
        return proc

    def check(self, problems, res=None, case=None):
        """Fail with every problem, the case name and the run's output."""
        if not problems:
            return
        text = "%s: %d problem(s):\n  - %s" % (case or self.id(), len(problems),
                                              "\n  - ".join(problems))
        if res is not None:
            text += "\n" + res.describe()
        self.fail(text)

    def require_workloads(self):
        """The shared workloads dir, or a failure (a skip only with
        PMC_ALLOW_NO_WORKLOADS=1)."""
        path = CONFIG.workloads
        if os.path.isdir(path) and any(f.endswith(".dag") for f in os.listdir(path)):
            return path
        msg = ("workloads directory %s is missing or has no .dag files (CI has it at "
               "../shared/workloads; set PMC_ALLOW_NO_WORKLOADS=1 to skip)" % path)
        if os.environ.get("PMC_ALLOW_NO_WORKLOADS") == "1":
            self.skipTest(msg)
        self.fail(msg)


def _rmtree(path):
    # a test may have left an unreadable file or directory behind
    for root, dirs, _ in os.walk(path):
        for d in dirs:
            try:
                os.chmod(os.path.join(root, d), 0o755)
            except OSError:
                pass
    shutil.rmtree(path, ignore_errors=True)
