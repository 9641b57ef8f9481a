/* node_queue.h - a node agent's queue of tasks received but not started.
 *
 * Order: larger priority first, arrival order among equals (the master's
 * ready-queue order, PMC manual -p).  Tasks start as the agent's CPU,
 * memory and GPU accounting allows, with PMC's deferral rule: when the
 * first does not fit, the first of the next NQ_DEFER_SCAN that fits (and
 * meets nq_set_condition()) starts instead; the others keep their order.
 * Items are item_size opaque bytes, copied in and out.  A binary heap over a
 * slab: push, pop and take O(log n), the scan O(k log k) for the k entries
 * it looks at; no allocation once warm.  docs/modules.md "node_queue".
 *
 * Thread-safety: none; owned by the agent thread.
 */
#ifndef PMC_NODE_QUEUE_H
#define PMC_NODE_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NQ_DEFER_SCAN 64

/* True when an item whose needs fit may start now; must not change the
 * queue. */
typedef bool (*nq_may_start_fn)(const void *item, void *ctx);

struct nq_key; /* a heap element: an entry's order and its place (node_queue.c) */

struct node_queue {
    unsigned char *slab;  /* cap entries of stride bytes: the needs, then the item */
    struct nq_key *heap;  /* len keys, a binary heap: the first in queue order first */
    uint32_t *free_slots; /* slab entries not in use, nfree of them */
    size_t item_size, stride;
    size_t cap, len, nfree;
    int64_t next_back, next_front; /* arrival numbers of nq_push(), nq_push_front() */
    nq_may_start_fn may_start;     /* NULL: every entry that fits may start */
    void *may_start_ctx;
};

/* An empty queue of items of item_size bytes (> 0), without a condition.
 * No allocation. */
void nq_init(struct node_queue *q, size_t item_size);

/* nq_take_fit()/nq_peek_fit() pass over entries may_start refuses, as
 * over ones that do not fit (NULL: none).  ctx is kept, not owned. */
void nq_set_condition(struct node_queue *q, nq_may_start_fn may_start, void *ctx);

/* Queue a copy of item needing cpus, memory_mb (MB) and gpus, behind every
 * entry of priority >= prio.  0, or -1 with ENOMEM. */
int nq_push(struct node_queue *q, uint32_t cpus, uint64_t memory_mb, uint32_t gpus, int32_t prio,
            const void *item);

/* As nq_push(), but in front of every entry of priority <= prio: for a task
 * taken from the front coming back (several: last taken first).  0, or -1
 * with ENOMEM. */
int nq_push_front(struct node_queue *q, uint32_t cpus, uint64_t memory_mb, uint32_t gpus,
                  int32_t prio, const void *item);

/* Take the first of the next NQ_DEFER_SCAN tasks that fits (memory in MB)
 * and meets the condition, its item into out.  1, or 0 when none. */
int nq_take_fit(struct node_queue *q, uint32_t cpus_free, uint64_t memory_free, uint32_t gpus_free,
                void *out);

/* What nq_take_fit() would take, left in place: its item (valid until the
 * queue changes), needs and *pos for nq_take_at(); NULL when none. */
const void *nq_peek_fit(const struct node_queue *q, uint32_t cpus_free, uint64_t memory_free,
                        uint32_t gpus_free, uint32_t *cpus, uint64_t *memory_mb, uint32_t *gpus,
                        size_t *pos);

/* Take the task at pos (nq_peek_fit(), queue unchanged since) into out. */
void nq_take_at(struct node_queue *q, size_t pos, void *out);

/* Remove the first task regardless of fit, its item into out.  1, or 0
 * when empty. */
int nq_pop(struct node_queue *q, void *out);

/* Take the last task in queue order that fits, its item into out (a
 * recall).  1, or 0 when none.  O(n). */
int nq_pop_back_fit(struct node_queue *q, uint32_t cpus_free, uint64_t memory_free,
                    uint32_t gpus_free, void *out);

static inline size_t nq_len(const struct node_queue *q)
{
    return q->len;
}

void nq_free(struct node_queue *q);

#ifdef __cplusplus
}
#endif
#endif
