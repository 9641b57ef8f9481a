"""test_join.py - agents that join a master over the network (--listen,
--join; docs/join.md), on this one machine: every agent is a process of
its own, a host of its own to the master (its rank is its join number,
the records' slot=).

  * two_agents_run_a_workload: a real workflow on two joined agents:
    every task succeeds once, in order, the rescue log is complete, the
    per-agent stdio files are merged, the access file is removed and both
    agents exit 0.
  * agent_killed_and_replaced: an agent and its tasks SIGKILLed mid-run,
    a replacement joins: exit 0, every task DONE once, none charged a try
    (-t 1 would fail a charged task), one record per task in the output
    (the lost agent's blocks of requeued tasks left out), the loss counted
    in --summary-json.
  * agent_stopped_is_lost_then_expelled: SIGSTOP (a hung node) past
    --node-timeout: its tasks run elsewhere; once SIGCONT'd it learns it
    was expelled and exits 1 without delivering a result twice.
  * agent_leaves_on_sigterm: SIGTERM makes an agent leave: it finishes
    its running task, exits 0, and the run ends well on the others.
  * late_agent_gets_work_at_once: an agent that joins a running workflow
    starts a task within 1 s of joining.
  * master_killed_ends_agents_and_tasks: the master SIGKILLed: each agent
    ends its tasks and exits 1 within --node-timeout and --kill-grace;
    a rerun with a new agent continues from the rescue log.
  * join_errors: --join without an access file, or with one whose keys
    are not the master's: a clear error and exit 1.
"""

import json
import os
import re
import signal
import time

import pmcrun

# Short timeouts keep the losses quick (the heartbeat is a fifth of them),
# long enough that a machine busy with other tests never stalls a live
# agent past it; a sanitizer build (PMC_TEST_SANITIZED, several times slower) gets
# wider ones, and the late joiner's bound only there is widened.
SANITIZED = os.environ.get("PMC_TEST_SANITIZED") == "1"
NODE_TIMEOUT = "6" if SANITIZED else "2"
KILL_GRACE = "1"
JOIN_WORK_WITHIN = 5.0 if SANITIZED else 1.0  # s from an agent's launch to its first task


