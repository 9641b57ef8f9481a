/* simdag.c - K jittered copies of a DAG and their lower bound; see simdag.h.
 *
 * The copy file is formatted with stdio into a 1 MiB buffer; per copy the
 * tasks come first, then the copy's edges (the grammar wants a task before
 * any edge naming it).  The critical path is computed per copy over the base
 * DAG's topological order (Kahn), O(copies * (tasks + edges)), with the
 * durations read back from the text just written, so the bound and the
 * simulated nodes see the very same numbers.
 */
#include "bench/sim/simdag.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/dag.h"
#include "io/dagfile.h"

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Uniform in [-1, 1) from (seed, copy, task). */
static double unit_noise(uint64_t seed, uint32_t copy, uint32_t t)
{
    uint64_t h = splitmix64(seed ^ splitmix64(((uint64_t)copy << 32) | t));
    return (double)(h >> 11) / (double)(1ull << 52) - 1.0;
}

static bool is_sleep(const char *exe)
{
    const char *slash = strrchr(exe, '/');
    return strcmp(slash ? slash + 1 : exe, "sleep") == 0;
}

double simdag_task_duration(const char *argv, uint32_t argc)
{
    if (argc < 2 || !is_sleep(argv))
        return 0.0;
    double d = strtod(argv + strlen(argv) + 1, NULL);
    return d > 0 ? d : 0.0;
}

/* Longest path through d with the given durations; est[] is scratch. */
static double critical_path(const struct dag *d, const uint32_t *order, const double *dur,
                            double *est)
{
    double cp = 0;
    memset(est, 0, sizeof *est * d->ntasks);
    for (uint32_t i = 0; i < d->ntasks; i++) {
        uint32_t t = order[i];
        double fin = est[t] + dur[t];
        if (fin > cp)
            cp = fin;
        for (uint32_t e = d->child_first[t]; e < d->child_first[t + 1]; e++)
            if (est[d->children[e]] < fin)
                est[d->children[e]] = fin;
    }
    return cp;
}

/* Write s with the DAG grammar's quoting: \ before blanks, quotes and \. */
static void put_word(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (strchr(" \t'\"\\#", *s))
            putc('\\', f);
        putc(*s, f);
    }
}

/* One TASK record of copy k; returns the duration written. */
static double write_task(FILE *f, const struct dag *d, dag_task_t t, uint32_t k, double jitter,
                         uint64_t seed)
{
    const char *argv = d->arena + d->argv[t];
    if (d->pegasus_id[t] != DAG_NO_STRING)
        fprintf(f, "#@ %s sim sim\n", d->arena + d->pegasus_id[t]);
    fprintf(f, "TASK %s_c%u -c %u", dag_task_name(d, t), k, d->cpus[t]);
    if (d->memory_mb[t])
        fprintf(f, " -m %u", d->memory_mb[t]);
    if (d->priority[t])
        fprintf(f, " -p %d", d->priority[t]);
    if (d->tries[t])
        fprintf(f, " -t %u", d->tries[t]);
    double dur = simdag_task_duration(argv, d->argc[t]);
    const char *a = argv;
    for (uint32_t i = 0; i < d->argc[t]; i++, a += strlen(a) + 1) {
        putc(' ', f);
        if (i == 1 && is_sleep(argv)) {
            char num[64];
            snprintf(num, sizeof num, "%.7g", dur * (1.0 + jitter * unit_noise(seed, k, t)));
            dur = strtod(num, NULL);
            fputs(num, f);
        } else {
            put_word(f, a);
        }
    }
    putc('\n', f);
    return dur;
}

static void write_edges(FILE *f, const struct dag *d, uint32_t k)
{
    for (dag_task_t t = 0; t < d->ntasks; t++)
        for (uint32_t e = d->child_first[t]; e < d->child_first[t + 1]; e++)
            fprintf(f, "EDGE %s_c%u %s_c%u\n", dag_task_name(d, t), k,
                    dag_task_name(d, d->children[e]), k);
}

/* Write the copies and fill the measures; -1 on ENOMEM. */
static int write_copies(FILE *f, const struct dag *d, uint32_t copies, double jitter, uint64_t seed,
                        struct simdag_info *info)
{
    size_t n = d->ntasks;
    uint32_t *order = malloc(sizeof *order * n);
    double *dur = malloc(sizeof *dur * n), *est = malloc(sizeof *est * n);
    int rc = -1;
    if (!order || !dur || !est || dag_topo_order(d, order) < 0)
        goto out;
    fprintf(f, "# pmc-sim: %u copies of %u tasks, jitter %g, seed %llu\n", copies, d->ntasks,
            jitter, (unsigned long long)seed);
    for (uint32_t k = 0; k < copies; k++) {
        for (dag_task_t t = 0; t < d->ntasks; t++) {
            dur[t] = write_task(f, d, t, k, jitter, seed);
            info->work += dur[t] * d->cpus[t];
            if (dur[t] > info->max_duration)
                info->max_duration = dur[t];
        }
        write_edges(f, d, k);
        double cp = critical_path(d, order, dur, est);
        if (cp > info->critical_path)
            info->critical_path = cp;
    }
    rc = 0;
out:
    free(order);
    free(dur);
    free(est);
    return rc;
}

int simdag_write(const char *base_path, const char *out_path, uint32_t copies, double jitter,
                 uint64_t seed, struct simdag_info *info, struct pmc_error *err)
{
    memset(info, 0, sizeof *info);
    struct dag *d = dagfile_load(base_path, err);
    if (!d)
        return -1;
    FILE *f = fopen(out_path, "w");
    if (!f) {
        pmc_errorf(err, "%s: %s", out_path, strerror(errno));
        dag_destroy(d);
        return -1;
    }
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    int rc = write_copies(f, d, copies, jitter, seed, info);
    if (rc < 0)
        pmc_errorf(err, "%s: out of memory", out_path);
    if (fclose(f) != 0 && rc == 0)
        rc = pmc_errorf(err, "%s: %s", out_path, strerror(errno));
    if (rc < 0)
        unlink(out_path);
    info->base_tasks = d->ntasks;
    info->base_edges = d->nedges;
    info->copies = copies;
    info->tasks = (uint64_t)copies * d->ntasks;
    info->edges = (uint64_t)copies * d->nedges;
    dag_destroy(d);
    return rc;
}

int simdag_measure(const char *path, struct simdag_info *info, struct pmc_error *err)
{
    memset(info, 0, sizeof *info);
    struct dag *d = dagfile_load(path, err);
    if (!d)
        return -1;
    size_t n = d->ntasks;
    uint32_t *order = malloc(sizeof *order * n);
    double *dur = malloc(sizeof *dur * n), *est = malloc(sizeof *est * n);
    int rc = -1;
    if (order && dur && est && dag_topo_order(d, order) == 0) {
        for (dag_task_t t = 0; t < d->ntasks; t++) {
            dur[t] = simdag_task_duration(d->arena + d->argv[t], d->argc[t]);
            info->work += dur[t] * d->cpus[t];
            if (dur[t] > info->max_duration)
                info->max_duration = dur[t];
        }
        info->critical_path = critical_path(d, order, dur, est);
        info->base_tasks = d->ntasks;
        info->base_edges = d->nedges;
        info->copies = 1;
        info->tasks = d->ntasks;
        info->edges = d->nedges;
        rc = 0;
    } else {
        pmc_errorf(err, "%s: out of memory", path);
    }
    free(order);
    free(dur);
    free(est);
    dag_destroy(d);
    return rc;
}
