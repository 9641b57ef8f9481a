/* parse_bench.c - time and memory of dagfile_load() alone.
 *
 *   parse_bench [--arrays] DAGFILE
 *
 * Loads DAGFILE once with the engine's parser (io/dagfile.h, linked from
 * pmccore exactly as pmc-hybrid links it, jemalloc included when the engine
 * uses it) and prints one line of key=value pairs:
 *
 *   tasks=N edges=E wall_s=W cpu_s=C user_s=U sys_s=S ns_per_task=X
 *   maxrss_kb=R baseline_kb=B
 *
 * wall_s and cpu_s (user + sys of this process, from getrusage) cover
 * dagfile_load() only: the finished DAG is neither walked nor freed.
 * maxrss_kb is the process's peak resident set (ru_maxrss) right after the
 * load, baseline_kb the same just before it (libraries, no DAG), so the
 * parse's own peak is about maxrss_kb - baseline_kb.  One load per process:
 * ru_maxrss never goes down, so bench/run starts a fresh process for every
 * repeat.  Exit status 1 (with the parser's message) when the load fails.
 * --arrays loads with task arrays accepted (dagfile_load_opts(); the
 * engine refuses them for now) and adds arrays=A instances=I to the line.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "io/clock.h"
#include "io/dag.h"
#include "io/dagfile.h"

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
    struct dagfile_options opts = {.arrays = argc == 3 && strcmp(argv[1], "--arrays") == 0};
    if (argc != 2 + opts.arrays) {
        fprintf(stderr, "usage: parse_bench [--arrays] DAGFILE\n");
        return 2;
    }
    const char *path = argv[argc - 1];
    struct rusage r0, r1;
    struct pmc_error err;
    getrusage(RUSAGE_SELF, &r0);
    double t0 = pmc_mono_s();
    struct dag *d = dagfile_load_opts(path, &opts, &err);
    double t1 = pmc_mono_s();
    getrusage(RUSAGE_SELF, &r1);
    if (!d) {
        fprintf(stderr, "parse_bench: %s\n", err.text);
        return 1;
    }
    double user = tv_s(r1.ru_utime) - tv_s(r0.ru_utime);
    double sys = tv_s(r1.ru_stime) - tv_s(r0.ru_stime);
    printf("tasks=%u edges=%u wall_s=%.6f cpu_s=%.6f user_s=%.6f sys_s=%.6f "
           "ns_per_task=%.1f maxrss_kb=%ld baseline_kb=%ld",
           d->ntasks, d->nedges, t1 - t0, user + sys, user, sys,
           (t1 - t0) * 1e9 / (d->ntasks ? d->ntasks : 1), r1.ru_maxrss, r0.ru_maxrss);
    if (opts.arrays)
        printf(" arrays=%u instances=%" PRIu64, d->narrays, d->ninstances);
    putchar('\n');
    return 0; /* the DAG is left to the exit: freeing it is not the parse */
}
