/* placement.h - where the master sends ready tasks: per-node accounting,
 * the open list, round-robin placement, recalls and the dispatch round with
 * PMC's deferral rule (manual, -p).  Pure policy: no MPI, threads or I/O.
 *
 * A node may be committed up to its CPUs plus a prefetch window W
 * (placement_window()) and its memory and GPUs twice over; a node is open
 * (may be sent tasks) from when it drains to placement_refill_mark() until
 * it is full.  Invariants after every call: a node is open iff it is on
 * the open list at open_pos; an open node has room; a closed node with
 * room has committed_cpus > cpus + W/2; placement_room() is the sum of the
 * open nodes' room; a node of 0 CPUs never opens.  How placement,
 * priorities past the window and recalls work, and why:
 * docs/modules.md "placement".
 *
 * Units: CPUs and GPUs are counts, memory MB, time limits ms, time left
 * seconds.  Thread-safety: none; a struct placement belongs to one thread
 * (the master's scheduler thread).
 */
#ifndef PMC_PLACEMENT_H
#define PMC_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/error.h"
#include "sched/ready_queue.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PLACEMENT_PREFETCH_MIN 64 /* CPUs of prefetch window per node, at least */
#define PLACEMENT_IDLE_SCAN 64    /* idle nodes placement_pick() looks at, at most */

/* The prefetch window W of a node of cpus CPUs, in CPUs. */
static inline uint32_t placement_window(uint32_t cpus)
{
    return cpus > PLACEMENT_PREFETCH_MIN ? cpus : PLACEMENT_PREFETCH_MIN;
}

/* The most CPUs (so tasks) ever committed to a node of cpus CPUs: its
 * CPUs, W and the overflow lane (one more round of its CPUs). */
static inline uint64_t placement_most_committed(uint32_t cpus)
{
    return 2 * (uint64_t)cpus + placement_window(cpus);
}

/* Committed CPUs at which a full node reopens: cpus + W/2.  Agents flush
 * their results there too (sched/result_batch.h). */
static inline uint64_t placement_refill_mark(uint32_t cpus)
{
    return (uint64_t)cpus + placement_window(cpus) / 2;
}

/* The most a task given back at a recall may need: one idle node's free
 * CPUs, memory (MB) and GPUs. */
struct placement_fit {
    uint32_t cpus;
    uint64_t memory_mb;
    uint32_t gpus;
};

/* A node as the policy sees it.  Read only to callers (placement_node_at()). */
struct placement_node {
    uint32_t cpus;                  /* CPUs the node offers */
    uint32_t window;                /* prefetch window, CPUs: max(PLACEMENT_PREFETCH_MIN, cpus) */
    uint32_t committed_cpus;        /* of the tasks committed and not released */
    uint64_t memory_mb;             /* memory the node offers, MB */
    uint64_t committed_mem;         /* MB, of the tasks committed and not released */
    uint32_t gpus;                  /* GPUs the node offers */
    uint32_t committed_gpus;        /* of the tasks committed and not released */
    uint32_t tasks;                 /* tasks committed and not released */
    bool open;                      /* on the open list: may be sent tasks */
    int open_pos;                   /* its index in the open list (when open) */
    bool idle;                      /* on the idle list: committed_cpus < cpus */
    int idle_pos;                   /* its index in the idle list (when idle) */
    uint32_t recall_asked;          /* tasks placement_recall() asked back, not answered */
    uint32_t futile_epoch;          /* epoch in which it gave nothing back (0: none) */
    struct placement_fit asked_fit; /* what its last recall asked for */
    bool queueing;                  /* committed CPUs beyond its own: tasks may wait there */
    bool closed;                    /* placement_close_node(): never sent tasks again */
    int32_t queue_floor; /* lowest priority sent to it while queueing (INT32_MAX: none) */
};

/* How many tasks ahead placement_dispatch() prefetches in a bucket: far
 * enough for the misses to land, near enough for the lines to stay. */
#define PLACEMENT_LOOK_AHEAD 8

/* What each task asks, columns indexed by task id; the caller's, only
 * read during placement_dispatch().  time_limit_ms[t] == 0 means
 * default_limit_ms; a limit of 0 is none. */
/* One task's demand, as the columns of struct placement_demand give it. */
struct placement_need {
    uint32_t cpus, memory_mb, gpus, time_limit_ms;
};

struct placement_demand {
    const uint32_t *cpus;          /* CPUs per task, >= 1 */
    const uint32_t *memory_mb;     /* MB per task, 0 = memory not considered */
    const uint32_t *gpus;          /* GPUs per task, 0 = none */
    const uint32_t *time_limit_ms; /* hard run-time limit per task, ms, or NULL */
    uint32_t default_limit_ms;     /* the run's --time-limit, ms; 0 = none */
    /* Or NULL: called with assign's ctx and the task PLACEMENT_LOOK_AHEAD
     * behind the one being popped, to prefetch what assign will read.
     * Must change nothing. */
    void (*look_ahead)(void *ctx, uint32_t t);
    /* Tasks t >= ncolumns (task arrays' instances) are not in the columns:
     * instance(instance_ctx, t) gives their demand (time_limit_ms 0: the
     * run's default).  ncolumns UINT32_MAX (or instance NULL): every task
     * is in the columns. */
    uint32_t ncolumns;
    struct placement_need (*instance)(const void *instance_ctx, uint32_t t);
    const void *instance_ctx;
};

