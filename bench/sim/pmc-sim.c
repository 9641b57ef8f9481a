/* pmc-sim.c - where does the master saturate?  A discrete-event simulation
 * of pmc-hybrid at leadership scale (docs/design.md sections 2 and 8).
 *
 *   pmc-sim --dag FILE [--nodes 1000,4000,16000] [--cores 64]
 *           [--memory-mb 262144] [--latency-us 5] [--time-scale 1000]
 *           [--replicate K | --tasks-per-core 2] [--jitter 0.05] [--seed 1]
 *           [--window 1] [--charge-master] [--result-batch 32]
 *           [--result-delay-us 2000] [--flush-below 1] [--rescue]
 *           [--json PATH] [--timeline PREFIX] [--details] [--tmpdir DIR]
 *           [--keep] [--quick]
 *
 * For each node count N it writes K disjoint jittered copies of FILE
 * (simdag.h; by default K = ceil(tasks-per-core * N * cores / tasks of FILE),
 * about two tasks per core), runs the real master over N virtual nodes
 * (sim.h) and prints one table row: the master's real CPU per task, its
 * utilisation (master CPU seconds per virtual second: on average, and in the
 * busiest --window of virtual time, the initial fill excluded), the messages
 * per virtual second each way (average and busiest window), tasks per TASKS
 * and results per RESULTS message, and the virtual makespan against the
 * DAG's lower bound max(critical path, work / (N * cores)).  Below the table
 * it interpolates (or extrapolates, log-log through the two largest N) the
 * node count at which the peak utilisation reaches 1.0: past it an ideal
 * (zero-time) master would need more than one CPU to keep up in real time.
 * --charge-master makes the master a serial server instead (sim.h), which
 * shows what a saturated master does to the makespan.
 *
 * DAG size per N, with the defaults (2 tasks per 64-core node's core):
 *   montage-2mass-05d (1738 tasks, 4698 edges): N = 1000: 74 copies, 128,612
 *   tasks, 347,652 edges; 4000: 295 copies, 512,710 tasks, 1,385,910 edges;
 *   16000: 1179 copies, 2,049,102 tasks, 5,538,942 edges (~400 MiB RSS).
 * The copy file goes to a fresh directory under --tmpdir ($TMPDIR, /tmp),
 * removed afterwards unless --keep.
 *
 * What-ifs: --result-batch, --result-delay-us and --flush-below change the
 * simulated agents' RESULTS rule (sched/result_batch.h; the engine's: 32,
 * 2000 us, 1); --latency-us the network.  --timeline PREFIX writes PREFIX-N.csv,
 * one line per window/10 of virtual time (master CPU, messages, busy CPUs).
 *
 * --quick is the smoke run for ctest: N = 100 unless --nodes is given.
 * The master's own log is quieted (log level error) and its end-of-run
 * report on stdout is discarded.  Exit status: 0 when every simulated
 * workflow succeeded, 1 otherwise, 2 on bad usage.
 *
 * Single-threaded (the master's rescue writer thread runs only with
 * --rescue).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench/sim/sim.h"
#include "bench/sim/simdag.h"
#include "io/clock.h"
#include "io/log.h"
#include "sched/result_batch.h"

#define MAX_POINTS 32

struct options {
    const char *dag;
    int nodes[MAX_POINTS];
    int npoints;
    uint32_t cores;
    uint64_t memory_mb;
    double latency_us, time_scale, tasks_per_core, jitter, window;
    uint32_t replicate, result_batch, flush_below;
    double result_delay_us;
    bool flush_below_given, nodes_given;
    uint64_t seed;
    bool charge_master, rescue, keep, quick, details;
    const char *json, *tmpdir, *timeline;
};

struct point {
    int nodes;
    struct simdag_info dag;
    double bound, gen_wall;
    struct sim_report rep;
};

static void usage(FILE *f)
{
    fputs("usage: pmc-sim --dag FILE [--nodes N[,N...]] [--cores C] [--memory-mb MB]\n"
          "               [--latency-us US] [--time-scale F] [--replicate K | --tasks-per-core F]\n"
          "               [--jitter J] [--seed S] [--window SECONDS] [--charge-master] [--rescue]\n"
          "               [--result-batch N] [--result-delay-us US] [--flush-below N]\n"
          "               [--json PATH] [--timeline PREFIX] [--details] [--tmpdir DIR] [--keep]\n"
          "               [--quick]\n",
          f);
}

static int bad(const char *opt, const char *what)
{
    fprintf(stderr, "pmc-sim: %s: %s\n", opt, what);
    return -1;
}

static int parse_double(const char *opt, const char *s, double lo, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo) || !isfinite(v))
        return bad(opt, "not a number in range");
    *out = v;
    return 0;
}

static int parse_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || *s == '-' || v < lo || v > hi)
        return bad(opt, "not an integer in range");
    *out = v;
    return 0;
}

static int parse_u32(const char *opt, const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
    uint64_t v;
    if (parse_u64(opt, s, lo, hi, &v) < 0)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static int parse_nodes(struct options *o, const char *s)
{
    char *copy = strdup(s), *save = NULL;
    int rc = copy ? 0 : -1;
    o->npoints = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        uint32_t v;
        if (o->npoints == MAX_POINTS)
            rc = bad("--nodes", "too many node counts");
        else if ((rc = parse_u32("--nodes", tok, 1, 1000000, &v)) == 0)
            o->nodes[o->npoints++] = (int)v;
    }
    free(copy);
    return rc == 0 && o->npoints == 0 ? bad("--nodes", "empty list") : rc;
}

static const struct option longopts[] = {{"dag", required_argument, NULL, 'd'},
                                         {"nodes", required_argument, NULL, 'n'},
                                         {"cores", required_argument, NULL, 'c'},
                                         {"memory-mb", required_argument, NULL, 'M'},
                                         {"latency-us", required_argument, NULL, 'l'},
                                         {"time-scale", required_argument, NULL, 's'},
                                         {"replicate", required_argument, NULL, 'r'},
                                         {"tasks-per-core", required_argument, NULL, 'T'},
                                         {"jitter", required_argument, NULL, 'j'},
                                         {"seed", required_argument, NULL, 'S'},
                                         {"window", required_argument, NULL, 'w'},
                                         {"charge-master", no_argument, NULL, 'C'},
                                         {"result-batch", required_argument, NULL, 'b'},
                                         {"result-delay-us", required_argument, NULL, 'D'},
                                         {"flush-below", required_argument, NULL, 'F'},
                                         {"rescue", no_argument, NULL, 'R'},
                                         {"json", required_argument, NULL, 'J'},
                                         {"timeline", required_argument, NULL, 'L'},
                                         {"details", no_argument, NULL, 'v'},
                                         {"tmpdir", required_argument, NULL, 't'},
                                         {"keep", no_argument, NULL, 'k'},
                                         {"quick", no_argument, NULL, 'q'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};

/* An option taking a number; 1 when c is not one of them. */
static int parse_number_option(struct options *o, int c, const char *arg)
{
    switch (c) {
    case 'c':
        return parse_u32("--cores", arg, 1, 1u << 20, &o->cores);
    case 'M':
        return parse_u64("--memory-mb", arg, 1, UINT64_MAX / 4, &o->memory_mb);
    case 'l':
        return parse_double("--latency-us", arg, 0, &o->latency_us);
    case 's':
        return parse_double("--time-scale", arg, 0, &o->time_scale);
    case 'r':
        return parse_u32("--replicate", arg, 1, 1u << 30, &o->replicate);
    case 'T':
        return parse_double("--tasks-per-core", arg, 0, &o->tasks_per_core);
    case 'j':
        return parse_double("--jitter", arg, 0, &o->jitter);
    case 'S':
        return parse_u64("--seed", arg, 0, UINT64_MAX, &o->seed);
    case 'w':
        return parse_double("--window", arg, 1e-3, &o->window);
    case 'b':
        return parse_u32("--result-batch", arg, 1, 1u << 30, &o->result_batch);
    case 'D':
        return parse_double("--result-delay-us", arg, 0, &o->result_delay_us);
    case 'F':
        o->flush_below_given = true;
        return parse_u32("--flush-below", arg, 0, 1u << 30, &o->flush_below);
    default:
        return 1;
    }
}

