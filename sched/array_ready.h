/* array_ready.h - which instances of a DAG's task arrays may run: the
 * array edges' bookkeeping, without an object per instance
 * (docs/task-arrays.md "How the engine runs arrays").
 *
 * Per array: the whole-array prerequisites still missing (FAN_OUT parents
 * not done, BARRIER parent arrays not complete), its instances done (a bit
 * each, and a count), and, only for an array with ONE_TO_ONE or K_TO_ONE
 * edges into it, a counter of parent completions per instance (1, 2 or 4
 * bytes by the most it must count; calloc'd, so pages of instances never
 * reached cost nothing) and a bitmap of instances whose counters are full.
 * An array without such edges hands its instances out from a cursor.  A
 * FAN_IN or BARRIER edge is satisfied when its parent array's done count
 * reaches its size: no state per edge.
 *
 * The engine takes ready instances (ar_take_ready()) a window at a time,
 * so that what it holds per instance (an entry in the ready queue, its
 * attempt counter) exists only for instances that are ready or running.
 * Plain tasks keep their own counters in the engine; this module says how
 * many FAN_IN edges each one waits for (ar_plain_waits()) and when one is
 * satisfied.
 *
 * Memory: 56 bytes per array, a bit per instance, and the counters above.
 * Thread-safety: none; one thread (the master's) at a time.
 */
#ifndef PMC_ARRAY_READY_H
#define PMC_ARRAY_READY_H

#include <stdbool.h>
#include <stdint.h>

#include "io/dag.h"

#ifdef __cplusplus
extern "C" {
#endif

struct array_ready;

/* The state of d's arrays when the plain tasks with done[t] != 0 and the
 * instances with their bit set in inst_done (dag->ninstances bits, bit k
 * for instance id ntasks + k; NULL: none) are done already.  d must be
 * finished and outlive the state.  NULL with ENOMEM.  O(instances) time
 * (the counters of instances whose parents are done are filled).  A DAG
 * without arrays gets a state that does nothing. */
struct array_ready *ar_create(const struct dag *d, const uint8_t *done, const uint64_t *inst_done);
void ar_destroy(struct array_ready *ar);

/* How many FAN_IN edges into plain task t wait for their array (its
 * plain parents are counted by the engine).  O(log E + edges into t). */
uint32_t ar_plain_waits(const struct array_ready *ar, dag_task_t t);

/* Task t (plain or instance id) is done: update the counters.  For each
 * FAN_IN edge it satisfies, satisfied(ctx, child) is called once (the
 * plain child waits for one edge less).  An instance must not be done
 * twice.  O(edges out of t's array or task) amortised. */
void ar_task_done(struct array_ready *ar, dag_task_t t,
                  void (*satisfied)(void *ctx, dag_task_t child), void *ctx);

/* Is instance id t done (its bit)? */
bool ar_instance_done(const struct array_ready *ar, dag_task_t t);

/* Hand out ready instances not handed out before: for each array that may
 * run (every prerequisite met) and holds fewer than `window` handed out and
 * not yet ar_instance_started(), in the order they became ready, call
 * take(ctx, id, priority) for instances in index order until its window is
 * full.  take() returns 0, or -1 to stop (the instance counts as handed out
 * all the same).  Returns how many were handed out.  O(handed out + words
 * of the readiness bitmaps skipped). */
uint64_t ar_take_ready(struct array_ready *ar, uint32_t window,
                       int (*take)(void *ctx, dag_task_t id, int32_t priority), void *ctx);

/* An instance ar_take_ready() handed out was sent to a node for the first
 * time: it leaves its array's window. */
void ar_instance_started(struct array_ready *ar, dag_task_t t);

/* Any ready instance not yet handed out? */
bool ar_has_ready(const struct array_ready *ar);

/* The done set of the instances (dag->ninstances bits as in ar_create()),
 * owned by ar; NULL for a DAG without arrays. */
const uint64_t *ar_done_bits(const struct array_ready *ar);

#ifdef __cplusplus
}
#endif
#endif
