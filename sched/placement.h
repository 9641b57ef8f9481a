/* placement.h - where the master sends ready tasks: per-node resource
 * accounting, the open list, round-robin placement, and the dispatch round
 * with PMC's deferral rule.  Pure policy: no MPI, no threads, no I/O; the
 * master (engine/master/master_sched.c) and the simulator (bench/sim, through the
 * master) drive it, and tests/unit/test_placement.cc tests it.
 *
 * Accounting (docs/design.md section 2).  A node offers cpus, memory_mb and gpus
 * (its HELLO).  Tasks sent to it and not reported back are "committed" on
 * it, whether it runs them or holds them queued.  A node may be committed up
 * to its CPUs plus a prefetch window of W = max(PLACEMENT_PREFETCH_MIN,
 * cpus) CPUs, its memory twice over and its GPUs twice over, so it never
 * idles waiting for a round trip; its agent starts them as its own
 * accounting allows (sched/node_queue.h).  A task asking more than a node
 * offers (CPUs, memory or GPUs) never goes to that node.
 *
 * Open list and hysteresis.  The open list holds the nodes that may be sent
 * tasks: a node opens when its committed CPUs fall to the low-water mark
 * cpus + W/2 and closes when it has no room left (committed cpus + W), so
 * under load every TASKS message carries at least W/2 CPUs' worth of tasks
 * and the search never scans a node that cannot take anything (the
 * simulator showed full scans dominating the master at thousands of
 * nodes).  Invariants, after every call:
 *   - a node is open iff it is on the open list, at its open_pos;
 *   - an open node has room (placement_node_room() > 0);
 *   - a closed node with room has committed_cpus > cpus + W/2 (it was
 *     filled past the low-water mark and has not drained back to it);
 *   - placement_room() == the sum of the open nodes' room.
 * A node with 0 CPUs never opens.
 *
 * Placement: a node that can start the task now (CPUs, memory and GPUs
 * free, nothing queued there: the idle list, at most PLACEMENT_IDLE_SCAN
 * of them looked at), else the first open node with room for the task
 * (queued behind what it runs), in round-robin order from just after the
 * node last chosen, so equal nodes take equal shares.
 *
 * Priorities past the window.  A full node takes no task until it drained
 * to its refill mark, so a task that becomes ready with a higher priority
 * than the tasks queued at the nodes would wait behind ~W/2 of them at
 * each (PMC starts the larger priority at the next free slot, manual
 * -p).  Each node keeps the lowest priority sent to it while it queues
 * (its queue floor, reset when its queue may be empty: committed CPUs
 * back at its own), the run the lowest over all nodes; a task above the
 * run's floor that finds no room goes past a window, into an overflow
 * lane of one more round of the node's CPUs, on a node whose floor is
 * below it, where the node queue puts it in front (sched/node_queue.h).
 * With one priority, as most DAGs have, nothing overflows.  A search that
 * finds no node is not repeated for that priority, or a lower one, until a
 * lane may have opened (a release at, or a lower floor on, a node queueing
 * below it); a smaller task than the one that found none then waits for
 * room as before.
 *
 * Recalls.  Tasks queued at a node wait for that node alone: once the
 * ready queue runs dry, a node that finished early would idle while
 * another still holds up to its window of tasks (a run's tail; PMC hands
 * each worker one task at a time and has no such tail).  placement_recall()
 * asks the nodes that hold tasks beyond their CPUs to give back, from the
 * end of their queues, unstarted tasks of as many CPUs as idle elsewhere; each comes back through
 * the ready queue and goes to an idle node first (the idle list); only tasks that fit an idle
 * node's free resources are asked for, so that none comes back to a node that only queues it again.
 * A node answers with how many it gave back (placement_recall_answered()); one that gave nothing
 * (what it queues is too big, or already starting) is not asked again until its queue is a new one
 * or an idle node has more free than it was asked for.  Dispatch order (PMC manual, task option
 * -p): larger priority first, first-in first-out among equal priorities (the ready queue's order;
 * the manual says nothing of ties, FIFO keeps the DAG's order for tasks ready at once).  Deferral
 * (PMC manual, -p: "if a task cannot be matched to an available slot ... but a lower-priority task
 * can, then the task will be deferred and the lower priority task will be executed"): a task that
 * fits no open node now keeps its place at the front of its priority while the tasks behind it, of
 * its priority and lower, are placed.  A task that fits no node at all (placement_check_capable())
 * is PMC's "No host is capable" error (manual, RESOURCE-BASED SCHEDULING: the workflow is aborted);
 * the master checks every task before the run.
 *
 * Units: CPUs and GPUs are counts, memory is MB, time limits are ms and
 * the time left is seconds.
 *
 * Thread-safety: not thread-safe; a struct placement belongs to one thread
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

/* The prefetch window W of a node offering cpus CPUs: max(PLACEMENT_PREFETCH_MIN,
 * cpus), in CPUs. */
