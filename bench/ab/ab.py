#!/usr/bin/env python3
"""bench/ab/ab.py - alternating pairs of two pmc-hybrid binaries, A and B,
on bench/run's spawn, sched and workflow figures (bench/run's own
functions, imported), in one run on one machine.

    bench/ab/ab.py --a ../wt-before/build/pmc-hybrid --b build/pmc-hybrid \
        --bench spawn,sched,wf --pairs 10 --sched-pairs 6 --wf-pairs 8 \
        --dag ../shared/workloads/montage-2mass-05d.dag --json bench/ab/results.json
    bench/ab/ab.py --analyze bench/ab/results.json

Both binaries are copied first (a rebuild meanwhile cannot change what is
measured); the helpers (pmc-gendag, spawn_ceiling, dag_ceiling) come from
--build-dir.  Pair i runs A then B, or B then A in every other pair, so
that a load that comes and goes on the machine falls on both sides alike.

spawn: N /bin/true, --host-cpus nproc, each engine run just after
bench/spawn_ceiling -s nproc (bench/run's ceiling on 2 CPUs; --both-ceilings
adds the one-spawner ceiling and takes the faster by median, as bench/run);
the figure is the run's throughput over its ceiling.
sched: --null-executor on pmc-gendag's layered DAG of --sched-tasks tasks;
the figure is the engine's Throughput (tasks / wall after the parse).
wf: --dag with --host-cpus --slots; the figure is dag_ceiling's makespan
over the engine's (each run just after dag_ceiling); makespans recorded.

Per pair, the difference is B's figure over A's, less 1, in % (> 0: B is
better).  The JSON is written after every pair.  Python 3 stdlib only.
"""

import argparse
import importlib.machinery
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))


def load_bench_run():
    path = os.path.join(REPO, "bench", "run")
    loader = importlib.machinery.SourceFileLoader("bench_run", path)
    spec = importlib.util.spec_from_loader("bench_run", loader)
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.join(REPO, "bench"))
    loader.exec_module(mod)
    return mod


