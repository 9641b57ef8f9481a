/* placement.c - per-node accounting, the open list with its hysteresis,
 * round-robin placement and the dispatch round with PMC's deferral rule;
 * see placement.h for the rules and invariants.
 *
 * Owned by one thread (the master's scheduler).  The open list is an array
 * of node indices with each open node's position stored in the node, so
 * opening and closing are O(1) (swap with the last).  The deferral scratch
 * grows by doubling and is kept between rounds: no allocation once warm.
 */
#include "sched/placement.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct placement {
    struct placement_node *nodes;
    int nnodes, max_nodes;
    int *open_list; /* nopen node indices */
    int nopen;
    int rr;         /* round-robin start of the next search, a position in open_list */
    uint64_t room;  /* sum of the open nodes' room, CPUs */
    int *idle_list; /* nidle indices of the nodes with CPUs free (placement_node.idle) */
    int nidle;
    int idle_rr;             /* round-robin start of the next search, a position in idle_list */
    uint64_t idle_cpus;      /* CPUs free on the idle nodes */
    uint64_t recall_asked;   /* tasks asked back and not answered, all nodes */
    int nrecallable;         /* nodes queueing beyond their CPUs and not asked */
    int recall_rr;           /* node index where the next recall search starts */
    int nexcess;             /* nodes with CPUs committed beyond their own */
    int32_t queue_floor;     /* lowest priority queued anywhere since nexcess was 0 */
    int overflow_rr;         /* node index where the next overflow search starts */
    int32_t overflow_failed; /* an overflow search for this priority found no node since
                                a lane could open (INT32_MIN: none) */
    struct placement_fit overflow_need; /* what the task whose search failed needs */
    uint32_t futile_epoch;              /* a node whose futile_epoch is this one gave nothing */
    bool any_futile;                    /* some node gave nothing in this epoch */
    struct placement_fit futile_fit;    /* the largest fit such a node was asked for */
    uint32_t *deferred;                 /* scratch for placement_dispatch() */
    size_t deferred_cap;
};

struct placement *placement_create(int max_nodes)
{
    struct placement *p = calloc(1, sizeof *p);
    size_t n = max_nodes > 0 ? (size_t)max_nodes : 1;
    if (!p)
        return NULL;
    p->nodes = calloc(n, sizeof *p->nodes);
    p->open_list = malloc(n * sizeof *p->open_list);
    p->idle_list = malloc(n * sizeof *p->idle_list);
    if (!p->nodes || !p->open_list || !p->idle_list) {
        placement_destroy(p);
        errno = ENOMEM;
        return NULL;
    }
    p->max_nodes = max_nodes > 0 ? max_nodes : 0;
    p->queue_floor = INT32_MAX;
    p->overflow_failed = INT32_MIN;
    p->futile_epoch = 1;
    return p;
}

void placement_destroy(struct placement *p)
{
    if (!p)
        return;
    free(p->deferred);
    free(p->idle_list);
    free(p->open_list);
    free(p->nodes);
    free(p);
}

int placement_nnodes(const struct placement *p)
{
    return p->nnodes;
}

const struct placement_node *placement_node_at(const struct placement *p, int i)
{
    return &p->nodes[i];
}

uint64_t placement_room(const struct placement *p)
{
    return p->room;
}

int placement_nopen(const struct placement *p)
{
    return p->nopen;
}

uint32_t placement_node_room(const struct placement_node *n)
{
    if (n->cpus == 0 || n->closed)
        return 0; /* a rank with no CPU share, or a node gone, never takes tasks */
    uint32_t cap = n->cpus + n->window;
    return n->committed_cpus < cap ? cap - n->committed_cpus : 0;
}

/* Can node n take a task of cpus/mem/gpus with `past` CPUs committed
 * beyond its CPUs plus the prefetch window (its memory and GPUs twice
 * over)? */
