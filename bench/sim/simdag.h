/* simdag.h - the simulator's workload: K disjoint, jittered copies of a DAG.
 *
 * One real workflow keeps a few hundred cores busy; a million cores need a
 * thousand copies of it.  simdag_write() loads a DAG file with the real
 * parser (io/dagfile.h), writes K disjoint copies of it to a new DAG file
 * (task NAME becomes NAME_cK, edges stay inside their copy), and measures
 * what the copy file asks of a machine: the work (CPU-seconds) and the
 * critical path, from which the simulator's makespan lower bound follows.
 *
 * Durations: a task whose executable is ".../sleep" runs for its first
 * argument, in the DAG file's units (the shared workloads hold the recorded
 * runtimes / 1000; the simulator multiplies by its --time-scale).  Each copy's
 * duration is multiplied by 1 + jitter * u, u uniform in [-1, 1) from a hash of
 * (seed, copy, task), and written into the copy file, so the file is the one
 * truth both the simulated nodes and the lower bound read.  Jitter matters:
 * the recorded runtimes have millisecond precision, and without it K copies'
 * tasks would finish in lock-step, batching results unrealistically well.
 * Other executables are kept as they are and count as 0-second tasks.
 *
 * Simplifications: -f/-F forwards are dropped (the simulated nodes produce
 * no data); retries (-t) are kept but simulated tasks never fail.
 *
 * Thread-safety: none needed; everything belongs to the caller's thread.
 */
#ifndef PMC_SIMDAG_H
#define PMC_SIMDAG_H

#include <stdint.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a DAG asks of the machine, durations in the DAG file's units. */
struct simdag_info {
    uint32_t base_tasks, base_edges; /* one copy */
    uint32_t copies;
    uint64_t tasks, edges; /* the whole copy file */
    double work;           /* sum over tasks of duration * CPUs */
    double critical_path;  /* longest chain of durations (the worst copy) */
    double max_duration;   /* longest single task */
};

/* Write `copies` (>= 1) jittered copies of the DAG at base_path to out_path
 * (created or truncated).  jitter in [0, 1).  Returns 0 with *info filled,
 * or -1 with err ("wf.dag:12: ..." from the parser, "PATH: <strerror>" for
 * I/O); a partly written out_path is removed. */
int simdag_write(const char *base_path, const char *out_path, uint32_t copies, double jitter,
                 uint64_t seed, struct simdag_info *info, struct pmc_error *err);

/* Measure the DAG at path as it is (one copy, no jitter): *info filled,
 * copies = 1.  Returns 0, or -1 with err. */
int simdag_measure(const char *path, struct simdag_info *info, struct pmc_error *err);

/* Duration of a task from its packed argv (argc NUL-terminated strings, as
 * in a TASKS message): the first argument of ".../sleep", else 0. */
double simdag_task_duration(const char *argv, uint32_t argc);

#ifdef __cplusplus
}
#endif
#endif
