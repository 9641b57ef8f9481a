#!/usr/bin/env python3
"""test_pointed_input.py - never destroy what the user points at (issue 45,
"input"): closed standard descriptors, DAGs that are not regular files,
over-long lines, task names that would escape the run's directory, and the
messages that must name the option or variable at fault and its limit.

  * closed_standard_descriptors: started with every combination of 0, 1 and
    2 closed (7 of them; `<&- >&-` as cron and daemons do), the run exits 0,
    both tasks ran (marker files, DONE records in the rescue log), the DAG
    file is byte-identical, and no task output went into the rescue log or
    the resource log (with stdout closed, the DAG's lock took descriptor 1
    and the DAG was overwritten with task output and records; 0 and 2
    closed did the same with the log).
  * pipe_dag: a DAG read from a pipe (/dev/fd/N, as `<(gen)` gives, the
    writer done and closed) is refused within the timeout, naming the path
    and asking for a file (it hung for ever); nothing ran.
  * fifo_dag: the same for a FIFO with no writer, with and without -n.
  * dev_zero_dag: /dev/zero as the DAG is refused at once, with and without
    -n (it grew memory without bound).
  * over_long_line: a line of 8 MiB + 1 byte (a comment) is an error naming
    the file and line, nothing ran; a line of exactly 8 MiB is fine.
  * escaping_names: with --per-task-stdio, tasks named ../escape and
    TMP/abs/x are refused before any task runs (DAG file, line, name), and
    nothing is written outside the run's directory; without the option the
    same DAG runs (PMC allows such names).
  * tmpdir_named: TMPDIR=/nonexistent fails the run before any task with a
    message naming TMPDIR and the reason (it said "cannot start task a: No
    such file or directory"), on one rank and, with mpiexec, on two.
  * option_limits_named: -c 99999999999 and --time-limit 1e300 in the DAG
    are refused with the upper limit stated (they said "> 0").
  * no_host_capable_gives_request: -m 1e9 is refused with the task's request
    and the hosts' offer (CPUs, memory MB, GPUs).
  * past_batch_end_logged: a SLURM_JOB_END_TIME already past (100 s ago, and
    1 s after the epoch) is ignored with a warning naming it; the run
    completes (it stopped at once, or went on silently).
  * gpu_list_garbage: CUDA_VISIBLE_DEVICES='garbage,,$$,-5' is an error
    naming the variable and the word (it counted 3 GPUs and handed
    'garbage' to a task); a list of a UUID and a MIG id is taken.
"""

import os
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

LIMIT = 8 << 20  # DAGFILE_MAX_LINE
REFUSE_TIMEOUT = 30  # seconds: a refusal is immediate; a hang runs into this

NOT_REGULAR = "not a regular file: write the DAG to a file first"


def tree(folder, skip=None):
    """{relative path: bytes or a kind} of everything under folder, but skip."""
    state = {}
    for root, dirs, files in os.walk(folder):
        if skip:
            dirs[:] = [d for d in dirs if os.path.join(root, d) != skip]
        for name in dirs + files:
            p = os.path.join(root, name)
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as f:
                    state[os.path.relpath(p, folder)] = f.read()
            else:
                state[os.path.relpath(p, folder)] = "dir" if os.path.isdir(p) else "special"
    return state