/* Any other option: 0, or -1 (usage printed). */
static int parse_other_option(struct options *o, int c, const char *arg)
{
    switch (c) {
    case 'd':
        o->dag = arg;
        return 0;
    case 'n':
        o->nodes_given = true;
        return parse_nodes(o, arg);
    case 'C':
        o->charge_master = true;
        return 0;
    case 'R':
        o->rescue = true;
        return 0;
    case 'J':
        o->json = arg;
        return 0;
    case 'L':
        o->timeline = arg;
        return 0;
    case 'v':
        o->details = true;
        return 0;
    case 't':
        o->tmpdir = arg;
        return 0;
    case 'k':
        o->keep = true;
        return 0;
    case 'q':
        o->quick = true;
        return 0;
    case 'h':
        usage(stdout);
        exit(0);
    default:
        usage(stderr);
        return -1;
    }
}

/* Defaults that depend on other options, then the checks. */
static int finish_options(struct options *o)
{
    if (o->quick && !o->nodes_given) {
        o->nodes[0] = 100;
        o->npoints = 1;
    }
    if (!o->flush_below_given)
        o->flush_below = result_batch_defaults().send_below; /* at once when nothing waits */
    if (!o->tmpdir)
        o->tmpdir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    if (!o->dag)
        return bad("--dag", "required (a DAG file, e.g. a workload or pmc-gendag output)");
    if (o->jitter >= 1)
        return bad("--jitter", "must be below 1");
    return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
    *o = (struct options){.nodes = {1000, 4000, 16000},
                          .npoints = 3,
                          .cores = 64,
                          .memory_mb = 262144,
                          .latency_us = 5,
                          .time_scale = 1000,
                          .tasks_per_core = 2,
                          .jitter = 0.05,
                          .window = 1,
                          .seed = 1,
                          .result_batch = RESULT_BATCH,
                          .result_delay_us = RESULT_DELAY_MS * 1000.0};
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int rc = parse_number_option(o, c, optarg);
        if (rc == 1)
            rc = parse_other_option(o, c, optarg);
        if (rc < 0)
            return -1;
    }
    if (optind < argc)
        return bad(argv[optind], "unexpected argument");
    return finish_options(o);
}

