/* progress.h - how far along a run is: the remaining critical path and an
 * estimate of the time left, for the progress line and the status file.
 *
 * Critical path: height(t) = the number of tasks on the longest path from t
 * down to a leaf (a leaf has height 1), computed once over the DAG in
 * reverse topological order (Kahn's algorithm; A. B. Kahn, "Topological
 * sorting of large networks", CACM 1962).  Every task still to run lies at
 * or below a task that is ready or running, so the remaining critical path
 * is the largest height among the tasks not finished; a count of unfinished
 * tasks per height keeps that maximum in O(1) amortised per finished task.
 *
 * Rate: completions per second, an exponentially weighted moving average
 * (time constant PROGRESS_RATE_TAU_S) of the rate between samples.
 *
 * ETA (seconds) = max(tasks left / rate,
 *                     remaining critical path x mean task duration):
 * the run can end no sooner than its throughput allows nor than its longest
 * remaining chain of tasks, each taking the mean observed duration (a term
 * that is not known yet, rate 0 or no duration, drops out).  0 when nothing
 * is left; negative ("unknown") while neither term is known.
 *
 * Memory: 8 bytes per task (height, plus a transient 8 bytes per task while
 * initialising).  Thread-safety: one thread (the master's).
 */
#ifndef PMC_PROGRESS_H
#define PMC_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#include "io/dag.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PROGRESS_RATE_TAU_S 10.0

struct progress {
    uint32_t *height;  /* per task: longest path to a leaf, in tasks (>= 1) */
    uint32_t *left;    /* per height (index 0 unused): unfinished tasks */
    uint32_t nheights; /* entries of left: the DAG's depth + 1 */
    uint32_t top;      /* largest height with an unfinished task, 0 if none */
    double rate;       /* tasks/s, EWMA; < 0 until the second sample */
    double last_t;     /* time of the last sample, s (caller's clock) */
    uint64_t last_n;   /* finished count at the last sample */
};

/* Compute the heights of d's tasks and count the unfinished ones (done[t]
 * != 0 marks tasks finished before the run; may be NULL).  0, or -1 with
 * ENOMEM (p is then empty: progress_free() is still safe). */
int progress_init(struct progress *p, const struct dag *d, const uint8_t *done);

/* Task t finished for good (succeeded, or failed after its last try).
 * Call once per task. */
void progress_finished(struct progress *p, uint32_t t);

/* The remaining critical path, in tasks: 0 when every task finished. */
static inline uint32_t progress_critical_left(const struct progress *p)
{
    return p->top;
}

/* Sample the finished count n at time now (seconds, any monotonic clock)
 * and update the rate.  Samples closer than 1 ms apart are ignored. */
void progress_sample(struct progress *p, uint64_t n, double now);

/* Seconds left, from tasks_left, the rate and mean_duration (seconds per
 * finished attempt, 0 if none yet); 0 when tasks_left is 0, -1 when
 * unknown. */
double progress_eta(const struct progress *p, uint64_t tasks_left, double mean_duration);

void progress_free(struct progress *p); /* frees the arrays; p may be zeroed */

#ifdef __cplusplus
}
#endif
#endif