static inline bool node_fits(const struct placement_node *n, uint32_t cpus, uint64_t mem,
                             uint32_t gpus, uint32_t past)
{
    return cpus <= n->cpus && mem <= n->memory_mb && gpus <= n->gpus &&
           n->committed_cpus + cpus <= n->cpus + n->window + past &&
           n->committed_mem + mem <= 2 * n->memory_mb && n->committed_gpus + gpus <= 2 * n->gpus;
}

/* Can node n take a task of cpus/mem/gpus now, within its window? */
static bool node_has_room(const struct placement_node *n, uint32_t cpus, uint64_t mem,
                          uint32_t gpus)
{
    return node_fits(n, cpus, mem, gpus, 0);
}

/* Can node n take a task of cpus/mem/gpus in its overflow lane (one more
 * round of its CPUs past its window)? */
static bool lane_fits(const struct placement_node *n, uint32_t cpus, uint64_t mem, uint32_t gpus)
{
    return node_fits(n, cpus, mem, gpus, n->cpus);
}

static void open_list_add(struct placement *p, int i)
{
    p->nodes[i].open = true;
    p->nodes[i].open_pos = p->nopen;
    p->open_list[p->nopen++] = i;
}

static void open_list_remove(struct placement *p, int i)
{
    int pos = p->nodes[i].open_pos, last = p->open_list[--p->nopen];
    p->open_list[pos] = last;
    p->nodes[last].open_pos = pos;
    p->nodes[i].open = false;
}

static void idle_list_add(struct placement *p, int i)
{
    p->nodes[i].idle = true;
    p->nodes[i].idle_pos = p->nidle;
    p->idle_list[p->nidle++] = i;
}

static void idle_list_remove(struct placement *p, int i)
{
    int pos = p->nodes[i].idle_pos, last = p->idle_list[--p->nidle];
    p->idle_list[pos] = last;
    p->nodes[last].idle_pos = pos;
    p->nodes[i].idle = false;
}

/* CPUs node n has free, committing nothing beyond them (none once closed). */
static uint32_t node_free_cpus(const struct placement_node *n)
{
    return n->committed_cpus < n->cpus && !n->closed ? n->cpus - n->committed_cpus : 0;
}

/* What node n queues beyond its CPUs, as the master sees it: the CPUs
 * committed past its own (results on their way count until they come).
 * None once closed: a closed node is never asked back. */
static uint32_t node_excess(const struct placement_node *n)
{
    return n->committed_cpus > n->cpus && !n->closed ? n->committed_cpus - n->cpus : 0;
}

static bool node_recallable(const struct placement *p, const struct placement_node *n)
{
    return node_excess(n) > 0 && n->recall_asked == 0 && n->futile_epoch != p->futile_epoch;
}

/* Does node n have more of something free than the fit the nodes that gave
 * nothing were asked with? */
static bool node_beyond_futile_fit(const struct placement *p, const struct placement_node *n)
{
    uint64_t mem = n->committed_mem < n->memory_mb ? n->memory_mb - n->committed_mem : 0;
    uint32_t gpus = n->committed_gpus < n->gpus ? n->gpus - n->committed_gpus : 0;
    return node_free_cpus(n) > p->futile_fit.cpus || mem > p->futile_fit.memory_mb ||
           gpus > p->futile_fit.gpus;
}

/* Idle resources grew past what the nodes that gave nothing were asked
 * for: they may be asked again (a new epoch; O(nodes), once per such
 * growth after an answer of nothing). */
static void futile_epoch_end(struct placement *p)
{
    p->futile_epoch++;
    p->any_futile = false;
    p->futile_fit = (struct placement_fit){0, 0, 0};
    p->nrecallable = 0;
    for (int i = 0; i < p->nnodes; i++)
        p->nrecallable += node_recallable(p, &p->nodes[i]);
}

/* Node i's commitment changed (room_before: its room before the change,
 * free_before its free CPUs, recallable_before whether it could be asked
 * to give tasks back): keep p->room and the open list true to the
 * hysteresis rule, and the idle list and the recall counts true. */
