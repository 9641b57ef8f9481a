#!/usr/bin/env python3
"""test_status.py - the progress line, --status and --summary-json (issue
"See the run", docs/status-json.md).

  * status_never_torn: 24 tasks of `sleep 0.25` on 2 CPUs (~3 s) with
    --status and --summary-json; a reader polls the status file every 5 ms
    for the whole run: every read parses as JSON with schema
    "pmc-hybrid-status" version 1, its task counts add up to the DAG's
    tasks, `succeeded` never goes down, at least two distinct rewrites were
    seen while the run went on, the final file says state "succeeded" and
    equals --summary-json's final_tasks, every document's slowest_running
    lists min(10, running) tasks longest first (more than 10 run at some
    point, so the bound is exercised), and the summary equals the
    [cluster-summary] record field by field (tasks, submitted, succeeded,
    failed, extra, slots, cpus, stat, pid).
  * failures_listed: a task that exits 3 (tries 2) and one that succeeds:
    the summary lists the failed task with exit_code 3 and attempts 2, the
    attempts histogram counts one task with 2 attempts and one with 1, and
    the status file's failures list it too.
  * names_that_are_not_utf8: a failed task named "caf\xe9" (Latin-1) is
    listed in --status and --summary-json as "caf\ufffd", and pmc-dag stats
    --json keeps it in the critical path.
  * progress_on_a_terminal: stderr is a pseudo-terminal: "[progress]" lines
    appear, redrawn with "\\r", and the last one shows every task done;
    with --no-progress on the same terminal, none.
  * no_progress_on_a_file: stderr is a file: no "[progress]"; with
    --progress forced, it appears.
  * unwritable_status: --status in a missing directory fails the run before
    any task starts (exit 1, the path in the message, a failed summary);
    --status, --summary-json and -r naming /dev/null are refused ("not a
    regular file") and /dev/null stays a device.
"""

import json
import os
import pty
import select
import stat
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcrun  # noqa: E402

COUNT_KEYS = ("succeeded", "done_before", "failed", "running", "ready", "waiting")


class Poller(threading.Thread):
    """Reads a JSON file every 5 ms until stopped; keeps every distinct
    document and every read that failed to parse."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path = path
        self.docs, self.bad, self.reads = [], [], 0
        self.stop = threading.Event()

    def run(self):
        last = None
        while not self.stop.is_set():
            try:
                with open(self.path) as f:
                    text = f.read()
            except FileNotFoundError:
                time.sleep(0.005)
                continue
            self.reads += 1
            if text != last:
                try:
                    self.docs.append(json.loads(text))
                except ValueError as e:
                    self.bad.append("%s: %r" % (e, text[-80:]))
                last = text
            time.sleep(0.005)


def load_json(path):
    with open(path) as f:
        return json.load(f)


def count_problems(doc, total, where):
    t = doc.get("tasks", {})
    problems = []
    if doc.get("schema") != "pmc-hybrid-status" or doc.get("version") != 1:
        problems.append("%s: schema/version %r/%r" % (where, doc.get("schema"),
                                                        doc.get("version")))
    if t.get("total") != total:
        problems.append("%s: total %r, expected %d" % (where, t.get("total"), total))
    parts = sum(t.get(k, 0) for k in COUNT_KEYS)
    if parts != total:
        problems.append("%s: counts %s add up to %d, not %d" % (where, t, parts, total))
    return problems


def run_on_pty(args, cwd, timeout=60):
    """Run pmc-hybrid with stderr on a pseudo-terminal; returns (exit
    status, stdout, what the terminal received)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([pmcrun.CONFIG.bin] + args, cwd=cwd, env=pmcrun.run_env(),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave,
                            start_new_session=True)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        r, _, _ = select.select([master], [], [], 0.1)
        if r:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    os.close(master)
    try:
        out, _ = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        pmcrun.kill_session(proc)
        out, _ = proc.communicate()
    return proc.returncode, out.decode(), b"".join(chunks).decode("utf-8", "replace")