class PointedInput(pmcrun.TestCase):
    def ran(self, names):
        return [n for n in names if os.path.exists(self.path("ran." + n))]

    def refused(self, res, wants, ran_names=("a",)):
        """Problems of a run that should have stopped at once with a
        message holding every string of wants."""
        problems = []
        if res.timed_out:
            problems.append("no answer within %d s (a hang)" % REFUSE_TIMEOUT)
        elif res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        for w in wants:
            if w not in res.stderr:
                problems.append("stderr lacks %r" % w)
        if res.tasks or self.ran(ran_names):
            problems.append("a task ran")
        return problems

    # ------------------------------------------------- closed descriptors

    def run_closed(self, closed, dag, sub):
        """Run pmc-hybrid on dag in sub with the descriptors of closed shut."""
        shut = " ".join({0: "<&-", 1: ">&-", 2: "2>&-"}[fd] for fd in closed)
        argv = ["/bin/sh", "-c", 'exec "$@" %s' % shut, "sh"] + pmcrun.command(
            ["--host-cpus", "2", dag])
        t0 = time.monotonic()
        proc = subprocess.run(argv, cwd=sub, env=pmcrun.run_env(), stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        return pmcrun.Result(argv, proc.returncode, proc.stdout.decode("utf-8", "replace"),
                             proc.stderr.decode("utf-8", "replace"), time.monotonic() - t0,
                             False, time.time())

    def test_closed_standard_descriptors(self):
        combos = ((0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2))
        for closed in combos:
            with self.subTest(closed=closed):
                sub = self.path("closed" + "".join(map(str, closed)))
                os.mkdir(sub)
                text = ("TASK a /bin/sh -c 'echo out-a; echo err-a >&2; touch %s/ran.a'\n"
                        "TASK b /bin/sh -c 'echo out-b; echo err-b >&2; touch %s/ran.b'\n"
                        "EDGE a b\n" % (sub, sub))
                dag = os.path.join(sub, "w.dag")
                with open(dag, "w") as f:
                    f.write(text)
                res = self.run_closed(closed, dag, sub)
                problems = []
                if res.returncode != 0:
                    problems.append("exit status %s, expected 0" % res.returncode)
                with open(dag) as f:
                    now = f.read()
                if now != text:
                    problems.append("the DAG file changed: %r" % now[:300])
                for name in ("a", "b"):
                    if not os.path.exists(os.path.join(sub, "ran." + name)):
                        problems.append("task %s did not run" % name)
                try:
                    with open(dag + ".rescue") as f:
                        rescue = f.read()
                except OSError as e:
                    rescue = "unreadable: %s" % e
                if "DONE a" not in rescue or "DONE b" not in rescue:
                    problems.append("rescue log lacks DONE a/b: %r" % rescue[:300])
                for name in os.listdir(sub):
                    if name.startswith("w.dag.") and os.path.isfile(os.path.join(sub, name)):
                        with open(os.path.join(sub, name), errors="replace") as f:
                            body = f.read()
                        if "out-a" in body or "err-a" in body or "cluster-task" in body:
                            problems.append("%s holds task output or records" % name)
                if 1 not in closed and "out-a" not in res.stdout:
                    problems.append("stdout open, but no task output on it")
                self.check(problems, res, "closed %s" % (closed,))

    # ------------------------------------------------ not regular files

    def test_pipe_dag(self):
        text = "TASK a /bin/touch %s\n" % self.path("ran.a")
        r, w = os.pipe()
        writer = threading.Thread(target=lambda: (os.write(w, text.encode()), os.close(w)))
        writer.start()
        writer.join()
        try:
            argv = pmcrun.command(["--host-cpus", "2", "/dev/fd/%d" % r])
            t0 = time.monotonic()
            proc = subprocess.Popen(argv, cwd=self.tmp, env=pmcrun.run_env(),
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, pass_fds=(r,),
                                    start_new_session=True)
            proc.argv, proc.started, proc.t0 = argv, time.time(), t0
        finally:
            os.close(r)
        res = pmcrun.finish(proc, timeout=REFUSE_TIMEOUT)
        self.check(self.refused(res, ["/dev/fd/", "a pipe or FIFO", NOT_REGULAR]), res)

    def test_fifo_dag(self):
        fifo = self.path("w.dag")
        os.mkfifo(fifo)
        for opts in ([], ["-n"]):
            with self.subTest(opts=opts):
                res = self.run_pmc(opts + ["--host-cpus", "2", fifo], timeout=REFUSE_TIMEOUT)
                self.check(self.refused(res, ["w.dag: a pipe or FIFO", NOT_REGULAR]), res)

    def test_dev_zero_dag(self):
        for opts in ([], ["-n"]):
            with self.subTest(opts=opts):
                res = self.run_pmc(opts + ["--host-cpus", "2", "/dev/zero"],
                                   timeout=REFUSE_TIMEOUT)
                self.check(self.refused(res, ["/dev/zero: a character device", NOT_REGULAR]),
                           res)

    def test_over_long_line(self):
        task = "TASK a /bin/touch %s\n" % self.path("ran.a")
        dag = self.write("long.dag", task + "#" + "x" * LIMIT + "\nEDGE\n")
        res = self.run_pmc(["--host-cpus", "2", dag], timeout=REFUSE_TIMEOUT)
        problems = self.refused(res, ["long.dag:2: line of 8388609 bytes, longer than the "
                                      "limit of 8388608 bytes (8 MiB)"])
        ok = self.write("ok.dag", task + "#" + "x" * (LIMIT - 1) + "\n")
        res2 = self.run_pmc(["--host-cpus", "2", ok], timeout=60)
        if res2.returncode != 0 or not self.ran(["a"]):
            problems.append("a line of exactly 8 MiB: exit %s, ran %s"
                            % (res2.returncode, self.ran(["a"])))
        self.check(problems, res)

    # ----------------------------------------------------- escaping names

    def test_escaping_names(self):
        os.mkdir(self.path("abs"))
        cases = [("../escape", 1), (self.path("abs/x"), 2)]
        for name, line in cases:
            with self.subTest(name=name):
                run_dir = self.path("run%d" % line)
                os.mkdir(run_dir)
                marker = self.path("ran.a")
                dag = os.path.join(run_dir, "w.dag")
                with open(dag, "w") as f:
                    if line == 2:
                        f.write("TASK ok /bin/true\n")
                    f.write("TASK %s /bin/touch %s\n" % (name, marker))
                before = tree(self.tmp, skip=run_dir)
                res = pmcrun.run(["--per-task-stdio", "--host-cpus", "2", dag], cwd=run_dir,
                                 timeout=60)
                problems = self.refused(res, ["w.dag:%d: task %s: a '/' in a task name is not "
                                              "allowed with --per-task-stdio" % (line, name)])
                after = tree(self.tmp, skip=run_dir)
                changed = sorted(k for k in set(before) | set(after)
                                 if before.get(k) != after.get(k))
                if changed:
                    problems.append("written outside the run's directory: %s" % changed)
                self.check(problems, res, name)
                # without --per-task-stdio no file is named after a task: it runs
                res = pmcrun.run(["--host-cpus", "2", dag], cwd=run_dir, timeout=60)
                if res.returncode != 0 or not os.path.exists(marker):
                    self.check(["without --per-task-stdio: exit %s" % res.returncode], res, name)
                os.unlink(marker)

    # ----------------------------------------------------------- messages

    def test_tmpdir_named(self):
        dag = self.write("w.dag", "TASK a /bin/touch %s\nTASK b /bin/touch %s\n"
                         % (self.path("ran.a"), self.path("ran.b")))
        want = ["TMPDIR=/nonexistent: No such file or directory", "output is captured there"]
        ranks = [1] + ([2] if pmcrun.CONFIG.mpiexec else [])
        for n in ranks:
            with self.subTest(ranks=n):
                res = self.run_pmc(["--host-cpus", "2", dag], ranks=n,
                                   env={"TMPDIR": "/nonexistent"}, timeout=60,
                                   ranks_are_hosts=n > 1)
                self.check(self.refused(res, want, ran_names=("a", "b")), res)

    def test_option_limits_named(self):
        cases = [("-c 99999999999", "bad value '99999999999' for -c/--request-cpus (expected a "
                                    "number of CPUs > 0, at most 4294967295)"),
                 ("--time-limit 1e300", "bad value '1e300' for --time-limit (expected a number "
                                        "of seconds > 0, at most 4294967.295 (49.7 days))")]
        for opt, want in cases:
            with self.subTest(opt=opt):
                dag = self.write("w.dag", "TASK a %s /bin/touch %s\n" % (opt, self.path("ran.a")))
                res = self.run_pmc(["--host-cpus", "2", dag], timeout=60)
                self.check(self.refused(res, ["w.dag:1: task a: " + want]), res, opt)

    def test_no_host_capable_gives_request(self):
        dag = self.write("w.dag", "TASK a -m 1e9 /bin/touch %s\n" % self.path("ran.a"))
        res = self.run_pmc(["--host-cpus", "2", "--host-memory", "4096", "--host-gpus", "0",
                            dag], timeout=60)
        self.check(self.refused(res, ["No host is capable of running task a (it requests 1 "
                                      "CPUs, 1000000000 MB of memory, 0 GPUs; the hosts offer "
                                      "2 CPUs, 4096 MB, 0 GPUs)"]), res)

    def test_past_batch_end_logged(self):
        dag = self.write("w.dag", "TASK a /bin/touch %s\n" % self.path("ran.a"))
        for end in (int(time.time()) - 100, 1):
            with self.subTest(end=end):
                if os.path.exists(self.path("ran.a")):
                    os.unlink(self.path("ran.a"))
                res = self.run_pmc(["-s", "-v", "--host-cpus", "2", dag],
                                   env={"SLURM_JOB_END_TIME": str(end)}, timeout=60)
                problems = []
                if res.returncode != 0 or not self.ran(["a"]):
                    problems.append("exit %s, ran %s: the run did not complete"
                                    % (res.returncode, self.ran(["a"])))
                if "Ignoring the batch job's end: SLURM_JOB_END_TIME: the job's end" not in \
                        res.stderr or " s past" not in res.stderr:
                    problems.append("no warning that the past SLURM_JOB_END_TIME is ignored")
                self.check(problems, res, str(end))

    def test_gpu_list_garbage(self):
        dag = self.write("w.dag", "TASK a -g 1 /bin/sh -c 'echo GPU=$CUDA_VISIBLE_DEVICES; "
                         "touch %s'\n" % self.path("ran.a"))
        clear = {v: None for v in ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                                   "ZE_AFFINITY_MASK")}
        env = dict(clear, CUDA_VISIBLE_DEVICES="garbage,,$$,-5")
        res = self.run_pmc(["--host-cpus", "2", dag], env=env, timeout=60)
        self.check(self.refused(res, ["CUDA_VISIBLE_DEVICES='garbage,,$$,-5': 'garbage' is not "
                                      "a GPU"]), res)
        good = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6,MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f"
        res = self.run_pmc(["--host-cpus", "2", dag], env=dict(clear, CUDA_VISIBLE_DEVICES=good),
                           timeout=60)
        if res.returncode != 0 or "GPU=GPU-8932f937-d72c-4106-c12f-20bd9faed9f6" not in res.stdout:
            self.check(["a list of a GPU UUID and a MIG id was not taken"], res)


if __name__ == "__main__":
    pmcrun.main()