def busy_jiffies():
    """Jiffies the whole machine spent running so far (/proc/stat)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[0] + v[1] + v[2] + v[5] + v[6]


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def timed_engine_run(br, ctx, binary, dag, stem, opts):
    """bench/run's engine_run of `binary`, with the CPUs other processes used
    on the machine meanwhile (busy jiffies less this run's CPU, wait4)."""
    tick = os.sysconf("SC_CLK_TCK")
    j0 = busy_jiffies()
    ctx.bin = binary
    r, st, _, d = br.engine_run(ctx, dag, stem, 1, opts)
    foreign = max(0.0, (busy_jiffies() - j0) / tick - r.cpu) / r.wall
    br.cleanup(d)
    return r, st, foreign


def spawn_one(br, ctx, binary, dag, n, p, both):
    single = br.ceiling_run(ctx, n, p, 1) if both else None
    multi = br.ceiling_run(ctx, n, p, p)
    r, st, foreign = timed_engine_run(br, ctx, binary, dag, "spawn",
                                      ["--host-cpus", str(p), "-o", "out.txt", "-e", "err.txt"])
    return {"ceiling_one": single, "ceiling_many": multi, "foreign_cpus": foreign,
            "throughput": st["throughput"], "wall": st["wall"], "process_wall_s": r.wall,
            "cpu_incl_children_s": r.cpu, "agent_us_per_task": st.get("agent_us_per_task")}


def sched_one(br, ctx, binary, dag):
    r, st, foreign = timed_engine_run(br, ctx, binary, dag, "sched", ["--null-executor"])
    return {"throughput": st["throughput"], "wall": st["wall"], "process_wall_s": r.wall,
            "cpu_s": r.cpu, "maxrss_kb": r.maxrss_kb, "tasks_local": st.get("tasks_local"),
            "foreign_cpus": foreign}


def wf_one(br, ctx, binary, dag, slots):
    c = br.run(ctx, [ctx.dag_ceiling, dag, str(slots)], "dagceiling")
    ceil_s = float(br.kv(c.stdout_text())["makespan_s"])
    r, st, foreign = timed_engine_run(br, ctx, binary, dag, "wf",
                                      ["--host-cpus", str(slots), "-o", "out.txt", "-e",
                                       "err.txt"])
    return {"ceiling_makespan_s": ceil_s, "makespan_s": st["makespan"], "wall": st["wall"],
            "process_wall_s": r.wall, "cpu_incl_children_s": r.cpu, "foreign_cpus": foreign}


def ceiling_key(res):
    runs = [x[s] for x in res["pair_runs"] for s in ("a", "b")]
    if any(x["ceiling_one"] is None for x in runs):
        return "ceiling_many"
    one = statistics.median(x["ceiling_one"]["tasks_per_s"] for x in runs)
    many = statistics.median(x["ceiling_many"]["tasks_per_s"] for x in runs)
    return "ceiling_many" if many > one else "ceiling_one"


def figure(bench, run, key="ceiling_many"):
    """One run's figure, higher is better."""
    if bench == "spawn":
        return run["throughput"] / run[key]["tasks_per_s"]
    if bench == "sched":
        return run["throughput"]
    return run["ceiling_makespan_s"] / run["makespan_s"]


def measure(args):
    br = load_bench_run()
    tmp = tempfile.mkdtemp(prefix="pmc-ab-", dir=args.tmpdir)
    ns = argparse.Namespace(build_dir=os.path.abspath(args.build_dir), quick=False,
                            no_probe=True, mpiexec="mpiexec", repeats=None)
    ctx = br.Ctx(ns, tmp)
    os.makedirs(os.path.join(tmp, "bin"))
    bins = {}
    for side, src in (("a", args.a), ("b", args.b)):
        bins[side] = os.path.join(tmp, "bin", f"pmc-hybrid.{side}")
        shutil.copy2(src, bins[side])
    for attr in ("spawn_ceiling", "dag_ceiling", "gendag"):
        dst = os.path.join(tmp, "bin", os.path.basename(getattr(ctx, attr)))
        shutil.copy2(getattr(ctx, attr), dst)
        setattr(ctx, attr, dst)
    p = ctx.nproc
    out = {"a": {"name": args.a_name, "path": os.path.abspath(args.a)},
           "b": {"name": args.b_name, "path": os.path.abspath(args.b)},
           "nproc": p, "engine_opts": ctx.engine_opts, "uptime_start": uptime(),
           "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "benches": {}}

    def save():
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)

    plan = []
    for bench in args.bench:
        if bench == "spawn":
            dag = br.gendag(ctx, "independent", args.tasks)
            plan.append((bench, args.pairs, {"tasks": args.tasks, "host_cpus": p,
                                             "both_ceilings": args.both_ceilings},
                         lambda b, dag=dag: spawn_one(br, ctx, b, dag, args.tasks, p,
                                                      args.both_ceilings)))
        elif bench == "sched":
            dag = br.gendag(ctx, "layered", args.sched_tasks)
            plan.append((bench, args.sched_pairs, {"tasks": args.sched_tasks, "shape": "layered"},
                         lambda b, dag=dag: sched_one(br, ctx, b, dag)))
        else:
            dag = os.path.abspath(args.dag)
            plan.append((bench, args.wf_pairs, {"dag": dag, "host_cpus": args.slots},
                         lambda b, dag=dag: wf_one(br, ctx, b, dag, args.slots)))
    try:
        for bench, pairs, info, one in plan:
            res = out["benches"][bench] = {**info, "pair_runs": []}
            for i in range(pairs):
                order = ["a", "b"] if i % 2 == 0 else ["b", "a"]
                pr = {"pair": i, "order": "".join(order), "loadavg": os.getloadavg()[0]}
                for side in order:
                    pr[side] = one(bins[side])
                res["pair_runs"].append(pr)
                save()
                k = "ceiling_many"
                fa, fb = figure(bench, pr["a"], k), figure(bench, pr["b"], k)
                print(f"{bench} pair {i} ({pr['order']}): {args.a_name} {fa:.4g}, "
                      f"{args.b_name} {fb:.4g}, diff {100 * (fb / fa - 1):+.1f}%, "
                      f"other CPU {max(pr['a']['foreign_cpus'], pr['b']['foreign_cpus']):.2f}",
                      flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out["uptime_end"] = uptime()
    out["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    save()
    analyze(out)


def metrics(bench, key):
    """(name, value of one run, higher is better) of each row of a bench;
    the first is the bench's figure."""
    if bench == "spawn":
        return [("engine/ceiling", lambda r: figure(bench, r, key), True),
                ("CPU ceiling/engine",
                 lambda r: r[key]["cpu_incl_children_s"] / r["cpu_incl_children_s"], True),
                ("engine tasks/s", lambda r: r["throughput"], True)]
    if bench == "sched":
        return [("tasks/s", lambda r: r["throughput"], True),
                ("process CPU s", lambda r: r["cpu_s"], False)]
    return [("ceiling/engine makespan", lambda r: figure(bench, r), True),
            ("makespan s", lambda r: r["makespan_s"], False)]


def foreign(pr):
    """Other processes' CPUs during a pair: the larger of its two runs'."""
    return max(pr["a"]["foreign_cpus"], pr["b"]["foreign_cpus"])


def analyze(out, max_foreign=None):
    """Per bench and row: medians of A's and B's values, and the per-pair
    differences (B over A less 1, %, sign turned so that > 0 is B better):
    median, min, max, and in how many pairs B was better.  max_foreign:
    only the pairs in which other processes used at most that many CPUs."""
    an, bn = out["a"]["name"], out["b"]["name"]
    print(f"{an}: {out['a']['path']}\n{bn}: {out['b']['path']}")
    print(f"start: {out['uptime_start']}\nend:   {out.get('uptime_end')}")
    if max_foreign is not None:
        print(f"only pairs whose runs had other processes' CPUs <= {max_foreign}")
    print(f"{'bench row':34} {'pairs':>5} {'med ' + an:>10} {'med ' + bn:>10} "
          f"{'diff med':>8} {'min':>7} {'max':>7} {bn + ' better':>12}")
    rows = {}
    for bench, res in out["benches"].items():
        prs = [x for x in res["pair_runs"] if max_foreign is None or foreign(x) <= max_foreign]
        if not prs:
            continue
        key = ceiling_key(res) if bench == "spawn" else None
        for name, val, up in metrics(bench, key):
            va = [val(x["a"]) for x in prs]
            vb = [val(x["b"]) for x in prs]
            d = [100 * ((b / a - 1) if up else (a / b - 1)) for a, b in zip(va, vb)]
            row = {"pairs": len(prs), "a": va, "b": vb, "diff_pct": d,
                   "a_median": statistics.median(va), "b_median": statistics.median(vb),
                   "diff_median": statistics.median(d), "diff_min": min(d), "diff_max": max(d),
                   "b_better": sum(x > 0 for x in d)}
            rows[f"{bench} {name}"] = row
            print(f"{bench + ' ' + name:34} {len(prs):5} {row['a_median']:10.4g} "
                  f"{row['b_median']:10.4g} {row['diff_median']:+7.1f}% {min(d):+6.1f}% "
                  f"{max(d):+6.1f}% {row['b_better']:>8}/{len(d)}")
        if bench == "spawn":
            c = [x[s][key]["tasks_per_s"] for x in prs for s in "ab"]
            fb = [figure(bench, x["b"], key) for x in prs]
            print(f"  ceiling ({key}) median {statistics.median(c):.0f} tasks/s (range "
                  f"{min(c):.0f}-{max(c):.0f}); {bn} engine/ceiling >= 0.95 in "
                  f"{sum(x >= 0.95 for x in fb)}/{len(fb)} pairs")
        oth = [foreign(x) for x in prs]
        print(f"  other processes' CPUs during the pairs: median {statistics.median(oth):.2f}, "
              f"max {max(oth):.2f}; 1-min loadavg at pair start median "
              f"{statistics.median(x['loadavg'] for x in prs):.1f}")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", help="binary A (e.g. before)")
    ap.add_argument("--b", help="binary B (e.g. after)")
    ap.add_argument("--a-name", default="A")
    ap.add_argument("--b-name", default="B")
    ap.add_argument("--bench", default="spawn,sched", help="comma list of spawn, sched, wf")
    ap.add_argument("--pairs", type=int, default=10, help="spawn pairs")
    ap.add_argument("--tasks", type=int, default=10_000, help="spawn tasks")
    ap.add_argument("--both-ceilings", action="store_true")
    ap.add_argument("--sched-pairs", type=int, default=6)
    ap.add_argument("--sched-tasks", type=int, default=1_000_000)
    ap.add_argument("--wf-pairs", type=int, default=8)
    ap.add_argument("--dag", help="wf: the DAG")
    ap.add_argument("--slots", type=int, default=8, help="wf: --host-cpus")
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    ap.add_argument("--tmpdir")
    ap.add_argument("--json", default=os.path.join(HERE, "results.json"))
    ap.add_argument("--analyze", metavar="JSON")
    ap.add_argument("--max-foreign", type=float,
                    help="--analyze: only pairs with at most this many CPUs used by others")
    args = ap.parse_args()
    if args.analyze:
        with open(args.analyze) as f:
            analyze(json.load(f), args.max_foreign)
        return 0
    args.bench = [b.strip() for b in args.bench.split(",") if b.strip()]
    if not args.a or not args.b:
        ap.error("--a and --b are needed")
    if "wf" in args.bench and not args.dag:
        ap.error("--bench wf needs --dag")
    measure(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