static uint32_t copies_for(const struct options *o, const struct simdag_info *base, int nodes)
{
    if (o->replicate)
        return o->replicate;
    double k = ceil(o->tasks_per_core * nodes * (double)o->cores / base->base_tasks);
    return k < 1 ? 1 : k > 1e9 ? 1000000000u : (uint32_t)k;
}

/* Remove what a run left in dir (the copy DAG, its rescue log) and dir. */
static void cleanup_dir(const char *dir, const char *dag)
{
    char path[4300];
    unlink(dag);
    snprintf(path, sizeof path, "%s.rescue", dag);
    unlink(path);
    rmdir(dir);
}

/* Simulate the copy DAG at dag over nodes; p->rep filled.  0 or -1 (err). */
static int simulate(const struct options *o, const char *dag, int nodes, struct point *p,
                    struct pmc_error *err)
{
    char timeline[4200];
    snprintf(timeline, sizeof timeline, "%s-%d.csv", o->timeline ? o->timeline : "", nodes);
    struct sim_config sc = {.dag_path = dag,
                            .nodes = nodes,
                            .cores = o->cores,
                            .memory_mb = o->memory_mb,
                            .latency = o->latency_us * 1e-6,
                            .time_scale = o->time_scale,
                            .window = o->window,
                            .charge_master = o->charge_master,
                            .rescue = o->rescue,
                            .timeline = o->timeline ? timeline : NULL,
                            .batching = result_batch_defaults()};
    sc.batching.batch = o->result_batch;
    sc.batching.delay = o->result_delay_us * 1e-6;
    sc.batching.send_below = o->flush_below;
    double cores = (double)nodes * o->cores;
    p->bound = fmax(p->dag.critical_path, p->dag.work / cores) * o->time_scale;
    return sim_run(&sc, &p->rep, err);
}