struct placement;

/* Room for max_nodes (>= 0) nodes.  NULL with ENOMEM.  destroy(NULL): no-op. */
struct placement *placement_create(int max_nodes);
void placement_destroy(struct placement *p);

/* Room for max_nodes nodes in all (more than placement_create() gave, for
 * nodes that join a running master): 0 (nothing done when there is room),
 * or -1 with ENOMEM and p unchanged.  O(max_nodes) when it grows. */
int placement_grow(struct placement *p, int max_nodes);

/* Register a node offering cpus, memory_mb and gpus; it opens if cpus > 0.
 * Its index (0, 1, ... in call order), or -1 with ENOSPC. */
int placement_add_node(struct placement *p, uint32_t cpus, uint64_t memory_mb, uint32_t gpus);

/* Node i is gone or going (lost, leaving): it is never picked, opened,
 * asked back or counted idle again, and no longer counts as capable
 * (placement_check_capable()).  Its committed tasks stay committed until
 * the caller releases them (placement_release()).  A closed node's room
 * and free CPUs are 0, so every invariant above holds with it off every
 * list.  Closing a closed node does nothing.  O(1). */
void placement_close_node(struct placement *p, int i);

int placement_nnodes(const struct placement *p);

/* Node i (0 <= i < placement_nnodes()); valid until placement_destroy(). */
const struct placement_node *placement_node_at(const struct placement *p, int i);

/* CPUs node n may still be sent: cpus + window - committed_cpus, or 0. */
uint32_t placement_node_room(const struct placement_node *n);

/* Sum of the open nodes' room, CPUs (0: no task can be placed now). */
uint64_t placement_room(const struct placement *p);

/* Nodes on the open list. */
int placement_nopen(const struct placement *p);

/* 0 when some node's whole offer holds cpus, memory_mb and gpus; else -1
 * with err "No host is capable of running task NAME (it requests ...; the
 * hosts offer ...)", PMC's message plus up to 3 distinct offers.  O(nodes). */
int placement_check_capable(const struct placement *p, uint32_t cpus, uint64_t memory_mb,
                            uint32_t gpus, const char *name, struct pmc_error *err);

/* The node for a task now: an idle one that can start it (at most
 * PLACEMENT_IDLE_SCAN looked at), else the next open one with room, round
 * robin.  Its index, or -1 (defer).  Commits nothing.  O(open nodes). */
int placement_pick(struct placement *p, uint32_t cpus, uint64_t memory_mb, uint32_t gpus);

/* Account a task as sent to node i; the node closes when full. */
void placement_commit(struct placement *p, int i, uint32_t cpus, uint64_t memory_mb, uint32_t gpus);

/* Undo placement_commit() of the same amounts exactly; the node reopens at
 * its refill mark.  Releasing more than committed is a caller error. */
void placement_release(struct placement *p, int i, uint32_t cpus, uint64_t memory_mb,
                       uint32_t gpus);

/* Send task t to node i: 0 (the policy then commits it), or -1 leaving t
 * as it was. */
typedef int (*placement_assign_fn)(void *ctx, uint32_t t, int i);

/* Ask node i back for unstarted tasks of up to `cpus` CPUs, each fitting
 * *fit.  0, or -1: nothing asked. */
typedef int (*placement_recall_fn)(void *ctx, int i, uint32_t cpus,
                                   const struct placement_fit *fit);

/* CPUs free on the nodes that have some (committing nothing beyond them). */
uint64_t placement_idle_cpus(const struct placement *p);

/* Would placement_recall() ask anything now?  O(1). */
bool placement_recall_due(const struct placement *p);

/* While idle CPUs outnumber those asked back, ask nodes queueing beyond
 * their CPUs (once until they answer) for up to that excess, fitting the
 * idlest node.  O(1) with nothing to ask, else O(nodes).  0, or -1 when ask
 * failed (earlier nodes were asked). */
int placement_recall(struct placement *p, placement_recall_fn ask, void *ctx);

/* Node i gave back `given` tasks.  If 0, it is not asked again until its
 * queue is new or an idle node has more free than was asked. */
void placement_recall_answered(struct placement *p, int i, uint32_t given);

/* One round: place q's tasks in order, calling assign and committing; a
 * task with no node now, or whose time limit exceeds time_left_s (s;
 * INFINITY: none), is deferred, keeping its place.  Stops when no room is
 * left and no priority is above the floor, or every task was seen.  0, or
 * -1 (assign failed, ENOMEM): deferred tasks regain their places, assigned
 * ones stay.  The caller holds q's dispatcher role. */
int placement_dispatch(struct placement *p, struct ready_queue *q, const struct placement_demand *d,
                       double time_left_s, placement_assign_fn assign, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