static void node_changed(struct placement *p, int i, uint32_t room_before, uint32_t free_before,
                         bool recallable_before)
{
    struct placement_node *n = &p->nodes[i];
    uint32_t room = placement_node_room(n), free_cpus = node_free_cpus(n);
    if (n->open) {
        p->room = p->room - room_before + room;
        if (room == 0)
            open_list_remove(p, i);
    } else if (room > 0 && n->committed_cpus <= placement_refill_mark(n->cpus)) {
        open_list_add(p, i);
        p->room += room;
    }
    p->idle_cpus = p->idle_cpus - free_before + free_cpus;
    if (n->idle && free_cpus == 0)
        idle_list_remove(p, i);
    else if (!n->idle && free_cpus > 0)
        idle_list_add(p, i);
    bool excess = node_excess(n) > 0;
    if (excess != n->queueing) {
        n->queueing = excess;
        p->nexcess += excess ? 1 : -1;
        n->queue_floor = INT32_MAX; /* its queue was empty, or is new */
        n->futile_epoch = 0;        /* likewise: worth asking again */
        if (p->nexcess == 0)
            p->queue_floor = INT32_MAX;
    }
    p->nrecallable += (int)node_recallable(p, n) - (int)recallable_before;
    if (p->any_futile && free_cpus > free_before && node_beyond_futile_fit(p, n))
        futile_epoch_end(p);
}

int placement_grow(struct placement *p, int max_nodes)
{
    if (max_nodes <= p->max_nodes)
        return 0;
    size_t n = (size_t)max_nodes;
    struct placement_node *nodes = realloc(p->nodes, n * sizeof *nodes);
    if (nodes)
        p->nodes = nodes; /* kept even if a list below fails: only larger */
    int *open_list = nodes ? realloc(p->open_list, n * sizeof *open_list) : NULL;
    if (open_list)
        p->open_list = open_list;
    int *idle_list = open_list ? realloc(p->idle_list, n * sizeof *idle_list) : NULL;
    if (!idle_list) {
        errno = ENOMEM;
        return -1;
    }
    p->idle_list = idle_list;
    p->max_nodes = max_nodes;
    return 0;
}

void placement_close_node(struct placement *p, int i)
{
    struct placement_node *n = &p->nodes[i];
    if (n->closed)
        return;
    uint32_t room_before = placement_node_room(n), free_before = node_free_cpus(n);
    bool recallable_before = node_recallable(p, n);
    p->recall_asked -= n->recall_asked; /* its answer will not come */
    n->recall_asked = 0;
    n->closed = true;
    node_changed(p, i, room_before, free_before, recallable_before);
}

int placement_add_node(struct placement *p, uint32_t cpus, uint64_t memory_mb, uint32_t gpus)
{
    if (p->nnodes >= p->max_nodes) {
        errno = ENOSPC;
        return -1;
    }
    int i = p->nnodes++;
    p->nodes[i] = (struct placement_node){
        .cpus = cpus,
        .window = placement_window(cpus),
        .memory_mb = memory_mb,
        .gpus = gpus,
    };
    node_changed(p, i, 0, 0, false);
    return i;
}

#define PLACEMENT__OFFERS_SHOWN 3 /* distinct host offers a "No host" message lists */

/* "8 CPUs, 1000 MB, 0 GPUs; 4 CPUs, 4000 MB, 1 GPUs" into buf: the first
 * PLACEMENT__OFFERS_SHOWN distinct offers of the nodes (a cluster of one
 * kind of node has one), then "and more"; "none (no host)" without nodes. */
