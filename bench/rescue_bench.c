/* rescue_bench.c - time of the rescue log's reader and CPU of its writer,
 * with or without task arrays (io/rescue.h).
 *
 *   rescue_bench read DAGFILE RESCUE [REPEATS]
 *   rescue_bench write DAGFILE OUT
 *
 * The DAG is loaded with task arrays accepted (dagfile_load_opts()).
 * "read" reads RESCUE REPEATS times (default 5) into fresh zeroed sets and
 * prints one line of key=value pairs:
 *
 *   tasks=N instances=I done=D wall_s_min=W wall_s_median=M
 *
 * "write" opens a writer at OUT with nothing carried over, appends every
 * plain task and then every instance in id order (the order of a run
 * whose instances end in dispatch order), closes it and prints
 *
 *   appended=A writer_cpu_s=C writes=W bytes=B
 *
 * writer_cpu_s is the writer thread's CPU time (rescue_writer_get_stats()).
 * Exit status 1 with the message when a load, read or write fails.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/clock.h"
#include "io/dag.h"
#include "io/dagfile.h"
#include "io/rescue.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int bench_read(const struct dag *d, const char *path, int repeats)
{
    double t[64];
    uint32_t ndone = 0;
    for (int r = 0; r < repeats; r++) {
        uint8_t *done = calloc(d->ntasks + 1, 1);
        uint64_t *bits = d->ninstances ? calloc((d->ninstances + 63) / 64, 8) : NULL;
        if (!done || (d->ninstances && !bits)) {
            fprintf(stderr, "rescue_bench: out of memory\n");
            return 1;
        }
        struct pmc_error err;
        double t0 = pmc_mono_s();
        int rc = rescue_read(path, d, done, bits, &ndone, NULL, &err);
        t[r] = pmc_mono_s() - t0;
        free(bits);
        free(done);
        if (rc < 0) {
            fprintf(stderr, "rescue_bench: %s\n", err.text);
            return 1;
        }
    }
    qsort(t, (size_t)repeats, sizeof t[0], cmp_double);
    printf("tasks=%u instances=%" PRIu64 " done=%u wall_s_min=%.6f wall_s_median=%.6f\n", d->ntasks,
           d->ninstances, ndone, t[0], t[repeats / 2]);
    return 0;
}

static int bench_write(const struct dag *d, const char *path)
{
    uint8_t *none = calloc(d->ntasks + 1, 1);
    uint64_t *bits = d->ninstances ? calloc((d->ninstances + 63) / 64, 8) : NULL;
    struct pmc_error err;
    struct rescue_writer *w = none ? rescue_writer_open(path, d, none, bits, &err) : NULL;
    if (!w) {
        fprintf(stderr, "rescue_bench: %s\n", none ? err.text : "out of memory");
        return 1;
    }
    uint64_t n = d->ntasks + d->ninstances;
    for (uint64_t t = 0; t < n; t++)
        rescue_writer_append(w, (dag_task_t)t);
    struct rescue_writer_stats st;
    int rc = rescue_writer_flush(w);
    rescue_writer_get_stats(w, &st);
    rc |= rescue_writer_close(w);
    free(bits);
    free(none);
    struct stat sb;
    if (rc < 0 || stat(path, &sb) < 0) {
        fprintf(stderr, "rescue_bench: the log %s failed\n", path);
        return 1;
    }
    printf("appended=%" PRIu64 " writer_cpu_s=%.6f writes=%" PRIu64 " bytes=%lld\n", n,
           (double)st.cpu_ns / 1e9, st.writes, (long long)sb.st_size);
    return 0;
}

int main(int argc, char **argv)
{
    bool read = argc >= 4 && argc <= 5 && strcmp(argv[1], "read") == 0;
    bool write = argc == 4 && strcmp(argv[1], "write") == 0;
    int repeats = argc == 5 ? atoi(argv[4]) : 5;
    if ((!read && !write) || repeats < 1 || repeats > 64) {
        fprintf(stderr, "usage: rescue_bench read DAGFILE RESCUE [REPEATS 1-64]\n"
                        "       rescue_bench write DAGFILE OUT\n");
        return 2;
    }
    struct dagfile_options opts = {.arrays = 1};
    struct pmc_error err;
    struct dag *d = dagfile_load_opts(argv[2], &opts, &err);
    if (!d) {
        fprintf(stderr, "rescue_bench: %s\n", err.text);
        return 1;
    }
    int rc = read ? bench_read(d, argv[3], repeats) : bench_write(d, argv[3]);
    dag_destroy(d);
    return rc;
}