static inline uint32_t placement_window(uint32_t cpus)
{
    return cpus > PLACEMENT_PREFETCH_MIN ? cpus : PLACEMENT_PREFETCH_MIN;
}

/* The most CPUs the master commits to a node offering cpus CPUs: its CPUs,
 * its prefetch window W and the overflow lane (one more round of its CPUs),
 * so also the most tasks it has committed at once (each at least 1 CPU). */
static inline uint64_t placement_most_committed(uint32_t cpus)
{
    return 2 * (uint64_t)cpus + placement_window(cpus);
}

/* The refill mark of such a node: a full node reopens for dispatch once its
 * committed CPUs fell to cpus + W/2 (the hysteresis).  A node agent that
 * knows its own load flushes its results there (sched/result_batch.h, for
 * engine/node/agent.c and the simulator). */
static inline uint64_t placement_refill_mark(uint32_t cpus)
{
    return (uint64_t)cpus + placement_window(cpus) / 2;
}

/* What a task may need, at most, to be given back at a recall: the free
 * CPUs, memory (MB) and GPUs of one idle node. */
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
    uint32_t futile_epoch;          /* its answer gave nothing back in this epoch of the placement
                                       (0: none): not asked again until its queue is new, or idle
                                       resources grew past what it was asked for */
    struct placement_fit asked_fit; /* what its last recall asked for */
    bool queueing;                  /* committed CPUs beyond its own: tasks may wait there */
    int32_t queue_floor; /* lowest priority sent to it while queueing (INT32_MAX: none) */
};

/* How far ahead placement_dispatch() looks in a bucket to start the cache
 * misses of a task (its demand columns, and placement_demand.look_ahead):
 * far enough for them to land before that task is placed, near enough
 * for its lines to stay cached.  8 is the only distance tried (the
 * simulator at 4,000 and 16,000 nodes and the 10M null run,
 * docs/performance-history.md section 8); others were not measured. */
#define PLACEMENT_LOOK_AHEAD 8

/* What each task asks, as columns indexed by task id (the DAG's struct of
 * arrays); only read, owned by the caller, alive while placement_dispatch()
 * runs.  time_limit_ms may be NULL (no task has its own limit);
 * time_limit_ms[t] == 0 means default_limit_ms; a limit of 0 is none. */
struct placement_demand {
    const uint32_t *cpus;          /* CPUs per task, >= 1 */
    const uint32_t *memory_mb;     /* MB per task, 0 = memory not considered */
    const uint32_t *gpus;          /* GPUs per task, 0 = none */
    const uint32_t *time_limit_ms; /* hard run-time limit per task, ms, or NULL */
    uint32_t default_limit_ms;     /* the run's --time-limit, ms; 0 = none */
    /* Or NULL.  Called by placement_dispatch() before it pops each task of
     * a bucket for its nodes' room (not for the overflow lane), with the
     * task PLACEMENT_LOOK_AHEAD places behind it (when the bucket holds
     * one), and assign's ctx: for the caller to start the cache misses
     * of what its assign will read for that task (__builtin_prefetch; a
     * cache prefetch, not the prefetch window).  A hint: it must change
     * nothing.  Dispatcher's thread. */
    void (*look_ahead)(void *ctx, uint32_t t);
};

struct placement;

/* Room for max_nodes nodes (>= 0), none added yet.  NULL with ENOMEM.  Free
 * with placement_destroy() (NULL is a no-op). */
struct placement *placement_create(int max_nodes);
void placement_destroy(struct placement *p);

/* Register a node offering cpus, memory_mb (MB) and gpus, with nothing
 * committed; it opens at once when it has room (cpus > 0).  Returns its
 * index (0, 1, ... in the order of the calls), or -1 with ENOSPC when
 * max_nodes are registered already. */
int placement_add_node(struct placement *p, uint32_t cpus, uint64_t memory_mb, uint32_t gpus);

int placement_nnodes(const struct placement *p);

/* Node i (0 <= i < placement_nnodes()); valid until placement_destroy(). */
const struct placement_node *placement_node_at(const struct placement *p, int i);

/* CPUs node n may still be sent: cpus + window - committed_cpus, 0 when full
 * or when the node has no CPU. */
uint32_t placement_node_room(const struct placement_node *n);

/* Sum of the open nodes' room, CPUs (0: no task can be placed now). */
uint64_t placement_room(const struct placement *p);

/* Nodes on the open list. */
int placement_nopen(const struct placement *p);