static void placement_offers(const struct placement *p, char *buf, size_t size)
{
    size_t len = 0;
    int shown[PLACEMENT__OFFERS_SHOWN], nshown = 0;
    buf[0] = '\0';
    for (int i = 0; i < p->nnodes; i++) {
        const struct placement_node *n = &p->nodes[i];
        bool seen = n->closed; /* gone: not an offer */
        for (int k = 0; k < nshown && !seen; k++) {
            const struct placement_node *o = &p->nodes[shown[k]];
            seen = o->cpus == n->cpus && o->memory_mb == n->memory_mb && o->gpus == n->gpus;
        }
        if (seen)
            continue;
        if (nshown == PLACEMENT__OFFERS_SHOWN) {
            snprintf(buf + len, size - len, "; and more");
            return;
        }
        shown[nshown++] = i;
        int w =
            snprintf(buf + len, size - len, "%s%" PRIu32 " CPUs, %" PRIu64 " MB, %" PRIu32 " GPUs",
                     len ? "; " : "", n->cpus, n->memory_mb, n->gpus);
        len = w > 0 && (size_t)w < size - len ? len + (size_t)w : size - 1;
    }
    if (nshown == 0)
        snprintf(buf, size, "none (no host)");
}

int placement_check_capable(const struct placement *p, uint32_t cpus, uint64_t memory_mb,
                            uint32_t gpus, const char *name, struct pmc_error *err)
{
    for (int i = 0; i < p->nnodes; i++) {
        const struct placement_node *n = &p->nodes[i];
        if (!n->closed && cpus <= n->cpus && memory_mb <= n->memory_mb && gpus <= n->gpus)
            return 0;
    }
    char offers[256];
    placement_offers(p, offers, sizeof offers);
    return pmc_errorf(err,
                      "No host is capable of running task %.200s (it requests %" PRIu32
                      " CPUs, %" PRIu64 " MB of memory, %" PRIu32 " GPUs; the hosts offer %s)",
                      name, cpus, memory_mb, gpus, offers);
}

/* Can node n start a task of cpus/mem/gpus now, on what it has free
 * (nothing queued ahead of it)? */
static bool node_has_free(const struct placement_node *n, uint32_t cpus, uint64_t mem,
                          uint32_t gpus)
{
    return n->committed_cpus + cpus <= n->cpus && n->committed_mem + mem <= n->memory_mb &&
           n->committed_gpus + gpus <= n->gpus;
}

/* An idle node that can start the task now, looking at most
 * PLACEMENT_IDLE_SCAN of them from the cursor; -1 when none. */
static int pick_idle(struct placement *p, uint32_t cpus, uint64_t memory_mb, uint32_t gpus)
{
    int scan = p->nidle < PLACEMENT_IDLE_SCAN ? p->nidle : PLACEMENT_IDLE_SCAN;
    for (int k = 0; k < scan; k++) {
        int pos = (p->idle_rr + k) % p->nidle;
        int i = p->idle_list[pos];
        if (node_has_free(&p->nodes[i], cpus, memory_mb, gpus)) {
            p->idle_rr = pos + 1;
            return i;
        }
    }
    return -1;
}

int placement_pick(struct placement *p, uint32_t cpus, uint64_t memory_mb, uint32_t gpus)
{
    int i = p->nidle > 0 ? pick_idle(p, cpus, memory_mb, gpus) : -1;
    if (i >= 0)
        return i;
    for (int k = 0; k < p->nopen; k++) {
        int pos = (p->rr + k) % p->nopen;
        i = p->open_list[pos];
        if (node_has_room(&p->nodes[i], cpus, memory_mb, gpus)) {
            p->rr = pos + 1;
            return i;
        }
    }
    return -1;
}

void placement_commit(struct placement *p, int i, uint32_t cpus, uint64_t memory_mb, uint32_t gpus)
{
    struct placement_node *n = &p->nodes[i];
    uint32_t room_before = placement_node_room(n), free_before = node_free_cpus(n);
    bool recallable_before = node_recallable(p, n);
    n->committed_cpus += cpus;
    n->committed_mem += memory_mb;
    n->committed_gpus += gpus;
    n->tasks++;
    node_changed(p, i, room_before, free_before, recallable_before);
}