class JoinTest(pmcrun.TestCase):

    def start_master(self, dag, extra=()):
        acc = self.path("access")
        proc = self.start_pmc(["--listen", acc, "--node-timeout", NODE_TIMEOUT,
                               "--summary-json", self.path("summary.json")] + list(extra) + [dag])
        deadline = time.monotonic() + 30
        while not os.path.exists(acc):
            if proc.poll() is not None or time.monotonic() > deadline:
                self.fail("no access file:\n" + pmcrun.finish(proc, 5).describe())
            time.sleep(0.02)
        return proc, acc

    def start_agent(self, acc, cpus=2, extra=()):
        return self.start_pmc(["--join", acc, "--host-cpus", str(cpus),
                               "--kill-grace", KILL_GRACE] + list(extra))

    def rescue_done(self, dag):
        path = dag + ".rescue"
        if not os.path.exists(path):
            return 0
        with open(path) as f:
            return sum(1 for line in f if line.startswith("DONE "))

    def wait_done(self, dag, n, proc, timeout=60):
        deadline = time.monotonic() + timeout
        while self.rescue_done(dag) < n:
            if proc.poll() is not None or time.monotonic() > deadline:
                self.fail("%d tasks never got DONE:\n%s" % (n, pmcrun.finish(proc, 5).describe()))
            time.sleep(0.02)

    def finish_all(self, master, agents, timeout=120):
        res = pmcrun.finish(master, timeout)
        ends = [pmcrun.finish(a, 20) for a in agents]
        return res, ends

    def summary(self):
        with open(self.path("summary.json")) as f:
            return json.load(f)

    def sleep_dag(self, n, seconds):
        lines = ["TASK t%d /bin/sleep %s" % (i, seconds) for i in range(n)]
        return self.write("sleep.dag", "\n".join(lines) + "\n")

    def test_two_agents_run_a_workload(self):
        dag = self.copy_dag(os.path.join(self.require_workloads(), "seismology-1000p.dag"))
        master, acc = self.start_master(dag)
        agents = [self.start_agent(acc) for _ in range(2)]
        res, ends = self.finish_all(master, agents)
        problems = pmcrun.success_problems(res, pmcrun.parse_dag(dag))
        slots = {r.fields.get("slot") for r in res.tasks}
        if slots != {"1", "2"}:
            problems.append("tasks ran on slots %s, expected the agents 1 and 2" % sorted(slots))
        for i, e in enumerate(ends):
            if e.returncode != 0:
                problems.append("agent %d: exit %s\n%s" % (i + 1, e.returncode, e.describe()))
        if os.path.exists(acc):
            problems.append("the access file is left after the run")
        self.check(problems, res)

    def test_agent_killed_and_replaced(self):
        dag = self.sleep_dag(60, "0.2")
        master, acc = self.start_master(dag)
        first = self.start_agent(acc)
        other = self.start_agent(acc)
        self.wait_done(dag, 10, master)
        pmcrun.kill_session(first)  # the agent and its tasks, at once
        replacement = self.start_agent(acc)
        res, ends = self.finish_all(master, [other, replacement])
        problems = pmcrun.success_problems(res, pmcrun.parse_dag(dag))
        for e in ends:
            if e.returncode != 0:
                problems.append("a live agent: exit %s\n%s" % (e.returncode, e.describe()))
        s = self.summary().get("membership", {})
        if s.get("nodes_lost") != 1 or s.get("nodes_joined") != 3:
            problems.append("summary membership %r, expected 3 joined and 1 lost" % s)
        self.check(problems, res)

    def test_agent_stopped_is_lost_then_expelled(self):
        dag = self.sleep_dag(40, "0.2")
        master, acc = self.start_master(dag)
        hung = self.start_agent(acc)
        other = self.start_agent(acc)
        self.wait_done(dag, 6, master)
        os.killpg(hung.pid, signal.SIGSTOP)
        time.sleep(float(NODE_TIMEOUT) * 1.5)
        os.killpg(hung.pid, signal.SIGCONT)
        res, ends = self.finish_all(master, [hung, other])
        problems = pmcrun.success_problems(res, pmcrun.parse_dag(dag))
        if ends[0].returncode != 1:
            problems.append("the expelled agent: exit %s, expected 1\n%s"
                            % (ends[0].returncode, ends[0].describe()))
        if ends[1].returncode != 0:
            problems.append("the live agent: exit %s\n%s" % (ends[1].returncode, ends[1].describe()))
        self.check(problems, res)

    def left_problems(self, dag, master, leaving, other):
        """The run of master ends well with the agent `leaving` gone by its
        own LEAVING (exit 0, said, counted as left) and `other` to the end."""
        res, ends = self.finish_all(master, [leaving, other])
        problems = pmcrun.success_problems(res, pmcrun.parse_dag(dag))
        for e in ends:
            if e.returncode != 0:
                problems.append("agent: exit %s\n%s" % (e.returncode, e.describe()))
        if "leaving the run" not in ends[0].stderr:
            problems.append("the agent did not say it leaves:\n" + ends[0].describe())
        left = self.summary().get("membership", {}).get("nodes_left")
        if left != 1:
            problems.append("summary: %r nodes left, expected 1" % left)
        return problems, res

    def test_agent_leaves_on_sigterm(self):
        dag = self.sleep_dag(30, "0.3")
        master, acc = self.start_master(dag)
        leaving = self.start_agent(acc)
        other = self.start_agent(acc)
        self.wait_done(dag, 4, master)
        os.kill(leaving.pid, signal.SIGTERM)  # the agent only, not its tasks
        self.check(*self.left_problems(dag, master, leaving, other))

    def leaves_on_its_own_problems(self, agent_extra, agent_env):
        """One agent whose allocation ends 2-2.5 s in (agent_extra,
        agent_env: its alarm counts whole seconds) leaves by itself, before
        the work (3 s on both agents' 4 CPUs) is done; the other finishes
        the run."""
        dag = self.sleep_dag(40, "0.3")
        master, acc = self.start_master(dag)
        leaving = self.start_pmc(["--join", acc, "--host-cpus", "2", "--kill-grace", KILL_GRACE]
                                 + agent_extra, env=agent_env)
        other = self.start_agent(acc)
        return self.left_problems(dag, master, leaving, other)

    def test_agent_leaves_at_its_max_wall_time(self):
        problems, res = self.leaves_on_its_own_problems(["--max-wall-time", "0.04"], {})
        self.check(problems, res)

    def test_agent_leaves_at_its_batch_jobs_end(self):
        end = int(time.time()) + 4  # less --drain-margin 1.5: it leaves 2.5 s in
        problems, res = self.leaves_on_its_own_problems(
            ["--drain-margin", "1.5"], {"SLURM_JOB_ID": "1", "SLURM_JOB_END_TIME": str(end)})
        self.check(problems, res)

    def test_late_agent_gets_work_at_once(self):
        dag = self.sleep_dag(40, "0.25")
        master, acc = self.start_master(dag)
        first = self.start_agent(acc, cpus=1)
        self.wait_done(dag, 2, master)
        joined = time.time()
        late = self.start_agent(acc, cpus=1)
        res, ends = self.finish_all(master, [first, late])
        problems = pmcrun.success_problems(res, pmcrun.parse_dag(dag))
        starts = sorted(r.start for r in res.tasks if r.fields.get("slot") == "2")
        if not starts:
            problems.append("the late agent ran no task")
        elif starts[0] - joined > JOIN_WORK_WITHIN:
            problems.append("the late agent's first task started %.2f s after it was "
                            "launched, expected within %g s" % (starts[0] - joined,
                                                                 JOIN_WORK_WITHIN))
        self.check(problems, res)

    def test_master_killed_ends_agents_and_tasks(self):
        lines = ["TASK t%d /bin/sh -c 'echo $$ > pid.%d; exec sleep 60'" % (i, i)
                 for i in range(2)]
        lines += ["TASK quick%d /bin/true" % i for i in range(3)]
        dag = self.write("wf.dag", "\n".join(lines) + "\n")
        master, acc = self.start_master(dag)
        agent = self.start_agent(acc, cpus=5)
        deadline = time.monotonic() + 30
        while not all(os.path.exists(self.path("pid.%d" % i)) for i in range(2)):
            self.assertLess(time.monotonic(), deadline, "the long tasks never started")
            time.sleep(0.05)
        self.wait_done(dag, 3, master)
        pids = [int(open(self.path("pid.%d" % i)).read()) for i in range(2)]
        os.killpg(master.pid, signal.SIGKILL)
        t0 = time.monotonic()
        end = pmcrun.finish(agent, 30)
        took = time.monotonic() - t0
        problems = []
        limit = float(NODE_TIMEOUT) + float(KILL_GRACE) + 2.0
        if end.returncode != 1:
            problems.append("agent: exit %s, expected 1" % end.returncode)
        if took > limit:
            problems.append("agent took %.1f s to end, expected under %.1f" % (took, limit))
        if not pmcrun.wait_pids_gone(pids, 5):
            problems.append("tasks %s outlived their agent" % pids)
        self.check(problems, end)
        # a rerun with a new agent runs only what was not DONE (the killed
        # run's stdio files, merged now, hold records older than it)
        os.remove(acc) if os.path.exists(acc) else None
        with open(dag, "w") as f:
            f.write("\n".join(l.replace("exec sleep 60", "true") for l in lines) + "\n")
        master, acc = self.start_master(dag)
        agent = self.start_agent(acc)
        res, ends = self.finish_all(master, [agent])
        names = sorted(r.name for r in res.tasks if r.start >= res.started - 0.01)
        problems = []
        if res.returncode != 0:
            problems.append("rerun: exit %s" % res.returncode)
        if names != ["t0", "t1"]:
            problems.append("rerun ran %s, expected only t0 and t1" % names)
        self.check(problems, res)

    def test_join_errors(self):
        res = pmcrun.run(["--join", self.path("nothing")], cwd=self.tmp, timeout=30)
        self.assertEqual(res.returncode, 1, res.describe())
        self.assertIn("No such file", res.stderr)
        dag = self.sleep_dag(2, "0")
        master, acc = self.start_master(dag)
        text = open(acc).read()
        key = re.search(r"^client-secret (\S+)$", text, re.M).group(1)
        forged = key[:-1] + ("A" if key[-1] != "A" else "B")
        self.write("forged", text.replace(key, forged), 0o600)
        res = pmcrun.run(["--join", self.path("forged")], cwd=self.tmp, timeout=30)
        self.assertEqual(res.returncode, 1, res.describe())
        self.assertRegex(res.stderr, "refused|no answer|keys")
        agent = self.start_agent(acc)
        res, ends = self.finish_all(master, [agent])
        self.assertEqual(res.returncode, 0, res.describe())


if __name__ == "__main__":
    pmcrun.main()
