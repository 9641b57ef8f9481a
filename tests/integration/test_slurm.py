#!/usr/bin/env python3
"""test_slurm.py - docs/batch.md's Slurm recipes run as real batch jobs.

Each test brings up a private Slurm cluster of two nodes (tools/slurm-local.sh:
munged, slurmctld and two slurmd on this machine, every file in the test's
temporary directory) and submits the scripts of docs/batch.md's Slurm
section, copied unchanged from the document, with sbatch.  The options
that make a 16-node, 4-hour script fit this machine are given on the sbatch
command line, which wins over the script's #SBATCH lines (--nodes=2,
--cpus-per-task=4, --time); PMC_HOST_CPUS=2 in the submitting environment
(sbatch exports it to the job) gives every host 2 CPUs whatever the machine
has, so that the timed cases take as long everywhere.

  * workflow_mpiexec, workflow_srun: a real workflow of the shared
    workloads (cycles, 67 tasks) to the end, one node agent per Slurm node
    (PMC_RANKS_ARE_HOSTS=1): MPICH's hydra started through srun, and
    `srun --mpi=pmi2`.  Exit 0, job COMPLETED 0:0, the records and the
    rescue log as without Slurm, both nodes' agents ran tasks, both
    nodes' slurmd launched the job's step 0 (hydra's proxies or the ranks);
  * drain: --time=4 and the default --drain-margin 180: pmc-hybrid reads
    the job's end from the real squeue, starts no task after 60 s, ends the
    running ones, writes the rescue log and exits before Slurm's time limit
    (job FAILED 1:0, not TIMEOUT); the same script submitted again
    finishes the workflow: each task DONE once, none run twice;
  * scancel: the job cancelled while tasks run: no task process left, the
    rescue log names only tasks that succeeded; a new job completes it;
  * usr1_scancel: `scancel -b -s USR1` (the batch shell only): the
    script's trap forwards it, pmc-hybrid stops in order at once;
  * usr1_signal: `--signal=B:USR1@N`: Slurm's own early warning stops the
    run the same way, before --drain-margin would have;
  * failing: a workflow with a failing task: the script's exit status, the
    job's ExitCode and JobState and the summary's exit_status agree.
  * join_scancel: docs/batch.md's "Nodes that come and go" recipes: the
    master and an `srun --no-kill` step of agents in one job on one node,
    the second allocation's agents in another job on the other node;
    `scancel` of the second job midway: the first completes the workflow
    (COMPLETED 0:0, every task DONE once) and no process is left.

Every case checks that no process of the job (a task, a rank, slurmstepd)
is left when the job has ended, and stop checks that none of the cluster's
daemons is left.  A cluster that does not come up fails the test with the
daemons' logs.  ctest label "slurm" (not run under the sanitizers).

    python3 tests/integration/test_slurm.py --bin build/pmc-hybrid \\
        --workloads ../shared/workloads [-k drain]
"""

import os
import re
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

WORKFLOW = "cycles-1l-1c-9p.dag"  # 67 tasks of a real workflow, ~1 s
FINAL_STATES = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
                "PREEMPTED", "BOOT_FAIL", "DEADLINE")


def slurm_scripts(source_dir):
    """The ```bash blocks of docs/batch.md's "## Slurm" section, in order:
    [the mpiexec script, the srun script]."""
    with open(os.path.join(source_dir, "docs", "batch.md")) as f:
        text = f.read()
    start = text.index("\n## Slurm")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end > 0 else len(text)]
    return re.findall(r"```bash\n(.*?)```", section, re.S)


def join_scripts(source_dir):
    """The ```bash blocks of docs/batch.md's "## Nodes that come and go"
    section: [the one-allocation script, the second allocation's sbatch]."""
    with open(os.path.join(source_dir, "docs", "batch.md")) as f:
        text = f.read()
    start = text.index("\n## Nodes that come and go")
    end = text.find("\n## ", start + 1)
    return re.findall(r"```bash\n(.*?)```", text[start:end], re.S)