void placement_release(struct placement *p, int i, uint32_t cpus, uint64_t memory_mb, uint32_t gpus)
{
    struct placement_node *n = &p->nodes[i];
    uint32_t room_before = placement_node_room(n), free_before = node_free_cpus(n);
    bool recallable_before = node_recallable(p, n);
    n->committed_cpus -= cpus;
    n->committed_mem -= memory_mb;
    n->committed_gpus -= gpus;
    n->tasks--;
    node_changed(p, i, room_before, free_before, recallable_before);
    if (n->queueing && n->queue_floor < p->overflow_failed &&
        lane_fits(n, p->overflow_need.cpus, p->overflow_need.memory_mb, p->overflow_need.gpus)) {
        p->overflow_failed = INT32_MIN; /* the task that found no lane fits this one now */
        p->overflow_rr = i;
    }
}

/* ---- recalls -------------------------------------------------------------- */

uint64_t placement_idle_cpus(const struct placement *p)
{
    return p->idle_cpus;
}

bool placement_recall_due(const struct placement *p)
{
    return p->nrecallable > 0 && p->idle_cpus > p->recall_asked;
}

/* What one idle node could start now: the free resources of the idle node
 * with the most CPUs free among those placement_pick() looks at next
 * (PLACEMENT_IDLE_SCAN from its cursor).  A task given back must fit it,
 * or it would only come back to a node that queues it. */
static struct placement_fit idle_fit(const struct placement *p)
{
    struct placement_fit f = {0, 0, 0};
    int scan = p->nidle < PLACEMENT_IDLE_SCAN ? p->nidle : PLACEMENT_IDLE_SCAN;
    for (int k = 0; k < scan; k++) {
        const struct placement_node *n = &p->nodes[p->idle_list[(p->idle_rr + k) % p->nidle]];
        uint32_t cpus = node_free_cpus(n);
        if (cpus > f.cpus) {
            f.cpus = cpus;
            f.memory_mb = n->committed_mem < n->memory_mb ? n->memory_mb - n->committed_mem : 0;
            f.gpus = n->committed_gpus < n->gpus ? n->gpus - n->committed_gpus : 0;
        }
    }
    return f;
}

int placement_recall(struct placement *p, placement_recall_fn ask, void *ctx)
{
    if (!placement_recall_due(p))
        return 0;
    uint64_t want = p->idle_cpus - p->recall_asked;
    struct placement_fit fit = idle_fit(p);
    int start = p->recall_rr;
    for (int k = 0; k < p->nnodes && want > 0 && p->nrecallable > 0; k++) {
        int i = (start + k) % p->nnodes;
        struct placement_node *n = &p->nodes[i];
        if (!node_recallable(p, n))
            continue;
        uint32_t cpus = node_excess(n) < want ? node_excess(n) : (uint32_t)want;
        if (ask(ctx, i, cpus, &fit) < 0)
            return -1;
        n->recall_asked = cpus;
        n->asked_fit = fit;
        p->recall_asked += cpus;
        p->nrecallable--;
        want -= cpus;
        p->recall_rr = i + 1;
    }
    return 0;
}

void placement_recall_answered(struct placement *p, int i, uint32_t given)
{
    struct placement_node *n = &p->nodes[i];
    if (n->recall_asked == 0)
        return;
    bool recallable_before = node_recallable(p, n);
    p->recall_asked -= n->recall_asked;
    n->recall_asked = 0;
    if (given == 0) { /* nothing of it fits what was asked: not again until that grows */
        n->futile_epoch = p->futile_epoch;
        p->any_futile = true;
        if (n->asked_fit.cpus > p->futile_fit.cpus)
            p->futile_fit.cpus = n->asked_fit.cpus;
        if (n->asked_fit.memory_mb > p->futile_fit.memory_mb)
            p->futile_fit.memory_mb = n->asked_fit.memory_mb;
        if (n->asked_fit.gpus > p->futile_fit.gpus)
            p->futile_fit.gpus = n->asked_fit.gpus;
    }
    p->nrecallable += (int)node_recallable(p, n) - (int)recallable_before;
}

