#!/usr/bin/env python3
"""join_campaign.py - nodes that die under a run that agents joined
(issue 49, docs/join.md): the run must go on and lose nothing.

A real workflow of ../shared/workloads (its sleeps scaled by --scale so
that it outlasts the campaign) runs under `pmc-hybrid --listen` with
--agents agents (`pmc-hybrid --join`, 2 CPUs each, every one a session of
its own on this machine).  --kills times, at random moments, one live
agent is hit and a replacement joins:
  kill  SIGKILL of the agent and its tasks, at one instant (a dead node);
  stop  SIGSTOP of the agent and its tasks (a hung node); after 1.5 x
        --node-timeout, SIGCONT: the master declared it lost, so it learns
        it was expelled and must exit 1 without a result counted.

Checks at the end:
  1. the master exits 0 (with -t 1, a task charged a try for a lost node
     would have failed the run) and ran after the last hit;
  2. every task is DONE exactly once in the rescue log, and no other line;
  3. -o holds exactly one record per task, with status 0 (a lost node's
     blocks of requeued tasks are left out of the merge);
  4. --summary-json: failed 0, membership.nodes_lost = the hits,
     nodes_joined = agents + hits, tasks_requeued reported;
  5. every hit agent has exited (1 for a stopped one), every live agent 0,
     and no process of any agent is left.

    python3 tests/reliability/join_campaign.py --bin build/pmc-hybrid \\
        --workloads ../shared/workloads [--mode stop] [--kills 20]
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import relutil  # noqa: E402


def scaled_dag(src, dst, scale):
    """src with every `/bin/sleep X` made X * scale; the task names."""
    names = []
    with open(src) as f, open(dst, "w") as out:
        for line in f:
            if line.startswith("TASK"):
                names.append(line.split()[1])
                line = re.sub(r"(/bin/sleep )([\d.]+)",
                              lambda m: m.group(1) + "%.3f" % (float(m.group(2)) * scale), line)
            out.write(line)
    return names


class Campaign:
    def __init__(self, args, tmp):
        self.args, self.tmp = args, tmp
        self.dag = os.path.join(tmp, "wf.dag")
        self.access = os.path.join(tmp, "access")
        self.names = scaled_dag(os.path.join(args.workloads, args.workflow), self.dag, args.scale)
        self.env = relutil.clean_env()
        self.agents, self.hit, self.seq = [], [], 0
        self.problems = []

    def start_master(self):
        argv = [self.args.bin, "--listen", self.access, "--node-timeout",
                str(self.args.node_timeout), "--summary-json", os.path.join(self.tmp, "s.json"),
                "-o", os.path.join(self.tmp, "out.txt"), "--min-hosts", str(self.args.agents),
                self.dag]
        self.master = relutil.start(argv, self.tmp, os.path.join(self.tmp, "master.out"),
                                    os.path.join(self.tmp, "master.err"), self.env)
        deadline = time.monotonic() + 30
        while not os.path.exists(self.access):
            if self.master.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("no access file: " + self.log("master.err"))
            time.sleep(0.01)

    def start_agent(self):
        self.seq += 1
        name = "agent%d" % self.seq
        p = relutil.start([self.args.bin, "--join", self.access, "--host-cpus", "2",
                           "--kill-grace", "0.5"], self.tmp,
                          os.path.join(self.tmp, name + ".out"),
                          os.path.join(self.tmp, name + ".err"), self.env)
        p.name = name
        self.agents.append(p)

    def log(self, name):
        with open(os.path.join(self.tmp, name), errors="replace") as f:
            return f.read()[-3000:]

    def hit_one(self, rng):
        live = [a for a in self.agents if a.poll() is None and a not in self.hit]
        victim = rng.choice(live)
        if self.args.mode == "kill":
            relutil.kill_session(victim.pid)
        else:
            for pid, (_, _, sid) in relutil.processes().items():
                if sid == victim.pid:
                    try:
                        os.kill(pid, signal.SIGSTOP)
                    except OSError:
                        pass
            victim.stopped_at = time.monotonic()
        self.hit.append(victim)
        self.start_agent()

    def wake_stopped(self, force=False):
        for a in self.hit:
            due = getattr(a, "stopped_at", None)
            if due is not None and (force or time.monotonic() - due > 1.5 * self.args.node_timeout):
                for pid, (_, _, sid) in relutil.processes().items():
                    if sid == a.pid:
                        try:
                            os.kill(pid, signal.SIGCONT)
                        except OSError:
                            pass
                a.stopped_at = None

    def run(self):
        rng = random.Random(self.args.seed)
        self.start_master()
        for _ in range(self.args.agents):
            self.start_agent()
        for k in range(self.args.kills):
            until = time.monotonic() + rng.uniform(0.2, self.args.gap)
            while time.monotonic() < until:
                self.wake_stopped()
                time.sleep(0.02)
            if self.master.poll() is not None:
                self.problems.append("the workflow ended after %d of %d hits: too short"
                                     % (k, self.args.kills))
                break
            self.hit_one(rng)
        deadline = time.monotonic() + self.args.timeout
        while self.master.poll() is None and time.monotonic() < deadline:
            self.wake_stopped()
            time.sleep(0.05)
        self.wake_stopped(force=True)
        if self.master.poll() is None:
            relutil.kill_session(self.master.pid)
            self.problems.append("the master did not end within %d s" % self.args.timeout)
        for a in self.agents:
            try:
                a.wait(timeout=30)
            except Exception:
                self.problems.append("%s did not exit" % a.name)

    def check(self):
        p = self.problems
        if self.master.returncode != 0:
            p.append("master exit %s:\n%s" % (self.master.returncode, self.log("master.err")))
        done = []
        with open(self.dag + ".rescue") as f:
            for line in f:
                if line.startswith("DONE "):
                    done.append(line.split()[1])
                elif line.strip() and not line.startswith("#"):
                    p.append("rescue log line %r" % line)
        twice = sorted({n for n in done if done.count(n) > 1})
        missing = sorted(set(self.names) - set(done))
        if twice:
            p.append("DONE twice: %s" % twice[:10])
        if missing:
            p.append("%d tasks never DONE, e.g. %s" % (len(missing), missing[:5]))
        records = {}
        with open(os.path.join(self.tmp, "out.txt"), errors="replace") as f:
            for line in f:
                m = re.match(r"\[cluster-task (?:id=[^,]*, )?name=([^,]+),.*status=(-?\d+)", line)
                if m:
                    records.setdefault(m.group(1), []).append(int(m.group(2)))
        bad = sorted(n for n in self.names if records.get(n) != [0])
        if bad:
            p.append("%d tasks without exactly one record of status 0, e.g. %s"
                     % (len(bad), ["%s %s" % (n, records.get(n)) for n in bad[:5]]))
        with open(os.path.join(self.tmp, "s.json")) as f:
            s = json.load(f)
        mem = s.get("membership", {})
        hits = len(self.hit)
        if s.get("failed") != 0 or mem.get("nodes_lost") != hits or \
                mem.get("nodes_joined") != self.args.agents + hits:
            p.append("summary failed=%s membership=%s, expected 0 failed, %d lost, %d joined"
                     % (s.get("failed"), mem, hits, self.args.agents + hits))
        for a in self.agents:
            want = (1 if self.args.mode == "stop" else None) if a in self.hit else 0
            if want is not None and a.returncode != want:
                p.append("%s exit %s, expected %s:\n%s" % (a.name, a.returncode, want,
                                                        self.log(a.name + ".err")))
        sids = [a.pid for a in self.agents] + [self.master.pid]
        for sid in sids:  # an agent's watchdog ends just after it
            relutil.wait_session_gone(sid, 10)
        left = [pid for pid, (st, _, sid) in relutil.processes().items()
                if st != "Z" and sid in sids]
        if left:
            p.append("processes left: %s" % left)
        return mem


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--workloads", required=True)
    ap.add_argument("--workflow", default="epigenomics-ilmn-4seq-50k.dag")
    ap.add_argument("--scale", type=float, default=8.0, help="sleep durations times this")
    ap.add_argument("--agents", type=int, default=4)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--gap", type=float, default=1.2, help="longest wait between hits, s")
    ap.add_argument("--mode", choices=("kill", "stop"), default="kill")
    ap.add_argument("--node-timeout", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=240)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    args.bin, args.workloads = os.path.abspath(args.bin), os.path.abspath(args.workloads)
    tmp = tempfile.mkdtemp(prefix="pmc-join-campaign-")
    c = Campaign(args, tmp)
    t0 = time.monotonic()
    try:
        c.run()
        mem = c.check()
    finally:
        for a in c.agents + [getattr(c, "master", None)]:
            if a is not None and a.poll() is None:
                relutil.kill_session(a.pid)
    print("join campaign (%s): %d agents, %d hits, %.0f s; membership %s"
          % (args.mode, args.agents, len(c.hit), time.monotonic() - t0, json.dumps(mem)))
    if c.problems:
        print("FAILED: %d problem(s):\n  - %s\n(files kept in %s)"
              % (len(c.problems), "\n  - ".join(c.problems), tmp))
        return 1
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