/* One node count: write the copy DAG into a temporary directory, simulate,
 * clean up.  0, or -1 with the reason on stderr. */
static int run_point(const struct options *o, const struct simdag_info *base, int nodes,
                     struct point *p)
{
    char dir[4096], dag[4200];
    struct pmc_error err;
    snprintf(dir, sizeof dir, "%s/pmc-sim.XXXXXX", o->tmpdir);
    if (!mkdtemp(dir)) {
        fprintf(stderr, "pmc-sim: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    snprintf(dag, sizeof dag, "%s/sim.dag", dir);
    p->nodes = nodes;
    double t0 = pmc_mono_s();
    int rc =
        simdag_write(o->dag, dag, copies_for(o, base, nodes), o->jitter, o->seed, &p->dag, &err);
    p->gen_wall = pmc_mono_s() - t0;
    if (rc == 0)
        rc = simulate(o, dag, nodes, p, &err);
    if (rc < 0)
        fprintf(stderr, "pmc-sim: %d nodes: %s\n", nodes, err.text);
    if (!o->keep)
        cleanup_dir(dir, dag);
    else
        fprintf(stderr, "pmc-sim: kept %s\n", dag);
    return rc;
}

static double per(double a, double b)
{
    return b > 0 ? a / b : 0;
}

static void print_header(const struct options *o, const struct simdag_info *base)
{
    const char *name = strrchr(o->dag, '/');
    printf("pmc-sim: %s (%u tasks, %u edges, critical path %.1f s, work %.0f CPU-s) x copies;\n"
           "         %u cores/node, latency %g us, time scale %g, jitter %g, window %g s, %s "
           "master;\n"
           "         RESULTS flushed at %u results, %g us, or queue < %u tasks\n",
           name ? name + 1 : o->dag, base->base_tasks, base->base_edges,
           base->critical_path * o->time_scale, base->work * o->time_scale, o->cores, o->latency_us,
           o->time_scale, o->jitter, o->window,
           o->charge_master ? "charged (serial)" : "ideal (zero-time)", o->result_batch,
           o->result_delay_us, o->flush_below);
    printf("%6s %8s %6s %9s %8s %8s %9s %8s %9s %9s %9s %9s %7s %7s %9s %8s %6s %7s\n", "nodes",
           "cores", "copies", "tasks", "us/task", "util", "util", "fill", "TASKS/s", "TASKS/s",
           "RESLT/s", "RESLT/s", "tasks/", "rslts/", "makespan", "bound", "ratio", "wall");
    printf("%6s %8s %6s %9s %8s %8s %9s %8s %9s %9s %9s %9s %7s %7s %9s %8s %6s %7s\n", "", "", "",
           "", "master", "avg", "peak", "ms", "avg", "peak", "avg", "peak", "TASKS", "RESLTS", "s",
           "s", "", "s");
}

static void print_row(const struct options *o, const struct point *p)
{
    const struct sim_report *r = &p->rep;
    printf("%6d %8llu %6u %9llu %8.2f %8.3f %9.3f %8.1f %9.0f %9.0f %9.0f %9.0f %7.1f %7.2f "
           "%9.1f %8.1f %6.3f %7.1f%s\n",
           p->nodes, (unsigned long long)p->nodes * o->cores, p->dag.copies,
           (unsigned long long)r->tasks, 1e6 * per(r->cpu_steps, (double)r->tasks), r->util_avg,
           r->util_peak, 1e3 * r->cpu_first_step, per((double)r->task_msgs, r->makespan),
           r->peak_msgs_to_nodes, per((double)r->result_msgs, r->makespan), r->peak_msgs_to_master,
           per((double)r->tasks_sent, (double)r->task_msgs),
           per((double)r->results, (double)r->result_msgs), r->makespan, p->bound,
           per(r->makespan, p->bound), r->wall + p->gen_wall, r->exit_status ? "  FAILED" : "");
}

static void print_details(const struct point *pts, int n)
{
    printf("\n%6s %9s %10s %9s %9s %9s %9s %9s %9s %9s %9s\n", "nodes", "edges", "steps", "mails/",
           "begin", "end", "max step", "peak at", "busy at", "busy", "DAG gen");
    printf("%6s %9s %10s %9s %9s %9s %9s %9s %9s %9s %9s\n", "", "", "", "step", "ms", "ms", "ms",
           "s", "peak", "max", "s");
    for (int i = 0; i < n; i++) {
        const struct sim_report *r = &pts[i].rep;
        printf("%6d %9llu %10llu %9.2f %9.1f %9.1f %9.3f %9.1f %9.3f %9.3f %9.1f\n", pts[i].nodes,
               (unsigned long long)pts[i].dag.edges, (unsigned long long)r->steps,
               per((double)r->mails_to_master, (double)r->steps), 1e3 * r->cpu_begin,
               1e3 * r->cpu_end, 1e3 * r->cpu_step_max, r->util_peak_at, r->busy_at_peak,
               r->busy_max, pts[i].gen_wall);
    }
}

/* Node count at which util_peak reaches 1: interpolated log-log between the
 * bracketing points, else extrapolated through the two largest.  0 when
 * there is no upward trend.  *how says which. */
static double saturation(const struct point *pts, int n, const char **how, double *slope)
{
    *how = "no trend";
    *slope = 0;
    if (n < 2)
        return 0;
    int hi = n - 1;
    for (int i = 1; i < n; i++)
        if (pts[i].rep.util_peak >= 1.0) {
            hi = i;
            break;
        }
    const struct point *a = &pts[hi - 1], *b = &pts[hi];
    if (a->rep.util_peak <= 0 || b->rep.util_peak <= 0 || a->nodes == b->nodes)
        return 0;
    *slope = log(b->rep.util_peak / a->rep.util_peak) / log((double)b->nodes / a->nodes);
    if (*slope <= 0)
        return 0;
    *how = b->rep.util_peak < 1.0    ? "extrapolated"
           : a->rep.util_peak >= 1.0 ? "below the range"
                                     : "interpolated";
    return a->nodes * pow(1.0 / a->rep.util_peak, 1.0 / *slope);
}

static void print_saturation(const struct options *o, const struct point *pts, int n)
{
    const char *how;
    double slope, sat = saturation(pts, n, &how, &slope);
    if (o->charge_master)
        printf("\nmaster saturation: not estimated with --charge-master (a serial master's "
               "utilisation stops at 1.0; compare the makespan ratio instead)\n");
    else if (sat > 0)
        printf("\nmaster saturation (peak utilisation 1.0): ~%.0f nodes (%s; peak utilisation "
               "grows as N^%.2f)\n",
               sat, how, slope);
    else if (n >= 2)
        printf("\nmaster saturation: no upward trend of the peak utilisation in this range\n");
}

static void json_point(FILE *f, const struct options *o, const struct point *p, bool last)
{
    const struct sim_report *r = &p->rep;
    fprintf(f,
            "    {\"nodes\": %d, \"cores\": %llu, \"copies\": %u, \"tasks\": %llu, \"edges\": %llu,"
            " \"us_per_task\": %.4f, \"util_avg\": %.5f, \"util_peak\": %.5f,"
            " \"util_peak_at_s\": %.3f, \"fill_ms\": %.3f, \"max_step_ms\": %.4f,"
            " \"steps\": %llu, \"task_msgs\": %llu, \"tasks_sent\": %llu,"
            " \"result_msgs\": %llu, \"results\": %llu, \"bytes_to_nodes\": %llu,"
            " \"bytes_to_master\": %llu, \"task_msgs_per_s\": %.2f,"
            " \"task_msgs_per_s_peak\": %.2f, \"result_msgs_per_s\": %.2f,"
            " \"result_msgs_per_s_peak\": %.2f, \"tasks_per_task_msg\": %.3f,"
            " \"results_per_result_msg\": %.3f, \"makespan_s\": %.3f, \"bound_s\": %.3f,"
            " \"critical_path_s\": %.3f, \"work_cpu_s\": %.1f, \"cpu_begin_s\": %.6f,"
            " \"cpu_end_s\": %.6f, \"cpu_steps_s\": %.6f, \"busy_at_peak\": %.4f,"
            " \"busy_max\": %.4f, \"clock_cost_ns\": %.1f, \"wall_s\": %.3f,"
            " \"exit_status\": %d}%s\n",
            p->nodes, (unsigned long long)p->nodes * o->cores, p->dag.copies,
            (unsigned long long)r->tasks, (unsigned long long)p->dag.edges,
            1e6 * per(r->cpu_steps, (double)r->tasks), r->util_avg, r->util_peak, r->util_peak_at,
            1e3 * r->cpu_first_step, 1e3 * r->cpu_step_max, (unsigned long long)r->steps,
            (unsigned long long)r->task_msgs, (unsigned long long)r->tasks_sent,
            (unsigned long long)r->result_msgs, (unsigned long long)r->results,
            (unsigned long long)r->bytes_to_nodes, (unsigned long long)r->bytes_to_master,
            per((double)r->task_msgs, r->makespan), r->peak_msgs_to_nodes,
            per((double)r->result_msgs, r->makespan), r->peak_msgs_to_master,
            per((double)r->tasks_sent, (double)r->task_msgs),
            per((double)r->results, (double)r->result_msgs), r->makespan, p->bound,
            p->dag.critical_path * o->time_scale, p->dag.work * o->time_scale, r->cpu_begin,
            r->cpu_end, r->cpu_steps, r->busy_at_peak, r->busy_max, 1e9 * r->clock_cost,
            r->wall + p->gen_wall, r->exit_status, last ? "" : ",");
}

static int write_json(const struct options *o, const struct point *pts, int n)
{
    FILE *f = fopen(o->json, "w");
    if (!f) {
        fprintf(stderr, "pmc-sim: %s: %s\n", o->json, strerror(errno));
        return -1;
    }
    const char *how;
    double slope, sat = saturation(pts, n, &how, &slope);
    if (o->charge_master) {
        sat = 0;
        how = "not estimated (charged master)";
    }
    fprintf(f, "{\n  \"dag\": \"%s\", \"cores_per_node\": %u, \"latency_us\": %g,\n", o->dag,
            o->cores, o->latency_us);
    fprintf(f, "  \"time_scale\": %g, \"jitter\": %g, \"window_s\": %g, \"master\": \"%s\",\n",
            o->time_scale, o->jitter, o->window, o->charge_master ? "charged" : "ideal");
    fprintf(f, "  \"saturation_nodes\": %.0f, \"saturation_estimate\": \"%s\",", sat, how);
    fprintf(f, " \"util_peak_exponent\": %.4f,\n  \"points\": [\n", slope);
    for (int i = 0; i < n; i++)
        json_point(f, o, &pts[i], i == n - 1);
    fprintf(f, "  ]\n}\n");
    if (fclose(f) != 0) {
        fprintf(stderr, "pmc-sim: %s: %s\n", o->json, strerror(errno));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct options o;
    struct simdag_info base;
    struct pmc_error err;
    static struct point pts[MAX_POINTS];
    if (parse_options(argc, argv, &o) < 0)
        return 2;
    log_set_level(PMC_LOG_ERROR);
    if (simdag_measure(o.dag, &base, &err) < 0) {
        fprintf(stderr, "pmc-sim: %s\n", err.text);
        return 1;
    }
    print_header(&o, &base);
    int done = 0, ok = 0;
    for (int i = 0; i < o.npoints; i++) {
        if (run_point(&o, &base, o.nodes[i], &pts[done]) < 0)
            continue;
        print_row(&o, &pts[done]);
        fflush(stdout);
        ok += pts[done++].rep.exit_status == 0;
    }
    if (o.details)
        print_details(pts, done);
    print_saturation(&o, pts, done);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("pmc-sim: %d of %d simulations succeeded; peak RSS %.0f MiB\n", ok, o.npoints,
           ru.ru_maxrss / 1024.0);
    int rc = ok == o.npoints ? 0 : 1;
    if (o.json && write_json(&o, pts, done) < 0)
        rc = 1;
    return rc;
}