/* ---- the dispatch round ------------------------------------------------- */

/* Task t's demand: its columns, or the instance callback's. */
static struct placement_need need_of(const struct placement_demand *d, uint32_t t)
{
    if (d->instance && t >= d->ncolumns)
        return d->instance(d->instance_ctx, t);
    return (struct placement_need){d->cpus[t], d->memory_mb[t], d->gpus[t],
                                   d->time_limit_ms ? d->time_limit_ms[t] : 0};
}

/* Would a task needing `need`'s time limit (its own, else the run's) pass
 * the batch job's end, time_left_s from now?  Then it is not started. */
static bool task_outlasts(const struct placement_demand *d, const struct placement_need *need,
                          double time_left_s)
{
    uint32_t limit_ms = need->time_limit_ms ? need->time_limit_ms : d->default_limit_ms;
    return limit_ms && limit_ms / 1000.0 > time_left_s;
}

/* The node for a task needing `need` now, or -1 (no room anywhere, or it
 * outlasts the batch job). */
static int pick_task(struct placement *p, const struct placement_demand *d,
                     const struct placement_need *need, double time_left_s)
{
    if (task_outlasts(d, need, time_left_s))
        return -1;
    return placement_pick(p, need->cpus, need->memory_mb, need->gpus);
}

static int defer(struct placement *p, size_t k, uint32_t t)
{
    if (k >= p->deferred_cap) {
        size_t cap = p->deferred_cap ? p->deferred_cap * 2 : 1024;
        uint32_t *q = realloc(p->deferred, cap * sizeof *q);
        if (!q) {
            errno = ENOMEM;
            return -1;
        }
        p->deferred = q;
        p->deferred_cap = cap;
    }
    p->deferred[k] = t;
    return 0;
}

/* Commit task t, of priority prio, on node i: a task that queues there
 * lowers the node's (and the run's) queue floor. */
static void commit_task(struct placement *p, const struct placement_need *need, int i, int32_t prio)
{
    placement_commit(p, i, need->cpus, need->memory_mb, need->gpus);
    struct placement_node *n = &p->nodes[i];
    if (!n->queueing)
        return; /* t starts there at once */
    if (prio < n->queue_floor)
        n->queue_floor = prio;
    if (prio < p->queue_floor)
        p->queue_floor = prio;
    if (n->queue_floor < p->overflow_failed)
        p->overflow_failed = INT32_MIN; /* a node newly below that priority */
}

/* A node whose queue may hold tasks of a priority below prio and that can
 * take a task of cpus/mem/gpus in its overflow lane (one more round of its
 * CPUs past its window), round robin over all nodes; -1 when none. */
static int pick_overflow(struct placement *p, int32_t prio, uint32_t cpus, uint64_t mem,
                         uint32_t gpus)
{
    int start = p->overflow_rr;
    for (int k = 0; k < p->nnodes; k++) {
        int i = (start + k) % p->nnodes;
        const struct placement_node *n = &p->nodes[i];
        if (n->queueing && n->queue_floor < prio && lane_fits(n, cpus, mem, gpus)) {
            p->overflow_rr = i + 1;
            return i;
        }
    }
    return -1;
}

/* Overflow (placement.h, "Priorities past the window"): the tasks of bucket
 * b that no node has room for, but whose priority is above what some
 * node's queue may hold, go to such a node past its window; the first
 * that finds none stops the bucket.  -1 when assign failed (t put back). */