def chain_dag(chains, length, seconds):
    """DAG text: `chains` chains of `length` tasks c<I>_<J> of one CPU that
    sleep `seconds`, each after the one before it."""
    lines = []
    for i in range(chains):
        for j in range(length):
            lines.append("TASK c%d_%d -c 1 /bin/sleep %s" % (i, j, seconds))
            if j:
                lines.append("EDGE c%d_%d c%d_%d" % (i, j - 1, i, j))
    return "\n".join(lines) + "\n"


def end_source(job_id):
    """A pattern of where pmc-hybrid says it found the job's end: squeue
    (Slurm 22.05 does not set SLURM_JOB_END_TIME) or the variable (newer
    Slurm)."""
    return r"(?:squeue \(end time of job %s\)|SLURM_JOB_END_TIME)" % job_id


def environ_of(pid):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


class Slurm(pmcrun.TestCase):
    """One private Slurm cluster per test."""

    def setUp(self):
        super().setUp()
        self.script_tool = os.path.join(pmcrun.CONFIG.source_dir, "tools", "slurm-local.sh")
        os.chmod(self.tmp, 0o755)  # munged wants its socket's path searchable by all
        self.cluster = self.path("slurm")
        proc = subprocess.run([self.script_tool, "start", self.cluster, "2", "4"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=60)
        if proc.returncode != 0:
            self.fail("%s start %s failed (exit %d):\n%s%s" % (
                self.script_tool, self.cluster, proc.returncode, proc.stdout.decode(),
                proc.stderr.decode()))
        self.conf = os.path.join(self.cluster, "slurm.conf")
        self.addCleanup(self.stop_cluster)
        self.job_dir = self.path("job")
        os.mkdir(self.job_dir)
        bin_dir = os.path.join(self.job_dir, "bin")  # pmc-hybrid on the PATH
        os.mkdir(bin_dir)
        os.symlink(pmcrun.CONFIG.bin, os.path.join(bin_dir, "pmc-hybrid"))
        env = pmcrun.run_env()
        for name in list(env):  # nothing of an enclosing batch job
            if name.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_", "PMI_")):
                del env[name]
        env["SLURM_CONF"] = self.conf
        env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "/usr/bin:/bin")
        env["PMC_HOST_CPUS"] = "2"
        self.env = env
        self.mpiexec_script, self.srun_script = slurm_scripts(pmcrun.CONFIG.source_dir)[:2]

    def stop_cluster(self):
        proc = subprocess.run([self.script_tool, "stop", self.cluster], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        left = self.cluster_processes()
        self.assertEqual(proc.returncode, 0, proc.stdout.decode())
        self.assertEqual(left, [], "processes of the cluster left after stop")

    # --------------------------------------------------------- helpers

    def cluster_processes(self, pmc_only=False):
        """[(pid, command)] of the live processes that belong to this
        cluster: SLURM_CONF=self.conf in their environment, or the cluster
        directory in their command line (the daemons); pmc_only: only the
        job's tasks and ranks (PMC_TASK or PMC_HOST_CPUS in the
        environment)."""
        conf = ("SLURM_CONF=" + self.conf).encode()
        found = []
        for pid in pmcrun.processes():
            if pid == os.getpid():
                continue
            env = environ_of(pid)
            cmd = (pmcrun.read_text("/proc/%d/cmdline" % pid) or "").replace("\0", " ")
            ours = conf in env or (self.cluster + "/") in cmd
            if pmc_only:
                ours = conf in env and any(e.startswith((b"PMC_TASK=", b"PMC_HOST_CPUS="))
                                           for e in env)
            state = (pmcrun.stat_fields("/proc/%d/stat" % pid) or ["Z"])[0]
            if ours and state != "Z":
                found.append((pid, cmd.strip()))
        return found

    def slurm(self, *argv, check=True):
        proc = subprocess.run(list(argv), cwd=self.job_dir, env=self.env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=30)
        if check and proc.returncode != 0:
            self.fail("%s: exit %d: %s" % (" ".join(argv), proc.returncode,
                                           proc.stderr.decode()))
        return proc.stdout.decode()

    def write_job(self, name, text):
        return self.write(os.path.join("job", name), text, 0o755)

    def use_workflow(self, dag_text=None):
        """workflow.dag in the job directory: the shared cycles workflow or
        dag_text; returns its parsed Dag."""
        path = os.path.join(self.job_dir, "workflow.dag")
        if dag_text is None:
            src = os.path.join(self.require_workloads(), WORKFLOW)
            with open(src) as f:
                dag_text = f.read()
        with open(path, "w") as f:
            f.write(dag_text)
        return pmcrun.parse_dag(path)

    def submit(self, script, *options, env=None):
        """sbatch [options] script (a file of the job directory) -> job id."""
        if env:
            saved = self.env
            self.env = dict(saved, **env)
        try:
            out = self.slurm("sbatch", "--parsable", "--nodes=2", "--cpus-per-task=4",
                             *options, script)
        finally:
            if env:
                self.env = saved
        return out.strip().split(";")[0]

    def job(self, job_id):
        """scontrol's fields of the job: {"JobState": ..., ...}."""
        out = self.slurm("scontrol", "-o", "show", "job", job_id)
        return dict(m.groups() for m in re.finditer(r"(\w+)=(\S*)", out))

    def wait_job(self, job_id, timeout):
        """Wait until the job has ended; its fields, plus "waited" (seconds
        from submission to the end)."""
        t0 = time.monotonic()
        while True:
            info = self.job(job_id)
            if info.get("JobState") in FINAL_STATES:
                info["waited"] = time.monotonic() - t0
                return info
            if time.monotonic() - t0 > timeout:
                self.slurm("scancel", job_id, check=False)
                self.fail("job %s still %s after %d s:\n%s" % (job_id, info.get("JobState"),
                                                               timeout, self.job_log(job_id)))
            time.sleep(0.2)

    def wait_started(self, job_id, timeout=20):
        t0 = time.monotonic()
        while self.job(job_id).get("JobState") == "PENDING":
            if time.monotonic() - t0 > timeout:
                self.fail("job %s did not start in %d s" % (job_id, timeout))
            time.sleep(0.1)

    def job_log(self, job_id):
        return pmcrun.read_text(os.path.join(self.job_dir, "slurm-%s.out" % job_id)) or ""

    def result(self, job_id, info):
        """The job as a pmcrun.Result: the records of out.JOB.txt, the log
        of slurm-JOB.out (the summary is there), the job's exit code."""
        log = self.job_log(job_id)
        records = pmcrun.read_text(os.path.join(self.job_dir, "out.%s.txt" % job_id)) or ""
        code = int(info["ExitCode"].split(":")[0])
        return pmcrun.Result(["sbatch", "job", job_id], code, records + log, log,
                             info["waited"], False, 0.0)

    def wait_rescue(self, dag, count, timeout=60):
        """Wait until the rescue log names `count` tasks."""
        t0 = time.monotonic()
        while len(pmcrun.parse_rescue(dag.path + ".rescue", True).done) < count:
            if time.monotonic() - t0 > timeout:
                self.fail("the rescue log did not reach %d tasks in %d s" % (count, timeout))
            time.sleep(0.1)

    def leftover_problems(self):
        """Processes of the ended job still alive (a task, a rank)."""
        left = []
        for _ in range(50):  # slurmstepd ends its processes just after the job
            left = self.cluster_processes(pmc_only=True)
            if not left:
                return []
            time.sleep(0.1)
        return ["process(es) of the job left after it ended: %s" % left]

    def rescue_problems(self, dag, res):
        """The rescue log after a stopped run: complete lines only, each a
        task of the DAG that has a successful record, none twice."""
        rescue = pmcrun.parse_rescue(dag.path + ".rescue")
        problems = list(rescue.problems)
        ok = {r.name for r in res.tasks if r.status == 0}
        twice = sorted({n for n in rescue.done if rescue.done.count(n) > 1})
        if twice:
            problems.append("DONE twice in the rescue log: %s" % twice)
        bad = sorted(rescue.done_set - ok)
        if bad:
            problems.append("DONE in the rescue log without a successful record: %s" % bad[:5])
        missing = sorted(ok - rescue.done_set)
        if missing:
            problems.append("succeeded but not DONE in the rescue log: %s" % missing[:5])
        return problems

    def finish_again(self, dag, done_before, script="run.sh"):
        """Submit the same script again: it must complete the workflow,
        running only the tasks not DONE before, each once."""
        job_id = self.submit(script, "--time=4", "--signal=B:USR1@10")
        info = self.wait_job(job_id, 120)
        res = self.result(job_id, info)
        problems = pmcrun.success_problems(res, dag, skipped=frozenset(done_before))
        rescue = pmcrun.parse_rescue(dag.path + ".rescue")
        twice = sorted({n for n in rescue.done if rescue.done.count(n) > 1})
        if twice:
            problems.append("DONE twice in the rescue log: %s" % twice)
        if info["JobState"] != "COMPLETED" or info["ExitCode"] != "0:0":
            problems.append("second job %s %s, expected COMPLETED 0:0"
                            % (info["JobState"], info["ExitCode"]))
        problems += self.leftover_problems()
        self.check(problems, res, "second job")

    def stopped_problems(self, dag, res, info, reason):
        """A run stopped in order: the summary says it did not finish,
        `reason` in the log, exit 1, the rescue log consistent, nothing left."""
        problems = []
        if len(res.summaries) != 1:
            problems.append("%d cluster-summary records, expected 1" % len(res.summaries))
        elif res.summaries[0].get("stat") == "ok":
            problems.append("cluster-summary stat=ok after a stop")
        if reason not in res.stderr:
            problems.append("no %r in the log" % reason)
        if res.returncode != 1:
            problems.append("job exit code %d, expected 1" % res.returncode)
        problems += self.rescue_problems(dag, res)
        problems += self.leftover_problems()
        done = pmcrun.parse_rescue(dag.path + ".rescue").done
        if not 0 < len(done) < len(dag.tasks):
            problems.append("%d of %d tasks DONE: expected the stop in the middle"
                            % (len(done), len(dag.tasks)))
        return problems

    # ----------------------------------------------------------- tests

    def run_workflow(self, script_text):
        self.write_job("run.sh", script_text)
        dag = self.use_workflow()
        job_id = self.submit("run.sh", "--time=4", "--signal=B:USR1@10",
                             env={"PMC_RANKS_ARE_HOSTS": "1"})
        info = self.wait_job(job_id, 120)
        res = self.result(job_id, info)
        problems = pmcrun.success_problems(res, dag)
        if info["JobState"] != "COMPLETED" or info["ExitCode"] != "0:0":
            problems.append("job %s %s, expected COMPLETED 0:0"
                            % (info["JobState"], info["ExitCode"]))
        slots = pmcrun.slot_counts(res.tasks)
        if len(slots) < 2:
            problems.append("only rank(s) %s ran tasks: expected an agent on each of the 2 "
                            "nodes" % sorted(slots))
        if not re.search(end_source(job_id), res.stderr):
            problems.append("the job's end was read from neither squeue nor "
                            "SLURM_JOB_END_TIME")
        for node in ("n1", "n2"):  # the ranks (hydra's proxies) started as a job step
            log = pmcrun.read_text(os.path.join(self.cluster, "log", "slurmd.%s.log" % node))
            if "launch task StepId=%s.0 " % job_id not in (log or ""):
                problems.append("slurmd of node %s launched no step %s.0" % (node, job_id))
        problems += self.leftover_problems()
        self.check(problems, res, "job %s" % job_id)

    def test_workflow_mpiexec(self):
        """The documented mpiexec script: hydra starts its proxies through
        srun on both nodes."""
        self.assertIn("mpiexec", self.mpiexec_script)
        self.run_workflow(self.mpiexec_script)

    def test_workflow_srun(self):
        """The documented srun --mpi=pmi2 script."""
        self.assertIn("srun", self.srun_script)
        self.run_workflow(self.srun_script)

    def test_drain(self):
        """--time=4, default --drain-margin 180: the stop comes 60 s into
        the job, from the job's end that squeue gives."""
        self.write_job("run.sh", self.mpiexec_script)
        dag = self.use_workflow(chain_dag(8, 6, 3))  # 144 CPU-s on 2 CPUs: ~72 s
        job_id = self.submit("run.sh", "--time=4", "--signal=B:USR1@10")
        info = self.wait_job(job_id, 200)
        res = self.result(job_id, info)
        problems = self.stopped_problems(dag, res, info,
                                         "Stopping before the batch job's end (")
        if info["JobState"] != "FAILED" or info["ExitCode"] != "1:0":
            problems.append("job %s %s, expected FAILED 1:0 (ended by pmc-hybrid, before "
                            "the time limit)" % (info["JobState"], info["ExitCode"]))
        if not 50 < info["waited"] < 110:
            problems.append("job ended %.0f s after its submission, expected ~60 s "
                            "(240 s limit - 180 s margin)" % info["waited"])
        m = re.search(r"Stopping (\d+) s from now, before the batch job's end \(%s: the job "
                      r"ends in (\d+) s" % end_source(job_id), res.stderr)
        if not m or not 50 <= int(m.group(1)) <= 60 or not 230 <= int(m.group(2)) <= 240:
            problems.append("no 'Stopping ~60 s from now ... ends in ~240 s' line")
        elif res.summaries:
            start = pmcrun.parse_time(res.summaries[0]["start"])
            stop_at = start + int(m.group(1)) + 1
            late = [r.name for r in res.tasks if r.start > stop_at]
            if late:
                problems.append("task(s) started after the stop time: %s" % late)
        problems += pmcrun.order_problems(dag, res.tasks)
        self.check(problems, res, "job %s" % job_id)
        self.finish_again(dag, pmcrun.parse_rescue(dag.path + ".rescue").done)

    def test_scancel(self):
        """scancel while tasks run (SIGTERM to every process of the job,
        SIGKILL KillWait=5 s later): a clean stop, then a rerun completes."""
        self.write_job("run.sh", self.mpiexec_script)
        dag = self.use_workflow(chain_dag(4, 4, 2))  # 32 CPU-s on 2 CPUs: ~16 s
        job_id = self.submit("run.sh", "--time=4", "--signal=B:USR1@10")
        self.wait_rescue(dag, 3)
        self.slurm("scancel", job_id)
        info = self.wait_job(job_id, 60)
        res = self.result(job_id, info)
        problems = self.rescue_problems(dag, res) + self.leftover_problems()
        if info["JobState"] != "CANCELLED":
            problems.append("job %s, expected CANCELLED" % info["JobState"])
        if "Caught signal: SIGTERM" not in res.stderr:
            problems.append("pmc-hybrid did not stop on scancel's SIGTERM")
        if len(res.summaries) != 1:
            problems.append("%d cluster-summary records, expected 1 (a stop in order within "
                            "KillWait)" % len(res.summaries))
        self.check(problems, res, "job %s" % job_id)
        self.finish_again(dag, pmcrun.parse_rescue(dag.path + ".rescue").done)

    def test_usr1_scancel(self):
        """scancel -b -s USR1: the documented way to ask for an early stop
        by hand; the script's trap forwards it to mpiexec."""
        self.write_job("run.sh", self.mpiexec_script)
        dag = self.use_workflow(chain_dag(4, 4, 2))
        job_id = self.submit("run.sh", "--time=4", "--signal=B:USR1@10")
        self.wait_rescue(dag, 3)
        t0 = time.monotonic()
        self.slurm("scancel", "-b", "-s", "USR1", job_id)
        info = self.wait_job(job_id, 60)
        res = self.result(job_id, info)
        problems = self.stopped_problems(dag, res, info, "Caught signal: SIGUSR1")
        if time.monotonic() - t0 > 15:
            problems.append("the job ended %.0f s after scancel -b -s USR1, expected a few"
                            % (time.monotonic() - t0))
        if (info["JobState"], info["ExitCode"]) != ("FAILED", "1:0"):
            problems.append("job %s %s, expected FAILED 1:0 (the summary's exit_status)"
                            % (info["JobState"], info["ExitCode"]))
        self.check(problems, res, "job %s" % job_id)

    def test_usr1_signal(self):
        """--signal=B:USR1@290 with --time=5: Slurm sends SIGUSR1 to the
        batch shell 10-40 s into the job (slurmctld looks every 30 s), well
        before --drain-margin's stop at 120 s."""
        self.write_job("run.sh", self.mpiexec_script)
        dag = self.use_workflow(chain_dag(8, 6, 3))
        job_id = self.submit("run.sh", "--time=5", "--signal=B:USR1@290")
        info = self.wait_job(job_id, 150)
        res = self.result(job_id, info)
        problems = self.stopped_problems(dag, res, info, "Caught signal: SIGUSR1")
        if info["waited"] > 80:
            problems.append("job ended %.0f s after its submission, expected 10-45 s"
                            % info["waited"])
        self.check(problems, res, "job %s" % job_id)

    def test_failing(self):
        """A task that fails for good: the workflow fails, the script
        exits 1, the job is FAILED 1:0 and the summary says exit_status 1."""
        self.write_job("run.sh", self.srun_script)
        dag = self.use_workflow("TASK a /bin/true\nTASK b /bin/false\nTASK c /bin/true\n"
                                "EDGE a b\nEDGE b c\n")
        job_id = self.submit("run.sh", "--time=4", "--signal=B:USR1@10")
        info = self.wait_job(job_id, 60)
        res = self.result(job_id, info)
        problems = self.leftover_problems()
        if (info["JobState"], info["ExitCode"]) != ("FAILED", "1:0"):
            problems.append("job %s %s, expected FAILED 1:0"
                            % (info["JobState"], info["ExitCode"]))
        summary = pmcrun.read_text(os.path.join(self.job_dir, "summary.%s.json" % job_id))
        if summary is None or '"exit_status": 1' not in summary:
            problems.append("summary.%s.json has no exit_status 1: %r" % (job_id, summary))
        if pmcrun.parse_rescue(dag.path + ".rescue").done != ["a"]:
            problems.append("rescue log %s, expected only a DONE"
                            % pmcrun.parse_rescue(dag.path + ".rescue").done)
        self.check(problems, res, "job %s" % job_id)

    def test_join_scancel(self):
        """Agents of a second job join the workflow and go with their job."""
        one_job, second = join_scripts(pmcrun.CONFIG.source_dir)[:2]
        self.write_job("run.sh", one_job)
        dag = self.use_workflow(chain_dag(8, 10, "0.5"))  # 40 s of work: 20 s on 2 CPUs
        first = self.submit("run.sh", "--nodes=1", "--time=4")
        self.wait_rescue(dag, 2)
        sbatch = re.sub(r"\\\n\s*", " ", second).strip().split(" ", 1)[1]
        sbatch = sbatch.replace("/shared/run/access", os.path.join(self.job_dir, "access"))
        out = self.slurm("sh", "-c", "sbatch --parsable --nodes=1 --cpus-per-task=4 "
                         "--time=4 " + sbatch.replace("--nodes=32 --time=02:00:00 ", ""))
        helper = out.strip().split(";")[0]
        self.wait_started(helper)
        self.wait_rescue(dag, len(dag.tasks) // 2)
        self.slurm("scancel", helper)
        info = self.wait_job(first, 120)
        res = self.result(first, info)
        problems = pmcrun.success_problems(res, dag)
        if info["JobState"] != "COMPLETED" or info["ExitCode"] != "0:0":
            problems.append("job %s %s, expected COMPLETED 0:0"
                            % (info["JobState"], info["ExitCode"]))
        helped = self.wait_job(helper, 30)
        if helped["JobState"] not in ("CANCELLED", "COMPLETED"):
            problems.append("second job %s, expected CANCELLED" % helped["JobState"])
        if len(pmcrun.slot_counts(res.tasks)) < 2:
            problems.append("only agent(s) %s ran tasks: the second job's never did"
                            % sorted(pmcrun.slot_counts(res.tasks)))
        problems += self.leftover_problems()
        self.check(problems, res, "job %s" % first)


if __name__ == "__main__":
    pmcrun.main()