class Status(pmcrun.TestCase):
    def sleepers(self, n=24, secs=0.25):
        return self.write_dag("s.dag", "\n".join(
            "TASK s%02d /bin/sleep %s" % (i, secs) for i in range(n)))

    def test_status_never_torn(self):
        dag = self.sleepers()
        status, summary = self.path("st.json"), self.path("sum.json")
        poller = Poller(status)
        poller.start()
        res = self.run_pmc(["--host-cpus", "2", "--status", status, "--summary-json", summary,
                            dag])
        time.sleep(0.05)
        poller.stop.set()
        poller.join()
        problems = []
        if res.returncode != 0 or not os.path.exists(status) or not os.path.exists(summary):
            self.check(["exit status %s, expected 0, with both JSON files" % res.returncode], res)
        problems += ["torn or invalid status read: " + b for b in poller.bad]
        running = [d for d in poller.docs if d.get("state") == "running"]
        if len(running) < 2:
            problems.append("%d distinct status documents while running (of %d reads), "
                            "expected at least 2 rewrites" % (len(running), poller.reads))
        last = -1
        busy_lists = 0
        for i, doc in enumerate(poller.docs):
            problems += count_problems(doc, 24, "status #%d" % i)
            slow = doc.get("slowest_running", [])
            secs = [x["seconds"] for x in slow]
            running = doc.get("tasks", {}).get("running", 0)
            if len(slow) != min(10, running) or secs != sorted(secs, reverse=True):
                problems.append("status #%d: slowest_running %s for %d running (want the "
                                "min(10, running) longest, longest first)" % (i, slow, running))
            busy_lists += running > 10
            s = doc.get("tasks", {}).get("succeeded", 0)
            if s < last:
                problems.append("status #%d: succeeded went down from %d to %d" % (i, last, s))
            last = s
        if busy_lists == 0:
            problems.append("no status document had more than 10 tasks running: the bound "
                            "of slowest_running was not exercised")
        final = load_json(status)
        summ = load_json(summary)
        if final.get("state") != "succeeded":
            problems.append("final status state %r" % final.get("state"))
        if final.get("tasks") != summ.get("final_tasks"):
            problems.append("final status tasks %s != summary final_tasks %s"
                            % (final.get("tasks"), summ.get("final_tasks")))
        if final.get("tasks", {}).get("succeeded") != 24:
            problems.append("final status: %s" % final.get("tasks"))
        problems += self.summary_matches_record(summ, res)
        self.check(problems, res)

    def summary_matches_record(self, summ, res):
        if len(res.summaries) != 1:
            return ["%d cluster-summary records" % len(res.summaries)]
        rec, problems = res.summaries[0], []
        for key in ("stat", "tasks", "submitted", "succeeded", "failed", "extra", "slots",
                    "cpus", "pid"):
            if str(summ.get(key)) != str(rec.get(key)):
                problems.append("summary %s=%r, cluster-summary %r" % (key, summ.get(key),
                                                                       rec.get(key)))
        if summ.get("schema") != "pmc-hybrid-summary" or summ.get("version") != 1:
            problems.append("summary schema/version %r/%r" % (summ.get("schema"),
                                                              summ.get("version")))
        if summ.get("exit_status") != res.returncode:
            problems.append("summary exit_status %r, process %r" % (summ.get("exit_status"),
                                                                    res.returncode))
        machine = summ.get("machine", {})
        if not machine.get("nodes") or not machine.get("mpi_library"):
            problems.append("summary machine lacks nodes or mpi_library: %s" % machine)
        return problems

    def test_failures_listed(self):
        dag = self.write_dag("f.dag", """
            TASK bad -t 2 /bin/sh -c "exit 3"
            TASK good /bin/true
        """)
        status, summary = self.path("st.json"), self.path("sum.json")
        res = self.run_pmc(["--host-cpus", "2", "--status", status, "--summary-json", summary,
                            dag])
        if not os.path.exists(status) or not os.path.exists(summary):
            self.check(["a JSON file is missing"], res)
        summ, final = load_json(summary), load_json(status)
        problems = []
        if res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        want = [{"name": "bad", "exit_code": 3, "attempts": 2}]
        if summ.get("failed_tasks") != want:
            problems.append("summary failed_tasks %r, expected %r"
                            % (summ.get("failed_tasks"), want))
        if summ.get("attempts", {}).get("histogram") != {"1": 1, "2": 1}:
            problems.append("attempts histogram %r" % summ.get("attempts"))
        if final.get("failures") != want or final.get("state") != "failed":
            problems.append("status failures %r, state %r" % (final.get("failures"),
                                                              final.get("state")))
        problems += count_problems(final, 2, "final status")
        problems += self.summary_matches_record(summ, res)
        self.check(problems, res)

    def test_names_that_are_not_utf8(self):
        """A failed task whose name is not UTF-8 (a Latin-1 DAG) is listed in
        both files with U+FFFD for its bad byte (it was dropped: jansson
        refuses such strings, so failures_total said 1 and the list was
        empty), and pmc-dag stats --json keeps it in the critical path."""
        dag = self.path("latin1.dag")
        with open(dag, "wb") as f:
            f.write(b"TASK caf\xe9 /bin/false\nTASK next /bin/true\nEDGE caf\xe9 next\n")
        status, summary = self.path("st.json"), self.path("sum.json")
        res = self.run_pmc(["--host-cpus", "2", "--status", status, "--summary-json", summary,
                            dag])
        problems = []
        want = [{"name": "caf\ufffd", "exit_code": 1, "attempts": 1}]
        summ, final = load_json(summary), load_json(status)
        if summ.get("failed_tasks") != want or summ.get("failed_total") != 1:
            problems.append("summary failed_tasks %r" % summ.get("failed_tasks"))
        if final.get("failures") != want:
            problems.append("status failures %r" % final.get("failures"))
        stats = subprocess.run([os.path.join(os.path.dirname(pmcrun.CONFIG.bin), "pmc-dag"),
                                "stats", "--json", dag], capture_output=True, text=True)
        path = json.loads(stats.stdout).get("critical_path", {}).get("path") \
            if stats.returncode == 0 else None
        if path != ["caf\ufffd", "next"]:
            problems.append("pmc-dag stats --json critical path %r (%s)" % (path, stats.stderr))
        self.check(problems, res)

    def test_progress_on_a_terminal(self):
        dag = self.sleepers(8, 0.3)
        rc, out, term = run_on_pty(["--host-cpus", "2", dag], self.tmp)
        problems = []
        if rc != 0:
            problems.append("exit status %s" % rc)
        lines = [p for p in term.split("\r") if p.startswith("[progress]")]
        if len(lines) < 2:
            problems.append("%d progress lines on the terminal: %r" % (len(lines), term[-400:]))
        elif not lines[-1].startswith("[progress] 8/8 done"):
            problems.append("last progress line %r does not show 8/8 done" % lines[-1])
        if "[cluster-summary" not in out:
            problems.append("stdout lacks the summary")
        rc, out, term = run_on_pty(["--no-progress", "--host-cpus", "2", "-s", dag], self.tmp)
        if "[progress]" in term:
            problems.append("--no-progress on a terminal still printed a progress line")
        self.check(problems)

    def test_no_progress_on_a_file(self):
        dag = self.sleepers(8, 0.2)
        res = self.run_pmc(["--host-cpus", "4", dag])
        problems = []
        if "[progress]" in res.stderr:
            problems.append("progress line in stderr that is not a terminal")
        res = self.run_pmc(["--progress", "-s", "--host-cpus", "4", dag])
        if "[progress] 8/8 done" not in res.stderr:
            problems.append("--progress did not print the final progress line")
        self.check(problems, res)

    def test_unwritable_status(self):
        dag = self.write_dag("u.dag", "TASK t /bin/sh -c 'touch %s/ran'" % self.tmp)
        bad = self.path("no/such/dir/st.json")
        res = self.run_pmc(["--status", bad, dag])
        problems = []
        if res.returncode != 1:
            problems.append("exit status %s, expected 1" % res.returncode)
        if bad not in res.stderr:
            problems.append("stderr does not name %s" % bad)
        if os.path.exists(self.path("ran")):
            problems.append("the task ran")
        if not res.summaries or res.summaries[0].get("stat") != "failed":
            problems.append("no failed cluster-summary")
        # files replaced by rename must be regular files: as root, --status
        # /dev/null or -r /dev/null would otherwise swap the device for a file
        for opt in ("--status", "--summary-json", "-r"):
            res = self.run_pmc([opt, "/dev/null", dag])
            if res.returncode != 1 or "/dev/null: not a regular file" not in res.stderr:
                problems.append("%s /dev/null: exit %s, stderr %r"
                                % (opt, res.returncode, res.stderr[-200:]))
            if not stat.S_ISCHR(os.stat("/dev/null").st_mode):
                problems.append("%s /dev/null replaced the device with a file" % opt)
                os.unlink("/dev/null")
                os.mknod("/dev/null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        if os.path.exists(self.path("ran")):
            problems.append("a task ran")
        self.check(problems, res)


if __name__ == "__main__":
    pmcrun.main()