/* 0 when at least one node offers cpus, memory_mb (MB) and gpus (its whole
 * offer, whatever is committed now), so a task asking that much can run
 * some day; else -1 with err set to "No host is capable of running task
 * NAME (it requests 1 CPUs, 1000000000 MB of memory, 0 GPUs; the hosts
 * offer 2 CPUs, 7936 MB, 0 GPUs)": PMC's message (the engine prints it
 * after "FATAL ERROR: " and aborts the workflow, PMC manual,
 * RESOURCE-BASED SCHEDULING), then the request and the nodes' distinct
 * offers, at most 3 of them ("; and more").  With no
 * node registered nothing is capable.  O(nodes) at worst. */
int placement_check_capable(const struct placement *p, uint32_t cpus, uint64_t memory_mb,
                            uint32_t gpus, const char *name, struct pmc_error *err);

/* The node for a task of cpus, memory_mb (MB) and gpus now: an idle one
 * that can start it at once (at most PLACEMENT_IDLE_SCAN looked at, from
 * the idle cursor), else the first open one with room for it (within its
 * window), in round-robin order from just after the node picked last; the
 * cursor moves past the node returned.  Returns its index, or -1 when none
 * has room now (defer the task).  Commits nothing.  O(open nodes). */
int placement_pick(struct placement *p, uint32_t cpus, uint64_t memory_mb, uint32_t gpus);

/* Account a task of cpus, memory_mb and gpus as sent to node i (i a
 * registered index, normally placement_pick()'s answer); the node closes
 * when it has no room left.  Never fails. */
void placement_commit(struct placement *p, int i, uint32_t cpus, uint64_t memory_mb, uint32_t gpus);

/* Undo placement_commit() of the same amounts (the task's result came, or
 * it was given back unstarted): the node's accounting is exactly what it
 * was before that commit; the node reopens once its committed CPUs fell to
 * the low-water mark cpus + W/2.  Releasing more than is committed is a
 * caller error.  Never fails. */
void placement_release(struct placement *p, int i, uint32_t cpus, uint64_t memory_mb,
                       uint32_t gpus);

/* Called by placement_dispatch() for each task placed: build what sends
 * task t to node i and return 0, or return -1 (e.g. ENOMEM) leaving t as it
 * was.  The policy commits t on node i after a 0 (the callback must not). */
typedef int (*placement_assign_fn)(void *ctx, uint32_t t, int i);

/* Send node i a request to give back unstarted tasks of up to `cpus` CPUs
 * in all, each fitting *fit (the caller's message); 0, or -1 (e.g.
 * ENOMEM): nothing was asked. */
typedef int (*placement_recall_fn)(void *ctx, int i, uint32_t cpus,
                                   const struct placement_fit *fit);

/* CPUs free on the nodes that have some (committing nothing beyond them). */
uint64_t placement_idle_cpus(const struct placement *p);

/* Would placement_recall() ask anything now?  O(1). */
bool placement_recall_due(const struct placement *p);

/* Recalls (see the top of this file): while idle CPUs outnumber the tasks
 * (CPUs) asked back and not answered, ask nodes holding tasks beyond
 * their CPUs (committed CPUs past their own), each at most once until it
 * answers, for up to that excess each, in round-robin order over the
 * nodes; a task given back must fit the free resources of the idle node
 * with the most CPUs free (of those placement_pick() looks at next).  O(1) when there is nothing to
 * ask, O(nodes) when there is.  Returns 0, or -1 when ask failed (that node was not asked; those
 * before it were). */
int placement_recall(struct placement *p, placement_recall_fn ask, void *ctx);

/* Node i answered its recall, giving back `given` tasks (their results
 * come, or came, as results given back unstarted): it may be asked again,
 * unless it gave nothing, when it is not asked again until its queue is a
 * new one (its committed CPUs were back at its own) or an idle node has
 * more free than it was asked for. */
void placement_recall_answered(struct placement *p, int i, uint32_t given);

/* One dispatch round: take the ready tasks of q in its order (priority,
 * then FIFO), place each on placement_pick()'s node, call assign and commit
 * it there; a task with no node now is deferred (keeps its place at the
 * front of its priority, in its order) while the tasks behind it go.  A
 * task whose time limit (its own, else d->default_limit_ms) exceeds
 * time_left_s (seconds before the batch job ends; INFINITY when none) is
 * deferred too: it could not finish.  A task of a priority above the run's
 * queue floor that finds no room goes past a window (see "Priorities past
 * the window" above).  The round stops once no open node has room
 * (placement_room() == 0) and no priority left is above the floor, or
 * every task was looked at once.
 * Returns 0, or -1 when assign failed or the deferral scratch could not
 * grow (ENOMEM): the task at hand is put back at the front, the tasks
 * deferred so far regain their places (a sized ready queue takes them back
 * without allocating), the tasks assigned stay assigned and committed.
 * q's dispatcher role (sched/ready_queue.h) is the caller's thread's. */
int placement_dispatch(struct placement *p, struct ready_queue *q, const struct placement_demand *d,
                       double time_left_s, placement_assign_fn assign, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