static int overflow_bucket(struct placement *p, struct ready_queue *q, size_t b,
                           const struct placement_demand *d, double time_left_s,
                           placement_assign_fn assign, void *ctx)
{
    int32_t prio = rq_bucket_priority(q, b);
    while (rq_bucket_size(q, b) > 0 && prio > p->queue_floor && prio > p->overflow_failed) {
        uint32_t t = rq_bucket_pop(q, b);
        struct placement_need need = need_of(d, t);
        bool outlasts = task_outlasts(d, &need, time_left_s);
        int i = outlasts ? -1 : pick_overflow(p, prio, need.cpus, need.memory_mb, need.gpus);
        if (i < 0 || assign(ctx, t, i) < 0) {
            (void)rq_push_front(q, t, prio); /* t stays ready */
            if (i < 0 && !outlasts) {
                p->overflow_failed = prio; /* no lane for it, nor for anything below */
                p->overflow_need = (struct placement_fit){need.cpus, need.memory_mb, need.gpus};
            }
            return i < 0 ? 0 : -1;
        }
        commit_task(p, &need, i, prio);
    }
    return 0;
}

/* Start the cache misses of the task PLACEMENT_LOOK_AHEAD places behind
 * bucket b's front: its demand, and what the caller's assign reads. */
static void look_ahead(const struct ready_queue *q, size_t b, const struct placement_demand *d,
                       void *ctx)
{
    uint32_t t = rq_bucket_peek(q, b, PLACEMENT_LOOK_AHEAD);
    if (t == UINT32_MAX || (d->instance && t >= d->ncolumns))
        return;
    __builtin_prefetch(&d->cpus[t]);
    __builtin_prefetch(&d->memory_mb[t]);
    __builtin_prefetch(&d->gpus[t]);
    if (d->time_limit_ms)
        __builtin_prefetch(&d->time_limit_ms[t]);
    if (d->look_ahead)
        d->look_ahead(ctx, t);
}

/* Dispatch from one priority bucket; tasks that fit nowhere keep their
 * place at the front.  -1 when assign or the scratch failed. */
static int dispatch_bucket(struct placement *p, struct ready_queue *q, size_t b,
                           const struct placement_demand *d, double time_left_s,
                           placement_assign_fn assign, void *ctx)
{
    size_t n = rq_bucket_size(q, b), ndef = 0;
    int32_t prio = rq_bucket_priority(q, b);
    int rc = 0;
    for (size_t k = 0; k < n && p->room > 0 && rc == 0; k++) {
        look_ahead(q, b, d, ctx);
        uint32_t t = rq_bucket_pop(q, b);
        struct placement_need need = need_of(d, t);
        int i = pick_task(p, d, &need, time_left_s);
        if (i < 0 ? defer(p, ndef, t) < 0 : assign(ctx, t, i) < 0) {
            (void)rq_push_front(q, t, prio); /* t stays ready */
            rc = -1;
        } else if (i < 0) {
            ndef++;
        } else {
            commit_task(p, &need, i, prio);
        }
    }
    /* a sized ready queue takes these back without allocating, so a failure
     * above loses no task */
    while (ndef > 0)
        if (rq_push_front(q, p->deferred[--ndef], prio) < 0)
            return -1;
    return rc;
}

int placement_dispatch(struct placement *p, struct ready_queue *q, const struct placement_demand *d,
                       double time_left_s, placement_assign_fn assign, void *ctx)
{
    for (size_t b = rq_first_bucket(q); b < rq_buckets(q); b++) {
        int32_t prio = rq_bucket_priority(q, b);
        if (p->room == 0 && (prio <= p->queue_floor || prio <= p->overflow_failed))
            break; /* nothing of this bucket or below can go anywhere */
        if (rq_bucket_size(q, b) == 0)
            continue;
        if (p->room > 0 && dispatch_bucket(p, q, b, d, time_left_s, assign, ctx) < 0)
            return -1;
        if (prio > p->queue_floor && overflow_bucket(p, q, b, d, time_left_s, assign, ctx) < 0)
            return -1;
    }
    return 0;
}
